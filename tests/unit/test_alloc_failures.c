/* Out of memory in the stats path is an error value or the very same output, never a
 * crash, a leak or a quietly different result: the k-th malloc/calloc/realloc of a
 * trace read, a report's build, its table and a partial summary's write fails, for
 * every k until a run makes fewer than k calls (the libraries' calls, linked with --wrap).
 * FT_SHOW=1 prints both results where they differ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report.h"
#include "model.h"
#include "reports.h"
#include "stats.h"
#include "stats_out.h"
#include "test_support.h"

/* Only this executable's objects (the test and the static libraries) are wrapped:
 * libc's and cmocka's own allocations never fail. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
static atomic_long fail_at = -1; /* the call that fails, counted from 0; -1: none */
static atomic_long calls;

static int fails(void) {
  long at = atomic_load(&fail_at);
  return at >= 0 && atomic_fetch_add(&calls, 1) == at;
}
void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n) { return fails() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size) { return fails() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n) { return fails() ? NULL : __real_realloc(p, n); }

/* Ends the injection (a step calls it before rendering what it made). */
static void stop_failing(void) { atomic_store(&fail_at, -1); }

/* A step: the operation under test (failing at fail_at), then stop_failing() and, on
 * success, its result rendered into *out (malloc'd); returns 0 on success, else its
 * error, which must be an out-of-memory one. */
typedef int (*step_fn)(void *ctx, char **out);

/* Runs step with no failure, then with allocation k failing for k = 0, 1, ...: each
 * run either fails or renders exactly what the first did. Returns how many
 * allocations a whole run makes. */
static long every_failure(const char *what, step_fn step, void *ctx) {
  char *want = NULL;
  stop_failing();
  if (step(ctx, &want)) fail_msg("%s: failed with no allocation failing", what);
  for (long k = 0;; k++) {
    char *got = NULL;
    atomic_store(&calls, 0);
    atomic_store(&fail_at, k);
    int rc = step(ctx, &got);
    stop_failing();
    int hit = atomic_load(&calls) > k;
    if (!rc && strcmp(got, want) && getenv("FT_SHOW")) fprintf(stderr, "WANT:\n%s\nGOT:\n%s\n", want, got);
    if (!rc && strcmp(got, want)) fail_msg("%s: allocation %ld failed and the result differs, with no error", what, k);
    free(got);
    if (!hit) {
      if (rc) fail_msg("%s: no allocation failed, yet it failed (k = %ld)", what, k);
      free(want);
      return k;
    }
  }
}

static ft_stat_job job;

static int read_job(void **state) {
  (void)state;
  const char *dir = getenv("FT_TEST_DATA");
  static char path[4096]; /* the job keeps the pointer */
  char err[512];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", "sample_h200.json.gz");
  const char *paths[] = {path};
  ft_stat_read_opts o = {.trace_limit = SIZE_MAX,
                         .hta = true,
                         .ops = true,
                         .modules = true,
                         .op_kernels = true,
                         .source = true,
                         .memory = true};
  ft_status s = ft_stat_job_read(&job, paths, 1, &o, err, sizeof err);
  if (s) fail_msg("%s", err);
  return 0;
}

static int free_job(void **state) {
  (void)state;
  ft_stat_job_free(&job);
  return 0;
}

/* Everything a job prints: the summary and every report as a table. */
static char *render(const ft_stat_job *j) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  ft_summary_json(f, j);
  ft_stat_job_notes(f, j, "! ");
  for (int r = 0; r < REP_N; r++) {
    ft_report rep;
    ft_report_opts o = {.reports = ~0u, .sort = SORT_TOTAL, .by_rank = j->n_files && j->files[0].own};
    assert_int_equal(ft_report_build(&rep, r, j, &o), FT_OK);
    ft_table_opts to = {0, 0, FT_UNIT_US};
    assert_int_equal(ft_report_table(f, &rep, &to), 0);
    ft_report_free(&rep);
  }
  fclose(f);
  return buf;
}

static char *trace_data;
static size_t trace_len;

static int read_step(void *ctx, char **out) {
  bool model = ctx != NULL; /* through the event model: read into it, then replayed (stats --engine=model) */
  ft_stat_job j;
  char err[512];
  ft_stat_read_opts o = {.trace_limit = 100,
                         .by_rank = true,
                         .hta = true,
                         .ops = true,
                         .modules = true,
                         .op_kernels = true,
                         .timeline = true,
                         .memory = true, /* the memory accumulator's ops and calls (issue 51) */
                         .model = model};
  ft_status s = ft_stat_job_read_mem(&j, "sample_h200.json.gz", trace_data, trace_len, &o, err, sizeof err);
  stop_failing();
  if (s != FT_OK && s != FT_ENOMEM) fail_msg("read: status %d, not FT_ENOMEM: %s", (int)s, err);
  if (!s) *out = render(&j);
  ft_stat_job_free(&j);
  return s;
}

/* A trace read (gzip, parse, every analysis on). */
static void test_read(void **state) {
  (void)state;
  const char *dir = getenv("FT_TEST_DATA");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", "sample_h200.json.gz");
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  trace_data = malloc(1 << 24);
  assert_non_null(trace_data);
  trace_len = fread(trace_data, 1, 1 << 24, f);
  fclose(f);
  assert_true(every_failure("trace read", read_step, NULL) >= 20); /* failures were tried */
  /* the same through the event model, whose result is the streaming read's */
  char *stream = NULL, *model = NULL;
  assert_int_equal(read_step(NULL, &stream), 0);
  assert_int_equal(read_step(&trace_len, &model), 0);
  assert_string_equal(stream, model);
  free(stream), free(model);
  long k = every_failure("trace read through the model", read_step, &trace_len);
  assert_true(k >= 40);
  free(trace_data);
}

/* [memory] instants (issue 51): the accumulator, its live table, the model's rows, the mem report. */
static const char MEM_TRACE[] =
    "{\"traceEvents\": ["
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 1, \"tid\": 1, \"ts\": 0,"
    " \"dur\": 100},"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::empty\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 40,"
    " \"args\": {\"External id\": 4}},"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMalloc\", \"pid\": 1, \"tid\": 1, \"ts\": 25, \"dur\": "
    "10,"
    " \"args\": {\"correlation\": 9, \"External id\": 4}},"
    "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 30, \"args\": {\"Device Type\": 1,"
    " \"Device Id\": 0, \"Addr\": 1, \"Bytes\": 100, \"Total Allocated\": 100, \"Total Reserved\": 4096}},"
    "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 5, \"ts\": 31, \"args\": {\"Device Type\": 1,"
    " \"Device Id\": 1, \"Addr\": 2, \"Bytes\": 7, \"correlation\": 9, \"Op\": \"alloc\"}},"
    "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 40, \"args\": {\"Device Type\": 1,"
    " \"Device Id\": 0, \"Addr\": 1, \"Bytes\": -100}},"
    "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 50, \"args\": {\"Device Type\": 1,"
    " \"Device Id\": 0, \"Addr\": 3, \"Bytes\": 64}},"
    "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 60, \"args\": {\"Bytes\": \"x\"}}"
    "]}";

static void test_read_memory(void **state) {
  (void)state;
  trace_data = (char *)MEM_TRACE;
  trace_len = strlen(MEM_TRACE);
  char *stream = NULL, *model = NULL;
  assert_int_equal(read_step(NULL, &stream), 0);
  assert_non_null(strstr(stream, "peak_allocated"));
  assert_int_equal(read_step(&trace_len, &model), 0);
  assert_string_equal(stream, model);
  free(stream), free(model);
  assert_true(every_failure("a [memory] trace read", read_step, NULL) >= 20);
  assert_true(every_failure("a [memory] trace read through the model", read_step, &trace_len) >= 20);
  trace_data = NULL;
}

static int partial_step(void *ctx, char **out) {
  (void)ctx;
  size_t len;
  FILE *f = open_memstream(out, &len);
  assert_non_null(f);
  ft_status s = ft_stat_partial_write(f, &job, 3);
  stop_failing();
  fclose(f);
  if (s != FT_OK && s != FT_ENOMEM) fail_msg("partial write: status %d, not FT_ENOMEM", (int)s);
  if (s) free(*out), *out = NULL;
  return s;
}

static void test_partial_write(void **state) {
  (void)state;
  assert_true(every_failure("partial write", partial_step, NULL) >= 5);
}

static char *partial_doc;

static int merge_step(void *ctx, char **out) {
  (void)ctx;
  ft_stat_job j;
  char err[512];
  uint64_t kept = 0;
  ft_status s =
      ft_stat_job_merge_mem(&j, "p.json", partial_doc, strlen(partial_doc), false, false, &kept, err, sizeof err);
  stop_failing();
  if (s != FT_OK && s != FT_ENOMEM) fail_msg("merge: status %d, not FT_ENOMEM: %s", (int)s, err);
  if (!s) *out = render(&j);
  ft_stat_job_free(&j);
  return s;
}

/* A partial summary read back (stats --merge). */
static void test_merge(void **state) {
  (void)state;
  char *doc = NULL;
  assert_int_equal(partial_step(NULL, &doc), FT_OK);
  partial_doc = doc;
  assert_true(every_failure("partial merge", merge_step, NULL) >= 20);
  free(doc);
}

typedef struct {
  int r;
  const ft_report *rep;
} report_ctx;

static int build_step(void *ctx, char **out) {
  const report_ctx *c = ctx;
  ft_report rep;
  ft_report_opts o = {.reports = ~0u, .sort = SORT_MEDIAN};
  ft_status s = ft_report_build(&rep, c->r, &job, &o);
  stop_failing();
  if (s != FT_OK && s != FT_ENOMEM) fail_msg("report %s: status %d, not FT_ENOMEM", ft_report_names[c->r], (int)s);
  if (!s) {
    size_t len;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    ft_report_csv(f, &rep);
    fclose(f);
  }
  ft_report_free(&rep);
  return s;
}

static int table_step(void *ctx, char **out) {
  const report_ctx *c = ctx;
  size_t len;
  FILE *f = open_memstream(out, &len);
  assert_non_null(f);
  ft_table_opts to = {60, 0, FT_UNIT_US}; /* narrow: names are cut, columns left out */
  int rc = ft_report_table(f, c->rep, &to);
  stop_failing();
  fclose(f);
  if (rc) free(*out), *out = NULL;
  return rc;
}

static void test_reports_and_tables(void **state) {
  (void)state;
  long most = 0;
  for (int r = 0; r < REP_N; r++) {
    report_ctx c = {r, NULL};
    char what[96];
    snprintf(what, sizeof what, "report %s", ft_report_names[r]);
    every_failure(what, build_step, &c);
    ft_report rep;
    ft_report_opts o = {.reports = ~0u, .sort = SORT_TOTAL};
    assert_int_equal(ft_report_build(&rep, r, &job, &o), FT_OK);
    c.rep = &rep;
    snprintf(what, sizeof what, "table of report %s", ft_report_names[r]);
    long n = every_failure(what, table_step, &c);
    if (n > most) most = n;
    ft_report_free(&rep);
  }
  assert_true(most >= 3); /* some table allocated: its failures were tried */
}

/* The HTML report of a trace with device memory: its timeline, its memory tracks and its
 * Advice panel (advise run on the models) each fail as out of memory or write the same page. */
static ft_report_input page_in;

static int page_step(void *ctx, char **out) {
  (void)ctx;
  size_t len;
  FILE *f = open_memstream(out, &len);
  assert_non_null(f);
  ft_status s = ft_report_html_groups(f, &page_in, 1, NULL, NULL, 0, NULL);
  stop_failing();
  fclose(f);
  if (s != FT_OK && s != FT_ENOMEM) fail_msg("report page: status %d, not FT_ENOMEM", (int)s);
  if (s) free(*out), *out = NULL;
  return s;
}

static void test_report_page(void **state) {
  (void)state;
  const char *dir = getenv("FT_TEST_DATA");
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", "torch_memory_h100.json.gz");
  const char *paths[] = {path};
  char err[512];
  if (ft_report_input_read(&page_in, paths, 1, err, sizeof err)) fail_msg("%s", err);
  assert_int_equal(page_in.tl.models[0].n_mem, 90);
  char *page = NULL;
  assert_int_equal(page_step(NULL, &page), 0);
  assert_non_null(strstr(page, "\"mem\": [\n  {\"device\": 0, \"type\": 1, \"n\": 90"));
  free(page);
  assert_true(every_failure("report page", page_step, NULL) >= 20);
  ft_report_input_free(&page_in);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_read),  cmocka_unit_test(test_read_memory),        cmocka_unit_test(test_partial_write),
      cmocka_unit_test(test_merge), cmocka_unit_test(test_reports_and_tables), cmocka_unit_test(test_report_page),
  };
  return cmocka_run_group_tests(tests, read_job, free_job);
}
