/* What the fakes of CUPTI-shaped libraries (MUPTI, TOPSPTI) share: a device clock of
 * their own and the tracer's activity buffer being filled. */
#ifndef FT_FAKE_ACTIVITY_H
#define FT_FAKE_ACTIVITY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The fake device clock: far from CLOCK_REALTIME (offset), and not quite the same
 * rate (0.1 % fast), so that only an affine mapping gets it right. */
static inline uint64_t fake_device_clock(uint64_t offset) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long double ns = (long double)ts.tv_sec * 1e9L + ts.tv_nsec;
  return (uint64_t)(ns * 1.001L) + offset;
}

typedef struct fake_buffer {
  uint8_t *cur;
  size_t size, used;
  void (*request)(uint8_t **buffer, size_t *size, size_t *max_records); /* the tracer's */
  void (*complete)(uint8_t *buffer, size_t size, size_t valid);         /* calls the tracer's */
} fake_buffer;

/* Hands the buffer being filled (if any) back to the tracer. */
static inline void fake_buffer_complete(fake_buffer *b) {
  if (!b->cur) return;
  uint8_t *buf = b->cur;
  b->cur = NULL;
  b->complete(buf, b->size, b->used);
}

/* n zeroed bytes at 8-byte alignment; a full buffer is completed and another
 * requested. */
static inline void *fake_buffer_slot(fake_buffer *b, size_t n) {
  n = (n + 7) & ~(size_t)7;
  if (b->cur && b->size - b->used < n) fake_buffer_complete(b);
  if (!b->cur) {
    size_t max;
    b->request(&b->cur, &b->size, &max);
    if (!b->cur) abort();
    b->used = 0;
  }
  void *r = b->cur + b->used;
  memset(r, 0, n);
  b->used += n;
  return r;
}

#endif
