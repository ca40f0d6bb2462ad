/* Enflame GCU TOPSPTI tracer: armed at session start; records decoded at stop
 * through the library's own iterator, TOPSPTI's clock mapped affinely onto
 * CLOCK_REALTIME. Record layouts are assumed (topspti_shim.h): verified by decoding
 * records our fake synthesizes (CI), not on GCU hardware. */
#define _GNU_SOURCE
#define FT__TRACER_NAME "topspti"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flagtrace/device_tracer.h"
#include "topspti_shim.h"
#include "tracer_support.h"

enum { POOL_INITIAL = 8, BUF_SIZE = 8 * 1024 * 1024, MAX_PUSHED = 256 };

typedef struct topspti_tracer {
  ft__tracer_base base; /* first: loaded, path, why, err, sink, armed, kinds, dropped */
  ft__topspti_api api;
  Topspti_SubscriberHandle subscriber;
  ft__clock_map clock; /* TOPSPTI's clock sampled against CLOCK_REALTIME at start and stop */
  /* completed buffers wait for the stop sample: only then is the mapping known */
  pthread_mutex_t mu;
  ft__held held;
  /* API-enter callbacks report to the sink only while this is set (read lock), so
   * none reaches it after stop returns (write lock) */
  pthread_rwlock_t cb_lock;
  bool accepting;
  atomic_uint_fast64_t lost_ids;
} topspti_tracer;

/* TOPSPTI has no external-correlation API: the framework ids pushed on this thread,
 * the top of which the API-enter callback reports for the call's correlation id. */
static _Thread_local uint64_t pushed[MAX_PUSHED];
static _Thread_local int n_pushed;

static void count_dropped(topspti_tracer *t) {
  size_t dropped = 0; /* reset by each call, as CUPTI's count is */
  if (t->api.topsptiActivityGetNumDroppedRecords(&dropped) == TOPSPTI_SUCCESS && dropped)
    atomic_fetch_add(&t->base.dropped, dropped);
}

static void buffer_completed(uint8_t *buffer, size_t size, size_t valid) {
  (void)size;
  topspti_tracer *t = (topspti_tracer *)ft__tracer_active();
  if (!t) {
    ft__pool_put(buffer);
    return;
  }
  count_dropped(t);
  ft__held_keep(&t->held, &t->mu, buffer, valid, FT__TRACER_NAME);
}

/* Runs on the thread making the runtime call, before the call: the one place where
 * the framework op (this thread's pushed id) and TOPSPTI's correlation id meet. */
static void api_callback(void *userdata, int domain, uint32_t cbid, const void *data) {
  (void)domain, (void)cbid;
  topspti_tracer *t = userdata;
  const Topspti_CallbackData *d = data;
  if (!t || !d || d->callbackSite != TOPSPTI_API_ENTER) return;
  ft__thread_register(); /* API records name this thread by its pthread id */
  if (!n_pushed) return;
  pthread_rwlock_rdlock(&t->cb_lock);
  if (t->accepting && t->base.sink->external_id(t->base.sink->ctx, d->correlationId, pushed[n_pushed - 1]) != FT_OK)
    atomic_fetch_add(&t->lost_ids, 1);
  pthread_rwlock_unlock(&t->cb_lock);
}

static const char *api_name(topspti_tracer *t, bool driver, uint32_t cbid) {
  const char *name = NULL;
  /* resolved by the library itself, after the final flush (never from its callback) */
  if (t->api.topsptiGetCallbackName &&
      t->api.topsptiGetCallbackName(driver ? TOPSPTI_CB_DOMAIN_DRIVER_API : TOPSPTI_CB_DOMAIN_RUNTIME_API, cbid,
                                    &name) == TOPSPTI_SUCCESS &&
      name && *name)
    return name;
  return driver ? "topsDriver" : "topsRuntime"; /* the cbid stays in the args */
}

/* False for a record with timestamps no real record has: it is dropped. */
static bool decode(void *ctx, const void *record) {
  topspti_tracer *t = ctx;
  const Topspti_Activity *rec = record;
  char a[32], b[32], c[32];
  uint64_t s, en;
  switch (rec->kind) {
  case TOPSPTI_ACTIVITY_KIND_KERNEL: {
    const Topspti_ActivityKernel *k = (const Topspti_ActivityKernel *)rec;
    if (!ft__clock_map_span(&t->clock, k->start, k->end, &s, &en)) return false;
    snprintf(a, sizeof a, "%u", k->contextId);
    snprintf(b, sizeof b, "[%d, %d, %d]", k->gridX, k->gridY, k->gridZ);
    snprintf(c, sizeof c, "[%d, %d, %d]", k->blockX, k->blockY, k->blockZ);
    /* no registers, shared memory or occupancy: no TOPSPTI consumer reads such
     * fields (kineto_gcu's uses are commented out), so their meaning is unknown */
    ft_kv md[3] = {{"context", a}, {"grid", b}, {"block", c}};
    const char *raw = k->name && *k->name ? k->name : "<unnamed kernel>";
    char *dm = ft__demangle(raw);
    ft_device_event ev = {.kind = FT_EVENT_KERNEL,
                          .start_ns = s,
                          .end_ns = en,
                          .correlation_id = k->correlationId,
                          .device = k->deviceId,
                          .stream = k->streamId,
                          .name = dm ? dm : raw};
    ft__tracer_emit(&t->base, &ev, md, 3);
    free(dm);
    return true;
  }
  case TOPSPTI_ACTIVITY_KIND_MEMCPY: {
    const Topspti_ActivityMemcpy *m = (const Topspti_ActivityMemcpy *)rec;
    ft__transfer x = {FT_EVENT_MEMCPY, m->start,    m->end,   m->correlationId, m->deviceId,
                      m->contextId,    m->streamId, m->bytes, "copy kind",      m->copyKind};
    return ft__emit_transfer(&t->base, &t->clock, &x);
  }
  case TOPSPTI_ACTIVITY_KIND_MEMSET: {
    const Topspti_ActivityMemset *m = (const Topspti_ActivityMemset *)rec;
    ft__transfer x = {FT_EVENT_MEMSET, m->start,    m->end,   m->correlationId, m->deviceId,
                      m->contextId,    m->streamId, m->bytes, "value",          m->value};
    return ft__emit_transfer(&t->base, &t->clock, &x);
  }
  case TOPSPTI_ACTIVITY_KIND_RUNTIME:
  case TOPSPTI_ACTIVITY_KIND_DRIVER: {
    const Topspti_ActivityAPI *x = (const Topspti_ActivityAPI *)rec;
    if (!ft__clock_map_span(&t->clock, x->start, x->end, &s, &en)) return false;
    bool driver = rec->kind == TOPSPTI_ACTIVITY_KIND_DRIVER;
    snprintf(a, sizeof a, "%u", x->cbid);
    ft_kv md[1] = {{"cbid", a}};
    ft_device_event ev = {.kind = driver ? FT_EVENT_DRIVER : FT_EVENT_RUNTIME,
                          .start_ns = s,
                          .end_ns = en,
                          .correlation_id = x->correlationId,
                          .thread_id = ft__thread_os_tid(x->threadId),
                          .name = api_name(t, driver, x->cbid)};
    ft__tracer_emit(&t->base, &ev, md, 1);
    return true;
  }
  default: return true; /* a kind not enabled here: skipped */
  }
}

static int next_record(void *ctx, uint8_t *buf, size_t valid, const void **rec) {
  topspti_tracer *t = ctx;
  Topspti_Activity *r = (Topspti_Activity *)*rec;
  TopsptiResult res = t->api.topsptiActivityGetNextRecord(buf, valid, &r);
  *rec = r;
  return res;
}

static bool read_clock(void *ctx, uint64_t *v) {
  topspti_tracer *t = ctx;
  return !ft__topsptiGetTimestamp(&t->api, t->base.err, sizeof t->base.err, v);
}

/* The layouts in topspti_shim.h are written for one API version: decoding under
 * another says so, loudly, every session. */
static void check_layout_version(topspti_tracer *t) {
  uint32_t v = 0;
  if (!t->api.topsptiGetVersion) {
    FT__WARN(
        "this library has no topsptiGetVersion; decoding with the layouts written for TOPSPTI API "
        "version %d, which may not be this library's",
        FT_TOPSPTI_LAYOUT_VERSION);
    return;
  }
  TopsptiResult r = t->api.topsptiGetVersion(&v);
  if (r != TOPSPTI_SUCCESS)
    FT__WARN(
        "topsptiGetVersion failed (TopsptiResult %d); decoding with the layouts written for TOPSPTI "
        "API version %d, which may not be this library's",
        r, FT_TOPSPTI_LAYOUT_VERSION);
  else if (v != FT_TOPSPTI_LAYOUT_VERSION)
    FT__WARN(
        "the library reports TOPSPTI API version %u but the record layouts were written for version "
        "%d; decoded fields may be wrong",
        v, FT_TOPSPTI_LAYOUT_VERSION);
  else FT__LOG("API version %u, as the record layouts assume", v);
}

/* ---- ops ---- */

static const int kind_for[] = {
    [FT_EVENT_KERNEL] = TOPSPTI_ACTIVITY_KIND_KERNEL, [FT_EVENT_MEMCPY] = TOPSPTI_ACTIVITY_KIND_MEMCPY,
    [FT_EVENT_MEMSET] = TOPSPTI_ACTIVITY_KIND_MEMSET, [FT_EVENT_RUNTIME] = TOPSPTI_ACTIVITY_KIND_RUNTIME,
    [FT_EVENT_DRIVER] = TOPSPTI_ACTIVITY_KIND_DRIVER,
};

static void disable_kinds(topspti_tracer *t) {
  for (unsigned k = 0; k <= FT_EVENT_DRIVER; k++)
    if (t->base.kinds & FT_KIND_BIT(k)) t->api.topsptiActivityDisable(kind_for[k]);
}

/* Without the API-enter callback no device event can be attributed to a framework
 * op: the session still records, and says so. */
static void subscribe(topspti_tracer *t) {
  t->subscriber = NULL;
  char err[256];
  if (ft__topsptiSubscribe(&t->api, err, sizeof err, &t->subscriber, api_callback, t)) {
    t->subscriber = NULL;
    FT__WARN("%s; device events will not be attributed to framework ops", err);
    return;
  }
  if (ft__topsptiEnableDomain(&t->api, err, sizeof err, 1, t->subscriber, TOPSPTI_CB_DOMAIN_RUNTIME_API))
    FT__WARN("%s; runtime calls will not be attributed to framework ops", err);
  /* no driver callbacks on the SDK FlagPrism measured: a failure here is expected */
  if (ft__topsptiEnableDomain(&t->api, err, sizeof err, 1, t->subscriber, TOPSPTI_CB_DOMAIN_DRIVER_API))
    FT__LOG("%s (driver calls unattributed)", err);
}

static ft_status tp_start(ft_tracer *base, const ft_event_sink *sink, unsigned kinds) {
  topspti_tracer *t = (topspti_tracer *)base;
  ft_status claim = ft__tracer_claim(&t->base, sink, 0); /* kinds: those enabled below */
  if (claim) return claim;
  atomic_store(&t->lost_ids, 0);
  check_layout_version(t);
  ft__thread_register();
  ft_status st = ft__pool_reserve(POOL_INITIAL, BUF_SIZE) ? FT_OK : FT_ENOMEM;
  if (!st && !ft__clock_sample(read_clock, t, &t->clock.v0, &t->clock.r0)) st = FT_EVENDOR;
  if (!st)
    st = ft__topsptiActivityRegisterCallbacks(&t->api, t->base.err, sizeof t->base.err, ft__buffer_requested,
                                              buffer_completed);
  for (unsigned k = 0; k <= FT_EVENT_DRIVER && !st; k++) {
    if (!(kinds & FT_KIND_BIT(k))) continue;
    st = ft__topsptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, kind_for[k]);
    if (!st) t->base.kinds |= FT_KIND_BIT(k);
  }
  if (st) {
    disable_kinds(t);
    ft__tracer_release(&t->base);
    return st;
  }
  pthread_rwlock_wrlock(&t->cb_lock);
  t->accepting = true;
  pthread_rwlock_unlock(&t->cb_lock);
  subscribe(t);
  /* no device memory: no public TOPSPTI record shape has allocations
   * (docs/memory.md, "Vendors") */
  if (kinds & FT_KIND_BIT(FT_EVENT_MEMORY))
    FT__LOG("device memory is not offered by TOPSPTI's activity API; not recorded");
  t->base.armed = true;
  FT__LOG("armed; clock sample at start: topspti %llu = realtime %llu", (unsigned long long)t->clock.v0,
          (unsigned long long)t->clock.r0);
  return FT_OK;
}

static ft_status tp_stop(ft_tracer *base) {
  topspti_tracer *t = (topspti_tracer *)base;
  if (!t->base.armed) return FT_OK;
  /* callbacks first: after this no API-enter report reaches the sink */
  pthread_rwlock_wrlock(&t->cb_lock);
  t->accepting = false;
  pthread_rwlock_unlock(&t->cb_lock);
  if (t->subscriber) t->api.topsptiUnsubscribe(t->subscriber);
  t->subscriber = NULL;
  disable_kinds(t);
  ft_status st =
      ft__topsptiActivityFlushAll(&t->api, t->base.err, sizeof t->base.err, TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  count_dropped(t);
  const ft__stop_decoder dec = {.who = FT__TRACER_NAME,
                                .next = next_record,
                                .success = TOPSPTI_SUCCESS,
                                .end = TOPSPTI_ERROR_MAX_LIMIT_REACHED,
                                .decode = decode,
                                .ctx = t};
  pthread_mutex_lock(&t->mu);
  atomic_fetch_add(&t->base.dropped, ft__decode_at_stop(&t->held, &t->clock, read_clock, t->base.err, &dec));
  pthread_mutex_unlock(&t->mu);
  uint64_t lost = atomic_load(&t->lost_ids);
  if (lost)
    FT__WARN("out of memory recording %llu framework-op correlations; their device events are unattributed",
             (unsigned long long)lost);
  ft__tracer_release(&t->base);
  return st;
}

static ft_status tp_push(ft_tracer *base, uint64_t id) {
  topspti_tracer *t = (topspti_tracer *)base;
  if (!t->base.loaded) return FT_EUNAVAILABLE;
  if (n_pushed == MAX_PUSHED) return FT_ERANGE;
  pushed[n_pushed++] = id;
  return FT_OK;
}

static ft_status tp_pop(ft_tracer *base) {
  topspti_tracer *t = (topspti_tracer *)base;
  if (!t->base.loaded) return FT_EUNAVAILABLE;
  if (!n_pushed) return FT_ESTATE;
  n_pushed--;
  return FT_OK;
}

static void tp_destroy(ft_tracer *base) {
  topspti_tracer *t = (topspti_tracer *)base;
  if (t->base.armed) tp_stop(base);
  ft__held_free(&t->held);
  pthread_mutex_destroy(&t->mu);
  pthread_rwlock_destroy(&t->cb_lock);
  free(t);
}

static const ft_tracer_ops topspti_ops = {
    .name = FT__TRACER_NAME,
    .runtime_category = "privateuse1_runtime",
    .driver_category = "privateuse1_driver",
    .available = ft__tracer_available,
    .start = tp_start,
    .stop = tp_stop,
    .push_correlation = tp_push,
    .pop_correlation = tp_pop,
    .device_count = NULL, /* not queried: no TOPS runtime binding here */
    .dropped_records = ft__tracer_dropped,
    .last_error = ft__tracer_last_error,
    .destroy = tp_destroy,
    .watch_profiler_api = NULL,
};

static int load_topspti(void *api, void *handle, char *why, size_t len) {
  return ft__topspti_load_symbols(api, handle, why, len);
}

ft_status ft_make_device_tracer(ft_tracer **out) {
  topspti_tracer *t = calloc(1, sizeof *t);
  if (!t) return FT_ENOMEM;
  t->base.tracer.ops = &topspti_ops;
  pthread_mutex_init(&t->mu, NULL);
  pthread_rwlock_init(&t->cb_lock, NULL);
  const char *home = getenv("TOPS_HOME");
  char in_home[PATH_MAX];
  snprintf(in_home, sizeof in_home, "%s/extras/TOPSPTI/lib64/libtopspti.so", home && *home ? home : "/opt/tops");
  /* the public libtopspti.so, never the internal libtopspti_rt.so it forwards to */
  const char *const candidates[] = {"libtopspti.so", in_home};
  ft__tracer_open(&t->base, candidates, 2, "libtopspti not found (set FLAGOS_TRACER_LIBRARY or TOPS_HOME)",
                  load_topspti, &t->api);
  *out = &t->base.tracer;
  return FT_OK;
}
