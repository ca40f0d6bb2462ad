/* The TOPSPTI tracer's real code against the fake libtopspti: exact decoding of each
 * record kind, framework-op attribution through the API-enter callback, the clock
 * mapping, the layout-version warning and dropped-record counting. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_topspti.h"
#include "../fake_common/capture_sink.h"
#include "internal.h"
#include "test_support.h"

static fake_tp_launch_fn launch;
static fake_tp_drop_fn drop;
static fake_tp_set_version_fn set_version;

enum { CBID_LAUNCH = 24, CBID_MEMCPY = 10, CBID_MEMSET = 2, CBID_DRIVER = 7 };

static fake_tp_launch kernel(const char *name) {
  return (fake_tp_launch){.kind = FAKE_TP_KERNEL,
                          .name = name,
                          .grid = {8, 2, 1},
                          .block = {128, 1, 1},
                          .device = 1,
                          .context = 7,
                          .stream = 3,
                          .dur_ns = 100000,
                          .cbid = CBID_LAUNCH};
}

static void launch_kernel(const char *name) {
  fake_tp_launch k = kernel(name);
  launch(&k);
}

static long long iarg(yajl_val e, const char *key) {
  yajl_val v = ft_test_get(ft_test_get(e, "args"), key);
  if (!v || !YAJL_IS_INTEGER(v)) fail_msg("'%s' has no integer arg %s", ft_test_str(e, "name"), key);
  return YAJL_GET_INTEGER(v);
}

static bool has_external(yajl_val e) { return ft_test_get(ft_test_get(e, "args"), "External id") != NULL; }

static void assert_triple(yajl_val e, const char *key, long long x, long long y, long long z) {
  yajl_val a = ft_test_get(ft_test_get(e, "args"), key);
  if (!a || !YAJL_IS_ARRAY(a) || a->u.array.len != 3) fail_msg("%s is not a 3-list", key);
  assert_int_equal(YAJL_GET_INTEGER(a->u.array.values[0]), x);
  assert_int_equal(YAJL_GET_INTEGER(a->u.array.values[1]), y);
  assert_int_equal(YAJL_GET_INTEGER(a->u.array.values[2]), z);
}

static void test_decode_exact_values(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "gcu_op", &op), FT_OK);
  fake_tp_launch k = kernel("_Z10add_kernelPfS_");
  launch(&k);
  launch(&(fake_tp_launch){.kind = FAKE_TP_MEMCPY,
                           .copy_kind = 1,
                           .bytes = 4096,
                           .device = 1,
                           .context = 7,
                           .stream = 3,
                           .dur_ns = 2000,
                           .cbid = CBID_MEMCPY});
  launch(&(fake_tp_launch){.kind = FAKE_TP_MEMSET,
                           .value = 255,
                           .bytes = 512,
                           .device = 1,
                           .context = 7,
                           .stream = 4,
                           .dur_ns = 1000,
                           .cbid = CBID_MEMSET});
  fake_tp_launch dk = kernel("plain_kernel");
  dk.driver = 1, dk.cbid = CBID_DRIVER;
  launch(&dk);
  assert_int_equal(ft_range_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.window_discarded, 0); /* mapped into the session, on CLOCK_REALTIME */
  assert_int_equal(c.dropped_records, 0);
  yajl_val doc = ft_test_render(s);

  yajl_val ke = ft_test_find_x(doc, "kernel", "add_kernel(float*, float*)", 0); /* demangled */
  assert_non_null(ke);
  assert_int_equal(iarg(ke, "device"), 1);
  assert_int_equal(iarg(ke, "stream"), 3);
  assert_int_equal(iarg(ke, "context"), 7);
  assert_int_equal(iarg(ke, "External id"), op);
  assert_triple(ke, "grid", 8, 2, 1);
  assert_triple(ke, "block", 128, 1, 1);
  /* the record's register field is never read: no metadata the record lacks */
  assert_null(ft_test_get(ft_test_get(ke, "args"), "registers per thread"));
  assert_null(ft_test_get(ft_test_get(ke, "args"), "shared memory"));
  assert_null(ft_test_get(ft_test_get(ke, "args"), "est. achieved occupancy %"));
  assert_non_null(ft_test_find_x(doc, "kernel", "plain_kernel", 0)); /* not mangled: kept */

  yajl_val cp = ft_test_find_x(doc, "gpu_memcpy", "Memcpy", 0);
  assert_non_null(cp);
  assert_int_equal(iarg(cp, "bytes"), 4096);
  assert_int_equal(iarg(cp, "copy kind"), 1);
  assert_int_equal(iarg(cp, "context"), 7);
  assert_int_equal(iarg(cp, "stream"), 3);
  yajl_val st = ft_test_find_x(doc, "gpu_memset", "Memset", 0);
  assert_non_null(st);
  assert_int_equal(iarg(st, "bytes"), 512);
  assert_int_equal(iarg(st, "value"), 255);
  assert_int_equal(iarg(st, "stream"), 4);

  /* API rows: named by topsptiGetCallbackName, on this thread's OS id (TOPSPTI's
   * records carry the pthread id) */
  yajl_val rt = ft_test_find_x(doc, "privateuse1_runtime", "topsLaunchKernel", 0);
  assert_non_null(rt);
  assert_int_equal(iarg(rt, "cbid"), CBID_LAUNCH);
  assert_int_equal(YAJL_GET_INTEGER(ft_test_get(rt, "tid")), (long long)gettid());
  assert_non_null(ft_test_find_x(doc, "privateuse1_runtime", "topsMemcpyAsync", 0));
  assert_non_null(ft_test_find_x(doc, "privateuse1_runtime", "topsMemsetAsync", 0));
  yajl_val dr = ft_test_find_x(doc, "privateuse1_driver", "topsDriver", 0); /* no name for this id */
  assert_non_null(dr);
  assert_int_equal(iarg(dr, "cbid"), CBID_DRIVER);

  /* the clock: the device clock runs 0.1 % fast and the kernel starts 1000 device
   * ns after its runtime call, so 100 us become 99.9 and 1 us 0.999 */
  double dur = YAJL_GET_DOUBLE(ft_test_get(ke, "dur"));
  if (dur < 99.85 || dur > 99.95) fail_msg("mapped duration %f us, expected ~99.9", dur);
  double gap = YAJL_GET_DOUBLE(ft_test_get(ke, "ts")) - YAJL_GET_DOUBLE(ft_test_get(rt, "ts"));
  if (gap < 0.990 || gap > 1.006) fail_msg("kernel starts %f us after its launch call, expected ~0.999", gap);

  uint64_t ns, n;
  assert_int_equal(ft_session_device_time(s, op, &ns, &n), FT_OK);
  assert_int_equal(n, 4);
  ft_contract con = {.vendor = "gcu/topspti",
                     .runtime_cat = "privateuse1_runtime",
                     .launch_name = "topsLaunchKernel",
                     .op = (long long)op,
                     .memcpy_bytes = 4096,
                     .memset_bytes = 512};
  ft_test_contract(doc, &con);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

typedef struct other_thread {
  ft_session *s;
  uint64_t op;
} other_thread;

static void *launch_elsewhere(void *arg) {
  other_thread *o = arg;
  launch_kernel("other_thread_unattributed");
  assert_int_equal(ft_range_push(o->s, "other_op", &o->op), FT_OK);
  launch_kernel("other_thread_attributed");
  assert_int_equal(ft_range_pop(o->s), FT_OK);
  return NULL;
}

/* TOPSPTI has no external-correlation API: the id is the one pushed on the calling
 * thread when the API-enter callback runs, whatever order records arrive in. */
static void test_external_ids_from_api_enter(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  launch_kernel("before_any_op");
  uint64_t outer, inner;
  assert_int_equal(ft_range_push(s, "outer", &outer), FT_OK);
  other_thread o = {.s = s};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, launch_elsewhere, &o), 0); /* while outer is open here */
  assert_int_equal(pthread_join(th, NULL), 0);
  launch_kernel("in_outer");
  assert_int_equal(ft_range_push(s, "inner", &inner), FT_OK);
  launch_kernel("in_inner");
  /* the buffer holding this kernel is completed before its API-enter callback runs */
  fake_tp_launch late = kernel("callback_after_completion");
  late.callback_after_completion = 1;
  launch(&late);
  assert_int_equal(ft_range_pop(s), FT_OK);
  launch_kernel("outer_again");
  assert_int_equal(ft_range_pop(s), FT_OK);
  launch_kernel("after_all_ops");
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  struct {
    const char *name;
    long long op; /* -1: none */
  } want[] = {{"before_any_op", -1},
              {"other_thread_unattributed", -1}, /* outer is pushed on another thread */
              {"other_thread_attributed", (long long)o.op},
              {"in_outer", (long long)outer},
              {"in_inner", (long long)inner},
              {"callback_after_completion", (long long)inner},
              {"outer_again", (long long)outer},
              {"after_all_ops", -1}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    yajl_val k = ft_test_find_x(doc, "kernel", want[i].name, 0);
    if (!k) fail_msg("kernel %s missing", want[i].name);
    if (want[i].op < 0) {
      if (has_external(k)) fail_msg("kernel %s carries an External id it was not issued under", want[i].name);
    } else if (iarg(k, "External id") != want[i].op) {
      fail_msg("kernel %s: External id %lld, expected %lld", want[i].name, iarg(k, "External id"), want[i].op);
    }
  }
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* Runs a session start with stderr captured; returns what was written (malloc'ed). */
static char *start_capturing_stderr(ft_session **s) {
  char path[] = "/tmp/ft_topspti_stderr_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  *s = ft_test_started();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  size_t len;
  char *text = ft_test_read_file(path, &len);
  unlink(path);
  assert_non_null(text);
  return text;
}

static void stop_and_destroy(ft_session *s) {
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_destroy(s);
}

static void test_layout_version_check(void **state) {
  (void)state;
  ft_session *s;
  set_version(5);
  char *out = start_capturing_stderr(&s);
  stop_and_destroy(s);
  if (!strstr(out, "reports TOPSPTI API version 5 but the record layouts were written for version 4"))
    fail_msg("no layout-version warning for version 5; stderr was: %s", out);
  free(out);

  set_version(0); /* topsptiGetVersion fails: the version is unknown, said so */
  out = start_capturing_stderr(&s);
  stop_and_destroy(s);
  if (!strstr(out, "topsptiGetVersion failed")) fail_msg("no warning for an unknown version; stderr was: %s", out);
  free(out);

  set_version(4); /* the one written against: silent */
  out = start_capturing_stderr(&s);
  stop_and_destroy(s);
  if (strstr(out, "version")) fail_msg("a version warning for the expected version: %s", out);
  free(out);
}

static void test_dropped_records_counted(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_tp_launch k = kernel("kept");
  launch(&k);
  drop(3); /* reported by the library */
  fake_tp_launch z = kernel("no_time");
  z.zero_time = 1; /* start = end = 0: no real timestamp, dropped and counted */
  launch(&z);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.dropped_records, 4);
  yajl_val doc = ft_test_render(s);
  assert_non_null(ft_test_find_x(doc, "kernel", "kept", 0));
  assert_null(ft_test_find_x(doc, "kernel", "no_time", 0));
  yajl_tree_free(doc);
  ft_session_destroy(s);

  s = ft_test_started(); /* a new session starts from zero */
  launch(&k);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.dropped_records, 0);
  ft_session_destroy(s);
}

/* Device memory asked for: TOPSPTI has no allocation records (docs/memory.md), so
 * the start still succeeds, the rest is recorded, and no memory event is made up. */
static void test_memory_not_offered(void **state) {
  (void)state;
  ft_tracer *tr;
  assert_int_equal(ft_make_device_tracer(&tr), FT_OK);
  capture cap;
  ft_event_sink sink;
  cap_init(&cap, &sink);
  assert_int_equal(tr->ops->start(tr, &sink, FT_ACTIVITY_ALL), FT_OK);
  launch(&(fake_tp_launch){.kind = FAKE_TP_KERNEL, .name = "k", .grid = {1, 1, 1}, .block = {1, 1, 1}, .dur_ns = 1000});
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  assert_int_equal(cap_count(&cap, FT_EVENT_KERNEL), 1);
  assert_int_equal(cap_count(&cap, FT_EVENT_MEMORY), 0);
  tr->ops->destroy(tr);
}

int main(void) {
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "test_topspti_fake: FLAGOS_TRACER_LIBRARY must name the fake libtopspti\n");
    return 1;
  }
  launch = (fake_tp_launch_fn)dlsym(h, "fake_topspti_launch");
  drop = (fake_tp_drop_fn)dlsym(h, "fake_topspti_drop");
  set_version = (fake_tp_set_version_fn)dlsym(h, "fake_topspti_set_version");
  if (!launch || !drop || !set_version) {
    fprintf(stderr, "test_topspti_fake: the fake libtopspti lacks its control functions\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_exact_values),  cmocka_unit_test(test_external_ids_from_api_enter),
      cmocka_unit_test(test_layout_version_check), cmocka_unit_test(test_dropped_records_counted),
      cmocka_unit_test(test_memory_not_offered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
