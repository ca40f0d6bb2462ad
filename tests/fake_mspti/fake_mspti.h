/* Control interface of the fake libmspti (Ascend CANN's activity API). */
#ifndef FT_FAKE_MSPTI_H
#define FT_FAKE_MSPTI_H

#include <stddef.h>
#include <stdint.h>

enum { FAKE_MS_KERNEL, FAKE_MS_MEMCPY, FAKE_MS_MEMSET };

typedef struct fake_ms_launch {
  int kind;
  const char *name;    /* kernels */
  const char *apis[3]; /* API records of the call, NULL-terminated (MSPTI reports several) */
  uint32_t device;     /* physical device id */
  uint32_t stream;
  uint64_t bytes, dur_ns;
} fake_ms_launch;

/* Returns the 64-bit MSPTI correlation id used. */
typedef uint64_t (*fake_ms_launch_fn)(const fake_ms_launch *l);
typedef void (*fake_ms_drop_fn)(size_t n);

#endif
