/* The export rules (design.md §3, §5, §6): which events lie in the window, which
 * launch owns each flow, and where CPU ranges project onto the device rows. */
#include <stdlib.h>
#include <string.h>

#include "export.h"

void ft__plan_free(plan *p) {
  ft__mem_totals_free(&p->mem);
  free(p->meta);
  free(p->uprojs);
  ft__arena_free(&p->rendered);
  free(p->names);
  free(p->values);
  free(p->block); /* spans, calls and flows */
  ft__map_free(&p->corr);
  ft__map_free(&p->devices);
  ft__map_free(&p->streams);
  ft__map_free(&p->tids);
}

/* The flow record of corr (never 0), or NULL when it has none (sparse mode). */
static flowrec *flow_of(const plan *p, uint32_t corr) {
  if (p->dense) return corr >= p->corr_min && corr - p->corr_min < p->n_flows ? &p->flows[corr - p->corr_min] : NULL;
  uint64_t *v = ft__map_find(&p->corr, corr);
  return v ? &p->flows[*v] : NULL;
}

/* API calls start flows; device work and syncs (torch-cuda draws an arrow from the
 * sync call to its cuda_sync row) end them. */
static bool has_flow_role(const ft__event *e) {
  return e->correlation_id && (ft__is_api_kind(e->kind) || ft__on_device_row(e->kind));
}

/* FT_FLOW_START for the launch that owns a correlation id with device work in the
 * output, FT_FLOW_END for each of that work's device events, else FT_FLOW_NONE.
 * Valid once plan_build has run. */
int ft__flow_role(const plan *p, size_t i, const ft__event *e) {
  const flowrec *f = has_flow_role(e) ? flow_of(p, e->correlation_id) : NULL;
  if (!f || !f->owner || !f->n_dev) return FT_FLOW_NONE;
  if (ft__is_api_kind(e->kind)) return f->owner == i + 1 ? FT_FLOW_START : FT_FLOW_NONE;
  return FT_FLOW_END;
}

/* Sizes the flow table from the in-window ids: dense when their span is at most
 * a few times their count. With projections and CPU ranges in the window, the
 * launches' spans and the API calls share its allocation: one block, so an export
 * reuses memory or faults it in as the 40-byte table alone did (three blocks of a
 * few megabytes each were trimmed and faulted in afresh by glibc at every export of
 * a replayed 1 M-event capture: 342 k faults against 228 k). */
static ft_status flows_alloc(const ft_session *s, plan *p) {
  const ft__vec *ev = &s->store.events;
  uint32_t lo = UINT32_MAX, hi = 0;
  size_t n = 0, n_api = 0;
  bool ranges = false;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__in_window(e, p->window_lo_ns, p->window_hi_ns)) continue;
    ranges |= e->kind == FT__EV_CPU_RANGE && !(e->flags & FT__F_USER_RANGE);
    if (!has_flow_role(e)) continue;
    n++;
    n_api += ft__is_api_kind(e->kind);
    if (e->correlation_id < lo) lo = e->correlation_id;
    if (e->correlation_id > hi) hi = e->correlation_id;
  }
  if (!n) return FT_OK;
  size_t span = (size_t)(hi - lo) + 1;
  p->dense = span <= 4 * n + 1024;
  p->corr_min = lo;
  p->n_flows = p->dense ? span : n;
  /* spans (8-aligned) first, then calls, then the flows; at most one span and one
   * call per API call */
  size_t extra = p->projections && ranges ? n_api : 0;
  size_t spans_b = extra * sizeof *p->spans, calls_b = extra * sizeof *p->calls;
  size_t flows_b = p->n_flows * sizeof *p->flows;
  p->block = malloc(spans_b + calls_b + flows_b);
  if (!p->block) return FT_ENOMEM;
  p->spans = extra ? (devspan *)p->block : NULL;
  p->calls = extra ? (api_call *)(p->block + spans_b) : NULL;
  p->n_calls = extra; /* filled by collect_calls; 0: ft__project finds nothing */
  p->flows = (flowrec *)(p->block + spans_b + calls_b);
  memset(p->flows, 0, flows_b);
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

/* (export.h) */
ft_status ft__set_add(ft__map *m, uint64_t key, uint64_t *last) {
  if (m->len && key == *last) return FT_OK;
  *last = key;
  return ft__map_upsert(m, key) ? FT_OK : FT_ENOMEM;
}

static int cmp_call(const void *a, const void *b) {
  const api_call *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return (x->start > y->start) - (x->start < y->start);
}

/* Fills the calls flows_alloc made room for. */
static void collect_calls(const ft_session *s, plan *p) {
  size_t n = 0;
  for (size_t i = 0; i < s->store.events.len; i++) {
    const ft__event *e = ft__vec_at(&s->store.events, i);
    if (ft__is_api_kind(e->kind) && e->correlation_id && ft__in_window(e, p->window_lo_ns, p->window_hi_ns))
      p->calls[n++] = (api_call){e->thread_id, e->correlation_id, e->start_ns};
  }
  /* one launching thread records its calls in order: then no sort (n log n, and
   * glibc's merge buffer) at every plan */
  size_t i = 1;
  while (i < n && cmp_call(&p->calls[i - 1], &p->calls[i]) <= 0) i++;
  if (i < n) qsort(p->calls, n, sizeof *p->calls, cmp_call);
}

/* The GPU projection of a CPU range (nsys's NVTX projection): from the first start
 * to the last end of the device work launched by API calls made on the range's
 * thread while it was open. False when it launched nothing. */
bool ft__project(const plan *p, const ft__event *r, uint64_t *lo, uint64_t *hi, uint32_t *dev, uint32_t *stream) {
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
    if (!f || !f->span) continue;
    const devspan *d = &p->spans[f->span - 1];
    if (!any || d->lo < *lo) {
      *lo = d->lo;
      *dev = d->device;
      *stream = d->stream;
    }
    if (!any || d->hi > *hi) *hi = d->hi;
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
  if (nu) qsort(u, nu, sizeof *u, cmp_user_range);
  size_t cap = 0;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__is_device_kind(e->kind) || !e->correlation_id || !ft__in_window(e, p->window_lo_ns, p->window_hi_ns))
      continue;
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
  if (p->n_uprojs) qsort(p->uprojs, p->n_uprojs, sizeof *p->uprojs, cmp_uproj); /* NULL when none: UB for qsort */
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

ft_status ft__plan_build(const ft_session *s, plan *p, uint64_t lo, uint64_t hi, bool projections) {
  memset(p, 0, sizeof *p);
  p->window_lo_ns = lo;
  p->window_hi_ns = hi;
  p->projections = projections;
  ft__arena_init(&p->rendered);
  p->names = calloc(s->store.names.n + 1, sizeof *p->names);
  p->values = calloc(s->store.values.n + 1, sizeof *p->values);
  p->meta = calloc(FT__META_SLOTS, sizeof *p->meta);
  if (!p->names || !p->values || !p->meta) return FT_ENOMEM;
  const ft__vec *ev = &s->store.events;
  if (ft__map_init(&p->devices, 8) || ft__map_init(&p->streams, 16) || ft__map_init(&p->tids, 16) || flows_alloc(s, p))
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
      if (ft__set_add(&p->tids, e->thread_id, &last_tid)) return FT_ENOMEM;
      if (ft__is_api_kind(e->kind) && e->correlation_id) {
        /* The launch owns the flows: the first runtime call with the id, else the
         * first driver call (a direct cuLaunchKernel) */
        flowrec *f = flow_of(p, e->correlation_id);
        if (f && (!f->owner || (e->kind == FT__EV_RUNTIME && !f->owner_is_runtime))) {
          f->owner = (uint32_t)(i + 1);
          f->owner_is_runtime = e->kind == FT__EV_RUNTIME;
        }
      }
    } else if (ft__is_memory_kind(e->kind) &&
               ft__mem_on_host(&((const ft__mem *)ft__vec_at(&s->store.mems, e->meta_first))->info)) {
      /* host memory: written on the process, no device row */
    } else if (ft__set_add(&p->devices, e->device, &last_dev) ||
               /* a sync that names no stream (context, event) has no stream row, nor
                * has a memory operation (an instant on its calling thread) */
               (!(e->kind == FT__EV_SYNC && e->stream == UINT32_MAX) && !ft__is_memory_kind(e->kind) &&
                ft__set_add(&p->streams, (uint64_t)e->device << 32 | e->stream, &last_stream))) {
      return FT_ENOMEM;
    }
    p->n_mem += ft__is_memory_kind(e->kind);
  }
  /* the running memory totals, for a trace written (not for counts or an adaptor's
   * visit, which has no memory events); a skipped operation is not written */
  if (p->n_mem && projections) {
    if (ft__mem_totals_build(s, lo, hi, &p->tids, &p->mem)) return FT_ENOMEM;
    p->stats.exported -= p->mem.operations - p->mem.written;
  }
  /* Only now is every owner known: count the device events each one launched. */
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__on_device_row(e->kind) || !e->correlation_id || !ft__in_window(e, p->window_lo_ns, p->window_hi_ns))
      continue;
    flowrec *f = flow_of(p, e->correlation_id);
    if (!f || !f->owner) continue; /* launch not in the output: no flow */
    p->stats.flow_starts += !f->n_dev++;
    p->stats.flows++;
    if (!p->spans || e->kind == FT__EV_SYNC) continue; /* nothing projects; a wait is no launched work */
    if (!f->span) {
      p->spans[p->n_spans] = (devspan){e->start_ns, e->end_ns, e->device, e->stream};
      f->span = (uint32_t)++p->n_spans;
      continue;
    }
    devspan *d = &p->spans[f->span - 1];
    if (e->start_ns < d->lo) d->lo = e->start_ns; /* the row stays the first event's */
    if (e->end_ns > d->hi) d->hi = e->end_ns;
  }
  if (p->calls) collect_calls(s, p);
  return p->n_user ? project_user_ranges(s, p) : FT_OK;
}
