/* advise --partial / --merge files: per-rank advice through JSON and back field for field, hostile files refused, two
 * results compared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "advise_partial.h"

static ft_advise_finding finding(enum ft_rule r, const char *where, uint64_t cost, uint64_t count, double share,
                                 size_t n_occ) {
  ft_advise_finding f;
  memset(&f, 0, sizeof f);
  f.rule = r;
  snprintf(f.what, sizeof f.what, "%s under \"aten::item\"\t(tab)", where);
  snprintf(f.where, sizeof f.where, "%s", where);
  snprintf(f.suggestion, sizeof f.suggestion, "avoid it \\ or defer");
  f.cost_ns = cost, f.count = count, f.cost_share = share, f.n_occ = n_occ;
  f.occ = calloc(n_occ ? n_occ : 1, sizeof *f.occ);
  for (size_t i = 0; i < n_occ; i++)
    f.occ[i] = (ft_advise_occurrence){3, (int64_t)i, 1000000 + 17 * (int64_t)i, 250 + (int64_t)i,
                                      i == 1 ? FT_MODEL_NONE : (uint32_t)(40 + i)};
  return f;
}

/* A rank's advice with every field set to a value of its own. */
static void make(ft_advice *a, int64_t rank) {
  memset(a, 0, sizeof *a);
  a->n_steps = 2;
  a->steps = calloc(2, sizeof *a->steps);
  for (int s = 0; s < 2; s++) {
    ft_advise_step *x = &a->steps[s];
    *x = (ft_advise_step){.rank = rank,
                          .number = s ? 7 : -1,
                          .start = -5 + s,
                          .end = 1000003 + s,
                          .busy_ns = 11,
                          .compute_ns = 12,
                          .comm_ns = 13,
                          .copy_ns = 14,
                          .exposed_comm_ns = 19,
                          .idle_ns = 15,
                          .critical_path_ns = 16,
                          .hta_host_wait_ns = 17,
                          .hta_kernel_wait_ns = 18,
                          .hta_other_ns = UINT64_C(9007199254740993)};
    for (int c = 0; c < FT_IDLE_N; c++) x->idle[c] = 100 + (uint64_t)c;
  }
  a->n_findings = 3;
  a->findings = calloc(3, sizeof *a->findings);
  a->findings[0] = finding(FT_RULE_SYNC, "cudaStreamSynchronize", 123456, 9, 0.1234567890123456789, 3);
  a->findings[1] = finding(FT_RULE_LAUNCH_BOUND, "aten::add", 5000, 40, 1.0 / 3, 0);
  a->findings[2] = finding(FT_RULE_LOW_FLOPS, "aten::mm", 77, 1, 1e-9, 1);
}

static void assert_same(const ft_advice *x, const ft_advice *y) {
  assert_int_equal(x->n_steps, y->n_steps);
  for (size_t i = 0; i < x->n_steps; i++) assert_memory_equal(&x->steps[i], &y->steps[i], sizeof x->steps[i]);
  assert_int_equal(x->n_findings, y->n_findings);
  for (size_t i = 0; i < x->n_findings; i++) {
    const ft_advise_finding *a = &x->findings[i], *b = &y->findings[i];
    assert_int_equal(a->rule, b->rule);
    assert_string_equal(a->what, b->what);
    assert_string_equal(a->where, b->where);
    assert_string_equal(a->suggestion, b->suggestion);
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->cost_ns, b->cost_ns);
    assert_true(a->cost_share == b->cost_share); /* %.17g: the same double */
    assert_int_equal(a->n_occ, b->n_occ);
    for (size_t k = 0; k < a->n_occ; k++) { /* field by field: the struct has padding */
      const ft_advise_occurrence *o = &a->occ[k], *q = &b->occ[k];
      assert_true(o->rank == q->rank && o->step == q->step && o->ts == q->ts && o->dur == q->dur);
      assert_int_equal(o->slice, q->slice);
    }
  }
}

static char *write_text(const ft_advise_partial *p, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  assert_int_equal(ft_advise_partial_write(f, p), FT_OK);
  fclose(f);
  return buf;
}

static void round_trip(void **state) {
  (void)state;
  ft_advise_partial p = {.n = 2, .whole_trace = false};
  ft_advise_opts_default(&p.opts);
  p.opts.gap_ns = 250000, p.opts.min_share = 0.025, p.opts.fuse_min_len = 4;
  p.has_opts = true;
  p.step = strdup("train step");
  p.parts = calloc(2, sizeof *p.parts);
  make(&p.parts[0].advice, 3);
  make(&p.parts[1].advice, 4);
  p.parts[0].file = strdup("rank3.json.gz"), p.parts[0].rank = 3;
  p.parts[1].file = strdup("dir/rank \"4\".json"), p.parts[1].rank = 1, p.parts[1].positional = true;
  size_t len;
  char *text = write_text(&p, &len);
  ft_advise_partial q = {0};
  char err[256] = "";
  assert_int_equal(ft_advise_partial_read_mem(text, len, &q, err, sizeof err), FT_OK);
  assert_int_equal(q.n, 2);
  assert_string_equal(q.step, "train step");
  assert_true(q.has_opts && !q.whole_trace);
  assert_int_equal(q.opts.gap_ns, 250000);
  assert_true(q.opts.min_share == 0.025);
  assert_int_equal(q.opts.fuse_min_len, 4);
  for (int i = 0; i < 2; i++) {
    assert_string_equal(q.parts[i].file, p.parts[i].file);
    assert_int_equal(q.parts[i].positional, i == 1); /* written as null: the rank of a position */
    if (i == 0) assert_int_equal(q.parts[i].rank, 3);
    assert_same(&p.parts[i].advice, &q.parts[i].advice);
  }
  /* a second file of the same job appends; one of other options is refused and adds nothing */
  assert_int_equal(ft_advise_partial_read_mem(text, len, &q, err, sizeof err), FT_OK);
  assert_int_equal(q.n, 4);
  assert_same(&p.parts[1].advice, &q.parts[3].advice);
  p.opts.gap_ns = 1;
  char *other = write_text(&p, &len);
  assert_int_equal(ft_advise_partial_read_mem(other, len, &q, err, sizeof err), FT_EINVAL);
  assert_string_equal(err, "advise JSON: advised with other options than the files before it");
  assert_int_equal(q.n, 4);
  free(text), free(other);
  ft_advise_partial_free(&p);
  ft_advise_partial_free(&q);
}

static void refuses(void **state) {
  (void)state;
  static const struct {
    const char *text, *err;
  } cases[] = {
      {"{\"schemaVersion\":1,\"traceEvents\":[]}", "advise JSON: a trace, not advice"},
      {"{\"schema\":2,\"findings\":[]}", "advise JSON: advise JSON schema 2, this flagtrace reads schema 1"},
      {"{\"schema\":1,\"steps\":[]}", "advise JSON: not advise JSON (no \"schema\" and \"findings\")"},
      {"[1,2]", "advise JSON: not advise JSON: the text is not an object"},
      {"{\"schema\":1,\"findings\":[{\"rule\":\"nap\"}]}", "advise JSON: unknown rule \"nap\""},
      {"{\"schema\":1,\"findings\":[{\"cost_ns\":5}]}", "advise JSON: a finding without a known \"rule\""},
      {"{\"schema\":1,\"findings\":[{\"rule\":\"sync\",\"count\":-1}]}", "advise JSON: \"count\" is not a count"},
      {"{\"schema\":1,\"findings\":[", "advise JSON: not JSON (truncated JSON (the document ends early) at byte 24)"},
      /* found by fuzz/fuzz_advise_partial.c: a step whose wall time is no time (its writer overflowed on it),
       * a share a write cannot give back, a rule's name that would break the error's line */
      {"{\"schema\":1,\"findings\":[],\"steps\":[{\"start_ns\":5,\"end_ns\":4}]}",
       "advise JSON: a step that ends before it starts"},
      {"{\"schema\":1,\"findings\":[{\"rule\":\"sync\",\"share\":1e999}]}",
       "advise JSON: \"share\" is too long or not a finite number"},
      {"{\"schema\":1,\"findings\":[{\"rule\":\"na\\np\"}]}", "advise JSON: unknown rule \"na\\np\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ft_advise_partial q = {0};
    char err[256] = "";
    assert_int_not_equal(ft_advise_partial_read_mem(cases[i].text, strlen(cases[i].text), &q, err, sizeof err), FT_OK);
    assert_string_equal(err, cases[i].err);
    assert_int_equal(q.n, 0);
    ft_advise_partial_free(&q);
  }
}

/* `advise -f json` (the CLI's: us, a "rank" per finding, nested idle) read as one part. */
static void reads_cli_json(void **state) {
  (void)state;
  const char *text =
      "{\"schema\": 1, \"step_name\": null, \"files\": [{\"file\": \"a.json\", \"rank\": 0}],"
      " \"steps\": [{\"rank\": 0, \"step\": 1, \"start_us\": 1.5, \"idle_by_cause\": {\"sync_us\": 2}}],"
      " \"findings_total\": 2, \"findings\": ["
      "{\"rule\": \"sync\", \"rank\": 0, \"cost_us\": 1234.567, \"share\": 0.25, \"count\": 3,"
      " \"where\": \"cudaDeviceSynchronize\", \"what\": \"w\", \"suggestion\": \"s\","
      " \"occurrences\": [{\"rank\": 0, \"step\": 1, \"ts_us\": 5.0, \"dur_us\": 1.0}]},"
      "{\"rule\": \"gap\", \"rank\": 0, \"cost_us\": 0.001, \"share\": 0.0, \"count\": 1,"
      " \"where\": \"x\", \"what\": \"\", \"suggestion\": \"\", \"occurrences\": []}]}";
  ft_advise_partial q = {0};
  char err[256] = "";
  assert_int_equal(ft_advise_partial_read_mem(text, strlen(text), &q, err, sizeof err), FT_OK);
  assert_int_equal(q.n, 1);
  assert_int_equal(q.parts[0].advice.n_findings, 2);
  assert_int_equal(q.parts[0].advice.findings[0].cost_ns, 1234567);
  assert_int_equal(q.parts[0].advice.findings[0].rule, FT_RULE_SYNC);
  assert_int_equal(q.parts[0].advice.findings[0].n_occ, 1);
  assert_int_equal(q.parts[0].advice.findings[1].cost_ns, 1);
  assert_int_equal(q.parts[0].advice.n_steps, 1);
  assert_int_equal(q.parts[0].advice.steps[0].number, 1);
  ft_advise_partial_free(&q);
}

static void add(ft_advise_partial *p, enum ft_rule r, const char *where, uint64_t cost) {
  ft_advice *a = &p->parts[p->n - 1].advice;
  a->findings = realloc(a->findings, (a->n_findings + 1) * sizeof *a->findings);
  a->findings[a->n_findings++] = finding(r, where, cost, 1, 0.5, 0);
}

static void compare(void **state) {
  (void)state;
  ft_advise_partial a = {.n = 2}, b = {.n = 1};
  a.parts = calloc(2, sizeof *a.parts), b.parts = calloc(1, sizeof *b.parts);
  add(&b, FT_RULE_SYNC, "cudaDeviceSynchronize", 9000); /* grew: 2000 + 3000 on two ranks in A */
  add(&b, FT_RULE_GAP, "aten::copy_", 700);             /* new */
  add(&b, FT_RULE_FUSE, "k1;k2;k3", 100500);            /* same: 0.5 % off at a 1 % tolerance */
  add(&b, FT_RULE_H2D_COPY, "cudaMemcpy", 1000);        /* shrank */
  add(&a, FT_RULE_SYNC, "cudaDeviceSynchronize", 3000);
  add(&a, FT_RULE_FUSE, "k1;k2;k3", 100000);
  add(&a, FT_RULE_H2D_COPY, "cudaMemcpy", 50000);
  add(&a, FT_RULE_STEP_START, "enumerate(DataLoader)", 42); /* gone */
  a.n = 1;
  add(&a, FT_RULE_SYNC, "cudaDeviceSynchronize", 2000);
  a.n = 2;
  ft_advise_delta *d;
  size_t n;
  assert_int_equal(ft_advise_compare(&a, &b, 0.01, &d, &n), FT_OK);
  assert_int_equal(n, 5);
  const char *want[][3] = {{"new", "gap", "aten::copy_"},
                           {"grew", "sync", "cudaDeviceSynchronize"},
                           {"shrank", "h2d-copy", "cudaMemcpy"},
                           {"same", "fuse", "k1;k2;k3"},
                           {"gone", "step-start", "enumerate(DataLoader)"}};
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(ft_advise_change_name(d[i].change), want[i][0]);
    assert_string_equal(d[i].rule, want[i][1]);
    assert_string_equal(d[i].where, want[i][2]);
  }
  assert_int_equal(d[1].cost_a, 5000);
  assert_int_equal(d[1].cost_b, 9000);
  assert_int_equal(d[1].count_a, 2);
  assert_int_equal(d[4].cost_b, 0);
  free(d);
  ft_advise_partial_free(&a);
  ft_advise_partial_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(round_trip), cmocka_unit_test(refuses),
                                     cmocka_unit_test(reads_cli_json), cmocka_unit_test(compare)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
