/* The real CUPTI tracer driven by the fake libcupti: decoding, flows, attribution,
 * window, drops, and every way the library can be unusable. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti_activity.h>

#include "fake_cupti.h"
#include "internal.h"
#include "tracer_support.h"
#include "test_support.h"
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

static fake_cupti_launch_fn launch;
static fake_cupti_drop_fn drop;
static int (*ext_pushes)(void);
/* The library's own forced flush: completed buffers reach the tracer mid-session. */
static CUptiResult (*flush_all)(uint32_t flag);
/* what another CUPTI client calls (test_another_client_takes_cupti) */
static CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
static CUptiResult (*enable_kind)(CUpti_ActivityKind);
static CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
static char fake_path[4096];

#include "fake_memory.h"
#include "cupti_tracer.h" /* the memory call table (cupti_mem_calls.c) */

/* Every followed call's entry is looked at exactly when its role needs it (a
 * synchronization, a trim, a pool's destruction: ft__cupti_entry_call, told from the id
 * alone) — the same roles the parameter readers give, read from zeroed parameters. */
static void test_memory_entry_calls_agree(void **state) {
  (void)state;
  uint64_t params[64] = {0};
  for (int driver = 0; driver < 2; driver++) {
    const CUpti_CallbackId *ids = driver ? ft__cupti_driver_calls : ft__cupti_runtime_calls;
    size_t n = driver ? ft__cupti_n_driver_calls : ft__cupti_n_runtime_calls, entries = 0;
    for (size_t i = 0; i < n; i++) {
      ft__mem_call c;
      assert_true(driver ? ft__cupti_read_driver(ids[i], params, &c) : ft__cupti_read_runtime(ids[i], params, &c));
      bool wanted = c.role == FT__MEM_SYNC || c.role == FT__MEM_POOL_TRIM || c.role == FT__MEM_POOL_GONE;
      if (ft__cupti_entry_call(driver, ids[i]) != wanted) fail_msg("%s call %u", driver ? "driver" : "runtime", ids[i]);
      entries += wanted;
    }
    assert_int_equal(entries, 6); /* 4 synchronizations, a trim, a destruction in each domain */
  }
  assert_false(ft__cupti_entry_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
}

static size_t count_cat(yajl_val doc, const char *ph, const char *cat) {
  yajl_val ev = ft_test_get(doc, "traceEvents");
  size_t n = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    if (!strcmp(ft_test_str(e, "ph"), ph) && (!cat || !strcmp(ft_test_str(e, "cat"), cat))) n++;
  }
  return n;
}

static double num(yajl_val args, const char *key) {
  yajl_val v = ft_test_get(args, key);
  if (!v || !YAJL_IS_NUMBER(v)) fail_msg("args[\"%s\"] is not a number", key);
  return YAJL_GET_DOUBLE(v);
}

static void expect_dim(yajl_val args, const char *key, int x, int y, int z) {
  yajl_val v = ft_test_get(args, key);
  assert_true(v && YAJL_IS_ARRAY(v) && v->u.array.len == 3);
  assert_int_equal(YAJL_GET_INTEGER(v->u.array.values[0]), x);
  assert_int_equal(YAJL_GET_INTEGER(v->u.array.values[1]), y);
  assert_int_equal(YAJL_GET_INTEGER(v->u.array.values[2]), z);
}

/* The small kernel most tests launch: one block of one warp. */
static fake_launch kernel(const char *name, uint64_t dur) {
  return (fake_launch){
      .kind = FAKE_KERNEL, .name = name, .grid = {1, 1, 1}, .block = {32, 1, 1}, .regs = 8, .dur_ns = dur};
}

/* A kernel's arguments are formatted once per configuration and reused while it
 * repeats: each kernel still gets its own, whatever came before it. */
static void test_kernel_args_follow_each_configuration(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch a = {
      .kind = FAKE_KERNEL, .name = "a0", .grid = {256, 1, 1}, .block = {256, 1, 1}, .regs = 44, .dur_ns = 1000};
  fake_launch b = a; /* grid z only */
  b.name = "b";
  b.grid[2] = 2;
  fake_launch c = b; /* dynamic shared memory only */
  c.name = "c";
  c.dynamic_smem = 512;
  launch(&a);
  a.name = "a1";
  launch(&a);
  launch(&b);
  launch(&c);
  a.name = "a2";
  launch(&a);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  static const struct {
    const char *name;
    int gz, smem;
  } want[] = {{"a0", 1, 0}, {"a1", 1, 0}, {"b", 2, 0}, {"c", 2, 512}, {"a2", 1, 0}};
  for (size_t i = 0; i < 5; i++) {
    yajl_val args = ft_test_get(ft_test_find_x(doc, "kernel", want[i].name, 0), "args");
    assert_non_null(args);
    expect_dim(args, "grid", 256, 1, want[i].gz);
    assert_int_equal(num(args, "shared memory"), want[i].smem);
  }
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* The four kernels of the torch-cuda reference trace, with its values. */
static void test_kernel_fields_match_torch_reference(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "aten::mm", &op), FT_OK);
  fake_launch k1 = {.kind = FAKE_KERNEL,
                    .name = "elementwise_kernel_256",
                    .grid = {256, 1, 1},
                    .block = {256, 1, 1},
                    .regs = 44,
                    .dur_ns = 2080};
  fake_launch k2 = {.kind = FAKE_KERNEL,
                    .name = "sm80_xmma_gemm_kernel",
                    .grid = {8, 8, 4},
                    .block = {64, 1, 1},
                    .regs = 80,
                    .static_smem = 6528,
                    .dur_ns = 4416};
  fake_launch k3 = {.kind = FAKE_KERNEL,
                    .name = "sm80_xmma_gemm_split_k_kernel",
                    .grid = {8, 8, 1},
                    .block = {64, 1, 1},
                    .regs = 72,
                    .static_smem = 4608,
                    .dur_ns = 2848};
  fake_launch k4 = {.kind = FAKE_KERNEL,
                    .name = "_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi",
                    .grid = {64, 1, 1},
                    .block = {128, 1, 1},
                    .regs = 28,
                    .dur_ns = 1152};
  /* not in the reference: 13200 blocks of 1024 threads, 64 regs -> register bound:
   * 1 block per SM -> 1024/2048 = 50 % */
  fake_launch k5 = {.kind = FAKE_KERNEL,
                    .name = "big_kernel",
                    .grid = {13200, 1, 1},
                    .block = {1024, 1, 1},
                    .regs = 64,
                    .dur_ns = 5000};
  uint32_t c1 = launch(&k1);
  launch(&k2);
  launch(&k3);
  launch(&k4);
  launch(&k5);
  assert_int_equal(ft_range_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);

  yajl_val e = ft_test_find_x(doc, "kernel", "elementwise_kernel_256", 0);
  assert_non_null(e);
  yajl_val a = ft_test_get(e, "args");
  static const char *const keys[] = {"External id",
                                     "device",
                                     "stream",
                                     "correlation",
                                     "queued",
                                     "context",
                                     "registers per thread",
                                     "shared memory",
                                     "blocks per SM",
                                     "warps per SM",
                                     "grid",
                                     "block",
                                     "est. achieved occupancy %"};
  assert_int_equal(a->u.object.len, 13);
  for (size_t i = 0; i < 13; i++)
    if (!ft_test_get(a, keys[i])) fail_msg("kernel args lack \"%s\"", keys[i]);
  assert_int_equal(num(a, "External id"), op);
  assert_int_equal(num(a, "correlation"), c1);
  assert_int_equal(num(a, "stream"), 7);
  assert_int_equal(num(a, "context"), 1);
  assert_int_equal(num(a, "queued"), 0);
  assert_int_equal(num(a, "registers per thread"), 44);
  assert_true(fabs(num(a, "blocks per SM") - 1.939394) < 1e-9);
  assert_true(fabs(num(a, "warps per SM") - 15.515152) < 1e-9);
  assert_int_equal(num(a, "est. achieved occupancy %"), 24);
  expect_dim(a, "grid", 256, 1, 1);
  expect_dim(a, "block", 256, 1, 1);

  a = ft_test_get(ft_test_find_x(doc, "kernel", "sm80_xmma_gemm_kernel", 0), "args");
  assert_int_equal(num(a, "shared memory"), 6528);
  assert_true(fabs(num(a, "warps per SM") - 3.878788) < 1e-9);
  assert_int_equal(num(a, "est. achieved occupancy %"), 6);
  a = ft_test_get(ft_test_find_x(doc, "kernel", "sm80_xmma_gemm_split_k_kernel", 0), "args");
  assert_true(fabs(num(a, "blocks per SM") - 0.484848) < 1e-9);
  assert_true(fabs(num(a, "warps per SM") - 0.969697) < 1e-9);
  assert_int_equal(num(a, "est. achieved occupancy %"), 2);
  /* demangled name */
  e = ft_test_find_x(doc, "kernel", "void at::native::vectorized_elementwise_kernel<4>(int)", 0);
  if (!e) fail_msg("demangled kernel name missing");
  a = ft_test_get(e, "args");
  assert_true(fabs(num(a, "warps per SM") - 1.939394) < 1e-9);
  assert_int_equal(num(a, "est. achieved occupancy %"), 3);
  a = ft_test_get(ft_test_find_x(doc, "kernel", "big_kernel", 0), "args");
  assert_int_equal(num(a, "est. achieved occupancy %"), 50);

  /* one runtime event per launch, named from the cbid table, every flow paired */
  assert_int_equal(count_cat(doc, "X", "cuda_runtime"), 5);
  e = ft_test_find_x(doc, "cuda_runtime", "cudaLaunchKernel", 0);
  assert_non_null(e);
  assert_int_equal(num(ft_test_get(e, "args"), "cbid"), 211);
  assert_int_equal(num(ft_test_get(e, "args"), "External id"), op);
  /* the runtime row is the OS thread of the range, not CUPTI's pthread-based id */
  assert_int_equal(num(e, "tid"), num(ft_test_find_x(doc, "user_annotation", "aten::mm", 0), "tid"));
  assert_int_equal(num(e, "tid"), ft__gettid());
  assert_int_equal(count_cat(doc, "s", "ac2g"), 5);
  assert_int_equal(count_cat(doc, "f", "ac2g"), 5);
  uint64_t ns, n;
  assert_int_equal(ft_session_device_time(s, op, &ns, &n), FT_OK);
  assert_int_equal(n, 5);
  assert_int_equal(ns, 2080 + 4416 + 2848 + 1152 + 5000);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_copies_sets_and_runtime_names(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch cp = {.kind = FAKE_MEMCPY,
                    .copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                    .src_kind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                    .dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                    .bytes = 65536,
                    .dur_ns = 2000,
                    .cbid = 0};
  fake_launch dd = {.kind = FAKE_MEMCPY,
                    .copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD,
                    .src_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                    .dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                    .bytes = 16384,
                    .dur_ns = 832};
  fake_launch ms = {
      .kind = FAKE_MEMSET, .memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, .bytes = 1 << 20, .dur_ns = 0};
  fake_launch sync = {.kind = FAKE_RUNTIME_ONLY, .cbid = 165};
  fake_launch unknown = {.kind = FAKE_RUNTIME_ONLY, .cbid = 100000};
  launch(&cp);
  launch(&dd);
  launch(&ms);
  launch(&sync);
  launch(&unknown);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  yajl_val e = ft_test_find_x(doc, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0);
  assert_non_null(e);
  yajl_val a = ft_test_get(e, "args");
  assert_int_equal(num(a, "bytes"), 65536);
  assert_true(num(a, "memory bandwidth (GB/s)") == 32.768);
  assert_null(ft_test_get(a, "External id")); /* launched outside any range */
  a = ft_test_get(ft_test_find_x(doc, "gpu_memcpy", "Memcpy DtoD (Device -> Device)", 0), "args");
  assert_true(num(a, "memory bandwidth (GB/s)") == 19.692307692307693);
  e = ft_test_find_x(doc, "gpu_memset", "Memset (Device)", 0);
  assert_non_null(e);
  a = ft_test_get(e, "args");
  assert_int_equal(num(a, "bytes"), 1 << 20);
  assert_string_equal(ft_test_str(a, "memory bandwidth (GB/s)"), "N/A"); /* zero duration: quoted */
  assert_non_null(ft_test_find_x(doc, "cuda_runtime", "cudaDeviceSynchronize", 0));
  e = ft_test_find_x(doc, "cuda_runtime", "cudaRuntime", 0); /* unknown id: generic label, cbid kept */
  assert_non_null(e);
  assert_int_equal(num(ft_test_get(e, "args"), "cbid"), 100000);
  /* three launches produced device work: three pairs; the two syncs none */
  assert_int_equal(count_cat(doc, "s", "ac2g"), 3);
  assert_int_equal(count_cat(doc, "f", "ac2g"), 3);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* The cross-backend contract (tests/unit/test_support.h): CUPTI carries every row. */
static void test_contract(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "aten::op", &op), FT_OK);
  fake_launch k = {.kind = FAKE_KERNEL,
                   .name = "contract_kernel",
                   .grid = {4, 1, 1},
                   .block = {100, 1, 1},
                   .regs = 32,
                   .dur_ns = 1500};
  fake_launch cp = {.kind = FAKE_MEMCPY,
                    .copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                    .src_kind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                    .dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                    .bytes = 65536,
                    .dur_ns = 2000};
  fake_launch ms = {
      .kind = FAKE_MEMSET, .memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, .bytes = 4 << 20, .dur_ns = 300};
  launch(&k);
  launch(&cp);
  launch(&ms);
  assert_int_equal(ft_range_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  ft_contract c = {.vendor = "cuda/cupti",
                   .runtime_cat = "cuda_runtime",
                   .launch_name = "cudaLaunchKernel",
                   .op = (long long)op,
                   .memcpy_bytes = 65536,
                   .memset_bytes = 4 << 20};
  ft_test_contract(doc, &c);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_graphs_orphans_and_window(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch graph = kernel("graph_node", 1000);
  graph.device_records = 3;
  fake_launch orphan = {.kind = FAKE_KERNEL,
                        .name = "orphan",
                        .grid = {1, 1, 1},
                        .block = {31, 1, 1},
                        .regs = 8,
                        .dur_ns = 1000}; /* block not a multiple of 32 */
  orphan.no_runtime = 1;
  fake_launch early = kernel("before_start", 1000);
  early.start_offset_ns = -10000000000ll; /* 10 s before: outside the window */
  uint32_t g = launch(&graph);
  launch(&orphan);
  launch(&early);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.window_discarded, 1);
  assert_int_equal(c.flows, 3);
  yajl_val doc = ft_test_render(s);
  assert_null(ft_test_find_x(doc, "kernel", "before_start", 0));
  expect_dim(ft_test_get(ft_test_find_x(doc, "kernel", "orphan", 0), "args"), "block", 31, 1, 1);
  /* three device events of one launch: one start and three ends, all with id g */
  yajl_val ev = ft_test_get(doc, "traceEvents");
  int s_n = 0, f_n = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    yajl_val id = ft_test_get(e, "id");
    if (!id) continue;
    assert_int_equal(YAJL_GET_INTEGER(id), g);
    if (!strcmp(ft_test_str(e, "ph"), "s")) s_n++;
    if (!strcmp(ft_test_str(e, "ph"), "f")) f_n++;
  }
  assert_int_equal(s_n, 1);
  assert_int_equal(f_n, 3);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

typedef struct graph_tally {
  int starts, ends, kernels, foreign;
  uint32_t start_ids[8];
} graph_tally;

static int graph_visit(void *ctx, const ft_export_event *x) {
  graph_tally *t = ctx;
  if (x->flow == FT_FLOW_START) t->start_ids[t->starts++ & 7] = (uint32_t)x->flow_id;
  if (x->event.kind == FT_EVENT_KERNEL) {
    t->kernels++;
    /* every node: an end whose id is its own launch's, attributed to op 42 */
    if (x->flow != FT_FLOW_END || x->flow_id != x->event.correlation_id || !x->event.has_external_id ||
        x->event.external_id != 42)
      t->foreign++;
    else t->ends++;
  }
  return 0;
}

/* Five replays of a five-node graph (issue 13): torch-cuda links all 25 nodes to
 * their cudaGraphLaunch, one start per launch and one end per node, in both front ends. */
static void test_graph_replays_link_every_node(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch g = kernel("graph_node", 1000);
  g.device_records = 5;
  g.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000;
  uint32_t corr[5];
  assert_int_equal(ft_correlation_push(s, 42), FT_OK);
  for (int i = 0; i < 5; i++) corr[i] = launch(&g);
  assert_int_equal(ft_correlation_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.flows, 25);
  yajl_val doc = ft_test_render(s);
  yajl_val ev = ft_test_get(doc, "traceEvents");
  int s_n[5] = {0}, f_n[5] = {0};
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    const char *ph = ft_test_str(e, "ph");
    if (strcmp(ph, "s") && strcmp(ph, "f")) continue;
    long long id = YAJL_GET_INTEGER(ft_test_get(e, "id"));
    int which = -1;
    for (int k = 0; k < 5; k++)
      if (id == corr[k]) which = k;
    assert_true(which >= 0);
    if (!strcmp(ph, "s")) s_n[which]++;
    else {
      f_n[which]++;
      /* the end sits on a node of that launch: the slice before it carries the id */
      yajl_val slice = ev->u.array.values[i - 1];
      assert_string_equal(ft_test_str(slice, "cat"), "kernel");
      assert_int_equal(num(ft_test_get(slice, "args"), "correlation"), id);
      assert_int_equal(num(ft_test_get(slice, "args"), "External id"), 42);
    }
  }
  for (int k = 0; k < 5; k++) {
    assert_int_equal(s_n[k], 1);
    assert_int_equal(f_n[k], 5);
  }
  assert_non_null(ft_test_find_x(doc, "cuda_runtime", "cudaGraphLaunch", 0));
  yajl_tree_free(doc);
  graph_tally t = {0};
  assert_int_equal(ft_session_foreach_event(s, 0, UINT64_MAX, graph_visit, &t, NULL), FT_OK);
  assert_int_equal(t.kernels, 25);
  assert_int_equal(t.ends, 25);
  assert_int_equal(t.foreign, 0);
  assert_int_equal(t.starts, 5);
  for (int k = 0; k < 5; k++) assert_int_equal(t.start_ids[k], corr[k]);
  ft_session_destroy(s);
}

static void test_driver_launches_and_activity_selection(void **state) {
  (void)state;
  /* a direct cuLaunchKernel (Triton): a cuda_driver row that owns the flow */
  ft_session *s = ft_test_started();
  fake_launch k = {.kind = FAKE_KERNEL,
                   .name = "triton_kernel",
                   .grid = {4, 1, 1},
                   .block = {128, 1, 1},
                   .regs = 32,
                   .dur_ns = 1000};
  k.driver = 1;
  launch(&k);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  yajl_val e = ft_test_find_x(doc, "cuda_driver", "cuLaunchKernel", 0);
  assert_non_null(e);
  assert_int_equal(num(ft_test_get(e, "args"), "cbid"), 307);
  assert_int_equal(count_cat(doc, "s", "ac2g"), 1);
  assert_int_equal(count_cat(doc, "f", "ac2g"), 1);
  yajl_tree_free(doc);
  ft_session_destroy(s);

  /* only kernels armed: no API rows, so no flows, but the kernel is there */
  ft_session_options o;
  ft_session_options_init(&o);
  o.activities = FT_ACTIVITY_KERNEL;
  assert_int_equal(ft_session_create(&s, &o), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  fake_launch k2 = {
      .kind = FAKE_KERNEL, .name = "kernel_only", .grid = {4, 1, 1}, .block = {128, 1, 1}, .regs = 32, .dur_ns = 1000};
  fake_launch cp = {.kind = FAKE_MEMCPY, .copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, .bytes = 8, .dur_ns = 10};
  launch(&k2);
  launch(&cp);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  doc = ft_test_render(s);
  assert_non_null(ft_test_find_x(doc, "kernel", "kernel_only", 0));
  assert_int_equal(count_cat(doc, "X", "cuda_runtime"), 0);
  assert_int_equal(count_cat(doc, "X", "gpu_memcpy"), 0);
  assert_int_equal(count_cat(doc, "s", "ac2g"), 0);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* API rows as torch-cuda's (issue 13): kineto's runtime blocklist and every driver
 * call but its tracked ones stay out, with CUPTI's per-API switch and without it
 * (decode-time filter); FLAGTRACE_CUPTI_ALL_APIS=1 brings them back. */
static void test_api_rows_as_kineto(void **state) {
  (void)state;
  static const uint32_t left_rt[] = {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020};
  static const char *const left_rt_names[] = {
      "cudaGetDevice",   "cudaSetDevice", "cudaGetLastError", "cudaEventCreate", "cudaEventCreateWithFlags",
      "cudaEventDestroy"};
  static const uint32_t left_drv[] = {CUPTI_DRIVER_TRACE_CBID_cuKernelGetName,
                                      CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
                                      CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessor,
                                      CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel,
                                      CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
                                      CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,
                                      CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent};
  static const char *const left_drv_names[] = {
      "cuKernelGetName",    "cuPointerGetAttribute", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
      "cuLibraryGetKernel", "cuKernelGetFunction",   "cuDeviceGetAttribute",
      "cuCtxGetCurrent"};
  for (int mode = 0; mode < 3; mode++) {
    bool all = mode == 2;
    if (mode == 1) setenv("FAKE_CUPTI_NO_API_SWITCH", "1", 1);
    if (all) setenv("FLAGTRACE_CUPTI_ALL_APIS", "1", 1);
    ft_session *s = ft_test_started();
    for (size_t i = 0; i < sizeof left_rt / sizeof *left_rt; i++) {
      fake_launch q = {.kind = FAKE_RUNTIME_ONLY, .cbid = left_rt[i]};
      launch(&q);
    }
    for (size_t i = 0; i < sizeof left_drv / sizeof *left_drv; i++) {
      fake_launch q = {.kind = FAKE_RUNTIME_ONLY, .driver = 1, .cbid = left_drv[i]};
      launch(&q);
    }
    fake_launch get_count = {.kind = FAKE_RUNTIME_ONLY, .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020};
    fake_launch mem_create = {.kind = FAKE_RUNTIME_ONLY, .driver = 1, .cbid = CUPTI_DRIVER_TRACE_CBID_cuMemCreate};
    fake_launch k = kernel("k", 100);
    fake_launch kex = kernel("kex", 100);
    kex.driver = 1;
    kex.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
    launch(&get_count);
    launch(&mem_create);
    launch(&k);
    launch(&kex);
    ft_test_settle();
    assert_int_equal(ft_session_stop(s), FT_OK);
    yajl_val doc = ft_test_render(s);
    /* kept in every mode */
    assert_non_null(ft_test_find_x(doc, "cuda_runtime", "cudaLaunchKernel", 0));
    assert_non_null(ft_test_find_x(doc, "cuda_runtime", "cudaGetDeviceCount", 0));
    assert_non_null(ft_test_find_x(doc, "cuda_driver", "cuMemCreate", 0));
    assert_non_null(ft_test_find_x(doc, "cuda_driver", "cuLaunchKernelEx", 0));
    for (size_t i = 0; i < sizeof left_rt / sizeof *left_rt; i++)
      if ((ft_test_find_x(doc, "cuda_runtime", left_rt_names[i], 0) != NULL) != all)
        fail_msg("mode %d: %s", mode, left_rt_names[i]);
    for (size_t i = 0; i < sizeof left_drv / sizeof *left_drv; i++)
      if ((ft_test_find_x(doc, "cuda_driver", left_drv_names[i], 0) != NULL) != all)
        fail_msg("mode %d: %s", mode, left_drv_names[i]);
    assert_int_equal(count_cat(doc, "X", "cuda_runtime"), all ? 8 : 2);
    assert_int_equal(count_cat(doc, "X", "cuda_driver"), all ? 9 : 2);
    yajl_tree_free(doc);
    ft_session_destroy(s);
    unsetenv("FAKE_CUPTI_NO_API_SWITCH");
  }
  unsetenv("FLAGTRACE_CUPTI_ALL_APIS");
}

/* Our occupancy queries run while decoding, with driver activity on: CUPTI records
 * them like the program's calls. They never become rows, even with every API kept;
 * the program's own query of the same API does. */
static void test_own_queries_are_not_rows(void **state) {
  (void)state;
  setenv("FLAGTRACE_CUPTI_ALL_APIS", "1", 1);
  ft_session *s = ft_test_started();
  fake_launch users = {.kind = FAKE_RUNTIME_ONLY, .driver = 1, .cbid = CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute};
  launch(&users);
  fake_launch k = kernel("k", 100);
  launch(&k);
  ft_test_settle();
  /* decoding the kernel now (activity on) makes the occupancy queries */
  assert_int_equal(flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  launch(&k);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  assert_non_null(ft_test_find_x(doc, "cuda_driver", "cuDeviceGetAttribute", 0)); /* the program's */
  assert_null(ft_test_find_x(doc, "cuda_driver", "cuDeviceGetAttribute", 1));
  assert_null(ft_test_find_x(doc, "cuda_driver", "cuDeviceGet", 0));
  /* the occupancy fields were computed, so the queries did run */
  assert_non_null(ft_test_get(ft_test_get(ft_test_find_x(doc, "kernel", "k", 0), "args"), "warps per SM"));
  yajl_tree_free(doc);
  ft_session_destroy(s);
  unsetenv("FLAGTRACE_CUPTI_ALL_APIS");
}

/* Peer-to-peer copies come as CUPTI_ACTIVITY_KIND_MEMCPY2 records: torch-cuda's name
 * and args, on the device that ran them, linked to their launch (issue 13). */
static void test_peer_to_peer_copies(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch p2p = {.kind = FAKE_P2P,
                     .bytes = 16 << 20,
                     .dur_ns = 100000,
                     .device = 1,
                     .src_device = 0,
                     .dst_device = 1,
                     .stream = 13,
                     .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020};
  assert_int_equal(ft_correlation_push(s, 77), FT_OK);
  uint32_t corr = launch(&p2p);
  assert_int_equal(ft_correlation_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  yajl_val e = ft_test_find_x(doc, "gpu_memcpy", "Memcpy PtoP (Device -> Device)", 0);
  assert_non_null(e);
  assert_int_equal(num(e, "pid"), 1);
  assert_int_equal(num(e, "tid"), 13);
  yajl_val a = ft_test_get(e, "args");
  assert_int_equal(num(a, "External id"), 77);
  assert_int_equal(num(a, "correlation"), corr);
  assert_int_equal(num(a, "device"), 1);
  assert_int_equal(num(a, "fromDevice"), 0);
  assert_int_equal(num(a, "inDevice"), 1);
  assert_int_equal(num(a, "toDevice"), 1);
  assert_int_equal(num(a, "fromContext"), 1);
  assert_int_equal(num(a, "inContext"), 2);
  assert_int_equal(num(a, "toContext"), 2);
  assert_int_equal(num(a, "bytes"), 16 << 20);
  assert_true(fabs(num(a, "memory bandwidth (GB/s)") - (16 << 20) / 100000.0) < 1e-9);
  /* kineto's key order after the ids */
  static const char *const order[] = {"fromDevice", "inDevice",  "toDevice", "fromContext",
                                      "inContext",  "toContext", "bytes",    "memory bandwidth (GB/s)"};
  size_t at = 0;
  for (size_t i = 0; i < a->u.object.len && at < 8; i++)
    if (!strcmp(a->u.object.keys[i], order[at])) at++;
  assert_int_equal(at, 8);
  assert_int_equal(count_cat(doc, "f", "ac2g"), 1);
  assert_int_equal(count_cat(doc, "s", "ac2g"), 1);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static bool has_meta(yajl_val doc, const char *name, long long pid, long long tid, const char *key, const char *sval,
                     long long ival) {
  yajl_val ev = ft_test_get(doc, "traceEvents");
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    if (strcmp(ft_test_str(e, "ph"), "M") || strcmp(ft_test_str(e, "name"), name) || num(e, "pid") != pid ||
        num(e, "tid") != tid)
      continue;
    yajl_val v = ft_test_get(ft_test_get(e, "args"), key);
    if (sval && YAJL_IS_STRING(v) && !strcmp(v->u.string, sval)) return true;
    if (!sval && YAJL_IS_NUMBER(v) && YAJL_GET_INTEGER(v) == ival) return true;
  }
  return false;
}

/* One process, two devices (issue 13): both devices' rows are named, and
 * deviceProperties holds one object per device with torch-cuda's keys in its order
 * (tests/data/torch_cuda_2.11_reference.json.gz) and the driver's values. */
static void test_two_devices_rows_and_properties(void **state) {
  (void)state;
  setenv("FAKE_CUPTI_DEVICES", "2", 1);
  ft_session *s = ft_test_started();
  fake_launch k0 = kernel("on_gpu0", 100);
  fake_launch k1 = kernel("on_gpu1", 100);
  k1.device = 1;
  k1.stream = 21;
  launch(&k0);
  launch(&k1);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  assert_int_equal(num(ft_test_find_x(doc, "kernel", "on_gpu1", 0), "pid"), 1);
  for (long long d = 0; d < 2; d++) {
    char label[16];
    snprintf(label, sizeof label, "GPU %lld", d);
    assert_true(has_meta(doc, "process_name", d, 0, "name", label, 0));
    assert_true(has_meta(doc, "process_labels", d, 0, "labels", label, 0));
    assert_true(has_meta(doc, "process_sort_index", d, 0, "sort_index", NULL, d));
  }
  assert_true(has_meta(doc, "thread_name", 0, 7, "name", "stream 7 ", 0));
  assert_true(has_meta(doc, "thread_name", 1, 21, "name", "stream 21 ", 0));
  yajl_val props = ft_test_get(doc, "deviceProperties");
  assert_true(YAJL_IS_ARRAY(props));
  assert_int_equal(props->u.array.len, 2);
  static const char *const keys[] = {"id",
                                     "name",
                                     "totalGlobalMem",
                                     "computeMajor",
                                     "computeMinor",
                                     "maxThreadsPerBlock",
                                     "maxThreadsPerMultiprocessor",
                                     "regsPerBlock",
                                     "warpSize",
                                     "sharedMemPerBlock",
                                     "numSms",
                                     "regsPerMultiprocessor",
                                     "sharedMemPerBlockOptin",
                                     "sharedMemPerMultiprocessor"};
  static const long long h200[] = {0,     0,  150109880320ll, 9,   0,     1024,   2048,
                                   65536, 32, 49152,          132, 65536, 232448, 233472};
  for (size_t d = 0; d < 2; d++) {
    yajl_val o = props->u.array.values[d];
    assert_true(YAJL_IS_OBJECT(o));
    assert_int_equal(o->u.object.len, 14);
    for (size_t k = 0; k < 14; k++) assert_string_equal(o->u.object.keys[k], keys[k]);
    assert_int_equal(num(o, "id"), d);
    char name[64];
    snprintf(name, sizeof name, "NVIDIA H200 (fake %zu)", d);
    assert_string_equal(ft_test_str(o, "name"), name);
    for (size_t k = 2; k < 14; k++) assert_int_equal(num(o, keys[k]), h200[k]);
  }
  yajl_tree_free(doc);
  ft_session_destroy(s);
  unsetenv("FAKE_CUPTI_DEVICES");
}

typedef struct ann_tally {
  int n;
  uint64_t ext[8];
  uint32_t dev[8], stream[8];
  uint64_t lo[8], hi[8];
} ann_tally;

static int ann_visit(void *ctx, const ft_export_event *x) {
  ann_tally *t = ctx;
  if (x->event.kind == FT_EVENT_GPU_USER_ANNOTATION && t->n < 8) {
    t->ext[t->n] = x->event.external_id;
    t->dev[t->n] = x->event.device;
    t->stream[t->n] = x->event.stream;
    t->lo[t->n] = x->event.start_ns;
    t->hi[t->n++] = x->event.end_ns;
    assert_true(x->event.has_external_id && x->flow == FT_FLOW_NONE);
  }
  return 0;
}

static double us_of(yajl_val e, const char *key) { return YAJL_GET_DOUBLE(ft_test_get(e, key)); }

/* torch's record_function ranges (pushUserCorrelationId) become kineto's
 * gpu_user_annotation (issue 13): per innermost user range and (device, stream),
 * from its device work's first start to last end; no CPU slice of ours. */
static void test_user_ranges_project_onto_gpu_rows(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch k = kernel("k", 1000);
  fake_launch k9 = k;
  k9.stream = 9;
  assert_int_equal(ft_user_range_push(s, 100, "ProfilerStep#1"), FT_OK);
  assert_int_equal(ft_correlation_push(s, 1), FT_OK);
  launch(&k); /* A: step, stream 7 */
  assert_int_equal(ft_correlation_pop(s), FT_OK);
  assert_int_equal(ft_user_range_push(s, 101, NULL), FT_OK);
  launch(&k);  /* B: optimizer, stream 7 */
  launch(&k9); /* C: optimizer, stream 9 */
  assert_int_equal(ft_user_range_pop(s), FT_OK);
  launch(&k); /* D: step again */
  assert_int_equal(ft_user_range_pop(s), FT_OK);
  launch(&k); /* E: in no user range */
  assert_int_equal(ft_user_range_pop(s), FT_ESTATE);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  assert_int_equal(count_cat(doc, "X", "user_annotation"), 0);
  assert_int_equal(count_cat(doc, "X", "gpu_user_annotation"), 3);
  yajl_val kernels[5];
  for (int i = 0; i < 5; i++) kernels[i] = ft_test_find_x(doc, "kernel", "k", i);
  yajl_val ev = ft_test_get(doc, "traceEvents");
  int seen = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    if (strcmp(ft_test_str(e, "cat"), "gpu_user_annotation")) continue;
    long long ext = (long long)num(ft_test_get(e, "args"), "External id");
    long long tid = (long long)num(e, "tid");
    assert_int_equal(num(e, "pid"), 0);
    yajl_val first, last;
    if (ext == 100) {
      assert_string_equal(ft_test_str(e, "name"), "ProfilerStep#1");
      assert_int_equal(tid, 7);
      first = kernels[0], last = kernels[3];
      seen |= 1;
    } else {
      assert_int_equal(ext, 101);
      assert_string_equal(ft_test_str(e, "name"), "");
      first = last = kernels[tid == 9 ? 2 : 1];
      seen |= tid == 9 ? 2 : 4;
    }
    assert_true(fabs(us_of(e, "ts") - us_of(first, "ts")) < 0.0015);
    assert_true(fabs(us_of(e, "ts") + us_of(e, "dur") - us_of(last, "ts") - us_of(last, "dur")) < 0.0025);
  }
  assert_int_equal(seen, 7);
  yajl_tree_free(doc);
  ann_tally t = {0};
  assert_int_equal(ft_session_foreach_event(s, 0, UINT64_MAX, ann_visit, &t, NULL), FT_OK);
  assert_int_equal(t.n, 3);
  int by_ext[2] = {0, 0};
  for (int i = 0; i < 3; i++) {
    assert_true(t.ext[i] == 100 || t.ext[i] == 101);
    by_ext[t.ext[i] - 100]++;
    assert_true(t.lo[i] < t.hi[i]);
  }
  assert_int_equal(by_ext[0], 1);
  assert_int_equal(by_ext[1], 2);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.cpu_ranges, 0);
  ft_session_destroy(s);
}

static void test_framework_correlation_push_pop(void **state) {
  (void)state;
  /* what the kineto adaptor does with torch's op ids: 0 is a valid id */
  ft_session *s = ft_test_started();
  assert_int_equal(ft_correlation_push(s, 0), FT_OK);
  fake_launch k = kernel("op0_kernel", 1000);
  launch(&k);
  assert_int_equal(ft_correlation_push(s, 77), FT_OK);
  fake_launch k2 = kernel("op77_kernel", 1000);
  launch(&k2);
  assert_int_equal(ft_correlation_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(ft_correlation_pop(s), FT_OK); /* the op ends after the profiler stopped */
  yajl_val doc = ft_test_render(s);
  assert_int_equal(num(ft_test_get(ft_test_find_x(doc, "kernel", "op0_kernel", 0), "args"), "External id"), 0);
  assert_int_equal(num(ft_test_get(ft_test_find_x(doc, "kernel", "op77_kernel", 0), "args"), "External id"), 77);
  yajl_tree_free(doc);
  ft_session_destroy(s);
  /* and the vendor stack is empty again: a later launch carries no id */
  s = ft_test_started();
  fake_launch k3 = kernel("after", 1000);
  launch(&k3);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  doc = ft_test_render(s);
  assert_null(ft_test_get(ft_test_get(ft_test_find_x(doc, "kernel", "after", 0), "args"), "External id"));
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* The attribution the tracer chose: by time on the calling thread (CUPTI takes our
 * clock), or CUPTI's external correlation records where the clock is refused, on a
 * PPU build, or with FLAGTRACE_CUPTI_EXTERNAL_CORRELATION=1 (ctest runs this binary
 * each way). */
static void test_attribution_mode(void **state) {
  (void)state;
  bool records = ft__env_flag("FLAGTRACE_CUPTI_EXTERNAL_CORRELATION") || getenv("FAKE_CUPTI_NO_CLOCK_CALLBACK") ||
                 strcmp(FT_ACCELERATOR_NAME, "cuda");
  int before = ext_pushes();
  ft_session *s = ft_test_started();
  assert_int_equal(s->timed, !records);
  assert_int_equal(ft_correlation_push(s, 5), FT_OK);
  fake_launch k = kernel("k", 100);
  launch(&k);
  assert_int_equal(ft_correlation_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(ext_pushes() - before, records ? 1 : 0);
  ft_session_destroy(s);
}

typedef struct launcher {
  ft_session *s;
  const char *name;
  bool own_id; /* pushes id 20 around its launch */
} launcher;

static void *launch_on_a_thread(void *arg) {
  launcher *l = arg;
  if (l->own_id && ft_correlation_push(l->s, 20) != FT_OK) return (void *)1;
  fake_launch k = kernel(l->name, 100);
  launch(&k);
  return l->own_id && ft_correlation_pop(l->s) != FT_OK ? (void *)1 : NULL;
}

static void run_launcher(launcher *l) {
  pthread_t th;
  void *rc;
  assert_int_equal(pthread_create(&th, NULL, launch_on_a_thread, l), 0);
  pthread_join(th, &rc);
  assert_null(rc);
}

/* External id of the cuda_runtime row that launched kernel, or -1 without one. */
static long long runtime_ext_of(yajl_val doc, yajl_val kernel_ev) {
  double corr = num(ft_test_get(kernel_ev, "args"), "correlation");
  yajl_val ev = ft_test_get(doc, "traceEvents");
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    yajl_val a = ft_test_get(e, "args");
    if (strcmp(ft_test_str(e, "cat"), "cuda_runtime") || !a || !ft_test_get(a, "correlation") ||
        num(a, "correlation") != corr)
      continue;
    return ft_test_get(a, "External id") ? (long long)num(a, "External id") : -1;
  }
  fail_msg("no runtime row for correlation %.0f", corr);
  return -2;
}

static long long ext_of(yajl_val e) {
  yajl_val a = ft_test_get(e, "args");
  return ft_test_get(a, "External id") ? (long long)num(a, "External id") : -1;
}

/* What the vendor's per-thread stack names, either way: the innermost id open
 * around the call on its own thread; nothing from another thread's ids; a call
 * left out of the rows (a driver-API copy) still attributes its copy. */
static void test_innermost_id_on_the_calling_thread(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  assert_int_equal(ft_correlation_push(s, 10), FT_OK);
  fake_launch a = kernel("outer_a", 100), b = kernel("outer_b", 100), in = kernel("inner", 100),
              none = kernel("none", 100);
  launch(&a);
  assert_int_equal(ft_correlation_push(s, 11), FT_OK);
  launch(&in);
  fake_launch cp = {.kind = FAKE_MEMCPY,
                    .driver = 1,
                    .cbid = CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
                    .copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                    .src_kind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                    .dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                    .bytes = 64,
                    .dur_ns = 10};
  launch(&cp);
  assert_int_equal(ft_correlation_pop(s), FT_OK);
  launch(&b);
  launcher elsewhere = {s, "elsewhere", false}, theirs = {s, "theirs", true};
  run_launcher(&elsewhere); /* while 10 is open here */
  run_launcher(&theirs);
  assert_int_equal(ft_correlation_pop(s), FT_OK);
  launch(&none);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  static const struct {
    const char *name;
    long long ext;
  } want[] = {{"outer_a", 10}, {"inner", 11}, {"outer_b", 10}, {"elsewhere", -1}, {"theirs", 20}, {"none", -1}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    yajl_val k = ft_test_find_x(doc, "kernel", want[i].name, 0);
    assert_non_null(k);
    if (ext_of(k) != want[i].ext)
      fail_msg("kernel %s: External id %lld, want %lld", want[i].name, ext_of(k), want[i].ext);
    assert_int_equal(runtime_ext_of(doc, k), want[i].ext);
  }
  assert_int_equal(count_cat(doc, "X", "cuda_driver"), 0); /* the copy's call is not a row */
  yajl_val copy = ft_test_find_x(doc, "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0);
  assert_non_null(copy);
  assert_int_equal(ext_of(copy), 11);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_pop_unwinds_the_vendor_stack(void **state) {
  (void)state;
  /* The fake rejects a NULL pop like CANN's MSPTI; if the tracer passed NULL, the
   * launch after the ranges would be stamped with a stale id. */
  ft_session *s = ft_test_started();
  for (int i = 0; i < 3; i++) {
    assert_int_equal(ft_range_push(s, "r", NULL), FT_OK);
    assert_int_equal(ft_range_pop(s), FT_OK);
  }
  fake_launch k = kernel("after_ranges", 1000);
  launch(&k);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  yajl_val e = ft_test_find_x(doc, "kernel", "after_ranges", 0);
  assert_non_null(e);
  assert_null(ft_test_get(ft_test_get(e, "args"), "External id"));
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_dropped_records_are_reported(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch k = kernel("k", 1000);
  launch(&k);
  drop(5);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.dropped_records, 5);
  yajl_val doc = ft_test_render(s);
  assert_int_equal(YAJL_GET_INTEGER(ft_test_get(ft_test_get(doc, "flagtrace"), "dropped_records")), 5);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static int count_kernels(void *ctx, const ft_export_event *x) {
  *(size_t *)ctx += x->event.kind == FT_EVENT_KERNEL;
  return 0;
}

static void test_small_buffers_lose_nothing(void **state) {
  (void)state;
  /* 4 KiB buffers hold ~18 kernel records: the pool must keep up (grow) */
  setenv("FLAGTRACE_CUPTI_BUFFER_BYTES", "4096", 1);
  ft_session *s = ft_test_started();
  fake_launch k = kernel("small_buffers", 10);
  for (int i = 0; i < 2000; i++) launch(&k);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  size_t n = 0;
  uint64_t outside;
  assert_int_equal(ft_session_foreach_event(s, 0, UINT64_MAX, count_kernels, &n, &outside), FT_OK);
  assert_int_equal(n, 2000);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.dropped_records, 0);
  ft_session_destroy(s);
  unsetenv("FLAGTRACE_CUPTI_BUFFER_BYTES");
}

static size_t kernels_in_store(const ft_session *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->store.events.len; i++)
    n += ((const ft__event *)ft__vec_at(&s->store.events, i))->kind == FT__EV_KERNEL;
  return n;
}

/* A completed buffer waits (FLAGTRACE_CUPTI_HELD_BUFFERS, default 1) and is decoded
 * with the next, or at stop: a short profile's records are decoded after its region.
 * With 0 each is decoded as it completes. 4 KiB buffers hold ~18 kernel records. */
static void check_held_buffers(const char *held, size_t launches, bool decoded_at_once) {
  setenv("FLAGTRACE_CUPTI_BUFFER_BYTES", "4096", 1);
  if (held) setenv("FLAGTRACE_CUPTI_HELD_BUFFERS", held, 1);
  ft_session *s = ft_test_started();
  fake_launch k = kernel("held", 10);
  for (size_t i = 0; i < launches; i++) launch(&k);
  size_t during = kernels_in_store(s);
  if (decoded_at_once) assert_true(during > 0 && during < launches);
  else assert_int_equal(during, 0);
  for (size_t i = launches; i < 4 * launches; i++) launch(&k); /* more buffers: the held ones go too */
  assert_true(kernels_in_store(s) >= launches);
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(kernels_in_store(s), 4 * launches);
  size_t n = 0;
  assert_int_equal(ft_session_foreach_event(s, 0, UINT64_MAX, count_kernels, &n, NULL), FT_OK);
  assert_int_equal(n, 4 * launches);
  ft_session_destroy(s);
  unsetenv("FLAGTRACE_CUPTI_BUFFER_BYTES");
  unsetenv("FLAGTRACE_CUPTI_HELD_BUFFERS");
}

static void test_completed_buffers_wait_for_the_next(void **state) {
  (void)state;
  check_held_buffers(NULL, 30, false); /* one device buffer completed: held */
  check_held_buffers("0", 30, true);
  check_held_buffers("2", 50, false); /* two completed: both held */
  check_held_buffers("9", 30, false); /* out of range: warned, the default */
}

/* A start's first buffers are larger (FLAGTRACE_CUPTI_FIRST_BUFFER_BYTES): a short
 * profile completes none inside its region, even with no buffer held; they are kept
 * for the next start, and given back once a start outgrows them, nothing lost.
 * 64 KiB first buffers hold ~300 kernel records (216 B), the 4 KiB ones ~18. */
static size_t profile(size_t launches, size_t *during) {
  ft_session *s = ft_test_started();
  fake_launch k = kernel("first", 10);
  for (size_t i = 0; i < launches; i++) launch(&k);
  *during = kernels_in_store(s);
  assert_int_equal(ft_session_stop(s), FT_OK);
  size_t n = 0;
  assert_int_equal(ft_session_foreach_event(s, 0, UINT64_MAX, count_kernels, &n, NULL), FT_OK);
  ft_session_destroy(s);
  return n;
}

static void test_first_buffers_hold_a_short_profile(void **state) {
  (void)state;
  setenv("FLAGTRACE_CUPTI_BUFFER_BYTES", "4096", 1);
  setenv("FLAGTRACE_CUPTI_HELD_BUFFERS", "0", 1);
  size_t during, home, lent;
  bool outgrown;
  setenv("FLAGTRACE_CUPTI_FIRST_BUFFER_BYTES", "0", 1); /* off: 4 KiB buffers complete at once */
  assert_int_equal(profile(200, &during), 200);
  assert_true(during > 0 && during < 200);
  ft__pool_first_count(&home, &lent, &outgrown);
  assert_int_equal(home + lent, 0);

  setenv("FLAGTRACE_CUPTI_FIRST_BUFFER_BYTES", "65536", 1);
  for (int round = 0; round < 2; round++) {
    assert_int_equal(profile(200, &during), 200);
    assert_int_equal(during, 0); /* nothing completed inside the region */
    ft__pool_first_count(&home, &lent, &outgrown);
    assert_false(outgrown);
    assert_int_equal(lent, 0);
    assert_int_equal(home, 2); /* the API records' and the kernels': kept, and reused */
  }
  /* 2000 kernels need more than the three first buffers: outgrown, given back */
  assert_int_equal(profile(2000, &during), 2000);
  assert_true(during > 0);
  ft__pool_first_count(&home, &lent, &outgrown);
  assert_true(outgrown);
  assert_int_equal(home + lent, 0);
  /* the next short profile makes them anew */
  assert_int_equal(profile(200, &during), 200);
  assert_int_equal(during, 0);
  ft__pool_first_count(&home, &lent, &outgrown);
  assert_false(outgrown);
  assert_int_equal(home, 2);

  /* a buffer size set without a first size: every buffer is that size */
  unsetenv("FLAGTRACE_CUPTI_FIRST_BUFFER_BYTES");
  assert_int_equal(profile(200, &during), 200);
  assert_true(during > 0 && during < 200);
  ft__pool_first_count(&home, &lent, &outgrown);
  assert_int_equal(home + lent, 0);
  unsetenv("FLAGTRACE_CUPTI_BUFFER_BYTES");
  unsetenv("FLAGTRACE_CUPTI_HELD_BUFFERS");
}

static void expect_unavailable(const char *needle) {
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  const char *why;
  assert_int_equal(ft_session_device_status(s, &why), FT_EUNAVAILABLE);
  if (!strstr(why, needle)) fail_msg("reason '%s' lacks '%s'", why, needle);
  /* CPU profiling continues and the trace says why */
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_range_push(s, "cpu only", NULL), FT_OK);
  assert_int_equal(ft_range_pop(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  assert_true(YAJL_IS_FALSE(ft_test_get(ft_test_get(doc, "flagtrace"), "device_activity")));
  assert_non_null(strstr(ft_test_str(ft_test_get(doc, "flagtrace"), "device_status"), needle));
  assert_non_null(ft_test_find_x(doc, "user_annotation", "cpu only", 0));
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* A session of the given activities, started (the fake usable). */
static ft_session *started_with(unsigned activities) {
  ft_session_options o;
  ft_session_options_init(&o);
  o.activities = activities;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, &o), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  return s;
}

/* The flow halves with id: how many s and f. */
static void flow_halves(yajl_val doc, long long id, int *s, int *f) {
  yajl_val ev = ft_test_get(doc, "traceEvents");
  *s = *f = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i], v = ft_test_get(e, "id");
    if (!v || !YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) != id) continue;
    *s += !strcmp(ft_test_str(e, "ph"), "s");
    *f += !strcmp(ft_test_str(e, "ph"), "f");
  }
}

/* The args keys of e in their order, joined by commas. */
static void arg_keys(yajl_val e, char *out, size_t len) {
  yajl_val a = ft_test_get(e, "args");
  out[0] = '\0';
  for (size_t i = 0; a && i < a->u.object.len; i++)
    snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", a->u.object.keys[i]);
}

/* cuda_sync rows as torch-cuda writes them (kineto's CudaSyncActivity, measured on the
 * H200): only when asked for, named by the sync's kind, on the device row (tid: the
 * stream, 1 for none), kineto's keys in kineto's order, the op's External id (else
 * the correlation), and an arrow from the sync call, paired. */
static void test_sync_records_as_torch_cuda(void **state) {
  (void)state;
  for (int asked = 0; asked < 2; asked++) {
    ft_session *s = started_with(FT_ACTIVITY_DEFAULT | (asked ? FT_ACTIVITY_SYNC : 0));
    fake_launch k = kernel("before_sync", 1000);
    k.device = 1;
    launch(&k); /* names context 2's device */
    assert_int_equal(ft_correlation_push(s, 5), FT_OK);
    fake_launch stream_sync = {.kind = FAKE_SYNC, .sync_type = 3, .stream = 7, .device = 1};
    uint32_t c_stream = launch(&stream_sync);
    assert_int_equal(ft_correlation_pop(s), FT_OK);
    fake_launch ctx_sync = {.kind = FAKE_SYNC, .sync_type = 4, .cbid = 165, .device = 1};
    uint32_t c_ctx = launch(&ctx_sync);
    fake_launch ev_sync = {.kind = FAKE_SYNC, .sync_type = 1, .cbid = 137, .event_id = 19, .device = 1};
    launch(&ev_sync);
    ft_test_settle();
    assert_int_equal(ft_session_stop(s), FT_OK);
    yajl_val doc = ft_test_render(s);
    if (!asked) {
      assert_int_equal(count_cat(doc, "X", "cuda_sync"), 0); /* as torch-cuda: only on request */
      yajl_tree_free(doc);
      ft_session_destroy(s);
      continue;
    }
    assert_int_equal(count_cat(doc, "X", "cuda_sync"), 3);
    yajl_val y = ft_test_find_x(doc, "cuda_sync", "Stream Sync", 0);
    assert_non_null(y);
    char keys[256];
    arg_keys(y, keys, sizeof keys);
    assert_string_equal(keys, "External id,cuda_sync_kind,stream,correlation,device,context");
    yajl_val a = ft_test_get(y, "args");
    assert_int_equal(num(a, "External id"), 5);
    assert_string_equal(ft_test_str(a, "cuda_sync_kind"), "Stream Sync");
    assert_int_equal(num(a, "stream"), 7);
    assert_int_equal(num(a, "correlation"), c_stream);
    assert_int_equal(num(a, "device"), 1);
    assert_int_equal(num(a, "context"), 2);
    assert_int_equal(num(y, "pid"), 1);
    assert_int_equal(num(y, "tid"), 7);
    yajl_val cs = ft_test_find_x(doc, "cuda_sync", "Context Sync", 0);
    assert_non_null(cs);
    a = ft_test_get(cs, "args");
    assert_int_equal(num(a, "External id"), c_ctx); /* no op open: kineto writes the correlation */
    assert_int_equal(num(a, "stream"), -1);
    assert_int_equal(num(cs, "tid"), 1); /* kineto's row for stream -1 */
    yajl_val es = ft_test_find_x(doc, "cuda_sync", "Event Sync", 0);
    assert_non_null(es);
    arg_keys(es, keys, sizeof keys);
    assert_string_equal(keys,
                        "External id,cuda_sync_kind,wait_on_stream,wait_on_cuda_event_record_corr_id,"
                        "wait_on_cuda_event_id,stream,correlation,device,context");
    assert_int_equal(num(ft_test_get(es, "args"), "wait_on_cuda_event_id"), 19);
    int fs, ff;
    flow_halves(doc, c_stream, &fs, &ff);
    assert_int_equal(fs, 1);
    assert_int_equal(ff, 1);
    /* a wait is not device time: the op's device time is its kernels' only (none here) */
    uint64_t ns = 1, n = 1;
    assert_int_equal(ft_session_device_time(s, 5, &ns, &n), FT_OK);
    assert_int_equal(n, 0);
    yajl_tree_free(doc);
    ft_session_destroy(s);
  }
}

/* toggle_collection_dynamic: what is launched while collection is stopped is left out
 * (the call and its device work), work launched before still counts, and work
 * without a recorded launch goes by its own start. */
static void test_collection_stopped_leaves_out(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  fake_launch before = kernel("launched_before", 1000);
  before.start_offset_ns = 2000000; /* runs well into the stopped stretch */
  launch(&before);
  assert_int_equal(ft_session_set_collecting(s, 0), FT_OK);
  assert_int_equal(ft_session_set_collecting(s, 0), FT_OK); /* again: nothing changes */
  fake_launch off = kernel("launched_while_off", 1000);
  launch(&off);
  fake_launch orphan = kernel("orphan_while_off", 1000);
  orphan.no_runtime = 1;
  launch(&orphan);
  ft_test_settle();
  assert_int_equal(ft_session_set_collecting(s, 1), FT_OK);
  fake_launch on = kernel("launched_after", 1000);
  launch(&on);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(ft_session_set_collecting(s, 1), FT_ESTATE);
  yajl_val doc = ft_test_render(s);
  assert_non_null(ft_test_find_x(doc, "kernel", "launched_before", 0));
  assert_non_null(ft_test_find_x(doc, "kernel", "launched_after", 0));
  assert_null(ft_test_find_x(doc, "kernel", "launched_while_off", 0));
  assert_null(ft_test_find_x(doc, "kernel", "orphan_while_off", 0));
  assert_int_equal(count_cat(doc, "X", "cuda_runtime"), 2);               /* before and after */
  assert_int_equal(count_cat(doc, "s", NULL), count_cat(doc, "f", NULL)); /* still paired */
  assert_int_equal(num(ft_test_get(doc, "flagtrace"), "collection_stopped_left_out"), 3);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* record's whole-run session and the program's own profiler: a session started while
 * it runs attaches, gets exactly its window's device work, attributed by its own ids,
 * and the whole-run trace keeps everything with none of those ids. */
static void test_attached_session_reads_its_window(void **state) {
  (void)state;
  ft_session *whole = ft_test_started();
  ft__session_accept_attach(whole);
  fake_launch k1 = kernel("before_profile", 1000);
  launch(&k1);
  ft_test_settle();
  ft_session *prof;
  assert_int_equal(ft_session_create(&prof, NULL), FT_OK);
  assert_int_equal(ft_session_start(prof), FT_OK);
  const char *why;
  if (!whole->timed) { /* CUPTI's correlation records: the window's ids could not be told apart */
    assert_int_equal(ft_session_device_status(prof, &why), FT_EBUSY);
    assert_non_null(strstr(why, "cannot hand a window over"));
    assert_int_equal(ft_session_stop(prof), FT_OK);
    ft_session_destroy(prof);
    assert_int_equal(ft_session_stop(whole), FT_OK);
    ft_session_destroy(whole);
    return;
  }
  assert_int_equal(ft_session_device_status(prof, &why), FT_OK);
  ft_session *second; /* one attached session at a time: the next one runs CPU-only */
  assert_int_equal(ft_session_create(&second, NULL), FT_OK);
  assert_int_equal(ft_session_start(second), FT_OK);
  assert_int_equal(ft_session_device_status(second, &why), FT_EBUSY);
  assert_non_null(strstr(why, "another session is attached"));
  assert_int_equal(ft_correlation_push(prof, 42), FT_OK);
  fake_launch k2 = kernel("inside_profile", 1000);
  launch(&k2);
  assert_int_equal(ft_correlation_pop(prof), FT_OK);
  fake_launch k2b = kernel("inside_unattributed", 1000);
  launch(&k2b);
  ft_test_settle();
  assert_int_equal(ft_session_stop(prof), FT_OK);
  assert_int_equal(ft_session_stop(second), FT_OK);
  ft_session_destroy(second);
  fake_launch k3 = kernel("after_profile", 1000);
  launch(&k3);
  ft_test_settle();
  yajl_val doc = ft_test_render(prof);
  assert_null(ft_test_find_x(doc, "kernel", "before_profile", 0));
  assert_null(ft_test_find_x(doc, "kernel", "after_profile", 0));
  yajl_val in = ft_test_find_x(doc, "kernel", "inside_profile", 0);
  assert_non_null(in);
  assert_int_equal(num(ft_test_get(in, "args"), "External id"), 42);
  assert_null(ft_test_get(ft_test_get(ft_test_find_x(doc, "kernel", "inside_unattributed", 0), "args"), "External id"));
  assert_int_equal(count_cat(doc, "X", "cuda_runtime"), 2);
  assert_int_equal(count_cat(doc, "s", NULL), 2);
  assert_int_equal(count_cat(doc, "f", NULL), 2);
  uint64_t ns, n;
  assert_int_equal(ft_session_device_time(prof, 42, &ns, &n), FT_OK);
  assert_int_equal(n, 1);
  yajl_tree_free(doc);
  ft_session_destroy(prof);
  /* a later profile attaches again */
  assert_int_equal(ft_session_create(&prof, NULL), FT_OK);
  assert_int_equal(ft_session_start(prof), FT_OK);
  assert_int_equal(ft_session_device_status(prof, &why), FT_OK);
  assert_int_equal(ft_session_stop(prof), FT_OK);
  ft_session_destroy(prof);
  assert_int_equal(ft_session_stop(whole), FT_OK);
  doc = ft_test_render(whole);
  const char *names[] = {"before_profile", "inside_profile", "inside_unattributed", "after_profile"};
  for (size_t i = 0; i < 4; i++) {
    yajl_val k = ft_test_find_x(doc, "kernel", names[i], 0);
    assert_non_null(k);
    assert_null(ft_test_get(ft_test_get(k, "args"), "External id")); /* the profile's ids are not the run's */
  }
  yajl_tree_free(doc);
  ft_session_destroy(whole);
  /* a session that does not accept attachment keeps refusing a second start */
  ft_session *a = ft_test_started(), *b;
  assert_int_equal(ft_session_create(&b, NULL), FT_OK);
  assert_int_equal(ft_session_start(b), FT_EBUSY);
  ft_session_destroy(b);
  assert_int_equal(ft_session_stop(a), FT_OK);
  ft_session_destroy(a);
}

/* Another CUPTI client's own buffers, and which of ours it was ever handed. */
static uint8_t *foreign_bufs[64];
static size_t n_foreign_bufs, foreign_records, foreign_got_ours;
static void CUPTIAPI foreign_request(uint8_t **b, size_t *size, size_t *max) {
  *b = aligned_alloc(8, 1 << 16);
  *size = 1 << 16;
  *max = 0;
  if (n_foreign_bufs < 64) foreign_bufs[n_foreign_bufs++] = *b;
}
static void CUPTIAPI foreign_complete(CUcontext c, uint32_t stream, uint8_t *b, size_t size, size_t valid) {
  (void)c, (void)stream, (void)size;
  bool mine = false;
  for (size_t i = 0; i < n_foreign_bufs; i++) mine |= foreign_bufs[i] == b;
  CUpti_Activity *r = NULL;
  if (mine) {
    while (next_record(b, valid, &r) == CUPTI_SUCCESS) foreign_records++;
    free(b); /* what JAX's profiler does with every buffer it is handed */
  } else {
    foreign_got_ours++; /* freeing it would abort (our first buffers are mmap'd) */
  }
}

/* With the guard (record): the tracer steps aside before the other client registers,
 * so every buffer of ours has come home; what came before stays, and the trace says
 * from when device activity is missing. Without it (an embedding program): the
 * buffers the other client kept are found missing at stop and said so. */
static void test_another_client_takes_cupti(void **state) {
  (void)state;
  CUptiResult (*reg)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = register_callbacks;
  assert_non_null(reg);
  for (int guarded = 1; guarded >= 0; guarded--) {
    n_foreign_bufs = foreign_records = foreign_got_ours = 0;
    ft_session *s = ft_test_started();
    fake_launch k1 = kernel("ours", 1000);
    launch(&k1);
    ft_test_settle();
    if (guarded) ft__session_relinquish(s, "another CUPTI client (the test, calling cuptiActivityRegisterCallbacks)");
    assert_int_equal(reg(foreign_request, foreign_complete), CUPTI_SUCCESS);
    assert_int_equal(enable_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
    fake_launch k2 = kernel("theirs", 1000);
    launch(&k2);
    flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    ft_test_settle();
    assert_int_equal(ft_session_stop(s), FT_OK);
    uint64_t at = 0;
    const char *why = NULL;
    assert_int_equal(ft_session_device_lost(s, &at, &why), 1);
    ft_session_counts c;
    assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
    assert_int_equal(c.device_lost_ns, at);
    yajl_val doc = ft_test_render(s);
    assert_int_equal(num(ft_test_get(doc, "flagtrace"), "device_activity_lost_ns"), (double)at);
    if (guarded) {
      assert_non_null(strstr(why, "the test, calling cuptiActivityRegisterCallbacks"));
      assert_non_null(ft_test_find_x(doc, "kernel", "ours", 0));
      assert_int_equal(foreign_got_ours, 0); /* none of our buffers reached it */
      assert_true(foreign_records >= 1);     /* its own kernel's record */
    } else {
      assert_non_null(strstr(why, "never came back"));
      assert_true(foreign_got_ours >= 1);
    }
    assert_null(ft_test_find_x(doc, "kernel", "theirs", 0));
    yajl_tree_free(doc);
    ft_session_destroy(s);
  }
  /* the next session (ours again) is whole and says nothing was lost */
  ft_session *s = ft_test_started();
  fake_launch k = kernel("again", 1000);
  launch(&k);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(ft_session_device_lost(s, NULL, NULL), 0);
  yajl_val doc = ft_test_render(s);
  assert_non_null(ft_test_find_x(doc, "kernel", "again", 0));
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_unusable_libraries(void **state) {
  (void)state;
  setenv("FAKE_CUPTI_VERSION", "120000", 1);
  expect_unavailable("record layout mismatch");
  unsetenv("FAKE_CUPTI_VERSION");
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent/libcupti.so.13", 1);
  expect_unavailable("FLAGOS_TRACER_LIBRARY=/nonexistent/libcupti.so.13 could not be used");
  setenv("FLAGOS_TRACER_LIBRARY", "/etc/passwd", 1); /* not a library */
  expect_unavailable("/etc/passwd");
  setenv("FLAGOS_TRACER_LIBRARY", fake_path, 1);
}

static void test_enable_failure_keeps_cpu_profiling(void **state) {
  (void)state;
  setenv("FAKE_CUPTI_FAIL_ENABLE", "1", 1);
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  const char *why;
  assert_int_equal(ft_session_device_status(s, &why), FT_EVENDOR);
  assert_non_null(strstr(why, "cuptiActivityEnable: FAKE_CUPTI_ERROR"));
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_destroy(s);
  unsetenv("FAKE_CUPTI_FAIL_ENABLE");
}

int main(void) {
  const char *p = getenv("FLAGOS_TRACER_LIBRARY");
  if (!p) {
    fprintf(stderr, "test_cupti_fake: FLAGOS_TRACER_LIBRARY must name the fake libcupti\n");
    return 1;
  }
  snprintf(fake_path, sizeof fake_path, "%s", p);
  void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "test_cupti_fake: %s\n", dlerror());
    return 1;
  }
  launch = (fake_cupti_launch_fn)dlsym(h, "fake_cupti_launch");
  drop = (fake_cupti_drop_fn)dlsym(h, "fake_cupti_drop");
  *(void **)&ext_pushes = dlsym(h, "fake_cupti_ext_pushes");
  *(void **)&flush_all = dlsym(h, "cuptiActivityFlushAll");
  *(void **)&register_callbacks = dlsym(h, "cuptiActivityRegisterCallbacks");
  *(void **)&enable_kind = dlsym(h, "cuptiActivityEnable");
  *(void **)&next_record = dlsym(h, "cuptiActivityGetNextRecord");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel_fields_match_torch_reference),
      cmocka_unit_test(test_kernel_args_follow_each_configuration),
      cmocka_unit_test(test_copies_sets_and_runtime_names),
      cmocka_unit_test(test_contract),
      cmocka_unit_test(test_graphs_orphans_and_window),
      cmocka_unit_test(test_graph_replays_link_every_node),
      cmocka_unit_test(test_driver_launches_and_activity_selection),
      cmocka_unit_test(test_api_rows_as_kineto),
      cmocka_unit_test(test_peer_to_peer_copies),
      cmocka_unit_test(test_own_queries_are_not_rows),
      cmocka_unit_test(test_two_devices_rows_and_properties),
      cmocka_unit_test(test_user_ranges_project_onto_gpu_rows),
      cmocka_unit_test(test_framework_correlation_push_pop),
      cmocka_unit_test(test_pop_unwinds_the_vendor_stack),
      cmocka_unit_test(test_attribution_mode),
      cmocka_unit_test(test_innermost_id_on_the_calling_thread),
      cmocka_unit_test(test_dropped_records_are_reported),
      cmocka_unit_test(test_small_buffers_lose_nothing),
      cmocka_unit_test(test_completed_buffers_wait_for_the_next),
      cmocka_unit_test(test_first_buffers_hold_a_short_profile),
      cmocka_unit_test(test_sync_records_as_torch_cuda),
      cmocka_unit_test(test_collection_stopped_leaves_out),
      cmocka_unit_test(test_attached_session_reads_its_window),
      cmocka_unit_test(test_another_client_takes_cupti),
      cmocka_unit_test(test_unusable_libraries),
      cmocka_unit_test(test_enable_failure_keeps_cpu_profiling),
      cmocka_unit_test(test_memory_at_the_sink),
      cmocka_unit_test(test_memory_driver_calls_and_syncs),
      cmocka_unit_test(test_memory_entry_calls_agree),
      cmocka_unit_test(test_memory_only_when_asked),
      cmocka_unit_test(test_memory_refused_keeps_the_rest),
      cmocka_unit_test(test_memory_in_the_trace),
      cmocka_unit_test(test_memory_many_pools_bounded),
      cmocka_unit_test(test_memory_finalized_between_sessions),
      cmocka_unit_test(test_memory_staged_until_flush),
      cmocka_unit_test(test_memory_slot_free_between_sessions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
