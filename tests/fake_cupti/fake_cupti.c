/* A fake libcupti for CI: real CUPTI 13 record layouts, scripted by the test.
 * Built again with FAKE_MCPTI as a fake MetaX libmcpti (mcpti* symbols, MCPTI's
 * record sizes, its own clock and API-id namespace, corruption on request); with
 * FAKE_CUPTI_PPU=1 in the environment it also does what PPU's CUPTI does (a
 * driver record beside every runtime record, under the same correlation id). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_result.h>
#include <cupti_version.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cupti.h"

#define EXPORT __attribute__((visibility("default")))

#ifdef FAKE_MCPTI
/* the same functions under MetaX's names */
#define cuptiGetVersion mcptiGetVersion
#define cuptiGetResultString mcptiGetResultString
#define cuptiActivityRegisterCallbacks mcptiActivityRegisterCallbacks
#define cuptiActivityEnable mcptiActivityEnable
#define cuptiActivityDisable mcptiActivityDisable
#define cuptiActivityFlushAll mcptiActivityFlushAll
#define cuptiActivityGetNextRecord mcptiActivityGetNextRecord
#define cuptiActivityGetNumDroppedRecords mcptiActivityGetNumDroppedRecords
#define cuptiActivityPushExternalCorrelationId mcptiActivityPushExternalCorrelationId
#define cuptiActivityPopExternalCorrelationId mcptiActivityPopExternalCorrelationId
#define cuptiActivitySetAttribute mcptiActivitySetAttribute
#define cuptiGetTimestamp mcptiGetTimestamp
#define cuptiActivityEnableRuntimeApi mcptiActivityEnableRuntimeApi
#define cuptiActivityEnableDriverApi mcptiActivityEnableDriverApi
#define cuptiSubscribe mcptiSubscribe
#define cuptiEnableCallback mcptiEnableCallback
#define cuptiUnsubscribe mcptiUnsubscribe
#define cuptiGetDeviceId mcptiGetDeviceId
#define cuptiGetStreamIdEx mcptiGetStreamIdEx
/* MCPTI's clock: a device counter, here 1.7e9 s behind CLOCK_REALTIME */
#define VENDOR_CLOCK_BEHIND 1700000000000000000ull
/* MCPTI's own API ids: nothing like CUPTI's (211 = cudaLaunchKernel there) */
#define LAUNCH_CBID 7u
static int in_completion;   /* the tracer is inside our buffer callback */
static int api_name_misuse; /* mcptiActivityGetApiName called from there */
static size_t corrupt_next; /* bytes of garbage before the next device record */
#else
#define VENDOR_CLOCK_BEHIND 0ull
#define LAUNCH_CBID 211u
#endif

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* Set by the tracer's thread while the program's threads launch (record --on-demand
 * arms from its control thread): atomic, as CUPTI's own state is thread-safe. */
static _Atomic(CUpti_BuffersCallbackRequestFunc) on_request;
static _Atomic(CUpti_BuffersCallbackCompleteFunc) on_complete;
static _Atomic uint32_t enabled; /* bit per kind below 32, EXTERNAL_CORRELATION is 39 */
static atomic_int ext_enabled, sync_enabled;
/* MEMORY2 and MEMORY_POOL (kinds 49, 50), and whether either was ever enabled */
static atomic_int mem_enabled, pool_enabled, mem_ever;
EXPORT int fake_cupti_memory_ever_enabled(void) { return atomic_load(&mem_ever); }
static uint32_t next_corr = 1;
static size_t pending_dropped;

/* The two buffers CUPTI would keep: API records (per thread) and device records. */
typedef struct fbuf {
  uint8_t *p;
  size_t size, used;
} fbuf;
static fbuf api_buf, dev_buf;

/* Every push so far, for the tests' check of which attribution the tracer chose. */
static atomic_int ext_pushes;
EXPORT int fake_cupti_ext_pushes(void) { return atomic_load(&ext_pushes); }

/* Per-thread external correlation stack for our kinds. */
static __thread uint64_t ext_stack[8][64];
static __thread size_t ext_depth[8];

/* cuptiActivityRegisterTimestampCallback's clock: every timestamp after it is its */
static _Atomic(CUpti_TimestampCallbackFunc) user_clock;

static uint64_t now_ns(void) {
  CUpti_TimestampCallbackFunc clock = atomic_load(&user_clock);
  if (clock) return clock();
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  /* FAKE_CUPTI_OWN_CLOCK_BEHIND_NS: CUPTI's own clock that far behind ours, so a
   * timestamp taken without our clock callback shows (after a cuptiFinalize) */
  const char *behind = getenv("FAKE_CUPTI_OWN_CLOCK_BEHIND_NS");
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - VENDOR_CLOCK_BEHIND -
         (behind ? strtoull(behind, NULL, 10) : 0);
}

static size_t record_size(CUpti_ActivityKind k) {
#ifdef FAKE_MCPTI
  /* MACA 3.x's record sizes (vendor-apis.md): CUPTI's prefixes, other lengths */
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) return 200;
  if (k == CUPTI_ACTIVITY_KIND_MEMCPY || k == CUPTI_ACTIVITY_KIND_MEMSET) return 88;
#endif
  switch (k) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
  case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
  case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
  case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
  case CUPTI_ACTIVITY_KIND_RUNTIME:
  case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
  /* CUDA 13's records for these kinds (cupti_activity.h names Memory4 and MemoryPool3) */
  case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
  case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return sizeof(CUpti_ActivityMemoryPool3);
  default: return 0;
  }
}

static __thread int completing; /* inside the tracer's buffer callback, mu held */

static void complete(fbuf *b) {
  if (!b->p) return;
  uint8_t *p = b->p;
  size_t size = b->size, used = b->used;
  memset(b, 0, sizeof *b);
#ifdef FAKE_MCPTI
  in_completion++;
  on_complete(NULL, 0, p, size, used);
  in_completion--;
#else
  completing++;
  on_complete(NULL, 0, p, size, used);
  completing--;
#endif
}

/* Room for n bytes in b, requesting a buffer from the tracer. */
static void *raw_slot(fbuf *b, size_t n) {
  if (b->p && b->size - b->used < n) complete(b);
  if (!b->p) {
    size_t max = 0;
    on_request(&b->p, &b->size, &max);
    if (!b->p) abort(); /* the tracer must never hand out NULL */
    b->used = 0;
  }
  void *r = b->p + b->used;
  memset(r, 0, n);
  b->used += n;
  return r;
}

/* Room for one record of kind k. */
static void *slot(fbuf *b, CUpti_ActivityKind k) {
#ifdef FAKE_MCPTI
  if (b == &dev_buf && corrupt_next) { /* what MCPTI 3.8 can leave between records */
    uint32_t *junk = raw_slot(b, corrupt_next);
    junk[0] = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; /* a kernel kind on a record that is no kernel */
    junk[1] = 0xdeadbeef;
    corrupt_next = 0;
  }
#endif
  return raw_slot(b, (record_size(k) + 7) & ~(size_t)7);
}

static int is_enabled(CUpti_ActivityKind k) {
  if (k == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) return sync_enabled;
  if (k == CUPTI_ACTIVITY_KIND_MEMORY2) return mem_enabled;
  if (k == CUPTI_ACTIVITY_KIND_MEMORY_POOL) return pool_enabled;
  return k == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION ? ext_enabled : (int)((enabled >> k) & 1);
}

/* Per-API switches (cuptiActivityEnableRuntimeApi / ...DriverApi): bit set = off. */
static _Atomic uint8_t api_off[2][1024];

static CUptiResult api_switch(int driver, CUpti_CallbackId cbid, uint8_t enable) {
  if (getenv("FAKE_CUPTI_NO_API_SWITCH")) return CUPTI_ERROR_NOT_SUPPORTED;
  if (cbid >= 1024) return CUPTI_ERROR_INVALID_PARAMETER;
  api_off[driver][cbid] = !enable;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  return api_switch(0, cbid, enable);
}
EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  return api_switch(1, cbid, enable);
}

/* Driver API records for the libcuda queries (at the end of this file), as CUPTI writes them for any caller
 * while driver activity is on: the tracer's own occupancy queries included. Made
 * inside the tracer's buffer callback (mu held there), they wait in `deferred`
 * until the API buffer is next written. */
static CUpti_ActivityAPI deferred[64];
static size_t n_deferred;

static void query_record(uint32_t cbid, uint64_t t0) {
  if (!is_enabled(CUPTI_ACTIVITY_KIND_DRIVER) || api_off[1][cbid]) return;
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = cbid;
  a.start = t0;
  a.end = now_ns();
  a.processId = (uint32_t)getpid();
  a.threadId = (uint32_t)(uintptr_t)pthread_self();
  a.correlationId = 0;
  if (!completing) pthread_mutex_lock(&mu);
  if (n_deferred < 64) deferred[n_deferred++] = a;
  if (!completing) pthread_mutex_unlock(&mu);
}

/* Under mu: the deferred query records into the API buffer. */
static void flush_deferred(void) {
  for (size_t i = 0; i < n_deferred; i++) {
    CUpti_ActivityAPI *a = slot(&api_buf, CUPTI_ACTIVITY_KIND_DRIVER);
    *a = deferred[i];
  }
  n_deferred = 0;
}

/* The fields both copy records (Memcpy6, MemcpyPtoP4) share, from the launch l. */
#define FILL_COPY(c, record_kind, copy, src, dst) \
  do {                                            \
    (c)->kind = (record_kind);                    \
    (c)->copyKind = (copy);                       \
    (c)->srcKind = (src);                         \
    (c)->dstKind = (dst);                         \
    (c)->bytes = l->bytes;                        \
    (c)->start = start;                           \
    (c)->end = start + dur;                       \
    (c)->deviceId = l->device;                    \
    (c)->contextId = 1 + l->device;               \
    (c)->streamId = l->stream ? l->stream : 7;    \
    (c)->correlationId = corr;                    \
  } while (0)

#include "fake_callbacks.h"

EXPORT uint32_t fake_cupti_launch(const fake_launch *l) {
  pthread_mutex_lock(&mu);
  flush_deferred();
  fake_current_pool(l);
  uint32_t corr = next_corr++;
  /* an allocation or pool call, or a sync, at its entry and (below) its exit */
  fake_call call, nested;
  int calls = fake_memory_call(l, &call);
  if (calls) deliver(&call, l->device, corr, CUPTI_API_ENTER);
  fake_apply(l); /* CUDA's pools as the call leaves them (records: whenever) */
#ifndef FAKE_MCPTI
  /* CUDA 13's runtime launch calls cuKernelGetName under an id of its own, measured
   * on the H200: an op's launches are 2 ids apart even when that call is not recorded */
  if (l->kind == FAKE_KERNEL && !l->driver) next_corr++;
#endif
  uint64_t t0 = now_ns(); /* as CUPTI: on the calling thread, inside the call */
  CUpti_ActivityKind api_kind = l->driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  uint32_t cbid = l->cbid ? l->cbid : l->driver ? 307 : l->kind == FAKE_SYNC ? 131 : LAUNCH_CBID;
  uint64_t t_end = t0 + 500;
  CUpti_ActivityAPI *a = NULL;
  if (!l->no_runtime && is_enabled(api_kind) && !(cbid < 1024 && api_off[l->driver ? 1 : 0][cbid])) {
    for (int kind = 0; kind < 8; kind++) {
      if (!ext_depth[kind] || !ext_enabled) continue;
      CUpti_ActivityExternalCorrelation *x = slot(&api_buf, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
      x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
      x->externalKind = (CUpti_ExternalCorrelationKind)kind;
      x->externalId = ext_stack[kind][ext_depth[kind] - 1];
      x->correlationId = corr;
    }
    a = slot(&api_buf, api_kind);
    a->kind = api_kind;
    a->cbid = cbid;
    a->start = t0;
    a->end = t0 + 500;
    a->processId = (uint32_t)getpid();
    /* what CUPTI 13 reports, measured on the H200: pthread_self()'s low 32 bits */
    a->threadId = (uint32_t)(uintptr_t)pthread_self();
    a->correlationId = corr;
  }
  if (calls) {
    /* As CUPTI does (measured on an H100: a stamp taken in the exit callback was 0.2 us
     * after the record's end): the call's end taken on the calling thread (on our clock
     * when registered) before its exit callbacks, so a clock read in the callback lands
     * after the record; 500 ns after its start at least (busy: the end is a real stamp). */
    while ((t_end = now_ns()) < t0 + 500) {
    }
    int ppu = !l->driver && getenv("FAKE_CUPTI_PPU") && ppu_driver_form(&call, &nested);
    if (ppu) deliver(&nested, l->device, corr, CUPTI_API_ENTER);
    if (ppu) deliver(&nested, l->device, corr, CUPTI_API_EXIT);
    deliver(&call, l->device, corr, CUPTI_API_EXIT);
    if (a) a->end = t_end;
  }
  if (a) {
    /* PPU: the runtime call's driver record too, under the same correlation id */
    if (!l->driver && getenv("FAKE_CUPTI_PPU") && is_enabled(CUPTI_ACTIVITY_KIND_DRIVER)) {
      CUpti_ActivityAPI runtime = *a; /* slot may hand a's buffer over */
      CUpti_ActivityAPI *d = slot(&api_buf, CUPTI_ACTIVITY_KIND_DRIVER);
      *d = runtime;
      d->kind = CUPTI_ACTIVITY_KIND_DRIVER;
      d->cbid = 307; /* cuLaunchKernel */
      d->start = t0 + 100;
      d->end = t0 + 400;
    }
  }
  int n = l->device_records > 0 ? l->device_records : 1;
  /* no_timing: "timing unavailable", start = end = 0 on the device records */
  uint64_t start = l->no_timing ? 0 : t0 + 1000 + (uint64_t)l->start_offset_ns;
  uint64_t dur = l->no_timing ? 0 : l->dur_ns;
  for (int i = 0; i < n && l->kind != FAKE_RUNTIME_ONLY; i++, start += l->dur_ns + 100) {
    if (l->kind == FAKE_KERNEL && is_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
      CUpti_ActivityKernel10 *k = slot(&dev_buf, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k->start = start;
      k->end = start + dur;
      k->deviceId = l->device;
      k->contextId = 1 + l->device;
      k->streamId = l->stream ? l->stream : 7;
      k->gridX = l->grid[0], k->gridY = l->grid[1], k->gridZ = l->grid[2];
      k->blockX = l->block[0], k->blockY = l->block[1], k->blockZ = l->block[2];
      k->registersPerThread = (uint16_t)l->regs;
      k->staticSharedMemory = l->static_smem;
      k->dynamicSharedMemory = l->dynamic_smem;
      k->correlationId = corr;
      k->name = l->name;
    } else if (l->kind == FAKE_MEMCPY && is_enabled(CUPTI_ACTIVITY_KIND_MEMCPY)) {
      CUpti_ActivityMemcpy6 *c = slot(&dev_buf, CUPTI_ACTIVITY_KIND_MEMCPY);
      FILL_COPY(c, CUPTI_ACTIVITY_KIND_MEMCPY, l->copy_kind, l->src_kind, l->dst_kind);
    } else if (l->kind == FAKE_P2P && is_enabled(CUPTI_ACTIVITY_KIND_MEMCPY2)) {
      CUpti_ActivityMemcpyPtoP4 *c = slot(&dev_buf, CUPTI_ACTIVITY_KIND_MEMCPY2);
      FILL_COPY(c, CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
      c->srcDeviceId = l->src_device;
      c->srcContextId = 1 + l->src_device;
      c->dstDeviceId = l->dst_device;
      c->dstContextId = 1 + l->dst_device;
    } else if (l->kind == FAKE_SYNC && is_enabled(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) {
      /* as CUPTI 13 reports them: on the API call's own thread and time, in the device buffer */
      CUpti_ActivitySynchronization2 *y = slot(&dev_buf, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
      y->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
      y->type = (CUpti_ActivitySynchronizationType)l->sync_type;
      y->start = t0 + 50;
      y->end = t0 + 450;
      y->correlationId = corr;
      y->contextId = 1 + l->device;
      y->streamId = l->stream ? l->stream : UINT32_MAX;
      y->cudaEventId = l->event_id ? l->event_id : UINT32_MAX;
      y->cudaEventSyncId = UINT64_MAX;
    } else if (l->kind == FAKE_MEMORY && is_enabled(CUPTI_ACTIVITY_KIND_MEMORY2)) {
      CUpti_ActivityMemory4 *m = slot(&dev_buf, CUPTI_ACTIVITY_KIND_MEMORY2);
      m->kind = CUPTI_ACTIVITY_KIND_MEMORY2;
      m->memoryOperationType = (CUpti_ActivityMemoryOperationType)l->mem_op;
      m->memoryKind = (CUpti_ActivityMemoryKind)l->memory_kind;
      m->correlationId = corr;
      m->address = l->address;
      m->bytes = l->bytes;
      m->timestamp = l->no_timing ? 0 : t0 + 200;
      m->PC = 0x401000;
      m->processId = (uint32_t)getpid();
      m->deviceId = l->device;
      m->contextId = 1 + l->device;
      m->streamId = l->stream ? l->stream : CUPTI_INVALID_STREAM_ID;
      m->isAsync = l->stream != 0;
      m->memoryPoolConfig.memoryPoolType = (CUpti_ActivityMemoryPoolType)l->pool_type;
      m->memoryPoolConfig.address = l->pool_address;
      m->memoryPoolConfig.releaseThreshold = 0;
      m->memoryPoolConfig.pool.size = l->pool_size;
      m->memoryPoolConfig.utilizedSize = l->pool_used;
    } else if (l->kind == FAKE_MEMORY_POOL && is_enabled(CUPTI_ACTIVITY_KIND_MEMORY_POOL)) {
      CUpti_ActivityMemoryPool3 *p = slot(&dev_buf, CUPTI_ACTIVITY_KIND_MEMORY_POOL);
      p->kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
      p->memoryPoolOperationType = (CUpti_ActivityMemoryPoolOperationType)l->mem_op;
      p->memoryPoolType = (CUpti_ActivityMemoryPoolType)l->pool_type;
      p->correlationId = corr;
      p->processId = (uint32_t)getpid();
      p->deviceId = l->device;
      p->minBytesToKeep = l->min_keep;
      p->address = l->pool_address;
      p->size = l->pool_size;
      p->timestamp = l->no_timing ? 0 : t0 + 200;
      p->utilizedSize = l->pool_used;
    } else if (l->kind == FAKE_MEMSET && is_enabled(CUPTI_ACTIVITY_KIND_MEMSET)) {
      CUpti_ActivityMemset4 *s = slot(&dev_buf, CUPTI_ACTIVITY_KIND_MEMSET);
      s->kind = CUPTI_ACTIVITY_KIND_MEMSET;
      s->bytes = l->bytes;
      s->start = start;
      s->end = start + dur;
      s->contextId = 1;
      s->streamId = l->stream ? l->stream : 7;
      s->correlationId = corr;
      s->memoryKind = l->memory_kind;
    }
  }
  pthread_mutex_unlock(&mu);
  /* the call's recorded end (t0 + 500) is behind us before it returns, as a real
   * call's: a registered clock is the caller's, which brackets calls with it */
  if (atomic_load(&user_clock))
    while (now_ns() < t_end) {
    }
  return corr;
}

EXPORT void fake_cupti_drop(size_t n) {
  pthread_mutex_lock(&mu);
  pending_dropped += n;
  pthread_mutex_unlock(&mu);
}

/* ---- the CUPTI API surface the tracer binds ---- */

EXPORT CUptiResult cuptiGetVersion(uint32_t *version) {
  const char *v = getenv("FAKE_CUPTI_VERSION");
  *version = v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "FAKE_CUPTI_ERROR";
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                  CUpti_BuffersCallbackCompleteFunc done) {
  if (!req || !done) return CUPTI_ERROR_INVALID_PARAMETER;
  on_request = req;
  on_complete = done;
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (getenv("FAKE_CUPTI_FAIL_ENABLE")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!on_request) return CUPTI_ERROR_INVALID_OPERATION;
  /* FAKE_CUPTI_NO_MEMORY=1: a library without memory records (both refused);
   * =pool: MEMORY2 taken, MEMORY_POOL refused */
  const char *no_mem = getenv("FAKE_CUPTI_NO_MEMORY");
  if (no_mem &&
      ((kind == CUPTI_ACTIVITY_KIND_MEMORY2 && strcmp(no_mem, "pool")) || kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL))
    return CUPTI_ERROR_NOT_SUPPORTED;
  if (kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) ext_enabled = 1;
  else if (kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) sync_enabled = 1;
  else if (kind == CUPTI_ACTIVITY_KIND_MEMORY2) mem_enabled = mem_ever = 1;
  else if (kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) pool_enabled = mem_ever = 1;
  else if ((unsigned)kind < 32) enabled |= 1u << kind;
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) ext_enabled = 0;
  else if (kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) sync_enabled = 0;
  else if (kind == CUPTI_ACTIVITY_KIND_MEMORY2) mem_enabled = 0;
  else if (kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) pool_enabled = 0;
  else if ((unsigned)kind < 32) enabled &= ~(1u << kind);
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&mu);
  /* Device buffer first: its records refer to correlations whose external ids
   * arrive in the API buffer afterwards, as can happen with real buffers. */
  complete(&dev_buf);
  flush_deferred(); /* queries the tracer made while decoding the device buffer */
  complete(&api_buf);
  pthread_mutex_unlock(&mu);
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record) {
  uint8_t *p;
#ifdef FAKE_MCPTI
  /* MCPTI 3.8's stale iterator: after an external-correlation record, that record again */
  if (*record && (*record)->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) return CUPTI_SUCCESS;
#endif
  if (!*record) {
    p = buffer;
  } else {
    size_t n = (record_size((*record)->kind) + 7) & ~(size_t)7;
    if (!n) return CUPTI_ERROR_INVALID_KIND;
    p = (uint8_t *)*record + n;
  }
  if ((size_t)(p - buffer) >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (CUpti_Activity *)p;
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped) {
  (void)ctx, (void)stream;
  /* called from inside the completion callback, under mu held by the completer */
  *dropped = pending_dropped;
  pending_dropped = 0;
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  if ((unsigned)kind >= 8 || ext_depth[kind] == 64) return CUPTI_ERROR_INVALID_PARAMETER;
  ext_stack[kind][ext_depth[kind]++] = id;
  atomic_fetch_add(&ext_pushes, 1);
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *last) {
  /* Like CANN's MSPTI: a NULL out-pointer is rejected and the stack left alone. */
  if (!last || (unsigned)kind >= 8 || !ext_depth[kind]) return CUPTI_ERROR_INVALID_PARAMETER;
  *last = ext_stack[kind][--ext_depth[kind]];
  return CUPTI_SUCCESS;
}

static size_t device_buffer_size;

EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *value_size, void *value) {
  if (!value_size || !value) return CUPTI_ERROR_INVALID_PARAMETER;
  if (attr == CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE && *value_size == sizeof(size_t)) {
    device_buffer_size = *(size_t *)value;
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_NOT_SUPPORTED;
}

/* FAKE_CUPTI_NO_CLOCK_CALLBACK=1: a library that refuses it (the tracer then keeps
 * external correlation) */
EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc clock) {
  if (!clock) return CUPTI_ERROR_INVALID_PARAMETER;
  if (getenv("FAKE_CUPTI_NO_CLOCK_CALLBACK")) return CUPTI_ERROR_NOT_SUPPORTED;
  atomic_store(&user_clock, clock);
  return CUPTI_SUCCESS;
}

/* cuptiFinalize: CUPTI detached, its clock callback, buffer callbacks and subscriber
 * forgotten, as the real one does; counted for the tests. */
static atomic_int finalized;
EXPORT int fake_cupti_finalized(void) { return atomic_load(&finalized); }
EXPORT CUptiResult cuptiFinalize(void) {
  atomic_store(&user_clock, NULL);
  on_request = NULL;
  on_complete = NULL;
  forget_subscriber();
  atomic_fetch_add(&finalized, 1);
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *timestamp) {
  *timestamp = now_ns();
  return CUPTI_SUCCESS;
}

/* ---- the libcuda queries (an H200's properties) ---- */

/* FAKE_CUPTI_DEVICES=N: N identical devices (default 1) */
static int n_devices(void) {
  const char *v = getenv("FAKE_CUPTI_DEVICES");
  return v && atoi(v) > 0 ? atoi(v) : 1;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  query_record(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, now_ns());
  *count = n_devices();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  query_record(CUPTI_DRIVER_TRACE_CBID_cuDeviceGet, now_ns());
  if (ordinal < 0 || ordinal >= n_devices()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
  if (device < 0 || device >= n_devices() || len < 1) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "NVIDIA H200 (fake %d)", device);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
  if (device < 0 || device >= n_devices()) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = 150109880320ull;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice device) {
  query_record(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, now_ns());
  if (device < 0 || device >= n_devices()) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 49152; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 233472; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 1024; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

#ifdef FAKE_MCPTI
/* ---- MetaX only ---- */

/* Names in MCPTI's own id namespace; unknown ids are an error, as a real lookup may be. */
EXPORT CUptiResult mcptiActivityGetApiName(CUpti_ActivityKind kind, uint32_t id, const char **name) {
  if (in_completion) { /* the real one can deadlock here (design.md §9) */
    api_name_misuse++;
    return CUPTI_ERROR_INVALID_OPERATION;
  }
  static const struct {
    CUpti_ActivityKind kind;
    uint32_t id;
    const char *name;
  } known[] = {{CUPTI_ACTIVITY_KIND_RUNTIME, LAUNCH_CBID, "mcLaunchKernel"},
               {CUPTI_ACTIVITY_KIND_RUNTIME, 12, "mcMemcpyAsync"},
               {CUPTI_ACTIVITY_KIND_RUNTIME, 20, "mcMemsetAsync"},
               {CUPTI_ACTIVITY_KIND_DRIVER, 307, "mcModuleLaunchKernel"}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i].kind == kind && known[i].id == id) {
      *name = known[i].name;
      return CUPTI_SUCCESS;
    }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

EXPORT int fake_mcpti_api_name_misuse(void) { return api_name_misuse; }

/* n bytes (a multiple of 8, at least 8) of garbage before the next device record. */
EXPORT void fake_mcpti_corrupt(size_t n) {
  pthread_mutex_lock(&mu);
  corrupt_next = n;
  pthread_mutex_unlock(&mu);
}
#endif
