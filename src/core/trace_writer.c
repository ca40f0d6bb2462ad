/* Chrome trace export in kineto's layout: capture window, flows, process/thread rows. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Flow bookkeeping per vendor correlation id. */
typedef struct flowrec {
  uint32_t owner; /* index + 1 of the first in-window runtime event with the id */
  uint32_t n_dev; /* in-window device events it launched */
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

/* A framework user range and one of its projections onto a device row. */
typedef struct user_range {
  uint32_t tid, idx; /* idx: the range's index in the store */
  uint64_t start, end;
} user_range;
typedef struct uproj {
  uint32_t range, device, stream;
  uint64_t lo, hi;
} uproj;

typedef struct plan {
  uint64_t window_lo_ns, window_hi_ns; /* the window exported */
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
  size_t n_user; /* framework user ranges in the window (ft_user_range_push) */
  struct uproj *uprojs; /* their projections, one per (range, device, stream) */
  size_t n_uprojs;
  ft__export_stats stats;
  /* Interned strings rendered once as JSON (names and keys escaped, values raw or
   * escaped by the literal rule): kernel names repeat thousands of times. */
  ft__arena rendered;
  struct text { const char *p; size_t n; } *names, *values;
} plan;

static void plan_free(plan *p) {
  free(p->calls);
  free(p->uprojs);
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

/* FT_FLOW_START for the launch that owns a correlation id with device work in the
 * output, FT_FLOW_END for each of that work's device events, else FT_FLOW_NONE.
 * Valid once plan_build has run. */
static int flow_role(const plan *p, size_t i, const ft__event *e) {
  const flowrec *f = has_flow_role(e) ? flow_of(p, e->correlation_id) : NULL;
  if (!f || !f->owner || !f->n_dev) return FT_FLOW_NONE;
  if (ft__is_api_kind(e->kind)) return f->owner == i + 1 ? FT_FLOW_START : FT_FLOW_NONE;
  return FT_FLOW_END;
}

/* Sizes the flow table from the in-window ids: dense when their span is at most
 * a few times their count. */
static ft_status flows_alloc(const ft_session *s, plan *p) {
  const ft__vec *ev = &s->store.events;
  uint32_t lo = UINT32_MAX, hi = 0;
  size_t n = 0;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!has_flow_role(e) || !ft__in_window(e, p->window_lo_ns, p->window_hi_ns)) continue;
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
    if (!has_flow_role(e) || !ft__in_window(e, p->window_lo_ns, p->window_hi_ns)) continue;
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
    if (ft__is_api_kind(e->kind) && e->correlation_id && ft__in_window(e, p->window_lo_ns, p->window_hi_ns))
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

static int cmp_user_range(const void *a, const void *b) {
  const user_range *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->end < y->end) - (x->end > y->end); /* same start: the outer one first */
}

static int cmp_uproj(const void *a, const void *b) {
  const uproj *x = a, *y = b;
  if (x->range != y->range) return x->range < y->range ? -1 : 1;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  return (x->stream > y->stream) - (x->stream < y->stream);
}

/* The innermost user range of thread tid open at t: of the ranges sorted by
 * (tid, start), the last one started by t that has not ended (ranges nest). */
static const user_range *innermost(const user_range *u, size_t n, uint32_t tid, uint64_t t) {
  size_t a = 0, b = n;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (u[m].tid < tid || (u[m].tid == tid && u[m].start <= t)) a = m + 1;
    else b = m;
  }
  for (size_t i = a; i-- > 0 && u[i].tid == tid;)
    if (u[i].end >= t) return &u[i];
  return NULL;
}

/* kineto's gpu_user_annotation (GpuUserEventMap), found by thread and time instead
 * of the vendor's second correlation kind, so that it works for every vendor: each
 * device event goes to the innermost user range open on its launching call's thread
 * at the call, and each (range, device, stream) spans its events' first start to
 * last end. */
static ft_status project_user_ranges(const ft_session *s, plan *p) {
  const ft__vec *ev = &s->store.events;
  user_range *u = malloc(p->n_user * sizeof *u);
  if (!u) return FT_ENOMEM;
  size_t nu = 0;
  for (size_t i = 0; i < ev->len && nu < p->n_user; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if ((e->flags & FT__F_USER_RANGE) && ft__in_window(e, p->window_lo_ns, p->window_hi_ns))
      u[nu++] = (user_range){e->thread_id, (uint32_t)i, e->start_ns, e->end_ns};
  }
  qsort(u, nu, sizeof *u, cmp_user_range);
  size_t cap = 0;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__is_device_kind(e->kind) || !e->correlation_id || !ft__in_window(e, p->window_lo_ns, p->window_hi_ns)) continue;
    const flowrec *f = flow_of(p, e->correlation_id);
    if (!f || !f->owner) continue;
    const ft__event *call = ft__vec_at(ev, f->owner - 1);
    const user_range *r = innermost(u, nu, call->thread_id, call->start_ns);
    if (!r) continue;
    if (p->n_uprojs == cap) {
      cap = cap ? 2 * cap : 256;
      uproj *n = realloc(p->uprojs, cap * sizeof *n);
      if (!n) {
        free(u);
        return FT_ENOMEM;
      }
      p->uprojs = n;
    }
    p->uprojs[p->n_uprojs++] = (uproj){r->idx, e->device, e->stream, e->start_ns, e->end_ns};
  }
  free(u);
  qsort(p->uprojs, p->n_uprojs, sizeof *p->uprojs, cmp_uproj);
  size_t out = 0;
  for (size_t i = 0; i < p->n_uprojs; i++) {
    uproj *x = &p->uprojs[i], *last = out ? &p->uprojs[out - 1] : NULL;
    if (last && !cmp_uproj(last, x)) {
      if (x->lo < last->lo) last->lo = x->lo;
      if (x->hi > last->hi) last->hi = x->hi;
    } else {
      p->uprojs[out++] = *x;
    }
  }
  p->n_uprojs = out;
  return FT_OK;
}

static ft_status plan_build(const ft_session *s, plan *p, uint64_t lo, uint64_t hi) {
  memset(p, 0, sizeof *p);
  p->window_lo_ns = lo;
  p->window_hi_ns = hi;
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
    if (e->flags & FT__F_USER_RANGE) { /* not a slice of ours: only projected */
      p->n_user += ft__in_window(e, p->window_lo_ns, p->window_hi_ns);
      continue;
    }
    if (!ft__in_window(e, p->window_lo_ns, p->window_hi_ns)) {
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
    if (!ft__is_device_kind(e->kind) || !e->correlation_id || !ft__in_window(e, p->window_lo_ns, p->window_hi_ns))
      continue;
    flowrec *f = flow_of(p, e->correlation_id);
    if (!f || !f->owner) continue; /* launch not in the output: no flow */
    p->stats.flow_starts += !f->n_dev++;
    p->stats.flows++;
    if (!f->dev_hi) {
      f->dev_lo = e->start_ns;
      f->dev_device = e->device;
      f->dev_stream = e->stream;
    }
    if (e->start_ns < f->dev_lo) f->dev_lo = e->start_ns;
    if (e->end_ns > f->dev_hi) f->dev_hi = e->end_ns;
  }
  ft_status st = p->has_ranges ? collect_calls(s, p) : FT_OK;
  return st || !p->n_user ? st : project_user_ranges(s, p);
}

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
  uint64_t ts = s->window_lo_ns - base;
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

/* torch-cuda's arrows: one start on the launch and an end on every device event it
 * launched, all with the vendor id (a graph replay's five nodes share their launch's
 * start), so every device event is linked and ids stay below 2^32. */
static void write_flows(const ft_session *s, plan *p, ft__out *o, size_t i, const ft__event *e,
                        uint64_t base) {
  int role = flow_role(p, i, e);
  if (role == FT_FLOW_START)
    out_flow(o, 's', e->correlation_id, s->pid, e->thread_id, e->start_ns - base);
  else if (role == FT_FLOW_END)
    out_flow(o, 'f', e->correlation_id, e->device, e->stream, e->start_ns - base);
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

/* kineto's layout: one object per device, "id" first, then what the vendor offers. */
static void write_device_properties(const ft_session *s, plan *p, ft__out *o) {
  for (int d = 0; d < s->n_devprops; d++) {
    ft__out_str(o, d ? ",\n    {\"id\": " : "\n    {\"id\": ");
    ft__out_u64(o, (uint64_t)d);
    for (uint32_t k = 0; k < s->devprops[d].count; k++) {
      const ft__kvid *kv = ft__vec_at(&s->store.kvs, s->devprops[d].first + k);
      ft__out_write(o, ", ", 2);
      out_interned(o, p, false, &s->store.names, kv->key);
      ft__out_write(o, ": ", 2);
      out_interned(o, p, true, &s->store.values, kv->value);
    }
    ft__out_write(o, "}", 1);
  }
  if (s->n_devprops) FT__OUT_LIT(o, "\n  ");
}

static void write_header(const ft_session *s, plan *p, ft__out *o, uint64_t base) {
  const char *why = "";
  bool collected = ft_session_device_status(s, &why) == FT_OK;
  FT__OUT_LIT(o, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
  write_device_properties(s, p, o);
  FT__OUT_LIT(o, "],\n");
  if (s->rank >= 0) {
    /* HTA finds the rank with the regex "rank":\s+(\d+): keep the space. */
    FT__OUT_LIT(o, "  \"distributedInfo\": {\"rank\": ");
    ft__out_i64(o, s->rank);
    if (s->world_size >= 1) {
      FT__OUT_LIT(o, ", \"world_size\": ");
      ft__out_i64(o, s->world_size);
    }
    FT__OUT_LIT(o, "},\n");
  }
  ft__out_str(o, "  \"flagtrace\": {\"version\": \"" FT_VERSION_STRING "\", \"tracer\": ");
  ft__out_json_string(o, s->tracer->ops->name, strlen(s->tracer->ops->name));
  ft__out_str(o, collected ? ", \"device_activity\": true" : ", \"device_activity\": false");
  FT__OUT_LIT(o, ", \"device_status\": ");
  ft__out_json_string(o, collected ? "collected" : why, strlen(collected ? "collected" : why));
  FT__OUT_LIT(o, ", \"dropped_records\": ");
  ft__out_u64(o, s->dropped);
  FT__OUT_LIT(o, ", \"window_discarded\": ");
  ft__out_u64(o, p->stats.window_discarded);
  FT__OUT_LIT(o, ", \"capture_window_ns\": [");
  ft__out_u64(o, s->window_lo_ns);
  ft__out_write(o, ", ", 2);
  ft__out_u64(o, s->window_hi_ns);
  FT__OUT_LIT(o, "]},\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
  ft__out_u64(o, base);
  FT__OUT_LIT(o, ",\n  \"traceEvents\": [");
}

ft_status ft__write_trace(ft_session *s, ft__out *o, ft__export_stats *stats) {
  plan p;
  ft_status st = plan_build(s, &p, s->window_lo_ns, s->window_hi_ns);
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
  uint64_t base = s->window_lo_ns - s->window_lo_ns % (86400ull * 1000000000ull);
  write_header(s, &p, o, base);
  bool first = true;
  write_rows(s, &p, o, base, &first);
  const ft__vec *ev = &s->store.events;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__in_window(e, p.window_lo_ns, p.window_hi_ns) || (e->flags & FT__F_USER_RANGE)) continue;
    /* The slice is written before its flow halves (Perfetto binds by order). */
    write_event(s, &p, o, e, base);
    uint64_t plo = 0, phi = 0; /* set by project(); zeroed for GCC -O3's maybe-uninitialized */
    uint32_t pdev = 0, pstream = 0;
    if (e->kind == FT__EV_CPU_RANGE && project(&p, e, &plo, &phi, &pdev, &pstream))
      write_projection(&p, o, e, plo, phi, pdev, pstream, base, s);
    write_flows(s, &p, o, i, e, base);
  }
  for (size_t i = 0; i < p.n_uprojs; i++) {
    const uproj *u = &p.uprojs[i];
    write_projection(&p, o, ft__vec_at(ev, u->range), u->lo, u->hi, u->device, u->stream, base, s);
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
  bool stopped = false;
  for (size_t i = 0; i < store->events.len && !st && !stopped; i++) {
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
    x.flow = flow_role(&p, i, e);
    if (x.flow != FT_FLOW_NONE) x.flow_id = e->correlation_id;
    stopped = visit(ctx, &x) != 0;
  }
  /* the user ranges' projections (gpu_user_annotation), after every event */
  for (size_t i = 0; i < p.n_uprojs && !st && !stopped; i++) {
    const uproj *u = &p.uprojs[i];
    const ft__event *r = ft__vec_at(&store->events, u->range);
    ft_export_event x = {.event = {.kind = FT_EVENT_GPU_USER_ANNOTATION, .start_ns = u->lo, .end_ns = u->hi,
                                   .has_external_id = true, .external_id = r->external_id,
                                   .device = u->device, .stream = u->stream,
                                   .name = ft__intern_str(&store->names, r->name_id)}};
    stopped = visit(ctx, &x) != 0;
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
  if (!plan_build(s, &p, s->window_lo_ns, s->window_hi_ns)) {
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
