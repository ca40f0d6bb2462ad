/* The event model's memory rows (issue 51): in time order, each with its op, runtime call and step. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

static _Thread_local const ft_model *mem_m; /* qsort's comparator: files are finished on parallel threads */
static int by_time(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  int64_t tx = mem_m->mem[x].ts, ty = mem_m->mem[y].ts;
  return tx != ty ? (tx > ty) - (tx < ty) : (x > y) - (x < y); /* rows are in file order: ties keep it */
}

/* The innermost op or range open at ts on a thread, of its ops (slices in start order, ops[lo, hi)): the
 * shortest of the latest start at or before ts that is open, else that op's enclosing ones (m->op). */
static uint32_t op_at(const ft_model *m, const uint32_t *ops, size_t lo, size_t hi, int64_t ts) {
  size_t a = lo, b = hi;
  while (a < b) { /* the first op starting after ts */
    size_t mid = a + (b - a) / 2;
    if (m->ts[ops[mid]] <= ts) a = mid + 1;
    else b = mid;
  }
  if (a == lo) return FT_MODEL_NONE;
  uint32_t c = ops[a - 1], best = FT_MODEL_NONE;
  for (size_t j = a; j > lo && m->ts[ops[j - 1]] == m->ts[c]; j--) { /* one start: the shortest open */
    uint32_t o = ops[j - 1];
    if (ts < m->ts[o] + m->dur[o] && (best == FT_MODEL_NONE || m->dur[o] < m->dur[best])) best = o;
  }
  if (best != FT_MODEL_NONE) return best;
  for (int guard = 0; c != FT_MODEL_NONE && guard < 1 << 20; guard++, c = m->op[c])
    if (ts < m->ts[c] + m->dur[c]) return c;
  return FT_MODEL_NONE;
}

ft_status ft__model_mem_finish(ft_model *m) {
  struct ft_model_priv *p = m->p;
  size_t n = m->n_mem, nt = m->n_tracks;
  p->mem_order = malloc((n ? n : 1) * sizeof *p->mem_order);
  uint32_t *perm = malloc((n ? n : 1) * sizeof *perm);
  uint32_t *start = calloc(nt + 1, sizeof *start), *ops = NULL;
  ft__map by_ext = {0}, by_corr = {0};
  bool ok = p->mem_order && perm && start;
  if (!ok) goto out;
  /* rows by time, ties in file order */
  for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
  mem_m = m;
  qsort(perm, n, sizeof *perm, by_time);
  {
    ft_model_mem *r = malloc((n ? n : 1) * sizeof *r);
    ft__mmemx *x = malloc((n ? n : 1) * sizeof *x);
    if (!(ok = r && x)) {
      free(r), free(x);
      goto out;
    }
    for (size_t i = 0; i < n; i++) r[i] = m->mem[perm[i]], x[i] = p->memx[perm[i]], p->mem_order[perm[i]] = (uint32_t)i;
    free(m->mem), free(p->memx);
    m->mem = r, p->memx = x;
    p->cap_mem = n;
  }
  if (!n) goto out;
  /* each thread's ops and ranges, in start order */
  size_t n_ops = 0;
  for (size_t i = 0; i < m->n; i++)
    if (m->kind[i] == FT_MK_OP || m->kind[i] == FT_MK_RANGE) start[m->track[i] + 1]++, n_ops++;
  for (size_t t = 0; t < nt; t++) start[t + 1] += start[t];
  if (!(ok = (ops = malloc((n_ops ? n_ops : 1) * sizeof *ops)) != NULL)) goto out;
  {
    uint32_t *fill = malloc((nt ? nt : 1) * sizeof *fill);
    if (!(ok = fill != NULL)) goto out;
    memcpy(fill, start, nt * sizeof *fill);
    for (size_t i = 0; i < m->n; i++)
      if (m->kind[i] == FT_MK_OP || m->kind[i] == FT_MK_RANGE) ops[fill[m->track[i]]++] = (uint32_t)i;
    free(fill);
  }
  /* ops by External id (the latest in file order), runtime and driver calls by correlation id (the latest) */
  for (size_t f = 0; ok && f < m->n; f++) {
    uint32_t i = p->order[f];
    uint8_t k = m->kind[i];
    uint64_t *v = NULL;
    if ((k == FT_MK_OP || k == FT_MK_RANGE) && m->ext32[i] != FT_MODEL_NONE)
      ok = (v = ft__map_upsert(&by_ext, (uint64_t)ft__model_id(m, i, true))) != NULL;
    else if ((k == FT_MK_RUNTIME || k == FT_MK_DRIVER) && m->corr32[i] != FT_MODEL_NONE)
      ok = (v = ft__map_upsert(&by_corr, (uint64_t)ft__model_id(m, i, false))) != NULL;
    if (v) *v = (uint64_t)i + 1;
  }
  bool whole = m->n_steps == 1 && m->steps[0].slice == FT_MODEL_NONE;
  size_t k = 0;
  for (size_t r = 0; ok && r < n; r++) {
    ft_model_mem *w = &m->mem[r];
    const ft__mmemx *x = &p->memx[r];
    w->op = op_at(m, ops, start[w->track], start[w->track + 1], w->ts);
    if (w->op == FT_MODEL_NONE && (x->flags & MX_EXT) && by_ext.len) {
      uint64_t *v = ft__map_find(&by_ext, (uint64_t)x->ext);
      if (v) w->op = (uint32_t)(*v - 1);
    }
    if ((x->flags & MX_CORR) && by_corr.len) {
      uint64_t *v = ft__map_find(&by_corr, (uint64_t)x->corr);
      if (v) w->call = (uint32_t)(*v - 1);
    }
    if (w->op == FT_MODEL_NONE && w->call != FT_MODEL_NONE) w->op = m->op[w->call];
    /* rows and steps both by start: the latest step started by its time */
    while (k + 1 < m->n_steps && m->steps[k + 1].start <= w->ts) k++;
    if (m->n_steps && (whole || (m->steps[k].start <= w->ts && w->ts < m->steps[k].end))) w->step = (uint32_t)k;
  }
out:
  ft__map_free(&by_ext);
  ft__map_free(&by_corr);
  free(perm), free(start), free(ops);
  return ok ? FT_OK : FT_ENOMEM;
}
