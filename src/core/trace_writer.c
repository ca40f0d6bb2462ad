/* Chrome trace export in kineto's layout: capture window, flows, process/thread rows. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Flow bookkeeping per vendor correlation id. */
typedef struct flowrec {
  uint32_t owner; /* index + 1 of the first in-window runtime event with the id */
  uint32_t n_dev; /* in-window device events it launched */
  uint32_t next_k; /* flows already handed to device events while writing */
  bool owner_is_runtime;
  /* the device work of this launch, for range projections */
  uint64_t dev_lo, dev_hi;
  uint32_t dev_device, dev_stream;
} flowrec;

/* An API call in the window, for projecting CPU ranges onto the GPU. */
typedef struct api_call {
  uint32_t tid, corr;
  uint64_t start;
} api_call;

typedef struct plan {
  uint64_t lo, hi; /* the window exported */
  /* Vendor ids are mostly dense and increasing, so they index an array directly
   * (corr - corr_min); sparse ids fall back to a map from id to array index. */
  flowrec *flows;
  size_t n_flows;
  uint32_t corr_min;
  bool dense;
  ft__map corr;    /* sparse mode: corr -> index into flows */
  ft__map devices; /* device -> 1 */
  ft__map streams; /* device << 32 | stream -> 1 */
  ft__map tids;    /* CPU thread id -> 1 */
  api_call *calls; /* sorted by (tid, start); only when there are CPU ranges */
  size_t n_calls;
  bool has_ranges;
  ft__export_stats stats;
  /* Interned strings rendered once as JSON (names and keys escaped, values raw or
   * escaped by the literal rule): kernel names repeat thousands of times. */
  ft__arena rendered;
  struct text { const char *p; size_t n; } *names, *values;
} plan;

static void plan_free(plan *p) {
  free(p->calls);
  ft__arena_free(&p->rendered);
  free(p->names);
  free(p->values);
  free(p->flows);
  ft__map_free(&p->corr);
  ft__map_free(&p->devices);
  ft__map_free(&p->streams);
  ft__map_free(&p->tids);
}

/* The JSON text of interned string id of table tab (cache slot c). */
static struct text render(plan *p, struct text *c, const ft__strtab *tab, uint32_t id, bool value) {
  if (c[id].p) return c[id];
  const char *str = ft__intern_str(tab, id);
  size_t n = ft__intern_len(tab, id);
  char *d = ft__arena_alloc(&p->rendered, 6 * n + 2);
  if (!d) return (struct text){NULL, 0}; /* caller falls back to direct output */
  if (value && ft__json_is_literal(str, n)) {
    memcpy(d, str, n);
    c[id] = (struct text){d, n};
  } else {
    c[id] = (struct text){d, ft__json_escape(d, str, n)};
  }
  return c[id];
}

static void out_interned(ft__out *o, plan *p, bool value, const ft__strtab *tab, uint32_t id) {
  struct text t = render(p, value ? p->values : p->names, tab, id, value);
  if (t.p)
    ft__out_write(o, t.p, t.n);
  else if (value)
    ft__out_json_value(o, ft__intern_str(tab, id), ft__intern_len(tab, id));
  else
    ft__out_json_string(o, ft__intern_str(tab, id), ft__intern_len(tab, id));
}

/* The flow record of corr (never 0), or NULL when it has none (sparse mode). */
static flowrec *flow_of(const plan *p, uint32_t corr) {
  if (p->dense) return corr >= p->corr_min && corr - p->corr_min < p->n_flows ? &p->flows[corr - p->corr_min] : NULL;
  uint64_t *v = ft__map_find(&p->corr, corr);
  return v ? &p->flows[*v] : NULL;
}

static bool has_flow_role(const ft__event *e) {
  return e->correlation_id && (ft__is_api_kind(e->kind) || ft__is_device_kind(e->kind));
}

/* Sizes the flow table from the in-window ids: dense when their span is at most
 * a few times their count. */
static ft_status flows_alloc(const ft_session *s, plan *p) {
  const ft__vec *ev = &s->store.events;
  uint32_t lo = UINT32_MAX, hi = 0;
  size_t n = 0;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!has_flow_role(e) || !ft__in_window(e, p->lo, p->hi)) continue;
    n++;
    if (e->correlation_id < lo) lo = e->correlation_id;
    if (e->correlation_id > hi) hi = e->correlation_id;
  }
  if (!n) return FT_OK;
  size_t span = (size_t)(hi - lo) + 1;
  p->dense = span <= 4 * n + 1024;
  p->corr_min = lo;
  p->n_flows = p->dense ? span : n;
  p->flows = calloc(p->n_flows, sizeof *p->flows);
  if (!p->flows) return FT_ENOMEM;
  if (p->dense) return FT_OK;
  if (ft__map_init(&p->corr, n)) return FT_ENOMEM;
  size_t next = 0;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!has_flow_role(e) || !ft__in_window(e, p->lo, p->hi)) continue;
    size_t before = p->corr.len;
    uint64_t *v = ft__map_upsert(&p->corr, e->correlation_id);
    if (!v) return FT_ENOMEM;
    if (p->corr.len != before) *v = next++;
  }
  return FT_OK;
}

/* Adds key to a set, skipping the lookup when it repeats the previous key. */
static ft_status set_add(ft__map *m, uint64_t key, uint64_t *last) {
  if (m->len && key == *last) return FT_OK;
  *last = key;
  return ft__map_upsert(m, key) ? FT_OK : FT_ENOMEM;
}

static int cmp_call(const void *a, const void *b) {
  const api_call *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return (x->start > y->start) - (x->start < y->start);
}

static ft_status collect_calls(const ft_session *s, plan *p) {
  if (!p->n_calls) return FT_OK;
  p->calls = malloc(p->n_calls * sizeof *p->calls);
  if (!p->calls) return FT_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < s->store.events.len; i++) {
    const ft__event *e = ft__vec_at(&s->store.events, i);
    if (ft__is_api_kind(e->kind) && e->correlation_id && ft__in_window(e, p->lo, p->hi))
      p->calls[n++] = (api_call){e->thread_id, e->correlation_id, e->start_ns};
  }
  qsort(p->calls, n, sizeof *p->calls, cmp_call);
  return FT_OK;
}

/* The GPU projection of a CPU range (nsys's NVTX projection): from the first start
 * to the last end of the device work launched by API calls made on the range's
 * thread while it was open. False when it launched nothing. */
static bool project(const plan *p, const ft__event *r, uint64_t *lo, uint64_t *hi, uint32_t *dev, uint32_t *stream) {
  size_t a = 0, b = p->n_calls;
  while (a < b) { /* first call of the thread at or after the range's start */
    size_t m = (a + b) / 2;
    const api_call *c = &p->calls[m];
    if (c->tid < r->thread_id || (c->tid == r->thread_id && c->start < r->start_ns)) a = m + 1;
    else b = m;
  }
  bool any = false;
  for (; a < p->n_calls && p->calls[a].tid == r->thread_id && p->calls[a].start <= r->end_ns; a++) {
    const flowrec *f = flow_of(p, p->calls[a].corr);
    if (!f || !f->dev_hi) continue;
    if (!any || f->dev_lo < *lo) {
      *lo = f->dev_lo;
      *dev = f->dev_device;
      *stream = f->dev_stream;
    }
    if (!any || f->dev_hi > *hi) *hi = f->dev_hi;
    any = true;
  }
  return any;
}

static ft_status plan_build(const ft_session *s, plan *p, uint64_t lo, uint64_t hi) {
  memset(p, 0, sizeof *p);
  p->lo = lo;
  p->hi = hi;
  ft__arena_init(&p->rendered);
  p->names = calloc(s->store.names.n + 1, sizeof *p->names);
  p->values = calloc(s->store.values.n + 1, sizeof *p->values);
  if (!p->names || !p->values) return FT_ENOMEM;
  const ft__vec *ev = &s->store.events;
  if (ft__map_init(&p->devices, 8) || ft__map_init(&p->streams, 16) || ft__map_init(&p->tids, 16) ||
      flows_alloc(s, p))
    return FT_ENOMEM;
  uint64_t last_tid = 0, last_dev = 0, last_stream = 0;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__in_window(e, p->lo, p->hi)) {
      p->stats.window_discarded++;
      continue;
    }
    p->stats.exported++;
    if (ft__is_api_kind(e->kind) || e->kind == FT__EV_CPU_RANGE) {
      if (set_add(&p->tids, e->thread_id, &last_tid)) return FT_ENOMEM;
      p->has_ranges |= e->kind == FT__EV_CPU_RANGE;
      p->n_calls += ft__is_api_kind(e->kind) && e->correlation_id;
      if (ft__is_api_kind(e->kind) && e->correlation_id) {
        /* The launch owns the flows: the first runtime call with the id, else the
         * first driver call (a direct cuLaunchKernel) */
        flowrec *f = flow_of(p, e->correlation_id);
        if (f && (!f->owner || (e->kind == FT__EV_RUNTIME && !f->owner_is_runtime))) {
          f->owner = (uint32_t)(i + 1);
          f->owner_is_runtime = e->kind == FT__EV_RUNTIME;
        }
      }
    } else if (set_add(&p->devices, e->device, &last_dev) ||
               set_add(&p->streams, (uint64_t)e->device << 32 | e->stream, &last_stream)) {
      return FT_ENOMEM;
    }
  }
  /* Only now is every owner known: count the device events each one launched. */
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__is_device_kind(e->kind) || !e->correlation_id || !ft__in_window(e, p->lo, p->hi))
      continue;
    flowrec *f = flow_of(p, e->correlation_id);
    if (!f || !f->owner) continue; /* launch not in the output: no flow */
    f->n_dev++;
    p->stats.flows++;
    if (!f->dev_hi) {
      f->dev_lo = e->start_ns;
      f->dev_device = e->device;
      f->dev_stream = e->stream;
    }
    if (e->start_ns < f->dev_lo) f->dev_lo = e->start_ns;
    if (e->end_ns > f->dev_hi) f->dev_hi = e->end_ns;
  }
  return p->has_ranges ? collect_calls(s, p) : FT_OK;
}

/* Flow ids: the first device event of a launch keeps the vendor id itself (what
 * kineto and HTA expect); further device events of the same launch (graphs) get
 * k << 32 | id, which no 32-bit vendor id can collide with. Never 0. */
static uint64_t flow_id(uint32_t corr, uint64_t k) { return k << 32 | corr; }

static void out_key(ft__out *o, const char *key) {
  ft__out_json_string(o, key, strlen(key));
  ft__out_write(o, ":", 1);
}

static void out_flow(ft__out *o, char ph, uint64_t id, uint64_t pid, uint64_t tid, uint64_t ts) {
  FT__OUT_LIT(o, ",\n  {\"ph\":\"");
  ft__out_write(o, &ph, 1);
  FT__OUT_LIT(o, "\",\"id\":");
  ft__out_u64(o, id);
  FT__OUT_LIT(o, ",\"pid\":");
  ft__out_u64(o, pid);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, tid);
  FT__OUT_LIT(o, ",\"ts\":");
  ft__out_us3(o, ts);
  ft__out_str(o, ph == 'f' ? ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}"
                           : ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
}

static void out_meta_event(ft__out *o, bool *first, const char *name, uint64_t pid, uint64_t tid,
                           uint64_t ts, const char *argkey, const char *sval, int64_t ival) {
  ft__out_str(o, *first ? "\n  {\"name\":\"" : ",\n  {\"name\":\"");
  *first = false;
  ft__out_str(o, name);
  FT__OUT_LIT(o, "\",\"ph\":\"M\",\"ts\":");
  ft__out_us3(o, ts);
  FT__OUT_LIT(o, ",\"pid\":");
  ft__out_u64(o, pid);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, tid);
  FT__OUT_LIT(o, ",\"args\":{");
  out_key(o, argkey);
  if (sval)
    ft__out_json_string(o, sval, strlen(sval));
  else
    ft__out_i64(o, ival);
  FT__OUT_LIT(o, "}}");
}

static void write_rows(const ft_session *s, const plan *p, ft__out *o, uint64_t base, bool *first) {
  char label[64];
  uint64_t ts = s->lo - base;
  out_meta_event(o, first, "process_name", s->pid, 0, ts, "name", s->process_name, 0);
  out_meta_event(o, first, "process_labels", s->pid, 0, ts, "labels", "CPU", 0);
  out_meta_event(o, first, "process_sort_index", s->pid, 0, ts, "sort_index", NULL, s->pid);
  for (size_t i = 0; i < p->tids.cap; i++) {
    if (!p->tids.used[i]) continue;
    uint64_t tid = p->tids.keys[i];
    snprintf(label, sizeof label, "thread %llu", (unsigned long long)tid);
    out_meta_event(o, first, "thread_name", s->pid, tid, ts, "name", label, 0);
    out_meta_event(o, first, "thread_sort_index", s->pid, tid, ts, "sort_index", NULL, (int64_t)tid);
  }
  for (size_t i = 0; i < p->devices.cap; i++) {
    if (!p->devices.used[i]) continue;
    uint64_t dev = p->devices.keys[i];
    snprintf(label, sizeof label, "GPU %llu", (unsigned long long)dev);
    out_meta_event(o, first, "process_name", dev, 0, ts, "name", label, 0);
    out_meta_event(o, first, "process_labels", dev, 0, ts, "labels", label, 0);
    out_meta_event(o, first, "process_sort_index", dev, 0, ts, "sort_index", NULL, (int64_t)dev);
  }
  for (size_t i = 0; i < p->streams.cap; i++) {
    if (!p->streams.used[i]) continue;
    uint64_t dev = p->streams.keys[i] >> 32, stream = p->streams.keys[i] & 0xffffffffu;
    /* torch-cuda's label has the trailing space; tools match it literally. */
    snprintf(label, sizeof label, "stream %llu ", (unsigned long long)stream);
    out_meta_event(o, first, "thread_name", dev, stream, ts, "name", label, 0);
    out_meta_event(o, first, "thread_sort_index", dev, stream, ts, "sort_index", NULL, (int64_t)stream);
  }
}

static const char *category(const ft_session *s, unsigned kind) {
  switch (kind) {
  case FT__EV_KERNEL: return "kernel";
  case FT__EV_MEMCPY: return "gpu_memcpy";
  case FT__EV_MEMSET: return "gpu_memset";
  case FT__EV_RUNTIME: return s->tracer->ops->runtime_category;
  case FT__EV_DRIVER: return s->tracer->ops->driver_category;
  default: return "user_annotation";
  }
}

static void write_event(const ft_session *s, plan *p, ft__out *o, const ft__event *e, uint64_t base) {
  const ft__store *st = &s->store;
  bool device = ft__is_device_kind(e->kind);
  FT__OUT_LIT(o, ",\n  {\"ph\":\"X\",\"cat\":\"");
  ft__out_str(o, category(s, e->kind));
  FT__OUT_LIT(o, "\",\"name\":");
  out_interned(o, p, false, &st->names, e->name_id);
  FT__OUT_LIT(o, ",\"pid\":");
  ft__out_u64(o, device ? e->device : s->pid);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, device ? e->stream : e->thread_id);
  FT__OUT_LIT(o, ",\"ts\":");
  ft__out_us3(o, e->start_ns - base);
  FT__OUT_LIT(o, ",\"dur\":");
  ft__out_us3(o, e->end_ns - e->start_ns);
  FT__OUT_LIT(o, ",\"args\":{");
  bool comma = false;
  if (e->flags & FT__F_HAS_EXTERNAL) {
    FT__OUT_LIT(o, "\"External id\":");
    ft__out_u64(o, e->external_id);
    comma = true;
  }
  if (device) {
    ft__out_str(o, comma ? ",\"device\":" : "\"device\":");
    ft__out_u64(o, e->device);
    FT__OUT_LIT(o, ",\"stream\":");
    ft__out_u64(o, e->stream);
    comma = true;
  }
  if (e->kind != FT__EV_CPU_RANGE) {
    ft__out_str(o, comma ? ",\"correlation\":" : "\"correlation\":");
    ft__out_u64(o, e->correlation_id);
    comma = true;
  }
  for (uint32_t k = 0; k < e->meta_count; k++) {
    const ft__kvid *kv = ft__vec_at(&st->kvs, e->meta_first + k);
    if (comma) ft__out_write(o, ",", 1);
    comma = true;
    out_interned(o, p, false, &st->names, kv->key);
    ft__out_write(o, ":", 1);
    out_interned(o, p, true, &st->values, kv->value);
  }
  ft__out_write(o, "}}", 2);
}

static void write_flows(const ft_session *s, plan *p, ft__out *o, size_t i, const ft__event *e,
                        uint64_t base) {
  if (!has_flow_role(e)) return;
  flowrec *f = flow_of(p, e->correlation_id);
  if (!f || !f->owner) return;
  if (ft__is_api_kind(e->kind)) {
    if (f->owner != i + 1) return; /* not the owner */
    for (uint64_t k = 0; k < f->n_dev; k++)
      out_flow(o, 's', flow_id(e->correlation_id, k), s->pid, e->thread_id, e->start_ns - base);
    return;
  }
  out_flow(o, 'f', flow_id(e->correlation_id, f->next_k++), e->device, e->stream, e->start_ns - base);
}

static void write_projection(plan *p, ft__out *o, const ft__event *r, uint64_t lo, uint64_t hi, uint32_t dev,
                             uint32_t stream, uint64_t base, const ft_session *s) {
  FT__OUT_LIT(o, ",\n  {\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":");
  out_interned(o, p, false, &s->store.names, r->name_id);
  FT__OUT_LIT(o, ",\"pid\":");
  ft__out_u64(o, dev);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, stream);
  FT__OUT_LIT(o, ",\"ts\":");
  ft__out_us3(o, lo - base);
  FT__OUT_LIT(o, ",\"dur\":");
  ft__out_us3(o, hi - lo);
  FT__OUT_LIT(o, ",\"args\":{\"External id\":");
  ft__out_u64(o, r->external_id);
  FT__OUT_LIT(o, "}}");
}

static void write_header(const ft_session *s, const plan *p, ft__out *o, uint64_t base) {
  const char *why = "";
  bool collected = ft_session_device_status(s, &why) == FT_OK;
  FT__OUT_LIT(o, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n");
  /* HTA finds the rank with the regex "rank":\s+(\d+): keep the space. */
  FT__OUT_LIT(o, "  \"distributedInfo\": {\"rank\": ");
  ft__out_i64(o, s->rank);
  FT__OUT_LIT(o, ", \"world_size\": ");
  ft__out_i64(o, s->world_size);
  ft__out_str(o, "},\n  \"flagtrace\": {\"version\": \"" FT_VERSION_STRING "\", \"tracer\": ");
  ft__out_json_string(o, s->tracer->ops->name, strlen(s->tracer->ops->name));
  ft__out_str(o, collected ? ", \"device_activity\": true" : ", \"device_activity\": false");
  FT__OUT_LIT(o, ", \"device_status\": ");
  ft__out_json_string(o, collected ? "collected" : why, strlen(collected ? "collected" : why));
  FT__OUT_LIT(o, ", \"dropped_records\": ");
  ft__out_u64(o, s->dropped);
  FT__OUT_LIT(o, ", \"window_discarded\": ");
  ft__out_u64(o, p->stats.window_discarded);
  FT__OUT_LIT(o, ", \"capture_window_ns\": [");
  ft__out_u64(o, s->lo);
  ft__out_write(o, ", ", 2);
  ft__out_u64(o, s->hi);
  FT__OUT_LIT(o, "]},\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
  ft__out_u64(o, base);
  FT__OUT_LIT(o, ",\n  \"traceEvents\": [");
}

ft_status ft__write_trace(ft_session *s, ft__out *o, ft__export_stats *stats) {
  plan p;
  ft_status st = plan_build(s, &p, s->lo, s->hi);
  if (st) {
    plan_free(&p);
    return st;
  }
  if (stats) *stats = p.stats;
  if (!o) {
    plan_free(&p);
    return FT_OK;
  }
  /* ts are microseconds after a base rounded down to the UTC day, so every rank
   * of a job started the same day shares it and doubles keep ns precision. */
  uint64_t base = s->lo - s->lo % (86400ull * 1000000000ull);
  write_header(s, &p, o, base);
  bool first = true;
  write_rows(s, &p, o, base, &first);
  const ft__vec *ev = &s->store.events;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__in_window(e, p.lo, p.hi)) continue;
    /* The slice is written before its flow halves (Perfetto binds by order). */
    write_event(s, &p, o, e, base);
    uint64_t plo, phi;
    uint32_t pdev, pstream;
    if (e->kind == FT__EV_CPU_RANGE && project(&p, e, &plo, &phi, &pdev, &pstream))
      write_projection(&p, o, e, plo, phi, pdev, pstream, base, s);
    write_flows(s, &p, o, i, e, base);
  }
  FT__OUT_LIT(o, "\n  ]\n}\n");
  plan_free(&p);
  return st;
}

/* ---- reading a stopped session ---- */

ft_status ft_session_foreach_event(ft_session *s, uint64_t lo, uint64_t hi, ft_export_visitor visit, void *ctx,
                                   uint64_t *discarded) {
  if (!s || !visit || lo > hi) return FT_EINVAL;
  if (s->state != FT__S_STOPPED) return ft__session_fail(s, FT_ESTATE, "stop the session first");
  plan p;
  ft_status st = plan_build(s, &p, lo, hi);
  ft_kv *kv = NULL;
  size_t kv_cap = 0;
  uint64_t outside = 0;
  const ft__store *store = &s->store;
  for (size_t i = 0; i < store->events.len && !st; i++) {
    const ft__event *e = ft__vec_at(&store->events, i);
    if (e->kind == FT__EV_CPU_RANGE) continue;
    if (!ft__in_window(e, lo, hi)) {
      outside++;
      continue;
    }
    if (e->meta_count > kv_cap) {
      ft_kv *n = realloc(kv, e->meta_count * sizeof *n);
      if (!n) {
        st = FT_ENOMEM;
        break;
      }
      kv = n;
      kv_cap = e->meta_count;
    }
    for (uint32_t k = 0; k < e->meta_count; k++) {
      const ft__kvid *id = ft__vec_at(&store->kvs, e->meta_first + k);
      kv[k].key = ft__intern_str(&store->names, id->key);
      kv[k].value = ft__intern_str(&store->values, id->value);
    }
    bool dev = ft__is_device_kind(e->kind);
    ft_export_event x = {.event = {.kind = (ft_event_kind)e->kind, .start_ns = e->start_ns, .end_ns = e->end_ns,
                                   .correlation_id = e->correlation_id,
                                   .has_external_id = (e->flags & FT__F_HAS_EXTERNAL) != 0,
                                   .external_id = e->external_id,
                                   .device = dev ? e->device : 0,
                                   .stream = dev ? e->stream : 0,
                                   .thread_id = dev ? 0 : e->thread_id,
                                   .name = ft__intern_str(&store->names, e->name_id),
                                   .metadata = kv, .n_metadata = e->meta_count}};
    flowrec *f = has_flow_role(e) ? flow_of(&p, e->correlation_id) : NULL;
    if (f && f->owner && f->n_dev) {
      if (ft__is_api_kind(e->kind) && f->owner == i + 1) {
        x.flow = FT_FLOW_START;
        x.flow_id = e->correlation_id;
      } else if (ft__is_device_kind(e->kind) && f->next_k++ == 0) {
        x.flow = FT_FLOW_END;
        x.flow_id = e->correlation_id;
      }
    }
    if (visit(ctx, &x)) break;
  }
  free(kv);
  plan_free(&p);
  if (discarded) *discarded = outside;
  return st;
}

size_t ft_session_streams(ft_session *s, uint32_t *devices, uint32_t *streams, size_t max) {
  if (!s || s->state != FT__S_STOPPED || (max && (!devices || !streams))) return 0;
  plan p;
  size_t n = 0;
  if (!plan_build(s, &p, s->lo, s->hi)) {
    for (size_t i = 0; i < p.streams.cap; i++) {
      if (!p.streams.used[i]) continue;
      if (n < max) {
        devices[n] = (uint32_t)(p.streams.keys[i] >> 32);
        streams[n] = (uint32_t)p.streams.keys[i];
      }
      n++;
    }
  }
  plan_free(&p);
  return n;
}
