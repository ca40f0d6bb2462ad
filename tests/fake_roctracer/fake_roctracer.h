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

#endif
