/* Control interface of the fake libroctracer64: what a test "launches" becomes records. */
#ifndef FT_FAKE_ROCTRACER_H
#define FT_FAKE_ROCTRACER_H

#include <stdint.h>

/* HIP_OPS kind codes the fake writes */
enum { FAKE_ROC_KERNEL = 0x11F0, FAKE_ROC_H2D = 0x11F4, FAKE_ROC_FILL = 0x1207 };

typedef struct fake_roc_launch {
  uint32_t kind;      /* FAKE_ROC_* */
  const char *kernel; /* kernels */
  uint64_t bytes;     /* copies and fills */
  uint64_t dur_ns;
} fake_roc_launch;

/* Records the launch as roctracer would (EXT_API when an id is pushed, HIP_API,
 * HIP_OPS and a barrier). Returns the correlation id. */
typedef uint64_t (*fake_roc_launch_fn)(const fake_roc_launch *l);

/* One HIP allocation or free call: the fake runs the armed HIP API callbacks at
 * ENTER and EXIT with hip_api_data_t laid out as ROCm 5's hip_prof_str.h lays it
 * out, then records its HIP_API activity (and EXT_API when an id is pushed). */
typedef struct fake_roc_memory {
  const char *call; /* hipMalloc, hipFree, hipMallocAsync, hipHostMalloc, ... */
  uint64_t address; /* allocations: what the call returns (0: it failed); frees: the argument */
  uint64_t bytes;   /* allocations */
} fake_roc_memory;
/* Returns the correlation id. */
typedef uint64_t (*fake_roc_memory_fn)(const fake_roc_memory *m);
/* hipSetDevice: the calling thread's device, as the fake hipGetDevice reports it. */
typedef void (*fake_roc_set_device_fn)(int device);

#endif
