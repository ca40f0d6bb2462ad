/* libFuzzer harness for `flagtrace diff`: arbitrary trace bytes (two traces, split at the
 * first NUL) must align without a crash or a clean error; a trace against itself must give
 * no unmatched op and every delta 0, and the reports must go through every writer. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "stats_out.h"

static void write_all(const ft_diff *d) {
  FILE *null = fopen("/dev/null", "w");
  if (!null) return;
  ft_table_opts narrow = {.width = 40};
  for (int r = 0; r < FT_DIFF_N; r++) {
    if (!d->reps[r].key) continue; /* a report not made (memory: neither side has [memory] events) */
    ft_report_table(null, &d->reps[r], &narrow);
    ft_report_csv(null, &d->reps[r]);
    ft_report_json(null, &d->reps[r]);
  }
  fclose(null);
}

/* A cell's number (the diff's are doubles, or whole counts: the summary's by its cells' kinds). */
static double num(const ft_report *rep, size_t i, int j) {
  ft_cell c = rep->cells[i * (size_t)rep->n_cols + (size_t)j];
  ft_col tmp;
  int kind = ft_report_cell_col(rep, i, j, &tmp)->kind;
  return kind == COL_U64 ? (double)c.u : kind == COL_I64 ? (double)c.i : c.d;
}

static int col(const ft_report *rep, const char *key) {
  for (int j = 0; j < rep->n_cols; j++)
    if (!strcmp(rep->cols[j].key, key)) return j;
  return -1;
}

/* A against itself: nothing unmatched, both sides equal in every row. */
static void check_self(const ft_diff *d) {
  if (d->reps[FT_DIFF_UNMATCHED].n_rows || d->ops[0] != d->ops_matched || d->ops[1] != d->ops_matched) abort();
  static const char *const pairs[][2] = {
      {"device_a_us", "device_b_us"}, {"calls_a", "calls_b"}, {"a_us", "b_us"}, {"count_a", "count_b"}, {"a", "b"}};
  for (int r = 0; r < FT_DIFF_N; r++) {
    const ft_report *rep = &d->reps[r];
    int kernel = r == FT_DIFF_KERNELS && !d->kernels_by_name ? col(rep, "kernel") : -1;
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
      int a = col(rep, pairs[p][0]), b = col(rep, pairs[p][1]);
      for (size_t i = 0; a >= 0 && b >= 0 && i < rep->n_rows; i++) {
        /* as groups, each side's own kernels follow its group row, the other side 0 */
        if (kernel >= 0 && strcmp(rep->cells[i * (size_t)rep->n_cols + (size_t)kernel].s, "(all kernels)")) continue;
        if (num(rep, i, a) != num(rep, i, b)) abort();
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t na = nul ? (size_t)(nul - data) : size;
  const char *b = nul ? (const char *)nul + 1 : (const char *)data;
  size_t nb = nul ? size - na - 1 : size;
  ft_stat_read_opts ro = {.ops = true, .op_kernels = true};
  ft_stat_job ja, jb;
  char err[640];
  ft_status sa = ft_stat_job_read_mem(&ja, "a.json", (const char *)data, na, &ro, err, sizeof err);
  if (sa && !err[0]) abort();
  ft_status sb = ft_stat_job_read_mem(&jb, "b.json", b, nb, &ro, err, sizeof err);
  if (sb && !err[0]) abort();
  static const ft_diff_opts opts[] = {{0},
                                      {.step = "all", .kernels = FT_DIFF_KERNELS_GROUP, .limit = 2, .force = true},
                                      {.shapes = true, .kernels = FT_DIFF_KERNELS_NAME, .force = true},
                                      {.step = "x", .force = true}};
  for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
    ft_diff d;
    err[0] = '\0';
    if (!sa && !sb) {
      ft_status s = ft_diff_build(&d, &ja, &jb, &opts[k], err, sizeof err);
      if (s == FT_EINVAL && (!err[0] || strchr(err, '\n'))) abort(); /* a refusal is one line */
      if (!s) write_all(&d), ft_diff_free(&d);
    }
    if (!sa) {
      ft_diff_opts self = opts[k];
      self.limit = 0;
      ft_status s = ft_diff_build(&d, &ja, &ja, &self, err, sizeof err);
      if (!s) check_self(&d), write_all(&d), ft_diff_free(&d);
    }
  }
  ft_stat_job_free(&ja);
  ft_stat_job_free(&jb);
  return 0;
}
