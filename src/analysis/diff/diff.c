/* `flagtrace diff`: steps, ops by name (and Input Dims), copies and the summary of two jobs as report rows. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "diff_internal.h"

/* A step range: NAME itself or NAME#N (ProfilerStep#12). */
static bool is_step(const char *name, const char *step) {
  size_t n = strlen(step);
  if (!n || strncmp(name, step, n)) return false;
  if (!name[n]) return true;
  if (name[n] != '#' || !name[n + 1]) return false;
  for (const char *p = name + n + 1; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return true;
}

/* A step is a step name of a file: a range's calls are the files that have it (its
 * occurrences in one file are one step, their times summed), as the steps report
 * shows them. */
static void count_steps(const ft_stats *st, const char *step, uint64_t *n, uint64_t *ns) {
  *n = *ns = 0;
  for (size_t i = 0; i < st->rows[FT_STAT_RANGES].len; i++) {
    const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_RANGES], i);
    if (!is_step(ft__intern_str(&st->names, r->name_id), step) || !r->t.n) continue;
    *n += r->calls;
    *ns += r->t.total;
  }
}

typedef struct step_row {
  const ft_stat_row *r;
  const char *name, *num; /* num: the digits of NAME#N, NULL for NAME itself */
} step_row;

/* By N as a number of any length (not strtoll's, which stops at 2^63 - 1), NAME itself
 * first; the names break ties ("#01" and "#1"). */
static int by_step_number(const void *x, const void *y) {
  const step_row *a = x, *b = y;
  if (!a->num || !b->num) return !a->num && !b->num ? 0 : a->num ? 1 : -1;
  const char *p = a->num, *q = b->num;
  while (*p == '0' && p[1]) p++;
  while (*q == '0' && q[1]) q++;
  size_t np = strlen(p), nq = strlen(q);
  if (np != nq) return np < nq ? -1 : 1;
  int c = strcmp(p, q);
  return c ? c : strcmp(a->name, b->name);
}

static const ft_col step_cols[] = {{"step", "Step", COL_I64, 5},          {"a_us", "A(us)", COL_F3, 14},
                                   {"b_us", "B(us)", COL_F3, 14},         {"ratio", "B/A", COL_F3, 8},
                                   {"delta_us", "Delta(us)", COL_F3, 14}, {"a_name", "A step", COL_STR, -16},
                                   {"b_name", "B step", COL_STR, 0}};

/* The steps side by side in their order (the k-th of A with the k-th of B, by their
 * numbers): each one's CPU time, its mean over the files (ranks) that have it. */
static bool steps_report(ft__diff_ctx *c) {
  step_row *sr[2] = {NULL, NULL};
  size_t n[2] = {0, 0};
  bool ok = true;
  for (int s = 0; ok && s < 2 && c->d->step_name[0]; s++) {
    const ft_stats *st = &c->job[s]->total;
    const ft__vec *v = &st->rows[FT_STAT_RANGES];
    if (!(sr[s] = malloc((v->len ? v->len : 1) * sizeof *sr[s]))) ok = false;
    for (size_t i = 0; ok && i < v->len; i++) {
      const ft_stat_row *r = ft__vec_at(v, i);
      const char *name = ft__intern_str(&st->names, r->name_id);
      size_t len = strlen(c->d->step_name);
      if (is_step(name, c->d->step_name) && r->t.n && r->calls)
        sr[s][n[s]++] = (step_row){r, name, name[len] ? name + len + 1 : NULL};
    }
    if (ok) qsort(sr[s], n[s], sizeof *sr[s], by_step_number);
  }
  size_t rows = n[0] > n[1] ? n[0] : n[1];
  ok = ok && ft__diff_report(c, FT_DIFF_STEPS, "steps", "steps, A vs B in their order", step_cols, 7, rows);
  for (size_t k = 0; ok && k < rows; k++) {
    ft_report *rep = &c->d->reps[FT_DIFF_STEPS];
    double us[2] = {0, 0};
    rep->cells[rep->n_rows * (size_t)rep->n_cols].i = (int64_t)k + 1; /* its place, whatever the counts */
    for (int s = 0; s < 2; s++) {
      const ft_stat_row *r = k < n[s] ? sr[s][k].r : NULL;
      us[s] = r ? (double)r->t.total / (double)r->calls / 1000.0 : 0; /* the files' mean */
      ft__diff_num(rep, 1 + s, us[s]);
      ft__diff_str(rep, 5 + s, r ? ft__intern_str(&c->job[s]->total.names, r->name_id) : "");
    }
    ft__diff_num(rep, 3, ft__diff_ratio(us[0], us[1]));
    ft__diff_num(rep, 4, us[1] - us[0]);
    rep->n_rows++;
  }
  free(sr[0]);
  free(sr[1]);
  return ok;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return FT_EINVAL;
}

/* (diff_internal.h) */
bool ft__diff_is_step_or_none(const ft__diff_ctx *c, const char *name) {
  return !strcmp(name, "(no op)") || is_step(name, "ProfilerStep") ||
         (c->d->step_name[0] && is_step(name, c->d->step_name));
}

/* Ops of both sides paired by name (and Input Dims with shapes). */
static bool pair_ops(ft__diff_ctx *c, ft__pairing *pg, bool shapes) {
  int sec = shapes ? FT_STAT_OP_SHAPES : FT_STAT_OPS;
  for (int s = 0; s < 2; s++) {
    const ft_stats *st = &c->job[s]->total;
    for (size_t i = 0; i < st->rows[sec].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[sec], i);
      const char *name = ft__intern_str(&st->names, r->name_id);
      if (!strcmp(name, "(no op)") ? !r->self_ns : ft__diff_is_step_or_none(c, name)) continue;
      ft__pair *p = ft__pairing_get(pg, name, ft__intern_len(&st->names, r->name_id),
                                    shapes ? ft__intern_str(&st->names, r->aux_id) : NULL,
                                    shapes ? ft__intern_len(&st->names, r->aux_id) : 0);
      if (!p) return false;
      p->r[s] = r;
      p->v[s] = (double)r->self_ns * c->scale[s];
    }
  }
  return true;
}

/* Regressions first: by delta, largest first, then by key text (qsort_r: no global state). */
static int by_delta(const void *x, const void *y, void *arg) {
  const ft__pair *a = x, *b = y;
  const ft__pairing *pg = arg;
  double da = a->v[1] - a->v[0], db = b->v[1] - b->v[0];
  if (da != db) return da < db ? 1 : -1;
  return strcmp(ft__intern_str(&pg->keys, a->key), ft__intern_str(&pg->keys, b->key));
}
/* (diff_internal.h) */
void ft__diff_sort(ft__pairing *pg) {
  if (pg->n) qsort_r(pg->p, pg->n, sizeof *pg->p, by_delta, pg);
}

/* (diff_internal.h) */
bool ft__diff_report(ft__diff_ctx *c, int r, const char *key, const char *title, const ft_col *cols, int n_cols,
                     size_t n_rows) {
  ft_report *rep = &c->d->reps[r];
  ft_col *own = malloc((size_t)n_cols * sizeof *own);
  if (!own) return false;
  memcpy(own, cols, (size_t)n_cols * sizeof *own);
  for (int j = 0; j < n_cols; j++) /* per step: counts are averages */
    if (c->d->per_step && own[j].kind == COL_U64) own[j].kind = COL_F3;
  c->d->cols[r] = own;
  size_t cells = n_rows ? n_rows * (size_t)n_cols : 1;
  *rep = (ft_report){key, title, own, n_cols, calloc(cells, sizeof(ft_cell)), 0, NULL, malloc(cells), NULL};
  /* each cell its column's kind, but a ratio of a row one side only has (ft__diff_ratio_cell) */
  for (size_t i = 0; rep->kinds && i < cells; i++) rep->kinds[i] = (uint8_t)own[i % (size_t)n_cols].kind;
  return rep->cells && rep->kinds;
}

/* (diff_internal.h) a number into its cell, as its column's kind holds it */
void ft__diff_num(ft_report *rep, int j, double v) {
  ft_cell *cell = &rep->cells[rep->n_rows * (size_t)rep->n_cols + (size_t)j];
  if (rep->cols[j].kind == COL_U64) cell->u = v > 0 ? (uint64_t)(v + 0.5) : 0;
  else cell->d = v;
}
void ft__diff_str(ft_report *rep, int j, const char *s) {
  rep->cells[rep->n_rows * (size_t)rep->n_cols + (size_t)j].s = s;
}
double ft__diff_ratio(double a, double b) { return a > 0 ? b / a : 0; }
void ft__diff_ratio_cell(ft_report *rep, int j, int only, const char *words[2], double a, double b) {
  size_t at = rep->n_rows * (size_t)rep->n_cols;
  if (!only) {
    ft__diff_num(rep, j, ft__diff_ratio(a, b));
  } else { /* no ratio: null in json, empty in csv, the word in tables */
    rep->kinds[at + (size_t)j] = COL_NONE;
    rep->cells[at + (size_t)j].s = words[only - 1];
  }
  for (int k = 0; k < rep->n_cols; k++) /* the "only" flag: A, B, or none (null) */
    if (!strcmp(rep->cols[k].key, "only")) {
      rep->kinds[at + (size_t)k] = only ? COL_STR : COL_NONE;
      rep->cells[at + (size_t)k].s = only == 1 ? "A" : only == 2 ? "B" : NULL;
    }
}
bool ft__diff_keep(size_t k, size_t matched, size_t up, size_t down, size_t lim) {
  if (!lim) return true;
  return k <= (up < lim ? up : lim) || k > matched - (down < lim ? down : lim);
}

static const ft_col op_cols[] = {{"device_a_us", "Dev A(us)", COL_F3, 14},
                                 {"device_b_us", "Dev B(us)", COL_F3, 14},
                                 {"ratio", "B/A", COL_F3, 8},
                                 {"delta_us", "Delta(us)", COL_F3, 14},
                                 {"calls_a", "Calls A", COL_U64, 9},
                                 {"calls_b", "Calls B", COL_U64, 9},
                                 {"cpu_a_us", "CPU A(us)", COL_F3, 14},
                                 {"cpu_b_us", "CPU B(us)", COL_F3, 14},
                                 {"input_dims", "Input Dims", COL_STR, 0},
                                 {"name", "Name", COL_STR, 0}};
static const ft_col unmatched_cols[] = {
    {"side", "Side", COL_STR, -4},     {"device_us", "Dev(us)", COL_F3, 14},     {"calls", "Calls", COL_U64, 9},
    {"cpu_us", "CPU(us)", COL_F3, 14}, {"input_dims", "Input Dims", COL_STR, 0}, {"name", "Name", COL_STR, 0}};

/* A pair's name (or Input Dims) in the names of a job that has it: the reports outlive the pairing. */
static const char *key_part(const ft__diff_ctx *c, const ft__pair *p, bool second) {
  int s = p->r[0] ? 0 : 1;
  const ft_stat_row *r = p->r[s];
  return ft__intern_str(&c->job[s]->total.names, second ? r->aux_id : r->name_id);
}

/* The ops report (matched: the limit's regressions and improvements) and the unmatched one. */
static bool ops_reports(ft__diff_ctx *c, ft__pairing *pg, bool shapes) {
  ft__diff_sort(pg);
  size_t matched = 0, lim = c->o->limit, up = 0, down = 0;
  for (size_t i = 0; i < pg->n; i++)
    if (pg->p[i].r[0] && pg->p[i].r[1])
      matched++, up += pg->p[i].v[1] > pg->p[i].v[0], down += pg->p[i].v[1] < pg->p[i].v[0];
  int nc = shapes ? 10 : 9;
  ft_col cols[10];
  memcpy(cols, op_cols, sizeof cols);
  if (!shapes) cols[8] = cols[9];
  if (!ft__diff_report(c, FT_DIFF_OPS, "ops", "ops, A vs B (device time of the work each op launched)", cols, nc,
                       matched))
    return false;
  ft_report *rep = &c->d->reps[FT_DIFF_OPS];
  size_t k = 0;
  for (size_t i = 0; i < pg->n; i++) {
    ft__pair *p = &pg->p[i];
    if (!p->r[0] || !p->r[1]) continue;
    k++;
    if (!ft__diff_keep(k, matched, up, down, lim)) continue; /* the middle: small changes, none */
    ft__diff_num(rep, 0, p->v[0] / 1000.0);
    ft__diff_num(rep, 1, p->v[1] / 1000.0);
    ft__diff_num(rep, 2, ft__diff_ratio(p->v[0], p->v[1]));
    ft__diff_num(rep, 3, (p->v[1] - p->v[0]) / 1000.0);
    for (int s = 0; s < 2; s++) {
      ft__diff_num(rep, 4 + s, (double)p->r[s]->calls * c->scale[s]);
      ft__diff_num(rep, 6 + s, (double)p->r[s]->t.total * c->scale[s] / 1000.0);
    }
    if (shapes) ft__diff_str(rep, 8, key_part(c, p, true));
    ft__diff_str(rep, nc - 1, key_part(c, p, false));
    rep->n_rows++;
  }
  memcpy(cols, unmatched_cols, sizeof unmatched_cols);
  nc = shapes ? 6 : 5;
  if (!shapes) cols[4] = cols[5];
  if (!ft__diff_report(c, FT_DIFF_UNMATCHED, "unmatched", "ops only in A or only in B", cols, nc, pg->n - matched))
    return false;
  rep = &c->d->reps[FT_DIFF_UNMATCHED];
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < pg->n; i++) {
      const ft__pair *p = &pg->p[i];
      if (!p->r[s] || p->r[1 - s]) continue;
      ft__diff_str(rep, 0, s ? "B" : "A");
      ft__diff_num(rep, 1, p->v[s] / 1000.0);
      ft__diff_num(rep, 2, (double)p->r[s]->calls * c->scale[s]);
      ft__diff_num(rep, 3, (double)p->r[s]->t.total * c->scale[s] / 1000.0);
      if (shapes) ft__diff_str(rep, 4, key_part(c, p, true));
      ft__diff_str(rep, nc - 1, key_part(c, p, false));
      rep->n_rows++;
    }
  return true;
}

/* A side with nothing to compare: no ops, kernels, copies or sets. */
static bool empty_side(const ft_stat_job *j) {
  const ft_stats *st = &j->total;
  return !st->rows[FT_STAT_OPS].len && !st->rows[FT_STAT_KERNELS].len && !st->rows[FT_STAT_MEMORY].len;
}

/* Steps: which ranges, how many per side, and whether values become per step. */
static ft_status steps(ft__diff_ctx *c, char *err, size_t errlen) {
  ft_diff *d = c->d;
  const char *want = c->o->step;
  uint64_t ns[2];
  if (want && !strcmp(want, "all")) return FT_OK;
  snprintf(d->step_name, sizeof d->step_name, "%s", want ? want : "ProfilerStep");
  for (int s = 0; s < 2; s++) count_steps(&c->job[s]->total, d->step_name, &d->steps[s], &ns[s]);
  if (want && (!d->steps[0] || !d->steps[1]))
    return fail(err, errlen, "%s has no range named '%s' or '%s#N' (--step; ranges are user_annotation events)",
                !d->steps[0] ? "A" : "B", want, want);
  if (!want && !d->steps[0] != !d->steps[1])
    return fail(err, errlen,
                "%s has %llu ProfilerStep ranges and %s none: they cannot be aligned by step (--step all compares "
                "the whole traces)",
                d->steps[0] ? "A" : "B", (unsigned long long)(d->steps[0] ? d->steps[0] : d->steps[1]),
                d->steps[0] ? "B" : "A");
  if (!d->steps[0]) { /* neither has any: the whole traces */
    d->step_name[0] = '\0';
    return FT_OK;
  }
  c->step_ns[0] = ns[0], c->step_ns[1] = ns[1];
  d->per_step = d->steps[0] != d->steps[1];
  for (int s = 0; s < 2 && d->per_step; s++) c->scale[s] = 1.0 / (double)d->steps[s];
  return FT_OK;
}

ft_status ft_diff_build(ft_diff *d, const ft_stat_job *a, const ft_stat_job *b, const ft_diff_opts *o, char *err,
                        size_t errlen) {
  memset(d, 0, sizeof *d);
  ft__diff_ctx c = {d, {a, b}, o, {1.0, 1.0}, {0, 0}};
  for (int s = 0; s < 2; s++)
    if (empty_side(c.job[s]))
      return fail(err, errlen, "%s (%s%s) has no ops, kernels or copies to compare", s ? "B" : "A",
                  c.job[s]->n_files ? c.job[s]->files[0].path : "", c.job[s]->n_files > 1 ? " and others" : "");
  if (o->shapes)
    for (int s = 0; s < 2; s++)
      if (!c.job[s]->total.rows[FT_STAT_OP_SHAPES].len)
        return fail(err, errlen, "%s has no Input Dims (torch.profiler's record_shapes=True): no --shapes",
                    s ? "B" : "A");
  ft_status st = steps(&c, err, errlen);
  if (st) return st;
  ft__pairing pg;
  if (!ft__pairing_init(&pg) || !pair_ops(&c, &pg, o->shapes)) {
    ft__pairing_free(&pg);
    return FT_ENOMEM;
  }
  for (size_t i = 0; i < pg.n; i++) {
    const ft__pair *p = &pg.p[i];
    if (!strcmp(key_part(&c, p, false), "(no op)")) continue;
    d->ops[0] += p->r[0] != NULL, d->ops[1] += p->r[1] != NULL, d->ops_matched += p->r[0] && p->r[1];
  }
  uint64_t all = d->ops[0] + d->ops[1] - d->ops_matched;
  if (!o->force && (d->ops[0] || d->ops[1]) && d->ops_matched * 2 < all) {
    ft__pairing_free(&pg);
    return fail(err, errlen,
                "A and B do not look like one workload: %llu of %llu op names match (A %llu, B %llu; --force "
                "compares them anyway)",
                (unsigned long long)d->ops_matched, (unsigned long long)all, (unsigned long long)d->ops[0],
                (unsigned long long)d->ops[1]);
  }
  bool ok = ops_reports(&c, &pg, o->shapes);
  ft__pairing_free(&pg);
  if (ok)
    ok = steps_report(&c) && ft__diff_kernels(&c) && ft__diff_api(&c) && ft__diff_copies(&c) && ft__diff_memory(&c) &&
         ft__diff_summary(&c);
  if (!ok) {
    ft_diff_free(d);
    return FT_ENOMEM;
  }
  return FT_OK;
}

void ft_diff_free(ft_diff *d) {
  for (int r = 0; r < FT_DIFF_N; r++) {
    ft_report_free(&d->reps[r]);
    free(d->cols[r]);
    d->cols[r] = NULL;
  }
}
