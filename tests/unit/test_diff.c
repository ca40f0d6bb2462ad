/* diff's analysis: device work to the op of its External id (either order, nested ops,
 * none), steps, per-step values, kernels by name or as groups, refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

/* Reads a trace given as its events' JSON (one string) with diff's options. */
static void read_job(ft_stat_job *job, const char *events) {
  char *doc = NULL;
  assert_true(asprintf(&doc, "{\"traceEvents\": [%s]}", events) > 0);
  ft_stat_read_opts ro = {.ops = true, .op_kernels = true};
  char err[640];
  ft_status s = ft_stat_job_read_mem(job, "t.json", doc, strlen(doc), &ro, err, sizeof err);
  if (s) fail_msg("%s", err);
  free(doc);
}

#define OP(name, ts, dur, ext)                                                                              \
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts ",\"dur\":" #dur \
  ",\"args\":{\"External id\":" #ext "}}"
#define KERNEL(name, ts, dur, ext)                                                                          \
  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"pid\":0,\"tid\":7,\"ts\":" #ts ",\"dur\":" #dur \
  ",\"args\":{\"External id\":" #ext ",\"stream\":7}}"
#define LONE_KERNEL(name, ts, dur) \
  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"pid\":0,\"tid\":7,\"ts\":" #ts ",\"dur\":" #dur "}"
#define STEP(n, ts, dur)                                                                                       \
  "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" #n "\",\"pid\":1,\"tid\":1,\"ts\":" #ts \
  ",\"dur\":" #dur "}"

/* FT_STAT_OP_KERNELS: rows (op, kernel) -> count and ns. */
static const ft_stat_row *op_kernel(const ft_stat_job *j, const char *op, const char *kernel) {
  const ft_stats *st = &j->total;
  for (size_t i = 0; i < st->rows[FT_STAT_OP_KERNELS].len; i++) {
    const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_OP_KERNELS], i);
    if (!strcmp(ft__intern_str(&st->names, r->name_id), op) && !strcmp(ft__intern_str(&st->names, r->aux_id), kernel))
      return r;
  }
  return NULL;
}

static void work_to_its_op(void **state) {
  (void)state;
  ft_stat_job j;
  /* aten::linear holds aten::addmm (the innermost op, External id 2): its kernels go to
   * addmm, read before it (id 2) or after (id 3); work of an id no op has, and work with
   * none, to "(no op)" */
  read_job(&j, KERNEL("gemm", 20, 5, 2) "," OP("aten::linear", 0, 100, 1) "," OP("aten::addmm", 10, 50, 2) "," OP(
                   "aten::addmm", 200, 50,
                   3) "," KERNEL("gemm", 220, 7, 3) "," KERNEL("gemm", 230, 1,
                                                               3) "," KERNEL("orphan", 300, 4,
                                                                             99) "," LONE_KERNEL("lone", 310, 6));
  const ft_stat_row *r = op_kernel(&j, "aten::addmm", "gemm");
  assert_non_null(r);
  assert_int_equal(r->t.n, 3);
  assert_int_equal(r->t.total, 13000);
  assert_null(op_kernel(&j, "aten::linear", "gemm"));
  assert_int_equal(op_kernel(&j, "(no op)", "orphan")->t.total, 4000);
  assert_int_equal(op_kernel(&j, "(no op)", "lone")->t.total, 6000);
  assert_int_equal(j.total.rows[FT_STAT_OP_KERNELS].len, 3);
  ft_stat_job_free(&j);
}

static const ft_report *rep_of(const ft_diff *d, int r) { return &d->reps[r]; }
static ft_cell cell(const ft_report *rep, size_t i, const char *key) {
  for (int j = 0; j < rep->n_cols; j++)
    if (!strcmp(rep->cols[j].key, key)) return rep->cells[i * (size_t)rep->n_cols + (size_t)j];
  fail_msg("no column %s", key);
  return (ft_cell){0};
}

static void steps_and_groups(void **state) {
  (void)state;
  ft_stat_job a, b;
  /* A: 1 step, aten::mm with one kernel of 10 us; B: 2 steps, each aten::mm with two kernels of 10 us */
  read_job(&a, STEP(1, 0, 100) "," OP("aten::mm", 10, 20, 1) "," KERNEL("sm90_gemm", 30, 10, 1));
  read_job(&b, STEP(1, 0, 100) "," OP("aten::mm", 10, 20, 1) "," KERNEL("mublas_gemm", 30, 10, 1) "," KERNEL(
                   "mublas_reduce", 40, 10, 1) "," STEP(2, 200, 300) "," OP("aten::mm", 210, 20,
                                                                            2) "," KERNEL("mublas_gemm", 230, 10,
                                                                                          2) "," KERNEL("mublas_reduce",
                                                                                                        240, 10, 2));
  ft_diff d;
  char err[256];
  ft_diff_opts o = {0};
  assert_int_equal(ft_diff_build(&d, &a, &b, &o, err, sizeof err), FT_OK);
  assert_string_equal(d.step_name, "ProfilerStep");
  assert_true(d.per_step);
  assert_int_equal(d.steps[0], 1);
  assert_int_equal(d.steps[1], 2);
  assert_false(d.kernels_by_name);
  const ft_report *ops = rep_of(&d, FT_DIFF_OPS);
  assert_int_equal(ops->n_rows, 1);
  assert_string_equal(cell(ops, 0, "name").s, "aten::mm");
  assert_true(cell(ops, 0, "device_a_us").d == 10.0 && cell(ops, 0, "device_b_us").d == 20.0); /* per step */
  assert_true(cell(ops, 0, "ratio").d == 2.0 && cell(ops, 0, "calls_b").d == 1.0);
  const ft_report *k = rep_of(&d, FT_DIFF_KERNELS); /* the group, A's kernel, B's two */
  assert_int_equal(k->n_rows, 4);
  assert_string_equal(cell(k, 0, "kernel").s, "(all kernels)");
  assert_true(cell(k, 0, "count_a").d == 1.0 && cell(k, 0, "count_b").d == 2.0);
  assert_true(cell(k, 0, "mean_a_us").d == 10.0 && cell(k, 0, "mean_b_us").d == 10.0);
  assert_string_equal(cell(k, 1, "kernel").s, "sm90_gemm");
  assert_true(cell(k, 1, "count_b").d == 0.0);
  const ft_report *s = rep_of(&d, FT_DIFF_SUMMARY);
  assert_string_equal(cell(s, 1, "metric").s, "step_time");
  assert_true(cell(s, 1, "a").d == 100.0 && cell(s, 1, "b").d == 200.0);
  ft_diff_free(&d);
  /* by name when asked: nothing matches across vendors */
  o.kernels = FT_DIFF_KERNELS_NAME;
  assert_int_equal(ft_diff_build(&d, &a, &b, &o, err, sizeof err), FT_OK);
  assert_int_equal(rep_of(&d, FT_DIFF_KERNELS)->n_rows, 3);
  ft_diff_free(&d);
  /* a step range one side lacks */
  o = (ft_diff_opts){.step = "train"};
  assert_int_equal(ft_diff_build(&d, &a, &b, &o, err, sizeof err), FT_EINVAL);
  assert_non_null(strstr(err, "A has no range named 'train'"));
  ft_stat_job_free(&a);
  ft_stat_job_free(&b);
}

static void limit_keeps_both_ends(void **state) {
  (void)state;
  ft_stat_job a, b;
  /* five ops: B slower on op1 and op2 (by 5 and 4 us), faster on op4 and op5, equal on op3 */
  read_job(
      &a, OP("op1", 0, 5, 1) "," KERNEL("k", 1, 10, 1) "," OP("op2", 10, 5, 2) "," KERNEL("k", 11, 10, 2) "," OP(
              "op3", 20, 5, 3) "," KERNEL("k", 21, 10, 3) "," OP("op4", 30, 5,
                                                                 4) "," KERNEL("k", 31, 10,
                                                                               4) "," OP("op5", 40, 5,
                                                                                         5) "," KERNEL("k", 41, 10, 5));
  read_job(&b,
           OP("op1", 0, 5, 1) "," KERNEL("k", 1, 15, 1) "," OP("op2", 10, 5, 2) "," KERNEL("k", 11, 14, 2) "," OP(
               "op3", 20, 5, 3) "," KERNEL("k", 21, 10, 3) "," OP("op4", 30, 5,
                                                                  4) "," KERNEL("k", 31, 8,
                                                                                4) "," OP("op5", 40, 5,
                                                                                          5) "," KERNEL("k", 41, 1, 5));
  ft_diff d;
  char err[256];
  ft_diff_opts o = {.limit = 1};
  assert_int_equal(ft_diff_build(&d, &a, &b, &o, err, sizeof err), FT_OK);
  const ft_report *ops = rep_of(&d, FT_DIFF_OPS);
  assert_int_equal(ops->n_rows, 2);
  assert_string_equal(cell(ops, 0, "name").s, "op1");
  assert_string_equal(cell(ops, 1, "name").s, "op5");
  assert_true(cell(ops, 1, "delta_us").d == -9.0);
  assert_true(d.kernels_by_name);
  const ft_report *k = rep_of(&d, FT_DIFF_KERNELS); /* the kernels of the ops shown */
  assert_int_equal(k->n_rows, 2);
  assert_string_equal(cell(k, 1, "op").s, "op5");
  ft_diff_free(&d);
  ft_stat_job_free(&a);
  ft_stat_job_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(work_to_its_op), cmocka_unit_test(steps_and_groups),
                                     cmocka_unit_test(limit_keeps_both_ends)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
