/* CUPTI device memory: events and pool levels for both capture paths, and capture from CUPTI's callback API. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cupti.h> /* the calls' parameter structures (generated_cuda*_meta.h), as CUPTI includes them */

#include "cupti_tracer.h"

/* ---- events and pool levels (records and callbacks) ---- */

/* The calling thread: its runtime-call depth (a driver call inside a runtime call is
 * the runtime's own: PPU's CUPTI reports them), its OS id (0 on CUPTI's buffer thread: records name their call), the
 * last context's device. What an allocation's callback reads comes first: a callback
 * runs with cold caches (the driver's work in between), so the lines it touches are
 * most of its cost (timed inside the callbacks on an H100: 0.21-0.36 us an allocation's
 * exit, each of its parts 25-130 ns). */
static _Thread_local struct {
  unsigned generation;
  int runtime_depth;
  uint32_t tid;
  uint32_t device;
  CUcontext ctx;
  struct stage *stage; /* this thread's staged memory events (callbacks), valid while stage_gen is the arming's */
  unsigned stage_gen;
  /* the last time CUPTI took through our clock on this thread (ft__cupti_clock_taken),
   * and its value when the current runtime call began */
  uint64_t last_clock, enter_clock;
  /* the last pool allocated from: its slot, valid in this arming while no slot moved (pools_epoch) */
  ft__cupti_pool *pool_slot;
  uint64_t pool_handle;
  uint32_t pool_device;
  unsigned pool_gen, pool_epoch;
  /* the last streams' CUPTI ids (cuptiGetStreamIdEx is about 0.25 us a call), valid
   * while no stream was destroyed since (streams_gone) */
  unsigned next_stream;
  struct stream_id {
    CUcontext ctx;
    CUstream stream;
    uint8_t per_thread;
    unsigned gone;
    uint32_t id;
  } streams[4];
} me;

static bool stage_event(uint64_t at, uint32_t corr, uint32_t device, uint32_t stream, uint32_t tid,
                        const ft_memory_info *m);

/* One operation handed to the session now. */
static void hand_over(cupti_tracer *t, uint64_t at, uint32_t corr, uint32_t device, uint32_t stream, uint32_t tid,
                      const ft_memory_info *m) {
  ft_device_event ev = {.kind = FT_EVENT_MEMORY,
                        .thread_id = tid,
                        .start_ns = at,
                        .end_ns = at,
                        .correlation_id = corr,
                        .device = device,
                        .stream = stream,
                        .name = "[memory]",
                        .memory = m};
  ft__tracer_emit(&t->base, &ev, NULL, 0);
}

void ft__cupti_emit_memory(cupti_tracer *t, uint64_t at, uint32_t corr, uint32_t device, uint32_t stream, uint32_t tid,
                           const ft_memory_info *m) {
  if (!t->mem_callbacks || !stage_event(at, corr, device, stream, tid, m))
    hand_over(t, at, corr, device, stream, tid, m);
}

/* The followed pool at (device, address), added at level 0 when add and there is
 * room; NULL when not followed. */
ft__cupti_pool *ft__cupti_pool_slot(cupti_tracer *t, uint32_t device, uint64_t address, bool add) {
  size_t n = t->n_pools;
  for (size_t i = 0; i < n; i++)
    if (t->pools[i].address == address && t->pools[i].device == device) return &t->pools[i];
  if (!add || n == MAX_POOLS) return NULL;
  t->pools[n] = (ft__cupti_pool){.address = address, .device = device, .level = 0};
  t->n_pools = n + 1;
  return &t->pools[n];
}

/* The pool's reserved bytes moved to size: the difference as one event, op_if_equal
 * (0: none) when there is none. */
void ft__cupti_pool_to(cupti_tracer *t, ft__cupti_pool *p, uint64_t size, uint64_t at, uint32_t corr, uint32_t stream,
                       ft_memory_kind kind, ft_memory_op op_if_equal) {
  if (size == p->level && !op_if_equal) return;
  FT__LOG("pool %#llx on device %u: %llu -> %llu bytes (correlation %u)", (unsigned long long)p->address, p->device,
          (unsigned long long)p->level, (unsigned long long)size, corr);
  bool up = size > p->level;
  ft_memory_info m = {.op = size == p->level ? op_if_equal
                            : up             ? FT_MEMORY_RESERVE
                                             : FT_MEMORY_UNRESERVE,
                      .memory_kind = kind,
                      .address = p->address,
                      .bytes = up ? size - p->level : p->level - size,
                      .pool = p->address};
  p->level = size;
  ft__cupti_emit_memory(t, at, corr, p->device, stream, me.tid, &m);
}

#ifndef FT_MCPTI /* MCPTI's callback ids are not CUPTI's: no memory from it at all */

/* ---- CUPTI's one subscriber ----
 * CUPTI allows one callback subscriber per process: memory capture and the watch on
 * cudaProfilerStart/Stop share ours. Another client's cuptiSubscribe under record
 * makes the tracer step aside first (the guard, src/inject/cupti_guard.c), and
 * ft__cupti_unsubscribe frees the slot for it. */
static CUpti_SubscriberHandle subscriber;
static pthread_mutex_t subscriber_mu = PTHREAD_MUTEX_INITIALIZER;

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);

ft_status ft__cupti_subscriber(cupti_tracer *t, CUpti_SubscriberHandle *out) {
  pthread_mutex_lock(&subscriber_mu);
  ft_status st = FT_OK;
  if (!subscriber) st = ft__cuptiSubscribe(&t->api, t->base.err, sizeof t->base.err, &subscriber, on_callback, NULL);
  *out = subscriber;
  pthread_mutex_unlock(&subscriber_mu);
  return st;
}

void ft__cupti_unsubscribe(cupti_tracer *t) {
  pthread_mutex_lock(&subscriber_mu);
  if (subscriber && t->api.cuptiUnsubscribe) {
    CUptiResult r = t->api.cuptiUnsubscribe(subscriber);
    FT__LOG("unsubscribed from CUPTI's callbacks: %s", r == CUPTI_SUCCESS ? "ok" : "failed");
  }
  subscriber = NULL; /* after cuptiFinalize, or unsubscribed: the next one subscribes again */
  pthread_mutex_unlock(&subscriber_mu);
}

/* ---- memory capture from callbacks ----
 * CUPTI's MEMORY2 records cost an allocation loop 1.19x (P7's floor, measured on an
 * H100); a callback at the allocation calls costs 1.016x. So an allocation or free is
 * taken at its call's exit: the pointer and size from the call's own parameters, the
 * device from its context (or the allocation's properties), its stream, and the
 * correlation id CUPTI gives the call's API record. A free says 0 bytes: the core takes
 * the size of the allocation at its address. cuMemCreate's physical allocations (XLA
 * preallocates with it, measured on an H200) are keyed by their handle, freed by
 * cuMemRelease.
 * A stream-ordered pool's reserved bytes are read from CUDA (cuMemPoolGetAttribute,
 * about 0.4 us a read on an H200: too dear for every allocation) where they can
 * change in ways that matter: a pool grows only at its allocations and gives memory
 * back only at a stream, event or device synchronization or a trim. So a pool that
 * was allocated from is read as a synchronization begins (its growth, placed just
 * before its first allocation since the last reading: reserved never below
 * allocated, at worst early), any pool touched since is read as it ends (what it gave
 * back), and a trimmed one after the trim; a change is a reserve or unreserve event,
 * as with records. */

/* What every callback reads or writes, on a line of its own (see me). Armed (memory
 * events are emitted) and the callbacks running now (in_flight): disarming waits for
 * them, so that no event reaches the sink after stop returns. */
static _Alignas(64) struct {
  atomic_bool armed;
  atomic_bool keep_clock;    /* armed, and the calls' records stamped by our clock: ft__cupti_clock_taken keeps it */
  atomic_bool pools_touched; /* a pool allocated from or freed to since the last synchronization */
  atomic_int in_flight;
  atomic_uint generation;   /* per arming: a thread's runtime depth and staged block from an older one are stale */
  atomic_uint streams_gone; /* stream destructions seen: a handle may be a new stream's */
  atomic_uint pools_epoch;  /* followed pools forgotten (their slots moved) */
} hot;

/* ---- staging ----
 * Handing an event to the session takes the session's lock, which the buffer thread
 * takes for every record it decodes: 0.36 us of an allocation loop's 6.5 us iteration
 * (measured on an H200). So a callback's events go to its own thread's block, without
 * a lock or a line shared with another thread, and reach the session at a flush and
 * at disarm (stage_drain). One writer per block (its thread), one reader (the drain,
 * under stage_mu): an event is read only once its thread has published it.
 * An event is 48 bytes (72 before) and a block's pages are made at once
 * (MADV_POPULATE_WRITE), not one fault per 4 KiB as they are touched: a fault cost about
 * 1.9 us on this VM kind, a tenth of an allocation loop's added time per event. Blocks
 * grow from 64 KiB to 2 MiB, so that a thread that allocates rarely holds little. */
typedef struct staged { /* 48 bytes: what an event needs, packed */
  uint64_t at, address, bytes, pool;
  uint32_t corr, stream, tid;
  uint16_t device;
  uint8_t op, kind;
} staged;
typedef struct stage {
  struct stage *next;
  _Atomic size_t published; /* events written (by the block's thread) */
  size_t drained;           /* events handed to the session (under stage_mu) */
  size_t cap, bytes;        /* events it holds; its mapping's size */
  staged ev[];
} stage;
_Static_assert(sizeof(staged) == 48, "a staged event is 48 bytes");
enum { STAGE_FIRST = 64 << 10, STAGE_MOST = 2 << 20 }; /* block sizes: the first, and the largest */
static stage *stages, **stages_end = &stages;          /* this arming's blocks, oldest first, under stage_mu */
static pthread_mutex_t stage_mu = PTHREAD_MUTEX_INITIALIZER;

/* A block of bytes, its pages made now; NULL when none. */
static stage *stage_map(size_t bytes) {
  void *at = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (at == MAP_FAILED) return NULL;
#ifdef MADV_POPULATE_WRITE
  (void)madvise(at, bytes, MADV_POPULATE_WRITE); /* before Linux 5.14: EINVAL, pages made as they are touched */
#endif
  stage *s = (stage *)at;
  s->next = NULL;
  atomic_init(&s->published, 0);
  s->drained = 0;
  s->bytes = bytes;
  s->cap = (bytes - sizeof *s) / sizeof(staged);
  return s;
}

/* False when the event cannot be staged (no block could be had, a device past 16
 * bits): the caller hands it over itself. */
static bool stage_event(uint64_t at, uint32_t corr, uint32_t device, uint32_t stream, uint32_t tid,
                        const ft_memory_info *m) {
  if (device > UINT16_MAX) return false;
  unsigned gen = atomic_load_explicit(&hot.generation, memory_order_relaxed);
  stage *s = me.stage_gen == gen ? me.stage : NULL;
  size_t n = s ? atomic_load_explicit(&s->published, memory_order_relaxed) : 0;
  if (!s || n == s->cap) {
    size_t bytes = !s ? STAGE_FIRST : s->bytes < STAGE_MOST ? s->bytes * 4 : STAGE_MOST;
    if (!(s = stage_map(bytes > STAGE_MOST ? STAGE_MOST : bytes))) return false;
    pthread_mutex_lock(&stage_mu);
    *stages_end = s, stages_end = &s->next;
    pthread_mutex_unlock(&stage_mu);
    me.stage = s, me.stage_gen = gen, n = 0;
  }
  s->ev[n] = (staged){at,     m->address, m->bytes,         m->pool,        corr,
                      stream, tid,        (uint16_t)device, (uint8_t)m->op, (uint8_t)m->memory_kind};
  /* the next event's line asked for now, while the call's own work goes on: a store to a
   * line not in the caches waits for it (an event was the dearest part of the callback) */
  if (n + 1 < s->cap) __builtin_prefetch((const char *)&s->ev[n + 2] - 1, 1, 2); /* the next event's last byte */
  atomic_store_explicit(&s->published, n + 1, memory_order_release);
  return true;
}

/* Every published event not yet handed to the session, handed over (oldest block
 * first: a thread's events keep their order); the blocks unmapped too when release
 * (at disarm, no callback running). */
static void stage_drain(cupti_tracer *t, bool release) {
  pthread_mutex_lock(&stage_mu);
  for (stage *s = stages; s; s = s->next) {
    size_t n = atomic_load_explicit(&s->published, memory_order_acquire);
    for (; s->drained < n; s->drained++) {
      const staged *e = &s->ev[s->drained];
      ft_memory_info m = {.op = (ft_memory_op)e->op,
                          .memory_kind = (ft_memory_kind)e->kind,
                          .address = e->address,
                          .bytes = e->bytes,
                          .pool = e->pool};
      hand_over(t, e->at, e->corr, e->device, e->stream, e->tid, &m);
    }
  }
  if (release) {
    for (stage *s = stages, *next; s; s = next) next = s->next, munmap(s, s->bytes);
    stages = NULL, stages_end = &stages;
  }
  pthread_mutex_unlock(&stage_mu);
}

void ft__cupti_memory_flush(cupti_tracer *t) {
  if (t->mem_callbacks) stage_drain(t, false);
}

/* libcuda's pool queries, bound at the first pooled call (libcuda is loaded by then;
 * the CUPTI library itself is asked too, so that a test double can stand in). */
static pthread_once_t pool_api_once = PTHREAD_ONCE_INIT;
static struct {
#define FT__SHIM_FIELD(ret, name, params, args) ft__pfn_##name name;
  FT_CUDA_POOL_FUNCS(FT__SHIM_FIELD)
#undef FT__SHIM_FIELD
} pool_api;
static void *pool_api_handle;
static atomic_bool pool_api_bound; /* bind_pool_api ran: no pthread_once per call */

static void bind_pool_api(void) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *const handles[] = {cuda, pool_api_handle};
  for (size_t i = 0; i < 2 && !pool_api.cuMemPoolGetAttribute; i++) {
    if (!handles[i]) continue;
#define FT__SHIM_BIND(ret, name, params, args) pool_api.name = (ft__pfn_##name)dlsym(handles[i], #name);
    FT_CUDA_POOL_FUNCS(FT__SHIM_BIND)
#undef FT__SHIM_BIND
  }
  atomic_store_explicit(&pool_api_bound, true, memory_order_release);
}

/* cuMemCreate's handles -> their device (a release names only the handle, and may be
 * made from another device's context); rare calls (XLA makes one), so a small table. */
enum { VMM_HANDLES = 256 };
static struct {
  uint64_t handle;
  uint32_t device;
} vmm[VMM_HANDLES];
static size_t n_vmm;
static pthread_mutex_t vmm_mu = PTHREAD_MUTEX_INITIALIZER;

/* The device of a cuMemCreate allocation: noted (alloc), or looked up and forgotten
 * (a release; -1 when not seen). */
static int vmm_device(uint64_t handle, int device, bool alloc) {
  pthread_mutex_lock(&vmm_mu);
  size_t i = 0;
  while (i < n_vmm && vmm[i].handle != handle) i++;
  int found = i < n_vmm ? (int)vmm[i].device : -1;
  if (alloc && (i < n_vmm || n_vmm < VMM_HANDLES)) { /* a handle made again takes its new device */
    if (i == n_vmm) n_vmm++;
    vmm[i].handle = handle, vmm[i].device = (uint32_t)device;
  } else if (!alloc && i < n_vmm) {
    vmm[i] = vmm[--n_vmm];
  }
  pthread_mutex_unlock(&vmm_mu);
  return alloc ? device : found;
}

static uint32_t stream_id(cupti_tracer *t, CUcontext ctx, CUstream stream, bool per_thread) {
  unsigned gone = atomic_load_explicit(&hot.streams_gone, memory_order_relaxed);
  for (size_t i = 0; i < 4; i++) {
    struct stream_id *c = &me.streams[i];
    if (c->ctx == ctx && c->stream == stream && c->per_thread == per_thread && c->gone == gone && c->ctx) return c->id;
  }
  uint32_t id = UINT32_MAX;
  if (!t->api.cuptiGetStreamIdEx || t->api.cuptiGetStreamIdEx(ctx, stream, per_thread, &id) != CUPTI_SUCCESS)
    return UINT32_MAX;
  me.streams[me.next_stream++ % 4] = (struct stream_id){ctx, stream, per_thread, gone, id};
  return id;
}

/* Each device's current pool (cudaMallocAsync's), until cudaDeviceSetMemPool. */
static _Atomic(CUmemoryPool) current_pool[MAX_DEVICES];

static CUmemoryPool pool_of_device(uint32_t device) {
  if (device >= MAX_DEVICES) return NULL;
  CUmemoryPool p = atomic_load_explicit(&current_pool[device], memory_order_relaxed);
  /* CUdevice is the ordinal (cuDeviceGet(&d, i) gives i) */
  if (!p && pool_api.cuDeviceGetMemPool && pool_api.cuDeviceGetMemPool(&p, (CUdevice)device) == CUDA_SUCCESS)
    atomic_store_explicit(&current_pool[device], p, memory_order_relaxed);
  return p;
}

/* The pool's reserved bytes now; false when CUDA cannot say. */
static bool pool_level(CUmemoryPool pool, uint64_t *level) {
  cuuint64_t v = 0;
  if (!pool || !pool_api.cuMemPoolGetAttribute ||
      pool_api.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS)
    return false;
  *level = v;
  return true;
}

static uint32_t device_of(cupti_tracer *t, CUcontext ctx) {
  if (ctx && ctx == me.ctx) return me.device;
  uint32_t d = 0;
  if (!ctx || !t->api.cuptiGetDeviceId || t->api.cuptiGetDeviceId(ctx, &d) != CUPTI_SUCCESS) d = 0;
  me.ctx = ctx, me.device = d;
  return d;
}

/* On the session's clock, as the tracer's records are. */
static uint64_t now(cupti_tracer *t) {
  uint64_t v;
  if (t->timed || t->api.cuptiGetTimestamp(&v) != CUPTI_SUCCESS) return ft__now_ns();
  return v - (uint64_t)t->clock_offset;
}

/* A runtime call's time at its exit: its API record's end, the last stamp CUPTI took
 * through our clock on this thread since the call began (reading the clock again cost
 * an allocation's callback 80-130 ns, its caches cold, on an H100); the clock now where
 * CUPTI took none (a driver call, whose records are mostly not kept, or records not on
 * our clock). */
static uint64_t call_time(cupti_tracer *t, bool driver) {
  if (!driver && me.last_clock > me.enter_clock) return me.last_clock;
  return now(t);
}

void ft__cupti_clock_taken(uint64_t ns) {
  if (atomic_load_explicit(&hot.keep_clock, memory_order_relaxed)) me.last_clock = ns;
}

/* Under mem_mu: the followed pool with this handle (a pool's handle is the process's:
 * found on any device), or NULL. */
static ft__cupti_pool *pool_by_handle(cupti_tracer *t, uint64_t handle) {
  for (size_t i = 0; i < t->n_pools; i++)
    if (t->pools[i].address == handle) return &t->pools[i];
  return NULL;
}

/* Under mem_mu: pool i's level read now; growth placed where it began (grew_by). */
static void read_level(cupti_tracer *t, size_t i, uint64_t at, uint32_t corr) {
  ft__cupti_pool *p = &t->pools[i];
  /* cleared before the reading: an allocation that finds it cleared marks it again
   * (pool_grew), and one that found it set is in the reading */
  uint64_t grew_by = atomic_exchange(&p->grew_by, 0), level;
  if (!pool_level((CUmemoryPool)(uintptr_t)p->address, &level)) {
    uint64_t none = 0; /* not read: the mark kept for a later reading */
    atomic_compare_exchange_strong(&p->grew_by, &none, grew_by);
    return;
  }
  bool grew = level > p->level && grew_by;
  ft__cupti_pool_to(t, p, level, grew ? grew_by : at, grew ? p->grew_corr : corr, grew ? p->grew_stream : UINT32_MAX,
                    FT_MEMKIND_DEVICE, 0);
}

/* A synchronization's entry and exit (exit_at: its time, 0 at the entry): pools
 * allocated from are read before it (their growth), every pool after it when any was
 * touched (what CUDA gave back). */
static void levels_at_sync(cupti_tracer *t, uint64_t exit_at, uint32_t corr) {
  bool enter = !exit_at;
  if (!atomic_load_explicit(&t->n_pools, memory_order_relaxed)) return;
  if (!enter && !atomic_load_explicit(&hot.pools_touched, memory_order_relaxed)) return;
  pthread_mutex_lock(&t->mem_mu);
  uint64_t at = enter ? now(t) : exit_at;
  for (size_t i = 0; i < t->n_pools; i++)
    if (!enter || t->pools[i].grew_by) read_level(t, i, at, corr);
  if (!enter) atomic_store_explicit(&hot.pools_touched, false, memory_order_relaxed);
  pthread_mutex_unlock(&t->mem_mu);
}

/* At disarm: growth not yet read (no synchronization since), read now if CUDA still answers. */
static void levels_at_stop(cupti_tracer *t) {
  if (!atomic_load(&t->n_pools)) return;
  pthread_mutex_lock(&t->mem_mu);
  uint64_t at = now(t);
  for (size_t i = 0; i < t->n_pools; i++)
    if (t->pools[i].grew_by) read_level(t, i, at, 0);
  pthread_mutex_unlock(&t->mem_mu);
}

static void pool_call(cupti_tracer *t, const ft__mem_call *c, uint32_t device, uint32_t corr, uint64_t at) {
  uint64_t pool = (uint64_t)(uintptr_t)c->pool, level = 0;
  if (!pool) return;
  pthread_mutex_lock(&t->mem_mu);
  if (c->role == FT__MEM_POOL_NEW) { /* its birth, at 0: CUDA reserves at its first allocation */
    ft__cupti_pool *p = ft__cupti_pool_slot(t, c->device >= 0 ? (uint32_t)c->device : device, pool, true);
    if (p) ft__cupti_pool_to(t, p, 0, at, corr, UINT32_MAX, FT_MEMKIND_DEVICE, FT_MEMORY_RESERVE);
  } else {
    ft__cupti_pool *p = pool_by_handle(t, pool);
    if (!p) p = ft__cupti_pool_slot(t, device, pool, true);
    bool gone = c->role == FT__MEM_POOL_GONE;
    if (p && (gone || pool_level(c->pool, &level)))
      ft__cupti_pool_to(t, p, level, at, corr, UINT32_MAX, FT_MEMKIND_DEVICE, FT_MEMORY_UNRESERVE);
    if (p) atomic_store(&p->grew_by, 0); /* read at the call's entry */
    if (p && gone) {                     /* forgotten: its handle may be a new pool's */
      *p = t->pools[--t->n_pools];
      atomic_fetch_add(&hot.pools_epoch, 1); /* a slot moved: the threads' remembered slots are stale */
    }
  }
  pthread_mutex_unlock(&t->mem_mu);
}

/* An allocation from the pool at (device, handle) at time at: the first since the
 * pool's level was last read marks where growth found at the next reading is placed
 * (just before it). The later ones find the mark set and take no lock: 2 of P7's
 * allocation loop's 2 000 take it. */
static void pool_grew(cupti_tracer *t, uint32_t device, uint64_t handle, uint64_t at, uint32_t corr, uint32_t stream) {
  unsigned gen = atomic_load_explicit(&hot.generation, memory_order_relaxed);
  unsigned epoch = atomic_load_explicit(&hot.pools_epoch, memory_order_acquire);
  ft__cupti_pool *p = me.pool_slot;
  if (p && me.pool_handle == handle && me.pool_device == device && me.pool_gen == gen && me.pool_epoch == epoch &&
      atomic_load(&p->grew_by))
    return;
  pthread_mutex_lock(&t->mem_mu);
  p = ft__cupti_pool_slot(t, device, handle, true);
  if (p && !atomic_load_explicit(&p->grew_by, memory_order_relaxed)) {
    p->grew_corr = corr, p->grew_stream = stream;
    atomic_store(&p->grew_by, at - 1);
  }
  pthread_mutex_unlock(&t->mem_mu);
  me.pool_slot = p, me.pool_handle = handle, me.pool_device = device, me.pool_gen = gen, me.pool_epoch = epoch;
}

static void memory_call(cupti_tracer *t, bool driver, CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
  ft__mem_call c;
  if (!(driver ? ft__cupti_read_driver(cbid, cb->functionParams, &c)
               : ft__cupti_read_runtime(cbid, cb->functionParams, &c)))
    return;
  /* the return value: cudaError_t or CUresult, both 0 for success */
  if (cb->functionReturnValue && *(const int *)cb->functionReturnValue) return;
  if (!me.tid) me.tid = (uint32_t)gettid();
  if (c.role == FT__MEM_SYNC) return levels_at_sync(t, call_time(t, driver), cb->correlationId);
  if (c.role == FT__MEM_STREAM_GONE) {
    atomic_fetch_add(&hot.streams_gone, 1);
    return;
  }
  if (c.role == FT__MEM_POOL_SET) {
    if (c.device >= 0 && c.device < MAX_DEVICES) atomic_store(&current_pool[c.device], NULL);
    return;
  }
  if ((c.role == FT__MEM_ALLOC || c.role == FT__MEM_FREE) && !c.ptr)
    return; /* a 0-byte allocation, or a free of NULL */
  bool pool_role = c.role == FT__MEM_POOL_NEW || c.role == FT__MEM_POOL_TRIM || c.role == FT__MEM_POOL_GONE;
  if ((c.pooled || pool_role) && !atomic_load_explicit(&pool_api_bound, memory_order_acquire))
    pthread_once(&pool_api_once, bind_pool_api);
  if (c.own_device) c.device = vmm_device(c.ptr, c.device, c.role == FT__MEM_ALLOC);
  uint32_t device = c.own_device && c.device >= 0 ? (uint32_t)c.device : device_of(t, cb->context);
  if (pool_role) return pool_call(t, &c, device, cb->correlationId, call_time(t, driver));
  if (c.role != FT__MEM_ALLOC && c.role != FT__MEM_FREE) return;
  uint32_t stream = c.has_stream ? stream_id(t, cb->context, c.stream, c.per_thread) : UINT32_MAX;
  if (c.has_stream && c.role == FT__MEM_FREE) atomic_store_explicit(&hot.pools_touched, true, memory_order_relaxed);
  ft_memory_info m = {.op = c.role == FT__MEM_ALLOC ? FT_MEMORY_ALLOC : FT_MEMORY_FREE,
                      .memory_kind = c.kind,
                      .address = c.ptr,
                      .bytes = c.bytes};
  if (!c.pooled) { /* no shared state: emitted unlocked (the core orders by time) */
    ft__cupti_emit_memory(t, call_time(t, driver), cb->correlationId, device, stream, me.tid, &m);
    return;
  }
  CUmemoryPool pool = c.pool ? c.pool : pool_of_device(device);
  m.pool = (uint64_t)(uintptr_t)pool;
  if (!atomic_load_explicit(&hot.pools_touched, memory_order_relaxed))
    atomic_store_explicit(&hot.pools_touched, true, memory_order_relaxed);
  uint64_t at = call_time(t, driver); /* before the pool's mark is looked at: its growth is placed no later */
  if (pool) pool_grew(t, device, m.pool, at, cb->correlationId, stream);
  ft__cupti_emit_memory(t, at, cb->correlationId, device, stream, me.tid, &m);
}

/* The entry of a synchronization, a trim or a pool's destruction: the growth of the
 * pools allocated from since their last reading (of that pool, for the last two),
 * read while it is still there. */
static void entry_levels(bool driver, CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
  ft__mem_call c;
  if (!(driver ? ft__cupti_read_driver(cbid, cb->functionParams, &c)
               : ft__cupti_read_runtime(cbid, cb->functionParams, &c)) ||
      (c.role != FT__MEM_SYNC && c.role != FT__MEM_POOL_TRIM && c.role != FT__MEM_POOL_GONE))
    return;
  atomic_fetch_add(&hot.in_flight, 1);
  cupti_tracer *t = (cupti_tracer *)ft__tracer_active();
  if (atomic_load(&hot.armed) && t && t->mem_callbacks && atomic_load_explicit(&t->n_pools, memory_order_relaxed)) {
    if (c.role == FT__MEM_SYNC) {
      levels_at_sync(t, 0, cb->correlationId);
    } else {
      pthread_once(&pool_api_once, bind_pool_api);
      pthread_mutex_lock(&t->mem_mu);
      ft__cupti_pool *p = pool_by_handle(t, (uint64_t)(uintptr_t)c.pool);
      if (p && p->grew_by) read_level(t, (size_t)(p - t->pools), now(t), 0);
      pthread_mutex_unlock(&t->mem_mu);
    }
  }
  atomic_fetch_sub(&hot.in_flight, 1);
}

static bool is_profiler_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return (domain == CUPTI_CB_DOMAIN_RUNTIME_API && (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
                                                    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) ||
         (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
          (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart || cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
  (void)userdata;
  const CUpti_CallbackData *cb = data;
  /* not counted in flight: a cudaProfilerStop may stop the session from here */
  if (is_profiler_call(domain, cbid)) return ft__cupti_profiler_call(domain, cbid, cb);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  unsigned gen = atomic_load_explicit(&hot.generation, memory_order_relaxed);
  if (me.generation != gen) me.generation = gen, me.runtime_depth = 0;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    bool nested = driver && me.runtime_depth > 0;
    if (!driver) me.runtime_depth++, me.enter_clock = me.last_clock;
    if (!nested && ft__cupti_entry_call(driver, cbid)) entry_levels(driver, cbid, cb);
    return;
  }
  if (!driver && me.runtime_depth > 0) me.runtime_depth--;
  else if (driver && me.runtime_depth > 0) return; /* the runtime's own driver call: the runtime call says it */
  atomic_fetch_add(&hot.in_flight, 1);
  cupti_tracer *t = (cupti_tracer *)ft__tracer_active();
  if (atomic_load(&hot.armed) && t && t->mem_callbacks) memory_call(t, driver, cbid, cb);
  atomic_fetch_sub(&hot.in_flight, 1);
}

/* Every followed call's callbacks on (stopping at the first refusal, its text in err)
 * or off (all of them, whatever CUPTI answers). */
static ft_status enable_calls(cupti_tracer *t, CUpti_SubscriberHandle sub, uint32_t on, char *err, size_t len) {
  ft_status st = FT_OK;
  for (size_t i = 0; i < ft__cupti_n_runtime_calls && (!st || !on); i++)
    st = ft__cuptiEnableCallback(&t->api, err, len, on, sub, CUPTI_CB_DOMAIN_RUNTIME_API, ft__cupti_runtime_calls[i]);
  for (size_t i = 0; i < ft__cupti_n_driver_calls && (!st || !on); i++)
    st = ft__cuptiEnableCallback(&t->api, err, len, on, sub, CUPTI_CB_DOMAIN_DRIVER_API, ft__cupti_driver_calls[i]);
  return st;
}

/* Memory from callbacks unless FLAGTRACE_CUPTI_MEMORY=records (P7: callbacks 1.05-1.07x on an
 * H100, records' floor 1.18x). CUPTI's one subscriber slot is held only while a session runs
 * (let go at disarm); where another client holds it, records. */
bool ft__cupti_memory_arm(cupti_tracer *t) {
  const char *how = getenv("FLAGTRACE_CUPTI_MEMORY");
  if (how && *how && strcmp(how, "callbacks") && strcmp(how, "records"))
    FT__WARN("FLAGTRACE_CUPTI_MEMORY='%s' is not callbacks or records: callbacks are used", how);
  if (how && !strcmp(how, "records")) return false;
  pool_api_handle = t->api.handle;
  CUpti_SubscriberHandle sub;
  ft_status st = ft__cupti_subscriber(t, &sub);
  if (!st) st = enable_calls(t, sub, 1, t->base.err, sizeof t->base.err);
  if (st) {
    FT__LOG("memory from activity records: no callbacks on the allocation calls (%s)", t->base.err);
    char ignored[sizeof t->base.err];
    if (sub) enable_calls(t, sub, 0, ignored, sizeof ignored);
    if (sub && !t->range_only) ft__cupti_unsubscribe(t); /* not held for nothing */
    return false;
  }
  atomic_fetch_add(&hot.generation, 1);
  /* a cudaDeviceSetMemPool between sessions was not seen: asked again */
  for (size_t i = 0; i < MAX_DEVICES; i++) atomic_store(&current_pool[i], NULL);
  t->mem_callbacks = true;
  atomic_store(&hot.keep_clock, t->timed && (t->base.kinds & FT_KIND_BIT(FT_EVENT_RUNTIME)));
  atomic_store(&hot.armed, true);
  FT__LOG("memory from callbacks on %zu runtime and %zu driver calls", ft__cupti_n_runtime_calls,
          ft__cupti_n_driver_calls);
  return true;
}

void ft__cupti_memory_disarm(cupti_tracer *t) {
  if (!t->mem_callbacks) return;
  atomic_store(&hot.armed, false);
  atomic_store(&hot.keep_clock, false);
  CUpti_SubscriberHandle sub;
  pthread_mutex_lock(&subscriber_mu);
  sub = subscriber;
  pthread_mutex_unlock(&subscriber_mu);
  char ignored[sizeof t->base.err];
  if (sub) (void)enable_calls(t, sub, 0, ignored, sizeof ignored);
  /* the slot free between sessions (kineto, in a process that imports flagtrace.torch,
   * may subscribe then), unless it watches cudaProfilerStart/Stop for --capture-range */
  if (!t->range_only) ft__cupti_unsubscribe(t);
  while (atomic_load(&hot.in_flight)) sched_yield(); /* a call's event is in the session or not at all */
  levels_at_stop(t);
  stage_drain(t, true); /* the threads' blocks are gone: the next arming's generation makes them stale */
  t->mem_callbacks = false;
}
#else
ft_status ft__cupti_subscriber(cupti_tracer *t, CUpti_SubscriberHandle *out) {
  *out = NULL;
  snprintf(t->base.err, sizeof t->base.err, "MCPTI's callback ids are not known to flagtrace");
  return FT_EUNAVAILABLE;
}
void ft__cupti_unsubscribe(cupti_tracer *t) { (void)t; }
bool ft__cupti_memory_arm(cupti_tracer *t) {
  (void)t;
  return false;
}
void ft__cupti_memory_disarm(cupti_tracer *t) { (void)t; }
void ft__cupti_memory_flush(cupti_tracer *t) { (void)t; }
static bool stage_event(uint64_t at, uint32_t corr, uint32_t device, uint32_t stream, uint32_t tid,
                        const ft_memory_info *m) {
  (void)at, (void)corr, (void)device, (void)stream, (void)tid, (void)m;
  return false;
}
#endif
