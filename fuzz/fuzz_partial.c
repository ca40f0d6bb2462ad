/* libFuzzer harness for `stats --merge`'s partial reader: arbitrary bytes give a
 * merged job or a one-line error, never a crash, a hang or undefined behaviour; a
 * job read is reported in full, and written again it reads back to the same text
 * (a partial of a partial is itself). */
#define _GNU_SOURCE /* open_memstream */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports.h"
#include "stats.h"
#include "stats_out.h"

static char *partial_text(const ft_stat_job *job, uint64_t kept, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f || ft_stat_partial_write(f, job, kept)) abort();
  fclose(f);
  return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ft_stat_job job;
  uint64_t kept;
  char err[512] = "";
  ft_status s = ft_stat_job_merge_mem(&job, "fuzz.json", (const char *)data, size, false, true, &kept, err, sizeof err);
  if (s) {
    if (!err[0] || strchr(err, '\n')) abort(); /* one line that says what went wrong */
    ft_stat_job_free(&job);
    return 0;
  }
  bool rows = true;
  for (size_t i = 0; i < job.n_files; i++) rows = rows && job.files[i].own;
  /* every report of the job, as stats builds and prints them */
  FILE *null = fopen("/dev/null", "w");
  if (!null) abort();
  ft_summary_json(null, &job);
  ft_stat_job_notes(null, &job, "");
  for (int by_rank = 0; by_rank <= (int)rows; by_rank++)
    for (int r = 0; r < REP_N; r++) {
      ft_report rep;
      ft_report_opts o = {.reports = ~0u, .sort = SORT_MEDIAN, .limit = 0, .by_rank = by_rank};
      if (ft_report_build(&rep, r, &job, &o)) abort();
      ft_report_json(null, &rep);
      ft_report_free(&rep);
    }
  fclose(null);
  size_t n1, n2;
  char *t1 = partial_text(&job, kept, &n1);
  ft_stat_job again;
  uint64_t kept2;
  if (ft_stat_job_merge_mem(&again, "fuzz.json", t1, n1, false, true, &kept2, err, sizeof err)) abort();
  char *t2 = partial_text(&again, kept2, &n2);
  if (n1 != n2 || memcmp(t1, t2, n1)) abort();
  free(t1);
  free(t2);
  ft_stat_job_free(&again);
  ft_stat_job_free(&job);
  return 0;
}
