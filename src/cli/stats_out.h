/* The reports of `flagtrace stats`, built once and written as a table, csv, json or into the HTML report. */
#ifndef FLAGTRACE_CLI_STATS_OUT_H
#define FLAGTRACE_CLI_STATS_OUT_H

#include <stdio.h>

#include "out_file.h"
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

/* An output file of the CLI: the core's ft__ofile behind a FILE, so every file the
 * command writes keeps one policy (src/core/out_file.h: symlinks followed, modes
 * kept, devices and FIFOs written through, renamed into place when complete). */
typedef struct ft_outfile {
  ft__ofile file;
  FILE *f;
  int err; /* the errno of the first write that failed */
} ft_outfile;
/* Opens path; NULL with err set (nothing is left behind). */
FILE *ft_outfile_open(ft_outfile *o, const char *path, char *err, size_t errlen);
/* Flushes and closes o's FILE: 0, or -1 with err naming the write's failure. */
int ft_outfile_flush(ft_outfile *o, char *err, size_t errlen);
/* Flushes every file, then renames them into place together, only if all were
 * written (ft__ofile_commit_set); otherwise none is left. 0 or -1 with err set. */
int ft_outfile_commit(ft_outfile *os, size_t n, char *err, size_t errlen);
/* Closes and removes o's temporary file; safe after commit or a failed open. */
void ft_outfile_discard(ft_outfile *o);

/* Checks the n files of one output (a set is committed together), before any
 * input is read: an existing regular file is refused unless force (nsys's
 * convention; *exists then says so), as is anything out_file.h refuses. 0, or -1
 * with err one line naming the file. Nothing is opened: a temporary file exists
 * only while the output is written, not through a long read a ^C may end. */
int ft_outputs_check(const char *const *names, size_t n, bool force, bool *exists, char *err, size_t errlen);
/* Checks again (a file may have appeared meanwhile), then opens all n; on failure
 * -1 with err set and nothing opened or created. */
int ft_outputs_open(ft_outfile *files, const char *const *names, size_t n, bool force, bool *exists, char *err,
                    size_t errlen);

/* The table form of a name: its control characters escaped (ft__visible). */
void ft_put_visible(FILE *f, const char *s);

#endif
