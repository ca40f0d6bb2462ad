/* HTA's idle-time breakdown and critical path on builder-made event models, with exact answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "advise_internal.h"
#include "stats_internal.h"

enum { CPU_PID = 100, GPU_PID = 0, TID = 7 };

/* One complete event as the stats reader hands it over: CPU events on (CPU_PID, TID),
 * device events on GPU_PID's stream (stream >= 0). corr < 0: none. */
static void add(ft_model *m, const char *cat, const char *name, int64_t ts, int64_t dur, int64_t corr, int64_t stream) {
  ft__ev e = {.ts = ts, .dur = dur, .dev = stream >= 0 ? GPU_PID : CPU_PID, .ext = -1};
  e.sec = (uint8_t)ft__stats_section_of(cat);
  e.has_tid = true;
  e.tid = stream >= 0 ? stream : TID;
  e.has_corr = corr >= 0;
  e.corr = corr;
  e.has_stream = stream >= 0;
  e.stream = stream;
  e.name_len = (uint32_t)strlen(name);
  assert_true(ft_model_add(m, &e, name, cat));
}
static void launch(ft_model *m, int64_t ts, int64_t dur, int64_t corr) {
  add(m, "cuda_runtime", "cudaLaunchKernel", ts, dur, corr, -1);
}
static void kernel(ft_model *m, int64_t ts, int64_t dur, int64_t corr, int64_t stream) {
  add(m, "kernel", "k", ts, dur, corr, stream);
}

static const ft__hta_idle *of(const ft__hta_idle *r, size_t n, int64_t stream) {
  for (size_t i = 0; i < n; i++)
    if (r[i].stream == stream) return &r[i];
  fail_msg("no stream %lld", (long long)stream);
  return NULL;
}

/* Stream 7: K1 then K2 10 ns later, launched while K1 ran (kernel wait); K3 launched
 * after K2 ended (host wait 150); K4 40 us after K3, launched before (other); K5
 * 29999 ns after K4 (kernel wait, just under HTA's 30 us). Stream 9: K7 has no
 * launch in the trace (never host wait): kernel wait 40; K10's launch starts right
 * at K7's end (not after it): kernel wait 10. Stream 11: K9 starts inside
 * K8 (HTA sums the -500). A cuda_sync on stream 7 is no device work. Steps: #0 holds
 * the launches of K1, K2, K6; #1 those of K3, K4, K5. */
static void build_idle(ft_model *m) {
  ft_model_init(m, NULL);
  add(m, "user_annotation", "ProfilerStep#0", 0, 35, -1, -1);
  launch(m, 0, 10, 1);
  launch(m, 20, 10, 2);
  launch(m, 30, 2, 6);
  launch(m, 36, 1, 8);
  launch(m, 37, 1, 9);
  kernel(m, 100, 100, 1, 7);
  kernel(m, 210, 90, 2, 7);
  kernel(m, 250, 10, 6, 9);
  kernel(m, 300, 10, 99, 9);
  launch(m, 310, 5, 10); /* at K7's very end: HTA's host wait is "after", so kernel wait */
  kernel(m, 320, 5, 10, 9);
  add(m, "cuda_sync", "Stream Sync", 305, 10, 55, 7);
  add(m, "user_annotation", "ProfilerStep#1", 395, 105, -1, -1);
  launch(m, 400, 10, 3);
  launch(m, 410, 5, 4);
  launch(m, 420, 5, 5);
  kernel(m, 450, 50, 3, 7);
  kernel(m, 1000, 1000, 8, 11);
  kernel(m, 1500, 100, 9, 11);
  kernel(m, 40500, 500, 4, 7);
  kernel(m, 70999, 1, 5, 7);
  assert_int_equal(ft_model_finish(m), FT_OK);
}

static void test_idle_streams(void **state) {
  (void)state;
  ft_model m;
  build_idle(&m);
  ft__hta_idle *r;
  size_t n;
  assert_true(ft__hta_idle_streams(&m, SIZE_MAX, &r, &n));
  assert_int_equal(n, 3);
  assert_int_equal(r[0].stream, 7); /* ascending */
  const ft__hta_idle *s7 = of(r, n, 7), *s9 = of(r, n, 9), *s11 = of(r, n, 11);
  assert_int_equal(s7->host_ns, 150);
  assert_int_equal(s7->kernel_ns, 10 + 29999);
  assert_int_equal(s7->other_ns, 40000);
  assert_int_equal(s7->n_host, 1);
  assert_int_equal(s7->n_kernel, 2);
  assert_int_equal(s7->n_other, 1);
  assert_int_equal(s9->host_ns, 0);
  assert_int_equal(s9->kernel_ns, 40 + 10);
  assert_int_equal(s9->n_kernel, 2);
  assert_int_equal(s9->other_ns, 0);
  assert_int_equal(s11->kernel_ns, -500);
  free(r);
  ft_model_free(&m);
}

static void test_idle_steps(void **state) {
  (void)state;
  ft_model m;
  build_idle(&m);
  assert_int_equal(m.n_steps, 2);
  uint64_t h, k, o;
  ft__hta_idle_step(&m, 0, &h, &k, &o); /* K1 -> K2: 10; K6 alone on 9 */
  assert_int_equal(h, 0);
  assert_int_equal(k, 10);
  assert_int_equal(o, 0);
  ft__hta_idle_step(&m, 1, &h, &k, &o); /* K3 opens the step: K4 other, K5 kernel wait */
  assert_int_equal(h, 0);
  assert_int_equal(k, 29999);
  assert_int_equal(o, 40000);
  uint64_t all[2][3];
  assert_true(ft__hta_idle_steps(&m, all));
  assert_int_equal(all[0][1], 10);
  assert_int_equal(all[1][1], 29999);
  assert_int_equal(all[1][2], 40000);
  ft_model_free(&m);
}

/* op A [0,100] launches K1 (launch edge: the queue was empty, 20) and K2 (launch edge
 * again: K1 ended before), then cudaDeviceSynchronize [110,320] waits for K2 (Context
 * Sync: K2's end to the call's end), then op B [330,340]. The path: A's start, L1 (10),
 * L1's span (10: the runtime lock's edge), to L2 (40), K2's launch delay (20), K2
 * (220), the sync (0), B (10). The synchronize call's own span weighs 0 (blocking):
 * else A, the call and B (320) would be longer. */
static void build_cp(ft_model *m, bool sync) {
  ft_model_init(m, NULL);
  add(m, "user_annotation", "ProfilerStep#0", 0, 105, -1, -1);
  add(m, "cpu_op", "A", 0, 100, -1, -1);
  launch(m, 10, 10, 1);
  kernel(m, 30, 20, 1, 7);
  launch(m, 60, 10, 2);
  kernel(m, 80, 220, 2, 7);
  add(m, "cuda_runtime", "cudaDeviceSynchronize", 110, 210, 3, -1);
  if (sync) add(m, "cuda_sync", "Context Sync", 112, 198, 3, 7);
  add(m, "cpu_op", "B", 330, 10, -1, -1);
  assert_int_equal(ft_model_finish(m), FT_OK);
}

static void test_critical_path(void **state) {
  (void)state;
  ft_model m;
  build_cp(&m, true);
  assert_int_equal(ft__critical_path_ns(&m, SIZE_MAX), 10 + 10 + 40 + 20 + 220 + 10);
  /* the step's window holds A and its launches, not the sync or B */
  assert_int_equal(ft__critical_path_ns(&m, 0), 10 + 10 + 40 + 20 + 220);
  uint64_t all[1];
  assert_true(ft__critical_paths(&m, all)); /* every step at once: the same */
  assert_int_equal(all[0], 10 + 10 + 40 + 20 + 220);
  ft_model_free(&m);
  build_cp(&m, false); /* no sync event: B hangs off the CPU chain only, K2's end is the longest */
  assert_int_equal(ft__critical_path_ns(&m, SIZE_MAX), 300);
  ft_model_free(&m);
}

/* Call stack edges between top-level ops weigh nothing; a kernel far after the previous
 * one on its stream (over 1.5 ms) with the queue not empty gets no edge in. */
static void test_critical_path_gaps(void **state) {
  (void)state;
  ft_model m;
  ft_model_init(&m, NULL);
  add(&m, "cpu_op", "A", 0, 100, -1, -1);
  add(&m, "cpu_op", "B", 5000, 100, -1, -1); /* the gap A -> B counts 0 */
  launch(&m, 5010, 10, 1);
  launch(&m, 5030, 10, 2);
  kernel(&m, 5050, 1000, 1, 7);   /* queue 1 at its start: no launch edge */
  kernel(&m, 2000000, 500, 2, 7); /* 1.99 ms after K1: no kernel-kernel edge */
  assert_int_equal(ft_model_finish(&m), FT_OK);
  assert_int_equal(ft__critical_path_ns(&m, SIZE_MAX), 1000);
  ft_model_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idle_streams),
      cmocka_unit_test(test_idle_steps),
      cmocka_unit_test(test_critical_path),
      cmocka_unit_test(test_critical_path_gaps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
