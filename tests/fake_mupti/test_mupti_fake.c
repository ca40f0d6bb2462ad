/* The MUPTI tracer's real code against the fake libmupti: its own clock mapped onto
 * CLOCK_REALTIME, implausible timestamps dropped and counted, names, attribution. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_mupti.h"
#include "../fake_common/capture_sink.h"
#include "internal.h"
#include "test_support.h"

static fake_mu_launch_fn launch;

static void test_clock_mapping_and_decoding(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "musa_op", &op), FT_OK);
  launch(&(fake_mu_launch){.kind = FAKE_MU_KERNEL, .name = "musa_kernel", .dur_ns = 100000}); /* 100 µs, device clock */
  launch(&(fake_mu_launch){.kind = FAKE_MU_MEMCPY, .dur_ns = 2000});
  launch(&(fake_mu_launch){.kind = FAKE_MU_MEMSET, .dur_ns = 1000});
  assert_int_equal(ft_range_pop(s), FT_OK);
  launch(&(fake_mu_launch){
      .kind = FAKE_MU_KERNEL, .name = "no_time", .dur_ns = 100, .zero_time = 1}); /* start == end == 0 */
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.window_discarded, 0); /* mapped into the session, on CLOCK_REALTIME */
  assert_int_equal(c.dropped_records, 1);  /* the implausible one, counted */
  yajl_val doc = ft_test_render(s);
  yajl_val k = ft_test_find_x(doc, "kernel", "musa_kernel", 0);
  assert_non_null(k);
  assert_null(ft_test_find_x(doc, "kernel", "no_time", 0));
  /* the device clock runs 0.1 % fast: 100 µs of it are 99.9 µs of real time */
  double dur = YAJL_GET_DOUBLE(ft_test_get(k, "dur"));
  if (dur < 99.85 || dur > 99.95) fail_msg("mapped duration %f us, expected ~99.9", dur);
  yajl_val a = ft_test_get(k, "args");
  assert_int_equal(YAJL_GET_INTEGER(ft_test_get(a, "External id")), op);
  assert_null(ft_test_get(a, "est. achieved occupancy %")); /* not computed: omitted */
  assert_true(YAJL_IS_ARRAY(ft_test_get(a, "grid")));
  assert_non_null(ft_test_find_x(doc, "gpu_memcpy", NULL, 0));
  assert_non_null(ft_test_find_x(doc, "gpu_memset", NULL, 0));
  yajl_val rt = ft_test_find_x(doc, "privateuse1_runtime", "musaLaunchKernel", 0);
  assert_non_null(rt); /* named by muptiGetCallbackName */
  assert_int_equal(YAJL_GET_INTEGER(ft_test_get(ft_test_get(rt, "args"), "cbid")), 42);
  uint64_t ns, n;
  assert_int_equal(ft_session_device_time(s, op, &ns, &n), FT_OK);
  assert_int_equal(n, 3);
  ft_contract con = {.vendor = "musa/mupti",
                     .runtime_cat = "privateuse1_runtime",
                     .launch_name = "musaLaunchKernel",
                     .op = (long long)op,
                     .memcpy_bytes = 4096,
                     .memset_bytes = 512};
  ft_test_contract(doc, &con);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* Device memory asked for: MUPTI has no allocation records (docs/memory.md), so
 * the start still succeeds, the rest is recorded, and no memory event is made up. */
static void test_memory_not_offered(void **state) {
  (void)state;
  ft_tracer *tr;
  assert_int_equal(ft_make_device_tracer(&tr), FT_OK);
  capture cap;
  ft_event_sink sink;
  cap_init(&cap, &sink);
  assert_int_equal(tr->ops->start(tr, &sink, FT_ACTIVITY_ALL), FT_OK);
  launch(&(fake_mu_launch){.kind = FAKE_MU_KERNEL, .name = "k", .dur_ns = 1000});
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  assert_int_equal(cap_count(&cap, FT_EVENT_KERNEL), 1);
  assert_int_equal(cap_count(&cap, FT_EVENT_MEMORY), 0);
  tr->ops->destroy(tr);
}

int main(void) {
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "test_mupti_fake: FLAGOS_TRACER_LIBRARY must name the fake libmupti\n");
    return 1;
  }
  launch = (fake_mu_launch_fn)dlsym(h, "fake_mupti_launch");
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_clock_mapping_and_decoding),
                                     cmocka_unit_test(test_memory_not_offered)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
