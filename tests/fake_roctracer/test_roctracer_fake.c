/* The roctracer tracer's real code against the fake libroctracer64: kinds decoded
 * from kind codes, HIP API names from roctracer_op_string, EXT_API attribution,
 * barriers skipped, records copied out of the callback, the clock mapped. */
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

#include "../fake_common/capture_sink.h"
#include "fake_roctracer.h"
#include "internal.h"
#include "test_support.h"

static fake_roc_launch_fn launch;
static fake_roc_memory_fn memory;
static fake_roc_set_device_fn set_device;

static void test_hip_ops_api_and_attribution(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "hip_op", &op), FT_OK);
  launch(&(fake_roc_launch){.kind = FAKE_ROC_KERNEL, .kernel = "_Z10vector_addPfS_i", .dur_ns = 3000});
  launch(&(fake_roc_launch){.kind = FAKE_ROC_H2D, .bytes = 8192, .dur_ns = 1000});
  launch(&(fake_roc_launch){.kind = FAKE_ROC_FILL, .bytes = 256, .dur_ns = 500});
  assert_int_equal(ft_range_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.window_discarded, 0); /* roctracer's monotonic clock mapped onto the epoch */
  assert_int_equal(c.dropped_records, 0);
  yajl_val doc = ft_test_render(s);
  yajl_val k = ft_test_find_x(doc, "kernel", "vector_add(float*, float*, int)", 0);
  assert_non_null(k);
  assert_int_equal(YAJL_GET_INTEGER(ft_test_get(k, "tid")), 5); /* the queue */
  assert_null(ft_test_get(ft_test_get(k, "args"), "grid"));     /* not in the record: omitted */
  yajl_val m = ft_test_find_x(doc, "gpu_memcpy", "Memcpy HtoD", 0);
  assert_non_null(m);
  assert_int_equal(YAJL_GET_INTEGER(ft_test_get(ft_test_get(m, "args"), "bytes")), 8192);
  assert_non_null(ft_test_find_x(doc, "gpu_memset", "Memset", 0));
  assert_non_null(ft_test_find_x(doc, "privateuse1_runtime", "hipLaunchKernel", 0));
  assert_null(ft_test_find_x(doc, "kernel", NULL, 1)); /* the barriers are not shown */
  uint64_t ns, n;
  assert_int_equal(ft_session_device_time(s, op, &ns, &n), FT_OK);
  assert_int_equal(n, 3);
  ft_session_counts cnt;
  assert_int_equal(ft_session_counts_get(s, &cnt), FT_OK);
  assert_int_equal(cnt.flows, 3);
  ft_contract con = {.vendor = "dcu/roctracer",
                     .why_not = {[FT_ROW_METADATA] = "roctracer's kernel record has no grid or block"},
                     .runtime_cat = "privateuse1_runtime",
                     .launch_name = "hipLaunchKernel",
                     .op = (long long)op,
                     .memcpy_bytes = 8192,
                     .memset_bytes = 256};
  ft_test_contract(doc, &con);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* More records than the fake's buffer holds between flushes (3 a kernel launch, 4096
 * a buffer): full buffers reach the callback as roctracer's pool hands them, and every
 * launch is in the trace (the fake aborted here until 2026-12-06: a 3 s on-demand capture
 * of a 2 ms loop in CI). */
static void test_full_buffers(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  enum { N = 5000 };
  for (int i = 0; i < N; i++) launch(&(fake_roc_launch){.kind = FAKE_ROC_KERNEL, .kernel = "k", .dur_ns = 100});
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.dropped_records, 0);
  assert_int_equal(c.device_events, 2 * N); /* each launch's kernel and its hipLaunchKernel */
  assert_int_equal(c.window_discarded, 0);
  ft_session_destroy(s);
}

/* hipMalloc under an op, hipFree, a failed hipMalloc, hipMallocAsync: the exact
 * ft_memory_info each successful one becomes (address and size from the HIP API
 * callback's arguments, the device from hipGetDevice), inside its call, linked to
 * it; our own hipGetDevice calls never show as the program's. */
static void test_memory_from_api_arguments(void **state) {
  (void)state;
  ft_tracer *tr;
  assert_int_equal(ft_make_device_tracer(&tr), FT_OK);
  capture cap;
  ft_event_sink sink;
  cap_init(&cap, &sink);
  assert_int_equal(tr->ops->start(tr, &sink, FT_KIND_BIT(FT_EVENT_MEMORY) | FT_KIND_BIT(FT_EVENT_RUNTIME)), FT_OK);
  set_device(2);
  assert_int_equal(tr->ops->push_correlation(tr, 55), FT_OK);
  memory(&(fake_roc_memory){.call = "hipMalloc", .address = 0x7f0000000000, .bytes = 4096});
  assert_int_equal(tr->ops->pop_correlation(tr), FT_OK);
  memory(&(fake_roc_memory){.call = "hipFree", .address = 0x7f0000000000});
  memory(&(fake_roc_memory){.call = "hipMalloc", .address = 0, .bytes = 1ull << 40}); /* out of memory */
  set_device(3);                                                                      /* the device is asked again */
  memory(&(fake_roc_memory){.call = "hipMallocAsync", .address = 0x7f0000200000, .bytes = 2 << 20});
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  assert_int_equal(tr->ops->dropped_records(tr), 0);
  assert_int_equal(cap_count(&cap, FT_EVENT_MEMORY), 3);
  /* four memory calls, two hipSetDevice; none of our two hipGetDevice */
  assert_int_equal(cap_count(&cap, FT_EVENT_RUNTIME), 6);
  for (size_t i = 0; i < 6; i++) assert_string_not_equal(cap_nth(&cap, FT_EVENT_RUNTIME, i)->ev.name, "hipGetDevice");
  const ft_memory_info info[3] = {
      {.op = FT_MEMORY_ALLOC, .memory_kind = FT_MEMKIND_DEVICE, .address = 0x7f0000000000, .bytes = 4096},
      {.op = FT_MEMORY_FREE, .memory_kind = FT_MEMKIND_DEVICE, .address = 0x7f0000000000, .bytes = 0},
      {.op = FT_MEMORY_ALLOC, .memory_kind = FT_MEMKIND_DEVICE, .address = 0x7f0000200000, .bytes = 2 << 20},
  };
  const char *call[3] = {"hipMalloc", "hipFree", "hipMallocAsync"};
  uint32_t corr[3], device[3] = {2, 2, 3};
  for (int i = 0; i < 3; i++) {
    const cap_event *e = cap_nth(&cap, FT_EVENT_MEMORY, (size_t)i);
    assert_non_null(e->ev.memory);
    assert_memory_equal(e->ev.memory, &info[i], sizeof info[i]);
    assert_int_equal(e->ev.device, device[i]);
    assert_int_equal(e->ev.stream, UINT32_MAX);
    assert_int_equal(e->ev.start_ns, e->ev.end_ns);
    assert_false(e->ev.has_external_id);
    corr[i] = e->ev.correlation_id;
    const cap_event *rt = cap_runtime(&cap, corr[i]);
    assert_non_null(rt);
    assert_string_equal(rt->ev.name, call[i]);
    assert_true(e->ev.start_ns >= rt->ev.start_ns && e->ev.start_ns <= rt->ev.end_ns);
    assert_int_equal(e->ev.thread_id, rt->ev.thread_id);
  }
  assert_int_equal(cap_external(&cap, corr[0]), 55);
  assert_int_equal(cap_external(&cap, corr[1]), UINT64_MAX);
  /* without the memory kind nothing is armed: the call is only a runtime event */
  cap_init(&cap, &sink);
  assert_int_equal(tr->ops->start(tr, &sink, FT_KIND_BIT(FT_EVENT_RUNTIME)), FT_OK);
  memory(&(fake_roc_memory){.call = "hipMalloc", .address = 0x7f0000400000, .bytes = 512});
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  assert_int_equal(cap_count(&cap, FT_EVENT_MEMORY), 0);
  assert_int_equal(cap_count(&cap, FT_EVENT_RUNTIME), 1);
  tr->ops->destroy(tr);
  set_device(0);
}

/* The same calls through a session: the [memory] instants and Memory counter
 * samples the trace holds, key for key; a free's size found by its address. */
static void test_memory_in_the_trace(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  set_device(2);
  uint64_t op;
  assert_int_equal(ft_range_push(s, "aten::empty", &op), FT_OK);
  memory(&(fake_roc_memory){.call = "hipMalloc", .address = 0x7f0000000000, .bytes = 4096});
  assert_int_equal(ft_range_pop(s), FT_OK);
  memory(&(fake_roc_memory){.call = "hipFree", .address = 0x7f0000000000});
  memory(&(fake_roc_memory){.call = "hipMalloc", .address = 0, .bytes = 1ull << 40});
  memory(&(fake_roc_memory){.call = "hipMallocAsync", .address = 0x7f0000200000, .bytes = 2 << 20});
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  const char *call[3] = {"hipMalloc", "hipFree", "hipMallocAsync"};
  long long corr[3];
  for (int i = 0; i < 3; i++) {
    yajl_val rt = ft_test_find_x(doc, "privateuse1_runtime", call[i], 0);
    assert_non_null(rt);
    corr[i] = YAJL_GET_INTEGER(ft_test_get(ft_test_get(rt, "args"), "correlation"));
    yajl_val m = ft_test_find_ph(doc, "i", "[memory]", i);
    assert_non_null(m);
    assert_int_equal(YAJL_GET_INTEGER(ft_test_get(m, "tid")), YAJL_GET_INTEGER(ft_test_get(rt, "tid")));
    double ts = YAJL_GET_DOUBLE(ft_test_get(m, "ts")), start = YAJL_GET_DOUBLE(ft_test_get(rt, "ts"));
    double end = start + YAJL_GET_DOUBLE(ft_test_get(rt, "dur"));
    if (ts < start - 5e-4 || ts > end + 5e-4)
      fail_msg("[memory] %d at %f us, outside its call [%f, %f]", i, ts, start, end);
  }
  assert_null(ft_test_find_ph(doc, "i", "[memory]", 3)); /* the failed hipMalloc made none */
  assert_non_null(ft_test_find_x(doc, "privateuse1_runtime", "hipMalloc", 1));
  assert_null(ft_test_find_x(doc, "privateuse1_runtime", "hipGetDevice", 0)); /* ours, not the program's */
  ft_test_memory_args(ft_test_find_ph(doc, "i", "[memory]", 0),
                      &(ft_test_mem_want){20, 2, 0x7f0000000000, 4096, 4096, 4096, corr[0], true, false, (long long)op,
                                          0, "device", "alloc"});
  ft_test_memory_args(
      ft_test_find_ph(doc, "i", "[memory]", 1),
      &(ft_test_mem_want){20, 2, 0x7f0000000000, -4096, 0, 0, corr[1], false, false, 0, 0, "device", "free"});
  ft_test_memory_args(ft_test_find_ph(doc, "i", "[memory]", 2),
                      &(ft_test_mem_want){20, 2, 0x7f0000200000, 2 << 20, 2 << 20, 2 << 20, corr[2], false, false, 0, 0,
                                          "device", "alloc"});
  long long counter[3][2] = {{4096, 4096}, {0, 0}, {2 << 20, 2 << 20}}; /* allocated, reserved */
  for (int i = 0; i < 3; i++) {
    yajl_val c = ft_test_find_ph(doc, "C", "Memory", i);
    assert_non_null(c);
    assert_int_equal(YAJL_GET_INTEGER(ft_test_get(c, "pid")), 2);
    assert_int_equal(YAJL_GET_INTEGER(ft_test_get(ft_test_get(c, "args"), "Allocated")), counter[i][0]);
    assert_int_equal(YAJL_GET_INTEGER(ft_test_get(ft_test_get(c, "args"), "Reserved")), counter[i][1]);
  }
  yajl_tree_free(doc);
  ft_session_destroy(s);
  set_device(0);
}

int main(void) {
  /* global, as a program's HIP runtime is: the tracer finds hipGetDevice in the process */
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    fprintf(stderr, "test_roctracer_fake: FLAGOS_TRACER_LIBRARY must name the fake libroctracer64\n");
    return 1;
  }
  launch = (fake_roc_launch_fn)dlsym(h, "fake_roctracer_launch");
  memory = (fake_roc_memory_fn)dlsym(h, "fake_roctracer_memory");
  set_device = (fake_roc_set_device_fn)dlsym(h, "fake_roctracer_set_device");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hip_ops_api_and_attribution), cmocka_unit_test(test_full_buffers),
      cmocka_unit_test(test_memory_from_api_arguments), cmocka_unit_test(test_memory_in_the_trace)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
