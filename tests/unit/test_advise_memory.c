/* advise's memory rules (issue 51): alloc-call, fragmentation and leak on synthetic models with known answers, and
 * none of them on a clean one. */
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
#define MIB (1ll << 20)
#define GIB (1ll << 30)

/* One event into m: CPU events on pid 1 tid 1. */
static void ev(ft_model *m, enum ft__sec sec, const char *name, int64_t ts_us, int64_t dur_us) {
  ft__ev e = {.ts = ts_us * US, .dur = dur_us * US, .dev = 1, .sec = (uint8_t)sec};
  e.name_len = (uint32_t)strlen(name);
  e.has_tid = true;
  e.tid = 1;
  assert_true(ft_model_add(m, &e, name, "cat"));
}

/* n steps of 1000 us: ProfilerStep#1.. at 0, 1000, ... */
static void steps(ft_model *m, int n) {
  char name[32];
  for (int s = 0; s < n; s++) {
    snprintf(name, sizeof name, "ProfilerStep#%d", s + 1);
    ev(m, FT__SEC_RANGE, name, s * 1000, 1000);
  }
}

static uint32_t slice(const ft_model *m, const char *name, int64_t ts_us) {
  for (size_t i = 0; i < m->n; i++)
    if (m->ts[i] == ts_us * US && !strcmp(ft_model_str(m, m->name[i]), name)) return (uint32_t)i;
  fail_msg("no slice %s at %lld", name, (long long)ts_us);
  return FT_MODEL_NONE;
}

static uint32_t step_at(const ft_model *m, int64_t ts) {
  for (size_t s = 0; s < m->n_steps; s++)
    if (ts >= m->steps[s].start && ts < m->steps[s].end) return (uint32_t)s;
  return FT_MODEL_NONE;
}

/* A memory row (after ft_model_finish, in time order), attributed to op (a slice or FT_MODEL_NONE). */
static void mem(ft_model *m, int64_t ts_us, int64_t bytes, uint64_t addr, int64_t alloc, int64_t res, uint32_t op) {
  m->mem = realloc(m->mem, (m->n_mem + 1) * sizeof *m->mem);
  assert_non_null(m->mem);
  m->mem[m->n_mem++] = (ft_model_mem){.ts = ts_us * US,
                                      .bytes = bytes,
                                      .addr = addr,
                                      .total_allocated = alloc,
                                      .total_reserved = res,
                                      .device = 0,
                                      .device_type = 1,
                                      .track = 0,
                                      .op = op,
                                      .call = FT_MODEL_NONE,
                                      .step = step_at(m, ts_us * US)};
}

static void advise(ft_model *m, ft_advice *a) {
  char err[256];
  ft_advise_opts o;
  ft_advise_opts_default(&o);
  ft_status s = ft_advise(m, &o, a, err, sizeof err);
  if (s) fail_msg("%s", err);
}

static void done(ft_model *m, ft_advice *a) {
  ft_advice_free(a);
  free(m->mem); /* made here, whoever frees a model's own */
  m->mem = NULL;
  m->n_mem = 0;
  ft_model_free(m);
}

/* The memory rules' findings in rank order (the models have no device work: every step is idle at its
 * start, step-start's finding, left out here). */
static size_t mem_findings(const ft_advice *a, const ft_advise_finding **out) {
  size_t n = 0;
  for (size_t i = 0; i < a->n_findings; i++)
    if (a->findings[i].rule >= FT_RULE_ALLOC_CALL) out[n++] = &a->findings[i];
    else assert_int_equal(a->findings[i].rule, FT_RULE_STEP_START);
  return n;
}

static const ft_advise_finding *only(const ft_advice *a, enum ft_rule r) {
  const ft_advise_finding *f[16];
  assert_int_equal(mem_findings(a, f), 1);
  assert_int_equal(f[0]->rule, r);
  return f[0];
}

/* cudaMalloc (80 us) under aten::empty in steps 2 and 3: 160 us over 3 steps; the first step's and the
 * stream-ordered cudaMallocAsync are not counted; a cudaFree outside any op is its own finding. */
static void test_alloc_call(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  steps(m, 3);
  ev(m, FT__SEC_OP, "aten::empty", 100, 200);
  ev(m, FT__SEC_RUNTIME, "cudaMalloc", 110, 80); /* warm-up */
  ev(m, FT__SEC_OP, "aten::empty", 1100, 200);
  ev(m, FT__SEC_RUNTIME, "cudaMalloc", 1110, 80);
  ev(m, FT__SEC_RUNTIME, "cudaMallocAsync", 1200, 50);
  ev(m, FT__SEC_OP, "aten::empty", 2100, 200);
  ev(m, FT__SEC_RUNTIME, "cudaMalloc", 2110, 80);
  ev(m, FT__SEC_RUNTIME, "hipFree", 2500, 90);
  assert_int_equal(ft_model_finish(m), FT_OK);
  ft_advice a;
  advise(m, &a);
  const ft_advise_finding *fs[16];
  assert_int_equal(mem_findings(&a, fs), 2);
  const ft_advise_finding *f = fs[0];
  assert_int_equal(f->rule, FT_RULE_ALLOC_CALL);
  assert_string_equal(f->where, "aten::empty");
  assert_int_equal(f->cost_ns, 160 * US / 3);
  assert_int_equal(f->count, 2);
  assert_int_equal(f->bytes, 0);
  assert_int_equal(f->occ[0].step, 2);
  assert_int_equal(f->occ[0].ts, 1110 * US);
  assert_string_equal(f->what, "cudaMalloc under aten::empty in the steady-state steps: each call a device sync");
  f = fs[1];
  assert_int_equal(f->rule, FT_RULE_ALLOC_CALL);
  assert_string_equal(f->where, "hipFree");
  assert_int_equal(f->cost_ns, 30 * US);
  done(m, &a);
}

/* peak reserved 2.5 GiB over peak allocated 1 GiB on device 0: fragmentation of 1.5 GiB */
static void frag_case(int64_t alloc, int64_t res, bool found) {
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  steps(m, 2);
  ev(m, FT__SEC_OP, "aten::empty", 100, 100);
  assert_int_equal(ft_model_finish(m), FT_OK);
  uint32_t op = slice(m, "aten::empty", 100);
  mem(m, 100, 0, 0, 0, res, op); /* a reserve: the pool grows first */
  mem(m, 110, alloc, 4096, alloc, res, op);
  mem(m, 1500, -alloc, 4096, 0, res, FT_MODEL_NONE);
  ft_advice a;
  advise(m, &a);
  if (!found) {
    const ft_advise_finding *fs[16];
    assert_int_equal(mem_findings(&a, fs), 0);
  } else {
    const ft_advise_finding *f = only(&a, FT_RULE_FRAGMENTATION);
    assert_int_equal(f->bytes, (uint64_t)(res - alloc));
    assert_int_equal(f->cost_ns, 0);
    assert_string_equal(f->where, "device 0");
    assert_string_equal(f->what, "device 0: peak reserved 2.50 GiB is 2.5x peak allocated 1.00 GiB");
    assert_int_equal(f->n_occ, 1);
    assert_int_equal(f->occ[0].ts, 100 * US);
    assert_int_equal(f->occ[0].step, 1);
  }
  done(m, &a);
}
static void test_fragmentation(void **state) {
  (void)state;
  frag_case(GIB, 5 * GIB / 2, true);
  frag_case(GIB, 7 * GIB / 5, false); /* 1.4x: under the ratio */
  frag_case(GIB / 4, GIB, false);     /* 4x, but not over 1 GiB */
}
static void test_fragmentation_edge(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  steps(m, 1);
  assert_int_equal(ft_model_finish(m), FT_OK);
  mem(m, 10, GIB / 4, 4096, GIB / 4, GIB + 1, FT_MODEL_NONE);
  ft_advice a;
  advise(m, &a);
  assert_int_equal(only(&a, FT_RULE_FRAGMENTATION)->bytes, (uint64_t)(GIB + 1 - GIB / 4));
  done(m, &a);
}

/* 5 steps: 64 MiB of weights in the first; each step a 100 MiB transient (aten::mm, freed) and, with
 * leaky, 4 MiB kept by aten::cat: allocated at the steady steps' ends grows 4 MiB a step. */
static void leak_case(bool leaky) {
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  steps(m, 5);
  for (int s = 0; s < 5; s++) {
    ev(m, FT__SEC_OP, "aten::mm", s * 1000 + 100, 100);
    ev(m, FT__SEC_OP, "aten::cat", s * 1000 + 300, 100);
  }
  ev(m, FT__SEC_OP, "aten::empty", 10, 10);
  assert_int_equal(ft_model_finish(m), FT_OK);
  int64_t live = 0;
  mem(m, 10, 64 * MIB, 1, live += 64 * MIB, 256 * MIB, slice(m, "aten::empty", 10));
  for (int s = 0; s < 5; s++) {
    int64_t t = s * 1000;
    mem(m, t + 100, 100 * MIB, 2, live + 100 * MIB, 256 * MIB, slice(m, "aten::mm", t + 100));
    mem(m, t + 150, -100 * MIB, 2, live, 256 * MIB, slice(m, "aten::mm", t + 100));
    if (leaky) mem(m, t + 300, 4 * MIB, 100 + (uint64_t)s, live += 4 * MIB, 256 * MIB, slice(m, "aten::cat", t + 300));
  }
  ft_advice a;
  advise(m, &a);
  if (!leaky) {
    const ft_advise_finding *fs[16];
    assert_int_equal(mem_findings(&a, fs), 0);
  } else {
    const ft_advise_finding *f = only(&a, FT_RULE_LEAK);
    assert_int_equal(f->bytes, 4 * MIB);
    assert_string_equal(f->where, "aten::cat");
    assert_string_equal(f->what,
                        "device 0: allocated grows 4.00 MiB a step over 4 steps; 16.00 MiB still live from "
                        "aten::cat");
    assert_int_equal(f->count, 4); /* its live allocations of the steady steps (the first step's is warm-up) */
    assert_int_equal(f->n_occ, 4);
  }
  done(m, &a);
}
static void test_leak(void **state) {
  (void)state;
  leak_case(true);
}
static void test_clean(void **state) {
  (void)state;
  leak_case(false);
}

/* Too few steady steps: 3 steps (2 steady) that grow are no leak yet. */
static void test_leak_short(void **state) {
  (void)state;
  ft_model mm, *m = &mm;
  ft_model_init(m, NULL);
  steps(m, 3);
  assert_int_equal(ft_model_finish(m), FT_OK);
  for (int s = 0; s < 3; s++) mem(m, s * 1000 + 500, 8 * MIB, 100 + (uint64_t)s, (s + 1) * 8 * MIB, GIB, FT_MODEL_NONE);
  ft_advice a;
  advise(m, &a);
  const ft_advise_finding *fs[16];
  assert_int_equal(mem_findings(&a, fs), 0);
  done(m, &a);
}

static void test_alloc_names(void **state) {
  (void)state;
  static const char *const yes[] = {"cudaMalloc",      "cudaFree",          "cudaMallocHost",
                                    "cudaFreeHost",    "cudaHostAlloc",     "cuMemAlloc_v2",
                                    "cuMemFree_v2",    "hipMalloc",         "hipFree",
                                    "hipHostMalloc",   "aclrtMalloc",       "aclrtFree",
                                    "aclrtMallocHost", "mcMalloc",          "mcFree",
                                    "musaMalloc",      "musaFree",          "topsMalloc",
                                    "topsFree",        "cudaMallocManaged", NULL};
  static const char *const no[] = {"cudaMallocAsync", "cudaFreeAsync",    "cuMemAllocAsync",
                                   "hipMallocAsync",  "cudaLaunchKernel", "aclrtMemcpy",
                                   "Malloc",          "malloc",           NULL};
  for (const char *const *n = yes; *n; n++)
    if (!ft_advise_is_alloc_call(*n)) fail_msg("%s: not an allocation call", *n);
  for (const char *const *n = no; *n; n++)
    if (ft_advise_is_alloc_call(*n)) fail_msg("%s: an allocation call", *n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_call),
      cmocka_unit_test(test_fragmentation),
      cmocka_unit_test(test_fragmentation_edge),
      cmocka_unit_test(test_leak),
      cmocka_unit_test(test_clean),
      cmocka_unit_test(test_leak_short),
      cmocka_unit_test(test_alloc_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
