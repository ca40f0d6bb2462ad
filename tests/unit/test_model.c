/* The event model (src/analysis/model): builder-made events sorted, linked, attributed to ops and steps, replayed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "stats_internal.h"
#include "stats_memory.h"

/* One event as the stats reader hands it over. */
typedef struct spec {
  int sec;
  const char *name;
  int64_t ts, dur, pid, tid; /* tid: a thread's, or a stream's (args.stream) on device work; -1: none */
  int64_t corr, ext;         /* -1: none */
  uint64_t bytes;
} spec;

static void add(ft_model *m, spec s) {
  ft__ev e = {.ts = s.ts, .dur = s.dur, .dev = s.pid, .bytes = s.bytes, .sec = (uint8_t)s.sec};
  e.name_len = (uint32_t)strlen(s.name);
  bool device = s.sec == FT__SEC_KERNEL || s.sec == FT__SEC_MEMCPY || s.sec == FT__SEC_MEMSET;
  if (s.tid >= 0 && device) e.has_stream = true, e.stream = s.tid;
  else if (s.tid >= 0) e.has_tid = true, e.tid = s.tid;
  if (s.corr != -1) e.has_corr = true, e.corr = s.corr;
  if (s.ext != -1) e.has_ext = true, e.ext = s.ext;
  if (s.sec == FT__SEC_KERNEL) {
    e.has_grid = e.has_block = e.has_regs = true;
    e.grid[0] = 128, e.grid[1] = 2, e.grid[2] = 1;
    e.block[0] = 256, e.block[1] = 1, e.block[2] = 1;
    e.regs = 32;
  }
  assert_true(ft_model_add(m, &e, s.name, s.sec == FT__SEC_UNKNOWN ? "Trace" : "x"));
}

/* The slice of a name (the only one of it), asserted to exist. */
static size_t slice_of(const ft_model *m, const char *name) {
  uint32_t id = ft_model_find_str(m, name);
  assert_int_not_equal(id, FT_MODEL_NONE);
  size_t at = SIZE_MAX;
  for (size_t i = 0; i < m->n; i++)
    if (m->name[i] == id) {
      assert_int_equal(at, SIZE_MAX);
      at = i;
    }
  assert_int_not_equal(at, SIZE_MAX);
  return at;
}

/* Two profiler steps on one thread; device work on one stream, written first (as
 * kineto does), one kernel running after its launch's step ended, one kernel whose
 * launch call is missing (its op by External id), a copy before any step. */
static void build_two_steps(ft_model *m) {
  ft_model_init(m, NULL);
  add(m, (spec){FT__SEC_KERNEL, "gemm", 1500, 300, 0, 7, 7, 10, 0});
  add(m, (spec){FT__SEC_KERNEL, "add_k", 5200, 100, 0, 7, 8, 11, 0});
  add(m, (spec){FT__SEC_KERNEL, "relu_k", 5300, 100, 0, 7, 99, 12, 0});
  add(m, (spec){FT__SEC_MEMCPY, "Memcpy HtoD", 50, 50, 0, 7, -1, -1, 4096});
  add(m, (spec){FT__SEC_UNKNOWN, "t", 0, 10, 100, 1, -1, -1, 0});
  add(m, (spec){FT__SEC_RANGE, "ProfilerStep#5", 1000, 4000, 100, 1, -1, 3, 0});
  add(m, (spec){FT__SEC_OP, "aten::mm", 1100, 800, 100, 1, -1, 10, 0});
  add(m, (spec){FT__SEC_RUNTIME, "cudaLaunchKernel", 1200, 100, 100, 1, 7, 10, 0});
  add(m, (spec){FT__SEC_OP, "aten::add", 2000, 500, 100, 1, -1, 11, 0});
  add(m, (spec){FT__SEC_DRIVER, "cuLaunchKernel", 2100, 100, 100, 1, 8, 11, 0});
  add(m, (spec){FT__SEC_RANGE, "ProfilerStep#6", 5000, 4000, 100, 1, -1, 4, 0});
  add(m, (spec){FT__SEC_OP, "aten::relu", 5100, 100, 100, 1, -1, 12, 0});
  assert_int_equal(ft_model_finish(m), FT_OK);
}

static void test_sorted_interned_tracks(void **state) {
  (void)state;
  ft_model m;
  build_two_steps(&m);
  assert_int_equal(m.n, 11); /* the unknown category's event is no slice */
  static const int64_t ts[] = {50, 1000, 1100, 1200, 1500, 2000, 2100, 5000, 5100, 5200, 5300};
  for (size_t i = 0; i < m.n; i++) assert_int_equal(m.ts[i], ts[i]);
  assert_string_equal(ft_model_str(&m, m.name[0]), "Memcpy HtoD");
  assert_int_equal(m.kind[0], FT_MK_MEMCPY);
  assert_int_equal(m.arg[0], 4096);
  assert_int_equal(m.kind[1], FT_MK_RANGE);
  assert_int_equal(m.dur[1], 4000);
  assert_string_equal(ft_model_str(&m, FT_MODEL_NONE), "");
  assert_int_equal(ft_model_find_str(&m, "no such name"), FT_MODEL_NONE);
  /* two tracks: the thread (100, 1) and the stream (device 0, stream 7) */
  assert_int_equal(m.n_tracks, 2);
  const ft_model_track *th = &m.tracks[m.track[1]], *sm = &m.tracks[m.track[0]];
  assert_int_equal(th->kind, FT_TRACK_THREAD);
  assert_int_equal(th->pid, 100);
  assert_int_equal(th->tid, 1);
  assert_int_equal(th->device, -1);
  assert_int_equal(sm->kind, FT_TRACK_STREAM);
  assert_int_equal(sm->device, 0);
  assert_int_equal(sm->tid, 7);
  assert_int_equal(m.track[slice_of(&m, "relu_k")], m.track[0]);
  assert_int_equal(m.rank, -1);
  ft_model_free(&m);
}

static void test_links_ops_steps(void **state) {
  (void)state;
  ft_model m;
  build_two_steps(&m);
  size_t gemm = slice_of(&m, "gemm"), add_k = slice_of(&m, "add_k"), relu_k = slice_of(&m, "relu_k");
  size_t launch = slice_of(&m, "cudaLaunchKernel"), cu = slice_of(&m, "cuLaunchKernel");
  size_t mm = slice_of(&m, "aten::mm"), addop = slice_of(&m, "aten::add"), relu = slice_of(&m, "aten::relu");
  size_t s5 = slice_of(&m, "ProfilerStep#5"), s6 = slice_of(&m, "ProfilerStep#6"), cp = slice_of(&m, "Memcpy HtoD");
  /* links, both ways */
  assert_int_equal(m.link[gemm], launch);
  assert_int_equal(m.link[launch], gemm);
  assert_int_equal(m.link[add_k], cu);
  assert_int_equal(m.link[cu], add_k);
  assert_int_equal(m.link[relu_k], FT_MODEL_NONE);
  assert_int_equal(m.link[cp], FT_MODEL_NONE);
  assert_int_equal(m.link[mm], FT_MODEL_NONE);
  /* ops: a call's parent; device work its launch's op, or its External id's */
  assert_int_equal(m.op[launch], mm);
  assert_int_equal(m.op[cu], addop);
  assert_int_equal(m.op[mm], s5);
  assert_int_equal(m.op[s5], FT_MODEL_NONE);
  assert_int_equal(m.op[gemm], mm);
  assert_int_equal(m.op[add_k], addop);
  assert_int_equal(m.op[relu_k], relu);
  assert_int_equal(m.op[cp], FT_MODEL_NONE);
  /* steps: ProfilerStep#5 and #6; add_k runs in #6's time but its launch was in #5 */
  assert_int_equal(m.n_steps, 2);
  assert_int_equal(m.steps[0].number, 5);
  assert_int_equal(m.steps[0].start, 1000);
  assert_int_equal(m.steps[0].end, 5000);
  assert_int_equal(m.steps[0].slice, s5);
  assert_int_equal(m.steps[1].number, 6);
  assert_int_equal(m.steps[1].slice, s6);
  assert_int_equal(m.step[add_k], 0);
  assert_int_equal(m.step[cu], 0);
  assert_int_equal(m.step[relu_k], 1);
  assert_int_equal(m.step[relu], 1);
  assert_int_equal(m.step[s6], 1);
  assert_int_equal(m.step[cp], FT_MODEL_NONE);
  /* ids and kernel args */
  assert_int_equal(ft_model_corr(&m, gemm), 7);
  assert_int_equal(ft_model_ext(&m, gemm), 10);
  assert_int_equal(ft_model_corr(&m, mm), FT_MODEL_NO_ID);
  assert_int_equal(ft_model_ext(&m, cp), FT_MODEL_NO_ID);
  struct ft_model_kernel_args a;
  assert_true(ft_model_kernel_args(&m, gemm, &a));
  assert_int_equal(a.grid[0], 128);
  assert_int_equal(a.grid[1], 2);
  assert_int_equal(a.block[0], 256);
  assert_int_equal(a.stream, 7);
  assert_int_equal(a.regs, 32);
  assert_null(a.dims);
  assert_false(ft_model_kernel_args(&m, mm, &a));
  assert_int_equal(a.stream, -1);
  ft_model_free(&m);
}

/* A correlation id of two calls and one kernel: the nearest call before it (join_id). */
static void test_one_launch_per_id(void **state) {
  (void)state;
  ft_model m;
  ft_model_init(&m, NULL);
  add(&m, (spec){FT__SEC_KERNEL, "k", 400, 10, 0, 7, 50, -1, 0});
  add(&m, (spec){FT__SEC_RUNTIME, "first", 100, 10, 1, 1, 50, -1, 0});
  add(&m, (spec){FT__SEC_RUNTIME, "second", 300, 10, 1, 1, 50, -1, 0});
  /* a kernel before any call of its id pairs with a call left over */
  add(&m, (spec){FT__SEC_KERNEL, "early", 20, 10, 0, 7, 60, -1, 0});
  add(&m, (spec){FT__SEC_RUNTIME, "late", 900, 10, 1, 1, 60, -1, 0});
  assert_int_equal(ft_model_finish(&m), FT_OK);
  assert_int_equal(m.link[slice_of(&m, "k")], slice_of(&m, "second"));
  assert_int_equal(m.link[slice_of(&m, "first")], FT_MODEL_NONE);
  assert_int_equal(m.link[slice_of(&m, "early")], slice_of(&m, "late"));
  /* no step range: one step, the whole trace */
  assert_int_equal(m.n_steps, 1);
  assert_int_equal(m.steps[0].number, -1);
  assert_int_equal(m.steps[0].start, 20);
  assert_int_equal(m.steps[0].end, 910);
  assert_int_equal(m.steps[0].slice, FT_MODEL_NONE);
  for (size_t i = 0; i < m.n; i++) assert_int_equal(m.step[i], 0);
  ft_model_free(&m);
}

/* A parent and child starting together, the child first in the file: the longer
 * one is the parent; ids outside 32 bits come back whole. */
static void test_ties_and_wide_ids(void **state) {
  (void)state;
  ft_model m;
  ft_model_init(&m, NULL);
  add(&m, (spec){FT__SEC_OP, "child", 100, 10, 1, 1, -1, (int64_t)1 << 40, 0});
  add(&m, (spec){FT__SEC_OP, "parent", 100, 50, 1, 1, -1, -5, 0});
  add(&m, (spec){FT__SEC_RUNTIME, "call", 105, 1, 1, 1, INT64_MAX, -1, 0});
  add(&m, (spec){FT__SEC_OP, "other_thread", 101, 100, 1, 2, -1, -1, 0});
  assert_int_equal(ft_model_finish(&m), FT_OK);
  size_t child = slice_of(&m, "child"), parent = slice_of(&m, "parent");
  assert_true(child < parent); /* stable: the file's order at one ts */
  assert_int_equal(m.op[child], parent);
  assert_int_equal(m.op[parent], FT_MODEL_NONE);
  assert_int_equal(m.op[slice_of(&m, "call")], child);
  assert_int_equal(m.op[slice_of(&m, "other_thread")], FT_MODEL_NONE);
  assert_int_equal(ft_model_ext(&m, child), (int64_t)1 << 40);
  assert_int_equal(m.ext32[child], FT_MODEL_WIDE);
  assert_int_equal(ft_model_ext(&m, parent), -5);
  assert_int_equal(ft_model_corr(&m, slice_of(&m, "call")), INT64_MAX);
  ft_model_free(&m);
}

/* opts.step: the ranges of that name, numbered from 0. */
static void test_named_steps(void **state) {
  (void)state;
  ft_model m;
  ft_model_opts o = {.step = "train"};
  ft_model_init(&m, &o);
  add(&m, (spec){FT__SEC_RANGE, "train", 2000, 1000, 1, 1, -1, -1, 0});
  add(&m, (spec){FT__SEC_RANGE, "train", 100, 1000, 1, 1, -1, -1, 0});
  add(&m, (spec){FT__SEC_RANGE, "ProfilerStep#9", 50, 5000, 1, 1, -1, -1, 0});
  add(&m, (spec){FT__SEC_OP, "op", 2500, 10, 1, 1, -1, -1, 0});
  add(&m, (spec){FT__SEC_OP, "gap", 1500, 10, 1, 1, -1, -1, 0});
  assert_int_equal(ft_model_finish(&m), FT_OK);
  assert_int_equal(m.n_steps, 2);
  assert_int_equal(m.steps[0].number, 0);
  assert_int_equal(m.steps[0].start, 100);
  assert_int_equal(m.steps[1].number, 1);
  assert_int_equal(m.steps[1].start, 2000);
  assert_int_equal(m.step[slice_of(&m, "op")], 1);
  assert_int_equal(m.step[slice_of(&m, "gap")], FT_MODEL_NONE);
  assert_int_equal(m.step[slice_of(&m, "ProfilerStep#9")], FT_MODEL_NONE);
  ft_model_free(&m);
}

static const char TRACE[] =
    "{\"distributedInfo\": {\"rank\": 3}, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\","
    " \"numSms\": 132}, {\"id\": 1, \"name\": \"other\"}], \"traceEvents\": ["
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 1.5, \"dur\": 0.3,"
    " \"args\": {\"correlation\": 7, \"External id\": 10, \"stream\": 7, \"grid\": [1, 2, 3], \"block\": [4, 5, 6]}},"
    "{\"ph\": \"X\", \"cat\": \"mystery\", \"name\": \"t\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 10},"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 1.1, \"dur\": 0.8,"
    " \"args\": {\"External id\": 10, \"Input Dims\": [[2, 3], []]}},"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 1.2,"
    " \"dur\": 0.1, \"args\": {\"correlation\": 7, \"External id\": 10}},"
    "{\"ph\": \"X\", \"cat\": \"python\", \"name\": \"ignored\", \"pid\": 1, \"tid\": 1, \"ts\": 1.2, \"dur\": 0.1}"
    "]}";

/* [memory] instants (issue 51): rows in time order (not the file's), each with its op (on its thread, else by its
 * call's), call (correlation id) and step; args read whatever the keys' order; a replay gives the streaming summary. */
static const char MEM_TRACE[] =
    "{\"traceEvents\": ["
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 1, \"tid\": 1, \"ts\": 0,"
    " \"dur\": 100},"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::empty\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 40},"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMalloc\", \"pid\": 1, \"tid\": 1, \"ts\": 25, \"dur\": "
    "10,"
    " \"args\": {\"correlation\": 9}},"
    "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1,"
    " \"ts\": 30, \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 1, \"Bytes\": 100, \"Total Allocated\": "
    "100,"
    " \"Total Reserved\": 4096}},"
    "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 5, \"ts\": 10,"
    " \"args\": {\"Device Type\": 20, \"Device Id\": 3, \"Addr\": 18446744073709551615, \"Bytes\": 7,"
    " \"correlation\": 9, \"Op\": \"alloc\", \"Kind\": \"device\"}},"
    "{\"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 1, \"Bytes\": -100, \"Total Allocated\": 0},"
    " \"ph\": \"I\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 40},"
    "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 200, \"args\": {\"Device Type\": 1,"
    " \"Device Id\": 0, \"Addr\": 2, \"Bytes\": 50}},"
    "{\"args\": {\"Bytes\": 5, \"Addr\": 3}, \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": "
    "7,"
    " \"ts\": 50, \"dur\": 1},"
    "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 60, \"args\": {\"Bytes\": null}}"
    "]}";

static void test_memory_rows(void **state) {
  (void)state;
  ft_model m;
  ft_stats st, re;
  char err[256];
  assert_int_equal(ft_stats_init(&st), FT_OK);
  st.want_memory = true;
  st.mem = ft__memacc_new();
  assert_int_equal(ft_model_read_mem(&m, MEM_TRACE, strlen(MEM_TRACE), NULL, &st, err, sizeof err), FT_OK);
  assert_int_equal(m.n, 4);
  assert_int_equal(m.n_mem, 4);
  const int64_t ts[] = {10000, 30000, 40000, 200000}, bytes[] = {7, 100, -100, 50};
  const char *const op[] = {"aten::empty", "aten::empty", "aten::empty", ""};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(m.mem[i].ts, ts[i]);
    assert_int_equal(m.mem[i].bytes, bytes[i]);
    assert_string_equal(ft_model_str(&m, m.mem[i].op == FT_MODEL_NONE ? FT_MODEL_NONE : m.name[m.mem[i].op]), op[i]);
    assert_int_equal(m.mem[i].step, i < 3 ? 0 : FT_MODEL_NONE);
    assert_int_equal(m.tracks[m.mem[i].track].tid, i ? 1 : 5);
  }
  assert_int_equal(m.steps[0].number, 1);
  assert_int_equal(m.mem[0].addr, UINT64_MAX);
  assert_int_equal(m.mem[0].device, 3);
  assert_int_equal(m.mem[0].device_type, 20);
  assert_int_equal(m.mem[0].total_allocated, -1);
  assert_string_equal(ft_model_str(&m, m.name[m.mem[0].call]), "cudaMalloc");
  assert_int_equal(m.mem[1].call, FT_MODEL_NONE);
  assert_int_equal(m.mem[1].total_reserved, 4096);
  assert_int_equal(m.mem[2].total_allocated, 0);
  assert_int_equal(m.mem[2].total_reserved, -1);
  assert_true(ft_model_bytes(&m) >= 4 * (sizeof(ft_model_mem) + 68));
  /* what the streaming read summed: ft_model_read's parse ended the file (ft__stats_mem_file_end) */
  const ft_stat_mem *a = &st.mem_sum;
  assert_int_equal(a->n_devs, 2);
  assert_int_equal(a->bad_field, 1);
  assert_int_equal(a->devs[0].peak_alloc.bytes, 100);
  assert_string_equal(a->devs[0].peak_alloc.op, "aten::empty");
  assert_int_equal(a->devs[0].peak_alloc.step, 1);
  assert_int_equal(a->devs[0].live_bytes, 50);
  assert_string_equal(a->devs[1].peak_alloc.call, "cudaMalloc");
  assert_string_equal(a->devs[1].peak_alloc.op, "aten::empty");
  assert_int_equal(ft_stats_init(&re), FT_OK);
  re.want_memory = true;
  re.mem = ft__memacc_new();
  assert_int_equal(ft_model_replay(&m, &re), FT_OK); /* the replay ends the file: mem_sum is set */
  const ft_stat_mem *b = &re.mem_sum;
  assert_int_equal(b->n_devs, 2);
  assert_int_equal(b->bad_field, 1);
  assert_int_equal(b->events, a->events);
  for (size_t d = 0; d < 2; d++) {
    assert_int_equal(b->devs[d].peak_alloc.bytes, a->devs[d].peak_alloc.bytes);
    assert_int_equal(b->devs[d].peak_alloc.ts, a->devs[d].peak_alloc.ts);
    assert_string_equal(b->devs[d].peak_alloc.op, a->devs[d].peak_alloc.op);
    assert_int_equal(b->devs[d].live_n, a->devs[d].live_n);
    assert_int_equal(b->devs[d].alloc_sizes.total, a->devs[d].alloc_sizes.total);
  }
  ft_stats_free(&st);
  ft_stats_free(&re);
  ft_model_free(&m);
}

/* One parse fills the model and the summary; a replay into a fresh summary gives the same rows. */
static void test_read_and_replay(void **state) {
  (void)state;
  ft_model m;
  ft_stats st, re;
  char err[256];
  assert_int_equal(ft_stats_init(&st), FT_OK);
  assert_int_equal(ft_model_read_mem(&m, TRACE, strlen(TRACE), NULL, &st, err, sizeof err), FT_OK);
  ft_stats_finish(&st);
  assert_int_equal(m.n, 3);
  assert_int_equal(m.rank, 3);
  assert_string_equal(m.device_name, "NVIDIA H200");
  assert_true(m.peak_flops == 989.4e12);
  size_t mm = slice_of(&m, "aten::mm"), gemm = slice_of(&m, "gemm");
  assert_int_equal(m.ts[mm], 1100);
  assert_int_equal(m.op[gemm], mm);
  struct ft_model_kernel_args a;
  assert_true(ft_model_kernel_args(&m, mm, &a));
  assert_string_equal(a.dims, "[[2, 3], []]");
  assert_true(ft_model_kernel_args(&m, gemm, &a));
  assert_int_equal(a.grid[2], 3);
  assert_int_equal(a.block[0], 4);
  assert_int_equal(st.events, 5);
  assert_int_equal(st.skipped.unknown_cat, 1);
  assert_int_equal(ft_stats_init(&re), FT_OK);
  assert_int_equal(ft_model_replay(&m, &re), FT_OK);
  ft_stats_finish(&re);
  assert_int_equal(re.events, 5);
  assert_int_equal(re.skipped.unknown_cat, 1);
  assert_int_equal(re.meta.rank, 3);
  assert_int_equal(re.first_ns, st.first_ns);
  assert_int_equal(re.last_ns, st.last_ns);
  for (int sec = 0; sec < FT_STAT_N_SECTIONS; sec++) {
    assert_int_equal(re.rows[sec].len, st.rows[sec].len);
    for (size_t i = 0; i < st.rows[sec].len; i++) {
      const ft_stat_row *x = ft__vec_at(&st.rows[sec], i), *y = ft__vec_at(&re.rows[sec], i);
      assert_string_equal(ft__intern_str(&st.names, x->name_id), ft__intern_str(&re.names, y->name_id));
      assert_int_equal(x->t.total, y->t.total);
      assert_int_equal(x->t.n, y->t.n);
      assert_int_equal(x->self_ns, y->self_ns);
      assert_int_equal(x->self_cpu_ns, y->self_cpu_ns);
    }
  }
  assert_int_equal(((ft_stat_row *)ft__vec_at(&re.rows[FT_STAT_OPS], 0))->self_ns, 300); /* gemm, by External id */
  ft_stats_free(&st);
  ft_stats_free(&re);
  ft_model_free(&m);
  /* the model alone (st NULL): the same slices */
  assert_int_equal(ft_model_read_mem(&m, TRACE, strlen(TRACE), NULL, NULL, err, sizeof err), FT_OK);
  assert_int_equal(m.n, 3);
  ft_model_free(&m);
  assert_int_not_equal(ft_model_read_mem(&m, "{\"traceEvents\": [", 17, NULL, NULL, err, sizeof err), FT_OK);
  assert_non_null(strstr(err, "byte"));
  ft_model_free(&m); /* after a failed read: freed already, harmless again */
}

/* A committed torch trace (H200, batch 8): its device, three profiler steps, every kernel
 * linked to its launch and attributed to an op, in a step. */
static void test_committed_trace(void **state) {
  (void)state;
  const char *dir = getenv("FT_TEST_DATA");
  char path[4096], err[256];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", "batch8_torch_cuda.json.gz");
  ft_model m;
  assert_int_equal(ft_model_read(&m, path, NULL, NULL, err, sizeof err), FT_OK);
  assert_string_equal(m.device_name, "NVIDIA H200");
  assert_true(m.peak_flops == 989.4e12);
  assert_int_equal(m.rank, -1);
  assert_int_equal(m.n_steps, 3);
  for (size_t k = 0; k < 3; k++) {
    assert_int_equal(m.steps[k].number, (int64_t)k + 2);
    assert_int_equal(m.kind[m.steps[k].slice], FT_MK_RANGE);
  }
  assert_int_equal(m.steps[0].start, 5543922162058073);
  assert_int_equal(m.steps[0].end, 5543922162058073 + 2791486);
  size_t kernels = 0;
  for (size_t i = 0; i < m.n; i++) {
    if (i) assert_true(m.ts[i - 1] <= m.ts[i]);
    if (m.kind[i] != FT_MK_KERNEL) continue;
    kernels++;
    assert_int_not_equal(m.link[i], FT_MODEL_NONE);
    assert_int_equal(m.link[m.link[i]], i);
    assert_int_equal(ft_model_corr(&m, i), ft_model_corr(&m, m.link[i]));
    assert_int_not_equal(m.op[i], FT_MODEL_NONE);
    assert_int_equal(m.op[i], m.op[m.link[i]]);
    assert_int_equal(m.tracks[m.track[i]].kind, FT_TRACK_STREAM);
    assert_int_equal(m.tracks[m.track[m.link[i]]].kind, FT_TRACK_THREAD);
  }
  assert_int_equal(kernels, 81);
  ft_model_free(&m);
}

/* 100 000 slices of a few names: at most 64 B a slice, all held. */
/* One parse for both (stats -r advice): the model has the python_function slices whether
 * or not st wants modules, and st counts the cut names a read of its own counts. */
static void test_read_with_stats_pyfunc(void **state) {
  (void)state;
  size_t long_name = FT_STATS_KEEP + 10;
  char *t = malloc(long_name + 512);
  assert_non_null(t);
  int k = sprintf(t,
                  "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1,"
                  " \"tid\": 1, \"ts\": 1, \"dur\": 5}, {\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"");
  memset(t + k, 'p', long_name);
  sprintf(t + k + long_name, "\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 9}]}");
  size_t len = strlen(t);
  char err[256];
  ft_model alone;
  assert_int_equal(ft_model_read_mem(&alone, t, len, NULL, NULL, err, sizeof err), FT_OK);
  assert_int_equal(alone.n, 2);
  for (int modules = 0; modules < 2; modules++) {
    ft_stats own, st;
    assert_int_equal(ft_stats_init(&own), FT_OK);
    assert_int_equal(ft_stats_init(&st), FT_OK);
    own.want_ops = st.want_ops = true;
    own.want_modules = st.want_modules = modules;
    assert_int_equal(ft_stats_read_mem(&own, t, len, err, sizeof err), FT_OK);
    ft_model m;
    assert_int_equal(ft_model_read_mem(&m, t, len, NULL, &st, err, sizeof err), FT_OK);
    assert_int_equal(m.n, 2); /* the python_function slice either way */
    assert_int_equal(m.kind[0], FT_MK_PYFUNC);
    assert_int_equal(st.cut_strings, modules ? 1 : 0);
    assert_int_equal(own.cut_strings, st.cut_strings);
    assert_false(st.read_pyfunc); /* restored */
    ft_stats re;                  /* a replay of that model counts as the read did */
    assert_int_equal(ft_stats_init(&re), FT_OK);
    re.want_ops = true;
    re.want_modules = modules;
    assert_int_equal(ft_model_replay(&m, &re), FT_OK);
    assert_int_equal(re.cut_strings, own.cut_strings);
    ft_stats_free(&re);
    ft_stats_free(&own);
    ft_stats_free(&st);
    ft_model_free(&m);
  }
  ft_model_free(&alone);
  free(t);
}

static void test_bytes_per_slice(void **state) {
  (void)state;
  ft_model m;
  ft_model_init(&m, NULL);
  for (int64_t i = 0; i < 50000; i++) {
    add(&m, (spec){FT__SEC_RUNTIME, "cudaLaunchKernel", 10 * i, 2, 1, 1, i, i, 0});
    add(&m, (spec){FT__SEC_KERNEL, "k", 10 * i + 3, 5, 0, 7, i, i, 0});
  }
  assert_int_equal(ft_model_finish(&m), FT_OK);
  assert_int_equal(m.n, 100000);
  assert_int_equal(m.link[0], 1);
  assert_int_equal(m.link[99999], 99998);
  size_t b = ft_model_bytes(&m);
  assert_true(b >= 61 * m.n);
  assert_true(b <= 64 * m.n);
  ft_model_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sorted_interned_tracks),
      cmocka_unit_test(test_links_ops_steps),
      cmocka_unit_test(test_one_launch_per_id),
      cmocka_unit_test(test_ties_and_wide_ids),
      cmocka_unit_test(test_named_steps),
      cmocka_unit_test(test_read_and_replay),
      cmocka_unit_test(test_memory_rows),
      cmocka_unit_test(test_read_with_stats_pyfunc),
      cmocka_unit_test(test_bytes_per_slice),
      cmocka_unit_test(test_committed_trace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
