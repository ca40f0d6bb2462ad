/* advise: one synthetic model per rule with the idle it causes known to the ns, a clean model with no finding, each
 * vendor's call names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "advise_internal.h"
#include "stats_internal.h"

#define US 1000 /* the model's times are ns; the cases are written in µs */

/* One event into m: CPU events on pid 1 tid 1, device work on device 0 stream 7. */
static void ev(ft_model *m, enum ft__sec sec, const char *name, int64_t ts_us, int64_t dur_us, int64_t corr,
               const char *dims) {
  bool dev = sec == FT__SEC_KERNEL || sec == FT__SEC_MEMCPY || sec == FT__SEC_MEMSET;
  ft__ev e = {.ts = ts_us * US, .dur = dur_us * US, .dev = dev ? 0 : 1, .sec = (uint8_t)sec};
  e.name_len = (uint32_t)strlen(name);
  e.has_tid = true;
  e.tid = dev ? 7 : 1;
  if (dev) e.has_stream = true, e.stream = 7;
  if (corr) e.has_corr = true, e.corr = corr;
  if (dims) e.has_dims = true, e.dims = dims, e.dims_len = (uint32_t)strlen(dims);
  assert_true(ft_model_add(m, &e, name, "cat"));
}
#define STEP(ts, dur) ev(m, FT__SEC_RANGE, "ProfilerStep#1", ts, dur, 0, NULL)
#define OP(name, ts, dur) ev(m, FT__SEC_OP, name, ts, dur, 0, NULL)
#define CALL(name, ts, dur, corr) ev(m, FT__SEC_RUNTIME, name, ts, dur, corr, NULL)
#define KERNEL(name, ts, dur, corr) ev(m, FT__SEC_KERNEL, name, ts, dur, corr, NULL)
#define LAUNCH(ts, dur, corr) CALL("cudaLaunchKernel", ts, dur, corr)

static void advise(ft_model *m, ft_advice *a) {
  assert_int_equal(ft_model_finish(m), FT_OK);
  char err[256];
  ft_advise_opts o;
  ft_advise_opts_default(&o);
  ft_status s = ft_advise(m, &o, a, err, sizeof err);
  if (s) fail_msg("%s", err);
}

static void idle_is(const ft_advise_step *s, uint64_t start, uint64_t sync, uint64_t h2d, uint64_t launch,
                    uint64_t other) {
  assert_int_equal(s->idle[FT_IDLE_STEP_START], start * US);
  assert_int_equal(s->idle[FT_IDLE_SYNC], sync * US);
  assert_int_equal(s->idle[FT_IDLE_H2D], h2d * US);
  assert_int_equal(s->idle[FT_IDLE_LAUNCH], launch * US);
  assert_int_equal(s->idle[FT_IDLE_OTHER], other * US);
  assert_int_equal(s->idle_ns, (start + sync + h2d + launch + other) * US);
  assert_int_equal(s->busy_ns + s->idle_ns, (uint64_t)(s->end - s->start));
}

static const ft_advise_finding *finding(const ft_advice *a, size_t i, enum ft_rule r, const char *where,
                                        uint64_t cost_us, uint64_t count) {
  assert_true(i < a->n_findings);
  const ft_advise_finding *f = &a->findings[i];
  assert_string_equal(ft_rule_name(f->rule), ft_rule_name(r));
  assert_string_equal(f->where, where);
  assert_int_equal(f->cost_ns, cost_us * US);
  assert_int_equal(f->count, count);
  assert_true(f->suggestion[0] != '\0');
  return f;
}

/* .item()'s sync: the call runs 110-500 while the device finishes at 300; the next
 * launch comes at 520 (work at 530): 300-530 is the sync's. */
static void sync_case(const char *call) {
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  LAUNCH(0, 5, 1);
  KERNEL("k1", 5, 295, 1);
  OP("aten::item", 100, 500);
  CALL(call, 110, 390, 0);
  LAUNCH(520, 5, 2);
  KERNEL("k2", 530, 470, 2);
  ft_advice a;
  advise(m, &a);
  assert_int_equal(a.n_steps, 1);
  idle_is(&a.steps[0], 5, 230, 0, 0, 0);
  assert_int_equal(a.steps[0].busy_ns, 765 * US);
  assert_int_equal(a.steps[0].compute_ns, 765 * US);
  assert_int_equal(a.n_findings, 1); /* the start's 5 µs are under 1 % of the step */
  const ft_advise_finding *f = finding(&a, 0, FT_RULE_SYNC, "aten::item", 230, 1);
  char what[160];
  snprintf(what, sizeof what, "%s under aten::item", call);
  assert_string_equal(f->what, what);
  assert_int_equal(f->n_occ, 1);
  assert_int_equal(f->occ[0].ts, 110 * US);
  assert_int_equal(f->occ[0].dur, 390 * US);
  assert_int_equal(f->occ[0].step, 1);
  assert_true(f->cost_share > 0.2299 && f->cost_share < 0.2301);
  ft_advice_free(&a);
  ft_model_free(m);
}

static void test_sync(void **state) {
  (void)state;
  const char *calls[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "aclrtSynchronizeStream",
                         "hipDeviceSynchronize",  "mcStreamSynchronize",   "musaDeviceSynchronize",
                         "topsStreamSynchronize", "cuCtxSynchronize",      "cudaEventSynchronize"};
  for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) sync_case(calls[i]);
}

/* A pageable copy: cudaMemcpyAsync 210-400, its copy 300-390; the next kernel at 420. */
static void test_h2d_pageable(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  LAUNCH(0, 5, 1);
  KERNEL("k1", 5, 195, 1);
  OP("aten::copy_", 205, 200);
  CALL("cudaMemcpyAsync", 210, 190, 2);
  ev(m, FT__SEC_MEMCPY, "Memcpy HtoD (Pageable -> Device)", 300, 90, 2, NULL);
  LAUNCH(410, 5, 3);
  KERNEL("k2", 420, 580, 3);
  ft_advice a;
  advise(m, &a);
  /* 200-210: the copy's call had not started (its launch: launch-bound idle) */
  idle_is(&a.steps[0], 5, 0, 120, 10, 0);
  assert_int_equal(a.steps[0].copy_ns, 90 * US);
  assert_int_equal(a.n_findings, 1);
  const ft_advise_finding *f = finding(&a, 0, FT_RULE_H2D_COPY, "aten::copy_", 120, 1);
  assert_string_equal(f->what, "cudaMemcpyAsync under aten::copy_");
  ft_advice_free(&a);
  ft_model_free(m);
}

/* torch's copy_ from pageable memory: cudaMemcpyAsync 210-260, then the stream's sync
 * 262-400 under the same op; the copy runs 300-390. The sync is the copy's: one h2d-copy
 * finding, named by the copy's call. */
static void test_h2d_pageable_sync(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  LAUNCH(0, 5, 1);
  KERNEL("k1", 5, 195, 1);
  OP("aten::copy_", 205, 400);
  CALL("cudaMemcpyAsync", 210, 50, 2);
  ev(m, FT__SEC_MEMCPY, "Memcpy HtoD (Pageable -> Device)", 300, 90, 2, NULL);
  CALL("cudaStreamSynchronize", 262, 138, 0);
  LAUNCH(410, 5, 3);
  KERNEL("k2", 420, 580, 3);
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 5, 0, 120, 10, 0);
  assert_int_equal(a.n_findings, 1);
  const ft_advise_finding *f = finding(&a, 0, FT_RULE_H2D_COPY, "aten::copy_", 120, 1);
  assert_string_equal(f->what, "cudaMemcpyAsync under aten::copy_");
  ft_advice_free(&a);
  ft_model_free(m);
}

/* A read to pageable memory and its sync (.item() on some builds): one sync occurrence,
 * the copy's; a sync after a copy to pinned memory is its own. */
static void test_d2h_sync(void **state) {
  (void)state;
  for (int pinned = 0; pinned < 2; pinned++) {
    ft_model mm, *m = &mm;
    ft_model_init(m, NULL);
    STEP(0, 1000);
    LAUNCH(0, 5, 1);
    KERNEL("k1", 5, 195, 1);
    OP("aten::_local_scalar_dense", 205, 300);
    CALL("cudaMemcpyAsync", 210, 150, 2);
    ev(m, FT__SEC_MEMCPY, pinned ? "Memcpy DtoH (Device -> Pinned)" : "Memcpy DtoH (Device -> Pageable)", 215, 5, 2,
       NULL);
    CALL("cudaStreamSynchronize", 362, 138, 0);
    LAUNCH(510, 5, 3);
    KERNEL("k2", 520, 480, 3);
    ft_advice a;
    advise(m, &a);
    /* pageable: the call holds 210-215, and 220-520 (it returns inside that gap); 200-210
     * waits for its launch. Pinned: the sync alone, 362-520. */
    idle_is(&a.steps[0], 5, pinned ? 158 : 305, 0, pinned ? 157 : 10, 0);
    if (!pinned) {
      assert_int_equal(a.n_findings, 1);
      const ft_advise_finding *f = finding(&a, 0, FT_RULE_SYNC, "aten::_local_scalar_dense", 305, 1);
      assert_string_equal(f->what, "cudaMemcpyAsync under aten::_local_scalar_dense");
    } else {
      assert_int_equal(a.n_findings, 2);
      finding(&a, 0, FT_RULE_SYNC, "aten::_local_scalar_dense", 158, 1);
      assert_string_equal(a.findings[0].what, "cudaStreamSynchronize under aten::_local_scalar_dense");
      finding(&a, 1, FT_RULE_GAP, "aten::_local_scalar_dense", 142, 1);
    }
    ft_advice_free(&a);
    ft_model_free(m);
  }
}

/* A synchronous cudaMemcpy from pinned memory (its copy's name says HtoD) blocks as well. */
static void test_h2d_blocking(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  LAUNCH(0, 5, 1);
  KERNEL("k1", 5, 195, 1);
  CALL("cudaMemcpy", 200, 300, 2);
  ev(m, FT__SEC_MEMCPY, "Memcpy HtoD (Pinned -> Device)", 400, 50, 2, NULL);
  LAUNCH(500, 5, 3);
  KERNEL("k2", 505, 495, 3);
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 5, 0, 255, 0, 0);
  assert_int_equal(a.n_findings, 1);
  finding(&a, 0, FT_RULE_H2D_COPY, "cudaMemcpy", 255, 1);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* Each vendor's copy and memset calls by their device work: a call 200-500, its work
 * 400-450, the next kernel at 505 (255 µs idle after k1). An async call to pinned memory
 * blocks nothing: its idle is launch wait, and the long gap before its work a gap finding. */
static void test_copy_calls(void **state) {
  (void)state;
  static const struct {
    const char *call, *work;
    enum ft__sec sec;
    enum ft_idle_cause cause;
    enum ft_rule rule;
    uint64_t cost_us;
  } cases[] = {
      {"cudaMemcpy", "Memcpy HtoD (Pinned -> Device)", FT__SEC_MEMCPY, FT_IDLE_H2D, FT_RULE_H2D_COPY, 255},
      {"cudaMemcpy", "Memcpy DtoH (Device -> Pageable)", FT__SEC_MEMCPY, FT_IDLE_SYNC, FT_RULE_SYNC, 255},
      {"cudaMemcpy", "Memcpy DtoD (Device -> Device)", FT__SEC_MEMCPY, FT_IDLE_SYNC, FT_RULE_SYNC_MEMOP, 255},
      {"aclrtMemcpy", "Memcpy", FT__SEC_MEMCPY, FT_IDLE_SYNC, FT_RULE_SYNC_MEMOP, 255},
      {"hipMemcpyHtoD", "Memcpy", FT__SEC_MEMCPY, FT_IDLE_H2D, FT_RULE_H2D_COPY, 255},
      {"cuMemcpyDtoH_v2", "Memcpy", FT__SEC_MEMCPY, FT_IDLE_SYNC, FT_RULE_SYNC, 255},
      {"mcMemcpyAsync", "Memcpy HtoD (Pageable -> Device)", FT__SEC_MEMCPY, FT_IDLE_H2D, FT_RULE_H2D_COPY, 255},
      {"musaMemcpyAsync", "Memcpy DtoH (Device -> Pageable)", FT__SEC_MEMCPY, FT_IDLE_SYNC, FT_RULE_SYNC, 255},
      {"topsMemcpyAsync", "Memcpy HtoD (Pinned -> Device)", FT__SEC_MEMCPY, FT_IDLE_LAUNCH, FT_RULE_GAP, 200},
      {"cudaMemset", "Memset (Device)", FT__SEC_MEMSET, FT_IDLE_SYNC, FT_RULE_SYNC_MEMOP, 255},
      {"hipMemsetD32", "Memset", FT__SEC_MEMSET, FT_IDLE_SYNC, FT_RULE_SYNC_MEMOP, 255},
      {"aclrtMemsetAsync", "Memset", FT__SEC_MEMSET, FT_IDLE_LAUNCH, FT_RULE_GAP, 200},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ft_model mm, *m = &mm;
    ft_model_init(m, NULL);
    STEP(0, 1000);
    LAUNCH(0, 5, 1);
    KERNEL("k1", 5, 195, 1);
    CALL(cases[i].call, 200, 300, 2);
    ev(m, cases[i].sec, cases[i].work, 400, 50, 2, NULL);
    LAUNCH(500, 5, 3);
    KERNEL("k2", 505, 495, 3);
    ft_advice a;
    advise(m, &a);
    if (a.steps[0].idle[cases[i].cause] != 255 * US || a.n_findings != 1 || a.findings[0].rule != cases[i].rule ||
        a.findings[0].cost_ns != cases[i].cost_us * US)
      fail_msg("%s + %s: cause %d has %llu ns; %zu findings, the first %s of %llu ns", cases[i].call, cases[i].work,
               (int)cases[i].cause, (unsigned long long)a.steps[0].idle[cases[i].cause], a.n_findings,
               a.n_findings ? ft_rule_name(a.findings[0].rule) : "-",
               a.n_findings ? (unsigned long long)a.findings[0].cost_ns : 0ull);
    ft_advice_free(&a);
    ft_model_free(m);
  }
}

/* The data loader runs 10-400; the first work starts at 420. */
static void test_step_start(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  ev(m, FT__SEC_RANGE, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 10, 390, 0, NULL);
  OP("aten::empty", 20, 5); /* inside the loader: not the op that ran most of the time */
  LAUNCH(410, 5, 1);
  KERNEL("k", 420, 580, 1);
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 420, 0, 0, 0, 0);
  assert_int_equal(a.n_findings, 1);
  const ft_advise_finding *f =
      finding(&a, 0, FT_RULE_STEP_START, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 420, 1);
  assert_int_equal(f->occ[0].ts, 0);
  assert_int_equal(f->occ[0].dur, 420 * US);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* Two steps: the loader's 420 µs, then 100 µs under aten::empty: one finding, named by the costlier. */
static void test_step_start_steps(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  ev(m, FT__SEC_RANGE, "enumerate(DataLoader)", 10, 390, 0, NULL);
  LAUNCH(410, 5, 1);
  KERNEL("k", 420, 580, 1);
  ev(m, FT__SEC_RANGE, "ProfilerStep#2", 1000, 1000, 0, NULL);
  OP("aten::empty", 1010, 80);
  LAUNCH(1090, 5, 2);
  KERNEL("k", 1100, 900, 2);
  ft_advice a;
  advise(m, &a);
  assert_int_equal(a.n_steps, 2);
  idle_is(&a.steps[0], 420, 0, 0, 0, 0);
  idle_is(&a.steps[1], 100, 0, 0, 0, 0);
  assert_int_equal(a.n_findings, 1);
  const ft_advise_finding *f = finding(&a, 0, FT_RULE_STEP_START, "enumerate(DataLoader)", 260, 2);
  assert_string_equal(f->what, "device idle at the step's start while enumerate(DataLoader) ran");
  assert_int_equal(f->occ[1].step, 2);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* Nothing runs before the launch at 800: 810 µs of idle at the start, but the step's
 * critical path (launch, kernel) is shorter, and no finding claims more than it. */
static void test_cap(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  LAUNCH(800, 5, 1);
  KERNEL("k", 810, 190, 1);
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 810, 0, 0, 0, 0);
  uint64_t cp = a.steps[0].critical_path_ns;
  assert_true(cp >= 190 * US && cp < 810 * US);
  assert_int_equal(a.n_findings, 1);
  assert_int_equal(a.findings[0].rule, FT_RULE_STEP_START);
  assert_int_equal(a.findings[0].cost_ns, cp);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* 100 kernels of 2 µs, each launched by a 10 µs call: 8 µs idle before each but the first. */
static void test_launch_bound(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  for (int i = 0; i < 100; i++) {
    OP("aten::add", 10 * i, 10);
    LAUNCH(10 * i, 10, i + 1);
    KERNEL("add_kernel", 10 * i + 8, 2, i + 1);
  }
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 8, 0, 0, 792, 0);
  assert_int_equal(a.n_findings, 2);
  finding(&a, 0, FT_RULE_LAUNCH_BOUND, "aten::add", 792, 99);
  /* and the loop is a sequence to fuse: 33 runs of three, 16 µs idle inside each */
  const ft_advise_finding *f = finding(&a, 1, FT_RULE_FUSE, "aten::add", 528, 33);
  assert_string_equal(f->what, "add_kernel > add_kernel > add_kernel x33.0/step");
  ft_advice_free(&a);
  ft_model_free(m);
}

/* A, B, C ten times (23 µs each, 10 µs apart), launched well ahead: A>B>C is the
 * sequence (10 runs, 20 µs idle inside each); B>C>A and C>A>B are the same kernels and
 * give no finding of their own. */
static void test_fuse(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  static const char *const names[] = {"A", "B", "C"};
  for (int i = 0; i < 30; i++) LAUNCH(i, 1, i + 1);
  for (int i = 0; i < 30; i++) KERNEL(names[i % 3], 5 + 33 * i, 23, i + 1);
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 5, 0, 0, 0, 305);
  assert_int_equal(a.n_findings, 1);
  const ft_advise_finding *f = finding(&a, 0, FT_RULE_FUSE, "(no op)", 200, 10);
  assert_string_equal(f->what, "A > B > C x10.0/step");
  assert_int_equal(f->occ[1].ts, (5 + 99) * US);
  assert_int_equal(f->occ[1].dur, 89 * US);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* A synchronous cudaMemset 100-300 (its work 200-210); the next kernel at 310. */
static void test_sync_memop(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  LAUNCH(0, 5, 1);
  KERNEL("k1", 5, 95, 1);
  CALL("cudaMemset", 100, 200, 2);
  ev(m, FT__SEC_MEMSET, "Memset (Device)", 200, 10, 2, NULL);
  LAUNCH(300, 5, 3);
  KERNEL("k2", 310, 690, 3);
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 5, 200, 0, 0, 0);
  assert_int_equal(a.n_findings, 1);
  finding(&a, 0, FT_RULE_SYNC_MEMOP, "cudaMemset", 200, 1);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* The CPU runs MyLoss 210-600 before launching the next kernel: a 410 µs gap. */
static void test_gap(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  LAUNCH(0, 5, 1);
  KERNEL("k1", 5, 195, 1);
  OP("MyLoss", 210, 390);
  LAUNCH(600, 5, 2);
  KERNEL("k2", 610, 390, 2);
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 5, 0, 0, 405, 5);
  assert_int_equal(a.n_findings, 1);
  const ft_advise_finding *f = finding(&a, 0, FT_RULE_GAP, "MyLoss", 410, 1);
  assert_int_equal(f->occ[0].ts, 200 * US);
  assert_int_equal(f->occ[0].dur, 410 * US);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* Two gaps under one op are two occurrences: 100-310 and 400-710 while MyLoss runs. */
static void test_gap_twice(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  LAUNCH(0, 5, 1);
  KERNEL("k1", 5, 95, 1);
  OP("MyLoss", 100, 800);
  LAUNCH(300, 5, 2);
  KERNEL("k2", 310, 90, 2);
  LAUNCH(700, 5, 3);
  KERNEL("k3", 710, 290, 3);
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 5, 0, 0, 510, 10);
  assert_int_equal(a.n_findings, 1);
  const ft_advise_finding *f = finding(&a, 0, FT_RULE_GAP, "MyLoss", 520, 2);
  assert_int_equal(f->n_occ, 2);
  assert_int_equal(f->occ[1].ts, 400 * US);
  assert_int_equal(f->occ[1].dur, 310 * US);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* aten::mm of 64x64x64 (524288 FLOPs) whose kernel takes 100 µs, on a 989 TFLOP/s device:
 * it costs its time over what 2 % of the peak would take (26.5 ns). */
static void test_low_flops(void **state) {
  (void)state;
  for (int with_peak = 0; with_peak < 2; with_peak++) {
    ft_model mm, *m = &mm;
    ft_model_init(m, NULL);
    STEP(0, 1000);
    LAUNCH(0, 5, 1);
    KERNEL("k0", 5, 95, 1);
    ev(m, FT__SEC_OP, "aten::mm", 98, 10, 0, "[[64, 64], [64, 64]]");
    LAUNCH(99, 5, 2);
    KERNEL("gemm", 100, 900, 2);
    assert_int_equal(ft_model_finish(m), FT_OK);
    m->peak_flops = with_peak ? 989e12 : 0;
    ft_advice a;
    ft_advise_opts o;
    ft_advise_opts_default(&o);
    assert_int_equal(ft_advise(m, &o, &a, NULL, 0), FT_OK);
    if (!with_peak) {
      assert_int_equal(a.n_findings, 0); /* no peak known: nothing to compare with */
    } else {
      assert_int_equal(a.n_findings, 1);
      assert_int_equal(a.findings[0].rule, FT_RULE_LOW_FLOPS);
      assert_string_equal(a.findings[0].where, "aten::mm");
      assert_int_equal(a.findings[0].cost_ns, 900 * US - 26);
      assert_string_equal(a.findings[0].what, "aten::mm [[64, 64], [64, 64]] at 0.0% of 989 TFLOP/s");
    }
    ft_advice_free(&a);
    ft_model_free(m);
  }
}

/* Kernels back to back from 5 to 995, launched well ahead: 10 µs idle, no finding. */
static void test_clean(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  for (int i = 0; i < 10; i++) {
    OP("aten::mm", 4 * i, 4);
    LAUNCH(4 * i, 4, i + 1);
    KERNEL(i % 2 ? "gemm_b" : "gemm_a", 5 + 99 * i, 99, i + 1);
  }
  ft_advice a;
  advise(m, &a);
  idle_is(&a.steps[0], 5, 0, 0, 0, 5);
  assert_int_equal(a.n_findings, 0);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* Steps named by a range may overlap: iter 0-1000 and iter 200-600. The sync 100-350
 * (returning in the gap 300-370) holds in both; the second step's gaps come after the
 * first's last one (900-1000) and are looked at afresh. */
static void test_overlapping_steps(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_opts mo = {.step = "iter"};
  ft_model_init(m, &mo);
  ev(m, FT__SEC_RANGE, "iter", 0, 1000, 0, NULL);
  ev(m, FT__SEC_RANGE, "iter", 200, 400, 0, NULL);
  LAUNCH(0, 5, 1);
  KERNEL("k1", 5, 295, 1);
  CALL("cudaStreamSynchronize", 100, 250, 0);
  LAUNCH(360, 5, 2);
  KERNEL("k2", 370, 530, 2);
  ft_advice a;
  advise(m, &a);
  assert_int_equal(a.n_steps, 2);
  idle_is(&a.steps[0], 5, 70, 0, 0, 100);
  idle_is(&a.steps[1], 0, 70, 0, 0, 0);
  ft_advice_free(&a);
  ft_model_free(m);
}

/* Compute 0-500 and an all-reduce 300-800: 200 µs of it hidden under compute, 300 exposed. */
static void test_comm(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  STEP(0, 1000);
  KERNEL("gemm", 0, 500, 0);
  KERNEL("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 300, 500, 0);
  ev(m, FT__SEC_MEMCPY, "Memcpy DtoD (Device -> Device)", 900, 50, 0, NULL);
  ft_advice a;
  advise(m, &a);
  const ft_advise_step *s = &a.steps[0];
  assert_int_equal(s->busy_ns, 850 * US);
  assert_int_equal(s->compute_ns, 500 * US);
  assert_int_equal(s->comm_ns, 500 * US);
  assert_int_equal(s->copy_ns, 50 * US);
  assert_int_equal(s->exposed_comm_ns, 300 * US);
  idle_is(s, 0, 0, 0, 0, 150); /* no launches: nothing to wait on */
  ft_advice_free(&a);
  ft_model_free(m);
}

/* Three ranks, two steps: rank 2 takes 300 µs longer, and the others wait for it in
 * their collectives (exposed communication 300 µs against its 0). */
static void test_straggler(void **state) {
  (void)state;
  ft_advise_step steps[3][2];
  ft_advice r[3];
  ft_advice *rp[3];
  for (int k = 0; k < 3; k++) {
    for (int s = 0; s < 2; s++) {
      int64_t wall = (k == 2 ? 1300 : 1000) * US;
      steps[k][s] =
          (ft_advise_step){.rank = k == 2 ? -1 : k, .number = s, .start = 2000 * US * s, .end = 2000 * US * s + wall};
      steps[k][s].exposed_comm_ns = k == 2 ? 0 : 300 * US;
    }
    r[k] = (ft_advice){.steps = steps[k], .n_steps = 2};
    rp[k] = &r[k];
  }
  ft_advice job = {0}; /* rank 2's trace names no rank: its position names it */
  ft_advise_opts o;
  ft_advise_opts_default(&o);
  assert_int_equal(ft_advise_job(rp, 3, &o, &job, NULL, 0), FT_OK);
  assert_int_equal(job.n_findings, 1);
  const ft_advise_finding *f = finding(&job, 0, FT_RULE_STRAGGLER, "rank 2", 300, 2);
  assert_int_equal(f->occ[1].step, 1);
  assert_int_equal(f->occ[1].rank, 2);
  assert_true(f->cost_share > 0.2727 && f->cost_share < 0.2728); /* 300 / mean 1100 */
  ft_advice_free(&job);
}

static void test_vendor_names(void **state) {
  (void)state;
  static const char *const sync[] = {"cudaDeviceSynchronize",
                                     "cudaStreamSynchronize",
                                     "cudaEventSynchronize",
                                     "cudaDeviceSynchronize_v3020",
                                     "cuCtxSynchronize",
                                     "cuStreamSynchronize",
                                     "cuStreamSynchronize_ptsz",
                                     "aclrtSynchronizeStream",
                                     "aclrtSynchronizeDevice",
                                     "aclrtSynchronizeEvent",
                                     "aclrtSynchronizeStreamWithTimeout",
                                     "hipDeviceSynchronize",
                                     "hipStreamSynchronize",
                                     "hipEventSynchronize",
                                     "mcDeviceSynchronize",
                                     "mcStreamSynchronize",
                                     "mcEventSynchronize",
                                     "musaDeviceSynchronize",
                                     "musaStreamSynchronize",
                                     "muCtxSynchronize",
                                     "topsDeviceSynchronize",
                                     "topsStreamSynchronize",
                                     NULL};
  static const char *const not_sync[] = {"cudaLaunchKernel",
                                         "cudaStreamWaitEvent",
                                         "aclrtLaunchKernel",
                                         "hipMemcpyAsync",
                                         "Synchronize",
                                         "mcLaunchKernel",
                                         "cudaMemcpy",
                                         "aclrtSynchronize",
                                         "cudaDeviceSynchronizeX",
                                         "xcudaDeviceSynchronize",
                                         "",
                                         NULL};
  static const char *const copy[] = {
      "cudaMemcpy", "cudaMemcpy_v3020", "cudaMemcpy2D", "aclrtMemcpy",     "hipMemcpy", "hipMemcpyHtoD",
      "mcMemcpy",   "musaMemcpy",       "topsMemcpy",   "cuMemcpyHtoD_v2", NULL};
  static const char *const not_copy[] = {"cudaMemcpyAsync",
                                         "aclrtMemcpyAsync",
                                         "hipMemcpyDtoH",
                                         "cuMemcpyDtoH_v2",
                                         "cudaMemset",
                                         "mcMemcpyAsync",
                                         "Memcpy HtoD (Pageable -> Device)",
                                         NULL};
  for (const char *const *n = sync; *n; n++)
    if (!ft_advise_is_sync_call(*n)) fail_msg("%s: not a sync call", *n);
  for (const char *const *n = not_sync; *n; n++)
    if (ft_advise_is_sync_call(*n)) fail_msg("%s: a sync call", *n);
  for (const char *const *n = copy; *n; n++)
    if (!ft_advise_is_blocking_copy(*n)) fail_msg("%s: not a blocking copy", *n);
  for (const char *const *n = not_copy; *n; n++)
    if (ft_advise_is_blocking_copy(*n)) fail_msg("%s: a blocking copy", *n);
  assert_false(ft_advise_is_sync_call(NULL));
  static const char *const rules[FT_RULE_N] = {"sync",       "h2d-copy",   "step-start",    "launch-bound",
                                               "sync-memop", "gap",        "straggler",     "fuse",
                                               "low-flops",  "alloc-call", "fragmentation", "leak"};
  for (int r = 0; r < FT_RULE_N; r++) assert_string_equal(ft_rule_name((enum ft_rule)r), rules[r]);
  /* the one peaks table (the model's: docs/advise.md "Peaks"), by deviceProperties' name, each
   * variant before the name it contains */
  static const struct {
    const char *name;
    double tflops;
  } peaks[] = {{"NVIDIA H200", 989.4},
               {"NVIDIA H200 NVL", 835.5},
               {"NVIDIA H100 80GB HBM3", 989.4},
               {"NVIDIA H100 PCIe", 756.5},
               {"NVIDIA H100 NVL", 835.5},
               {"NVIDIA H800", 989.4},
               {"NVIDIA H800 PCIe", 756.5},
               {"NVIDIA H20", 148},
               {"NVIDIA L40S", 362.05},
               {"NVIDIA L40", 181.05},
               {"NVIDIA L4", 121},
               {"NVIDIA A100-SXM4-80GB", 312},
               {"NVIDIA A100 80GB PCIe", 312},
               {"NVIDIA A800-SXM4-80GB", 312},
               {"NVIDIA B200", 2250},
               {"NVIDIA GB200", 2500},
               {"Tesla V100-SXM2-32GB", 125},
               {"Tesla V100-PCIE-16GB", 112},
               {"Tesla V100S-PCIE-32GB", 130},
               {"AMD Instinct MI300X", 1307.4},
               {"MetaX C500", 0},
               {"", 0}};
  for (size_t i = 0; i < sizeof peaks / sizeof *peaks; i++)
    if (ft_model_peak_flops(peaks[i].name) != peaks[i].tflops * 1e12)
      fail_msg("%s: %g, not %g", peaks[i].name, ft_model_peak_flops(peaks[i].name), peaks[i].tflops * 1e12);
  assert_true(ft_model_peak_flops(NULL) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sync),
      cmocka_unit_test(test_h2d_pageable),
      cmocka_unit_test(test_h2d_pageable_sync),
      cmocka_unit_test(test_h2d_blocking),
      cmocka_unit_test(test_d2h_sync),
      cmocka_unit_test(test_copy_calls),
      cmocka_unit_test(test_step_start),
      cmocka_unit_test(test_step_start_steps),
      cmocka_unit_test(test_cap),
      cmocka_unit_test(test_launch_bound),
      cmocka_unit_test(test_fuse),
      cmocka_unit_test(test_sync_memop),
      cmocka_unit_test(test_gap),
      cmocka_unit_test(test_gap_twice),
      cmocka_unit_test(test_low_flops),
      cmocka_unit_test(test_clean),
      cmocka_unit_test(test_comm),
      cmocka_unit_test(test_overlapping_steps),
      cmocka_unit_test(test_straggler),
      cmocka_unit_test(test_vendor_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
