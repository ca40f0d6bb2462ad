/* Device memory from [memory] instants (issue 51): peaks, allocations, frees and live bytes per device, bounded. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyed_hash.h"
#include "stats_memory.h"

enum { R_TID = 1, R_CORR = 2, R_EXT = 4 };
typedef struct mref { /* where an operation happened, resolved to an op and call at the end */
  int64_t ts, pid, tid, corr, ext;
  uint8_t flags;
} mref;

typedef struct mlive {
  uint64_t addr;
  int64_t bytes;
  uint32_t dev;
  mref at;
} mlive;

typedef struct mdev {
  int32_t device;
  int16_t type;
  int64_t run_alloc, run_res;   /* running sums: Bytes, Pool Bytes */
  int64_t cur_alloc, cur_res;   /* the totals after the latest operation */
  int64_t peak_alloc, peak_res; /* 0 until above 0 */
  bool has_peak_alloc, has_peak_res;
  mref at_alloc, at_res;
  ft_stat_dist allocs, frees;
} mdev;

typedef struct mop {
  int64_t ts, end, pid, tid, ext;
  uint32_t name, file, parent;
  bool has_ext;
} mop;
typedef struct mstep {
  int64_t ts, end, number;
} mstep;

/* An event as it came (96 B): the file's order is not time's (torch writes them by its own index), and a free
 * must meet the allocation before it in time; applied in time order at the end. */
typedef struct mev {
  int64_t ts, bytes, total_alloc, total_res, pool_bytes, pid, tid, corr, ext;
  uint64_t addr, seq;
  int32_t device;
  int16_t type;
  uint8_t op, flags; /* R_* */
} mev;

struct ft__memacc {
  mev *evs;
  size_t n_evs, cap_evs;
  size_t live_limit; /* FT_MEM_MAX_LIVE; tests set less */
  mdev *devs;
  size_t n_devs, cap_devs, last_dev;
  mlive *live; /* open addressing by (addr, dev), linear probing, deletion by backward shift */
  uint8_t *used;
  size_t cap_live, n_live;
  mop *ops, *calls;
  size_t n_ops, cap_ops, n_calls, cap_calls;
  mstep *steps;
  size_t n_steps, cap_steps;
  uint64_t events, bad_sign, unmatched, over_bound, over_devices;
};

ft__memacc *ft__memacc_new(void) {
  ft__hash_key_init();
  ft__memacc *a = calloc(1, sizeof(ft__memacc));
  if (a) a->live_limit = FT_MEM_MAX_LIVE;
  return a;
}

void ft__memacc_set_live_limit(ft__memacc *a, size_t n) { a->live_limit = n; }

static void reset(ft__memacc *a) {
  for (size_t i = 0; i < a->n_devs; i++) ft_dist_free(&a->devs[i].allocs), ft_dist_free(&a->devs[i].frees);
  free(a->devs), free(a->live), free(a->used), free(a->ops), free(a->calls), free(a->steps), free(a->evs);
  size_t limit = a->live_limit;
  memset(a, 0, sizeof *a);
  a->live_limit = limit;
}

void ft__memacc_free(ft__memacc *a) {
  if (!a) return;
  reset(a);
  free(a);
}

static bool grow(void **p, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return true;
  size_t c = *cap ? 2 * *cap : 64;
  void *q = realloc(*p, c * elem);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

static mdev *device(ft__memacc *a, const ft__ev *e, uint32_t *index) {
  if (a->last_dev < a->n_devs && a->devs[a->last_dev].device == e->mem_device &&
      a->devs[a->last_dev].type == e->mem_device_type)
    return *index = (uint32_t)a->last_dev, &a->devs[a->last_dev];
  for (size_t i = 0; i < a->n_devs; i++)
    if (a->devs[i].device == e->mem_device && a->devs[i].type == e->mem_device_type)
      return a->last_dev = i, *index = (uint32_t)i, &a->devs[i];
  if (a->n_devs >= FT_STATS_MAX_DEVICES || !grow((void **)&a->devs, &a->cap_devs, a->n_devs, sizeof *a->devs))
    return NULL;
  mdev *d = &a->devs[a->n_devs];
  memset(d, 0, sizeof *d);
  d->device = e->mem_device;
  d->type = e->mem_device_type;
  a->last_dev = a->n_devs;
  *index = (uint32_t)a->n_devs++;
  return d;
}

static size_t slot_of(const ft__memacc *a, uint64_t addr, uint32_t dev) {
  return (size_t)ft__hash_u64_keyed(addr ^ ((uint64_t)dev << 48 | (uint64_t)dev >> 16)) & (a->cap_live - 1);
}

static bool live_room(ft__memacc *a) {
  if ((a->n_live + 1) * 4 <= a->cap_live * 3) return true;
  size_t cap = a->cap_live ? 2 * a->cap_live : 1024;
  mlive *old = a->live;
  uint8_t *old_used = a->used;
  size_t old_cap = a->cap_live;
  a->live = malloc(cap * sizeof *a->live);
  a->used = calloc(cap, 1);
  if (!a->live || !a->used) {
    free(a->live), free(a->used);
    a->live = old, a->used = old_used;
    return false;
  }
  a->cap_live = cap;
  for (size_t i = 0; i < old_cap; i++) {
    if (!old_used[i]) continue;
    size_t s = slot_of(a, old[i].addr, old[i].dev);
    while (a->used[s]) s = (s + 1) & (cap - 1);
    a->live[s] = old[i];
    a->used[s] = 1;
  }
  free(old), free(old_used);
  return true;
}

static size_t live_find(const ft__memacc *a, uint64_t addr, uint32_t dev) {
  if (!a->cap_live) return SIZE_MAX;
  for (size_t s = slot_of(a, addr, dev); a->used[s]; s = (s + 1) & (a->cap_live - 1))
    if (a->live[s].addr == addr && a->live[s].dev == dev) return s;
  return SIZE_MAX;
}

static void live_remove(ft__memacc *a, size_t s) {
  size_t mask = a->cap_live - 1;
  a->used[s] = 0;
  a->n_live--;
  for (size_t j = (s + 1) & mask; a->used[j]; j = (j + 1) & mask) { /* backward shift */
    size_t home = slot_of(a, a->live[j].addr, a->live[j].dev);
    if (((j - home) & mask) >= ((j - s) & mask)) {
      a->live[s] = a->live[j];
      a->used[s] = 1;
      a->used[j] = 0;
      s = j;
    }
  }
}

static mref ref_of(const ft__ev *e) {
  return (mref){.ts = e->ts,
                .pid = e->dev,
                .tid = e->has_tid ? e->tid : -1,
                .corr = e->corr,
                .ext = e->ext,
                .flags = (uint8_t)((e->has_tid ? R_TID : 0) | (e->has_corr ? R_CORR : 0) | (e->has_ext ? R_EXT : 0))};
}

static int64_t sat_add(int64_t x, int64_t y) {
  int64_t r;
  return __builtin_add_overflow(x, y, &r) ? (y > 0 ? INT64_MAX : INT64_MIN) : r;
}

static bool apply(ft__memacc *a, const ft__ev *e) {
  int64_t b = e->mem_bytes;
  if ((e->mem_op == FT__MOP_ALLOC && b < 0) || (e->mem_op == FT__MOP_FREE && b > 0) || b == INT64_MIN) {
    a->bad_sign++; /* the size is not what the operation says: neither counted */
    return true;
  }
  uint32_t di;
  mdev *d = device(a, e, &di);
  if (!d) {
    if (a->n_devs < FT_STATS_MAX_DEVICES) return false;
    a->over_devices++;
    return true;
  }
  a->events++;
  if (b > 0) {
    if (!ft_dist_add(&d->allocs, (uint64_t)b)) return false;
    size_t s = live_find(a, e->mem_addr, di);
    if (s != SIZE_MAX) { /* an address allocated twice: the later allocation is the live one */
      a->live[s].bytes = b;
      a->live[s].at = ref_of(e);
    } else if (a->n_live >= a->live_limit) {
      a->over_bound++;
    } else {
      if (!live_room(a)) return false;
      s = slot_of(a, e->mem_addr, di);
      while (a->used[s]) s = (s + 1) & (a->cap_live - 1);
      a->live[s] = (mlive){e->mem_addr, b, di, ref_of(e)};
      a->used[s] = 1;
      a->n_live++;
    }
  } else if (b < 0) {
    if (!ft_dist_add(&d->frees, (uint64_t)-b)) return false;
    size_t s = live_find(a, e->mem_addr, di);
    if (s == SIZE_MAX) a->unmatched++;
    else live_remove(a, s);
  }
  d->run_alloc = sat_add(d->run_alloc, b);
  d->run_res = sat_add(d->run_res, e->mem_pool_bytes);
  d->cur_alloc = e->mem_total_alloc >= 0 ? e->mem_total_alloc : d->run_alloc;
  d->cur_res = e->mem_total_res >= 0 ? e->mem_total_res : d->run_res;
  if (d->cur_alloc > d->peak_alloc) d->peak_alloc = d->cur_alloc, d->at_alloc = ref_of(e), d->has_peak_alloc = true;
  if (d->cur_res > d->peak_res) d->peak_res = d->cur_res, d->at_res = ref_of(e), d->has_peak_res = true;
  return true;
}

bool ft__memacc_event(ft__memacc *a, const ft__ev *e) {
  if (!grow((void **)&a->evs, &a->cap_evs, a->n_evs, sizeof *a->evs)) return false;
  a->evs[a->n_evs] =
      (mev){.ts = e->ts,
            .bytes = e->mem_bytes,
            .total_alloc = e->mem_total_alloc,
            .total_res = e->mem_total_res,
            .pool_bytes = e->mem_pool_bytes,
            .pid = e->dev,
            .tid = e->tid,
            .corr = e->corr,
            .ext = e->ext,
            .addr = e->mem_addr,
            .seq = a->n_evs,
            .device = e->mem_device,
            .type = e->mem_device_type,
            .op = e->mem_op,
            .flags = (uint8_t)((e->has_tid ? R_TID : 0) | (e->has_corr ? R_CORR : 0) | (e->has_ext ? R_EXT : 0))};
  a->n_evs++;
  return true;
}

static int ev_cmp(const void *x, const void *y) {
  const mev *p = x, *q = y;
  if (p->ts != q->ts) return (p->ts > q->ts) - (p->ts < q->ts);
  return (p->seq > q->seq) - (p->seq < q->seq);
}

/* The events in time order (ties: the file's), each into the totals, the live table and the peaks. */
static bool apply_all(ft__memacc *a) {
  if (a->n_evs) qsort(a->evs, a->n_evs, sizeof *a->evs, ev_cmp);
  for (size_t i = 0; i < a->n_evs; i++) {
    const mev *v = &a->evs[i];
    ft__ev e;
    memset(&e, 0, sizeof e);
    e.ts = v->ts, e.dev = v->pid, e.tid = v->tid, e.corr = v->corr, e.ext = v->ext;
    e.has_tid = v->flags & R_TID, e.has_corr = v->flags & R_CORR, e.has_ext = v->flags & R_EXT;
    e.mem_bytes = v->bytes, e.mem_addr = v->addr, e.mem_total_alloc = v->total_alloc;
    e.mem_total_res = v->total_res, e.mem_pool_bytes = v->pool_bytes;
    e.mem_device = v->device, e.mem_device_type = v->type, e.mem_op = v->op;
    if (!apply(a, &e)) return false;
  }
  return true;
}

static bool add_op(mop **v, size_t *n, size_t *cap, const ft__ev *e, uint32_t name) {
  if (!grow((void **)v, cap, *n, sizeof **v)) return false;
  (*v)[*n] = (mop){.ts = e->ts,
                   .end = e->ts + e->dur,
                   .pid = e->dev,
                   .tid = e->has_tid ? e->tid : -1,
                   .ext = e->has_ext ? e->ext : e->corr, /* calls: keyed by correlation id */
                   .name = name,
                   .file = (uint32_t)*n,
                   .parent = UINT32_MAX,
                   .has_ext = e->has_ext};
  ++*n;
  return true;
}

bool ft__memacc_op(ft__memacc *a, const ft__ev *e, uint32_t name) {
  return add_op(&a->ops, &a->n_ops, &a->cap_ops, e, name);
}

bool ft__memacc_call(ft__memacc *a, const ft__ev *e, uint32_t name) {
  if (!e->has_corr) return true;
  if (!add_op(&a->calls, &a->n_calls, &a->cap_calls, e, name)) return false;
  a->calls[a->n_calls - 1].ext = e->corr;
  a->calls[a->n_calls - 1].has_ext = e->has_ext; /* (its own External id: unused) */
  return true;
}

bool ft__memacc_step(ft__memacc *a, const ft__ev *e, int64_t number) {
  if (!grow((void **)&a->steps, &a->cap_steps, a->n_steps, sizeof *a->steps)) return false;
  a->steps[a->n_steps++] = (mstep){e->ts, e->ts + e->dur, number};
  return true;
}

/* ---- the end: ops nested per thread, peaks and live allocations resolved ---- */

static int op_cmp(const void *x, const void *y) {
  const mop *p = x, *q = y;
  if (p->pid != q->pid) return (p->pid > q->pid) - (p->pid < q->pid);
  if (p->tid != q->tid) return (p->tid > q->tid) - (p->tid < q->tid);
  if (p->ts != q->ts) return (p->ts > q->ts) - (p->ts < q->ts);
  int64_t dp = p->end - p->ts, dq = q->end - q->ts; /* the longer first: the parent */
  if (dp != dq) return (dp < dq) - (dp > dq);
  return (p->file > q->file) - (p->file < q->file);
}

/* Each op's enclosing op on its thread, torch's nesting (the model's: model_finish.c). */
static bool nest(ft__memacc *a) {
  if (!a->n_ops) return true;
  qsort(a->ops, a->n_ops, sizeof *a->ops, op_cmp);
  uint32_t *stack = malloc(a->n_ops * sizeof *stack);
  if (!stack) return false;
  size_t depth = 0;
  for (size_t i = 0; i < a->n_ops; i++) {
    mop *o = &a->ops[i];
    if (i && (o->pid != a->ops[i - 1].pid || o->tid != a->ops[i - 1].tid)) depth = 0;
    while (depth) {
      const mop *p = &a->ops[stack[depth - 1]];
      if (o->ts < p->end && o->end <= p->end) break;
      depth--;
    }
    o->parent = depth ? stack[depth - 1] : UINT32_MAX;
    stack[depth++] = (uint32_t)i;
  }
  free(stack);
  return true;
}

/* The innermost op open at ts on thread (pid, tid); UINT32_MAX none (model_mem.c's op_at). */
static uint32_t op_at(const ft__memacc *a, int64_t pid, int64_t tid, int64_t ts) {
  size_t lo = 0, hi = a->n_ops;
  while (lo < hi) { /* the first op after (pid, tid, ts) */
    size_t mid = lo + (hi - lo) / 2;
    const mop *o = &a->ops[mid];
    int c = o->pid != pid   ? (o->pid > pid) - (o->pid < pid)
            : o->tid != tid ? (o->tid > tid) - (o->tid < tid)
                            : (o->ts > ts) - (o->ts < ts);
    if (c <= 0) lo = mid + 1;
    else hi = mid;
  }
  if (!lo || a->ops[lo - 1].pid != pid || a->ops[lo - 1].tid != tid) return UINT32_MAX;
  uint32_t c = (uint32_t)(lo - 1), best = UINT32_MAX;
  for (size_t j = lo; j > 0; j--) { /* one start: the shortest open */
    const mop *o = &a->ops[j - 1];
    if (o->pid != pid || o->tid != tid || o->ts != a->ops[c].ts) break;
    if (ts < o->end && (best == UINT32_MAX || o->end - o->ts < a->ops[best].end - a->ops[best].ts))
      best = (uint32_t)(j - 1);
  }
  if (best != UINT32_MAX) return best;
  for (; c != UINT32_MAX; c = a->ops[c].parent)
    if (ts < a->ops[c].end) return c;
  return UINT32_MAX;
}

typedef struct resolver {
  const ft__memacc *a;
  const ft__strtab *names;
  ft__map by_ext, by_corr; /* External id -> op index + 1 (the latest in file order), correlation -> call + 1 */
} resolver;

static char *name_dup(const resolver *r, uint32_t id, bool *ok) {
  char *s = strdup(ft__intern_str(r->names, id));
  if (!s) *ok = false;
  return s;
}

static bool resolve(const resolver *r, const mref *at, ft_stat_mem_at *out) {
  const ft__memacc *a = r->a;
  bool ok = true;
  uint32_t op = (at->flags & R_TID) || at->tid == -1 ? op_at(a, at->pid, at->tid, at->ts) : UINT32_MAX;
  if (op == UINT32_MAX && (at->flags & R_EXT) && r->by_ext.len) {
    uint64_t *v = ft__map_find(&r->by_ext, (uint64_t)at->ext);
    if (v) op = (uint32_t)(*v - 1);
  }
  if ((at->flags & R_CORR) && r->by_corr.len) {
    uint64_t *v = ft__map_find(&r->by_corr, (uint64_t)at->corr);
    if (v) {
      const mop *c = &a->calls[*v - 1];
      out->call = name_dup(r, c->name, &ok);
      if (op == UINT32_MAX) op = op_at(a, c->pid, c->tid, c->ts);
    }
  }
  if (op != UINT32_MAX) out->op = name_dup(r, a->ops[op].name, &ok);
  out->step = -1;
  for (size_t i = a->n_steps; i > 0; i--) { /* by start: the latest started by ts that is open */
    const mstep *s = &a->steps[i - 1];
    if (s->ts <= at->ts) {
      if (at->ts < s->end) out->step = s->number;
      break;
    }
  }
  out->ts = at->ts;
  return ok;
}

static int step_cmp(const void *x, const void *y) {
  const mstep *p = x, *q = y;
  return (p->ts > q->ts) - (p->ts < q->ts);
}
static int live_cmp(const void *x, const void *y) { /* largest first; then earliest, lowest address */
  const mlive *p = x, *q = y;
  if (p->bytes != q->bytes) return (p->bytes < q->bytes) - (p->bytes > q->bytes);
  if (p->at.ts != q->at.ts) return (p->at.ts > q->at.ts) - (p->at.ts < q->at.ts);
  return (p->addr > q->addr) - (p->addr < q->addr);
}
static int dev_cmp(const void *x, const void *y) {
  const ft_stat_mem_dev *p = x, *q = y;
  if (p->device_type != q->device_type) return (p->device_type > q->device_type) - (p->device_type < q->device_type);
  return (p->device > q->device) - (p->device < q->device);
}

bool ft__memacc_finish(ft__memacc *a, const ft__strtab *names, ft_stat_mem *out) {
  memset(out, 0, sizeof *out);
  resolver r = {.a = a, .names = names};
  bool ok = apply_all(a) && nest(a);
  if (a->n_steps) qsort(a->steps, a->n_steps, sizeof *a->steps, step_cmp);
  /* the latest in file order: ops are sorted now, their file position says which */
  for (size_t i = 0; ok && i < a->n_ops; i++) {
    if (!a->ops[i].has_ext) continue;
    uint64_t *v = ft__map_upsert(&r.by_ext, (uint64_t)a->ops[i].ext);
    if (!v) ok = false;
    else if (!*v || a->ops[*v - 1].file < a->ops[i].file) *v = i + 1;
  }
  for (size_t i = 0; ok && i < a->n_calls; i++) {
    uint64_t *v = ft__map_upsert(&r.by_corr, (uint64_t)a->calls[i].ext);
    if (!v) ok = false;
    else *v = i + 1;
  }
  mlive *live = NULL;
  size_t n_live = 0;
  if (ok && a->n_live && !(live = malloc(a->n_live * sizeof *live))) ok = false;
  for (size_t s = 0; ok && s < a->cap_live; s++)
    if (a->used[s]) live[n_live++] = a->live[s];
  if (ok && n_live) qsort(live, n_live, sizeof *live, live_cmp);
  if (ok && a->n_devs && !(out->devs = calloc(a->n_devs, sizeof *out->devs))) ok = false;
  for (size_t i = 0; ok && i < a->n_devs; i++) {
    mdev *d = &a->devs[i];
    ft_stat_mem_dev *o = &out->devs[out->n_devs++];
    o->device = d->device;
    o->device_type = d->type;
    o->alloc_sizes = d->allocs, o->free_sizes = d->frees; /* moved */
    memset(&d->allocs, 0, sizeof d->allocs), memset(&d->frees, 0, sizeof d->frees);
    o->end_alloc = d->cur_alloc, o->end_res = d->cur_res;
    o->peak_alloc.ts = o->peak_res.ts = INT64_MIN;
    o->peak_alloc.step = o->peak_res.step = -1;
    if (d->has_peak_alloc) ok = resolve(&r, &d->at_alloc, &o->peak_alloc) && ok;
    if (d->has_peak_res) ok = resolve(&r, &d->at_res, &o->peak_res) && ok;
    o->peak_alloc.bytes = d->peak_alloc;
    o->peak_res.bytes = d->peak_res;
    size_t keep = 0;
    for (size_t k = 0; k < n_live; k++) {
      if (live[k].dev != i) continue;
      o->live_n++;
      o->live_bytes += (uint64_t)live[k].bytes;
      keep += keep < FT_MEM_KEEP_LIVE;
    }
    if (keep && !(o->live = calloc(keep, sizeof *o->live))) ok = false;
    for (size_t k = 0; ok && k < n_live && o->n_live < keep; k++) {
      if (live[k].dev != i) continue;
      ft_stat_mem_at *l = &o->live[o->n_live++];
      ok = resolve(&r, &live[k].at, l);
      l->bytes = live[k].bytes;
      l->addr = live[k].addr;
    }
  }
  if (ok && out->n_devs) qsort(out->devs, out->n_devs, sizeof *out->devs, dev_cmp);
  out->events = a->events;
  out->bad_sign = a->bad_sign;
  out->unmatched = a->unmatched;
  out->over_bound = a->over_bound;
  out->over_devices = a->over_devices;
  free(live);
  ft__map_free(&r.by_ext);
  ft__map_free(&r.by_corr);
  reset(a);
  if (!ok) ft_stat_mem_free(out);
  return ok;
}

void ft_stat_mem_free(ft_stat_mem *m) {
  for (size_t i = 0; i < m->n_devs; i++) {
    ft_stat_mem_dev *d = &m->devs[i];
    free(d->peak_alloc.op), free(d->peak_alloc.call), free(d->peak_res.op), free(d->peak_res.call);
    for (size_t k = 0; k < d->n_live; k++) free(d->live[k].op), free(d->live[k].call);
    free(d->live);
    ft_dist_free(&d->alloc_sizes), ft_dist_free(&d->free_sizes);
  }
  free(m->devs);
  memset(m, 0, sizeof *m);
}

static bool at_copy(ft_stat_mem_at *d, const ft_stat_mem_at *s) {
  *d = *s;
  d->op = s->op ? strdup(s->op) : NULL;
  d->call = s->call ? strdup(s->call) : NULL;
  return (!s->op || d->op) && (!s->call || d->call);
}

bool ft__stat_mem_copy(ft_stat_mem *dst, const ft_stat_mem *m) {
  *dst = *m;
  dst->devs = NULL;
  dst->n_devs = 0;
  if (m->n_devs && !(dst->devs = calloc(m->n_devs, sizeof *dst->devs))) return false;
  bool ok = true;
  for (size_t i = 0; ok && i < m->n_devs; i++) {
    const ft_stat_mem_dev *s = &m->devs[i];
    ft_stat_mem_dev *d = &dst->devs[dst->n_devs++];
    *d = *s;
    memset(&d->alloc_sizes, 0, sizeof d->alloc_sizes), memset(&d->free_sizes, 0, sizeof d->free_sizes);
    d->live = NULL, d->n_live = 0;
    d->peak_alloc.op = d->peak_alloc.call = d->peak_res.op = d->peak_res.call = NULL;
    ok = at_copy(&d->peak_alloc, &s->peak_alloc) && at_copy(&d->peak_res, &s->peak_res) &&
         ft_dist_merge(&d->alloc_sizes, &s->alloc_sizes) && ft_dist_merge(&d->free_sizes, &s->free_sizes);
    if (ok && s->n_live && !(d->live = calloc(s->n_live, sizeof *d->live))) ok = false;
    for (size_t k = 0; ok && k < s->n_live; k++) ok = at_copy(&d->live[d->n_live++], &s->live[k]);
  }
  if (!ok) ft_stat_mem_free(dst);
  return ok;
}

const char *ft__mem_device_name(const ft_stat_mem_dev *d, char *buf, size_t len) {
  if (d->device_type == 0) snprintf(buf, len, "cpu");
  else if (d->device_type == 1) snprintf(buf, len, "cuda:%d", (int)d->device);
  else if (d->device_type == 20) snprintf(buf, len, "privateuse1:%d", (int)d->device);
  else snprintf(buf, len, "type %d:%d", (int)d->device_type, (int)d->device);
  return buf;
}

/* (stats_internal.h) */
bool ft__stats_mem_file_end(ft_stats *st) {
  if (!st->mem) return true;
  ft_stat_mem_free(&st->mem_sum);
  bool ok = ft__memacc_finish(st->mem, &st->names, &st->mem_sum);
  st->mem_sum.bad_field = st->mem_bad;
  return ok;
}
