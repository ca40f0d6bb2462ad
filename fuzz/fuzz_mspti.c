/* libFuzzer harness for the MSPTI packed-record path (src/tracers/mspti_tracer.c):
 * arbitrary bytes as a completed activity buffer, walked by the tracer's own loop
 * over a stand-in for msptiActivityGetNextRecord that steps by the packed record
 * sizes as libmspti does (or, steered by the input, misbehaves: a record that runs
 * past the valid bytes, an error). decode_record must never read past the buffer;
 * string pointers in the records are made valid first (the library's are). */
/* The tracer's warnings are counted, not printed: a record cut by the valid
 * bytes warns once per buffer, and a fuzzing session wrote a line per input (3 M
 * lines, 250 MB in 3 minutes). */
#define ft__warn fuzz_counted_warn
#include "../src/tracers/mspti_tracer.c"
#undef ft__warn
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/asan_interface.h>

static unsigned long long warnings;
void fuzz_counted_warn(const char *fmt, ...) {
  (void)fmt;
  warnings++;
}

static size_t packed_size(uint32_t kind) {
  size_t n = ft__mspti_record_size(kind);
  return n ? n : 8 + kind % 64; /* kinds we ignore: any size */
}

static const char *const name = "aclnnAdd";

/* What libmspti's iterator does (the fake's logic), on our bytes. */
static msptiResult next_record(uint8_t *buffer, size_t valid, msptiActivity **record) {
  uint8_t *p = *record ? (uint8_t *)*record : buffer;
  if (*record) {
    uint32_t kind;
    memcpy(&kind, p, 4);
    p += packed_size(kind);
  }
  if (p >= buffer + valid) return MSPTI_ERROR_MAX_LIMIT_REACHED;
  if (p[0] == 0xEE) return 7; /* the input asks for a library error */
  *record = (msptiActivity *)p;
  return MSPTI_SUCCESS;
}

static ft_status on_event(void *ctx, const ft_device_event *ev) {
  (void)ctx;
  if (!ev->name) abort();
  return FT_OK;
}

static ft_status on_external(void *ctx, uint32_t corr, uint64_t ext) {
  (void)ctx, (void)corr, (void)ext;
  return FT_OK;
}

/* The pointer fields of whole records hold a valid string, as libmspti's do. */
static void fix_pointers(uint8_t *buf, size_t valid) {
  for (size_t off = 0; off + 4 <= valid;) {
    uint32_t kind;
    memcpy(&kind, buf + off, 4);
    size_t n = packed_size(kind);
    if (off + n > valid) break;
    if (kind == MSPTI_ACTIVITY_KIND_KERNEL) {
      memcpy(buf + off + MSPTI_KERNEL_TYPE, &name, sizeof name);
      memcpy(buf + off + MSPTI_KERNEL_NAME, &name, sizeof name);
    } else if (kind == MSPTI_ACTIVITY_KIND_API) {
      memcpy(buf + off + MSPTI_API_NAME, &name, sizeof name);
    }
    off += n;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t cap;
  uint8_t *buf = ft__pool_get(&cap); /* buffer_completed hands it back to the pool */
  if (!buf) return 0;
  size_t valid = size < cap ? size : cap;
  memcpy(buf, data, valid);
  fix_pointers(buf, valid);
  mspti_tracer t;
  memset(&t, 0, sizeof t);
  pthread_mutex_init(&t.mu, NULL);
  t.api.msptiActivityGetNextRecord = next_record;
  ft_event_sink sink = {.event = on_event, .external_id = on_external};
  t.base.tracer.ops = &mspti_ops;
  t.base.loaded = true;
  if (ft__tracer_claim(&t.base, &sink, 0)) abort(); /* the armed tracer its callback finds */
  /* a record cut by the end of the valid bytes must not be read: the pool's buffer
   * is larger, so the bytes past valid are poisoned for ASan meanwhile */
  size_t guard = cap - valid < 256 ? cap - valid : 256; /* more than any record */
  ASAN_POISON_MEMORY_REGION(buf + valid, guard);
  warnings = 0;
  buffer_completed(buf, cap, valid);
  ASAN_UNPOISON_MEMORY_REGION(buf + valid, guard);
  if (warnings > 1) abort(); /* a walk that meets a bad record says so once and stops */
  ft__tracer_release(&t.base);
  for (size_t i = 0; i < t.n_apis; i++) free(t.apis[i].name);
  free(t.apis);
  ft__map_free(&t.ids);
  free(t.dev_kinds);
  pthread_mutex_destroy(&t.mu);
  return 0;
}
