/* Device memory through the CUPTI tracer at the sink (issue 51), shared by the CUPTI
 * and PPU fake tests: a scripted sequence of CUDA allocation calls, the records the
 * fake hands back in CUDA 13's layouts, and the exact ft_memory_info expected of each.
 * Include after cmocka.h and fake_cupti.h; the includer defines `launch`. */
#ifndef FT_FAKE_MEMORY_H
#define FT_FAKE_MEMORY_H

#include <cupti_activity.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fake_memory_script.h"
#include "flagtrace/device_tracer.h"

enum { MEM_MAX_SEEN = 64 };

/* What the sink was handed, copied (its pointers live for the call only). */
typedef struct mem_seen {
  ft_device_event ev[MEM_MAX_SEEN];
  ft_memory_info mem[MEM_MAX_SEEN];
  char name[MEM_MAX_SEEN][64];
  size_t n;
} mem_seen;

static ft_status mem_sink_event(void *ctx, const ft_device_event *ev) {
  mem_seen *s = ctx;
  if (s->n == MEM_MAX_SEEN) return FT_OK;
  s->ev[s->n] = *ev;
  snprintf(s->name[s->n], sizeof s->name[0], "%s", ev->name);
  if (ev->kind == FT_EVENT_MEMORY) assert_non_null(ev->memory);
  else assert_null(ev->memory);
  if (ev->memory) s->mem[s->n] = *ev->memory;
  s->n++;
  return FT_OK;
}

static ft_status mem_sink_external(void *ctx, uint32_t corr, uint64_t ext) {
  (void)ctx, (void)corr, (void)ext;
  return FT_OK;
}

/* The runtime call of correlation corr among what the sink saw, or NULL. */
static const char *mem_call_of(const mem_seen *s, uint32_t corr, uint64_t *start, uint64_t *end) {
  for (size_t i = 0; i < s->n; i++)
    if (s->ev[i].kind == FT_EVENT_RUNTIME && s->ev[i].correlation_id == corr) {
      *start = s->ev[i].start_ns, *end = s->ev[i].end_ns;
      return s->name[i];
    }
  return NULL;
}

/* The script: what the program calls, each call with its memory record. */
static void mem_run_script(void) { fake_memory_script(launch); }

/* What the sink must get, in order: the call that made it, the event's stream and device, the numbers. */
static const struct mem_want {
  const char *call;
  uint32_t stream, device;
  ft_memory_info m;
} mem_want[] = {
    {"cudaMalloc", UINT32_MAX, 0, {FT_MEMORY_ALLOC, FT_MEMKIND_DEVICE, MEM_DEV_A, MIB, 0}},
    {"cudaMemPoolCreate", UINT32_MAX, 0, {FT_MEMORY_RESERVE, FT_MEMKIND_DEVICE, MEM_POOL, 0, MEM_POOL}},
    {"cudaMallocAsync", 7, 0, {FT_MEMORY_RESERVE, FT_MEMKIND_DEVICE, MEM_POOL, 32 * MIB, MEM_POOL}},
    {"cudaMallocAsync", 7, 0, {FT_MEMORY_ALLOC, FT_MEMKIND_DEVICE, MEM_POOL, 4 * MIB, MEM_POOL}},
    {"cudaMallocAsync", 7, 0, {FT_MEMORY_ALLOC, FT_MEMKIND_DEVICE, MEM_POOL_B, 8 * MIB, MEM_POOL}},
    {"cudaFreeAsync", 7, 0, {FT_MEMORY_FREE, FT_MEMKIND_DEVICE, MEM_POOL, 4 * MIB, MEM_POOL}},
    {"cudaFreeAsync", 7, 0, {FT_MEMORY_FREE, FT_MEMKIND_DEVICE, MEM_POOL_B, 8 * MIB, MEM_POOL}},
    {"cudaMemPoolTrimTo", UINT32_MAX, 0, {FT_MEMORY_UNRESERVE, FT_MEMKIND_DEVICE, MEM_POOL, 32 * MIB, MEM_POOL}},
    {"cudaFree", UINT32_MAX, 0, {FT_MEMORY_FREE, FT_MEMKIND_DEVICE, MEM_DEV_A, MIB, 0}},
    {"cudaMemPoolDestroy", UINT32_MAX, 0, {FT_MEMORY_UNRESERVE, FT_MEMKIND_DEVICE, MEM_POOL, 0, MEM_POOL}},
    {"cudaHostAlloc", UINT32_MAX, 1, {FT_MEMORY_ALLOC, FT_MEMKIND_PINNED, MEM_HOST, 65536, 0}},
};
enum { MEM_WANT = sizeof mem_want / sizeof mem_want[0] };

/* How the tracer takes memory: from CUPTI's callbacks at the calls (the default),
 * or from MEMORY2/MEMORY_POOL records (FLAGTRACE_CUPTI_MEMORY=records, or when
 * the callback subscriber is someone else's). */
enum { MEM_CALLBACKS, MEM_RECORDS };
static const char *const mem_path_names[] = {"callbacks", "records"};
static void mem_path(int path) { setenv("FLAGTRACE_CUPTI_MEMORY", mem_path_names[path], 1); }

/* The memory events' indices into s in time order (arrival order breaks ties, as in
 * the core): from callbacks a pool's growth is found later than its allocation and
 * placed just before it. Returns how many. */
static size_t mem_in_time_order(const mem_seen *s, size_t *idx) {
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->ev[i].kind != FT_EVENT_MEMORY) continue;
    size_t j = n++;
    for (; j > 0 && s->ev[idx[j - 1]].start_ns > s->ev[i].start_ns; j--) idx[j] = idx[j - 1];
    idx[j] = i;
  }
  return n;
}

/* Whether CUPTI stamps the calls with our clock (test_attribution_mode): a memory
 * callback then takes its call's end as its events' time. */
static bool mem_on_our_clock(void) {
  return !ft__env_flag("FLAGTRACE_CUPTI_EXTERNAL_CORRELATION") && !getenv("FAKE_CUPTI_NO_CLOCK_CALLBACK") &&
         !strcmp(FT_ACCELERATOR_NAME, "cuda");
}

/* The sink's memory events are exactly mem_want: each on its call's correlation id,
 * at one instant in that call (callbacks without our clock: at or after its start), named "[memory]". From callbacks a
 * free says 0 bytes and no pool: the core takes both from the allocation at its address. */
static void mem_expect_script(const mem_seen *s, int path) {
  size_t k = 0, idx[MEM_MAX_SEEN], n = mem_in_time_order(s, idx);
  for (size_t x = 0; x < n; x++) {
    size_t i = idx[x];
    if (k == MEM_WANT) fail_msg("more memory events than the %d expected", (int)MEM_WANT);
    const struct mem_want *w = &mem_want[k++];
    const ft_device_event *e = &s->ev[i];
    const ft_memory_info *m = &s->mem[i];
    assert_string_equal(s->name[i], "[memory]");
    uint64_t cs = 0, ce = 0;
    const char *call = mem_call_of(s, e->correlation_id, &cs, &ce);
    assert_non_null(call);
    assert_string_equal(call, w->call);
    assert_int_equal(e->start_ns, e->end_ns);
    assert_true(e->start_ns >= cs);
    if (path == MEM_RECORDS) /* the fake stamps them inside the call */
      assert_true(e->start_ns <= ce);
    else if (mem_on_our_clock()) /* at the call's end, CUPTI's own stamp; growth just before its allocation */
      assert_true(e->start_ns == ce || (m->op == FT_MEMORY_RESERVE && e->start_ns == ce - 1));
    /* else read in the exit callback, after the call's end: the core fits it into the call */
    assert_int_equal(e->stream, w->stream);
    assert_int_equal(e->device, w->device);
    assert_int_equal(m->op, w->m.op);
    assert_int_equal(m->memory_kind, w->m.memory_kind);
    assert_int_equal(m->address, w->m.address);
    bool vague_free = path == MEM_CALLBACKS && m->op == FT_MEMORY_FREE;
    assert_int_equal(m->bytes, vague_free ? 0 : w->m.bytes);
    assert_int_equal(m->pool, vague_free ? 0 : w->m.pool);
  }
  assert_int_equal(k, MEM_WANT);
}

/* The tracer of this build, armed with sink for kinds. */
static ft_tracer *mem_start_sink(const ft_event_sink *sink, unsigned kinds) {
  ft_tracer *tr = NULL;
  assert_int_equal(ft_make_device_tracer(&tr), FT_OK);
  assert_true(tr->ops->available(tr, NULL));
  assert_int_equal(tr->ops->start(tr, sink, kinds), FT_OK);
  return tr;
}

/* The same with a sink collecting into seen. */
static ft_tracer *mem_start(mem_seen *seen, ft_event_sink *sink, unsigned kinds) {
  memset(seen, 0, sizeof *seen);
  *sink = (ft_event_sink){.event = mem_sink_event, .external_id = mem_sink_external, .ctx = seen};
  return mem_start_sink(sink, kinds);
}

static size_t mem_count(const mem_seen *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++) n += s->ev[i].kind == FT_EVENT_MEMORY;
  return n;
}

#define MEM_KINDS (FT_KIND_BIT(FT_EVENT_KERNEL) | FT_KIND_BIT(FT_EVENT_RUNTIME) | FT_KIND_BIT(FT_EVENT_MEMORY))

/* The whole script through the tracer, both ways: every memory event exact; the
 * record naming no operation counted as dropped (records only: no call makes it). A
 * callback API that refuses (the subscriber slot someone else's) gives records, the same. */
static void test_memory_at_the_sink(void **state) {
  (void)state;
  static const struct {
    int asked, got; /* the path FLAGTRACE_CUPTI_MEMORY names, the one taken */
    bool refused;   /* FAKE_CUPTI_NO_CALLBACKS */
  } runs[] = {
      {MEM_CALLBACKS, MEM_CALLBACKS, false}, {MEM_RECORDS, MEM_RECORDS, false}, {MEM_CALLBACKS, MEM_RECORDS, true}};
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    mem_path(runs[r].asked);
    if (runs[r].refused) setenv("FAKE_CUPTI_NO_CALLBACKS", "1", 1);
    mem_seen seen;
    ft_event_sink sink;
    ft_tracer *tr = mem_start(&seen, &sink, MEM_KINDS);
    mem_run_script();
    assert_int_equal(tr->ops->stop(tr), FT_OK);
    unsetenv("FAKE_CUPTI_NO_CALLBACKS");
    mem_expect_script(&seen, runs[r].got);
    assert_int_equal(tr->ops->dropped_records(tr), runs[r].got == MEM_RECORDS);
    tr->ops->destroy(tr);
  }
  unsetenv("FLAGTRACE_CUPTI_MEMORY");
}

/* record --on-demand detaches CUPTI after each capture (FLAGTRACE_CUPTI_FINALIZE):
 * memory from callbacks must not call CUPTI after cuptiFinalize, which forgets the
 * subscriber (unsubscribing it after finalizing attached CUPTI again on an H100: the
 * launches after a capture cost 1.038x, as CUPTI's callbacks do); the next session
 * subscribes again and takes memory as the first did. */
static void test_memory_finalized_between_sessions(void **state) {
  (void)state;
  mem_path(MEM_CALLBACKS);
  setenv("FLAGTRACE_CUPTI_FINALIZE", "1", 1);
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(h);
  int (*finalized)(void), (*stale)(void);
  *(void **)&finalized = dlsym(h, "fake_cupti_finalized");
  *(void **)&stale = dlsym(h, "fake_cupti_stale_unsubscribes");
  assert_true(finalized && stale);
  for (int round = 0; round < 2; round++) {
    int before = finalized();
    mem_seen seen;
    ft_event_sink sink;
    ft_tracer *tr = mem_start(&seen, &sink, MEM_KINDS);
    mem_run_script();
    assert_int_equal(tr->ops->stop(tr), FT_OK);
    mem_expect_script(&seen, MEM_CALLBACKS);
    assert_int_equal(finalized(), before + 1);
    assert_int_equal(stale(), 0);
    tr->ops->destroy(tr);
  }
  dlclose(h);
  unsetenv("FLAGTRACE_CUPTI_FINALIZE");
  unsetenv("FLAGTRACE_CUPTI_MEMORY");
}

/* CUPTI's one subscriber slot is flagtrace's only while a session takes memory from
 * callbacks: after stop another client (kineto, in a process that imports
 * flagtrace.torch) subscribes, and while it holds the slot the next session takes
 * memory from records instead; a session whose callbacks CUPTI refuses lets it go. */
static void CUPTIAPI mem_other_client(void *data, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *cb) {
  (void)data, (void)domain, (void)cbid, (void)cb;
}

static void test_memory_slot_free_between_sessions(void **state) {
  (void)state;
  mem_path(MEM_CALLBACKS);
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(h);
  CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *),
      (*unsubscribe)(CUpti_SubscriberHandle);
  *(void **)&subscribe = dlsym(h, "cuptiSubscribe");
  *(void **)&unsubscribe = dlsym(h, "cuptiUnsubscribe");
  assert_true(subscribe && unsubscribe);
  CUpti_SubscriberHandle other = NULL;
  for (int round = 0; round < 2; round++) { /* round 1: the slot is the other client's */
    mem_seen seen;
    ft_event_sink sink;
    ft_tracer *tr = mem_start(&seen, &sink, MEM_KINDS);
    if (!round)
      assert_int_equal(subscribe(&other, mem_other_client, NULL), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    mem_run_script();
    assert_int_equal(tr->ops->stop(tr), FT_OK);
    mem_expect_script(&seen, round ? MEM_RECORDS : MEM_CALLBACKS);
    if (!round) assert_int_equal(subscribe(&other, mem_other_client, NULL), CUPTI_SUCCESS);
    tr->ops->destroy(tr);
  }
  assert_int_equal(unsubscribe(other), CUPTI_SUCCESS);
  /* a CUPTI that takes the subscription but refuses the callbacks: records, and the slot
   * not kept for nothing (another client subscribes during the session) */
  setenv("FAKE_CUPTI_REFUSE_ENABLE", "1", 1);
  mem_seen seen;
  ft_event_sink sink;
  ft_tracer *tr = mem_start(&seen, &sink, MEM_KINDS);
  unsetenv("FAKE_CUPTI_REFUSE_ENABLE");
  assert_int_equal(subscribe(&other, mem_other_client, NULL), CUPTI_SUCCESS);
  mem_run_script();
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  mem_expect_script(&seen, MEM_RECORDS);
  assert_int_equal(unsubscribe(other), CUPTI_SUCCESS);
  tr->ops->destroy(tr);
  dlclose(h);
  unsetenv("FLAGTRACE_CUPTI_MEMORY");
}

/* Callbacks: a driver allocation and free; a synchronization after which CUDA gave
 * the pool's memory back (its release threshold is 0) unreserves it there, on the
 * sync's correlation id, its growth placed before its allocation; a physical
 * allocation of CUDA's virtual memory API on device 1 (XLA preallocates with
 * cuMemCreate) from its handle and properties, released by handle, made from a
 * context of device 0. */
static void test_memory_driver_calls_and_syncs(void **state) {
  (void)state;
  mem_path(MEM_CALLBACKS);
  mem_seen seen;
  ft_event_sink sink;
  ft_tracer *tr = mem_start(&seen, &sink, MEM_KINDS);
  const int ALLOC = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
            FREE = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  const CUpti_ActivityMemoryKind DEV = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  fake_launch script[] = {
      {.kind = FAKE_MEMORY,
       .driver = 1,
       .cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
       .mem_op = ALLOC,
       .memory_kind = DEV,
       .address = MEM_DEV_A,
       .bytes = 3 * MIB},
      {.kind = FAKE_MEMORY,
       .driver = 1,
       .cbid = CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
       .mem_op = FREE,
       .memory_kind = DEV,
       .address = MEM_DEV_A,
       .bytes = 3 * MIB},
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
       .mem_op = ALLOC,
       .memory_kind = DEV,
       .address = MEM_POOL_B,
       .bytes = MIB,
       .stream = 9,
       .pool_type = 1,
       .pool_address = MEM_POOL_B,
       .pool_size = 32 * MIB},
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
       .mem_op = FREE,
       .memory_kind = DEV,
       .address = MEM_POOL_B,
       .bytes = MIB,
       .stream = 9,
       .pool_type = 1,
       .pool_address = MEM_POOL_B,
       .pool_size = 32 * MIB},
      {.kind = FAKE_SYNC, .sync_type = 3, .stream = 9, .pool_address = MEM_POOL_B, .pool_size = 0},
      {.kind = FAKE_MEMORY,
       .driver = 1,
       .cbid = CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
       .mem_op = ALLOC,
       .memory_kind = DEV,
       .address = 0x77,
       .bytes = 1ull << 36,
       .device = 1},
      {.kind = FAKE_MEMORY,
       .driver = 1,
       .cbid = CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
       .mem_op = FREE,
       .memory_kind = DEV,
       .address = 0x77,
       .bytes = 1ull << 36,
       .device = 0},
  };
  enum { CALLS = sizeof script / sizeof script[0] };
  uint32_t corr[CALLS];
  for (size_t i = 0; i < CALLS; i++) corr[i] = launch(&script[i]);
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  unsetenv("FLAGTRACE_CUPTI_MEMORY");
  static const struct {
    int call;
    ft_memory_op op;
    uint64_t address, bytes, pool;
    uint32_t device;
  } want[] = {{0, FT_MEMORY_ALLOC, MEM_DEV_A, 3 * MIB, 0, 0},
              {1, FT_MEMORY_FREE, MEM_DEV_A, 0, 0, 0},
              {2, FT_MEMORY_RESERVE, MEM_POOL_B, 32 * MIB, MEM_POOL_B, 0},
              {2, FT_MEMORY_ALLOC, MEM_POOL_B, MIB, MEM_POOL_B, 0},
              {3, FT_MEMORY_FREE, MEM_POOL_B, 0, 0, 0},
              {4, FT_MEMORY_UNRESERVE, MEM_POOL_B, 32 * MIB, MEM_POOL_B, 0},
              {5, FT_MEMORY_ALLOC, 0x77, 1ull << 36, 0, 1},
              {6, FT_MEMORY_FREE, 0x77, 0, 0, 1}};
  size_t k = 0, idx[MEM_MAX_SEEN], n = mem_in_time_order(&seen, idx);
  for (size_t x = 0; x < n; x++) {
    size_t i = idx[x];
    assert_true(k < sizeof want / sizeof want[0]);
    assert_int_equal(seen.ev[i].correlation_id, corr[want[k].call]);
    assert_int_equal(seen.mem[i].op, want[k].op);
    assert_int_equal(seen.mem[i].address, want[k].address);
    assert_int_equal(seen.mem[i].bytes, want[k].bytes);
    assert_int_equal(seen.mem[i].pool, want[k].pool);
    assert_int_equal(seen.ev[i].device, want[k].device);
    k++;
  }
  assert_int_equal(k, sizeof want / sizeof want[0]);
  tr->ops->destroy(tr);
}

/* Memory not asked for: CUPTI's memory kinds stay off, the sink gets none. */
static void test_memory_only_when_asked(void **state) {
  (void)state;
  mem_seen seen;
  ft_event_sink sink;
  ft_tracer *tr = mem_start(&seen, &sink, MEM_KINDS & ~FT_KIND_BIT(FT_EVENT_MEMORY));
  mem_run_script();
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  assert_int_equal(mem_count(&seen), 0);
  assert_int_equal(seen.n, 11); /* the calls' runtime rows only */
  tr->ops->destroy(tr);
}

/* A CUPTI that refuses MEMORY2 (older): the session goes on without memory, kernels
 * still recorded, and last_error says why. One that refuses MEMORY_POOL only: the
 * allocations and frees still come, and a pool's growth with them (its creation, trim
 * and destruction do not), and last_error says what is missing. */
static void test_memory_refused_keeps_the_rest(void **state) {
  (void)state;
  static const char *const refusals[] = {"1", "pool"};
  mem_path(MEM_RECORDS);
  for (size_t r = 0; r < 2; r++) {
    setenv("FAKE_CUPTI_NO_MEMORY", refusals[r], 1);
    mem_seen seen;
    ft_event_sink sink;
    ft_tracer *tr = mem_start(&seen, &sink, MEM_KINDS);
    mem_run_script();
    fake_launch k = {.kind = FAKE_KERNEL, .name = "k", .grid = {1, 1, 1}, .block = {32, 1, 1}, .dur_ns = 100};
    launch(&k);
    assert_int_equal(tr->ops->stop(tr), FT_OK);
    unsetenv("FAKE_CUPTI_NO_MEMORY");
    size_t kernels = 0, k_mem = 0;
    for (size_t i = 0; i < seen.n; i++) {
      kernels += seen.ev[i].kind == FT_EVENT_KERNEL;
      if (seen.ev[i].kind != FT_EVENT_MEMORY) continue;
      /* MEMORY_POOL refused: mem_want without the pool's own three operations */
      while (k_mem < MEM_WANT && !strncmp(mem_want[k_mem].call, "cudaMemPool", 11)) k_mem++;
      if (k_mem == MEM_WANT) {
        fail_msg("more memory events than expected");
        break;
      }
      assert_int_equal(seen.mem[i].op, mem_want[k_mem].m.op);
      assert_int_equal(seen.mem[i].address, mem_want[k_mem].m.address);
      assert_int_equal(seen.mem[i].bytes, mem_want[k_mem].m.bytes);
      k_mem++;
    }
    assert_int_equal(mem_count(&seen), r ? MEM_WANT - 3 : 0);
    assert_int_equal(kernels, 1);
    const char *err = tr->ops->last_error(tr);
    assert_non_null(strstr(
        err, r ? "memory pools' creation, trims and destruction are not recorded" : "device memory is not recorded"));
    assert_non_null(strstr(err, r ? "CUPTI_ACTIVITY_KIND_MEMORY_POOL" : "CUPTI_ACTIVITY_KIND_MEMORY2"));
    tr->ops->destroy(tr);
  }
  unsetenv("FLAGTRACE_CUPTI_MEMORY");
}

/* Sums per operation, for scripts longer than mem_seen holds. */
typedef struct mem_sums {
  uint64_t n[5], bytes[5];
} mem_sums;

static ft_status mem_sum_event(void *ctx, const ft_device_event *ev) {
  mem_sums *s = ctx;
  if (ev->kind == FT_EVENT_MEMORY && ev->memory->op >= 1 && ev->memory->op <= 4) {
    s->n[ev->memory->op]++;
    s->bytes[ev->memory->op] += ev->memory->bytes;
  }
  return FT_OK;
}

/* Hostile: more pools than the tracer follows (300 > MAX_POOLS = 256). The first 256
 * are followed (each reserves its 2 MiB before its allocation), the rest allocate
 * without a reservation; destroying all of them unreserves exactly what was reserved,
 * and pools destroyed after room came back, never reserved, unreserve 0. */
static void test_memory_many_pools_bounded(void **state) {
  (void)state;
  for (int path = MEM_CALLBACKS; path <= MEM_RECORDS; path++) {
    mem_path(path);
    mem_sums sums = {0};
    ft_event_sink sink = {.event = mem_sum_event, .external_id = mem_sink_external, .ctx = &sums};
    ft_tracer *tr = mem_start_sink(&sink, MEM_KINDS);
    enum { POOLS = 300 };
    for (int destroy = 0; destroy < 2; destroy++)
      for (uint64_t i = 0; i < POOLS; i++) {
        uint64_t base = 0x100000000000ull + i * 64 * MIB;
        fake_launch l = {.kind = FAKE_MEMORY,
                         .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
                         .mem_op = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                         .memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                         .address = base,
                         .bytes = MIB,
                         .stream = 7,
                         .pool_type = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL,
                         .pool_address = base,
                         .pool_size = 2 * MIB,
                         .pool_used = MIB};
        if (destroy)
          l = (fake_launch){.kind = FAKE_MEMORY_POOL,
                            .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020,
                            .mem_op = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED,
                            .pool_type = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL,
                            .pool_address = base,
                            .pool_size = 2 * MIB};
        launch(&l);
      }
    assert_int_equal(tr->ops->stop(tr), FT_OK);
    assert_int_equal(sums.n[FT_MEMORY_ALLOC], POOLS);
    assert_int_equal(sums.bytes[FT_MEMORY_ALLOC], POOLS * MIB);
    assert_int_equal(sums.n[FT_MEMORY_RESERVE], 256);
    assert_int_equal(sums.bytes[FT_MEMORY_RESERVE], 256 * 2 * MIB);
    assert_int_equal(sums.n[FT_MEMORY_UNRESERVE], POOLS);
    assert_int_equal(sums.bytes[FT_MEMORY_UNRESERVE], 256 * 2 * MIB);
    tr->ops->destroy(tr);
  }
  unsetenv("FLAGTRACE_CUPTI_MEMORY");
}

/* Callbacks stage each thread's events and hand them to the sink at a flush and at
 * stop: a thread's events beyond one block (1024), flushed while it makes them and made
 * on a thread gone before the last flush, all reach the sink by then, in the order they
 * were made; those made after it at stop; none twice. */
typedef struct mem_order {
  mem_sums sums;
  uint64_t last_ns;
  size_t backwards;
} mem_order;

static ft_status mem_order_event(void *ctx, const ft_device_event *ev) {
  mem_order *o = ctx;
  if (ev->kind != FT_EVENT_MEMORY) return FT_OK;
  o->backwards += ev->start_ns < o->last_ns;
  o->last_ns = ev->start_ns;
  return mem_sum_event(&o->sums, ev);
}

static void mem_pairs(int n) {
  for (int i = 0; i < n; i++)
    for (int free = 0; free < 2; free++) {
      fake_launch l = {
          .kind = FAKE_MEMORY,
          .cbid = free ? CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020 : CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
          .mem_op =
              free ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
          .memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
          .address = MEM_DEV_A + (uint64_t)i * MIB,
          .bytes = MIB};
      launch(&l);
    }
}

typedef struct mem_pairs_job {
  int pairs;
  atomic_bool done;
  atomic_size_t flushes; /* made by the test's thread meanwhile */
} mem_pairs_job;

/* Half the pairs, then (once a flush has been made) the other half: at least one flush
 * lands while the thread is making them, however the threads are scheduled. */
static void *mem_pairs_thread(void *arg) {
  mem_pairs_job *j = arg;
  mem_pairs(j->pairs / 2);
  while (!atomic_load(&j->flushes)) sched_yield();
  mem_pairs(j->pairs - j->pairs / 2);
  atomic_store(&j->done, true);
  return NULL;
}

static void test_memory_staged_until_flush(void **state) {
  (void)state;
  mem_path(MEM_CALLBACKS);
  mem_order o = {0};
  ft_event_sink sink = {.event = mem_order_event, .external_id = mem_sink_external, .ctx = &o};
  ft_tracer *tr = mem_start_sink(&sink, MEM_KINDS);
  mem_pairs_job job = {.pairs = 1500};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, mem_pairs_thread, &job), 0);
  /* flushed while the thread makes them (TSan: the hand-over races nothing) */
  while (!atomic_load(&job.done)) {
    assert_int_equal(tr->ops->flush(tr), FT_OK);
    atomic_fetch_add(&job.flushes, 1);
  }
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(tr->ops->flush(tr), FT_OK);
  assert_int_equal(o.sums.n[FT_MEMORY_ALLOC], 1500);
  assert_int_equal(o.sums.n[FT_MEMORY_FREE], 1500);
  assert_int_equal(o.sums.bytes[FT_MEMORY_ALLOC], 1500 * MIB);
  assert_int_equal(o.backwards, 0);
  mem_pairs(10);
  assert_int_equal(tr->ops->stop(tr), FT_OK);
  assert_int_equal(o.sums.n[FT_MEMORY_ALLOC], 1510);
  assert_int_equal(o.sums.n[FT_MEMORY_FREE], 1510);
  assert_int_equal(o.backwards, 0);
  tr->ops->destroy(tr);
  unsetenv("FLAGTRACE_CUPTI_MEMORY");
}

/* Through a session: each [memory] instant of the trace is attributed to the op open
 * around its call, whichever attribution the build and environment chose (by time, or
 * CUPTI's external-correlation records), and the totals follow mem_want. */
static void test_memory_in_the_trace(void **state) {
  (void)state;
  for (int path = MEM_CALLBACKS; path <= MEM_RECORDS; path++) {
    mem_path(path);
    ft_session *s = ft_test_started();
    uint64_t op;
    assert_int_equal(ft_range_push(s, "aten::empty", &op), FT_OK);
    mem_run_script();
    assert_int_equal(ft_range_pop(s), FT_OK);
    ft_test_settle();
    assert_int_equal(ft_session_stop(s), FT_OK);
    yajl_val doc = ft_test_render(s);
    yajl_val ev = ft_test_get(doc, "traceEvents");
    static const long long allocated[] = {1, 1, 1, 5, 13, 9, 1, 1, 0, 0},
                           reserved[] = {1, 1, 33, 33, 33, 33, 33, 1, 0, 0};
    /* the instants in time order (from callbacks a pool's growth is written after its
     * allocation, at a time just before it) */
    yajl_val inst[MEM_MAX_SEEN];
    size_t n = 0;
    for (size_t i = 0; i < ev->u.array.len && n < MEM_MAX_SEEN; i++) {
      yajl_val e = ev->u.array.values[i];
      const char *name = ft_test_str(e, "name");
      if (!name || strcmp(name, "[memory]")) continue;
      size_t j = n++;
      double ts = YAJL_GET_DOUBLE(ft_test_get(e, "ts"));
      for (; j > 0 && YAJL_GET_DOUBLE(ft_test_get(inst[j - 1], "ts")) > ts; j--) inst[j] = inst[j - 1];
      inst[j] = e;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      yajl_val args = ft_test_get(inst[i], "args");
      if (k == MEM_WANT) {
        fail_msg("more [memory] instants than expected");
        break;
      }
      assert_int_equal(YAJL_GET_INTEGER(ft_test_get(args, "External id")), (long long)op);
      assert_int_equal(YAJL_GET_INTEGER(ft_test_get(args, "Addr")), (long long)mem_want[k].m.address);
      if (k < 10) {
        assert_int_equal(YAJL_GET_INTEGER(ft_test_get(args, "Total Allocated")), allocated[k] * (long long)MIB);
        assert_int_equal(YAJL_GET_INTEGER(ft_test_get(args, "Total Reserved")), reserved[k] * (long long)MIB);
      }
      k++;
    }
    assert_int_equal(k, MEM_WANT);
    yajl_tree_free(doc);
    ft_session_destroy(s);
  }
  unsetenv("FLAGTRACE_CUPTI_MEMORY");
}

#endif
