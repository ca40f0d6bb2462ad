/* The MSPTI tracer's real code against the fake libmspti: packed records decoded,
 * 64-bit ids remapped, API records coalesced, attribution, visible-device mapping,
 * copies only with a process-start preload, and an unusable library. */
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
#include <time.h>

#include "../fake_common/capture_sink.h"
#include "fake_mspti.h"
#include "internal.h"
#include "test_support.h"

static fake_ms_launch_fn launch;
static fake_ms_drop_fn drop;
static fake_ms_memory_fn memory;
static bool preloaded; /* this run has the fake in LD_PRELOAD (ctest sets it) */

static long long num(yajl_val o, const char *k) {
  yajl_val v = ft_test_get(o, k);
  if (!v || !YAJL_IS_INTEGER(v)) fail_msg("%s is not an integer", k);
  return YAJL_GET_INTEGER(v);
}

static size_t count_ph(yajl_val doc, const char *ph) {
  yajl_val ev = ft_test_get(doc, "traceEvents");
  size_t n = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) n += !strcmp(ft_test_str(ev->u.array.values[i], "ph"), ph);
  return n;
}

static void test_kernels_runtime_and_attribution(void **state) {
  (void)state;
  setenv("ASCEND_RT_VISIBLE_DEVICES", "4,5", 1);
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "aten::add", &op), FT_OK);
  fake_ms_launch k = {.kind = FAKE_MS_KERNEL,
                      .name = "Add_kernel",
                      .apis = {"aclnnAdd", "aclrtLaunchKernel"},
                      .device = 5,
                      .stream = 3,
                      .dur_ns = 2000};
  uint64_t corr64 = launch(&k);
  assert_true(corr64 > UINT32_MAX);
  assert_int_equal(ft_range_pop(s), FT_OK);
  fake_ms_launch k2 = k;
  k2.name = "after";
  launch(&k2);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  yajl_val e = ft_test_find_x(doc, "kernel", NULL, 0);
  assert_non_null(e);
  assert_string_equal(ft_test_str(e, "name"), "Add_kernel");
  yajl_val a = ft_test_get(e, "args");
  assert_int_equal(num(a, "External id"), op);
  assert_int_equal(num(a, "device"), 1); /* physical 5 is the second visible device */
  assert_int_equal(num(e, "pid"), 1);
  long long corr = num(a, "correlation");
  assert_true(corr > 0 && corr <= UINT32_MAX); /* remapped to a nonzero 32-bit id */
  assert_string_equal(ft_test_str(a, "kernel type"), "KERNEL_AICORE");
  assert_null(ft_test_get(a, "grid")); /* MSPTI has none: omitted, never made up */
  assert_null(ft_test_get(a, "block"));
  /* two API records per call, coalesced into one: the launch */
  assert_non_null(ft_test_find_x(doc, "privateuse1_runtime", NULL, 1));
  assert_null(ft_test_find_x(doc, "privateuse1_runtime", NULL, 2));
  yajl_val rt = ft_test_find_x(doc, "privateuse1_runtime", NULL, 0);
  assert_string_equal(ft_test_str(rt, "name"), "aclrtLaunchKernel");
  assert_null(ft_test_get(ft_test_get(rt, "args"), "cbid")); /* MSPTI's record has no cbid */
  assert_int_equal(num(ft_test_get(rt, "args"), "External id"), op);
  assert_int_equal(count_ph(doc, "s"), 2);
  assert_int_equal(count_ph(doc, "f"), 2);
  /* the pop unwound the vendor stack (a NULL pop would not): no stale id */
  assert_null(ft_test_get(ft_test_get(ft_test_find_x(doc, "kernel", NULL, 1), "args"), "External id"));
  uint64_t ns, n;
  assert_int_equal(ft_session_device_time(s, op, &ns, &n), FT_OK);
  assert_int_equal(ns, 2000);
  yajl_tree_free(doc);
  ft_session_destroy(s);
  unsetenv("ASCEND_RT_VISIBLE_DEVICES");
}

static void test_copies_need_a_process_start_preload(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_ms_launch c = {.kind = FAKE_MS_MEMCPY, .apis = {"aclrtMemcpyAsync"}, .bytes = 4096, .dur_ns = 500};
  fake_ms_launch m = {.kind = FAKE_MS_MEMSET, .apis = {"aclrtMemsetAsync"}, .bytes = 1024, .dur_ns = 100};
  launch(&c);
  launch(&m);
  drop(3);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  if (preloaded) {
    yajl_val e = ft_test_find_x(doc, "gpu_memcpy", NULL, 0);
    assert_non_null(e);
    assert_int_equal(num(ft_test_get(e, "args"), "bytes"), 4096);
    e = ft_test_find_x(doc, "gpu_memset", NULL, 0);
    assert_non_null(e);
    assert_int_equal(num(ft_test_get(e, "args"), "value"), 7);
    assert_int_equal(count_ph(doc, "f"), 2);
  } else {
    assert_null(ft_test_find_x(doc, "gpu_memcpy", NULL, 0));
    assert_null(ft_test_find_x(doc, "gpu_memset", NULL, 0));
  }
  ft_session_counts cnt;
  assert_int_equal(ft_session_counts_get(s, &cnt), FT_OK);
  assert_int_equal(cnt.dropped_records, 3);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* The cross-backend contract (tests/unit/test_support.h), gated by what MSPTI records. */
static void test_contract(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "aten::op", &op), FT_OK);
  fake_ms_launch k = {.kind = FAKE_MS_KERNEL, .name = "Add_kernel", .apis = {"aclrtLaunchKernel"}, .dur_ns = 2000};
  fake_ms_launch c = {.kind = FAKE_MS_MEMCPY, .apis = {"aclrtMemcpyAsync"}, .bytes = 4096, .dur_ns = 500};
  fake_ms_launch m = {.kind = FAKE_MS_MEMSET, .apis = {"aclrtMemsetAsync"}, .bytes = 1024, .dur_ns = 100};
  launch(&k);
  launch(&c);
  launch(&m);
  assert_int_equal(ft_range_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  const char *no_copies = preloaded ? NULL : "copies and sets need libmspti in the link map at process start";
  ft_contract con = {.vendor = "ascend/mspti",
                     .why_not = {[FT_ROW_METADATA] = "MSPTI's kernel record has no grid or block",
                                 [FT_ROW_CBID] = "MSPTI's API record has no cbid",
                                 [FT_ROW_MEMCPY] = no_copies,
                                 [FT_ROW_MEMSET] = no_copies},
                     .runtime_cat = "privateuse1_runtime",
                     .launch_name = "aclrtLaunchKernel",
                     .op = (long long)op,
                     .memcpy_bytes = 4096,
                     .memset_bytes = 1024};
  ft_test_contract(doc, &con);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* An allocation under an op, its release, a second (asynchronous) allocation:
 * the exact ft_memory_info each becomes, on the instant MSPTI's record gives,
 * linked to the call that made it. Without a process-start preload MSPTI's
 * interposer sees no allocation, so none is armed and none comes. */
static void test_memory_records(void **state) {
  /* msptiActivityMemory's deviceId is aclrtGetDevice's, a logical id already: not
   * remapped through ASCEND_RT_VISIBLE_DEVICES as kernels' physical ids are */
  (void)state;
  setenv("ASCEND_RT_VISIBLE_DEVICES", "1,0", 1);
  ft_tracer *tr;
  assert_int_equal(ft_make_device_tracer(&tr), FT_OK);
  capture cap;
  ft_event_sink sink;
  cap_init(&cap, &sink);
  assert_int_equal(tr->ops->start(tr, &sink, FT_KIND_BIT(FT_EVENT_MEMORY) | FT_KIND_BIT(FT_EVENT_RUNTIME)), FT_OK);
  fake_ms_memory a = {.memory_kind = 1,
                      .address = 0x12c0000000,
                      .bytes = 1 << 20,
                      .device = 1,
                      .stream = UINT32_MAX,
                      .api = "aclrtMalloc"};
  fake_ms_memory f = {.release = 1,
                      .memory_kind = 1,
                      .address = 0x12c0000000,
                      .bytes = 1 << 20,
                      .device = 1,
                      .stream = UINT32_MAX,
                      .api = "aclrtFree"};
  fake_ms_memory b = {
      .memory_kind = 0, .address = 0x12c0200000, .bytes = 3000, .device = 0, .stream = 7, .api = "aclrtMallocAsync"};
  assert_int_equal(tr->ops->push_correlation(tr, 77), FT_OK);
  memory(&a);
  assert_int_equal(tr->ops->pop_correlation(tr), FT_OK);
  memory(&f);
  memory(&b);
  fake_ms_memory bad = {.release = 9, .address = 0x1000, .bytes = 1, .api = "aclrtMalloc"};
  memory(&bad); /* an operation type MSPTI does not define: counted, never guessed */
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  if (!preloaded) {
    assert_int_equal(cap_count(&cap, FT_EVENT_MEMORY), 0);
    assert_int_equal(cap_count(&cap, FT_EVENT_RUNTIME), 4);
    assert_int_equal(tr->ops->dropped_records(tr), 0);
    tr->ops->destroy(tr);
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    return;
  }
  assert_int_equal(cap_count(&cap, FT_EVENT_MEMORY), 3);
  assert_int_equal(tr->ops->dropped_records(tr), 1);
  const fake_ms_memory *want[3] = {&a, &f, &b};
  const char *api[3] = {"aclrtMalloc", "aclrtFree", "aclrtMallocAsync"};
  const ft_memory_info info[3] = {
      {.op = FT_MEMORY_ALLOC, .memory_kind = FT_MEMKIND_DEVICE, .address = 0x12c0000000, .bytes = 1 << 20},
      {.op = FT_MEMORY_FREE, .memory_kind = FT_MEMKIND_DEVICE, .address = 0x12c0000000, .bytes = 1 << 20},
      {.op = FT_MEMORY_ALLOC, .memory_kind = FT_MEMKIND_UNKNOWN, .address = 0x12c0200000, .bytes = 3000},
  };
  uint32_t device[3] = {1, 1, 0}, stream[3] = {UINT32_MAX, UINT32_MAX, 7}, corr[3];
  for (int i = 0; i < 3; i++) {
    const cap_event *e = cap_nth(&cap, FT_EVENT_MEMORY, (size_t)i);
    assert_non_null(e->ev.memory);
    assert_memory_equal(e->ev.memory, &info[i], sizeof info[i]);
    /* an allocation on its record's end, a free on its start */
    uint64_t at = info[i].op == FT_MEMORY_ALLOC ? want[i]->end : want[i]->start;
    assert_int_equal(e->ev.start_ns, at);
    assert_int_equal(e->ev.end_ns, at);
    assert_int_equal(e->ev.device, device[i]);
    assert_int_equal(e->ev.stream, stream[i]);
    assert_false(e->ev.has_external_id); /* the core attributes through the correlation */
    corr[i] = e->ev.correlation_id;
    assert_true(corr[i] > 0);
    const cap_event *rt = cap_runtime(&cap, corr[i]);
    assert_non_null(rt);
    assert_string_equal(rt->ev.name, api[i]);
  }
  assert_true(corr[0] != corr[1] && corr[1] != corr[2]);
  assert_int_equal(cap_external(&cap, corr[0]), 77);
  assert_int_equal(cap_external(&cap, corr[1]), UINT64_MAX);
  tr->ops->destroy(tr);
  unsetenv("ASCEND_RT_VISIBLE_DEVICES");
}

/* The same three operations through a session: the [memory] instants and Memory
 * counter samples the trace holds, key for key (docs/memory.md's format). */
static void test_memory_in_the_trace(void **state) {
  (void)state;
  setenv("ASCEND_RT_VISIBLE_DEVICES", "1,0", 1);
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "aten::empty", &op), FT_OK);
  fake_ms_memory a = {.memory_kind = 1,
                      .address = 0x12c0000000,
                      .bytes = 1 << 20,
                      .device = 1,
                      .stream = UINT32_MAX,
                      .api = "aclrtMalloc"};
  memory(&a);
  assert_int_equal(ft_range_pop(s), FT_OK);
  fake_ms_memory f = a;
  f.release = 1;
  f.api = "aclrtFree";
  memory(&f);
  fake_ms_memory b = {.address = 0x12c0200000, .bytes = 3000, .device = 0, .stream = 7, .api = "aclrtMallocAsync"};
  memory(&b);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  if (!preloaded) {
    assert_null(ft_test_find_ph(doc, "i", "[memory]", 0));
    assert_null(ft_test_find_ph(doc, "C", "Memory", 0));
  } else {
    const char *api[3] = {"aclrtMalloc", "aclrtFree", "aclrtMallocAsync"};
    double after_call_start_us[3] = {0.3, 0.1, 0.3}; /* an allocation on its record's end, a free on its start */
    long long corr[3];
    for (int i = 0; i < 3; i++) {
      yajl_val rt = ft_test_find_x(doc, "privateuse1_runtime", api[i], 0);
      assert_non_null(rt);
      corr[i] = num(ft_test_get(rt, "args"), "correlation");
      yajl_val m = ft_test_find_ph(doc, "i", "[memory]", i);
      assert_non_null(m);
      assert_int_equal(num(m, "tid"), num(rt, "tid"));
      double dt = YAJL_GET_DOUBLE(ft_test_get(m, "ts")) - YAJL_GET_DOUBLE(ft_test_get(rt, "ts"));
      if (dt < after_call_start_us[i] - 5e-4 || dt > after_call_start_us[i] + 5e-4) /* ts has ns resolution */
        fail_msg("[memory] %d at %f us after its call's start, expected %f", i, dt, after_call_start_us[i]);
    }
    assert_null(ft_test_find_ph(doc, "i", "[memory]", 3));
    ft_test_memory_args(ft_test_find_ph(doc, "i", "[memory]", 0),
                        &(ft_test_mem_want){20, 1, 0x12c0000000, 1 << 20, 1 << 20, 1 << 20, corr[0], true, false,
                                            (long long)op, 0, "device", "alloc"});
    ft_test_memory_args(
        ft_test_find_ph(doc, "i", "[memory]", 1),
        &(ft_test_mem_want){20, 1, 0x12c0000000, -(1 << 20), 0, 0, corr[1], false, false, 0, 0, "device", "free"});
    ft_test_memory_args(
        ft_test_find_ph(doc, "i", "[memory]", 2),
        &(ft_test_mem_want){20, 0, 0x12c0200000, 3000, 3000, 3000, corr[2], false, true, 0, 7, "other", "alloc"});
    long long counter[3][3] = {{1, 1 << 20, 1 << 20}, {1, 0, 0}, {0, 3000, 3000}}; /* device, allocated, reserved */
    for (int i = 0; i < 3; i++) {
      yajl_val c = ft_test_find_ph(doc, "C", "Memory", i);
      assert_non_null(c);
      assert_int_equal(num(c, "pid"), counter[i][0]);
      assert_int_equal(num(ft_test_get(c, "args"), "Allocated"), counter[i][1]);
      assert_int_equal(num(ft_test_get(c, "args"), "Reserved"), counter[i][2]);
    }
  }
  yajl_tree_free(doc);
  ft_session_destroy(s);
  unsetenv("ASCEND_RT_VISIBLE_DEVICES");
}

static void test_missing_library(void **state) {
  (void)state;
  char *saved = strdup(getenv("FLAGOS_TRACER_LIBRARY"));
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent/libmspti.so", 1);
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  const char *why;
  assert_int_equal(ft_session_device_status(s, &why), FT_EUNAVAILABLE);
  assert_non_null(strstr(why, "/nonexistent/libmspti.so"));
  assert_int_equal(ft_session_start(s), FT_OK); /* CPU profiling continues */
  assert_int_equal(ft_range_push(s, "cpu", NULL), FT_OK);
  assert_int_equal(ft_range_pop(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_destroy(s);
  setenv("FLAGOS_TRACER_LIBRARY", saved, 1);
  free(saved);
}

int main(void) {
  /* The tracer samples the link map at its first creation: do that before this
   * test loads the fake itself, as a program would before the tracer loads MSPTI. */
  ft_session *first;
  if (ft_session_create(&first, NULL) != FT_OK) return 1;
  ft_session_destroy(first);
  const char *p = getenv("FLAGOS_TRACER_LIBRARY");
  void *h = p ? dlopen(p, RTLD_NOW | RTLD_GLOBAL) : NULL;
  if (!h) {
    fprintf(stderr, "test_mspti_fake: FLAGOS_TRACER_LIBRARY must name the fake libmspti\n");
    return 1;
  }
  launch = (fake_ms_launch_fn)dlsym(h, "fake_mspti_launch");
  drop = (fake_ms_drop_fn)dlsym(h, "fake_mspti_drop");
  memory = (fake_ms_memory_fn)dlsym(h, "fake_mspti_memory");
  preloaded = getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "libmspti.so");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_runtime_and_attribution),
      cmocka_unit_test(test_copies_need_a_process_start_preload),
      cmocka_unit_test(test_contract),
      cmocka_unit_test(test_memory_records),
      cmocka_unit_test(test_memory_in_the_trace),
      cmocka_unit_test(test_missing_library),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
