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

/* One allocation or release (msptiActivityMemory) with the API record of its call. */
typedef struct fake_ms_memory {
  int release;          /* the operation type: 0 ALLOCATION, 1 RELEASE (others: hostile) */
  uint32_t memory_kind; /* msptiActivityMemoryKind */
  uint64_t address, bytes;
  uint32_t device;     /* physical device id */
  uint32_t stream;     /* MSPTI_INVALID_STREAM_ID for a synchronous call */
  const char *api;     /* the API record's name */
  uint64_t start, end; /* out: the memory record's timestamps */
} fake_ms_memory;

/* Returns the 64-bit MSPTI correlation id used. */
typedef uint64_t (*fake_ms_launch_fn)(const fake_ms_launch *l);
typedef void (*fake_ms_drop_fn)(size_t n);
typedef uint64_t (*fake_ms_memory_fn)(fake_ms_memory *m);

#endif
