/* advise's cross-rank part: a rank slower than the others on the same step, by wall time and by exposed communication.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* The median of v[0..n) (sorted in place); the lower middle when n is even, so two
 * ranks compare each with the other. */
static uint64_t median(uint64_t *v, size_t n) {
  if (n) qsort(v, n, sizeof *v, cmp_u64);
  return v[(n - 1) / 2];
}

/* The step numbered number, looked for first at index hint (ranks step in lockstep). */
static const ft_advise_step *step_of(const ft_advice *a, int64_t number, size_t hint) {
  if (hint < a->n_steps && a->steps[hint].number == number) return &a->steps[hint];
  for (size_t s = 0; s < a->n_steps; s++)
    if (a->steps[s].number == number) return &a->steps[s];
  return NULL;
}

/* A rank's excess on a step over the other ranks' medians: its wall time above
 * theirs, or (the others waiting for it inside collectives) its exposed
 * communication below theirs; the larger of the two. */
ft_status ft_advise_job(ft_advice *const *ranks, size_t n, const ft_advise_opts *o, ft_advice *job, char *err,
                        size_t errlen) {
  ft_advise_opts def;
  if (!o) {
    ft_advise_opts_default(&def);
    o = &def;
  }
  if (n < 2) return FT_OK;
  uint64_t *walls = malloc(n * sizeof *walls), *exps = malloc(n * sizeof *exps);
  ft_advise_finding *add = calloc(n, sizeof *add);
  size_t n_add = 0;
  double wall_sum = 0;
  size_t wall_n = 0;
  if (!walls || !exps || !add) goto oom;
  for (size_t r = 0; r < n; r++)
    for (size_t s = 0; s < ranks[r]->n_steps; s++, wall_n++) wall_sum += (double)ft_advise_wall(&ranks[r]->steps[s]);
  double mean_wall = wall_n ? wall_sum / (double)wall_n : 0;
  for (size_t r = 0; r < n; r++) {
    const ft_advice *a = ranks[r];
    uint64_t total = 0, by_wall = 0, by_comm = 0;
    size_t compared = 0;
    ft_advise_finding *f = &add[n_add];
    /* a trace that names no rank: its position among the files */
    int64_t rank = a->n_steps && a->steps[0].rank >= 0 ? a->steps[0].rank : (int64_t)r;
    for (size_t s = 0; s < a->n_steps; s++) {
      const ft_advise_step *st = &a->steps[s];
      size_t k = 0;
      for (size_t q = 0; q < n; q++) {
        const ft_advise_step *other = q == r ? NULL : step_of(ranks[q], st->number, s);
        if (!other) continue;
        walls[k] = ft_advise_wall(other);
        exps[k++] = other->exposed_comm_ns;
      }
      if (!k) continue;
      compared++;
      uint64_t mw = median(walls, k), me = median(exps, k), w = ft_advise_wall(st);
      uint64_t dw = w > mw ? w - mw : 0, de = me > st->exposed_comm_ns ? me - st->exposed_comm_ns : 0;
      uint64_t x = dw > de ? dw : de;
      by_wall += dw;
      by_comm += de;
      if (!x) continue;
      total += x;
      f->count++;
      if (f->n_occ < FT_ADVISE_KEEP_OCC) {
        if (!f->occ && !(f->occ = malloc(FT_ADVISE_KEEP_OCC * sizeof *f->occ))) goto oom;
        f->occ[f->n_occ++] =
            (ft_advise_occurrence){rank, st->number, st->start, w > INT64_MAX ? INT64_MAX : (int64_t)w, FT_MODEL_NONE};
      }
    }
    if (!f->count) continue;
    f->rule = FT_RULE_STRAGGLER;
    f->cost_ns = total / compared;
    f->cost_share = mean_wall > 0 ? (double)f->cost_ns / mean_wall : 0;
    snprintf(f->where, sizeof f->where, "rank %lld", (long long)rank);
    snprintf(f->what, sizeof f->what,
             "rank %lld is slower than the others: step +%.1f us, exposed communication -%.1f us (mean a step)",
             (long long)rank, (double)by_wall / (double)compared / 1e3, (double)by_comm / (double)compared / 1e3);
    snprintf(f->suggestion, sizeof f->suggestion, "%s",
             "balance the work across ranks, or look at this rank's own findings (its host, data, device)");
    n_add++;
  }
  ft__rank_findings(add, &n_add, o->min_share);
  if (n_add) {
    ft_advise_finding *all = realloc(job->findings, (job->n_findings + n_add) * sizeof *all);
    if (!all) goto oom;
    memcpy(all + job->n_findings, add, n_add * sizeof *add);
    job->findings = all;
    job->n_findings += n_add;
    n_add = 0;
    ft__rank_findings(job->findings, &job->n_findings, 0);
  }
  free(walls);
  free(exps);
  free(add);
  return FT_OK;
oom:
  for (size_t i = 0; add && i <= n_add && i < n; i++) free(add[i].occ);
  free(walls);
  free(exps);
  free(add);
  if (err && errlen) snprintf(err, errlen, "advise: out of memory");
  return FT_ENOMEM;
}
