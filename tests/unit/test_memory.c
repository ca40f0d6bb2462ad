/* Unit tests: device memory operations stored, replayed into totals, attributed and written (issue 51). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "internal.h"
#include "test_support.h"

enum { LO = 1000000, HI = 2000000 };

/* Allocation failures (linked with --wrap, as test_alloc_failures): the k-th
 * malloc/calloc/realloc of this executable's objects fails while fail_at >= 0. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
static long fail_at = -1, calls;
static int fails(void) { return fail_at >= 0 && calls++ == fail_at; }
void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n) { return fails() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size) { return fails() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n) { return fails() ? NULL : __real_realloc(p, n); }

static ft_session *stopped(void) {
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft__session_set_window(s, LO, HI);
  return s;
}

static ft_memory_kind next_kind = FT_MEMKIND_DEVICE; /* of the next mem() */

static void mem(ft_session *s, uint32_t device, uint64_t t, ft_memory_op op, uint64_t addr, uint64_t bytes,
                uint64_t pool, uint32_t corr, uint32_t tid) {
  ft_memory_info m = {.op = op, .memory_kind = next_kind, .address = addr, .bytes = bytes, .pool = pool};
  next_kind = FT_MEMKIND_DEVICE;
  ft_device_event ev = {.kind = FT_EVENT_MEMORY,
                        .start_ns = t,
                        .end_ns = t,
                        .correlation_id = corr,
                        .device = device,
                        .stream = corr ? 7 : UINT32_MAX,
                        .thread_id = tid,
                        .name = op == FT_MEMORY_ALLOC ? "cudaMalloc" : "cudaFree",
                        .memory = &m};
  assert_int_equal(ft__session_inject(s, &ev), FT_OK);
}

static void runtime_call(ft_session *s, uint32_t corr, uint32_t tid, uint64_t start, uint64_t end) {
  ft_device_event ev = {.kind = FT_EVENT_RUNTIME,
                        .start_ns = start,
                        .end_ns = end,
                        .correlation_id = corr,
                        .thread_id = tid,
                        .name = "cudaMalloc"};
  assert_int_equal(ft__session_inject(s, &ev), FT_OK);
}

static long long int_of(yajl_val o, const char *key) {
  yajl_val v = ft_test_get(o, key);
  if (!v || !YAJL_IS_INTEGER(v)) fail_msg("no integer '%s'", key);
  return YAJL_GET_INTEGER(v);
}

static long long ns_of(yajl_val o) { return (long long)(YAJL_GET_DOUBLE(ft_test_get(o, "ts")) * 1000.0 + 0.5); }

/* The n-th event of phase ph and name (in file order); NULL when none. */
static yajl_val nth(yajl_val doc, const char *ph, const char *name, size_t n) {
  yajl_val ev = ft_test_get(doc, "traceEvents");
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    if (!strcmp(ft_test_str(e, "ph"), ph) && !strcmp(ft_test_str(e, "name"), name) && !n--) return e;
  }
  return NULL;
}

static size_t count(yajl_val doc, const char *ph, const char *name) {
  size_t n = 0;
  while (nth(doc, ph, name, n)) n++;
  return n;
}

/* The [memory] instant of device dev at t ns; fails when not exactly one. */
static yajl_val instant_at(yajl_val doc, long long dev, long long t) {
  yajl_val found = NULL;
  for (size_t i = 0; nth(doc, "i", "[memory]", i); i++) {
    yajl_val e = nth(doc, "i", "[memory]", i);
    if (ns_of(e) != t || int_of(ft_test_get(e, "args"), "Device Id") != dev) continue;
    if (found) fail_msg("two instants at %lld on device %lld", t, dev);
    found = e;
  }
  if (!found) fail_msg("no instant at %lld on device %lld", t, dev);
  return found;
}

static yajl_val counter_at(yajl_val doc, long long dev, long long t) {
  for (size_t i = 0; nth(doc, "C", "Memory", i); i++) {
    yajl_val e = nth(doc, "C", "Memory", i);
    if (ns_of(e) == t && int_of(e, "pid") == dev) return e;
  }
  fail_msg("no counter sample at %lld on device %lld", t, dev);
  return NULL;
}

/* A synthetic sequence: buffers out of order, frees of unknown addresses, a pool
 * that reports reservations and one that does not, an allocation before the window
 * (cut) and its free inside it, two devices with one address, a free named on
 * another device than its allocation's. */
static void test_totals_exact(void **state) {
  (void)state;
  ft_session *s = stopped();
  static const struct {
    uint32_t dev;
    uint64_t t;
    ft_memory_op op;
    uint64_t addr, bytes, pool;
  } ops[] = {
      {0, 1700, FT_MEMORY_ALLOC, 0x20000, 64, 0x30000},  /* in a pool without reservations */
      {0, 1800, FT_MEMORY_FREE, 0x10040, 0, 0},          /* bytes 0: its allocation's 200 */
      {0, 1900, FT_MEMORY_UNRESERVE, 0x10000, 400, 0},   /* trimmed */
      {0, 1950, FT_MEMORY_UNRESERVE, 0x10000, 700, 0},   /* destroyed: more than its 600 left */
      {0, 1100, FT_MEMORY_ALLOC, 0x1000, 100, 0},        /* the first, arriving late */
      {0, 1200, FT_MEMORY_ALLOC, 0x2000, 50, 0},         /* */
      {1, 1150, FT_MEMORY_ALLOC, 0x1000, 7, 0},          /* the same address on device 1 */
      {1, 1160, FT_MEMORY_ALLOC, 0x7000, 11, 0},         /* */
      {0, 1170, FT_MEMORY_FREE, 0x7000, 0, 0},           /* freed from device 0's context: device 1's */
      {0, 1250, FT_MEMORY_FREE, 0x5000, 999, 0},         /* allocated before the window: unknown */
      {0, 500, FT_MEMORY_ALLOC, 0x5000, 999, 0},         /* at 500 ns: before the window */
      {0, 1300, FT_MEMORY_FREE, 0x1000, 0, 0},           /* */
      {0, 1400, FT_MEMORY_FREE, 0x9999, 30, 0},          /* never allocated */
      {0, 1500, FT_MEMORY_RESERVE, 0x10000, 1000, 0},    /* a pool grows */
      {0, 1600, FT_MEMORY_ALLOC, 0x10040, 200, 0x10000}, /* inside it: nothing more reserved */
  };
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    mem(s, ops[i].dev, ops[i].t == 500 ? 500 : LO + ops[i].t, ops[i].op, ops[i].addr, ops[i].bytes, ops[i].pool, 0, 0);
  yajl_val doc = ft_test_render(s);
  static const struct {
    uint32_t dev;
    uint64_t t;
    long long bytes, allocated, reserved, pool, pool_bytes;
    const char *op;
  } want[] = {
      {0, 1100, 100, 100, 100, 0, 0, "alloc"},
      {0, 1200, 50, 150, 150, 0, 0, "alloc"},
      {0, 1300, -100, 50, 50, 0, 0, "free"},
      {0, 1500, 0, 50, 1050, 0x10000, 1000, "reserve"},
      {0, 1600, 200, 250, 1050, 0x10000, 0, "alloc"},
      {0, 1700, 64, 314, 1114, 0x30000, 0, "alloc"},
      {0, 1800, -200, 114, 1114, 0x10000, 0, "free"},
      {0, 1900, 0, 114, 714, 0x10000, -400, "unreserve"},
      {0, 1950, 0, 114, 114, 0x10000, -600, "unreserve"},
      {1, 1150, 7, 7, 7, 0, 0, "alloc"},
      {1, 1160, 11, 18, 18, 0, 0, "alloc"},
      {1, 1170, -11, 7, 7, 0, 0, "free"},
  };
  size_t n = sizeof want / sizeof *want;
  assert_int_equal(count(doc, "i", "[memory]"), n); /* the skipped frees are not written */
  assert_int_equal(count(doc, "C", "Memory"), n);
  for (size_t i = 0; i < n; i++) {
    long long t = LO + (long long)want[i].t;
    yajl_val e = instant_at(doc, want[i].dev, t), a = ft_test_get(e, "args");
    assert_string_equal(ft_test_str(e, "cat"), "cpu_instant_event");
    assert_string_equal(ft_test_str(e, "s"), "t");
    /* kineto's DeviceType: CUDA 1 where the tracer's calls are cuda_runtime, else PrivateUse1 20 */
    assert_int_equal(int_of(a, "Device Type"), strcmp(s->tracer->ops->runtime_category, "cuda_runtime") ? 20 : 1);
    assert_int_equal(int_of(a, "Bytes"), want[i].bytes);
    assert_int_equal(int_of(a, "Total Allocated"), want[i].allocated);
    assert_int_equal(int_of(a, "Total Reserved"), want[i].reserved);
    assert_string_equal(ft_test_str(a, "Op"), want[i].op);
    assert_string_equal(ft_test_str(a, "Kind"), "device");
    if (want[i].pool) assert_int_equal(int_of(a, "Pool"), want[i].pool);
    else assert_null(ft_test_get(a, "Pool"));
    if (want[i].pool_bytes) assert_int_equal(int_of(a, "Pool Bytes"), want[i].pool_bytes);
    assert_null(ft_test_get(a, "stream")); /* the calls named none */
    assert_null(ft_test_get(a, "External id"));
    yajl_val c = ft_test_get(counter_at(doc, want[i].dev, t), "args");
    assert_int_equal(int_of(c, "Allocated"), want[i].allocated);
    assert_int_equal(int_of(c, "Reserved"), want[i].reserved);
  }
  yajl_val m = ft_test_get(ft_test_get(doc, "flagtrace"), "memory");
  assert_non_null(m);
  assert_int_equal(int_of(m, "operations"), 14);
  assert_int_equal(int_of(m, "written"), 12);
  assert_int_equal(int_of(m, "moved_frees"), 1);
  assert_int_equal(int_of(m, "unreserve_clamped"), 1);
  assert_int_equal(int_of(m, "skipped_frees"), 2);
  assert_int_equal(int_of(m, "skipped_allocations"), 0);
  assert_int_equal(int_of(m, "live_limit"), FT__MEM_LIVE_MAX);
  yajl_val devs = ft_test_get(m, "devices");
  assert_int_equal(devs->u.array.len, 2);
  yajl_val d0 = devs->u.array.values[0], d1 = devs->u.array.values[1];
  assert_int_equal(int_of(d0, "device"), 0);
  assert_int_equal(int_of(d0, "operations"), 9);
  assert_int_equal(int_of(d0, "peak_allocated"), 314);
  assert_int_equal(int_of(d0, "peak_allocated_ns"), LO + 1700);
  assert_int_equal(int_of(d0, "peak_reserved"), 1114);
  assert_int_equal(int_of(d0, "peak_reserved_ns"), LO + 1700);
  assert_int_equal(int_of(d0, "allocated_at_end"), 114);
  assert_int_equal(int_of(d0, "reserved_at_end"), 114);
  assert_int_equal(int_of(d1, "device"), 1);
  assert_int_equal(int_of(d1, "operations"), 3);
  assert_int_equal(int_of(d1, "peak_allocated"), 18);
  assert_int_equal(int_of(d1, "allocated_at_end"), 7);
  assert_int_equal(int_of(ft_test_get(doc, "flagtrace"), "window_discarded"), 1);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* The calling thread and the op: through the API call with the same correlation
 * id (as copies), else by the calling thread and time (the innermost CPU range). */
static void test_attribution(void **state) {
  (void)state;
  ft_session *s = stopped();
  runtime_call(s, 30, 77, LO + 100, LO + 200);
  mem(s, 0, LO + 150, FT_MEMORY_ALLOC, 0xa000, 16, 0, 30, 0);
  uint32_t name;
  assert_int_equal(ft__intern(&s->store.names, "op", 2, &name), FT_OK);
  assert_int_equal(ft__store_add_range(&s->store, name, LO + 300, LO + 900, 41, 88), FT_OK);
  assert_int_equal(ft__store_add_range(&s->store, name, LO + 400, LO + 600, 42, 88), FT_OK); /* nested */
  assert_int_equal(ft__store_add_range(&s->store, name, LO + 350, LO + 950, 43, 89), FT_OK); /* another thread */
  mem(s, 0, LO + 500, FT_MEMORY_ALLOC, 0xb000, 8, 0, 0, 88);                                 /* in 42 */
  mem(s, 0, LO + 700, FT_MEMORY_FREE, 0xb000, 0, 0, 0, 88); /* in 41, after 42 closed */
  mem(s, 0, LO + 980, FT_MEMORY_FREE, 0xa000, 0, 0, 0, 88); /* in nothing */
  assert_int_equal(ft__session_inject_external(s, 30, 9), FT_OK);
  /* on device 1, operations stamped after their call's end (CUPTI's exit callback runs
   * after the end is taken: 0.2-6 us on an H100) are written at the call's end, inside it;
   * two fitted to one end keep their order, 1 ns apart (a pool's growth before its
   * allocation), so that a reader ordering by time alone draws the totals as counted */
  runtime_call(s, 50, 66, LO + 1000, LO + 1100);
  runtime_call(s, 51, 66, LO + 1200, LO + 1300);
  mem(s, 1, LO + 1106, FT_MEMORY_ALLOC, 0xa000, 16, 0x9000, 50, 0);   /* the allocation, 6 ns late */
  mem(s, 1, LO + 1105, FT_MEMORY_RESERVE, 0x9000, 64, 0x9000, 50, 0); /* its pool's growth, found later */
  mem(s, 1, LO + 1310, FT_MEMORY_FREE, 0xa000, 0, 0, 51, 0);          /* the free, 10 ns late */
  mem(s, 1, LO + 1250, FT_MEMORY_ALLOC, 0xc000, 8, 0, 0, 66);         /* no call: as stamped */
  assert_int_equal(ft__session_attribute(s, false), FT_OK);
  yajl_val doc = ft_test_render(s);
  static const struct {
    long long t;
    const char *op;
    long long allocated, reserved;
  } fit[] = {{1099, "reserve", 0, 64}, {1100, "alloc", 16, 64}, {1250, "alloc", 24, 72}, {1300, "free", 8, 72}};
  size_t seen = 0, n_instants = count(doc, "i", "[memory]");
  for (size_t i = 0; i < n_instants; i++) {
    yajl_val e = nth(doc, "i", "[memory]", i), a = ft_test_get(e, "args");
    for (size_t w = 0; w < 4; w++) {
      if (int_of(a, "Device Id") != 1 || ns_of(e) != LO + fit[w].t || strcmp(ft_test_str(a, "Op"), fit[w].op)) continue;
      assert_int_equal(int_of(a, "Total Allocated"), fit[w].allocated);
      assert_int_equal(int_of(a, "Total Reserved"), fit[w].reserved);
      seen |= 1u << w;
    }
  }
  assert_int_equal(seen, 15);
  yajl_val d1 = ft_test_get(ft_test_get(ft_test_get(doc, "flagtrace"), "memory"), "devices")->u.array.values[1];
  assert_int_equal(int_of(d1, "device"), 1);
  assert_int_equal(int_of(d1, "peak_reserved_ns"), LO + 1250);
  assert_int_equal(int_of(d1, "peak_allocated_ns"), LO + 1250);
  static const struct {
    long long t, tid, ext, corr;
  } want[] = {{150, 77, 9, 30}, {500, 88, 42, 0}, {700, 88, 41, 0}, {980, 88, -1, 0}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    yajl_val e = instant_at(doc, 0, LO + want[i].t), a = ft_test_get(e, "args");
    assert_int_equal(int_of(e, "pid"), getpid());
    assert_int_equal(int_of(e, "tid"), want[i].tid);
    assert_int_equal(int_of(a, "correlation"), want[i].corr);
    if (want[i].ext < 0) assert_null(ft_test_get(a, "External id"));
    else assert_int_equal(int_of(a, "External id"), want[i].ext);
  }
  assert_int_equal(int_of(ft_test_get(instant_at(doc, 0, LO + 150), "args"), "stream"), 7);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* A billion distinct addresses would make the live table unbounded: past the limit
 * (FT__MEM_LIVE_MAX, here a test's) live allocations the rest are skipped, counted,
 * and so are their frees. */
static void test_live_limit(void **state) {
  (void)state;
  ft_session *s = stopped();
  enum { LIMIT = 1000 }; /* the same code as at FT__MEM_LIVE_MAX, in a test valgrind can run */
  ft__mem_set_live_max_for_tests(LIMIT);
  size_t n = LIMIT + 3;
  for (size_t i = 0; i < n; i++) mem(s, 0, LO + 1 + i / 4, FT_MEMORY_ALLOC, 0x100000 + 16 * i, 2, 0, 0, 0);
  for (size_t i = n - 4; i < n; i++) mem(s, 0, HI - 10, FT_MEMORY_FREE, 0x100000 + 16 * i, 0, 0, 0, 0);
  ft__map tids;
  assert_int_equal(ft__map_init(&tids, 4), FT_OK);
  ft__mem_totals t;
  assert_int_equal(ft__mem_totals_build(s, LO, HI, &tids, &t), FT_OK);
  assert_int_equal(t.operations, n + 4);
  assert_int_equal(t.skipped_allocs, 3);
  assert_int_equal(t.skipped_frees, 3);
  assert_int_equal(t.written, LIMIT + 1); /* the allocations kept and the one tracked free */
  assert_int_equal(t.n_devices, 1);
  assert_int_equal(t.devices[0].peak_allocated, 2ull * LIMIT);
  assert_int_equal(t.devices[0].allocated, 2ull * LIMIT - 2);
  ft__mem_totals_free(&t);
  ft__map_free(&tids);
  yajl_val doc = ft_test_render(s); /* the trace says the limit it was written with */
  assert_int_equal(int_of(ft_test_get(ft_test_get(doc, "flagtrace"), "memory"), "live_limit"), LIMIT);
  assert_int_equal(int_of(ft_test_get(ft_test_get(doc, "flagtrace"), "memory"), "skipped_allocations"), 3);
  yajl_tree_free(doc);
  ft__mem_set_live_max_for_tests(0);
  ft_session_destroy(s);
}

static int visit_kind(void *ctx, const ft_export_event *x) {
  int *kinds = ctx;
  kinds[x->event.kind]++;
  return 0;
}

/* The kineto adaptor's visit hands on no memory operation (kineto has no activity
 * type for one); an attached session's copy keeps them. */
static void test_adaptor_visit_skips_memory(void **state) {
  (void)state;
  ft_session *s = stopped();
  runtime_call(s, 5, 1, LO + 10, LO + 20);
  mem(s, 0, LO + 15, FT_MEMORY_ALLOC, 0x10, 4, 0, 5, 0);
  int kinds[16] = {0};
  uint64_t outside = 0;
  assert_int_equal(ft_session_foreach_event(s, LO, HI, visit_kind, kinds, &outside), FT_OK);
  assert_int_equal(kinds[FT_EVENT_RUNTIME], 1);
  assert_int_equal(kinds[FT_EVENT_MEMORY], 0);
  /* the store's view of it is the event a tracer handed over */
  for (size_t i = 0; i < s->store.events.len; i++) {
    const ft__event *e = ft__vec_at(&s->store.events, i);
    if (e->kind != FT__EV_MEMORY) continue;
    ft_kv *kv = NULL;
    size_t cap = 0;
    ft_device_event v;
    assert_int_equal(ft__store_view(&s->store, e, &kv, &cap, &v), FT_OK);
    assert_non_null(v.memory);
    assert_int_equal(v.memory->address, 0x10);
    assert_int_equal(v.memory->bytes, 4);
    assert_int_equal(v.stream, 7);
    assert_int_equal(v.correlation_id, 5);
    free(kv);
  }
  assert_int_equal(sizeof(ft__event), 48); /* P6 */
  ft_session_destroy(s);
}

/* FLAGOS_TRACE_MEMORY=0 takes memory out of a session, whatever it asked; then the
 * trace has no memory object and no operation. Unset: on by default. */
static void test_env_off(void **state) {
  (void)state;
  setenv("FLAGOS_TRACE_MEMORY", "0", 1);
  ft_session *s = stopped();
  unsetenv("FLAGOS_TRACE_MEMORY");
  assert_false(s->activities & FT_ACTIVITY_MEMORY);
  mem(s, 0, LO + 15, FT_MEMORY_ALLOC, 0x10, 4, 0, 0, 0);
  assert_int_equal(s->store.events.len, 0);
  yajl_val doc = ft_test_render(s);
  assert_null(ft_test_get(ft_test_get(doc, "flagtrace"), "memory"));
  yajl_tree_free(doc);
  ft_session_destroy(s);
  s = stopped();
  assert_true(s->activities & FT_ACTIVITY_MEMORY);
  doc = ft_test_render(s);
  yajl_val m = ft_test_get(ft_test_get(doc, "flagtrace"), "memory");
  /* asked, but no device activity collected here (the tracer did not start): no object;
   * with a tracer, tests/e2e/test_record.py sees it with nothing counted */
  assert_int_equal(m != NULL, ft_session_device_status(s, NULL) == FT_OK);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* Invalid memory events are refused by the store: no numbers, an unknown op. */
static void test_invalid_refused(void **state) {
  (void)state;
  ft_session *s = stopped();
  ft_device_event ev = {.kind = FT_EVENT_MEMORY, .name = "x"};
  assert_int_equal(ft__session_inject(s, &ev), FT_EINVAL);
  ft_memory_info m = {.op = (ft_memory_op)9};
  ev.memory = &m;
  assert_int_equal(ft__session_inject(s, &ev), FT_EINVAL);
  assert_int_equal(s->store.events.len, 0);
  ft_session_destroy(s);
}

/* Host memory the vendor reports (pinned, pageable) has totals of its own, written as
 * torch writes CPU memory, so that a device's totals are its allocator's. */
static void test_host_memory_apart(void **state) {
  (void)state;
  ft_session *s = stopped();
  mem(s, 0, LO + 10, FT_MEMORY_ALLOC, 0xd000, 100, 0, 0, 0);
  next_kind = FT_MEMKIND_PINNED;
  mem(s, 0, LO + 20, FT_MEMORY_ALLOC, 0x7f00, 4096, 0, 0, 0);
  next_kind = FT_MEMKIND_MANAGED; /* managed memory is the device's */
  mem(s, 0, LO + 30, FT_MEMORY_ALLOC, 0xe000, 8, 0, 0, 0);
  next_kind = FT_MEMKIND_PAGEABLE;
  mem(s, 0, LO + 40, FT_MEMORY_FREE, 0x7f00, 0, 0, 0, 0);
  yajl_val doc = ft_test_render(s);
  yajl_val a = ft_test_get(instant_at(doc, -1, LO + 20), "args");
  assert_int_equal(int_of(a, "Device Type"), 0);
  assert_int_equal(int_of(a, "Total Allocated"), 4096);
  assert_string_equal(ft_test_str(a, "Kind"), "pinned");
  assert_int_equal(int_of(ft_test_get(counter_at(doc, getpid(), LO + 20), "args"), "Allocated"), 4096);
  a = ft_test_get(instant_at(doc, -1, LO + 40), "args");
  assert_int_equal(int_of(a, "Bytes"), -4096);
  assert_int_equal(int_of(a, "Total Allocated"), 0);
  a = ft_test_get(instant_at(doc, 0, LO + 30), "args");
  assert_int_equal(int_of(a, "Total Allocated"), 108);
  assert_string_equal(ft_test_str(a, "Kind"), "managed");
  yajl_val devs = ft_test_get(ft_test_get(ft_test_get(doc, "flagtrace"), "memory"), "devices");
  assert_int_equal(devs->u.array.len, 2);
  assert_int_equal(int_of(devs->u.array.values[0], "device"), 0);
  assert_int_equal(int_of(devs->u.array.values[0], "peak_allocated"), 108);
  assert_int_equal(int_of(devs->u.array.values[1], "device"), -1);
  assert_int_equal(int_of(devs->u.array.values[1], "peak_allocated"), 4096);
  /* no device row for the host: the process and GPU 0 only */
  size_t gpu_rows = 0;
  for (size_t i = 0; nth(doc, "M", "process_name", i); i++)
    gpu_rows += !strncmp(ft_test_str(ft_test_get(nth(doc, "M", "process_name", i), "args"), "name"), "GPU", 3);
  assert_int_equal(gpu_rows, 1);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* A session for the failure runs: two devices, a pool, calls, a range to attribute by. */
static ft_session *failure_session(void) {
  ft_session *s = stopped();
  runtime_call(s, 3, 70, LO + 1, LO + 2);
  uint32_t name;
  assert_int_equal(ft__intern(&s->store.names, "op", 2, &name), FT_OK);
  assert_int_equal(ft__store_add_range(&s->store, name, LO + 1, LO + 900, 12, 71), FT_OK);
  for (uint32_t i = 0; i < 200; i++)
    mem(s, i % 2, LO + 5 + i, i % 4 < 2 ? FT_MEMORY_ALLOC : FT_MEMORY_FREE, 0x1000 + 0x100 * (i / 4), 64, 0,
        i % 3 ? 0 : 3, i % 3 ? 71 : 0);
  mem(s, 0, LO + 300, FT_MEMORY_RESERVE, 0x9000, 4096, 0, 0, 71);
  return s;
}

/* Out of memory while replaying the totals or attributing by thread is FT_ENOMEM
 * or the very same result, never a crash (ASan builds see leaks too). */
static void test_allocation_failures(void **state) {
  (void)state;
  ft_session *s = failure_session();
  ft__map tids;
  ft__mem_totals want, got;
  assert_int_equal(ft__map_init(&tids, 4), FT_OK);
  assert_int_equal(ft__mem_totals_build(s, LO, HI, &tids, &want), FT_OK);
  ft__map_free(&tids);
  long k = 0, failed = 0;
  for (;; k++) {
    assert_int_equal(ft__map_init(&tids, 4), FT_OK);
    fail_at = k, calls = 0;
    ft_status st = ft__mem_totals_build(s, LO, HI, &tids, &got);
    fail_at = -1;
    ft__map_free(&tids);
    if (st) {
      assert_int_equal(st, FT_ENOMEM);
      failed++;
    } else {
      assert_int_equal(got.written, want.written);
      assert_int_equal(got.n_devices, want.n_devices);
      assert_memory_equal(got.devices, want.devices, want.n_devices * sizeof *want.devices);
    }
    ft__mem_totals_free(&got);
    if (calls <= k) break; /* this run made fewer calls: every one has failed once */
  }
  assert_true(failed >= 5); /* refs, rows, devices, the threads' map, the live tables */
  ft__mem_totals_free(&want);
  ft_session_destroy(s);
  for (k = 0;; k++) {
    s = failure_session();
    fail_at = k, calls = 0;
    ft_status st = ft__attribute_by_thread(s);
    fail_at = -1;
    size_t attributed = 0;
    for (size_t i = 0; i < s->store.events.len; i++) {
      const ft__event *e = ft__vec_at(&s->store.events, i);
      attributed += ft__is_memory_kind(e->kind) && (e->flags & FT__F_HAS_EXTERNAL);
    }
    assert_int_equal(attributed, st ? 0 : 134); /* the memory events without a call id */
    ft_session_destroy(s);
    if (calls <= k) break;
  }
  assert_true(k >= 3);
}

static uint64_t tick(void) {
  static uint64_t last;
  uint64_t t;
  while ((t = ft__now_ns()) <= last) {
  }
  return last = t;
}

/* Hostile or lossy sequences: an allocation at a live address (its free dropped), an
 * implausible size, a trim below nothing reserved. */
static void test_replaced_implausible_clamped(void **state) {
  (void)state;
  ft_session *s = stopped();
  mem(s, 0, LO + 10, FT_MEMORY_ALLOC, 0xa0, 10, 0, 0, 0);
  mem(s, 0, LO + 20, FT_MEMORY_ALLOC, 0xa0, 20, 0, 0, 0);         /* the 10 taken as freed */
  mem(s, 0, LO + 30, FT_MEMORY_ALLOC, 0xb0, 1ull << 51, 0, 0, 0); /* 2 PiB: skipped */
  mem(s, 0, LO + 40, FT_MEMORY_UNRESERVE, 0xc000, 100, 0, 0, 0);  /* a pool never seen reserving */
  mem(s, 0, LO + 50, FT_MEMORY_FREE, 0xb0, 0, 0, 0, 0);           /* its allocation was skipped */
  yajl_val doc = ft_test_render(s);
  assert_int_equal(count(doc, "i", "[memory]"), 3);
  yajl_val a = ft_test_get(instant_at(doc, 0, LO + 20), "args");
  assert_int_equal(int_of(a, "Bytes"), 20);
  assert_int_equal(int_of(a, "Total Allocated"), 20);
  assert_int_equal(int_of(a, "Total Reserved"), 20);
  a = ft_test_get(instant_at(doc, 0, LO + 40), "args");
  assert_int_equal(int_of(a, "Bytes"), 0);
  assert_int_equal(int_of(a, "Pool Bytes"), 0); /* the pool reserved nothing we saw */
  assert_int_equal(int_of(a, "Pool"), 0xc000);
  assert_int_equal(int_of(a, "Total Allocated"), 20);
  assert_int_equal(int_of(a, "Total Reserved"), 20); /* the allocation's own, untouched */
  yajl_val m = ft_test_get(ft_test_get(doc, "flagtrace"), "memory");
  assert_int_equal(int_of(m, "operations"), 5);
  assert_int_equal(int_of(m, "written"), 3);
  assert_int_equal(int_of(m, "replaced_live"), 1);
  assert_int_equal(int_of(m, "skipped_implausible"), 1);
  assert_int_equal(int_of(m, "unreserve_clamped"), 1);
  assert_int_equal(int_of(m, "skipped_frees"), 1);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* A timed session's pushed ids (torch ops under flagtrace.torch, ft_correlation_push)
 * attribute an operation that names only its thread, as its calls would be. */
static void test_attribution_by_pushed_frames(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  uint32_t me = ft__gettid();
  assert_int_equal(ft__timed_push(s, 5), FT_OK);
  uint64_t a = tick();
  assert_int_equal(ft__timed_push(s, 6), FT_OK);
  uint64_t b = tick();
  assert_int_equal(ft__timed_pop(s), FT_OK);
  uint64_t c = tick();
  assert_int_equal(ft__timed_pop(s), FT_OK);
  uint64_t d = tick();
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft__session_set_window(s, a - 1000, d + 1000);
  mem(s, 0, a, FT_MEMORY_ALLOC, 0x10, 4, 0, 0, me);
  mem(s, 0, b, FT_MEMORY_ALLOC, 0x20, 4, 0, 0, me);
  mem(s, 0, c, FT_MEMORY_FREE, 0x20, 0, 0, 0, me);
  mem(s, 0, d, FT_MEMORY_FREE, 0x10, 0, 0, 0, me);
  mem(s, 1, b, FT_MEMORY_ALLOC, 0x30, 4, 0, 0, me + 1); /* another thread pushed nothing */
  assert_int_equal(ft__session_attribute(s, false), FT_OK);
  yajl_val doc = ft_test_render(s);
  uint64_t base = (a - 1000) - (a - 1000) % (86400ull * 1000000000ull);
  static const long long want[] = {5, 6, 5, -1};
  const uint64_t at[] = {a, b, c, d};
  for (int i = 0; i < 4; i++) {
    yajl_val x = ft_test_get(instant_at(doc, 0, (long long)(at[i] - base)), "args");
    if (want[i] < 0) assert_null(ft_test_get(x, "External id"));
    else assert_int_equal(int_of(x, "External id"), want[i]);
  }
  assert_null(ft_test_get(ft_test_get(instant_at(doc, 1, (long long)(b - base)), "args"), "External id"));
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* ft_session_set_collecting(s, 0): an operation in the stretch is left out, and so
 * is one whose call was made in it. */
static void test_collection_stopped(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  uint64_t t1 = tick();
  assert_int_equal(ft_session_set_collecting(s, 0), FT_OK);
  uint64_t t2 = tick();
  assert_int_equal(ft_session_set_collecting(s, 1), FT_OK);
  uint64_t t3 = tick();
  runtime_call(s, 9, 1, t2, t2);
  mem(s, 0, t1, FT_MEMORY_ALLOC, 0x10, 4, 0, 0, 0);
  mem(s, 0, t2, FT_MEMORY_ALLOC, 0x20, 4, 0, 0, 0);
  mem(s, 0, t3, FT_MEMORY_ALLOC, 0x30, 8, 0, 9, 0); /* made by the call in the stretch */
  mem(s, 0, t3 + 1, FT_MEMORY_ALLOC, 0x40, 16, 0, 0, 0);
  tick();
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(s->paused_left_out, 3);
  yajl_val doc = ft_test_render(s);
  assert_int_equal(count(doc, "i", "[memory]"), 2);
  assert_int_equal(int_of(ft_test_get(ft_test_get(doc, "flagtrace"), "memory"), "operations"), 2);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* The body rendered on worker threads holds the serial walk's bytes. */
static void test_parallel_render_same_bytes(void **state) {
  (void)state;
  ft_session *s = stopped();
  for (uint64_t i = 0; i < 3000; i++)
    mem(s, (uint32_t)(i % 3), LO + 1 + i, i % 2 ? FT_MEMORY_FREE : FT_MEMORY_ALLOC, 0x1000 + 64 * (i / 2),
        i % 2 ? 0 : 64, 0, (uint32_t)i + 1, 0);
  char *text[2];
  size_t len[2];
  for (int k = 0; k < 2; k++) {
    ft__render_split(k ? 3 : 0, k ? 100 : 0);
    ft__out *o;
    assert_int_equal(ft__out_open_mem(&o, false), FT_OK);
    assert_int_equal(ft__write_trace(s, o, NULL), FT_OK);
    const char *m = ft__out_mem(o, &len[k]);
    text[k] = malloc(len[k]);
    memcpy(text[k], m, len[k]);
    ft__out_abort(o);
  }
  ft__render_split(-1, 0);
  assert_int_equal(len[0], len[1]);
  assert_memory_equal(text[0], text[1], len[0]);
  free(text[0]);
  free(text[1]);
  ft_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_totals_exact),
      cmocka_unit_test(test_attribution),
      cmocka_unit_test(test_live_limit),
      cmocka_unit_test(test_adaptor_visit_skips_memory),
      cmocka_unit_test(test_env_off),
      cmocka_unit_test(test_invalid_refused),
      cmocka_unit_test(test_replaced_implausible_clamped),
      cmocka_unit_test(test_attribution_by_pushed_frames),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_host_memory_apart),
      cmocka_unit_test(test_collection_stopped),
      cmocka_unit_test(test_parallel_render_same_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
