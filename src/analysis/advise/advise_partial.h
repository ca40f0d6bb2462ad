/* advise --partial / --merge: per-rank advice written as JSON and read back, so a job's ranks can be advised apart. */
#ifndef FLAGTRACE_ANALYSIS_ADVISE_PARTIAL_H
#define FLAGTRACE_ANALYSIS_ADVISE_PARTIAL_H

#include <stdio.h>

#include "advise.h"

/* The per-rank file (docs/advise.md "Jobs beyond one machine"):
 *   {"schema":1,"partial":true,"step":null,"whole_trace":false,"opts":{...},
 *    "ranks":[{"file":"...","rank":0,"steps":[...],"findings":[...]}, ...]}
 * Steps and findings carry every field of ft_advise_step / ft_advise_finding in ns, so
 * that ft_advise_job on the ranks read back gives what it gives on the ranks in memory. */
#define FT_ADVISE_JSON_SCHEMA 1

typedef struct ft_advise_part {
  ft_advice advice;
  char *file; /* malloc'd; NULL when not named */
  int64_t rank;
  bool positional; /* the trace named no rank: rank is its position, written as null (--merge renumbers) */
} ft_advise_part;

typedef struct ft_advise_partial {
  ft_advise_part *parts;
  size_t n;
  ft_advise_opts opts;
  bool has_opts;
  char *step;       /* the --step the ranks were advised with, NULL: ProfilerStep#N */
  bool whole_trace; /* no file had steps */
  size_t files_read;
} ft_advise_partial;

ft_status ft_advise_partial_write(FILE *f, const ft_advise_partial *p);

/* Reads a partial, or one `advise -f json` result ({"schema":1,...,"findings":[...]}: one
 * part; its findings' "cost_us" read as ns), appending its parts to p (zeroed before the
 * first). Partials of different opts or --step are refused. FT_EINVAL with a one-line err
 * for a file that is not one (a trace: "a trace, not advice"). */
ft_status ft_advise_partial_read(const char *path, ft_advise_partial *p, char *err, size_t errlen);
ft_status ft_advise_partial_read_mem(const char *data, size_t len, ft_advise_partial *p, char *err, size_t errlen);
void ft_advise_partial_free(ft_advise_partial *p);

/* Two advise results compared finding by finding (keyed by rule + where; the costs are
 * summed over the ranks' findings of the same key). */
enum ft_advise_change { FT_ADV_NEW, FT_ADV_GREW, FT_ADV_SHRANK, FT_ADV_SAME, FT_ADV_GONE };
typedef struct ft_advise_delta {
  const char *rule, *where; /* point into the advices compared */
  uint64_t cost_a, cost_b;  /* ns per step, 0 on the side without it */
  uint64_t count_a, count_b;
  double share_a, share_b;
  enum ft_advise_change change;
} ft_advise_delta;
/* Rows ordered new, grew, shrank, same, gone; within each by |cost_b - cost_a|, largest first.
 * A change of at most tolerance (a fraction of cost_a) and 1 us is "same". *out: malloc'd. */
ft_status ft_advise_compare(const ft_advise_partial *a, const ft_advise_partial *b, double tolerance,
                            ft_advise_delta **out, size_t *n_out);
const char *ft_advise_change_name(enum ft_advise_change c); /* "new", "grew", "shrank", "same", "gone" */

#endif
