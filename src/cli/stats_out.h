/* The reports of `flagtrace stats`, built once and written as a table, csv, json or into the HTML report. */
#ifndef FLAGTRACE_CLI_STATS_OUT_H
#define FLAGTRACE_CLI_STATS_OUT_H

#include <stdio.h>

#include "out_file.h"
#include "reports.h"
#include "stats.h"

/* The unit of time columns (keys and titles name it: total_ms, Total(ms)); us is
 * the reports' own. Every unit keeps nanosecond digits (ns 0, us 3, ms 6, s 9). */
enum { FT_UNIT_NS, FT_UNIT_US, FT_UNIT_MS, FT_UNIT_S, FT_UNIT_N };
int ft_unit_parse(const char *s); /* FT_UNIT_*, or -1 */
/* A column's csv/json key (key) or table title in unit. */
void ft_col_label(char *buf, size_t cap, const ft_col *col, int unit, bool key);
/* A number cell's text (the same digits in every format). */
void ft_cell_text(char *buf, size_t cap, const ft_col *col, ft_cell c, int unit);

/* The table (stats_table.c): columns as wide as their title and widest cell; with
 * a width, columns left out (named in a line under the table) and names elided
 * in the middle ("...") so that distinct names read differently. -1 without
 * memory (nothing written). */
typedef struct ft_table_opts {
  size_t width;      /* the widest line wanted; 0: no limit (every column, whole names) */
  size_t name_width; /* names cut to it; 0: what the width leaves */
  int unit;          /* FT_UNIT_* */
} ft_table_opts;
int ft_report_table(FILE *f, const ft_report *rep, const ft_table_opts *o);
/* The width tables fit on stdout: the terminal's, else $COLUMNS on a terminal that
 * gives none (80 without either); 0 (no limit) when stdout is not a terminal. */
size_t ft_table_width(void);
/* csv (sep ',': quoted strings) or tsv (sep '\t': strings escaped as tables show them). */
void ft_report_delim(FILE *f, const ft_report *rep, char sep, int unit);
void ft_report_csv(FILE *f, const ft_report *rep);  /* csv in us */
void ft_report_json(FILE *f, const ft_report *rep); /* the array, in us */
void ft_report_json_unit(FILE *f, const ft_report *rep, int unit);
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

/* The job's lines for stderr, each after prefix: the events skipped and why (one
 * line), names cut, devices past the cap, and files that claim the same rank. */
void ft_stat_job_notes(FILE *f, const ft_stat_job *job, const char *prefix);

/* The table form of a name: its control characters escaped (ft__visible). */
void ft_put_visible(FILE *f, const char *s);

#endif
