/* The reports of a job (analysis layer): rows of typed cells that stats, report and the Python API show. */
#ifndef FLAGTRACE_ANALYSIS_REPORTS_H
#define FLAGTRACE_ANALYSIS_REPORTS_H

#include "stats.h"

/* Column kinds: how a cell is formatted (the same digits in every format). */
enum {
  COL_STR,
  COL_U64,
  COL_I64,
  COL_US,
  COL_PCT,
  COL_F3,
  COL_NONE
}; /* COL_NONE: a cell without a value (ft_report.kinds
only): empty in tables and csv, null in json */

typedef struct ft_col {
  const char *key;   /* csv/json name, unit included (total_us) */
  const char *title; /* the table's header */
  int kind, width;
} ft_col;

typedef union ft_cell {
  const char *s;
  uint64_t u;
  int64_t i;
  double d;
} ft_cell;

typedef struct ft_report {
  const char *key, *title;
  const ft_col *cols;
  int n_cols;
  ft_cell *cells; /* n_rows * n_cols */
  size_t n_rows;
  char *strs; /* owned strings (file names are borrowed) */
  /* NULL: a cell has its column's kind; else each cell's kind (n_rows * n_cols), for
   * a report whose rows hold different things (diff's summary: counts and times) */
  uint8_t *kinds;
  ft_col *own_cols; /* cols when the report made them (the ops' memory columns), freed with it */
} ft_report;

/* Cell (i, j)'s column, its kind the cell's own (tmp holds a copy when it differs). */
static inline const ft_col *ft_report_cell_col(const ft_report *rep, size_t i, int j, ft_col *tmp) {
  if (!rep->kinds || rep->kinds[i * (size_t)rep->n_cols + (size_t)j] == rep->cols[j].kind) return &rep->cols[j];
  *tmp = rep->cols[j];
  tmp->kind = rep->kinds[i * (size_t)rep->n_cols + (size_t)j];
  return tmp;
}

enum {
  REP_KERNELS,
  REP_API,
  REP_MEMOPS,
  REP_MEMSIZE,
  REP_RANGES,
  REP_GPU_RANGES,
  REP_OPS,
  REP_OPS_SHAPES,
  REP_OPS_MODULES,
  REP_GPU,
  REP_RANKS,
  REP_TRACE,
  REP_TEMPORAL,
  REP_OVERLAP,
  REP_LAUNCH,
  REP_QUEUE,  /* HTA's analyses (reports_hta.c): asked for only */
  REP_MEMORY, /* device memory from [memory] instants (reports_memory.c): asked for only */
  REP_N
};
extern const char *const ft_report_names[REP_N];

typedef struct ft_report_opts {
  unsigned reports; /* 1 << REP_* */
  int sort;         /* SORT_* */
  size_t limit;     /* rows per report, 0: all */
  bool by_rank;
} ft_report_opts;

enum { SORT_TOTAL, SORT_COUNT, SORT_AVG, SORT_MEDIAN, SORT_MIN, SORT_MAX, SORT_STDDEV, SORT_NAME, SORT_N };
extern const char *const ft_sort_names[SORT_N];

/* Builds report r of the job (by_rank: one set of rows per file, a rank column). */
ft_status ft_report_build(ft_report *rep, int r, const ft_stat_job *job, const ft_report_opts *o);
void ft_report_free(ft_report *rep);
/* reports_hta.c: the REP_TEMPORAL..REP_QUEUE reports (a job read with hta kept). */
ft_status ft__report_hta_build(ft_report *rep, int r, const ft_stat_job *job, const ft_report_opts *o);
#define FT_REP_HTA ((1u << REP_TEMPORAL) | (1u << REP_OVERLAP) | (1u << REP_LAUNCH) | (1u << REP_QUEUE))
/* reports_memory.c: REP_MEMORY (a job read with memory kept) */
ft_status ft__report_memory_build(ft_report *rep, const ft_stat_job *job, const ft_report_opts *o);

#endif
