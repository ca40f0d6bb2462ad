/* Control interface of the fake libmupti: what a test "launches" becomes records. */
#ifndef FT_FAKE_MUPTI_H
#define FT_FAKE_MUPTI_H

#include <stdint.h>

enum { FAKE_MU_KERNEL, FAKE_MU_MEMCPY, FAKE_MU_MEMSET };

typedef struct fake_mu_launch {
  int kind;
  const char *name; /* kernels */
  uint64_t dur_ns;  /* device record duration on the library's clock */
  int zero_time;    /* 1: device record with start = end = 0 (no timestamp) */
} fake_mu_launch;

/* Records the launch as MUPTI would (an external-correlation record when an id is
 * pushed, a runtime record, the device record). Returns the correlation id. */
typedef uint32_t (*fake_mu_launch_fn)(const fake_mu_launch *l);

#endif
