/* advise's findings under construction: one per key, each occurrence's cost, the costs per step and the ranking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"

/* ---- the finding table ---- */

typedef struct fkey {
  uint32_t rule, k1, k2;
} fkey;

static uint64_t key_hash(uint32_t rule, uint32_t k1, uint32_t k2) {
  uint64_t x = ((uint64_t)k1 << 32 | k2) ^ ((uint64_t)rule * 0x9e3779b97f4a7c15ull);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

bool ft__advise_grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * size);
  if (!q) return false;
  ft__model_huge(q, c * size); /* a large one: in huge pages where offered (a fresh page costs a fault) */
  *p = q;
  *cap = c;
  return true;
}

static bool rehash(ft__findings *t) {
  size_t ns = t->n_slot ? t->n_slot * 2 : 64;
  uint32_t *s = calloc(ns, sizeof *s);
  if (!s) return false;
  const fkey *k = (const fkey *)t->keys;
  for (size_t i = 0; i < t->n; i++) {
    size_t h = key_hash(k[i].rule, k[i].k1, k[i].k2) & (ns - 1);
    while (s[h]) h = (h + 1) & (ns - 1);
    s[h] = (uint32_t)i + 1;
  }
  free(t->slot);
  t->slot = s;
  t->n_slot = ns;
  return true;
}

uint32_t ft__finding(ft__findings *t, enum ft_rule rule, uint32_t k1, uint32_t k2, bool *is_new) {
  if (is_new) *is_new = false;
  if ((t->n + 1) * 2 > t->n_slot && !rehash(t)) return UINT32_MAX;
  size_t h = key_hash(rule, k1, k2) & (t->n_slot - 1);
  fkey *keys = (fkey *)t->keys;
  for (; t->slot[h]; h = (h + 1) & (t->n_slot - 1)) {
    const fkey *k = &keys[t->slot[h] - 1];
    if (k->rule == (uint32_t)rule && k->k1 == k1 && k->k2 == k2) return t->slot[h] - 1;
  }
  size_t cap = t->cap;
  if (t->n == t->cap) {
    cap = t->cap ? t->cap * 2 : 16;
    ft_advise_finding *f = realloc(t->f, cap * sizeof *f);
    if (f) t->f = f;
    void *kk = f ? realloc(t->keys, cap * sizeof(fkey)) : NULL;
    if (kk) t->keys = kk;
    struct ft__last *ls = kk ? realloc(t->last, cap * sizeof *ls) : NULL;
    if (!ls) return UINT32_MAX;
    t->last = ls;
    t->cap = cap;
  }
  size_t i = t->n++;
  memset(&t->f[i], 0, sizeof t->f[i]);
  t->f[i].rule = rule;
  ((fkey *)t->keys)[i] = (fkey){rule, k1, k2};
  t->last[i] = (struct ft__last){FT_MODEL_NONE, UINT32_MAX, INT64_MIN, SIZE_MAX};
  t->slot[h] = (uint32_t)i + 1;
  if (is_new) *is_new = true;
  return (uint32_t)i;
}

bool ft__credit_add(ft__findings *t, uint32_t fi, const ft_model *m, size_t step, uint32_t slice, int64_t ts,
                    int64_t dur, uint64_t ns) {
  struct ft__last *l = &t->last[fi];
  /* a credit in the step of the finding's latest adds to it: the cost sums each (finding,
   * step) before its cap, and a rule meets a step's occurrences together (16 bytes a
   * credit were a kernel's gap each) */
  if (l->cr != SIZE_MAX && t->cr[l->cr].step == (uint32_t)step) {
    t->cr[l->cr].ns += ns;
  } else {
    if (!ft__advise_grow((void **)&t->cr, &t->cap_cr, t->n_cr + 1, sizeof *t->cr)) return false;
    l->cr = t->n_cr;
    t->cr[t->n_cr++] = (ft__credit){fi, (uint32_t)step, ns};
  }
  if (l->slice == slice && l->step == step && l->ts == ts) return true;
  *l = (struct ft__last){slice, (uint32_t)step, ts, l->cr};
  ft_advise_finding *f = &t->f[fi];
  f->count++;
  if (f->n_occ >= FT_ADVISE_KEEP_OCC) return true;
  if (!f->occ && !(f->occ = malloc(FT_ADVISE_KEEP_OCC * sizeof *f->occ))) return false;
  f->occ[f->n_occ++] = (ft_advise_occurrence){m->rank, m->steps[step].number, ts, dur, slice};
  return true;
}

void ft__findings_free(ft__findings *t) {
  for (size_t i = 0; i < t->n; i++) free(t->f[i].occ);
  free(t->f);
  free(t->slot);
  free(t->keys);
  free(t->last);
  free(t->cr);
  memset(t, 0, sizeof *t);
}

/* ---- ranking ---- */

static int by_finding_step(const void *x, const void *y) {
  const ft__credit *a = x, *b = y;
  if (a->finding != b->finding) return a->finding < b->finding ? -1 : 1;
  return a->step < b->step ? -1 : a->step > b->step;
}

static int by_cost(const void *x, const void *y) {
  const ft_advise_finding *a = x, *b = y;
  if (a->cost_ns != b->cost_ns) return a->cost_ns > b->cost_ns ? -1 : 1;
  if (a->rule != b->rule) return a->rule < b->rule ? -1 : 1;
  return strcmp(a->where, b->where);
}

/* Each finding's cost: per step the sum of its occurrences' costs, capped at the
 * step's ceiling (ceil[step]), summed over steps and divided by their number. */
void ft__cost_findings(ft__findings *t, const uint64_t *ceil, size_t n_steps, double mean_wall) {
  if (t->n_cr) qsort(t->cr, t->n_cr, sizeof *t->cr, by_finding_step);
  for (size_t k = 0; k < t->n_cr;) {
    uint32_t f = t->cr[k].finding;
    uint64_t total = 0;
    while (k < t->n_cr && t->cr[k].finding == f) {
      uint32_t s = t->cr[k].step;
      uint64_t sum = 0;
      for (; k < t->n_cr && t->cr[k].finding == f && t->cr[k].step == s; k++) sum += t->cr[k].ns;
      total += ceil && sum > ceil[s] ? ceil[s] : sum;
    }
    t->f[f].cost_ns = n_steps ? total / n_steps : 0;
    t->f[f].cost_share = mean_wall > 0 ? (double)t->f[f].cost_ns / mean_wall : 0;
  }
}

/* Keeps the findings at or over min_share (a straggler's or fuse's too), largest cost first; a memory
 * finding (bytes, no time) whatever its cost, after those of a cost. */
void ft__rank_findings(ft_advise_finding *f, size_t *n, double min_share) {
  size_t k = 0;
  for (size_t i = 0; i < *n; i++) {
    if ((f[i].cost_ns > 0 && f[i].cost_share >= min_share) || f[i].bytes) f[k++] = f[i];
    else free(f[i].occ);
  }
  *n = k;
  if (k) qsort(f, k, sizeof *f, by_cost);
}
