/* The public session API: lifecycle, CPU ranges with external correlation, queries. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "internal.h"
#include "rank.h"

/* The last error, per thread: no lock, no race between threads failing at once. */
static _Thread_local struct {
  uint64_t gen;
  char text[512];
} tls_err;
static atomic_uint_fast64_t next_gen;

/* The vendor activity APIs are process-global: one running session at a time. */
static _Atomic(ft_session *) active_session;
/* (internal.h) */
pthread_mutex_t ft__tracer_mu = PTHREAD_MUTEX_INITIALIZER;

ft_status ft__session_fail(ft_session *s, ft_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls_err.text, sizeof tls_err.text, fmt, ap);
  va_end(ap);
  tls_err.gen = s->gen;
  return status;
}

void ft_session_options_init(ft_session_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->rank = -1;
  opts->world_size = -1;
  opts->activities = FT_ACTIVITY_DEFAULT;
}

static void read_comm(char *buf, size_t len) {
  snprintf(buf, len, "process");
  FILE *f = fopen("/proc/self/comm", "r");
  if (!f) return;
  if (fgets(buf, (int)len, f)) buf[strcspn(buf, "\n")] = '\0';
  fclose(f);
}

ft_status ft_session_create(ft_session **out, const ft_session_options *opts) {
  if (!out) return FT_EINVAL;
  *out = NULL;
  ft_session_options def;
  ft_session_options_init(&def);
  if (!opts) opts = &def;
  /* -1 is "unknown" for rank and world size; anything else must make sense */
  if ((opts->activities & ~(unsigned)FT_ACTIVITY_ALL) || opts->rank < -1 || opts->world_size < -1 ||
      opts->world_size == 0 || (opts->rank >= 0 && opts->world_size > 0 && opts->rank >= opts->world_size))
    return FT_EINVAL;
  ft_session *s = calloc(1, sizeof *s);
  if (!s) return FT_ENOMEM;
  s->gen = atomic_fetch_add(&next_gen, 1) + 1;
  pthread_mutex_init(&s->mu, NULL);
  ft__store_init(&s->store);
  ft__vec_init(&s->open_vec, sizeof(ft__open_range), 6);
  ft__vec_init(&s->call_spans, sizeof(struct ft__call_span), 10);
  if (ft__map_init(&s->open_ranges, 16)) {
    ft__store_free(&s->store);
    free(s);
    return FT_ENOMEM;
  }
  s->state = FT__S_CREATED;
  static atomic_uint_fast64_t serials;
  s->serial = atomic_fetch_add(&serials, 1) + 1;
  s->pid = (uint32_t)getpid();
  /* -1: unknown, and then no distributedInfo at all (issue 13: a torchrun launcher
   * writing rank 0 beside the real rank 0 misleads HTA); the environment's are read
   * as %r reads them (rank.h), a rank not below its world size refused as the options' */
  int env_rank, env_world;
  char env_why[160];
  ft__env_rank(&env_rank, &env_world, env_why, sizeof env_why);
  if (env_why[0] && (opts->rank < 0 || opts->world_size < 1)) {
    static atomic_bool said;
    if (!atomic_exchange(&said, true)) ft__warn("%s; the trace has no distributedInfo rank", env_why);
  }
  s->rank = opts->rank >= 0 ? opts->rank : env_rank;
  s->world_size = opts->world_size >= 1 ? opts->world_size : env_world;
  if (s->rank >= 0 && s->world_size >= 1 && s->rank >= s->world_size) s->rank = -1; /* mixed sources */
  s->activities = opts->activities & FT_ACTIVITY_ALL;
  if (!ft__memory_allowed()) s->activities &= ~(unsigned)FT_ACTIVITY_MEMORY; /* FLAGOS_TRACE_MEMORY=0 */
  if (opts->process_name) snprintf(s->process_name, sizeof s->process_name, "%s", opts->process_name);
  else read_comm(s->process_name, sizeof s->process_name);
  ft_status st = ft_make_device_tracer(&s->tracer);
  if (st) {
    ft__store_free(&s->store);
    ft__map_free(&s->open_ranges);
    ft__vec_free(&s->open_vec);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return st;
  }
  const char *why = NULL;
  if (!s->tracer->ops->available(s->tracer, &why)) {
    s->device_status = FT_EUNAVAILABLE;
    snprintf(s->device_why, sizeof s->device_why, "%s", why ? why : "no reason given");
    ft__log("device tracer '%s' unavailable: %s", s->tracer->ops->name, s->device_why);
  }
  *out = s;
  return FT_OK;
}

void ft_session_destroy(ft_session *s) {
  if (!s) return;
  if (s->state == FT__S_RUNNING) ft_session_stop(s);
  if (s->tracer) s->tracer->ops->destroy(s->tracer);
  ft__store_free(&s->store);
  free(s->devprops);
  free(s->pauses);
  free(s->corr_ext);
  free(s->corr_runs);
  ft__timed_free(s);
  ft__map_free(&s->open_ranges);
  ft__vec_free(&s->open_vec);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static ft_status sink_event(void *ctx, const ft_device_event *ev) {
  ft_session *s = ctx;
  /* a tracer that records memory whatever it was asked (one activity switch for
   * several kinds) must not put it into a session that asked for none */
  if (ev && ev->kind == FT_EVENT_MEMORY && !(s->activities & FT_ACTIVITY_MEMORY)) return FT_OK;
  pthread_mutex_lock(&s->mu);
  ft_status st = ft__store_add_device(&s->store, ev);
  pthread_mutex_unlock(&s->mu);
  return st;
}

struct ft__corr_ext {
  uint32_t corr;
  uint32_t seq; /* arrival order: the later report of one id wins */
  uint64_t ext;
};

struct ft__corr_run {
  uint32_t first, n; /* ids first .. first + n - 1 */
  uint64_t ext;
};

/* Room for one more element in *arr (elements of size elem): doubles, never past
 * UINT32_MAX elements (seq and run lengths are 32-bit). */
static bool grow(void **arr, size_t *cap, size_t len, size_t elem) {
  if (len < *cap) return true;
  size_t ncap = *cap ? *cap * 2 : 1024;
  void *n = len < UINT32_MAX ? realloc(*arr, ncap * elem) : NULL;
  if (!n) return false;
  *arr = n;
  *cap = ncap;
  return true;
}

/* Notes corr -> ext; the caller holds s->mu. */
static ft_status add_pair(ft_session *s, uint32_t corr, uint64_t ext) {
  if (!corr) return FT_OK; /* 0 names no vendor call */
  ft_status st = FT_OK;
  struct ft__corr_run *last = s->n_corr_runs ? &s->corr_runs[s->n_corr_runs - 1] : NULL;
  /* ids are 32-bit, so a run from first to corr never has more than UINT32_MAX */
  if (last && ext == last->ext && (corr == s->corr_runs_end || (s->corr_gaps && corr > s->corr_runs_end))) {
    last->n = corr - last->first + 1;
    s->corr_runs_end = (uint64_t)corr + 1;
  } else if (corr >= s->corr_runs_end) {
    if (grow((void **)&s->corr_runs, &s->cap_corr_runs, s->n_corr_runs, sizeof *s->corr_runs)) {
      s->corr_runs[s->n_corr_runs++] = (struct ft__corr_run){corr, 1, ext};
      s->corr_runs_end = (uint64_t)corr + 1;
    } else {
      st = FT_ENOMEM;
    }
  } else if (grow((void **)&s->corr_ext, &s->cap_corr_ext, s->n_corr_ext, sizeof *s->corr_ext)) {
    s->corr_ext[s->n_corr_ext] = (struct ft__corr_ext){corr, (uint32_t)s->n_corr_ext, ext};
    s->n_corr_ext++;
    s->corr_ext_sorted = false;
  } else {
    st = FT_ENOMEM;
  }
  return st;
}

static ft_status sink_external_id(void *ctx, uint32_t corr, uint64_t ext) {
  ft_session *s = ctx;
  pthread_mutex_lock(&s->mu);
  ft_status st = add_pair(s, corr, ext);
  pthread_mutex_unlock(&s->mu);
  return st;
}

static ft_status sink_call_span(void *ctx, uint32_t corr, uint32_t tid, uint64_t start, uint64_t end) {
  return ft__timed_call_span(ctx, corr, tid, start, end);
}

static void sink_lost(void *ctx, uint64_t at_ns, const char *why) { ft__session_set_lost(ctx, at_ns, why); }

static int cmp_corr_ext(const void *a, const void *b) {
  const struct ft__corr_ext *x = a, *y = b;
  if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The external id last reported for corr, or NULL: a late pair (sorted by corr,
 * seq) wins over the run covering corr. */
static const uint64_t *find_ext(const ft_session *s, uint32_t corr) {
  size_t lo = 0, hi = s->n_corr_ext; /* first index with a larger corr */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->corr_ext[mid].corr <= corr) lo = mid + 1;
    else hi = mid;
  }
  if (lo && s->corr_ext[lo - 1].corr == corr) return &s->corr_ext[lo - 1].ext;
  lo = 0, hi = s->n_corr_runs; /* runs are in id order and never overlap */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->corr_runs[mid].first <= corr) lo = mid + 1;
    else hi = mid;
  }
  const struct ft__corr_run *r = lo ? &s->corr_runs[lo - 1] : NULL;
  return r && corr - r->first < r->n ? &r->ext : NULL;
}

/* Gives events that arrived without an external id the one their vendor
 * correlation id was issued under (the two id schemes of design.md §2 meet here). */
static void resolve_external_ids(ft_session *s) {
  if (!s->n_corr_ext && !s->n_corr_runs) return;
  if (!s->corr_ext_sorted) { /* usually already in order: then no sort and no sort buffer (peak RSS) */
    size_t i = 1;
    while (i < s->n_corr_ext && cmp_corr_ext(&s->corr_ext[i - 1], &s->corr_ext[i]) <= 0) i++;
    if (i < s->n_corr_ext) qsort(s->corr_ext, s->n_corr_ext, sizeof *s->corr_ext, cmp_corr_ext);
    s->corr_ext_sorted = true;
  }
  for (size_t i = 0; i < s->store.events.len; i++) {
    ft__event *e = ft__vec_at(&s->store.events, i);
    if (e->kind == FT__EV_CPU_RANGE || (e->flags & FT__F_HAS_EXTERNAL) || !e->correlation_id) continue;
    const uint64_t *ext = find_ext(s, e->correlation_id);
    if (!ext || (s->corr_gaps && *ext == FT__EXT_NONE)) continue; /* none, or a barrier */
    e->external_id = *ext;
    e->flags |= FT__F_HAS_EXTERNAL;
  }
}

ft_status ft_session_start(ft_session *s) {
  if (!s) return FT_EINVAL;
  if (s->state != FT__S_CREATED) return ft__session_fail(s, FT_ESTATE, "session already started");
  ft_session *running = NULL;
  bool attached = false;
  if (!atomic_compare_exchange_strong(&active_session, &running, s)) {
    if (!running->accepts_attach)
      return ft__session_fail(s, FT_EBUSY, "another flagtrace session is running in this process");
    attached = s->device_status == FT_OK && ft__session_attach(s, running);
    if (!attached && s->device_status == FT_OK) s->device_status = FT_EBUSY;
  }
  s->next_external_id = 1;
  s->window_lo_ns = ft__now_ns();
  if (s->device_status == FT_OK && !attached) {
    s->sink = (ft_event_sink){
        .event = sink_event, .external_id = sink_external_id, .call_span = sink_call_span, .lost = sink_lost, .ctx = s};
    pthread_mutex_lock(&ft__tracer_mu);
    ft_status st = s->tracer->ops->start(s->tracer, &s->sink, s->activities);
    pthread_mutex_unlock(&ft__tracer_mu);
    if (st) {
      s->device_status = st;
      snprintf(s->device_why, sizeof s->device_why, "%s: %s", ft_strerror(st), s->tracer->ops->last_error(s->tracer));
      ft__warn("device tracer '%s' could not start (%s); profiling CPU ranges only", s->tracer->ops->name,
               s->device_why);
    } else {
      const ft_tracer_ops *ops = s->tracer->ops;
      s->timed = ops->calls_on_core_clock && ops->calls_on_core_clock(s->tracer);
      ft__log("%s: ids attributed %s", ops->name,
              s->timed ? "by time on each thread (the tracer stamps calls with our clock)"
                       : "through the tracer's correlation records");
      s->tracer_armed = true;
    }
  }
  pthread_mutex_lock(&s->mu);
  s->state = FT__S_RUNNING;
  s->running = true;
  pthread_mutex_unlock(&s->mu);
  return FT_OK;
}

enum { MAX_DEVPROPS = 64 };

/* deviceProperties: one entry per device the vendor reports, read once the tracer
 * has stopped, so that these queries never show as the program's API calls. A
 * failure only leaves the list shorter. */
static void snapshot_devices(ft_session *s) {
  const ft_tracer_ops *ops = s->tracer->ops;
  int n = ops->device_count ? ops->device_count(s->tracer) : 0;
  if (n <= 0 || s->devprops) return;
  if (n > MAX_DEVPROPS) n = MAX_DEVPROPS;
  s->devprops = calloc((size_t)n, sizeof *s->devprops);
  if (!s->devprops) return;
  pthread_mutex_lock(&s->mu);
  for (int d = 0; d < n; d++) {
    const ft_kv *kv = NULL;
    size_t m = ops->device_properties ? ops->device_properties(s->tracer, d, &kv) : 0;
    s->devprops[d].first = (uint32_t)s->store.kvs.len;
    for (size_t i = 0; i < m; i++) {
      ft__kvid id;
      ft__kvid *slot;
      if (ft__intern(&s->store.names, kv[i].key, strlen(kv[i].key), &id.key) ||
          ft__intern(&s->store.values, kv[i].value, strlen(kv[i].value), &id.value) ||
          !(slot = ft__vec_push(&s->store.kvs)))
        break;
      *slot = id;
      s->devprops[d].count++;
    }
    s->n_devprops = d + 1;
  }
  pthread_mutex_unlock(&s->mu);
}

ft_status ft__session_attribute(ft_session *s, bool timed) {
  pthread_mutex_lock(&s->mu);
  ft_status at = timed ? ft__timed_attribute(s, add_pair) : FT_OK;
  resolve_external_ids(s);
  ft_status mt = ft__attribute_by_thread(s); /* memory operations that name no call */
  if (!at) at = mt;
  pthread_mutex_unlock(&s->mu);
  return at;
}

ft_status ft_session_stop(ft_session *s) {
  if (!s) return FT_EINVAL;
  pthread_mutex_lock(&s->mu);
  if (s->state != FT__S_RUNNING) {
    pthread_mutex_unlock(&s->mu);
    return ft__session_fail(s, FT_ESTATE, "session is not running");
  }
  s->window_hi_ns = ft__now_ns();
  s->state = FT__S_STOPPED;
  s->running = false;
  for (size_t i = 0; i < s->n_pauses; i++)
    if (s->pauses[i].hi == UINT64_MAX) s->pauses[i].hi = s->window_hi_ns;
  pthread_mutex_unlock(&s->mu);
  ft_status result = FT_OK;
  bool attributed = false;
  if (s->parent) {
    ft_status st = ft__session_read_parent(s);
    if (st)
      result = ft__session_fail(s, st, "reading this profile's window from record's session: %s", ft_strerror(st));
    attributed = true;
  } else if (s->tracer_armed) {
    const ft_tracer_ops *ops = s->tracer->ops;
    pthread_mutex_lock(&ft__tracer_mu);
    ft_status st = ops->stop(s->tracer);
    s->tracer_armed = false;
    pthread_mutex_unlock(&ft__tracer_mu);
    if (st) result = ft__session_fail(s, st, "stopping tracer '%s': %s", ops->name, ops->last_error(s->tracer));
    s->dropped = ops->dropped_records(s->tracer);
    snapshot_devices(s);
    attributed = true;
  }
  if (attributed) {
    ft_status at = ft__session_attribute(s, s->timed);
    if (at)
      ft__warn(
          "out of memory attributing calls to their ops; some device time is unattributed or given a neighbouring op");
    if (s->dropped)
      ft__warn(
          "%llu device activity records were dropped by the vendor library; "
          "the trace counts them in flagtrace.dropped_records",
          (unsigned long long)s->dropped);
  }
  pthread_mutex_lock(&s->mu);
  if (ft__session_apply_pauses(s)) ft__warn("out of memory leaving out what was recorded while collection was stopped");
  pthread_mutex_unlock(&s->mu);
  if (s->lost_ns && !s->accepts_attach) /* record's own line says it for its session */
    ft__warn("device activity after %.3f s of this session is missing: %s",
             (double)(s->lost_ns - s->window_lo_ns) / 1e9, s->lost_why);
  ft_session *self = s;
  atomic_compare_exchange_strong(&active_session, &self, NULL); /* an attached one never held it */
  return result;
}

ft_status ft_session_write(ft_session *s, const char *path) {
  if (!s) return FT_EINVAL;
  if (!path || !*path) /* the message too: an older one must not answer for this call */
    return ft__session_fail(s, FT_EINVAL, "no path to write the trace to (%s)", path ? "an empty name" : "NULL");
  if (s->state != FT__S_STOPPED) return ft__session_fail(s, FT_ESTATE, "stop the session before writing it");
  ft__out *o;
  char err[sizeof tls_err.text] = "";
  ft_status st = ft__out_open(&o, path, err, sizeof err);
  if (st) return ft__session_fail(s, st, "%s", err[0] ? err : ft_strerror(st));
  ft__export_stats stats;
  st = ft__write_trace(s, o, &stats);
  if (st) {
    ft__out_abort(o);
    return ft__session_fail(s, st, "writing trace '%s': %s", path, ft_strerror(st));
  }
  st = ft__out_close(o, err, sizeof err);
  if (st) return ft__session_fail(s, st, "%s", err[0] ? err : ft_strerror(st));
  ft__log("wrote %s: %llu events, %llu outside the window, %llu flows", path, (unsigned long long)stats.exported,
          (unsigned long long)stats.window_discarded, (unsigned long long)stats.flows);
  return FT_OK;
}

ft_status ft_session_device_time(ft_session *s, uint64_t external_id, uint64_t *ns, uint64_t *count) {
  if (!s || !ns) return FT_EINVAL;
  if (s->state != FT__S_STOPPED) return ft__session_fail(s, FT_ESTATE, "stop the session first");
  /* Keyed on the external id, never the vendor correlation id (design.md §2). */
  uint64_t sum = 0, n = 0;
  for (size_t i = 0; i < s->store.events.len; i++) {
    const ft__event *e = ft__vec_at(&s->store.events, i);
    if (!ft__is_device_kind(e->kind) || !(e->flags & FT__F_HAS_EXTERNAL) || e->external_id != external_id ||
        !ft__in_window(e, s->window_lo_ns, s->window_hi_ns))
      continue;
    sum += e->end_ns - e->start_ns;
    n++;
  }
  *ns = sum;
  if (count) *count = n;
  return FT_OK;
}

ft_status ft_session_counts_get(ft_session *s, ft_session_counts *out) {
  if (!s || !out) return FT_EINVAL;
  if (s->state != FT__S_STOPPED) return ft__session_fail(s, FT_ESTATE, "stop the session first");
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < s->store.events.len; i++) {
    const ft__event *e = ft__vec_at(&s->store.events, i);
    if (e->kind == FT__EV_CPU_RANGE && (e->flags & FT__F_USER_RANGE))
      continue; /* the framework's own slice, not ours */
    if (e->kind == FT__EV_CPU_RANGE) out->cpu_ranges++;
    else out->device_events++;
  }
  /* The writer's own plan (no output), so counts can never disagree with what a
   * written trace holds. */
  ft__export_stats stats;
  ft_status st = ft__write_trace(s, NULL, &stats);
  if (st) return st;
  out->window_discarded = stats.window_discarded;
  out->flows = stats.flows;
  out->dropped_records = s->dropped;
  out->device_lost_ns = s->lost_ns;
  return FT_OK;
}

ft_status ft_session_device_status(const ft_session *s, const char **why) {
  if (!s) return FT_EINVAL;
  if (why) *why = s->device_status ? s->device_why : "";
  return s->device_status;
}

const char *ft_session_last_error(const ft_session *s) { return s && tls_err.gen == s->gen ? tls_err.text : ""; }

ft_status ft__session_inject(ft_session *s, const ft_device_event *ev) { return sink_event(s, ev); }

ft_status ft__session_inject_external(ft_session *s, uint32_t corr, uint64_t ext) {
  ft_status st = sink_external_id(s, corr, ext);
  if (!st) resolve_external_ids(s);
  return st;
}

void ft__session_set_window(ft_session *s, uint64_t lo, uint64_t hi) {
  s->window_lo_ns = lo;
  s->window_hi_ns = hi;
}

/* ---- reading a stopped session ---- */

ft_status ft_session_foreach_event(ft_session *s, uint64_t lo, uint64_t hi, ft_export_visitor visit, void *ctx,
                                   uint64_t *discarded) {
  if (!s || !visit || lo > hi) return FT_EINVAL;
  if (s->state != FT__S_STOPPED) return ft__session_fail(s, FT_ESTATE, "stop the session first");
  plan p;
  ft_status st = ft__plan_build(s, &p, lo, hi, false); /* CPU ranges are not handed on: no projections */
  ft_kv *kv = NULL;
  size_t kv_cap = 0;
  uint64_t outside = 0;
  const ft__store *store = &s->store;
  bool stopped = false;
  for (size_t i = 0; i < store->events.len && !st && !stopped; i++) {
    const ft__event *e = ft__vec_at(&store->events, i);
    /* kineto has no activity type for a device memory operation (torch writes its
     * own [memory] instants with profile_memory=True): memory is not handed on */
    if (e->kind == FT__EV_CPU_RANGE || ft__is_memory_kind(e->kind)) continue;
    if (!ft__in_window(e, lo, hi)) {
      outside++;
      continue;
    }
    ft_export_event x = {.name_key = e->name_id, .meta_key = e->meta_first};
    if ((st = ft__store_view(store, e, &kv, &kv_cap, &x.event))) break;
    x.flow = ft__flow_role(&p, i, e);
    if (x.flow != FT_FLOW_NONE) x.flow_id = e->correlation_id;
    stopped = visit(ctx, &x) != 0;
  }
  /* the user ranges' projections (gpu_user_annotation), after every event */
  for (size_t i = 0; i < p.n_uprojs && !st && !stopped; i++) {
    const uproj *u = &p.uprojs[i];
    const ft__event *r = ft__vec_at(&store->events, u->range);
    ft_export_event x = {.event = {.kind = FT_EVENT_GPU_USER_ANNOTATION,
                                   .start_ns = u->lo,
                                   .end_ns = u->hi,
                                   .has_external_id = true,
                                   .external_id = r->external_id,
                                   .device = u->device,
                                   .stream = u->stream,
                                   .name = ft__intern_str(&store->names, r->name_id)},
                         .name_key = r->name_id};
    stopped = visit(ctx, &x) != 0;
  }
  free(kv);
  ft__plan_free(&p);
  if (discarded) *discarded = outside;
  return st;
}

size_t ft_session_streams(ft_session *s, uint32_t *devices, uint32_t *streams, size_t max) {
  if (!s || s->state != FT__S_STOPPED || (max && (!devices || !streams))) return 0;
  /* The plan's stream set without the rest of the plan (flows, projections): an
   * adaptor asks for the rows several times per profile exit. */
  ft__map set;
  if (ft__map_init(&set, 16)) return 0;
  uint64_t last = 0;
  bool ok = true;
  for (size_t i = 0; i < s->store.events.len && ok; i++) {
    const ft__event *e = ft__vec_at(&s->store.events, i);
    /* a sync that names no stream (a context or event sync) gets no stream row */
    bool row = ft__is_device_kind(e->kind) || (e->kind == FT__EV_SYNC && e->stream != UINT32_MAX);
    if (row && ft__in_window(e, s->window_lo_ns, s->window_hi_ns))
      ok = ft__set_add(&set, (uint64_t)e->device << 32 | e->stream, &last) == FT_OK;
  }
  size_t n = 0;
  for (size_t i = 0; ok && i < set.cap; i++) {
    if (!set.used[i]) continue;
    if (n < max) {
      devices[n] = (uint32_t)(set.keys[i] >> 32);
      streams[n] = (uint32_t)set.keys[i];
    }
    n++;
  }
  ft__map_free(&set);
  return n;
}
