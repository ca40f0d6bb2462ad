/* libFuzzer harness for MCPTI's resync walker (src/tracers/mcpti_walk.c):
 * arbitrary bytes as an activity buffer; every record it hands on must be a whole,
 * 8-aligned record inside the buffer, after the previous one, and the bytes it
 * skips are counted exactly once. */
#include "../src/tracers/mcpti_walk.c" /* the same code, not a copy */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct seen {
  const uint8_t *buf;
  size_t valid, next_free, records, bytes;
} seen;

static void check(void *ctx, const uint8_t *rec, size_t size) {
  seen *s = ctx;
  size_t off = (size_t)(rec - s->buf);
  if (rec < s->buf || off % 8 || off < s->next_free || size < 8 || size > s->valid - off) abort();
  if (ft__mc_record_size(rec, s->valid - off) != size) abort(); /* it handed on what it judged */
  s->next_free = off + ((size + 7) & ~(size_t)7);
  s->records++;
  s->bytes += size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* MCPTI's buffers are 8-aligned: so is ours (libFuzzer's data is not) */
  size_t alloc = (size + 8) & ~(size_t)7;
  uint8_t *buf = aligned_alloc(8, alloc);
  if (!buf) return 0;
  memcpy(buf, data, size);
  ASAN_POISON_MEMORY_REGION(buf + size, alloc - size); /* a read past the valid bytes is a crash */
  seen s = {.buf = buf, .valid = size};
  uint64_t resyncs = 0, skipped = 0;
  ft__mc_walk(buf, size, check, &s, &resyncs, &skipped);
  /* every byte is in a record (or its padding), skipped, or the short tail */
  if (skipped > size || (s.records == 0 && size >= 8 && skipped == 0)) abort();
  if (resyncs > size / 8 + 1) abort();
  ASAN_UNPOISON_MEMORY_REGION(buf + size, alloc - size);
  free(buf);
  return 0;
}
