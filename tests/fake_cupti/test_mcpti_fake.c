/* The CUPTI tracer built for MetaX (FT_MCPTI) against the fake libmcpti: MCPTI's
 * record sizes, its own clock and API-id namespace, names looked up only after the
 * flush, resynchronization over malformed records, "timing unavailable" records. */
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
#include <unistd.h>

#include <cupti_activity.h>

#include "fake_cupti.h"
#include "internal.h"
#include "test_support.h"

static fake_cupti_launch_fn launch;
static int (*api_name_misuse)(void);
static void (*corrupt)(size_t n);
static int (*memory_ever_enabled)(void);

static fake_launch kernel(const char *name, uint64_t dur) {
  fake_launch l = {
      .kind = FAKE_KERNEL, .name = name, .grid = {64, 2, 1}, .block = {128, 1, 1}, .regs = 24, .dur_ns = dur};
  return l;
}

static long long arg_int(yajl_val e, const char *key) {
  yajl_val v = ft_test_get(ft_test_get(e, "args"), key);
  if (!v || !YAJL_IS_INTEGER(v)) fail_msg("args[\"%s\"] is not an integer", key);
  return YAJL_GET_INTEGER(v);
}

static void test_records_clock_and_names(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "aten::mm", &op), FT_OK);
  fake_launch k = kernel("_Z6matmulPfS_S_i", 250000); /* 250 µs on MCPTI's clock */
  fake_launch cp = {.kind = FAKE_MEMCPY,
                    .copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                    .src_kind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                    .dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                    .bytes = 1 << 20,
                    .dur_ns = 5000,
                    .cbid = 12};
  fake_launch ms = {
      .kind = FAKE_MEMSET, .memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, .bytes = 4096, .dur_ns = 700, .cbid = 20};
  fake_launch unnamed = {.kind = FAKE_RUNTIME_ONLY, .cbid = 99}; /* an id MCPTI cannot name */
  launch(&k);
  launch(&cp);
  launch(&ms);
  launch(&unnamed);
  assert_int_equal(ft_range_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  /* names were looked up, and never from inside the buffer callback */
  assert_int_equal(api_name_misuse(), 0);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.window_discarded, 0); /* MCPTI's clock mapped onto the session's */
  assert_int_equal(c.dropped_records, 0);
  yajl_val doc = ft_test_render(s);
  assert_string_equal(ft_test_str(ft_test_get(doc, "flagtrace"), "tracer"), "mcpti");
  yajl_val kr = ft_test_find_x(doc, "kernel", "matmul(float*, float*, float*, int)", 0);
  assert_non_null(kr);
  double dur = YAJL_GET_DOUBLE(ft_test_get(kr, "dur"));
  /* the map's rate comes from two clock samples milliseconds apart: allow 0.4 % */
  if (dur < 249.0 || dur > 251.0) fail_msg("kernel duration %f us, expected 250", dur);
  assert_int_equal(arg_int(kr, "External id"), (long long)op);
  assert_int_equal(arg_int(kr, "registers per thread"), 24);
  assert_null(ft_test_get(ft_test_get(kr, "args"), "est. achieved occupancy %")); /* no MetaX properties: omitted */
  yajl_val cr = ft_test_find_x(doc, "gpu_memcpy", NULL, 0);
  assert_non_null(cr);
  assert_int_equal(arg_int(cr, "bytes"), 1 << 20);
  yajl_val sr = ft_test_find_x(doc, "gpu_memset", NULL, 0);
  assert_non_null(sr);
  assert_int_equal(arg_int(sr, "bytes"), 4096);
  /* MCPTI's own ids, named by mcptiActivityGetApiName; CUPTI's table would say
   * cudaGetDeviceCount_v3020 for 7 */
  yajl_val launch_row = ft_test_find_x(doc, "cuda_runtime", "mcLaunchKernel", 0);
  assert_non_null(launch_row);
  assert_int_equal(arg_int(launch_row, "cbid"), 7);
  assert_non_null(ft_test_find_x(doc, "cuda_runtime", "mcMemcpyAsync", 0));
  yajl_val generic = ft_test_find_x(doc, "cuda_runtime", "mcRuntime", 0);
  assert_non_null(generic);
  assert_int_equal(arg_int(generic, "cbid"), 99);
  ft_contract con = {.vendor = "metax/mcpti",
                     .runtime_cat = "cuda_runtime",
                     .launch_name = "mcLaunchKernel",
                     .op = (long long)op,
                     .memcpy_bytes = 1 << 20,
                     .memset_bytes = 4096};
  ft_test_contract(doc, &con);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* Garbage between records (MCPTI 3.8) is stepped over to the next well-formed
 * record; "timing unavailable" records are dropped and counted. */
static void test_resync_and_untimed(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  char names[6][16];
  for (int i = 0; i < 6; i++) {
    snprintf(names[i], sizeof names[i], "k%d", i);
    if (i == 2) corrupt(24);
    if (i == 4) corrupt(200); /* as long as a kernel record */
    fake_launch k = kernel(names[i], 1000 + (uint64_t)i);
    launch(&k);
  }
  fake_launch untimed = kernel("untimed", 1000);
  untimed.no_timing = 1;
  launch(&untimed);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.dropped_records, 1); /* the untimed kernel, counted */
  yajl_val doc = ft_test_render(s);
  for (int i = 0; i < 6; i++) {
    yajl_val k = ft_test_find_x(doc, "kernel", names[i], 0);
    if (!k) fail_msg("kernel %s lost around the malformed records", names[i]);
    assert_null(ft_test_find_x(doc, "kernel", names[i], 1));
  }
  assert_null(ft_test_find_x(doc, "kernel", "untimed", 0));
  /* its launch is still there, and no flow points at a kernel that is not */
  yajl_val ev = ft_test_get(doc, "traceEvents");
  size_t kernels = 0, ends = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    const char *ph = ft_test_str(ev->u.array.values[i], "ph"), *cat = ft_test_str(ev->u.array.values[i], "cat");
    kernels += !strcmp(ph, "X") && !strcmp(cat, "kernel");
    ends += !strcmp(ph, "f");
  }
  assert_int_equal(kernels, 6);
  assert_int_equal(ends, 6);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* Device memory is not armed on MetaX: MCPTI's memory record sizes are not known
 * (mcpti_walk.c would step over them as malformed), so a session that asks for it
 * (the default) never enables MEMORY2 or MEMORY_POOL and records no [memory] event. */
static void test_memory_never_armed(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch m = {.kind = FAKE_MEMORY,
                   .mem_op = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                   .memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                   .address = 0x7f0000000000ull,
                   .bytes = 4096,
                   .cbid = 12};
  launch(&m);
  fake_launch k = kernel("beside_memory", 1000);
  launch(&k);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(memory_ever_enabled(), 0);
  yajl_val doc = ft_test_render(s);
  yajl_val ev = ft_test_get(doc, "traceEvents");
  size_t memory = 0, kernels = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    const char *name = ft_test_str(ev->u.array.values[i], "name");
    memory += name && !strcmp(name, "[memory]");
    kernels += name && !strcmp(name, "beside_memory");
  }
  assert_int_equal(memory, 0);
  assert_int_equal(kernels, 1);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* --capture-range needs the profiler-API callback ids, which MCPTI numbers its own way. */
static void test_no_profiler_api_watch(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  const ft_tracer_ops *ops = s->tracer->ops;
  assert_string_equal(ops->name, "mcpti");
  assert_int_not_equal(ops->watch_profiler_api(s->tracer, NULL, NULL), FT_OK);
  assert_non_null(strstr(ops->last_error(s->tracer), "MCPTI"));
  ft_session_destroy(s);
}

/* Diagnostics from paths shared with CUPTI name the tracer this build has: with
 * FLAGOS_TRACE on, a whole session logs "mcpti:" lines and never "cupti:". */
static void test_log_lines_say_mcpti(void **state) {
  (void)state;
  char path[] = "/tmp/ft_mcpti_log_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  setenv("FLAGOS_TRACE", "1", 1);
  ft__trace_reset_for_tests();
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK); /* binds the library: logged */
  assert_int_equal(ft_session_start(s), FT_OK);
  fake_launch k = kernel("logged", 1000);
  launch(&k);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_destroy(s);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  unsetenv("FLAGOS_TRACE");
  ft__trace_reset_for_tests();
  char text[65536];
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  unlink(path);
  assert_true(n > 0);
  text[n] = '\0';
  assert_non_null(strstr(text, "flagtrace: mcpti: "));
  if (strstr(text, "flagtrace: cupti: ")) fail_msg("a line says cupti on MetaX:\n%s", text);
}

int main(void) {
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "test_mcpti_fake: FLAGOS_TRACER_LIBRARY must name the fake libmcpti\n");
    return 1;
  }
  launch = (fake_cupti_launch_fn)dlsym(h, "fake_cupti_launch");
  *(void **)&api_name_misuse = dlsym(h, "fake_mcpti_api_name_misuse");
  *(void **)&corrupt = dlsym(h, "fake_mcpti_corrupt");
  *(void **)&memory_ever_enabled = dlsym(h, "fake_cupti_memory_ever_enabled");
  if (!launch || !api_name_misuse || !corrupt || !memory_ever_enabled) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_records_clock_and_names), cmocka_unit_test(test_resync_and_untimed),
      cmocka_unit_test(test_no_profiler_api_watch), cmocka_unit_test(test_log_lines_say_mcpti),
      cmocka_unit_test(test_memory_never_armed)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
