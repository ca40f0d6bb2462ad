/* `flagtrace diff --by-step`: step N of A against step N of B, op by op in call order, on the event model
 * (docs/diff.md). */
#ifndef FLAGTRACE_ANALYSIS_DIFF_STEP_H
#define FLAGTRACE_ANALYSIS_DIFF_STEP_H

#include "model.h"
#include "reports.h"

typedef struct ft_diff_step_opts {
  size_t limit;     /* per step: the aligned ops whose time changed most; 0: every one */
  bool whole;       /* the whole traces as one step each (--step all) */
  const char *step; /* the user range the models' steps are (--step NAME), NULL: ProfilerStep#N */
} ft_diff_step_opts;

/* The by-step diff's reports, in the order they are written. */
enum { FT_DSTEP_STEPS, FT_DSTEP_OPS, FT_DSTEP_UNMATCHED, FT_DSTEP_N };

/* How steps were paired: by ProfilerStep#N number, by position (the k-th with the
 * k-th: the numbers differ), or the whole traces. */
enum { FT_DSTEP_BY_NUMBER, FT_DSTEP_BY_POSITION, FT_DSTEP_WHOLE };

typedef struct ft_diff_step {
  ft_report reps[FT_DSTEP_N];
  int by;                         /* FT_DSTEP_BY_* */
  size_t steps[2], steps_matched; /* steps of A, of B, paired */
  uint64_t ops[2], ops_matched;   /* top-level ops of the paired steps: of A, of B, aligned */
  uint64_t resyncs;               /* places where a name mismatch broke the alignment */
  size_t *ops_at, *unmatched_at;  /* per steps row k: its first row in ops / unmatched ([n_rows] the end) */
  size_t cap[FT_DSTEP_N];         /* rows allocated */
} ft_diff_step;

/* Pairs the steps of b with a's and, inside each pair, the top-level ops of each
 * thread in call order (the threads paired in the order of their first op in the
 * step). Names borrow from the models: free d before them. FT_EINVAL (err: one line)
 * when one side has steps and the other none; FT_ENOMEM. */
ft_status ft_diff_step_build(ft_diff_step *d, const ft_model *a, const ft_model *b, const ft_diff_step_opts *o,
                             char *err, size_t errlen);
void ft_diff_step_free(ft_diff_step *d);
const char *ft_diff_step_by_name(int by); /* "number", "position", "whole" */

#endif
