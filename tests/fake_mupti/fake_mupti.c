/* A fake libmupti for CI: records in MUPTI's (CUPTI-clone) layout, timestamped on
 * its own clock (monotonic, offset and running 0.1 % fast), scripted by the test. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../fake_common/fake_activity.h"
#include "fake_mupti.h"
#include "mupti_shim.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static MUpti_BuffersCallbackCompleteFunc on_complete;
static uint64_t enabled;
static uint32_t next_corr = 1;
static __thread uint64_t stack[64];
static __thread size_t depth;
static fake_buffer buf;

static uint64_t mupti_now(void) { return fake_device_clock(5000000000000ull); }

static void complete(uint8_t *b, size_t size, size_t valid) { on_complete(NULL, 0, b, size, valid); }

static void *slot(size_t n) { return fake_buffer_slot(&buf, n); }

static size_t record_size(uint32_t kind) {
  switch (kind) {
  case MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(MUpti_ActivityKernel6);
  case MUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(MUpti_ActivityMemcpy4);
  case MUPTI_ACTIVITY_KIND_MEMSET: return sizeof(MUpti_ActivityMemset3);
  case MUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(MUpti_ActivityAPI);
  case MUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(MUpti_ActivityExternalCorrelation);
  default: return 0;
  }
}

EXPORT uint32_t fake_mupti_launch(const fake_mu_launch *l) {
  int kind = l->kind, zero_time = l->zero_time;
  const char *name = l->name;
  uint64_t dur = l->dur_ns;
  pthread_mutex_lock(&mu);
  uint32_t corr = next_corr++;
  uint64_t t0 = mupti_now();
  if (enabled & (1ull << MUPTI_ACTIVITY_KIND_RUNTIME)) {
    if (depth && (enabled & (1ull << MUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION))) {
      MUpti_ActivityExternalCorrelation *x = slot(sizeof *x);
      x->kind = MUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
      x->externalKind = MUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
      x->externalId = stack[depth - 1];
      x->correlationId = corr;
    }
    MUpti_ActivityAPI *a = slot(sizeof *a);
    a->kind = MUPTI_ACTIVITY_KIND_RUNTIME;
    a->cbid = 42;
    a->start = t0;
    a->end = t0 + 300;
    a->processId = (uint32_t)getpid();
    a->threadId = (uint32_t)syscall(SYS_gettid);
    a->correlationId = corr;
  }
  uint64_t s = zero_time ? 0 : t0 + 1000, e = zero_time ? 0 : t0 + 1000 + dur;
  if (kind == 0 && (enabled & (1ull << MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))) {
    MUpti_ActivityKernel6 *k = slot(sizeof *k);
    k->kind = MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->registersPerThread = 32;
    k->start = s, k->end = e;
    k->streamId = 2;
    k->gridX = 8, k->gridY = 1, k->gridZ = 1, k->blockX = 128, k->blockY = 1, k->blockZ = 1;
    k->correlationId = corr;
    k->name = name;
  } else if (kind == 1 && (enabled & (1ull << MUPTI_ACTIVITY_KIND_MEMCPY))) {
    MUpti_ActivityMemcpy4 *m = slot(sizeof *m);
    m->kind = MUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = 1;
    m->bytes = 4096;
    m->start = s, m->end = e;
    m->streamId = 2;
    m->correlationId = corr;
  } else if (kind == 2 && (enabled & (1ull << MUPTI_ACTIVITY_KIND_MEMSET))) {
    MUpti_ActivityMemset3 *m = slot(sizeof *m);
    m->kind = MUPTI_ACTIVITY_KIND_MEMSET;
    m->bytes = 512;
    m->start = s, m->end = e;
    m->streamId = 2;
    m->correlationId = corr;
  }
  pthread_mutex_unlock(&mu);
  return corr;
}

EXPORT MUptiResult muptiActivityRegisterCallbacks(MUpti_BuffersCallbackRequestFunc r,
                                                  MUpti_BuffersCallbackCompleteFunc c) {
  on_complete = c;
  buf.request = r;
  buf.complete = complete;
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiActivityEnable(int kind) {
  enabled |= 1ull << kind;
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiActivityDisable(int kind) {
  enabled &= ~(1ull << kind);
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&mu);
  fake_buffer_complete(&buf);
  pthread_mutex_unlock(&mu);
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiActivityGetNextRecord(uint8_t *buffer, size_t valid, MUpti_Activity **record) {
  uint8_t *p = *record ? (uint8_t *)*record : buffer;
  if (*record) p += (record_size((*record)->kind) + 7) & ~(size_t)7;
  if ((size_t)(p - buffer) >= valid) return MUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (MUpti_Activity *)p;
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *dropped) {
  (void)ctx, (void)stream;
  *dropped = 0;
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiActivityPushExternalCorrelationId(int kind, uint64_t id) {
  if (kind != MUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || depth == 64) return 1;
  stack[depth++] = id;
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiActivityPopExternalCorrelationId(int kind, uint64_t *last) {
  if (!last || kind != MUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || !depth) return 1;
  *last = stack[--depth];
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiGetTimestamp(uint64_t *ts) {
  *ts = mupti_now();
  return MUPTI_SUCCESS;
}
EXPORT MUptiResult muptiGetCallbackName(int domain, uint32_t cbid, const char **name) {
  *name = domain == MUPTI_CB_DOMAIN_RUNTIME_API && cbid == 42 ? "musaLaunchKernel" : NULL;
  return *name ? MUPTI_SUCCESS : 1;
}
