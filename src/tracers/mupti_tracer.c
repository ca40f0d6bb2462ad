/* Moore Threads MUSA MUPTI tracer: armed at session start; MUPTI's clock is mapped
 * onto CLOCK_REALTIME affinely from samples at start and stop. Verified by decoding
 * records we synthesize (CI), not on MUSA hardware. */
#define _GNU_SOURCE
#define FT__TRACER_NAME "mupti"
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flagtrace/device_tracer.h"
#include "mupti_shim.h"
#include "tracer_support.h"

enum { POOL_INITIAL = 8, BUF_SIZE = 8 * 1024 * 1024 };

typedef struct mupti_tracer {
  ft__tracer_base base; /* first: loaded, path, why, err, sink, armed, kinds, dropped */
  ft__mupti_api api;
  ft__clock_map clock; /* MUPTI's clock sampled against CLOCK_REALTIME at start and stop */
  /* completed buffers wait for the stop sample: only then is the mapping known */
  pthread_mutex_t mu;
  ft__held held;
} mupti_tracer;

static void buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
  (void)size;
  mupti_tracer *t = (mupti_tracer *)ft__tracer_active();
  if (!t) {
    ft__pool_put(buffer);
    return;
  }
  size_t dropped = 0;
  if (t->api.muptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == MUPTI_SUCCESS && dropped)
    atomic_fetch_add(&t->base.dropped, dropped);
  ft__held_keep(&t->held, &t->mu, buffer, valid, FT__TRACER_NAME);
}

static const char *api_name(mupti_tracer *t, bool driver, uint32_t cbid, char *buf, size_t len) {
  const char *name = NULL;
  /* resolved by the library itself, after flushing (never from its callback) */
  if (t->api.muptiGetCallbackName &&
      t->api.muptiGetCallbackName(driver ? MUPTI_CB_DOMAIN_DRIVER_API : MUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) ==
          MUPTI_SUCCESS &&
      name)
    return name;
  snprintf(buf, len, "%s", driver ? "musaDriver" : "musaRuntime"); /* the cbid stays in the args */
  return buf;
}

/* False for a record with timestamps no real record has: it is dropped. */
static bool decode(void *ctx, const void *record) {
  mupti_tracer *t = ctx;
  const MUpti_Activity *rec = record;
  char a[32], b[32], c[32], d[32], e[32], nb[64];
  uint64_t s, en;
  switch (rec->kind) {
  case MUPTI_ACTIVITY_KIND_KERNEL:
  case MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const MUpti_ActivityKernel6 *k = (const MUpti_ActivityKernel6 *)rec;
    if (!ft__clock_map_span(&t->clock, k->start, k->end, &s, &en)) return false;
    snprintf(a, sizeof a, "%u", k->contextId);
    snprintf(b, sizeof b, "%u", (unsigned)k->registersPerThread);
    snprintf(c, sizeof c, "%d", k->staticSharedMemory + k->dynamicSharedMemory);
    snprintf(d, sizeof d, "[%d, %d, %d]", k->gridX, k->gridY, k->gridZ);
    snprintf(e, sizeof e, "[%d, %d, %d]", k->blockX, k->blockY, k->blockZ);
    /* no occupancy: the device properties it needs are not queried on MUSA */
    ft_kv md[5] = {{"context", a}, {"registers per thread", b}, {"shared memory", c}, {"grid", d}, {"block", e}};
    ft_device_event ev = {.kind = FT_EVENT_KERNEL,
                          .start_ns = s,
                          .end_ns = en,
                          .correlation_id = k->correlationId,
                          .device = k->deviceId,
                          .stream = k->streamId,
                          .name = k->name ? k->name : "<unnamed>"};
    ft__tracer_emit(&t->base, &ev, md, 5);
    return true;
  }
  case MUPTI_ACTIVITY_KIND_MEMCPY: {
    const MUpti_ActivityMemcpy4 *m = (const MUpti_ActivityMemcpy4 *)rec;
    ft__transfer x = {FT_EVENT_MEMCPY, m->start,    m->end,   m->correlationId, m->deviceId,
                      m->contextId,    m->streamId, m->bytes, "copy kind",      m->copyKind};
    return ft__emit_transfer(&t->base, &t->clock, &x);
  }
  case MUPTI_ACTIVITY_KIND_MEMSET: {
    const MUpti_ActivityMemset3 *m = (const MUpti_ActivityMemset3 *)rec;
    ft__transfer x = {FT_EVENT_MEMSET, m->start,    m->end,   m->correlationId, m->deviceId,
                      m->contextId,    m->streamId, m->bytes, "value",          m->value};
    return ft__emit_transfer(&t->base, &t->clock, &x);
  }
  case MUPTI_ACTIVITY_KIND_RUNTIME:
  case MUPTI_ACTIVITY_KIND_DRIVER: {
    const MUpti_ActivityAPI *x = (const MUpti_ActivityAPI *)rec;
    if (!ft__clock_map_span(&t->clock, x->start, x->end, &s, &en)) return false;
    bool driver = rec->kind == MUPTI_ACTIVITY_KIND_DRIVER;
    snprintf(a, sizeof a, "%u", x->cbid);
    ft_kv md[1] = {{"cbid", a}};
    ft_device_event ev = {.kind = driver ? FT_EVENT_DRIVER : FT_EVENT_RUNTIME,
                          .start_ns = s,
                          .end_ns = en,
                          .correlation_id = x->correlationId,
                          .thread_id = x->threadId,
                          .name = api_name(t, driver, x->cbid, nb, sizeof nb)};
    ft__tracer_emit(&t->base, &ev, md, 1);
    return true;
  }
  case MUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
    const MUpti_ActivityExternalCorrelation *x = (const MUpti_ActivityExternalCorrelation *)rec;
    if (x->externalKind == MUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
      ft__tracer_external(&t->base, x->correlationId, x->externalId);
    return true;
  }
  default: return true; /* a kind not enabled here: skipped */
  }
}

static int next_record(void *ctx, uint8_t *buf, size_t valid, const void **rec) {
  mupti_tracer *t = ctx;
  MUpti_Activity *r = (MUpti_Activity *)*rec;
  MUptiResult res = t->api.muptiActivityGetNextRecord(buf, valid, &r);
  *rec = r;
  return res;
}

static bool read_clock(void *ctx, uint64_t *v) {
  mupti_tracer *t = ctx;
  return !ft__muptiGetTimestamp(&t->api, t->base.err, sizeof t->base.err, v);
}

/* ---- ops ---- */

static const int kind_for[] = {
    [FT_EVENT_KERNEL] = MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    [FT_EVENT_MEMCPY] = MUPTI_ACTIVITY_KIND_MEMCPY,
    [FT_EVENT_MEMSET] = MUPTI_ACTIVITY_KIND_MEMSET,
    [FT_EVENT_RUNTIME] = MUPTI_ACTIVITY_KIND_RUNTIME,
    [FT_EVENT_DRIVER] = MUPTI_ACTIVITY_KIND_DRIVER,
};

static ft_status mu_start(ft_tracer *base, const ft_event_sink *sink, unsigned kinds) {
  mupti_tracer *t = (mupti_tracer *)base;
  ft_status st = ft__tracer_claim(&t->base, sink, kinds);
  if (st) return st;
  st = ft__pool_reserve(POOL_INITIAL, BUF_SIZE) ? FT_OK : FT_ENOMEM;
  if (!st && !ft__clock_sample(read_clock, t, &t->clock.v0, &t->clock.r0)) st = FT_EVENDOR;
  if (!st)
    st = ft__muptiActivityRegisterCallbacks(&t->api, t->base.err, sizeof t->base.err, ft__buffer_requested,
                                            buffer_completed);
  if (!st)
    st = ft__muptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, MUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  for (unsigned k = 0; k <= FT_EVENT_DRIVER && !st; k++)
    if (kinds & FT_KIND_BIT(k)) st = ft__muptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, kind_for[k]);
  if (st) {
    ft__tracer_release(&t->base);
    return st;
  }
  /* no device memory: MUPTI's activity API has no allocation kind that public
   * code shows (docs/memory.md, "Vendors") */
  if (kinds & FT_KIND_BIT(FT_EVENT_MEMORY))
    FT__LOG("device memory is not offered by MUPTI's activity API; not recorded");
  t->base.armed = true;
  FT__LOG("armed; clock sample at start: mupti %llu = realtime %llu", (unsigned long long)t->clock.v0,
          (unsigned long long)t->clock.r0);
  return FT_OK;
}

static ft_status mu_stop(ft_tracer *base) {
  mupti_tracer *t = (mupti_tracer *)base;
  if (!t->base.armed) return FT_OK;
  for (unsigned k = 0; k <= FT_EVENT_DRIVER; k++)
    if (t->base.kinds & FT_KIND_BIT(k)) t->api.muptiActivityDisable(kind_for[k]);
  t->api.muptiActivityDisable(MUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  ft_status st = ft__muptiActivityFlushAll(&t->api, t->base.err, sizeof t->base.err, MUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const ft__stop_decoder dec = {.who = FT__TRACER_NAME,
                                .next = next_record,
                                .success = MUPTI_SUCCESS,
                                .end = MUPTI_ERROR_MAX_LIMIT_REACHED,
                                .decode = decode,
                                .ctx = t};
  pthread_mutex_lock(&t->mu);
  atomic_fetch_add(&t->base.dropped, ft__decode_at_stop(&t->held, &t->clock, read_clock, t->base.err, &dec));
  pthread_mutex_unlock(&t->mu);
  ft__tracer_release(&t->base);
  return st;
}

static ft_status mu_push(ft_tracer *base, uint64_t id) {
  mupti_tracer *t = (mupti_tracer *)base;
  char err[128];
  return t->base.loaded ? ft__muptiActivityPushExternalCorrelationId(&t->api, err, sizeof err,
                                                                     MUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id)
                        : FT_EUNAVAILABLE;
}

static ft_status mu_pop(ft_tracer *base) {
  mupti_tracer *t = (mupti_tracer *)base;
  char err[128];
  uint64_t last = 0; /* a real out-pointer */
  return t->base.loaded ? ft__muptiActivityPopExternalCorrelationId(&t->api, err, sizeof err,
                                                                    MUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last)
                        : FT_EUNAVAILABLE;
}

static void mu_destroy(ft_tracer *base) {
  mupti_tracer *t = (mupti_tracer *)base;
  if (t->base.armed) mu_stop(base);
  ft__held_free(&t->held);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static const ft_tracer_ops mupti_ops = {
    .name = FT__TRACER_NAME,
    .runtime_category = "privateuse1_runtime",
    .driver_category = "privateuse1_driver",
    .available = ft__tracer_available,
    .start = mu_start,
    .stop = mu_stop,
    .push_correlation = mu_push,
    .pop_correlation = mu_pop,
    .device_count = NULL, /* not queried: no MUSA driver binding here */
    .dropped_records = ft__tracer_dropped,
    .last_error = ft__tracer_last_error,
    .destroy = mu_destroy,
    .watch_profiler_api = NULL,
};

static int load_mupti(void *api, void *handle, char *why, size_t len) {
  return ft__mupti_load_symbols(api, handle, why, len);
}

ft_status ft_make_device_tracer(ft_tracer **out) {
  mupti_tracer *t = calloc(1, sizeof *t);
  if (!t) return FT_ENOMEM;
  t->base.tracer.ops = &mupti_ops;
  pthread_mutex_init(&t->mu, NULL);
  const char *home = getenv("MUSA_HOME");
  char in_home[PATH_MAX];
  snprintf(in_home, sizeof in_home, "%s/lib/libmupti.so", home && *home ? home : "/usr/local/musa");
  const char *const candidates[] = {"libmupti.so", in_home};
  ft__tracer_open(&t->base, candidates, 2, "libmupti not found (set FLAGOS_TRACER_LIBRARY or MUSA_HOME)", load_mupti,
                  &t->api);
  *out = &t->base.tracer;
  return FT_OK;
}
