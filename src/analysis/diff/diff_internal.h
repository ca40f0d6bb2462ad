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

/* diff_kernels.c: the kernels of each op side by side, runtime calls, copies, the summary. */
bool ft__diff_kernels(ft__diff_ctx *c);
bool ft__diff_copies(ft__diff_ctx *c);
bool ft__diff_api(ft__diff_ctx *c);
bool ft__diff_summary(ft__diff_ctx *c);
/* diff_memory.c: the memory report, when either side has [memory] events (else left unbuilt). */
bool ft__diff_memory(ft__diff_ctx *c);

#endif
