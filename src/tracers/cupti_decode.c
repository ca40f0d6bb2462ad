/* The CUPTI tracer's decoding (also PPU's, and MCPTI's with FT_MCPTI): API names and
 * activity records into the sink's events. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_tracer.h"
#ifdef FT_MCPTI
#include "mcpti_walk.h"
#endif

/* ---- names ---- */

static const char *const runtime_names[] = {
#include "generated/cupti_runtime_cbid.inc"
};

static const char *const driver_names[] = {
#include "generated/cupti_driver_cbid.inc"
};

/* Generic labels for ids the tables lack: the numeric cbid stays in the args. */
const char *ft__cupti_api_name(bool driver, uint32_t cbid) {
  const char *const *table = driver ? driver_names : runtime_names;
  size_t n = driver ? sizeof driver_names / sizeof driver_names[0] : sizeof runtime_names / sizeof runtime_names[0];
  if (cbid < n && table[cbid]) return table[cbid];
  return driver ? "cudaDriver" : "cudaRuntime";
}

#ifdef FT_MCPTI
/* MCPTI's callback ids are its own namespace (not CUPTI's table above): names come
 * from mcptiActivityGetApiName, called only at stop, after the flush. Cached per id. */
enum { MC_NAME_IDS = 4096 };
static char *mc_names[2][MC_NAME_IDS];
static bool mc_tried[2][MC_NAME_IDS];

static const char *vendor_api_name(cupti_tracer *t, bool driver, uint32_t cbid) {
  const char *generic = driver ? "mcDriver" : "mcRuntime"; /* the numeric cbid stays in the args */
  bool cacheable = cbid < MC_NAME_IDS;
  if (cacheable && mc_tried[driver][cbid]) return mc_names[driver][cbid] ? mc_names[driver][cbid] : generic;
  const char *name = NULL;
  if (!t->get_api_name ||
      t->get_api_name(driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME, cbid, &name) !=
          CUPTI_SUCCESS ||
      !name || !*name)
    name = NULL;
  if (!cacheable) return name ? name : generic;
  mc_tried[driver][cbid] = true;
  mc_names[driver][cbid] = name ? strdup(name) : NULL;
  return mc_names[driver][cbid] ? mc_names[driver][cbid] : generic;
}
#else
static const char *vendor_api_name(cupti_tracer *t, bool driver, uint32_t cbid) {
  (void)t;
  return ft__cupti_api_name(driver, cbid);
}
#endif

static const char *memcpy_kind(uint8_t k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
  default: return "<unknown>";
  }
}

static const char *memory_kind(unsigned k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN: return "Unknown";
  case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
  case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
  case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "Device Static";
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "Managed Static";
  default: return "Unrecognized";
  }
}

/* ---- decoding ---- */

static uint64_t ts(const cupti_tracer *t, uint64_t v) { return v - (uint64_t)t->clock_offset; }

/* A record's [start, end] on CLOCK_REALTIME; false when it has no timing (both 0,
 * the vendors' "timing unavailable" sentinel) or, on MCPTI, an implausible one. */
static bool span(cupti_tracer *t, uint64_t start, uint64_t end, uint64_t *s, uint64_t *e) {
  if (!start && !end) {
    t->dropped_untimed++;
    return false;
  }
  if (t->have_clock && !ft__clock_map_span(&t->clock, start, end, s, e)) {
    t->dropped_untimed++;
    return false;
  }
  if (t->have_clock) return true;
  *s = ts(t, start);
  *e = ts(t, end);
  return true;
}

static void md_bandwidth(mdbuf *m, uint64_t bytes, uint64_t start, uint64_t end) {
  if (end <= start) {
    md_add(m, "memory bandwidth (GB/s)", "N/A"); /* quoted by the writer: not a literal */
    return;
  }
  char b[32];
  b[ft__fmt_double((double)bytes / (double)(end - start), b)] = '\0';
  md_add(m, "memory bandwidth (GB/s)", "%s", b);
}

/* Demangled kernel names, cached by CUPTI's name pointer (stable per function). */
typedef struct name_cache {
  const char **keys;
  char **vals;
  size_t cap, len;
} name_cache;
static name_cache names;

static const char *kernel_name(const char *raw) {
  if (!raw) return "<unnamed kernel>";
  if (raw[0] != '_' || raw[1] != 'Z') return raw; /* not mangled: kept as is */
  size_t h = ((uintptr_t)raw >> 4) * 0x9E3779B97F4A7C15ull;
  if (names.cap) {
    for (size_t i = h & (names.cap - 1);; i = (i + 1) & (names.cap - 1)) {
      if (!names.keys[i]) break;
      if (names.keys[i] == raw) return names.vals[i];
    }
  }
  char *dm = ft__demangle(raw);
  if (!dm) return raw;
  if ((names.len + 1) * 2 > names.cap) {
    size_t ncap = names.cap ? names.cap * 2 : 256;
    const char **nk = calloc(ncap, sizeof *nk);
    char **nv = calloc(ncap, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      free(dm);
      return raw;
    }
    for (size_t i = 0; i < names.cap; i++) {
      if (!names.keys[i]) continue;
      size_t j = (((uintptr_t)names.keys[i] >> 4) * 0x9E3779B97F4A7C15ull) & (ncap - 1);
      while (nk[j]) j = (j + 1) & (ncap - 1);
      nk[j] = names.keys[i];
      nv[j] = names.vals[i];
    }
    free(names.keys);
    free(names.vals);
    names.keys = nk;
    names.vals = nv;
    names.cap = ncap;
  }
  size_t i = h & (names.cap - 1);
  while (names.keys[i]) i = (i + 1) & (names.cap - 1);
  names.keys[i] = raw;
  names.vals[i] = dm;
  names.len++;
  return dm;
}

/* The slot of a context already noted, or t->n_ctx. */
static size_t context_slot(const cupti_tracer *t, uint32_t ctx) {
  size_t i = 0;
  while (i < t->n_ctx && t->ctx_ids[i] != ctx) i++;
  return i;
}

/* Notes a context's device (under decode_mu, or at stop). */
static void note_context(cupti_tracer *t, uint32_t ctx, uint32_t device) {
  if (context_slot(t, ctx) == t->n_ctx && t->n_ctx < MAX_DEVICES)
    t->ctx_ids[t->n_ctx] = ctx, t->ctx_devices[t->n_ctx++] = device;
}

static void decode_kernel(cupti_tracer *t, const CUpti_ActivityKernel10 *k) {
  uint64_t s, e;
  if (!span(t, k->start, k->end, &s, &e)) return;
  ft_device_event ev = {.kind = FT_EVENT_KERNEL,
                        .start_ns = s,
                        .end_ns = e,
                        .correlation_id = k->correlationId,
                        .device = k->deviceId,
                        .stream = k->streamId,
                        .name = kernel_name(k->name)};
  struct kernel_md_key key;
  memset(&key, 0, sizeof key); /* compared bytewise: padding zeroed, fields set one by one */
  key.queued = k->queued;
  key.context = k->contextId;
  key.device = k->deviceId;
  key.regs = k->registersPerThread;
  key.static_smem = k->staticSharedMemory;
  key.dynamic_smem = k->dynamicSharedMemory;
  key.grid[0] = k->gridX, key.grid[1] = k->gridY, key.grid[2] = k->gridZ;
  key.block[0] = k->blockX, key.block[1] = k->blockY, key.block[2] = k->blockZ;
  struct kernel_md *last = &t->last_kernel;
  if (!last->m && !(last->m = malloc(sizeof *last->m))) { /* out of memory: the event without its arguments */
    ft__tracer_emit(&t->base, &ev, NULL, 0);
    return;
  }
  /* NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): both keys memset first, padding is 0 */
  if (last->valid && !memcmp(&last->key, &key, sizeof key)) {
    ft__tracer_emit(&t->base, &ev, last->m->kv, last->m->n);
    return;
  }
  last->key = key;
  last->valid = true;
  note_context(t, k->contextId, k->deviceId); /* the context is part of the key */
  mdbuf *m = last->m;
  *m = (mdbuf){.n = 0, .used = 0};
  /* kineto's order and formats (the torch-cuda reference trace) */
  md_add(m, "queued", "%llu", (unsigned long long)k->queued);
  md_add(m, "context", "%u", k->contextId);
  md_add(m, "registers per thread", "%u", (unsigned)k->registersPerThread);
  md_add(m, "shared memory", "%d", k->staticSharedMemory + k->dynamicSharedMemory);
  const ft__occ_device *d = ft__cupti_device_props(t, k->deviceId);
  if (d) {
    /* float arithmetic and %f printing, as kineto's std::to_string(float) */
    int64_t blocks = (int64_t)k->gridX * k->gridY * k->gridZ;
    int block_size = k->blockX * k->blockY * k->blockZ;
    float bps = (float)blocks / (float)d->sm_count;
    float wps = bps * (float)block_size / (float)d->warp_size;
    md_add(m, "blocks per SM", "%f", (double)bps);
    md_add(m, "warps per SM", "%f", (double)wps);
    int active_blocks = ft__occ_active_blocks(d, block_size, k->registersPerThread, (size_t)k->staticSharedMemory,
                                              (size_t)k->dynamicSharedMemory);
    if (active_blocks >= 0) {
      float b = (float)active_blocks < bps ? (float)active_blocks : bps;
      float occ = b * (float)block_size / (float)d->max_threads_per_sm;
      md_add(m, "est. achieved occupancy %", "%d", (int)(0.5 + occ * 100.0));
    }
  }
  md_add(m, "grid", "[%d, %d, %d]", k->gridX, k->gridY, k->gridZ);
  md_add(m, "block", "[%d, %d, %d]", k->blockX, k->blockY, k->blockZ);
  ft__tracer_emit(&t->base, &ev, m->kv, m->n);
}

/* What both copy record kinds (MEMCPY's Memcpy6, MEMCPY2's PtoP4) share: kineto's
 * name and the event on the device and stream that ran the copy; false when the
 * record has no timing. name needs 96 bytes. */
#define COPY_EVENT(t, c, name, ev)                                                                                    \
  copy_event((t), (c)->copyKind, (c)->srcKind, (c)->dstKind, (c)->start, (c)->end, (c)->correlationId, (c)->deviceId, \
             (c)->streamId, (name), (ev))
static bool copy_event(cupti_tracer *t, uint8_t copy_kind, uint8_t src, uint8_t dst, uint64_t start, uint64_t end,
                       uint32_t corr, uint32_t device, uint32_t stream, char *name, ft_device_event *ev) {
  snprintf(name, 96, "Memcpy %s (%s -> %s)", memcpy_kind(copy_kind), memory_kind(src), memory_kind(dst));
  uint64_t s, e;
  if (!span(t, start, end, &s, &e)) return false;
  *ev = (ft_device_event){.kind = FT_EVENT_MEMCPY,
                          .start_ns = s,
                          .end_ns = e,
                          .correlation_id = corr,
                          .device = device,
                          .stream = stream,
                          .name = name};
  return true;
}

static void decode_memcpy(cupti_tracer *t, const CUpti_ActivityMemcpy6 *c) {
  char name[96];
  ft_device_event ev;
  if (!COPY_EVENT(t, c, name, &ev)) return;
  note_context(t, c->contextId, c->deviceId);
  mdbuf m = {.n = 0, .used = 0};
  md_add_u64(&m, "context", c->contextId);
  md_add_u64(&m, "bytes", c->bytes);
  md_bandwidth(&m, c->bytes, c->start, c->end);
  ft__tracer_emit(&t->base, &ev, m.kv, m.n);
}

/* Peer-to-peer copies arrive only under CUPTI_ACTIVITY_KIND_MEMCPY2 (measured on two
 * H200s), with kineto's keys in its order. */
static void decode_p2p(cupti_tracer *t, const CUpti_ActivityMemcpyPtoP4 *c) {
  char name[96];
  ft_device_event ev;
  if (!COPY_EVENT(t, c, name, &ev)) return;
  mdbuf m = {.n = 0, .used = 0};
  md_add(&m, "fromDevice", "%u", c->srcDeviceId);
  md_add(&m, "inDevice", "%u", c->deviceId);
  md_add(&m, "toDevice", "%u", c->dstDeviceId);
  md_add(&m, "fromContext", "%u", c->srcContextId);
  md_add(&m, "inContext", "%u", c->contextId);
  md_add(&m, "toContext", "%u", c->dstContextId);
  md_add(&m, "bytes", "%llu", (unsigned long long)c->bytes);
  md_bandwidth(&m, c->bytes, c->start, c->end);
  ft__tracer_emit(&t->base, &ev, m.kv, m.n);
}

static void decode_memset(cupti_tracer *t, const CUpti_ActivityMemset4 *s) {
  char name[64];
  snprintf(name, sizeof name, "Memset (%s)", memory_kind(s->memoryKind));
  uint64_t st, en;
  if (!span(t, s->start, s->end, &st, &en)) return;
  ft_device_event ev = {.kind = FT_EVENT_MEMSET,
                        .start_ns = st,
                        .end_ns = en,
                        .correlation_id = s->correlationId,
                        .device = s->deviceId,
                        .stream = s->streamId,
                        .name = name};
  note_context(t, s->contextId, s->deviceId);
  mdbuf m = {.n = 0, .used = 0};
  md_add_u64(&m, "context", s->contextId);
  md_add_u64(&m, "bytes", s->bytes);
  md_bandwidth(&m, s->bytes, s->start, s->end);
  ft__tracer_emit(&t->base, &ev, m.kv, m.n);
}

static void decode_api(cupti_tracer *t, const CUpti_ActivityAPI *a, bool driver) {
  if (ft__cupti_api_left_out(t, driver, a->cbid)) {
    /* not a row, but a call that may have launched work (a driver-API copy): its
     * span still attributes that work when attribution is by time (design.md §2) */
    if (t->timed && a->correlationId && a->start && a->end >= a->start &&
        !(driver && ft__cupti_is_own_query(a->cbid, a->threadId, a->start, a->end)))
      ft__tracer_call_span(&t->base, a->correlationId, ft__thread_os_tid(a->threadId), ts(t, a->start), ts(t, a->end));
    return;
  }
  uint64_t s, e;
  if (!span(t, a->start, a->end, &s, &e)) return;
  if (driver && ft__cupti_is_own_query(a->cbid, a->threadId, a->start, a->end)) return; /* CUPTI's clock, as noted */
  ft_device_event ev = {.kind = driver ? FT_EVENT_DRIVER : FT_EVENT_RUNTIME,
                        .start_ns = s,
                        .end_ns = e,
                        .correlation_id = a->correlationId,
                        .thread_id = ft__thread_os_tid(a->threadId),
                        .name = vendor_api_name(t, driver, a->cbid)};
  mdbuf m = {.n = 0, .used = 0};
  md_add_u64(&m, "cbid", a->cbid);
  ft__tracer_emit(&t->base, &ev, m.kv, m.n);
}

#ifndef FT_MCPTI /* MCPTI's sync record is not in our facts */
/* kineto's contextIdtoDeviceId: 0 for a context no kernel or copy named yet. */
static uint32_t context_device(const cupti_tracer *t, uint32_t ctx) {
  size_t i = context_slot(t, ctx);
  return i < t->n_ctx ? t->ctx_devices[i] : 0;
}

/* kineto's syncTypeString */
static const char *sync_kind(CUpti_ActivitySynchronizationType k) {
  switch (k) {
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
  default: return "Unknown Sync";
  }
}

/* A cuda_sync row as torch-cuda writes it (kineto's CudaSyncActivity, measured on the
 * H200): name and cuda_sync_kind the sync's kind; for event syncs and stream waits
 * the event's recording stream and correlation, which kineto knows only from CUDA
 * event records that torch never enables (so -1, as there); stream -1 where the sync
 * names none; the device from the context. */
static void decode_sync(cupti_tracer *t, const CUpti_ActivitySynchronization2 *y) {
  uint64_t s, e;
  if (!span(t, y->start, y->end, &s, &e)) return;
  const char *kind = sync_kind(y->type);
  uint32_t device = context_device(t, y->contextId);
  ft_device_event ev = {.kind = FT_EVENT_SYNC,
                        .start_ns = s,
                        .end_ns = e,
                        .correlation_id = y->correlationId,
                        .device = device,
                        .stream = y->streamId,
                        .name = kind};
  mdbuf m = {.n = 0, .used = 0};
  md_add(&m, "cuda_sync_kind", "%s", kind);
  if (y->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
      y->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT) {
    md_add(&m, "wait_on_stream", "-1");
    md_add(&m, "wait_on_cuda_event_record_corr_id", "-1");
    md_add(&m, "wait_on_cuda_event_id", "%d", (int32_t)y->cudaEventId);
  }
  md_add(&m, "stream", "%d", (int32_t)y->streamId);
  md_add_u64(&m, "correlation", y->correlationId);
  md_add_u64(&m, "device", device);
  md_add_u64(&m, "context", y->contextId);
  ft__tracer_emit(&t->base, &ev, m.kv, m.n);
}
#endif

#ifndef FT_MCPTI /* MCPTI's memory records are not in our facts: never enabled there */
/* ---- device memory (issue 51; docs/memory.md, "Capture: CUDA") ---- */

/* CUPTI_ACTIVITY_KIND_MEMORY_POOL's record is CUDA 13's MemoryPool3: MemoryPool2 and
 * two fields after it. Only the shared prefix is read, so a library writing
 * MemoryPool2 (CUDA 12's) decodes the same; CUPTI's own iterator steps over either. */
#define FT__SAME_FIELD(f) offsetof(CUpti_ActivityMemoryPool2, f) == offsetof(CUpti_ActivityMemoryPool3, f)
_Static_assert(FT__SAME_FIELD(memoryPoolOperationType) && FT__SAME_FIELD(memoryPoolType) &&
                   FT__SAME_FIELD(correlationId) && FT__SAME_FIELD(deviceId) && FT__SAME_FIELD(address) &&
                   FT__SAME_FIELD(size) && FT__SAME_FIELD(timestamp),
               "MemoryPool2 is not a prefix of MemoryPool3");
#undef FT__SAME_FIELD

static ft_memory_kind memory_kind_of(uint32_t k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return FT_MEMKIND_DEVICE;
  case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return FT_MEMKIND_PINNED;
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return FT_MEMKIND_MANAGED;
  case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return FT_MEMKIND_PAGEABLE;
  case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return FT_MEMKIND_OTHER;
  default: return FT_MEMKIND_UNKNOWN;
  }
}

/* An allocation or a free (cudaMalloc, cudaFree, cudaMallocAsync, ...). One from a
 * local pool also says the pool's size (memoryPoolConfig.pool.size, beside its
 * utilizedSize): a pool that grew for it reserves the growth first, one that shrank
 * (a release at synchronization, a trim) unreserves it after. */
static void decode_memory(cupti_tracer *t, const CUpti_ActivityMemory4 *r) {
  bool alloc = r->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  if (!alloc && r->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
    t->memory_invalid++;
    return;
  }
  uint64_t at, end;
  if (!span(t, r->timestamp, r->timestamp, &at, &end)) return;
  CUpti_ActivityMemoryPoolType type = r->memoryPoolConfig.memoryPoolType;
  uint64_t pool = type != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID ? r->memoryPoolConfig.address : 0;
  ft_memory_kind kind = memory_kind_of(r->memoryKind);
  /* pool.size is the pool's size only for a local pool (an imported one's is a process id) */
  ft__cupti_pool *p =
      pool && type == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL ? ft__cupti_pool_slot(t, r->deviceId, pool, true) : NULL;
  uint64_t size = r->memoryPoolConfig.pool.size;
  if (p) /* the reading of pool sizes is checked on hardware with this (tests/gpu/check_mem_pool.py) */
    FT__LOG("memory record: op %d pool %#llx size %llu utilized %llu bytes %llu", (int)r->memoryOperationType,
            (unsigned long long)pool, (unsigned long long)size, (unsigned long long)r->memoryPoolConfig.utilizedSize,
            (unsigned long long)r->bytes);
  if (p && size > p->level) ft__cupti_pool_to(t, p, size, at, r->correlationId, r->streamId, kind, 0);
  ft_memory_info m = {.op = alloc ? FT_MEMORY_ALLOC : FT_MEMORY_FREE,
                      .memory_kind = kind,
                      .address = r->address,
                      .bytes = r->bytes,
                      .pool = pool};
  ft__cupti_emit_memory(t, at, r->correlationId, r->deviceId, r->streamId, 0, &m);
  if (p && size < p->level) ft__cupti_pool_to(t, p, size, at, r->correlationId, r->streamId, kind, 0);
}

/* A pool created, trimmed or destroyed (docs/memory.md: how its size is read). Its
 * reserved bytes go to the record's size (created, trimmed) or to 0 (destroyed), from
 * what was last reported for it: the totals never lose or keep a pool's bytes by a
 * disagreement between records. A pool not followed (an imported one, or past
 * MAX_POOLS) reserves and unreserves its record's size as it stands. */
static void decode_pool(cupti_tracer *t, const CUpti_ActivityMemoryPool2 *r) {
  CUpti_ActivityMemoryPoolOperationType op = r->memoryPoolOperationType;
  if (op != CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED &&
      op != CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED &&
      op != CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED) {
    t->memory_invalid++;
    return;
  }
  /* rare (a pool's life): the raw numbers, for checking the reading on hardware */
  FT__LOG("pool record: op %d type %d device %u address %#llx size %llu minBytesToKeep %llu utilizedSize %llu", (int)op,
          (int)r->memoryPoolType, r->deviceId, (unsigned long long)r->address, (unsigned long long)r->size,
          (unsigned long long)r->minBytesToKeep, (unsigned long long)r->utilizedSize);
  uint64_t at, end;
  if (!span(t, r->timestamp, r->timestamp, &at, &end)) return;
  bool local = r->memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  uint64_t size = local ? r->size : 0; /* valid for a local pool only */
  ft_memory_op natural =
      op == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED ? FT_MEMORY_RESERVE : FT_MEMORY_UNRESERVE;
  ft__cupti_pool *p = local ? ft__cupti_pool_slot(t, r->deviceId, r->address, true) : NULL;
  if (!p) {
    ft_memory_info m = {.op = natural,
                        .memory_kind = FT_MEMKIND_DEVICE,
                        .address = r->address,
                        .bytes = op == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED ? 0 : size,
                        .pool = r->address};
    ft__cupti_emit_memory(t, at, r->correlationId, r->deviceId, UINT32_MAX, 0, &m);
    return;
  }
  bool destroyed = op == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED;
  /* A created pool's record already says the size it will reserve (32 MiB on an H100),
   * but CUDA's cudaMemPoolAttrReservedMemCurrent is 0 until its first allocation
   * (measured: docs/memory.md); that allocation's record carries the size and
   * reserves it. */
  bool created = op == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
  ft__cupti_pool_to(t, p, destroyed || created ? 0 : size, at, r->correlationId, UINT32_MAX, FT_MEMKIND_DEVICE,
                    natural);
  if (destroyed) *p = t->pools[--t->n_pools]; /* forgotten: its address may be a new pool's */
}
#endif

static void decode_record(cupti_tracer *t, const CUpti_Activity *rec) {
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: decode_kernel(t, (const CUpti_ActivityKernel10 *)rec); break;
  case CUPTI_ACTIVITY_KIND_MEMCPY: decode_memcpy(t, (const CUpti_ActivityMemcpy6 *)rec); break;
  case CUPTI_ACTIVITY_KIND_MEMCPY2: decode_p2p(t, (const CUpti_ActivityMemcpyPtoP4 *)rec); break;
  case CUPTI_ACTIVITY_KIND_MEMSET: decode_memset(t, (const CUpti_ActivityMemset4 *)rec); break;
  case CUPTI_ACTIVITY_KIND_RUNTIME: decode_api(t, (const CUpti_ActivityAPI *)rec, false); break;
  case CUPTI_ACTIVITY_KIND_DRIVER: decode_api(t, (const CUpti_ActivityAPI *)rec, true); break;
#ifndef FT_MCPTI /* MCPTI's record for it is not in our facts */
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: decode_sync(t, (const CUpti_ActivitySynchronization2 *)rec); break;
  case CUPTI_ACTIVITY_KIND_MEMORY2: decode_memory(t, (const CUpti_ActivityMemory4 *)rec); break;
  case CUPTI_ACTIVITY_KIND_MEMORY_POOL: decode_pool(t, (const CUpti_ActivityMemoryPool2 *)rec); break;
#endif
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
    const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)rec;
    if (x->externalKind == FT_EXT_KIND) ft__tracer_external(&t->base, x->correlationId, x->externalId);
    break;
  }
  default: FT__LOG("ignoring record kind %d", (int)rec->kind);
  }
}

#ifdef FT_MCPTI
static void decode_one(void *t, const uint8_t *rec, size_t size) {
  (void)size;
  decode_record(t, (const CUpti_Activity *)rec);
}

void ft__cupti_decode_buffer(cupti_tracer *t, uint8_t *buf, size_t valid) {
  ft__mc_walk(buf, valid, decode_one, t, &t->resyncs, &t->skipped_bytes);
}
#else
void ft__cupti_decode_buffer(cupti_tracer *t, uint8_t *buf, size_t valid) {
  /* Ends on CUPTI's own end signal; bounded by the most records the valid bytes
   * can physically hold, so a vendor with small, numerous records (PPU) is never
   * cut short by a flat count (design.md §1). */
  size_t bound = valid / sizeof(uint32_t) + 1;
  CUpti_Activity *rec = NULL;
  pthread_mutex_lock(&t->decode_mu);
  for (size_t n = 0; n < bound; n++) {
    CUptiResult r = t->api.cuptiActivityGetNextRecord(buf, valid, &rec);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (r != CUPTI_SUCCESS) {
      const char *msg = "?";
      t->api.cuptiGetResultString(r, &msg);
      FT__WARN("reading an activity buffer failed after %zu records (%s); the rest of it is lost", n, msg ? msg : "?");
      break;
    }
    decode_record(t, rec);
  }
  pthread_mutex_unlock(&t->decode_mu);
}
#endif
