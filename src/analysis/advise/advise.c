/* advise: each step's wall time split into device busy and idle by cause, and the findings of the idle causes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"

void ft_advise_opts_default(ft_advise_opts *o) {
  o->gap_ns = 100000;
  o->min_share = 0.01;
  o->fuse_min_len = 3;
}

/* ---- interval sets: sorted, disjoint [a, b) ---- */

typedef struct iv {
  int64_t a, b;
} iv;
typedef struct ivs {
  iv *v;
  size_t n, cap;
} ivs;

static bool iv_push(ivs *s, int64_t a, int64_t b) {
  if (b <= a) return true;
  if (s->n && a <= s->v[s->n - 1].b) { /* input sorted by a: merge with the last */
    if (b > s->v[s->n - 1].b) s->v[s->n - 1].b = b;
    return true;
  }
  if (!ft__advise_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v)) return false;
  s->v[s->n++] = (iv){a, b};
  return true;
}

static uint64_t iv_len(const ivs *s) {
  uint64_t t = 0;
  for (size_t i = 0; i < s->n; i++) t += (uint64_t)(s->v[i].b - s->v[i].a);
  return t;
}

static uint64_t iv_overlap(const ivs *x, const ivs *y) {
  uint64_t t = 0;
  for (size_t i = 0, j = 0; i < x->n && j < y->n;) {
    int64_t a = x->v[i].a > y->v[j].a ? x->v[i].a : y->v[j].a;
    int64_t b = x->v[i].b < y->v[j].b ? x->v[i].b : y->v[j].b;
    if (b > a) t += (uint64_t)(b - a);
    if (x->v[i].b < y->v[j].b) i++;
    else j++;
  }
  return t;
}

static int by_start(const void *x, const void *y) {
  const iv *a = x, *b = y;
  return a->a < b->a ? -1 : a->a > b->a;
}

/* Removes [a, b) from rem (into tmp, then swapped) and returns how much it held. */
static uint64_t take(ivs *rem, ivs *tmp, int64_t a, int64_t b, bool *oom) {
  uint64_t got = 0;
  tmp->n = 0;
  for (size_t i = 0; i < rem->n; i++) {
    iv r = rem->v[i];
    int64_t lo = r.a > a ? r.a : a, hi = r.b < b ? r.b : b;
    if (hi <= lo) {
      if (!iv_push(tmp, r.a, r.b)) *oom = true;
      continue;
    }
    got += (uint64_t)(hi - lo);
    if (!iv_push(tmp, r.a, lo) || !iv_push(tmp, hi, r.b)) *oom = true;
  }
  ivs t = *rem;
  *rem = *tmp;
  *tmp = t;
  return got;
}

/* ---- one rank's pass ---- */

typedef struct cause {
  uint32_t slice, owner; /* owner: the call that names the finding (a copy's own sync: the copy) */
  uint8_t rule;
} cause;
typedef struct causes {
  cause *v;
  uint32_t *sl; /* v's slices, for the sweep */
  size_t n, cap, cap_sl;
} causes;

/* The slices of a list in start order that may hold in the window [a, b) of a query:
 * those started before b that had not ended before a. Queries come in the order of a
 * (steps, then gaps; a query with a smaller a starts over), so each slice enters and
 * leaves once: a long call costs nothing per gap it does not touch. */
typedef struct sweep {
  size_t p;      /* the next slice to enter */
  uint32_t *act; /* positions in the list, in start order */
  size_t n_act, cap;
  int64_t last_a;
} sweep;

typedef struct ctx {
  const ft_model *m;
  const ft_advise_opts *o;
  uint32_t *dev, *ops; /* device work, ops and user ranges (not steps): start order */
  size_t n_dev, n_ops;
  int64_t dev_max;
  causes sync, h2d;
  sweep sw_sync, sw_h2d, sw_ops;
  ft__findings t;
  ivs busy, comp, comm, copy, gaps, rem, tmp;
  ivs idle_all;           /* every step's idle gaps, for fuse */
  unsigned char *is_step; /* a bit per slice: a step's range */
  uint64_t start_best;    /* the costliest step start so far: its op names the finding */
  struct {
    uint32_t id;
    bool comm;
  } comm_cache[256]; /* ft_stats_is_comm by kernel name id (three substring searches a call) */
  bool oom;
} ctx;

static int64_t end_of(const ft_model *m, uint32_t i) { return m->ts[i] + m->dur[i]; }

/* First index in idx (start order) whose slice starts at or after t. */
static size_t lower(const ft_model *m, const uint32_t *idx, size_t n, int64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->ts[idx[mid]] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Brings s to the query [a, b) over list sl (n slices in start order). False without memory. */
static bool sweep_to(const ft_model *m, const uint32_t *sl, size_t n, sweep *s, int64_t a, int64_t b) {
  if (a < s->last_a) s->p = s->n_act = 0;
  s->last_a = a;
  size_t k = 0;
  for (size_t i = 0; i < s->n_act; i++)
    if (end_of(m, sl[s->act[i]]) >= a) s->act[k++] = s->act[i];
  s->n_act = k;
  for (; s->p < n && m->ts[sl[s->p]] < b; s->p++) {
    if (end_of(m, sl[s->p]) < a) continue;
    if (!ft__advise_grow((void **)&s->act, &s->cap, s->n_act + 1, sizeof *s->act)) return false;
    s->act[s->n_act++] = (uint32_t)s->p;
  }
  return true;
}

/* The op or user range running in [a, b): the one overlapping it most; among those
 * within 10 % of that, the shortest (the innermost). FT_MODEL_NONE when none. */
static uint32_t op_during(ctx *c, int64_t a, int64_t b) {
  const ft_model *m = c->m;
  sweep *sw = &c->sw_ops;
  if (!sweep_to(m, c->ops, c->n_ops, sw, a, b)) {
    c->oom = true;
    return FT_MODEL_NONE;
  }
  int64_t best = 0;
  for (size_t k = 0; k < sw->n_act; k++) {
    uint32_t i = c->ops[sw->act[k]];
    int64_t lo = m->ts[i] > a ? m->ts[i] : a, e = end_of(m, i) < b ? end_of(m, i) : b;
    if (e - lo > best) best = e - lo;
  }
  uint32_t pick = FT_MODEL_NONE;
  for (size_t k = 0; best > 0 && k < sw->n_act; k++) {
    uint32_t i = c->ops[sw->act[k]];
    int64_t lo = m->ts[i] > a ? m->ts[i] : a, e = end_of(m, i) < b ? end_of(m, i) : b;
    if ((e - lo) * 10 >= best * 9 && (pick == FT_MODEL_NONE || m->dur[i] < m->dur[pick])) pick = i;
  }
  return pick;
}

static uint32_t name_of(const ft_model *m, uint32_t slice) {
  return slice == FT_MODEL_NONE ? FT_MODEL_NONE : m->name[slice];
}
/* The op around a slice; a step's range is none (it says nothing of what ran). */
static uint32_t op_of(const ctx *c, uint32_t slice) {
  uint32_t op = c->m->op ? c->m->op[slice] : FT_MODEL_NONE;
  return op != FT_MODEL_NONE && (c->is_step[op / 8] & (1u << (op % 8))) ? FT_MODEL_NONE : op;
}
static const char *str_of(const ft_model *m, uint32_t slice) {
  return slice == FT_MODEL_NONE ? "(no op)" : ft_model_str(m, m->name[slice]);
}

static const char *const suggest[FT_RULE_N] = {
    [FT_RULE_SYNC] = "remove the sync or move it off the step's path (no .item()/.cpu() inside the loop)",
    [FT_RULE_H2D_COPY] = "pin the host memory (pin_memory=True) and copy with non_blocking=True",
    [FT_RULE_STEP_START] = "feed the device sooner: more DataLoader workers, prefetching, pinned memory",
    [FT_RULE_LAUNCH_BOUND] = "launch fewer, larger kernels: fuse (torch.compile) or capture in a CUDA graph",
    [FT_RULE_SYNC_MEMOP] = "use the async memset/memcpy on a stream instead of the synchronous call",
    [FT_RULE_GAP] = "the CPU op named keeps the device waiting: move its work off the step or overlap it",
};

/* An idle-cause occurrence: the finding of (rule, k1, k2), named when new. */
static void credit(ctx *c, enum ft_rule rule, uint32_t k1, uint32_t k2, const char *what, const char *where,
                   size_t step, uint32_t slice, int64_t ts, int64_t dur, uint64_t ns) {
  bool is_new;
  uint32_t fi = ft__finding(&c->t, rule, k1, k2, &is_new);
  if (fi == UINT32_MAX) {
    c->oom = true;
    return;
  }
  if (is_new) {
    ft_advise_finding *f = &c->t.f[fi];
    snprintf(f->what, sizeof f->what, "%s", what);
    snprintf(f->where, sizeof f->where, "%s", where);
    snprintf(f->suggestion, sizeof f->suggestion, "%s", suggest[rule] ? suggest[rule] : "");
  }
  if (!ft__credit_add(&c->t, fi, c->m, step, slice, ts, dur, ns)) c->oom = true;
}

/* The sync and host-to-device causes: each runtime/driver call by its vendor name,
 * a copy's direction from its name or its device work's. */
static bool classify(ctx *c) {
  const ft_model *m = c->m;
  struct {
    uint32_t id;
    uint8_t cls, dir;
  } cache[1024];
  for (size_t k = 0; k < 1024; k++) cache[k].id = FT_MODEL_NONE;
  /* per thread: the blocking copy call just made, whose sync (torch's copy_ from pageable
   * memory: cudaMemcpyAsync, then cudaStreamSynchronize) is the copy's */
  uint32_t *pending = malloc((m->n_tracks + 1) * sizeof *pending);
  uint8_t *pending_rule = malloc(m->n_tracks + 1);
  if (!pending || !pending_rule) {
    free(pending);
    free(pending_rule);
    return false;
  }
  for (size_t k = 0; k < m->n_tracks; k++) pending[k] = FT_MODEL_NONE;
  for (size_t i = 0; i < m->n; i++) {
    if (m->kind[i] != FT_MK_RUNTIME && m->kind[i] != FT_MK_DRIVER) continue;
    uint32_t copy = pending[m->track[i]];
    pending[m->track[i]] = FT_MODEL_NONE;
    uint32_t id = m->name[i];
    size_t h = id & 1023;
    if (cache[h].id != id) {
      enum ft__copy_dir d;
      cache[h].cls = (uint8_t)ft__advise_call_class(ft_model_str(m, id), &d);
      cache[h].dir = (uint8_t)d;
      cache[h].id = id;
    }
    enum ft__call_class cls = cache[h].cls;
    if (cls == FT__CALL_NONE) continue;
    uint32_t owner = (uint32_t)i;
    enum ft__copy_dir dir = cache[h].dir;
    bool pageable = false;
    uint32_t w = m->link ? m->link[i] : FT_MODEL_NONE;
    if (w != FT_MODEL_NONE) {
      enum ft__copy_dir wd = ft__advise_copy_dir(ft_model_str(m, m->name[w]), &pageable);
      if (dir == FT__DIR_UNKNOWN) dir = wd;
    }
    causes *to = &c->sync;
    uint8_t rule;
    if (cls == FT__CALL_SYNC_MEMSET) rule = FT_RULE_SYNC_MEMOP;
    else if (cls == FT__CALL_SYNC_COPY)
      rule = dir == FT__DIR_H2D ? FT_RULE_H2D_COPY : dir == FT__DIR_D2H ? FT_RULE_SYNC : FT_RULE_SYNC_MEMOP;
    else if (cls == FT__CALL_SYNC || (pageable && dir == FT__DIR_D2H)) rule = FT_RULE_SYNC; /* async: pageable */
    else if (pageable && dir == FT__DIR_H2D) rule = FT_RULE_H2D_COPY;
    else continue;
    if (cls == FT__CALL_SYNC && copy != FT_MODEL_NONE && op_of(c, copy) == op_of(c, (uint32_t)i)) {
      rule = pending_rule[m->track[i]];
      owner = copy;
    } else if (cls == FT__CALL_SYNC_COPY || cls == FT__CALL_ASYNC_COPY) {
      pending[m->track[i]] = (uint32_t)i;
      pending_rule[m->track[i]] = rule;
    }
    if (rule == FT_RULE_H2D_COPY) to = &c->h2d;
    if (!ft__advise_grow((void **)&to->v, &to->cap, to->n + 1, sizeof *to->v) ||
        !ft__advise_grow((void **)&to->sl, &to->cap_sl, to->n + 1, sizeof *to->sl)) {
      free(pending);
      free(pending_rule);
      return false;
    }
    to->sl[to->n] = (uint32_t)i;
    to->v[to->n++] = (cause){(uint32_t)i, owner, rule};
  }
  free(pending);
  free(pending_rule);
  return true;
}

static bool index_slices(ctx *c) {
  const ft_model *m = c->m;
  unsigned char *is_step = c->is_step = calloc(m->n / 8 + 1, 1);
  if (!is_step) return false;
  for (size_t s = 0; s < m->n_steps; s++)
    if (m->steps[s].slice != FT_MODEL_NONE)
      is_step[m->steps[s].slice / 8] |= (unsigned char)(1u << (m->steps[s].slice % 8));
  size_t nd = 0, no = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (ft_model_is_device(m->kind[i])) nd++;
    else if (m->kind[i] == FT_MK_OP || m->kind[i] == FT_MK_RANGE) no++;
  }
  c->dev = malloc((nd + 1) * sizeof *c->dev);
  c->ops = malloc((no + 1) * sizeof *c->ops);
  if (!c->dev || !c->ops) return false;
  for (size_t i = 0; i < m->n; i++) {
    if (ft_model_is_device(m->kind[i])) {
      c->dev[c->n_dev++] = (uint32_t)i;
      if (m->dur[i] > c->dev_max) c->dev_max = m->dur[i];
    } else if ((m->kind[i] == FT_MK_OP || m->kind[i] == FT_MK_RANGE) && !(is_step[i / 8] & (1u << (i % 8)))) {
      c->ops[c->n_ops++] = (uint32_t)i;
    }
  }
  return true;
}

/* The calls of list l that hold at some instant of gap [a, b), each taking what is
 * left of it: a call holds from its start until it returns or, when it returns inside
 * the gap, until the gap ends (the device stays idle until the next launch after it). */
static void causes_in_gap(ctx *c, const causes *l, sweep *sw, size_t s, int64_t a, int64_t b, uint64_t *idle) {
  const ft_model *m = c->m;
  if (!sweep_to(m, l->sl, l->n, sw, a, b)) {
    c->oom = true;
    return;
  }
  for (size_t q = 0; q < sw->n_act; q++) {
    size_t k = sw->act[q];
    uint32_t i = l->v[k].slice;
    int64_t e = end_of(m, i);
    if (e < a) continue;
    int64_t until = e <= b ? b : e;
    uint64_t ns = take(&c->rem, &c->tmp, m->ts[i], until, &c->oom);
    if (!ns) continue;
    *idle += ns;
    uint32_t o = l->v[k].owner, op = op_of(c, o);
    char what[160];
    snprintf(what, sizeof what, "%s under %s", ft_model_str(m, m->name[o]), str_of(m, op));
    credit(c, l->v[k].rule, m->name[o], name_of(m, op), what,
           op != FT_MODEL_NONE ? str_of(m, op) : ft_model_str(m, m->name[o]), s, o, m->ts[o], m->dur[o], ns);
  }
}

static bool is_comm(ctx *c, uint32_t id) {
  size_t h = id & 255;
  if (c->comm_cache[h].id != id) {
    c->comm_cache[h].id = id;
    c->comm_cache[h].comm = ft_stats_is_comm(ft_model_str(c->m, id));
  }
  return c->comm_cache[h].comm;
}

static void one_step(ctx *c, size_t s, ft_advise_step *st) {
  const ft_model *m = c->m;
  const ft_model_step *ms = &m->steps[s];
  int64_t t0 = ms->start, t1 = ms->end;
  *st = (ft_advise_step){.rank = m->rank, .number = ms->number, .start = t0, .end = t1};
  c->busy.n = c->comp.n = c->comm.n = c->copy.n = c->gaps.n = 0;
  size_t k0 = lower(m, c->dev, c->n_dev, t0 - c->dev_max), need = lower(m, c->dev, c->n_dev, t1) - k0 + 2;
  /* room for every interval at once: growing by doubling copied them over and over */
  ivs *all[] = {&c->busy, &c->comp, &c->comm, &c->copy, &c->gaps};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    if (!ft__advise_grow((void **)&all[i]->v, &all[i]->cap, need, sizeof(iv))) c->oom = true;
  if (!ft__advise_grow((void **)&c->idle_all.v, &c->idle_all.cap, c->idle_all.n + need, sizeof(iv))) c->oom = true;
  for (size_t k = k0; k < c->n_dev && m->ts[c->dev[k]] < t1; k++) {
    uint32_t i = c->dev[k];
    int64_t a = m->ts[i] > t0 ? m->ts[i] : t0, b = end_of(m, i) < t1 ? end_of(m, i) : t1;
    if (b <= a) continue;
    ivs *kind = m->kind[i] != FT_MK_KERNEL ? &c->copy : is_comm(c, m->name[i]) ? &c->comm : &c->comp;
    if (!iv_push(&c->busy, a, b) || !iv_push(kind, a, b)) c->oom = true;
  }
  st->busy_ns = iv_len(&c->busy);
  st->compute_ns = iv_len(&c->comp);
  st->comm_ns = iv_len(&c->comm);
  st->copy_ns = iv_len(&c->copy);
  st->exposed_comm_ns = st->comm_ns - iv_overlap(&c->comm, &c->comp);
  int64_t first_dev = c->busy.n ? c->busy.v[0].a : t1, at = t0;
  for (size_t k = 0; k <= c->busy.n; k++) {
    int64_t b = k < c->busy.n ? c->busy.v[k].a : t1;
    if (!iv_push(&c->gaps, at, b)) c->oom = true;
    if (b > at && ft__advise_grow((void **)&c->idle_all.v, &c->idle_all.cap, c->idle_all.n + 1, sizeof(iv)))
      c->idle_all.v[c->idle_all.n++] = (iv){at, b};
    else if (b > at) c->oom = true;
    if (k < c->busy.n) at = c->busy.v[k].b;
  }
  st->idle_ns = iv_len(&c->gaps);
  uint32_t start_op = FT_MODEL_NONE;
  if (first_dev > t0) start_op = op_during(c, t0, first_dev);
  for (size_t g = 0; g < c->gaps.n && !c->oom; g++) {
    int64_t a = c->gaps.v[g].a, b = c->gaps.v[g].b;
    c->rem.n = 0;
    if (!iv_push(&c->rem, a, b))
      c->oom = true; /* an unchecked push left the gap uncounted: findings changed, no error */
    if (a < first_dev) {
      uint64_t ns = take(&c->rem, &c->tmp, a, first_dev, &c->oom);
      st->idle[FT_IDLE_STEP_START] += ns;
      char what[160];
      snprintf(what, sizeof what, "device idle at the step's start while %s ran", str_of(m, start_op));
      /* one finding a rank: it names the op of its costliest step */
      if (ns) credit(c, FT_RULE_STEP_START, 0, 0, what, str_of(m, start_op), s, start_op, t0, first_dev - t0, ns);
      uint32_t fi = ns > c->start_best && !c->oom ? ft__finding(&c->t, FT_RULE_STEP_START, 0, 0, NULL) : UINT32_MAX;
      if (fi != UINT32_MAX) {
        ft_advise_finding *f = &c->t.f[fi];
        snprintf(f->what, sizeof f->what, "%s", what);
        snprintf(f->where, sizeof f->where, "%s", str_of(m, start_op));
        c->start_best = ns;
      }
    }
    causes_in_gap(c, &c->sync, &c->sw_sync, s, a, b, &st->idle[FT_IDLE_SYNC]);
    causes_in_gap(c, &c->h2d, &c->sw_h2d, s, a, b, &st->idle[FT_IDLE_H2D]);
    /* the device work that ends the gap, and whether its launch had returned */
    size_t nk = lower(m, c->dev, c->n_dev, b);
    uint32_t d = nk < c->n_dev ? c->dev[nk] : FT_MODEL_NONE;
    uint32_t l = d != FT_MODEL_NONE && m->link ? m->link[d] : FT_MODEL_NONE;
    bool long_gap = (uint64_t)(b - a) > c->o->gap_ns;
    uint64_t launch = 0;
    if (l != FT_MODEL_NONE && (m->kind[l] == FT_MK_RUNTIME || m->kind[l] == FT_MK_DRIVER))
      launch = take(&c->rem, &c->tmp, a, end_of(m, l), &c->oom);
    st->idle[FT_IDLE_LAUNCH] += launch;
    uint64_t other = iv_len(&c->rem);
    st->idle[FT_IDLE_OTHER] += other;
    char what[160];
    if (long_gap && launch + other) {
      uint32_t op = op_during(c, a, b);
      snprintf(what, sizeof what, "device idle over %.0f us while %s ran", c->o->gap_ns / 1e3, str_of(m, op));
      credit(c, FT_RULE_GAP, name_of(m, op), 0, what, str_of(m, op), s, op, a, b - a, launch + other);
    } else if (launch && m->kind[d] == FT_MK_KERNEL && m->dur[d] < m->dur[l]) {
      uint32_t op = op_of(c, d);
      snprintf(what, sizeof what, "kernels shorter than their launch (%s) under %s", ft_model_str(m, m->name[l]),
               str_of(m, op));
      credit(c, FT_RULE_LAUNCH_BOUND, name_of(m, op), m->name[l], what, str_of(m, op), s, d, m->ts[d], m->dur[d],
             launch);
    }
  }
}

static void ctx_free(ctx *c) {
  free(c->dev);
  free(c->ops);
  free(c->is_step);
  free(c->sync.v);
  free(c->h2d.v);
  free(c->sync.sl);
  free(c->h2d.sl);
  free(c->sw_sync.act);
  free(c->sw_h2d.act);
  free(c->sw_ops.act);
  ivs *all[] = {&c->busy, &c->comp, &c->comm, &c->copy, &c->gaps, &c->rem, &c->tmp, &c->idle_all};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->v);
  ft__findings_free(&c->t);
}

ft_status ft_advise(const ft_model *m, const ft_advise_opts *o, ft_advice *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  ft_advise_opts def;
  if (!o) {
    ft_advise_opts_default(&def);
    o = &def;
  }
  ctx c = {.m = m, .o = o};
  for (size_t k = 0; k < 256; k++) c.comm_cache[k].id = FT_MODEL_NONE;
  uint64_t *ceil = NULL;
  if (!index_slices(&c) || !classify(&c)) goto oom;
  out->steps = calloc(m->n_steps + 1, sizeof *out->steps);
  ceil = calloc(m->n_steps + 1, sizeof *ceil);
  /* every step's critical path at once (critical_path.c: the per-trace part once) */
  if (!out->steps || !ceil || !ft__critical_paths(m, ceil)) goto oom;
  double wall = 0;
  for (size_t s = 0; s < m->n_steps && !c.oom; s++) {
    one_step(&c, s, &out->steps[s]);
    out->steps[s].critical_path_ns = ceil[s];
    out->n_steps++;
    uint64_t w = ft_advise_wall(&out->steps[s]), cp = out->steps[s].critical_path_ns;
    wall += (double)w;
    ceil[s] = cp && cp < w ? cp : w;
  }
  if (c.oom) goto oom;
  uint64_t(*hta)[3] = malloc((m->n_steps + 1) * sizeof *hta);
  if (!hta || !ft__hta_idle_steps(m, hta)) {
    free(hta);
    goto oom;
  }
  for (size_t s = 0; s < m->n_steps; s++) {
    out->steps[s].hta_host_wait_ns = hta[s][0];
    out->steps[s].hta_kernel_wait_ns = hta[s][1];
    out->steps[s].hta_other_ns = hta[s][2];
  }
  free(hta);
  /* prefix sums of the idle gaps: fuse measures the idle inside a kernel sequence (sorted
   * and merged first: steps named by --step may overlap) */
  if (c.idle_all.n) qsort(c.idle_all.v, c.idle_all.n, sizeof *c.idle_all.v, by_start);
  size_t nm = 0;
  for (size_t k = 0; k < c.idle_all.n; k++) {
    if (nm && c.idle_all.v[k].a <= c.idle_all.v[nm - 1].b) {
      if (c.idle_all.v[k].b > c.idle_all.v[nm - 1].b) c.idle_all.v[nm - 1].b = c.idle_all.v[k].b;
    } else {
      c.idle_all.v[nm++] = c.idle_all.v[k];
    }
  }
  c.idle_all.n = nm;
  uint64_t *pre = malloc((c.idle_all.n + 1) * sizeof *pre);
  int64_t *ga = malloc((c.idle_all.n + 1) * sizeof *ga), *gb = malloc((c.idle_all.n + 1) * sizeof *gb);
  bool ok = pre && ga && gb;
  if (ok) {
    pre[0] = 0;
    for (size_t k = 0; k < c.idle_all.n; k++) {
      ga[k] = c.idle_all.v[k].a;
      gb[k] = c.idle_all.v[k].b;
      pre[k + 1] = pre[k] + (uint64_t)(gb[k] - ga[k]);
    }
    ok = ft__rule_fuse(m, o, ga, gb, pre, c.idle_all.n, &c.t) && ft__rule_low_flops(m, m->peak_flops, &c.t) &&
         ft__rule_memory(m, &c.t);
  }
  free(pre);
  free(ga);
  free(gb);
  if (!ok) goto oom;
  double mean_wall = m->n_steps ? wall / (double)m->n_steps : 0;
  ft__cost_findings(&c.t, ceil, m->n_steps, mean_wall);
  out->findings = c.t.f;
  out->n_findings = c.t.n;
  c.t.f = NULL;
  c.t.n = 0;
  ft__rank_findings(out->findings, &out->n_findings, o->min_share);
  free(ceil);
  ctx_free(&c);
  return FT_OK;
oom:
  free(ceil);
  ctx_free(&c);
  ft_advice_free(out);
  if (err && errlen) snprintf(err, errlen, "advise: out of memory");
  return FT_ENOMEM;
}

void ft_advice_free(ft_advice *a) {
  if (!a) return;
  for (size_t i = 0; i < a->n_findings; i++) free(a->findings[i].occ);
  free(a->findings);
  free(a->steps);
  memset(a, 0, sizeof *a);
}
