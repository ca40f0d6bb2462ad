/* `flagtrace diff`: two jobs (runs, accelerators) aligned by step, op and kernel into report rows (docs/diff.md). */
#ifndef FLAGTRACE_ANALYSIS_DIFF_H
#define FLAGTRACE_ANALYSIS_DIFF_H

#include "reports.h"
#include "stats.h"

enum { FT_DIFF_KERNELS_AUTO, FT_DIFF_KERNELS_NAME, FT_DIFF_KERNELS_GROUP };

typedef struct ft_diff_opts {
  const char *step; /* NULL: ProfilerStep#N when both sides have them, else the whole trace;
                     * "all": the whole trace; else a user range's name (NAME or NAME#N) */
  bool shapes;      /* ops keyed by name and Input Dims (record_shapes) */
  int kernels;      /* FT_DIFF_KERNELS_*: by name inside an op, or as a group (across vendors) */
  size_t limit;     /* regressions and improvements shown, each; 0: every op */
  bool force;       /* compare even when the sides do not look like one workload */
} ft_diff_opts;

/* The diff's reports, in the order they are written. */
enum {
  FT_DIFF_SUMMARY,
  FT_DIFF_STEPS,
  FT_DIFF_OPS,
  FT_DIFF_UNMATCHED,
  FT_DIFF_KERNELS,
  FT_DIFF_API,
  FT_DIFF_COPIES,
  FT_DIFF_MEMORY, /* peaks and per-op memory (diff_memory.c); key NULL: neither side has [memory] events */
  FT_DIFF_N
};

typedef struct ft_diff {
  ft_report reps[FT_DIFF_N];
  ft_col *cols[FT_DIFF_N];             /* owned copies: a calls column is whole or per step */
  char step_name[128];                 /* the step ranges' name ("ProfilerStep"), "" for the whole trace */
  uint64_t steps[2];                   /* step ranges of A and B */
  bool per_step;                       /* values are per step (the sides ran different numbers of steps) */
  bool kernels_by_name;                /* kernels matched by name (one vendor), else compared per op as a group */
  uint64_t ops[2], ops_matched;        /* distinct op keys of A, of B, of both (steps and "(no op)" left out) */
  uint64_t kernels[2], kernels_shared; /* distinct kernel names of A, of B, of both */
} ft_diff;

/* Aligns job b against job a (both read with ops and op_kernels). On input that
 * cannot be compared (a side with nothing to compare, a step range missing on one
 * side, two workloads) FT_EINVAL with a one-line reason in err; FT_ENOMEM.
 * The reports borrow names from both jobs: free d before them. */
ft_status ft_diff_build(ft_diff *d, const ft_stat_job *a, const ft_stat_job *b, const ft_diff_opts *o, char *err,
                        size_t errlen);
void ft_diff_free(ft_diff *d);

#endif
