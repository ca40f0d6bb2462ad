/* A fake libtopspti for CI: records in the layouts topspti_shim.h assumes, read back
 * through its own iterator, timestamped on its own clock (monotonic, offset and
 * running 0.1 % fast), with the API-enter callbacks of topsptiSubscribe. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../fake_common/fake_activity.h"
#include "fake_topspti.h"
#include "topspti_shim.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t enabled;
static uint32_t next_corr = 1;
static fake_buffer buf;
/* apart from mu: buffers complete (and the count is read) with mu held */
static atomic_size_t pending_dropped;
static uint32_t version = FT_TOPSPTI_LAYOUT_VERSION;
static Topspti_CallbackFunc cb;
static void *cb_userdata;
static unsigned cb_domains; /* bit per enabled domain */

static uint64_t topspti_now(void) { return fake_device_clock(7000000000000ull); }

static void *slot(size_t n) { return fake_buffer_slot(&buf, n); }

static size_t record_size(uint32_t kind) {
  switch (kind) {
  case TOPSPTI_ACTIVITY_KIND_KERNEL: return sizeof(Topspti_ActivityKernel);
  case TOPSPTI_ACTIVITY_KIND_MEMCPY: return sizeof(Topspti_ActivityMemcpy);
  case TOPSPTI_ACTIVITY_KIND_MEMSET: return sizeof(Topspti_ActivityMemset);
  case TOPSPTI_ACTIVITY_KIND_RUNTIME:
  case TOPSPTI_ACTIVITY_KIND_DRIVER: return sizeof(Topspti_ActivityAPI);
  default: return 0;
  }
}

static bool on(uint32_t kind) { return enabled & (1ull << kind); }

/* outside the lock: a real library calls back on the launching thread */
static void callback(int domain, int site, uint32_t cbid, uint32_t corr) {
  if (!cb || !(cb_domains & (1u << domain))) return;
  Topspti_CallbackData d = {.callbackSite = site, .functionName = "fake", .correlationId = corr};
  cb(cb_userdata, domain, cbid, &d);
}

static void write_records(const fake_tp_launch *l, uint32_t corr, uint64_t t0) {
  uint32_t api_kind = l->driver ? TOPSPTI_ACTIVITY_KIND_DRIVER : TOPSPTI_ACTIVITY_KIND_RUNTIME;
  if (on(api_kind)) {
    Topspti_ActivityAPI *a = slot(sizeof *a);
    a->kind = api_kind;
    a->cbid = l->cbid;
    a->start = t0;
    a->end = t0 + 300;
    a->processId = (uint32_t)getpid();
    a->threadId = (uint32_t)(uintptr_t)pthread_self(); /* TOPSPTI's default thread id type */
    a->correlationId = corr;
  }
  uint64_t s = l->zero_time ? 0 : t0 + 1000, e = l->zero_time ? 0 : t0 + 1000 + l->dur_ns;
  if (l->kind == FAKE_TP_KERNEL && on(TOPSPTI_ACTIVITY_KIND_KERNEL)) {
    Topspti_ActivityKernel *k = slot(sizeof *k);
    k->kind = TOPSPTI_ACTIVITY_KIND_KERNEL;
    k->unread_registers = 99; /* never to be read */
    k->start = s, k->end = e;
    k->deviceId = l->device, k->contextId = l->context, k->streamId = l->stream;
    k->gridX = l->grid[0], k->gridY = l->grid[1], k->gridZ = l->grid[2];
    k->blockX = l->block[0], k->blockY = l->block[1], k->blockZ = l->block[2];
    k->correlationId = corr;
    k->gridId = corr;
    k->name = l->name;
  } else if (l->kind == FAKE_TP_MEMCPY && on(TOPSPTI_ACTIVITY_KIND_MEMCPY)) {
    Topspti_ActivityMemcpy *m = slot(sizeof *m);
    m->kind = TOPSPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = l->copy_kind;
    m->bytes = l->bytes;
    m->start = s, m->end = e;
    m->deviceId = l->device, m->contextId = l->context, m->streamId = l->stream;
    m->correlationId = corr;
  } else if (l->kind == FAKE_TP_MEMSET && on(TOPSPTI_ACTIVITY_KIND_MEMSET)) {
    Topspti_ActivityMemset *m = slot(sizeof *m);
    m->kind = TOPSPTI_ACTIVITY_KIND_MEMSET;
    m->value = l->value;
    m->bytes = l->bytes;
    m->start = s, m->end = e;
    m->deviceId = l->device, m->contextId = l->context, m->streamId = l->stream;
    m->correlationId = corr;
  }
}

EXPORT uint32_t fake_topspti_launch(const fake_tp_launch *l) {
  pthread_mutex_lock(&mu);
  uint32_t corr = next_corr++;
  pthread_mutex_unlock(&mu);
  int domain = l->driver ? TOPSPTI_CB_DOMAIN_DRIVER_API : TOPSPTI_CB_DOMAIN_RUNTIME_API;
  if (!l->callback_after_completion) callback(domain, TOPSPTI_API_ENTER, l->cbid, corr);
  pthread_mutex_lock(&mu);
  write_records(l, corr, topspti_now());
  if (l->callback_after_completion) fake_buffer_complete(&buf);
  pthread_mutex_unlock(&mu);
  if (l->callback_after_completion) callback(domain, TOPSPTI_API_ENTER, l->cbid, corr);
  callback(domain, TOPSPTI_API_EXIT, l->cbid, corr);
  return corr;
}

EXPORT void fake_topspti_drop(size_t n) { atomic_fetch_add(&pending_dropped, n); }

EXPORT void fake_topspti_set_version(uint32_t v) { version = v; }

EXPORT TopsptiResult topsptiActivityRegisterCallbacks(Topspti_BuffersCallbackRequestFunc r,
                                                      Topspti_BuffersCallbackCompleteFunc c) {
  buf.request = r;
  buf.complete = c;
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiActivityEnable(int kind) {
  if (!record_size((uint32_t)kind)) return 1;
  enabled |= 1ull << kind;
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiActivityDisable(int kind) {
  enabled &= ~(1ull << kind);
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&mu);
  fake_buffer_complete(&buf);
  pthread_mutex_unlock(&mu);
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiActivityGetNextRecord(uint8_t *buffer, size_t valid, Topspti_Activity **record) {
  uint8_t *p = *record ? (uint8_t *)*record : buffer;
  if (*record) p += (record_size((*record)->kind) + 7) & ~(size_t)7;
  if ((size_t)(p - buffer) >= valid) return TOPSPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (Topspti_Activity *)p;
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiActivityGetNumDroppedRecords(size_t *dropped) {
  *dropped = atomic_exchange(&pending_dropped, 0);
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiGetTimestamp(uint64_t *ts) {
  *ts = topspti_now();
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiSubscribe(Topspti_SubscriberHandle *sub, Topspti_CallbackFunc f, void *userdata) {
  if (cb) return 1; /* one subscriber, as CUPTI allows */
  cb = f;
  cb_userdata = userdata;
  cb_domains = 0;
  *sub = &cb;
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiUnsubscribe(Topspti_SubscriberHandle sub) {
  if (sub != (void *)&cb) return 1;
  cb = NULL;
  cb_userdata = NULL;
  cb_domains = 0;
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiEnableDomain(uint32_t enable, Topspti_SubscriberHandle sub, int domain) {
  if (sub != (void *)&cb || domain < 0 || domain > 31) return 1;
  if (enable) cb_domains |= 1u << domain;
  else cb_domains &= ~(1u << domain);
  return TOPSPTI_SUCCESS;
}
EXPORT TopsptiResult topsptiGetVersion(uint32_t *v) {
  if (!version) return 1;
  *v = version;
  return TOPSPTI_SUCCESS;
}
/* Runtime ids as kineto_gcu's name table numbers them; the driver domain has none. */
EXPORT TopsptiResult topsptiGetCallbackName(int domain, uint32_t cbid, const char **name) {
  *name = NULL;
  if (domain == TOPSPTI_CB_DOMAIN_RUNTIME_API)
    *name = cbid == 24 ? "topsLaunchKernel" : cbid == 10 ? "topsMemcpyAsync" : cbid == 2 ? "topsMemsetAsync" : NULL;
  return *name ? TOPSPTI_SUCCESS : 1;
}
