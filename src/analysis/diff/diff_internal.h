/* What diff's files share: the build's context and the helpers that fill report rows. */
#ifndef FLAGTRACE_ANALYSIS_DIFF_INTERNAL_H
#define FLAGTRACE_ANALYSIS_DIFF_INTERNAL_H

#include "diff.h"
#include "diff_pair.h"

typedef struct ft__diff_ctx {
  ft_diff *d;
  const ft_stat_job *job[2];
  const ft_diff_opts *o;
  double scale[2];     /* 1, or 1 / steps when values are per step */
  uint64_t step_ns[2]; /* the step ranges' CPU time */
} ft__diff_ctx;

/* "(no op)", ProfilerStep#N and the --step ranges: not ops of their own. */
bool ft__diff_is_step_or_none(const ft__diff_ctx *c, const char *name);
/* Sorts pairs by v[1] - v[0], largest first, then by key. */
void ft__diff_sort(ft__pairing *pg);
/* Report r with a copy of cols (counts per step when d->per_step), cells for n_rows. */
bool ft__diff_report(ft__diff_ctx *c, int r, const char *key, const char *title, const ft_col *cols, int n_cols,
                     size_t n_rows);
/* Cell j of the row being filled (rep->n_rows). */
void ft__diff_num(ft_report *rep, int j, double v);
void ft__diff_str(ft_report *rep, int j, const char *s);
double ft__diff_ratio(double a, double b); /* b / a; 0 when a is 0 */
/* Cell j, the row's ratio b / a; for a row of one side only (only: 1 A, 2 B) no ratio
 * (null in json, empty in csv) and words[only - 1] in tables ("gone", "new"). The
 * report's "only" column, where it has one, says "A", "B" or nothing (null). */
void ft__diff_ratio_cell(ft_report *rep, int j, int only, const char *words[2], double a, double b);
/* Whether the k-th (from 1) of matched pairs sorted by delta, largest first, is shown
 * under --limit lim: among the first lim of the up that grew, or the last lim of the
 * down that shrank; an unchanged one only when lim is 0 (every pair). */
bool ft__diff_keep(size_t k, size_t matched, size_t up, size_t down, size_t lim);

/* diff_kernels.c: the kernels of each op side by side, runtime calls, copies, the summary. */
bool ft__diff_kernels(ft__diff_ctx *c);
bool ft__diff_copies(ft__diff_ctx *c);
bool ft__diff_api(ft__diff_ctx *c);
bool ft__diff_summary(ft__diff_ctx *c);
/* diff_memory.c: the memory report, when either side has [memory] events (else left unbuilt). */
bool ft__diff_memory(ft__diff_ctx *c);

#endif
