/* Control interface of the fake libtopspti: what a test "launches" becomes records. */
#ifndef FT_FAKE_TOPSPTI_H
#define FT_FAKE_TOPSPTI_H

#include <stddef.h>
#include <stdint.h>

enum { FAKE_TP_KERNEL, FAKE_TP_MEMCPY, FAKE_TP_MEMSET, FAKE_TP_API_ONLY };

typedef struct fake_tp_launch {
  int kind;
  const char *name; /* kernels: the (possibly mangled) name TOPSPTI would report */
  int grid[3], block[3];
  uint32_t device, context, stream;
  uint8_t copy_kind; /* memcpy */
  uint32_t value;    /* memset */
  uint64_t bytes;
  uint64_t dur_ns; /* device record duration on the library's clock */
  int zero_time;   /* 1: device record with start = end = 0 ("unknown") */
  int driver;      /* 1: a driver API call (driver domain, driver record) */
  uint32_t cbid;   /* the API record's callback id */
  /* 1: the API-enter callback fires only after the launch's records were written
   * and their buffer handed back (completed) to the tracer */
  int callback_after_completion;
} fake_tp_launch;

/* Records the launch as TOPSPTI would: the API-enter callback on the calling
 * thread, an API record, the device record, the API-exit callback. Returns the
 * correlation id. */
typedef uint32_t (*fake_tp_launch_fn)(const fake_tp_launch *l);
/* Records the library will report as dropped at the next count query. */
typedef void (*fake_tp_drop_fn)(size_t n);
/* The version topsptiGetVersion reports; 0 makes it fail. */
typedef void (*fake_tp_set_version_fn)(uint32_t version);

#endif
