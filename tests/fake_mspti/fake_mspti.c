/* A fake libmspti for CI: packed records in MSPTI's layout, scripted by the test;
 * a NULL pop is rejected and leaves the stack as it was, like CANN 9.0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_mspti.h"
#include "mspti_shim.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static msptiBuffersCallbackRequestFunc on_request;
static msptiBuffersCallbackCompleteFunc on_complete;
static uint32_t enabled;
static int subscribed;
static uint64_t next_corr = (1ull << 40) + 1; /* 64-bit ids: the tracer must remap them */
static size_t dropped;
static __thread uint64_t stack[64];
static __thread size_t depth;

typedef struct fbuf {
  uint8_t *p;
  size_t size, used;
} fbuf;
static fbuf api_buf, dev_buf;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t record_size(uint32_t kind) { return ft__mspti_record_size(kind); }

static void complete(fbuf *b) {
  if (!b->p) return;
  uint8_t *p = b->p;
  size_t size = b->size, used = b->used;
  memset(b, 0, sizeof *b);
  on_complete(p, size, used);
}

static uint8_t *slot(fbuf *b, uint32_t kind) {
  size_t n = record_size(kind);
  if (b->p && b->size - b->used < n) complete(b);
  if (!b->p) {
    size_t max = 0;
    on_request(&b->p, &b->size, &max);
    if (!b->p) abort();
  }
  uint8_t *r = b->p + b->used;
  memset(r, 0, n);
  memcpy(r, &kind, 4);
  b->used += n;
  return r;
}

static void w32(uint8_t *r, size_t off, uint32_t v) { memcpy(r + off, &v, 4); }
static void w64(uint8_t *r, size_t off, uint64_t v) { memcpy(r + off, &v, 8); }
static void wptr(uint8_t *r, size_t off, const char *s) { memcpy(r + off, &s, sizeof s); }

EXPORT uint64_t fake_mspti_launch(const fake_ms_launch *l) {
  pthread_mutex_lock(&mu);
  uint64_t corr = next_corr++, t0 = now_ns();
  if (enabled & (1u << MSPTI_ACTIVITY_KIND_API)) {
    if (depth && (enabled & (1u << MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION))) {
      uint8_t *x = slot(&api_buf, MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
      w32(x, MSPTI_EXT_KIND, MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
      w64(x, MSPTI_EXT_ID, stack[depth - 1]);
      w64(x, MSPTI_EXT_CORRELATION, corr);
    }
    for (int i = 0; i < 3 && l->apis[i]; i++) {
      uint8_t *a = slot(&api_buf, MSPTI_ACTIVITY_KIND_API);
      w64(a, MSPTI_API_START, t0 + 10 * (uint64_t)i);
      w64(a, MSPTI_API_END, t0 + 400 - 10 * (uint64_t)i);
      w32(a, MSPTI_API_PROCESS, (uint32_t)getpid());
      w32(a, MSPTI_API_THREAD, (uint32_t)syscall(SYS_gettid));
      w64(a, MSPTI_API_CORRELATION, corr);
      wptr(a, MSPTI_API_NAME, l->apis[i]);
    }
  }
  uint64_t start = t0 + 1000;
  uint32_t kind = l->kind == FAKE_MS_KERNEL   ? MSPTI_ACTIVITY_KIND_KERNEL
                  : l->kind == FAKE_MS_MEMCPY ? MSPTI_ACTIVITY_KIND_MEMCPY
                                              : MSPTI_ACTIVITY_KIND_MEMSET;
  if (enabled & (1u << kind)) {
    uint8_t *r = slot(&dev_buf, kind);
    if (kind == MSPTI_ACTIVITY_KIND_KERNEL) {
      w64(r, MSPTI_KERNEL_START, start);
      w64(r, MSPTI_KERNEL_END, start + l->dur_ns);
      w32(r, MSPTI_KERNEL_DEVICE, l->device);
      w32(r, MSPTI_KERNEL_STREAM, l->stream);
      w64(r, MSPTI_KERNEL_CORRELATION, corr);
      wptr(r, MSPTI_KERNEL_TYPE, "KERNEL_AICORE");
      wptr(r, MSPTI_KERNEL_NAME, l->name);
    } else {
      w32(r, MSPTI_MEM_KIND_OR_VALUE, kind == MSPTI_ACTIVITY_KIND_MEMSET ? 7 : 1);
      w64(r, MSPTI_MEM_BYTES, l->bytes);
      w64(r, MSPTI_MEM_START, start);
      w64(r, MSPTI_MEM_END, start + l->dur_ns);
      w32(r, MSPTI_MEM_DEVICE, l->device);
      w32(r, MSPTI_MEM_STREAM, l->stream);
      w64(r, MSPTI_MEM_CORRELATION, corr);
      r[MSPTI_MEM_ASYNC] = 1;
    }
  }
  pthread_mutex_unlock(&mu);
  return corr;
}

/* Records one call's API record (with its external correlation) and, when the
 * MEMORY kind is enabled, its msptiActivityMemory, as MSPTI's memory reporter does. */
EXPORT uint64_t fake_mspti_memory(fake_ms_memory *m) {
  pthread_mutex_lock(&mu);
  uint64_t corr = next_corr++, t0 = now_ns();
  if (enabled & (1u << MSPTI_ACTIVITY_KIND_API)) {
    if (depth && (enabled & (1u << MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION))) {
      uint8_t *x = slot(&api_buf, MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
      w32(x, MSPTI_EXT_KIND, MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
      w64(x, MSPTI_EXT_ID, stack[depth - 1]);
      w64(x, MSPTI_EXT_CORRELATION, corr);
    }
    uint8_t *a = slot(&api_buf, MSPTI_ACTIVITY_KIND_API);
    w64(a, MSPTI_API_START, t0);
    w64(a, MSPTI_API_END, t0 + 400);
    w32(a, MSPTI_API_PROCESS, (uint32_t)getpid());
    w32(a, MSPTI_API_THREAD, (uint32_t)syscall(SYS_gettid));
    w64(a, MSPTI_API_CORRELATION, corr);
    wptr(a, MSPTI_API_NAME, m->api);
  }
  m->start = t0 + 100;
  m->end = t0 + 300;
  if (enabled & (1u << MSPTI_ACTIVITY_KIND_MEMORY)) {
    uint8_t *r = slot(&dev_buf, MSPTI_ACTIVITY_KIND_MEMORY);
    w32(r, MSPTI_MEMORY_OP, (uint32_t)m->release); /* raw: a test may send a value MSPTI never does */
    w32(r, MSPTI_MEMORY_KIND, m->memory_kind);
    w64(r, MSPTI_MEMORY_CORRELATION, corr);
    w64(r, MSPTI_MEMORY_START, m->start);
    w64(r, MSPTI_MEMORY_END, m->end);
    w64(r, MSPTI_MEMORY_ADDRESS, m->address);
    w64(r, MSPTI_MEMORY_BYTES, m->bytes);
    w32(r, MSPTI_MEMORY_PROCESS, (uint32_t)getpid());
    w32(r, MSPTI_MEMORY_DEVICE, m->device);
    w32(r, MSPTI_MEMORY_STREAM, m->stream);
  }
  pthread_mutex_unlock(&mu);
  return corr;
}

EXPORT void fake_mspti_drop(size_t n) {
  pthread_mutex_lock(&mu);
  dropped += n;
  pthread_mutex_unlock(&mu);
}

EXPORT msptiResult msptiSubscribe(msptiSubscriberHandle *s, msptiCallbackFunc cb, void *userdata) {
  (void)cb, (void)userdata;
  if (subscribed) return 1;
  subscribed = 1;
  *s = &subscribed;
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiUnsubscribe(msptiSubscriberHandle s) {
  (void)s;
  subscribed = 0;
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityRegisterCallbacks(msptiBuffersCallbackRequestFunc req,
                                                  msptiBuffersCallbackCompleteFunc done) {
  on_request = req;
  on_complete = done;
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityEnable(msptiActivityKind kind) {
  if (!subscribed) return 1; /* MSPTI wants a subscriber first */
  enabled |= 1u << kind;
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityDisable(msptiActivityKind kind) {
  enabled &= ~(1u << kind);
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityGetNextRecord(uint8_t *buffer, size_t valid, msptiActivity **record) {
  uint8_t *p = *record ? (uint8_t *)*record : buffer;
  if (*record) {
    uint32_t kind;
    memcpy(&kind, p, 4);
    size_t n = record_size(kind);
    if (!n) return 1;
    p += n;
  }
  if ((size_t)(p - buffer) >= valid) return MSPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (msptiActivity *)p;
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&mu);
  complete(&dev_buf); /* device records before the correlations that name them */
  complete(&api_buf);
  pthread_mutex_unlock(&mu);
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityPushExternalCorrelationId(msptiExternalCorrelationKind kind, uint64_t id) {
  if (kind != MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || depth == 64) return 1;
  stack[depth++] = id;
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityPopExternalCorrelationId(msptiExternalCorrelationKind kind, uint64_t *last) {
  if (!last || kind != MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || !depth) return 1; /* CANN 9.0: NULL rejected */
  *last = stack[--depth];
  return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityGetNumDroppedRecords(size_t *n) {
  /* reported once, as CUPTI's count "since the last call" (MSPTI's documentation does not say) */
  pthread_mutex_lock(&mu);
  *n = dropped;
  dropped = 0;
  pthread_mutex_unlock(&mu);
  return MSPTI_SUCCESS;
}
