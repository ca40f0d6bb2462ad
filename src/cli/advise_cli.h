/* `flagtrace advise` and `stats -r advice`: the traces' advice read, ranked and written (table, json, csv, a report).
 */
#ifndef FLAGTRACE_CLI_ADVISE_CLI_H
#define FLAGTRACE_CLI_ADVISE_CLI_H

#include <stdio.h>

#include "advise.h"
#include "reports.h"

/* A finding of the whole output: one rank's (its file's rank) or the job's (the rank
 * its first occurrence names: the straggler; -1 when none). */
typedef struct ft_cli_finding {
  const ft_advise_finding *f;
  int64_t rank;
} ft_cli_finding;

/* Every file's advice, the job's when there are two or more, and all findings ranked. */
typedef struct ft_cli_advice {
  size_t n_files;
  const char *const *paths; /* borrowed */
  int64_t *ranks;           /* the trace's rank, else its position */
  bool *positional;         /* the trace named no rank: ranks[i] is its position (--partial says so) */
  ft_advice *per;           /* n_files */
  ft_advice job;            /* 2+ files: the cross-rank part (stragglers) */
  bool has_job;
  const char *step;       /* --step, NULL: ProfilerStep#N */
  bool whole_trace;       /* no file had steps: each step is the whole trace (number -1) */
  ft_cli_finding *ranked; /* by cost per step, largest first */
  size_t n_ranked;
  struct ft_cli_file_job *jobs; /* while files are read: each one's state (advise_run.c) */
} ft_cli_advice;

/* Reads each file into the model (files in parallel, one thread each up to the
 * core count), advises each, then the job. The first failing file's error in err
 * (one line, its name first): FT_ENOMEM, or another status for input that cannot
 * be advised (unreadable, not a trace, --step naming no range). */
ft_status ft_cli_advice_read(ft_cli_advice *a, const char *const *paths, size_t n, const char *step,
                             const ft_advise_opts *o, char *err, size_t errlen);
void ft_cli_advice_free(ft_cli_advice *a);
/* As ft_cli_advice_read on models already read (the report's, default step): each advised, then the job. */
ft_status ft_cli_advice_models(ft_cli_advice *a, const ft_model *models, const char *const *paths, size_t n,
                               const ft_advise_opts *o, char *err, size_t errlen);
/* The same from models another read builds (stats -r advice: the stats read's own parse,
 * ft_stat_read_opts.on_model): begin before that read, on_model (ctx: a) for each file's
 * model as the read hands it over (the file's reading thread; the model's rank set as
 * stats sets it), end after the read (the first failing file's error, "path: reason";
 * the job's part). On_model's err: the reason alone (the read names the file). */
ft_status ft_cli_advice_begin(ft_cli_advice *a, const char *const *paths, size_t n, const char *step,
                              const ft_advise_opts *o);
struct ft_model;
ft_status ft_cli_advice_on_model(void *a, size_t file, struct ft_model *m, char *err, size_t errlen);
ft_status ft_cli_advice_end(ft_cli_advice *a, const ft_advise_opts *o, char *err, size_t errlen);
/* After per, ranks and n_files are set: the job's part (2+ files) and the findings ranked. */
ft_status ft_cli_advice_finish(ft_cli_advice *a, const ft_advise_opts *o, char *err, size_t errlen);

/* advise --partial / --merge (advise_partial_cli.c; the file: advise_partial.h). */
struct ft_advise_partial;
ft_status ft_cli_advice_write_partial(FILE *f, const ft_cli_advice *a, const ft_advise_opts *o);
/* The partials at paths read into a (per-rank advice moved from *p, which keeps the names
 * a borrows: free p after a), the job's part reduced on them; o: the partials' options. */
ft_status ft_cli_advice_merge(ft_cli_advice *a, struct ft_advise_partial *p, const char *const *paths, size_t n,
                              ft_advise_opts *o, char *err, size_t errlen);
/* Its second half: the partials already read into p (a file's parts at their positions
 * in p), then the same (fuzz/fuzz_advise_partial.c reads from memory). */
ft_status ft_cli_advice_take(ft_cli_advice *a, struct ft_advise_partial *p, ft_advise_opts *o, char *err,
                             size_t errlen);

/* The findings as report rows: rank, rule, cost per step, share, count, where, what,
 * suggestion; at most top of them (0: all). full false: without what and suggestion
 * (advise's table writes them under it). */
extern const char ft_cli_advice_key[]; /* the report's key: "advice" */
ft_status ft_cli_advice_report(ft_report *rep, const ft_cli_advice *a, size_t top, bool full);

/* advise's outputs (docs/advise.md "## Output"): width 0 is no limit. */
int ft_cli_advice_table(FILE *f, const ft_cli_advice *a, size_t width, size_t top);
/* The table's findings part alone (stats -r advice's table): ranked rows, then each one's what and fix. */
int ft_cli_advice_findings(FILE *f, const ft_cli_advice *a, size_t width, size_t top, int unit);
void ft_cli_advice_json(FILE *f, const ft_cli_advice *a, size_t top);
int ft_cli_advice_csv(FILE *f, const ft_cli_advice *a, size_t top);

/* `diff A B` where A and B are advise results (advise_compare.c): 1 when it handled
 * them (*rc: the exit status), 0 when they are for diff's own parse (traces). */
int ft_cli_diff_advice(int argc, char **argv, int *rc);

#endif
