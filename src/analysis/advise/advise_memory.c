/* advise's device-memory rules: allocation calls in the steady-state steps, fragmentation, a leak (issue 51). */
#define _GNU_SOURCE /* qsort_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"

/* Steady state: every step but the first, which warms the caching allocator up (and the
 * CUDA context, cuDNN's workspaces); a window of one step has none. */
static bool steady(const ft_model *m, uint32_t step) { return step != FT_MODEL_NONE && step >= 1 && m->n_steps >= 2; }

static const char *slice_name(const ft_model *m, uint32_t s) {
  return s == FT_MODEL_NONE ? "(no op)" : ft_model_str(m, m->name[s]);
}

static void human(uint64_t b, char *out, size_t n) {
  if (b >= (1ull << 30)) snprintf(out, n, "%.2f GiB", (double)b / (double)(1ull << 30));
  else if (b >= (1ull << 20)) snprintf(out, n, "%.2f MiB", (double)b / (double)(1ull << 20));
  else if (b >= 1024) snprintf(out, n, "%.2f KiB", (double)b / 1024.0);
  else snprintf(out, n, "%llu B", (unsigned long long)b);
}

/* An op slice unless it is a step range (ProfilerStep#N names no op). */
static uint32_t not_step(const ft_model *m, uint32_t op) {
  for (size_t k = 0; op != FT_MODEL_NONE && k < m->n_steps; k++)
    if (m->steps[k].slice == op) return FT_MODEL_NONE;
  return op;
}
/* The op around a slice, not a step range. */
static uint32_t op_of(const ft_model *m, uint32_t s) {
  return not_step(m, s == FT_MODEL_NONE || !m->op ? FT_MODEL_NONE : m->op[s]);
}

/* ---- alloc-call: each synchronizing allocation call in a steady-state step costs its duration ---- */

static bool alloc_calls(const ft_model *m, ft__findings *t) {
  uint32_t cache_id[64];
  bool cache_v[64];
  for (size_t k = 0; k < 64; k++) cache_id[k] = FT_MODEL_NONE;
  for (size_t i = 0; i < m->n; i++) {
    if ((m->kind[i] != FT_MK_RUNTIME && m->kind[i] != FT_MK_DRIVER) || !steady(m, m->step[i])) continue;
    uint32_t id = m->name[i], h = id & 63;
    if (cache_id[h] != id) cache_id[h] = id, cache_v[h] = ft_advise_is_alloc_call(ft_model_str(m, id));
    if (!cache_v[h]) continue;
    uint32_t op = op_of(m, (uint32_t)i);
    bool is_new;
    uint32_t fi = ft__finding(t, FT_RULE_ALLOC_CALL, id, op == FT_MODEL_NONE ? FT_MODEL_NONE : m->name[op], &is_new);
    if (fi == UINT32_MAX) return false;
    if (is_new) {
      ft_advise_finding *f = &t->f[fi];
      snprintf(f->what, sizeof f->what, "%s under %s in the steady-state steps: each call a device sync",
               ft_model_str(m, id), slice_name(m, op));
      snprintf(f->where, sizeof f->where, "%s", op == FT_MODEL_NONE ? ft_model_str(m, id) : slice_name(m, op));
      snprintf(f->suggestion, sizeof f->suggestion, "%s",
               "allocate once before the loop or through a caching allocator / cudaMallocAsync pool");
    }
    if (!ft__credit_add(t, fi, m, m->step[i], (uint32_t)i, m->ts[i], m->dur[i], (uint64_t)m->dur[i])) return false;
  }
  return true;
}

/* ---- memory findings: no time cost, one occurrence each as it is kept ---- */

static bool occ_add(ft_advise_finding *f, const ft_model *m, uint32_t step, int64_t ts, uint32_t slice) {
  f->count++;
  if (f->n_occ >= FT_ADVISE_KEEP_OCC) return true;
  if (!f->occ && !(f->occ = malloc(FT_ADVISE_KEEP_OCC * sizeof *f->occ))) return false;
  f->occ[f->n_occ++] =
      (ft_advise_occurrence){m->rank, step == FT_MODEL_NONE ? -1 : m->steps[step].number, ts, 0, slice};
  return true;
}

/* Devices with memory rows, ascending (at most 64 told apart: more is hostile input). */
static size_t mem_devices(const ft_model *m, int32_t *dev) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_mem; i++) {
    int16_t ty = m->mem[i].device_type;
    if (ty == 0 || ty == 2 || ty == 5) continue; /* the host's memory (torch's CPU, MKLDNN, IDEEP) */
    int32_t d = m->mem[i].device;
    size_t k = 0;
    while (k < n && dev[k] != d) k++;
    if (k == n && n < 64) dev[n++] = d;
  }
  for (size_t a = 1; a < n; a++)
    for (size_t b = a; b > 0 && dev[b - 1] > dev[b]; b--) {
      int32_t x = dev[b];
      dev[b] = dev[b - 1], dev[b - 1] = x;
    }
  return n;
}

/* Fragmentation: a device's peak reserved over FT_ADVISE_FRAG_RATIO times its peak allocated and
 * over FT_ADVISE_FRAG_MIN_BYTES; the occurrence is where reserved peaked. */
static bool fragmentation(const ft_model *m, int32_t d, ft__findings *t) {
  int64_t alloc = -1, res = -1;
  size_t at = 0;
  for (size_t i = 0; i < m->n_mem; i++) {
    const ft_model_mem *x = &m->mem[i];
    if (x->device != d || x->device_type == 0 || x->device_type == 2 || x->device_type == 5) continue;
    if (x->total_allocated > alloc) alloc = x->total_allocated;
    if (x->total_reserved > res) res = x->total_reserved, at = i;
  }
  if (res < 0 || alloc < 0 || (uint64_t)res <= FT_ADVISE_FRAG_MIN_BYTES ||
      (double)res <= FT_ADVISE_FRAG_RATIO * (double)alloc)
    return true;
  bool is_new;
  uint32_t fi = ft__finding(t, FT_RULE_FRAGMENTATION, (uint32_t)d, 0, &is_new);
  if (fi == UINT32_MAX) return false;
  ft_advise_finding *f = &t->f[fi];
  char r[32], a[32];
  human((uint64_t)res, r, sizeof r);
  human((uint64_t)alloc, a, sizeof a);
  f->bytes = (uint64_t)(res - alloc);
  snprintf(f->what, sizeof f->what, "device %d: peak reserved %s is %.1fx peak allocated %s", (int)d, r,
           alloc ? (double)res / (double)alloc : 0.0, a);
  snprintf(f->where, sizeof f->where, "device %d", (int)d);
  snprintf(f->suggestion, sizeof f->suggestion, "%s",
           "the allocator holds memory no tensor uses: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, "
           "fewer distinct sizes");
  const ft_model_mem *x = &m->mem[at];
  return occ_add(f, m, x->step, x->ts, x->call != FT_MODEL_NONE ? x->call : x->op);
}

/* addr -> mem row, open addressing (the rows of one device that are live) */
typedef struct live {
  uint64_t *addr;
  uint32_t *row; /* FT_MODEL_NONE: empty or freed (a tombstone keeps probing right) */
  uint8_t *used;
  size_t cap;
} live;

static size_t slot_of(const live *l, uint64_t a) {
  uint64_t h = a * 0x9E3779B97F4A7C15ull;
  size_t s = (size_t)(h >> 20) & (l->cap - 1);
  while (l->used[s] && l->addr[s] != a) s = (s + 1) & (l->cap - 1);
  return s;
}

typedef struct group {
  uint32_t key; /* the op's or call's name id */
  uint32_t slice;
  uint64_t bytes, n;
} group;

static int by_row_bytes(const void *x, const void *y, void *ctx) {
  const ft_model *m = ctx;
  int64_t a = m->mem[*(const uint32_t *)x].bytes, b = m->mem[*(const uint32_t *)y].bytes;
  if (a != b) return a > b ? -1 : 1;
  return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

/* A leak: allocated at the end of each steady-state step (the last row of the device before the
 * step's end; steps before its first row are left out), over FT_ADVISE_LEAK_MIN_STEPS of them, has a
 * least-squares slope of FT_ADVISE_LEAK_MIN_BYTES a step or more. It names the op (else the call)
 * whose allocations made in those steps are the most bytes still live at the last one's end. */
static bool leak(const ft_model *m, int32_t d, ft__findings *t) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  size_t n = 0, i = 0, last = SIZE_MAX;
  int64_t run = 0, end = 0;
  bool have = false;
  for (size_t s = 1; s < m->n_steps; s++) {
    for (; i < m->n_mem && m->mem[i].ts < m->steps[s].end; i++) {
      if (m->mem[i].device != d || m->mem[i].device_type == 0) continue;
      run = m->mem[i].total_allocated >= 0 ? m->mem[i].total_allocated
                                           : (int64_t)((uint64_t)run + (uint64_t)m->mem[i].bytes); /* wraps */
      have = true;
    }
    if (!have) continue;
    double x = (double)s, y = (double)run;
    sx += x, sy += y, sxx += x * x, sxy += x * y, n++;
    last = s;
  }
  if (n < FT_ADVISE_LEAK_MIN_STEPS) return true;
  double den = (double)n * sxx - sx * sx, slope = den > 0 ? ((double)n * sxy - sx * sy) / den : 0;
  if (!(slope >= (double)FT_ADVISE_LEAK_MIN_BYTES)) return true; /* NaN too */
  if (slope > 9e18) slope = 9e18;                                /* hostile totals: a size that fits its field */
  end = m->steps[last].end;
  /* the rows live at the end: allocations made in the steady steps, not freed before it */
  live l = {0};
  size_t nd = 0;
  for (size_t k = 0; k < m->n_mem; k++) nd += m->mem[k].device == d;
  for (l.cap = 64; l.cap < 2 * nd + 2; l.cap *= 2) {
  }
  l.addr = malloc(l.cap * sizeof *l.addr), l.row = malloc(l.cap * sizeof *l.row), l.used = calloc(l.cap, 1);
  uint32_t *rows = NULL;
  group *g = NULL;
  bool ok = l.addr && l.row && l.used;
  for (size_t k = 0; ok && k < m->n_mem && m->mem[k].ts < end; k++) {
    const ft_model_mem *x = &m->mem[k];
    if (x->device != d || !x->bytes) continue; /* reserve/unreserve rows: no tensor */
    size_t s = slot_of(&l, x->addr);
    if (x->bytes > 0) l.used[s] = 1, l.addr[s] = x->addr, l.row[s] = (uint32_t)k;
    else if (l.used[s]) l.row[s] = FT_MODEL_NONE;
  }
  size_t nr = 0, ng = 0;
  if (ok && !(rows = malloc((l.cap + 1) * sizeof *rows))) ok = false;
  for (size_t s = 0; ok && s < l.cap; s++)
    if (l.used[s] && l.row[s] != FT_MODEL_NONE && steady(m, m->mem[l.row[s]].step)) rows[nr++] = l.row[s];
  if (ok && nr) qsort_r(rows, nr, sizeof *rows, by_row_bytes, (void *)m);
  if (ok && !(g = calloc(nr + 1, sizeof *g))) ok = false;
  for (size_t k = 0; ok && k < nr; k++) {
    const ft_model_mem *x = &m->mem[rows[k]];
    uint32_t who = not_step(m, x->op);
    if (who == FT_MODEL_NONE) who = x->call;
    uint32_t key = who == FT_MODEL_NONE ? FT_MODEL_NONE : m->name[who];
    size_t j = 0;
    while (j < ng && g[j].key != key) j++;
    if (j == ng) g[ng++] = (group){key, who, 0, 0};
    g[j].bytes += (uint64_t)x->bytes;
    g[j].n++;
  }
  size_t best = 0;
  for (size_t j = 1; j < ng; j++)
    if (g[j].bytes > g[best].bytes) best = j;
  if (ok) {
    bool is_new;
    uint32_t fi = ft__finding(t, FT_RULE_LEAK, (uint32_t)d, 0, &is_new);
    if (fi == UINT32_MAX) {
      ok = false;
    } else {
      ft_advise_finding *f = &t->f[fi];
      char per[32], held[32];
      human((uint64_t)slope, per, sizeof per);
      human(ng ? g[best].bytes : 0, held, sizeof held);
      const char *who = ng ? slice_name(m, g[best].slice) : "(none)";
      f->bytes = (uint64_t)slope;
      snprintf(f->what, sizeof f->what, "device %d: allocated grows %s a step over %zu steps; %s still live from %s",
               (int)d, per, n, held, who);
      snprintf(f->where, sizeof f->where, "%s", who);
      snprintf(
          f->suggestion, sizeof f->suggestion, "%s",
          "a tensor outlives its step (kept in a list, a graph held by .backward() or a metric): detach or drop it");
      /* its occurrences: the group's live allocations, largest first */
      for (size_t k = 0; ok && ng && k < nr; k++) {
        const ft_model_mem *x = &m->mem[rows[k]];
        uint32_t w = not_step(m, x->op);
        if (w == FT_MODEL_NONE) w = x->call;
        if ((w == FT_MODEL_NONE ? FT_MODEL_NONE : m->name[w]) == g[best].key) ok = occ_add(f, m, x->step, x->ts, w);
      }
    }
  }
  free(l.addr), free(l.row), free(l.used), free(rows), free(g);
  return ok;
}

/* (advise_internal.h) */
bool ft__rule_memory(const ft_model *m, ft__findings *t) {
  if (!alloc_calls(m, t)) return false;
  int32_t dev[64];
  size_t nd = m->n_mem ? mem_devices(m, dev) : 0;
  for (size_t k = 0; k < nd; k++)
    if (!fragmentation(m, dev[k], t) || !leak(m, dev[k], t)) return false;
  return true;
}
