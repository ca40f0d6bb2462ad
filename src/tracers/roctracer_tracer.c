/* Hygon DCU / AMD roctracer tracer: HIP_OPS (kernels, copies, fills) and HIP API
 * activity through one pool, external ids from EXT_API records, the roctracer clock
 * mapped onto CLOCK_REALTIME. Verified by decoding records we synthesize (CI). */
#define _GNU_SOURCE
#define FT__TRACER_NAME "roctracer"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flagtrace/device_tracer.h"
#include "roctracer_shim.h"
#include "tracer_support.h"

typedef struct roc_tracer {
  ft__tracer_base base; /* first: loaded, path, why, err, sink, armed, kinds, dropped */
  ft__roctracer_api api;
  roctracer_pool_t *pool;
  ft__clock_map clock;
  /* roctracer's records live in its buffer only during the callback: copied here,
   * decoded at stop once the clock mapping is known */
  pthread_mutex_t mu;
  roctracer_record *recs;
  size_t n_recs, recs_cap;
  uint64_t lost; /* records we could not keep (out of memory) */
  uint64_t dropped_untimed;
} roc_tracer;

static void buffer_callback(const char *begin, const char *end, void *arg) {
  (void)arg;
  roc_tracer *t = (roc_tracer *)ft__tracer_active();
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  /* only whole records inside [begin, end), each after the last: a library handing
   * back a short tail or a pointer that does not advance is not followed */
  for (const roctracer_record *r = (const roctracer_record *)begin;
       (size_t)(end - (const char *)r) >= sizeof *r && (const char *)r >= begin;) {
    if (t->n_recs == t->recs_cap) {
      size_t ncap = t->recs_cap ? t->recs_cap * 2 : 4096;
      roctracer_record *n = realloc(t->recs, ncap * sizeof *n);
      if (n) {
        t->recs = n;
        t->recs_cap = ncap;
      }
    }
    /* out of memory: keep walking so every record we cannot keep is counted */
    if (t->n_recs < t->recs_cap) t->recs[t->n_recs++] = *r;
    else t->lost++;
    const roctracer_record *next = NULL;
    if (t->api.roctracer_next_record(r, &next) != ROCTRACER_STATUS_SUCCESS || !next || next <= r) break;
    r = next;
  }
  pthread_mutex_unlock(&t->mu);
}

/* 64-bit correlation ids go to flows as 32-bit ones; roctracer counts from 1, so
 * a larger one means 4 G calls: it keeps no flow rather than a wrong one. */
static uint32_t corr32(uint64_t id) { return id <= UINT32_MAX ? (uint32_t)id : 0; }

static void decode(roc_tracer *t, const roctracer_record *r, char **demangled) {
  char a[32];
  uint64_t s, e;
  if (r->domain == ACTIVITY_DOMAIN_EXT_API) {
    ft__tracer_external(&t->base, corr32(r->correlation_id), r->u.external_id);
    return;
  }
  if (r->domain != ACTIVITY_DOMAIN_HIP_OPS && r->domain != ACTIVITY_DOMAIN_HIP_API) return;
  if (r->domain == ACTIVITY_DOMAIN_HIP_OPS && r->op == HIP_OP_BARRIER) return;
  if (!ft__clock_map_span(&t->clock, r->begin_ns, r->end_ns, &s, &e)) {
    t->dropped_untimed++;
    return;
  }
  if (r->domain == ACTIVITY_DOMAIN_HIP_API) {
    const char *name = t->api.roctracer_op_string(ACTIVITY_DOMAIN_HIP_API, r->op, 0);
    snprintf(a, sizeof a, "%u", r->op);
    ft_kv md[1] = {{"cbid", a}}; /* HIP API ids change between ROCm releases: the name comes from roctracer */
    ft_device_event ev = {.kind = FT_EVENT_RUNTIME,
                          .start_ns = s,
                          .end_ns = e,
                          .correlation_id = corr32(r->correlation_id),
                          .thread_id = r->u.host.tid,
                          .name = name ? name : "hipApi"};
    ft__tracer_emit(&t->base, &ev, md, 1);
    return;
  }
  ft_device_event ev = {.start_ns = s,
                        .end_ns = e,
                        .correlation_id = corr32(r->correlation_id),
                        .device = (uint32_t)r->u.device.device_id,
                        .stream = (uint32_t)r->u.device.queue_id};
  if (r->kind == HIP_KIND_KERNEL) {
    const char *raw = r->v.kernel_name ? r->v.kernel_name : "<unnamed kernel>";
    *demangled = ft__demangle(raw);
    ev.kind = FT_EVENT_KERNEL;
    ev.name = *demangled ? *demangled : raw;
    ft__tracer_emit(&t->base, &ev, NULL, 0); /* the HIP_OPS record has no grid or block: omitted */
    return;
  }
  snprintf(a, sizeof a, "%llu", (unsigned long long)r->v.bytes);
  ft_kv md[1] = {{"bytes", a}};
  if (r->kind == HIP_KIND_FILL) {
    ev.kind = FT_EVENT_MEMSET;
    ev.name = "Memset";
  } else {
    ev.kind = FT_EVENT_MEMCPY;
    ev.name = r->kind == HIP_KIND_H2D                                                 ? "Memcpy HtoD"
              : r->kind == HIP_KIND_D2H                                               ? "Memcpy DtoH"
              : r->kind == HIP_KIND_D2D                                               ? "Memcpy DtoD"
              : r->kind >= HIP_KIND_COPY_2D_FIRST && r->kind <= HIP_KIND_COPY_2D_LAST ? "Memcpy 2D"
                                                                                      : "Memcpy";
  }
  ft__tracer_emit(&t->base, &ev, md, 1);
}

static bool read_clock(void *ctx, uint64_t *v) {
  roc_tracer *t = ctx;
  return !FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err, t->api.roctracer_get_timestamp(v));
}

static bool sample_clock(roc_tracer *t, uint64_t *v, uint64_t *r) { return ft__clock_sample(read_clock, t, v, r); }

/* ---- ops ---- */

static ft_status roc_start(ft_tracer *base, const ft_event_sink *sink, unsigned kinds) {
  roc_tracer *t = (roc_tracer *)base;
  ft_status claim = ft__tracer_claim(&t->base, sink, kinds);
  if (claim) return claim;
  t->lost = t->dropped_untimed = 0;
  ft_status st = sample_clock(t, &t->clock.v0, &t->clock.r0) ? FT_OK : FT_EVENDOR;
  roctracer_properties_t props = {.mode = 0, .buffer_size = 4 << 20, .buffer_callback_fun = buffer_callback};
  if (!st)
    st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err, t->api.roctracer_open_pool_expl(&props, &t->pool));
  bool device = kinds & (FT_KIND_BIT(FT_EVENT_KERNEL) | FT_KIND_BIT(FT_EVENT_MEMCPY) | FT_KIND_BIT(FT_EVENT_MEMSET));
  if (!st && device)
    st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err,
                      t->api.roctracer_enable_domain_activity_expl(ACTIVITY_DOMAIN_HIP_OPS, t->pool));
  if (!st && (kinds & FT_KIND_BIT(FT_EVENT_RUNTIME)))
    st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err,
                      t->api.roctracer_enable_domain_activity_expl(ACTIVITY_DOMAIN_HIP_API, t->pool));
  if (!st)
    st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err,
                      t->api.roctracer_enable_domain_activity_expl(ACTIVITY_DOMAIN_EXT_API, t->pool));
  if (st) {
    if (t->pool) t->api.roctracer_close_pool_expl(t->pool);
    t->pool = NULL;
    ft__tracer_release(&t->base);
    return st;
  }
  t->base.armed = true;
  return FT_OK;
}

static ft_status roc_stop(ft_tracer *base) {
  roc_tracer *t = (roc_tracer *)base;
  if (!t->base.armed) return FT_OK;
  static const uint32_t domains[] = {ACTIVITY_DOMAIN_HIP_OPS, ACTIVITY_DOMAIN_HIP_API, ACTIVITY_DOMAIN_EXT_API};
  for (size_t i = 0; i < 3; i++) t->api.roctracer_disable_domain_activity(domains[i]);
  ft_status st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err, t->api.roctracer_flush_activity_expl(t->pool));
  if (!sample_clock(t, &t->clock.v1, &t->clock.r1)) t->clock.v1 = t->clock.v0, t->clock.r1 = t->clock.r0;
  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->n_recs; i++) {
    char *demangled = NULL;
    decode(t, &t->recs[i], &demangled);
    free(demangled);
  }
  t->n_recs = 0;
  pthread_mutex_unlock(&t->mu);
  atomic_fetch_add(&t->base.dropped, t->dropped_untimed + t->lost);
  if (t->dropped_untimed || t->lost)
    FT__WARN(
        "%llu records with implausible timestamps and %llu that could not be kept were dropped "
        "(counted in dropped_records)",
        (unsigned long long)t->dropped_untimed, (unsigned long long)t->lost);
  t->api.roctracer_close_pool_expl(t->pool);
  t->pool = NULL;
  ft__tracer_release(&t->base);
  return st;
}

static ft_status roc_push(ft_tracer *base, uint64_t id) {
  roc_tracer *t = (roc_tracer *)base;
  char err[128];
  return t->base.loaded
             ? FT__ROC_CALL(&t->api, err, sizeof err, t->api.roctracer_activity_push_external_correlation_id(id))
             : FT_EUNAVAILABLE;
}

static ft_status roc_pop(ft_tracer *base) {
  roc_tracer *t = (roc_tracer *)base;
  char err[128];
  uint64_t last = 0; /* a real out-pointer */
  return t->base.loaded
             ? FT__ROC_CALL(&t->api, err, sizeof err, t->api.roctracer_activity_pop_external_correlation_id(&last))
             : FT_EUNAVAILABLE;
}

static void roc_destroy(ft_tracer *base) {
  roc_tracer *t = (roc_tracer *)base;
  if (t->base.armed) roc_stop(base);
  free(t->recs);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static const ft_tracer_ops roctracer_ops = {
    .name = FT__TRACER_NAME,
    .runtime_category = "privateuse1_runtime",
    .driver_category = "privateuse1_driver",
    .available = ft__tracer_available,
    .start = roc_start,
    .stop = roc_stop,
    .push_correlation = roc_push,
    .pop_correlation = roc_pop,
    .device_count = NULL, /* not queried: no HIP runtime binding here */
    .dropped_records = ft__tracer_dropped,
    .last_error = ft__tracer_last_error,
    .destroy = roc_destroy,
    .watch_profiler_api = NULL,
};

static int load_roctracer(void *api, void *handle, char *why, size_t len) {
  return ft__roctracer_load_symbols(api, handle, why, len);
}

ft_status ft_make_device_tracer(ft_tracer **out) {
  roc_tracer *t = calloc(1, sizeof *t);
  if (!t) return FT_ENOMEM;
  t->base.tracer.ops = &roctracer_ops;
  pthread_mutex_init(&t->mu, NULL);
  const char *home = getenv("ROCM_PATH");
  char in_home[PATH_MAX];
  snprintf(in_home, sizeof in_home, "%s/lib/libroctracer64.so", home && *home ? home : "/opt/dtk");
  const char *const candidates[] = {"libroctracer64.so", in_home};
  ft__tracer_open(&t->base, candidates, 2, "libroctracer64 not found (set FLAGOS_TRACER_LIBRARY or ROCM_PATH)",
                  load_roctracer, &t->api);
  *out = &t->base.tracer;
  return FT_OK;
}
