/* `flagtrace diff`: each op's kernels side by side (by name, or as a group across vendors), copies, the summary. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"

static const ft_col kernel_cols[] = {
    {"count_a", "Cnt A", COL_U64, 8}, {"count_b", "Cnt B", COL_U64, 8},        {"a_us", "A(us)", COL_F3, 14},
    {"b_us", "B(us)", COL_F3, 14},    {"mean_a_us", "Mean A(us)", COL_F3, 12}, {"mean_b_us", "Mean B(us)", COL_F3, 12},
    {"ratio", "B/A", COL_F3, 8},      {"delta_us", "Delta(us)", COL_F3, 14},   {"only", "", COL_STR, -1},
    {"op", "Op", COL_STR, 0},         {"kernel", "Kernel", COL_STR, 0}};
/* a row of one side only: its ratio in tables (csv and json: none, and "only": "A" or "B") */
static const char *by_name_words[2] = {"gone", "new"}, *group_words[2] = {"A only", "B only"};
#define GROUP_LABEL "(all kernels)"

/* A side's op-kernel rows sorted by their op's name id: an op's rows are a range. */
typedef struct by_op {
  const ft_stat_row **rows;
  size_t n;
  uint32_t none; /* "(no op)"'s name id, UINT32_MAX when the side has none */
} by_op;

static int row_by_op(const void *x, const void *y) {
  const ft_stat_row *a = *(const ft_stat_row *const *)x, *b = *(const ft_stat_row *const *)y;
  if (a->name_id != b->name_id) return a->name_id < b->name_id ? -1 : 1;
  return (a->t.total < b->t.total) - (a->t.total > b->t.total); /* the longest first */
}

static bool by_op_init(by_op *bo, const ft_stats *st) {
  const ft__vec *v = &st->rows[FT_STAT_OP_KERNELS];
  bo->n = v->len;
  bo->none = UINT32_MAX;
  bo->rows = malloc((v->len ? v->len : 1) * sizeof *bo->rows);
  if (!bo->rows) return false;
  for (size_t i = 0; i < v->len; i++) {
    bo->rows[i] = ft__vec_at(v, i);
    if (bo->none == UINT32_MAX && !strcmp(ft__intern_str(&st->names, bo->rows[i]->name_id), "(no op)"))
      bo->none = bo->rows[i]->name_id;
  }
  qsort(bo->rows, bo->n, sizeof *bo->rows, row_by_op);
  return true;
}

/* The range [*lo, *hi) of op name id op. */
static void op_range(const by_op *bo, uint32_t op, size_t *lo, size_t *hi) {
  size_t l = 0, h = bo->n;
  while (l < h) {
    size_t m = l + (h - l) / 2;
    if (bo->rows[m]->name_id < op) l = m + 1;
    else h = m;
  }
  *lo = *hi = l;
  while (*hi < bo->n && bo->rows[*hi]->name_id == op) ++*hi;
}

/* One row: counts and times of a kernel (or the group) on both sides. */
/* only: 0 both sides have it, 1 A only, 2 B only. */
static void kernel_row(ft__diff_ctx *c, ft_report *rep, const double n[2], const double ns[2], int only, const char *op,
                       const char *kernel) {
  for (int s = 0; s < 2; s++) {
    ft__diff_num(rep, s, n[s]);
    ft__diff_num(rep, 2 + s, ns[s] / 1000.0);
    ft__diff_num(rep, 4 + s, n[s] > 0 ? ns[s] / n[s] / 1000.0 : 0);
  }
  ft__diff_ratio_cell(rep, 6, only, c->d->kernels_by_name ? by_name_words : group_words, ns[0], ns[1]);
  ft__diff_num(rep, 7, (ns[1] - ns[0]) / 1000.0);
  ft__diff_str(rep, 9, op);
  ft__diff_str(rep, 10, kernel);
  rep->n_rows++;
}

static int pair_by_max(const void *x, const void *y) {
  const ft__pair *a = x, *b = y;
  double ma = a->v[0] > a->v[1] ? a->v[0] : a->v[1], mb = b->v[0] > b->v[1] ? b->v[0] : b->v[1];
  return (ma < mb) - (ma > mb);
}

/* One op's kernels: by name, or its group and then each side's kernels. */
static bool op_kernels(ft__diff_ctx *c, ft_report *rep, const by_op bo[2], const uint32_t op[2], const char *name) {
  size_t lo[2] = {0, 0}, hi[2] = {0, 0};
  for (int s = 0; s < 2; s++)
    if (op[s] != UINT32_MAX) op_range(&bo[s], op[s], &lo[s], &hi[s]);
  if (c->d->kernels_by_name) {
    ft__pairing pg;
    bool ok = ft__pairing_init(&pg);
    for (int s = 0; ok && s < 2; s++) {
      const ft_stats *st = &c->job[s]->total;
      for (size_t i = lo[s]; ok && i < hi[s]; i++) {
        const ft_stat_row *r = bo[s].rows[i];
        ft__pair *p =
            ft__pairing_get(&pg, ft__intern_str(&st->names, r->aux_id), ft__intern_len(&st->names, r->aux_id), NULL, 0);
        if (!(ok = p != NULL)) break;
        p->r[s] = r;
        p->v[s] = (double)r->t.total * c->scale[s];
      }
    }
    if (ok && pg.n) qsort(pg.p, pg.n, sizeof *pg.p, pair_by_max);
    for (size_t i = 0; ok && i < pg.n; i++) {
      const ft__pair *p = &pg.p[i];
      double n[2] = {0, 0};
      for (int s = 0; s < 2; s++) n[s] = p->r[s] ? (double)p->r[s]->t.n * c->scale[s] : 0;
      const ft_stat_row *r = p->r[0] ? p->r[0] : p->r[1];
      kernel_row(c, rep, n, p->v,
                 !p->r[1]   ? 1
                 : !p->r[0] ? 2
                            : 0,
                 name, ft__intern_str(&c->job[p->r[0] ? 0 : 1]->total.names, r->aux_id));
    }
    ft__pairing_free(&pg);
    return ok;
  }
  double n[2] = {0, 0}, ns[2] = {0, 0};
  for (int s = 0; s < 2; s++)
    for (size_t i = lo[s]; i < hi[s]; i++) n[s] += (double)bo[s].rows[i]->t.n, ns[s] += (double)bo[s].rows[i]->t.total;
  for (int s = 0; s < 2; s++) n[s] *= c->scale[s], ns[s] *= c->scale[s];
  kernel_row(c, rep, n, ns, hi[1] == lo[1] ? 1 : hi[0] == lo[0] ? 2 : 0, name, GROUP_LABEL);
  for (int s = 0; s < 2; s++) /* each side's own kernels under the group, the longest first */
    for (size_t i = lo[s]; i < hi[s]; i++) {
      const ft_stat_row *r = bo[s].rows[i];
      double kn[2] = {0, 0}, kns[2] = {0, 0};
      kn[s] = (double)r->t.n * c->scale[s], kns[s] = (double)r->t.total * c->scale[s];
      kernel_row(c, rep, kn, kns, s + 1, name, ft__intern_str(&c->job[s]->total.names, r->aux_id));
    }
  return true;
}

/* Whether the sides share kernel names: one vendor (by name) or not (as groups). */
static bool kernels_by_name(ft__diff_ctx *c) {
  ft__pairing pg;
  bool ok = ft__pairing_init(&pg);
  for (int s = 0; ok && s < 2; s++) {
    const ft_stats *st = &c->job[s]->total;
    for (size_t i = 0; ok && i < st->rows[FT_STAT_KERNELS].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_KERNELS], i);
      ft__pair *p =
          ft__pairing_get(&pg, ft__intern_str(&st->names, r->name_id), ft__intern_len(&st->names, r->name_id), NULL, 0);
      if ((ok = p != NULL)) p->r[s] = r;
    }
  }
  for (size_t i = 0; ok && i < pg.n; i++) {
    c->d->kernels[0] += pg.p[i].r[0] != NULL, c->d->kernels[1] += pg.p[i].r[1] != NULL;
    c->d->kernels_shared += pg.p[i].r[0] && pg.p[i].r[1];
  }
  ft__pairing_free(&pg);
  uint64_t fewer = c->d->kernels[0] < c->d->kernels[1] ? c->d->kernels[0] : c->d->kernels[1];
  if (c->o->kernels != FT_DIFF_KERNELS_AUTO) c->d->kernels_by_name = c->o->kernels == FT_DIFF_KERNELS_NAME;
  else c->d->kernels_by_name = c->d->kernels_shared && c->d->kernels_shared * 2 >= fewer;
  return ok;
}

/* (diff_internal.h) the ops both sides have, in the ops report's order (its limit
 * too), then "(no op)": each with its kernels */
bool ft__diff_kernels(ft__diff_ctx *c) {
  by_op bo[2] = {{0}, {0}};
  ft__pairing pg;
  bool ok = kernels_by_name(c) && ft__pairing_init(&pg);
  if (!ok) return false;
  for (int s = 0; ok && s < 2; s++) {
    const ft_stats *st = &c->job[s]->total;
    ok = by_op_init(&bo[s], st);
    for (size_t i = 0; ok && i < st->rows[FT_STAT_OPS].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_OPS], i);
      const char *name = ft__intern_str(&st->names, r->name_id);
      if (ft__diff_is_step_or_none(c, name)) continue;
      ft__pair *p = ft__pairing_get(&pg, name, ft__intern_len(&st->names, r->name_id), NULL, 0);
      if (!(ok = p != NULL)) break;
      p->r[s] = r;
      p->v[s] = (double)r->self_ns * c->scale[s];
    }
  }
  size_t matched = 0, rows = 0, lim = c->o->limit, k = 0, up = 0, down = 0;
  if (ok) {
    ft__diff_sort(&pg);
    for (size_t i = 0; i < pg.n; i++)
      if (pg.p[i].r[0] && pg.p[i].r[1])
        matched++, up += pg.p[i].v[1] > pg.p[i].v[0], down += pg.p[i].v[1] < pg.p[i].v[0];
    for (int s = 0; s < 2; s++) rows += bo[s].n + 1;
    ok = ft__diff_report(c, FT_DIFF_KERNELS, "kernels",
                         c->d->kernels_by_name ? "kernels of each op, by name" : "kernels of each op, as a group",
                         kernel_cols, 11, rows + pg.n);
  }
  ft_report *rep = &c->d->reps[FT_DIFF_KERNELS];
  for (size_t i = 0; ok && i < pg.n; i++) {
    const ft__pair *p = &pg.p[i];
    if (!p->r[0] || !p->r[1]) continue;
    k++;
    if (!ft__diff_keep(k, matched, up, down, lim)) continue; /* as the ops report */
    uint32_t op[2] = {p->r[0]->name_id, p->r[1]->name_id};
    ok = op_kernels(c, rep, bo, op, ft__intern_str(&c->job[0]->total.names, op[0]));
  }
  for (int s = 0; s < 2; s++) /* then the ops of one side only: their work has nothing to match */
    for (size_t i = 0; ok && i < pg.n; i++) {
      const ft__pair *p = &pg.p[i];
      if (!p->r[s] || p->r[1 - s]) continue;
      uint32_t op[2] = {UINT32_MAX, UINT32_MAX};
      op[s] = p->r[s]->name_id;
      ok = op_kernels(c, rep, bo, op, ft__intern_str(&c->job[s]->total.names, op[s]));
    }
  if (ok && (bo[0].none != UINT32_MAX || bo[1].none != UINT32_MAX)) {
    uint32_t op[2] = {bo[0].none, bo[1].none};
    ok = op_kernels(c, rep, bo, op, "(no op)");
  }
  ft__pairing_free(&pg);
  free(bo[0].rows);
  free(bo[1].rows);
  return ok;
}

static const char *kind_of(uint8_t cat) {
  return cat == FT_STAT_CAT_DRIVER    ? "driver"
         : cat == FT_STAT_CAT_RUNTIME ? "runtime"
         : cat == FT_STAT_CAT_MEMSET  ? "memset"
                                      : "memcpy";
}

/* The rows of section sec (api, memory) of both sides paired by kind and name, sorted
 * by the delta of their time; false without memory (pg freed). */
static bool pair_by_kind(ft__diff_ctx *c, ft__pairing *pg, int sec) {
  bool ok = ft__pairing_init(pg);
  for (int s = 0; ok && s < 2; s++) {
    const ft_stats *st = &c->job[s]->total;
    for (size_t i = 0; ok && i < st->rows[sec].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[sec], i);
      const char *kind = kind_of(r->cat);
      ft__pair *p = ft__pairing_get(pg, kind, strlen(kind), ft__intern_str(&st->names, r->name_id),
                                    ft__intern_len(&st->names, r->name_id));
      if (!(ok = p != NULL)) break;
      p->r[s] = r;
      p->v[s] = (double)r->t.total * c->scale[s];
    }
  }
  if (ok) ft__diff_sort(pg);
  else ft__pairing_free(pg);
  return ok;
}

/* A row's last two cells, its kind and name (from a side that has it), and the row done. */
static void end_row(ft__diff_ctx *c, ft_report *rep, const ft__pair *p) {
  int s = p->r[0] ? 0 : 1;
  ft__diff_str(rep, rep->n_cols - 2, kind_of(p->r[s]->cat));
  ft__diff_str(rep, rep->n_cols - 1, ft__intern_str(&c->job[s]->total.names, p->r[s]->name_id));
  rep->n_rows++;
}

/* 0: both sides have the pair, 1: A only, 2: B only */
static int one_side(const ft__pair *p) { return !p->r[1] ? 1 : !p->r[0] ? 2 : 0; }

static const ft_col api_cols[] = {
    {"calls_a", "Calls A", COL_U64, 9}, {"calls_b", "Calls B", COL_U64, 9}, {"a_us", "A(us)", COL_F3, 14},
    {"b_us", "B(us)", COL_F3, 14},      {"ratio", "B/A", COL_F3, 8},        {"delta_us", "Delta(us)", COL_F3, 14},
    {"only", "", COL_STR, -1},          {"kind", "Kind", COL_STR, -7},      {"name", "Name", COL_STR, 0}};

/* (diff_internal.h) runtime and driver calls by name: calls and CPU time, A vs B */
bool ft__diff_api(ft__diff_ctx *c) {
  ft__pairing pg;
  bool ok = pair_by_kind(c, &pg, FT_STAT_API) &&
            ft__diff_report(c, FT_DIFF_API, "api", "runtime and driver calls, A vs B", api_cols, 9, pg.n);
  for (size_t i = 0; ok && i < pg.n; i++) {
    const ft__pair *p = &pg.p[i];
    ft_report *rep = &c->d->reps[FT_DIFF_API];
    for (int s = 0; s < 2; s++) {
      ft__diff_num(rep, s, p->r[s] ? (double)p->r[s]->t.n * c->scale[s] : 0);
      ft__diff_num(rep, 2 + s, p->v[s] / 1000.0);
    }
    ft__diff_ratio_cell(rep, 4, one_side(p), by_name_words, p->v[0], p->v[1]);
    ft__diff_num(rep, 5, (p->v[1] - p->v[0]) / 1000.0);
    end_row(c, rep, p);
  }
  ft__pairing_free(&pg);
  return ok;
}

static const ft_col copy_cols[] = {
    {"count_a", "Cnt A", COL_U64, 8},    {"count_b", "Cnt B", COL_U64, 8}, {"bytes_a", "Bytes A", COL_U64, 14},
    {"bytes_b", "Bytes B", COL_U64, 14}, {"a_us", "A(us)", COL_F3, 14},    {"b_us", "B(us)", COL_F3, 14},
    {"gbps_a", "GB/s A", COL_F3, 10},    {"gbps_b", "GB/s B", COL_F3, 10}, {"ratio", "BW B/A", COL_F3, 8},
    {"only", "", COL_STR, -1},           {"kind", "Kind", COL_STR, -6},    {"name", "Name", COL_STR, 0}};

/* (diff_internal.h) copies and sets by kind and name: bandwidth A vs B */
bool ft__diff_copies(ft__diff_ctx *c) {
  ft__pairing pg;
  bool ok = pair_by_kind(c, &pg, FT_STAT_MEMORY) &&
            ft__diff_report(c, FT_DIFF_COPIES, "copies", "copies and sets, A vs B", copy_cols, 12, pg.n);
  for (size_t i = 0; ok && i < pg.n; i++) {
    const ft__pair *p = &pg.p[i];
    ft_report *rep = &c->d->reps[FT_DIFF_COPIES];
    double gbps[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
      const ft_stat_row *r = p->r[s];
      ft__diff_num(rep, s, r ? (double)r->t.n * c->scale[s] : 0);
      ft__diff_num(rep, 2 + s, r ? (double)r->b.total * c->scale[s] : 0);
      ft__diff_num(rep, 4 + s, p->v[s] / 1000.0);
      gbps[s] = r && r->t.total ? (double)r->b.total / (double)r->t.total : 0; /* bytes per ns: GB/s */
      ft__diff_num(rep, 6 + s, gbps[s]);
    }
    ft__diff_ratio_cell(rep, 8, one_side(p), by_name_words, gbps[0], gbps[1]);
    end_row(c, rep, p);
  }
  ft__pairing_free(&pg);
  return ok;
}

static const ft_col summary_cols[] = {
    {"metric", "Metric", COL_STR, -12}, {"unit", "Unit", COL_STR, -5}, {"a", "A", COL_F3, 16}, {"b", "B", COL_F3, 16},
    {"ratio", "B/A", COL_F3, 8},        {"delta", "Delta", COL_F3, 16}};

/* (diff_internal.h) step time, device busy, kernels, API, copies: A, B, B/A, B - A */
bool ft__diff_summary(ft__diff_ctx *c) {
  enum { STEPS, STEP, BUSY, KTIME, KERNELS, API, CALLS, COPIES, BYTES, CTIME, N };
  static const char *const names[N][2] = {
      {"steps", "count"}, {"step_time", "us"},    {"device_busy", "us"}, {"kernel_time", "us"},   {"kernels", "count"},
      {"api_time", "us"}, {"api_calls", "count"}, {"copies", "count"},   {"copy_bytes", "bytes"}, {"copy_time", "us"}};
  double v[2][N] = {{0}};
  uint64_t whole[2][N] = {{0}}; /* the counts exactly (a double holds 2^53) */
  for (int s = 0; s < 2; s++) {
    const ft_stat_job *j = c->job[s];
    const ft_stats *st = &j->total;
    double sc = c->scale[s];
    v[s][STEPS] = (double)c->d->steps[s];
    whole[s][STEPS] = c->d->steps[s];
    uint64_t span = 0;
    for (size_t f = 0; f < j->n_files; f++) {
      if (j->files[f].span_ns > span) span = j->files[f].span_ns;
      for (size_t b = 0; b < j->files[f].n_busy; b++) v[s][BUSY] += (double)j->files[f].busy[b].busy_ns / 1000.0 * sc;
    }
    v[s][STEP] = c->d->step_name[0] ? (double)c->step_ns[s] / (double)c->d->steps[s] / 1000.0 : (double)span / 1000.0;
    for (size_t i = 0; i < st->rows[FT_STAT_KERNELS].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_KERNELS], i);
      v[s][KTIME] += (double)r->t.total / 1000.0 * sc, v[s][KERNELS] += (double)r->t.n * sc;
      whole[s][KERNELS] += r->t.n;
    }
    for (size_t i = 0; i < st->rows[FT_STAT_API].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_API], i);
      v[s][API] += (double)r->t.total / 1000.0 * sc, v[s][CALLS] += (double)r->t.n * sc;
      whole[s][CALLS] += r->t.n;
    }
    for (size_t i = 0; i < st->rows[FT_STAT_MEMORY].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_MEMORY], i);
      if (r->cat != FT_STAT_CAT_MEMCPY) continue;
      v[s][COPIES] += (double)r->t.n * sc, v[s][BYTES] += (double)r->b.total * sc;
      whole[s][COPIES] += r->t.n, whole[s][BYTES] += r->b.total;
      v[s][CTIME] += (double)r->t.total / 1000.0 * sc;
    }
  }
  if (!ft__diff_report(c, FT_DIFF_SUMMARY, "summary", "summary, A vs B", summary_cols, 6, N)) return false;
  ft_report *rep = &c->d->reps[FT_DIFF_SUMMARY];
  for (int m = 0; m < N; m++) {
    uint8_t *kind = rep->kinds + (size_t)m * 6; /* each its column's (ft__diff_report), but whole numbers */
    ft__diff_str(rep, 0, m == STEP && !c->d->step_name[0] ? "span" : names[m][0]);
    ft__diff_str(rep, 1, names[m][1]);
    ft__diff_num(rep, 2, v[0][m]);
    ft__diff_num(rep, 3, v[1][m]);
    ft__diff_num(rep, 4, ft__diff_ratio(v[0][m], v[1][m]));
    ft__diff_num(rep, 5, v[1][m] - v[0][m]);
    /* counts and bytes are whole (81, not 81.000) unless divided per step; steps always */
    if (strcmp(names[m][1], "us") && (m == STEPS || !c->d->per_step)) {
      ft_cell *cell = rep->cells + rep->n_rows * 6;
      uint64_t a = whole[0][m], b = whole[1][m];
      cell[2].u = a, cell[3].u = b;
      kind[2] = kind[3] = COL_U64;
      if (a <= INT64_MAX && b <= INT64_MAX) { /* else the delta stays a real */
        cell[5].i = (int64_t)b - (int64_t)a;
        kind[5] = COL_I64;
      }
    }
    rep->n_rows++;
  }
  return true;
}
