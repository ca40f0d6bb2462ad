/* The reports of `flagtrace stats`, built once and written as a table, csv, json or into the HTML report. */
#ifndef FLAGTRACE_CLI_STATS_OUT_H
#define FLAGTRACE_CLI_STATS_OUT_H

#include <stdio.h>

#include "stats.h"

/* Column kinds: how a cell is formatted (the same digits in every format). */
enum { COL_STR, COL_U64, COL_I64, COL_US, COL_PCT, COL_F3 };

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
} ft_report;

enum {
  REP_KERNELS, REP_API, REP_MEMORY, REP_MEMSIZE, REP_RANGES, REP_GPU_RANGES, REP_OPS, REP_GPU, REP_RANKS, REP_TRACE,
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

/* Writers. name_width: table names are cut to it (0: never cut). */
void ft_report_table(FILE *f, const ft_report *rep, size_t name_width);
void ft_report_csv(FILE *f, const ft_report *rep);
void ft_report_json(FILE *f, const ft_report *rep); /* the array */
void ft_json_string(FILE *f, const char *s);
void ft_csv_field(FILE *f, const char *s); /* quoted, quotes doubled */

/* The job's header: per-file notes (device activity off, dropped, discarded),
 * skipped and unknown events. As json members ("files": [...], ...), or lines. */
void ft_summary_json(FILE *f, const ft_stat_job *job);
void ft_summary_lines(FILE *f, const ft_stat_job *job, const char *prefix);
/* Number of notes (files whose trace says it is incomplete). */
size_t ft_summary_notes(const ft_stat_job *job);

/* An output file written beside its name and renamed into place when complete,
 * so a failed run never leaves a partial report under the name (special files,
 * /dev/stdout say, are written in place). */
typedef struct ft_outfile {
  char *path, *tmp;
  FILE *f;
} ft_outfile;
FILE *ft_outfile_open(ft_outfile *o, const char *path, char *err, size_t errlen);
/* Closes o; renames it into place when commit, else removes it. 0 or -1 (err set). */
int ft_outfile_close(ft_outfile *o, bool commit, char *err, size_t errlen);

#endif
