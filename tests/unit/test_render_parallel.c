/* Unit tests: a trace's body rendered on several threads is byte for byte the serial one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deflate.h"
#include "internal.h"
#include "test_support.h"

enum { LO = 1000000, HI = 90000000, TID = 42 };

static void inject(ft_session *s, ft_event_kind kind, uint64_t start, uint64_t end, uint32_t corr, uint32_t stream,
                   const char *name, size_t n_md) {
  static const ft_kv md[] = {{"grid", "[2, 1, 1]"}, {"note", "N/A \"q\"\n"}, {"bytes", "4096"}};
  ft_device_event ev = {.kind = kind,
                        .start_ns = start,
                        .end_ns = end,
                        .correlation_id = corr,
                        .has_external_id = corr % 3 != 0,
                        .external_id = corr / 4,
                        .device = corr % 2,
                        .stream = stream,
                        .thread_id = TID,
                        .name = name,
                        .metadata = md,
                        .n_metadata = n_md};
  assert_int_equal(ft__session_inject(s, &ev), FT_OK);
}

static void range(ft_session *s, const char *name, uint64_t start, uint64_t end, uint64_t id, bool user) {
  uint32_t name_id;
  assert_int_equal(ft__intern(&s->store.names, name, strlen(name), &name_id), FT_OK);
  assert_int_equal(ft__store_add_range(&s->store, name_id, start, end, id, TID), FT_OK);
  if (user) ((ft__event *)ft__vec_at(&s->store.events, s->store.events.len - 1))->flags |= FT__F_USER_RANGE;
}

/* Steps of a training loop in store order, so that any cut falls somewhere
 * interesting: a user range and a CPU range around each step, launches whose
 * kernels come events later (other launches between), a graph replay's three
 * nodes after its launch, a kernel stored before its launch, a copy with no
 * launch, and events outside the window at both ends. */
static ft_session *loop_session(int steps) {
  static const char *const names[] = {"gemm<float>", "reduce \"sum\"\\", "fill\xc3\xa9", "bad\xff"};
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft__session_set_window(s, LO, HI);
  inject(s, FT_EVENT_KERNEL, LO - 500, LO + 10, 1, 7, "early", 0); /* straddles the start */
  uint32_t corr = 10;
  for (int k = 0; k < steps; k++) {
    uint64_t t = LO + 1000 + (uint64_t)k * 20000;
    range(s, "ProfilerStep#", t, t + 19000, (uint64_t)k + 1, true);
    range(s, k % 2 ? "aten::mm" : "aten::add_", t + 10, t + 9000, (uint64_t)k + 1, false);
    uint32_t a = corr++, b = corr++, g = corr++, pre = corr++;
    inject(s, FT_EVENT_RUNTIME, t + 100, t + 200, a, 0, "cudaLaunchKernel", 1);
    inject(s, FT_EVENT_KERNEL, t + 250, t + 300, pre, 7, names[k % 4], 3); /* before its launch */
    inject(s, FT_EVENT_RUNTIME, t + 300, t + 400, b, 0, "cudaLaunchKernel", 1);
    inject(s, FT_EVENT_RUNTIME, t + 420, t + 430, pre, 0, "cudaLaunchKernel", 0);
    inject(s, FT_EVENT_KERNEL, t + 1000, t + 2000, a, 7, names[k % 3], 3);
    inject(s, FT_EVENT_DRIVER, t + 2100, t + 2200, g, 0, "cuGraphLaunch", 0);
    for (uint32_t n = 0; n < 3; n++)
      inject(s, FT_EVENT_KERNEL, t + 3000 + n * 500, t + 3400 + n * 500, g, 8 + n, names[n], 2);
    inject(s, FT_EVENT_KERNEL, t + 5000, t + 6000, b, 7, names[(k + 1) % 4], 3);
    inject(s, FT_EVENT_MEMCPY, t + 7000, t + 7100, 0, 9, "Memcpy HtoD", 2);
    if (k % 5 == 4) inject(s, FT_EVENT_KERNEL, HI - 10, HI + 10, corr++, 7, "late", 0); /* outside */
  }
  return s;
}

/* The session's trace with the body on workers threads in chunks of chunk events
 * (workers 0: serially), as plain text (gzip inflated); *started: workers run. */
static char *render(ft_session *s, bool gz, int workers, size_t chunk, size_t *len, int *started) {
  ft__render_split(workers, chunk);
  ft__out *o;
  assert_int_equal(ft__out_open_mem(&o, gz), FT_OK);
  assert_int_equal(ft__write_trace(s, o, NULL), FT_OK);
  *started = ft__render_split(-1, 0);
  const char *m = ft__out_mem(o, len);
  char *text = gz ? ft_test_gunzip(m, *len, len) : malloc(*len + 1);
  assert_non_null(text);
  if (!gz) memcpy(text, m, *len);
  ft__out_abort(o);
  return text;
}

static void assert_same(const char *a, size_t na, const char *b, size_t nb, const char *what) {
  size_t i = 0;
  while (i < na && i < nb && a[i] == b[i]) i++;
  if (i < na || i < nb)
    fail_msg("%s: differs at byte %zu of %zu/%zu: serial '%.60s' parallel '%.60s'", what, i, na, nb, a + i, b + i);
}

static void test_parallel_bytes_equal_serial(void **state) {
  (void)state;
  ft_session *s = loop_session(40); /* 40 * 13 events and then some */
  size_t n_serial;
  int started;
  char *serial = render(s, false, 0, 0, &n_serial, &started);
  assert_int_equal(started, 0);
  /* the serial trace is the one the structure above describes */
  char err[256];
  yajl_val doc = ft_test_parse_json(serial, n_serial, err, sizeof err);
  if (!doc) fail_msg("not JSON: %s", err);
  assert_non_null(ft_test_find_x(doc, "gpu_user_annotation", "ProfilerStep#", 39));
  assert_non_null(ft_test_find_x(doc, "gpu_user_annotation", "aten::mm", 19));
  assert_null(ft_test_find_x(doc, "kernel", "late", 0));
  yajl_tree_free(doc);
  static const size_t chunks[] = {1, 2, 3, 5, 7, 13, 64, 1000};
  static const int workers[] = {1, 2, 3, 8};
  for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
    for (size_t w = 0; w < sizeof workers / sizeof *workers; w++) {
      for (int gz = 0; gz < 2; gz++) {
        char what[96];
        snprintf(what, sizeof what, "chunk %zu, %d workers, %s", chunks[c], workers[w], gz ? "gzip" : "json");
        size_t n;
        char *par = render(s, gz, workers[w], chunks[c], &n, &started);
        assert_same(serial, n_serial, par, n, what);
        /* as many workers as asked, if there are chunks enough for them */
        size_t n_chunks = (s->store.events.len + chunks[c] - 1) / chunks[c];
        int expect = (size_t)workers[w] < n_chunks ? workers[w] : (int)n_chunks - 1;
        if (started != expect) fail_msg("%s: %d workers started, %d expected", what, started, expect);
        free(par);
      }
    }
  }
  free(serial);
  ft_session_destroy(s);
}

/* Large enough for the default split (32 k events and more): the default path
 * with FLAGOS_TRACE_RENDER_THREADS=2 starts two workers, =0 none, and the bytes
 * are the same; a small trace stays on the calling thread. */
/* A gzip write's default deflate workers leave the other half of the spare CPUs to the
 * renderer: deflate taking all of them rendered on the calling thread alone. */
static void test_gzip_leaves_cpus_to_render(void **state) {
  (void)state;
  const int cpus[] = {0, 1, 2, 3, 4, 8, 9, 16, 17, 64}, want[] = {0, 0, 1, 1, 2, 4, 4, 8, 8, 8};
  for (size_t i = 0; i < sizeof cpus / sizeof *cpus; i++) assert_int_equal(ft__gz_default_workers(cpus[i]), want[i]);
}

static void test_default_split_by_env(void **state) {
  (void)state;
  ft_session *s = loop_session(4000);
  size_t n0, n2;
  int started;
  setenv("FLAGOS_TRACE_RENDER_THREADS", "0", 1);
  char *serial = render(s, false, -1, 0, &n0, &started);
  assert_int_equal(started, 0);
  setenv("FLAGOS_TRACE_RENDER_THREADS", "2", 1);
  char *par = render(s, false, -1, 0, &n2, &started);
  assert_int_equal(started, 2);
  assert_same(serial, n0, par, n2, "default chunks, 2 workers");
  free(serial);
  free(par);
  /* unset: the CPUs less the caller and the output's deflate workers, at most 8 */
  unsetenv("FLAGOS_TRACE_RENDER_THREADS");
  int cpus = ft__cpus() - 1 > 8 ? 8 : ft__cpus() - 1;
  free(render(s, false, -1, 0, &n2, &started));
  assert_int_equal(started, cpus);
  /* gzip by default: deflate takes half the spare CPUs (rounded up), rendering the rest */
  free(render(s, true, -1, 0, &n2, &started));
  int spare = ft__cpus() - 1 - ft__gz_default_workers(ft__cpus());
  assert_int_equal(started, spare > 8 ? 8 : spare);
  setenv("FLAGOS_TRACE_GZIP_THREADS", "0", 1);
  free(render(s, true, -1, 0, &n2, &started));
  assert_int_equal(started, cpus);
  setenv("FLAGOS_TRACE_GZIP_THREADS", "1", 1);
  free(render(s, true, -1, 0, &n2, &started));
  assert_int_equal(started, ft__cpus() - 2 > 8 ? 8 : ft__cpus() - 2 < 0 ? 0 : ft__cpus() - 2);
  unsetenv("FLAGOS_TRACE_GZIP_THREADS");
  setenv("FLAGOS_TRACE_RENDER_THREADS", "2", 1);
  ft_session_destroy(s);
  s = loop_session(2000); /* 26 k events */
  free(render(s, false, -1, 0, &n2, &started));
  assert_int_equal(started, 0);
  unsetenv("FLAGOS_TRACE_RENDER_THREADS");
  ft_session_destroy(s);
}

int main(void) {
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent/libcupti.so", 1);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_parallel_bytes_equal_serial),
                                     cmocka_unit_test(test_default_split_by_env),
                                     cmocka_unit_test(test_gzip_leaves_cpus_to_render)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
