/* NVIDIA CUPTI tracer (also PPU's CUPTI, and MetaX's MCPTI when built with FT_MCPTI):
 * arms activity at session start and decodes its records. */
#define _GNU_SOURCE
#ifdef FT_MCPTI
#define FT__TRACER_NAME "mcpti"
#else
#define FT__TRACER_NAME "cupti"
#endif
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_occupancy.h"
#include "cupti_shim.h"
#ifdef FT_MCPTI
#include "mcpti_walk.h"
#endif
#include "flagtrace/device_tracer.h"
#include "tracer_support.h"

/* The layouts decoded below are CUDA 13's (CUpti_ActivityKernel10, Memcpy6,
 * Memset4, API, ExternalCorrelation). CUPTI changes record versions only with a
 * major release, so any CUPTI 13.x reads them; anything else must not be decoded. */
#define FT_CUPTI_COMPILED_MAJOR (CUPTI_API_VERSION / 10000)

/* Our pushes use their own external-correlation kind so that they never mix with
 * kineto's (CUSTOM0 for ops, CUSTOM1 for user annotations). */
#define FT_EXT_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2

/* Where a completed buffer goes, chosen here once. CUPTI's are decoded as they
 * complete. MCPTI's are held until stop and decoded there: its clock is mapped from
 * the start and stop samples, and its API-name lookup can deadlock inside the buffer
 * callback (design.md §9). */
#ifdef FT_MCPTI
enum { HOLD_UNTIL_STOP = 1 };
#else
enum { HOLD_UNTIL_STOP = 0 };
#endif

enum {
  DEFAULT_BUF_SIZE = 8 * 1024 * 1024, /* 8 MiB: 2 M records measured with 0 dropped */
  POOL_INITIAL = 8,
  MAX_DEVICES = 64,
};

/* Buffer sizes can be made small on purpose (FLAGTRACE_CUPTI_BUFFER_BYTES for our
 * host buffers, FLAGTRACE_CUPTI_DEVICE_BUFFER_BYTES for CUPTI's device-side one) to
 * check that records CUPTI cannot keep are counted as dropped, never lost silently. */
static size_t env_size(const char *name, size_t fallback) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end || x < 4096 || x > (1ull << 34)) {
    ft__warn("%s=%s is not a size in bytes (4096 .. 16 GiB); using %zu", name, v, fallback);
    return fallback;
  }
  return (size_t)x;
}

typedef struct cupti_tracer {
  ft__tracer_base base; /* first: loaded, path, why, err, sink, armed, kinds, dropped */
  ft__cupti_api api;
  uint32_t version;
  ft__cuda_api cuda;
  int cuda_state; /* 0 not tried, 1 bound, -1 absent */
  ft__occ_device devs[MAX_DEVICES];
  struct mdbuf *props[MAX_DEVICES]; /* deviceProperties, filled at the first ask */
  signed char dev_state[MAX_DEVICES]; /* 0 unknown, 1 known, -1 unavailable */
  bool all_apis; /* FLAGTRACE_CUPTI_ALL_APIS: no API row left out */
  bool range_only;            /* watching cudaProfilerStart: kinds enabled there, not at start */
  atomic_bool range_enabled;  /* the first cudaProfilerStart enabled them */
  int64_t clock_offset; /* subtracted from CUPTI timestamps */
  uint64_t dropped_untimed; /* records without usable timing (start = end = 0, or implausible): counted as dropped */
  /* MCPTI (HOLD_UNTIL_STOP): its own clock, sampled against CLOCK_REALTIME at start
   * and stop; its API-name lookup; the completed buffers, decoded at stop */
  ft__clock_map clock;
  bool have_clock;
  CUptiResult (*get_api_name)(CUpti_ActivityKind kind, uint32_t id, const char **name);
  ft__held held; /* under decode_mu */
  uint64_t resyncs, skipped_bytes; /* malformed stretches the walker stepped over */
  pthread_mutex_t decode_mu;
} cupti_tracer;

/* ---- buffers (the core's pool) and the process-global state CUPTI's callbacks see ---- */


/* ---- thread ids ----
 * CUPTI's API records carry the low 32 bits of pthread_self(), measured on the
 * H200 (1389465600 where gettid() said 745); the trace's CPU rows use OS thread
 * ids. Each thread that pushes a correlation id (or starts the session) registers
 * its pair with the core (ft__thread_register), and runtime records are translated. */

/* ---- names ---- */

static const char *const runtime_names[] = {
#include "generated/cupti_runtime_cbid.inc"
};

static const char *const driver_names[] = {
#include "generated/cupti_driver_cbid.inc"
};

/* Generic labels for ids the tables lack: the numeric cbid stays in the args. */
static const char *api_name(bool driver, uint32_t cbid) {
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
  return api_name(driver, cbid);
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

/* ---- device properties (occupancy), from the process's own libcuda ---- */

static void bind_cuda(cupti_tracer *t) {
  if (t->cuda_state) return;
  t->cuda_state = -1;
#ifdef FT_MCPTI
  /* MetaX's device-property API is not in our facts: the occupancy fields are
   * left out there, never guessed. */
  FT__LOG("no device-property queries on MetaX: occupancy fields are left out");
  return;
#endif
  /* Only a libcuda the program already loaded: we never initialize CUDA. The
   * CUPTI library itself is also asked, so a test double can stand in. */
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  char why[256];
  if (h && ft__cuda_load_symbols(&t->cuda, h, why, sizeof why)) {
    t->cuda_state = 1;
    return;
  }
  if (ft__cuda_load_symbols(&t->cuda, t->api.handle, why, sizeof why)) t->cuda_state = 1;
  else FT__LOG("no libcuda in the process (%s): occupancy fields are left out", why);
}

/* Our own libcuda queries are driver calls CUPTI records like the program's when
 * driver activity is on (occupancy needs them while decoding). Each batch notes
 * its thread (as CUPTI numbers it) and span on CUPTI's own clock, and decode_api
 * drops the query records that fall inside one, even with FLAGTRACE_CUPTI_ALL_APIS=1. */
enum { OWN_QUERY_WINDOWS = 256 };
static pthread_mutex_t own_mu = PTHREAD_MUTEX_INITIALIZER;
static struct own_query {
  uint32_t tid;
  uint64_t lo, hi;
} own_queries[OWN_QUERY_WINDOWS];
static size_t n_own_queries;

static uint64_t cupti_now(const cupti_tracer *t) {
  uint64_t v = 0;
  return t->api.cuptiGetTimestamp && t->api.cuptiGetTimestamp(&v) == CUPTI_SUCCESS ? v : 0;
}

static uint64_t own_query_begin(const cupti_tracer *t) { return cupti_now(t); }

static void own_query_end(const cupti_tracer *t, uint64_t lo) {
  uint64_t hi = cupti_now(t);
  if (!lo || !hi) return; /* no clock to tell them apart by */
  pthread_mutex_lock(&own_mu);
  /* a few per device and session; the oldest are overwritten past the cap */
  own_queries[n_own_queries++ % OWN_QUERY_WINDOWS] = (struct own_query){(uint32_t)(uintptr_t)pthread_self(), lo, hi};
  pthread_mutex_unlock(&own_mu);
}

static bool is_own_query(uint32_t cbid, uint32_t cupti_tid, uint64_t start, uint64_t end) {
  if (cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceGet && cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount &&
      cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute && cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceGetName &&
      cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceTotalMem_v2)
    return false;
  bool own = false;
  pthread_mutex_lock(&own_mu);
  size_t n = n_own_queries < OWN_QUERY_WINDOWS ? n_own_queries : OWN_QUERY_WINDOWS;
  for (size_t i = 0; i < n && !own; i++)
    own = own_queries[i].tid == cupti_tid && start >= own_queries[i].lo && end <= own_queries[i].hi;
  pthread_mutex_unlock(&own_mu);
  return own;
}

static const ft__occ_device *query_occupancy(cupti_tracer *t, uint32_t id);

static const ft__occ_device *device_props(cupti_tracer *t, uint32_t id) {
  if (id >= MAX_DEVICES) return NULL;
  if (t->dev_state[id]) return t->dev_state[id] > 0 ? &t->devs[id] : NULL;
  t->dev_state[id] = -1;
  bind_cuda(t);
  if (t->cuda_state < 0) return NULL;
  uint64_t q0 = own_query_begin(t);
  const ft__occ_device *d = query_occupancy(t, id);
  own_query_end(t, q0);
  return d;
}

static const ft__occ_device *query_occupancy(cupti_tracer *t, uint32_t id) {
  CUdevice dev;
  if (t->cuda.cuDeviceGet(&dev, (int)id) != CUDA_SUCCESS) return NULL;
  ft__occ_device *d = &t->devs[id];
  int smem_block = 0, smem_sm = 0, reserved = 0;
  struct { int *out; CUdevice_attribute a; } q[] = {
      {&d->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&d->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&d->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&d->max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {&d->regs_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&d->regs_per_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
      {&d->warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {&smem_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&smem_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
      {&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
    if (t->cuda.cuDeviceGetAttribute(q[i].out, q[i].a, dev) != CUDA_SUCCESS) return NULL;
  d->smem_per_block = (size_t)smem_block;
  d->smem_per_sm = (size_t)smem_sm;
  d->reserved_smem_per_block = (size_t)reserved;
  if (d->sm_count <= 0 || d->warp_size <= 0 || d->max_threads_per_sm <= 0) return NULL;
  t->dev_state[id] = 1;
  FT__LOG("device %u: sm_%d%d, %d SMs", id, d->major, d->minor, d->sm_count);
  return d;
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

/* A small formatting arena for one event's metadata values. */
struct mdbuf {
  ft_kv kv[16];
  size_t n;
  char text[512];
  size_t used;
};
typedef struct mdbuf mdbuf;

static void md_add(mdbuf *m, const char *key, const char *fmt, ...) FT__PRINTF(3, 4);
static void md_add(mdbuf *m, const char *key, const char *fmt, ...) {
  if (m->n >= sizeof m->kv / sizeof m->kv[0] || m->used >= sizeof m->text) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(m->text + m->used, sizeof m->text - m->used, fmt, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= sizeof m->text - m->used) return;
  m->kv[m->n].key = key;
  m->kv[m->n++].value = m->text + m->used;
  m->used += (size_t)w + 1;
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

static void decode_kernel(cupti_tracer *t, const CUpti_ActivityKernel10 *k) {
  uint64_t s, e;
  if (!span(t, k->start, k->end, &s, &e)) return;
  ft_device_event ev = {.kind = FT_EVENT_KERNEL, .start_ns = s, .end_ns = e,
                        .correlation_id = k->correlationId, .device = k->deviceId,
                        .stream = k->streamId, .name = kernel_name(k->name)};
  mdbuf m = {.n = 0, .used = 0};
  /* kineto's order and formats (the torch-cuda reference trace) */
  md_add(&m, "queued", "%llu", (unsigned long long)k->queued);
  md_add(&m, "context", "%u", k->contextId);
  md_add(&m, "registers per thread", "%u", (unsigned)k->registersPerThread);
  md_add(&m, "shared memory", "%d", k->staticSharedMemory + k->dynamicSharedMemory);
  const ft__occ_device *d = device_props(t, k->deviceId);
  if (d) {
    /* float arithmetic and %f printing, as kineto's std::to_string(float) */
    int64_t blocks = (int64_t)k->gridX * k->gridY * k->gridZ;
    int block_size = k->blockX * k->blockY * k->blockZ;
    float bps = (float)blocks / (float)d->sm_count;
    float wps = bps * (float)block_size / (float)d->warp_size;
    md_add(&m, "blocks per SM", "%f", (double)bps);
    md_add(&m, "warps per SM", "%f", (double)wps);
    int active_blocks = ft__occ_active_blocks(d, block_size, k->registersPerThread,
                                              (size_t)k->staticSharedMemory, (size_t)k->dynamicSharedMemory);
    if (active_blocks >= 0) {
      float b = (float)active_blocks < bps ? (float)active_blocks : bps;
      float occ = b * (float)block_size / (float)d->max_threads_per_sm;
      md_add(&m, "est. achieved occupancy %", "%d", (int)(0.5 + occ * 100.0));
    }
  }
  md_add(&m, "grid", "[%d, %d, %d]", k->gridX, k->gridY, k->gridZ);
  md_add(&m, "block", "[%d, %d, %d]", k->blockX, k->blockY, k->blockZ);
  ft__tracer_emit(&t->base, &ev, m.kv, m.n);
}

/* What both copy record kinds (MEMCPY's Memcpy6, MEMCPY2's PtoP4) share: kineto's
 * name and the event on the device and stream that ran the copy; false when the
 * record has no timing. name needs 96 bytes. */
#define COPY_EVENT(t, c, name, ev)                                                                         \
  copy_event((t), (c)->copyKind, (c)->srcKind, (c)->dstKind, (c)->start, (c)->end, (c)->correlationId,   \
             (c)->deviceId, (c)->streamId, (name), (ev))
static bool copy_event(cupti_tracer *t, uint8_t copy_kind, uint8_t src, uint8_t dst, uint64_t start, uint64_t end,
                       uint32_t corr, uint32_t device, uint32_t stream, char *name, ft_device_event *ev) {
  snprintf(name, 96, "Memcpy %s (%s -> %s)", memcpy_kind(copy_kind), memory_kind(src), memory_kind(dst));
  uint64_t s, e;
  if (!span(t, start, end, &s, &e)) return false;
  *ev = (ft_device_event){.kind = FT_EVENT_MEMCPY, .start_ns = s, .end_ns = e, .correlation_id = corr,
                          .device = device, .stream = stream, .name = name};
  return true;
}

static void decode_memcpy(cupti_tracer *t, const CUpti_ActivityMemcpy6 *c) {
  char name[96];
  ft_device_event ev;
  if (!COPY_EVENT(t, c, name, &ev)) return;
  mdbuf m = {.n = 0, .used = 0};
  md_add(&m, "context", "%u", c->contextId);
  md_add(&m, "bytes", "%llu", (unsigned long long)c->bytes);
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
  ft_device_event ev = {.kind = FT_EVENT_MEMSET, .start_ns = st, .end_ns = en,
                        .correlation_id = s->correlationId, .device = s->deviceId,
                        .stream = s->streamId, .name = name};
  mdbuf m = {.n = 0, .used = 0};
  md_add(&m, "context", "%u", s->contextId);
  md_add(&m, "bytes", "%llu", (unsigned long long)s->bytes);
  md_bandwidth(&m, s->bytes, s->start, s->end);
  ft__tracer_emit(&t->base, &ev, m.kv, m.n);
}

static bool api_left_out(const cupti_tracer *t, bool driver, uint32_t cbid);

static void decode_api(cupti_tracer *t, const CUpti_ActivityAPI *a, bool driver) {
  if (api_left_out(t, driver, a->cbid)) return;
  uint64_t s, e;
  if (!span(t, a->start, a->end, &s, &e)) return;
  if (driver && is_own_query(a->cbid, a->threadId, a->start, a->end)) return; /* CUPTI's clock, as noted */
  ft_device_event ev = {.kind = driver ? FT_EVENT_DRIVER : FT_EVENT_RUNTIME, .start_ns = s, .end_ns = e,
                        .correlation_id = a->correlationId, .thread_id = ft__thread_os_tid(a->threadId),
                        .name = vendor_api_name(t, driver, a->cbid)};
  mdbuf m = {.n = 0, .used = 0};
  md_add(&m, "cbid", "%u", (unsigned)a->cbid);
  ft__tracer_emit(&t->base, &ev, m.kv, m.n);
}

static void decode_record(cupti_tracer *t, const CUpti_Activity *rec) {
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    decode_kernel(t, (const CUpti_ActivityKernel10 *)rec);
    break;
  case CUPTI_ACTIVITY_KIND_MEMCPY:
    decode_memcpy(t, (const CUpti_ActivityMemcpy6 *)rec);
    break;
  case CUPTI_ACTIVITY_KIND_MEMCPY2:
    decode_p2p(t, (const CUpti_ActivityMemcpyPtoP4 *)rec);
    break;
  case CUPTI_ACTIVITY_KIND_MEMSET:
    decode_memset(t, (const CUpti_ActivityMemset4 *)rec);
    break;
  case CUPTI_ACTIVITY_KIND_RUNTIME:
    decode_api(t, (const CUpti_ActivityAPI *)rec, false);
    break;
  case CUPTI_ACTIVITY_KIND_DRIVER:
    decode_api(t, (const CUpti_ActivityAPI *)rec, true);
    break;
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
    const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)rec;
    if (x->externalKind == FT_EXT_KIND) ft__tracer_external(&t->base, x->correlationId, x->externalId);
    break;
  }
  default:
    FT__LOG("ignoring record kind %d", (int)rec->kind);
  }
}

#ifdef FT_MCPTI
static void decode_one(void *t, const uint8_t *rec, size_t size) {
  (void)size;
  decode_record(t, (const CUpti_Activity *)rec);
}

static void decode_buffer(cupti_tracer *t, uint8_t *buf, size_t valid) {
  ft__mc_walk(buf, valid, decode_one, t, &t->resyncs, &t->skipped_bytes);
}
#else
static void decode_buffer(cupti_tracer *t, uint8_t *buf, size_t valid) {
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
      FT__WARN("reading an activity buffer failed after %zu records (%s); the rest of it is lost", n,
               msg ? msg : "?");
      break;
    }
    decode_record(t, rec);
  }
  pthread_mutex_unlock(&t->decode_mu);
}
#endif

static bool read_clock(void *ctx, uint64_t *v) {
  cupti_tracer *t = ctx;
  return !ft__cuptiGetTimestamp(&t->api, t->base.err, sizeof t->base.err, v);
}

static void decode_held(void *ctx, uint8_t *buf, size_t valid) { decode_buffer(ctx, buf, valid); }

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)size;
  cupti_tracer *t = (cupti_tracer *)ft__tracer_active();
  if (t && HOLD_UNTIL_STOP) {
    ft__held_keep(&t->held, &t->decode_mu, buf, valid, FT__TRACER_NAME); /* to the pool after decoding at stop */
    buf = NULL;
  } else if (t && buf && valid) {
    decode_buffer(t, buf, valid);
  }
  if (t) {
    size_t dropped = 0;
    if (t->api.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
      atomic_fetch_add(&t->base.dropped, dropped);
      FT__LOG("%zu records dropped (context %p, stream %u)", dropped, (void *)ctx, stream);
    }
  }
  ft__pool_put(buf);
}

/* ---- library lookup ---- */

static int load_cupti(void *api, void *handle, char *why, size_t len) {
  return ft__cupti_load_symbols(api, handle, why, len);
}

#ifndef FT_MCPTI
/* The CUPTI copy shipped beside an already loaded torch (site-packages/nvidia/cu13). */
static int find_torch_dir(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  const char *p = info->dlpi_name ? strstr(info->dlpi_name, "/torch/lib/libtorch") : NULL;
  if (!p) return 0;
  char *out = data;
  snprintf(out, PATH_MAX, "%.*s/nvidia/cu13/lib/libcupti.so.13", (int)(p - info->dlpi_name), info->dlpi_name);
  return 1;
}

#endif

#ifdef FT_MCPTI
static bool open_cupti(cupti_tracer *t) {
  /* MACA's usual install (MACA_PATH, default /opt/maca); the path is assumed, not
   * verified on MetaX hardware (README) */
  const char *maca = getenv("MACA_PATH");
  char in_maca[PATH_MAX] = "";
  if (maca && *maca) snprintf(in_maca, sizeof in_maca, "%s/lib/libmcpti.so", maca);
  const char *const candidates[] = {"libmcpti.so", in_maca, "/opt/maca/lib/libmcpti.so"};
  bool ok = ft__open_vendor_library(candidates, 3, "libmcpti not found (set FLAGOS_TRACER_LIBRARY or MACA_PATH)",
                                    load_cupti, &t->api, t->base.path, sizeof t->base.path, t->base.why, sizeof t->base.why);
  if (ok) *(void **)&t->get_api_name = dlsym(t->api.handle, "mcptiActivityGetApiName");
  return ok;
}
#else
static bool open_cupti(cupti_tracer *t) {
  /* the soname, then CUDA_HOME's usual layouts, then the copy beside a loaded torch */
  const char *cuda_home = getenv("CUDA_HOME");
  static const char *const subdirs[] = {"lib64", "extras/CUPTI/lib64", "lib"};
  char in_home[3][PATH_MAX] = {"", "", ""};
  for (size_t i = 0; cuda_home && *cuda_home && i < 3; i++)
    snprintf(in_home[i], PATH_MAX, "%s/%s/libcupti.so.13", cuda_home, subdirs[i]);
  char torch_cupti[PATH_MAX] = "";
  dl_iterate_phdr(find_torch_dir, torch_cupti);
  const char *const candidates[] = {"libcupti.so.13", "libcupti.so", in_home[0], in_home[1], in_home[2], torch_cupti};
  return ft__open_vendor_library(candidates, 6, "libcupti not found (set FLAGOS_TRACER_LIBRARY or CUDA_HOME)",
                                 load_cupti, &t->api, t->base.path, sizeof t->base.path, t->base.why, sizeof t->base.why);
}
#endif

/* ---- ops ---- */

/* Our event kinds -> CUPTI activity kinds; external correlation is always armed
 * (attribution needs it, and it costs nothing without API records). */
static const struct {
  unsigned ft_kind;
  CUpti_ActivityKind cupti;
  bool optional; /* a library without it still traces the rest */
} kind_map[] = {
    {FT_EVENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, false},
    {FT_EVENT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY, false},
#ifndef FT_MCPTI /* MCPTI's record sizes for it are not in our facts */
    {FT_EVENT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, true}, /* peer-to-peer copies */
#endif
    {FT_EVENT_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, false},
    {FT_EVENT_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME, false},
    {FT_EVENT_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER, false},
};
enum { N_KINDS = sizeof kind_map / sizeof kind_map[0] };

/* API rows as torch-cuda's (kineto 2.11, CuptiActivityApi.cpp, CuptiActivityProfiler.cpp
 * and CuptiCbidRegistry.cpp): CUPTI is told not to record the per-launch queries
 * below at all (they cost torch's add_ loop 8 API records per op instead of 1,
 * measured on the H200), kineto's runtime blocklist is left out, and of the driver
 * API only kineto's tracked calls are kept (launches and the cuMem* virtual-memory
 * calls): cuPointerGetAttribute, cuOccupancy*, cuLibraryGetKernel, our own
 * cuDeviceGetAttribute queries, ... are not rows. FLAGTRACE_CUPTI_ALL_APIS=1 keeps
 * everything. The ids are CUPTI's; MCPTI numbers its APIs differently. */
static const CUpti_CallbackId quiet_runtime[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,         CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,      CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020};
static const CUpti_CallbackId quiet_driver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute};
#ifndef FT_MCPTI
static const CUpti_CallbackId kept_driver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,     CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,      CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuMemExportToShareableHandle, CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle};

static bool in_list(const CUpti_CallbackId *ids, size_t n, uint32_t cbid) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == cbid) return true;
  return false;
}
#endif

/* Decode-time half of the filter, for CUPTIs without the per-API switch. */
static bool api_left_out(const cupti_tracer *t, bool driver, uint32_t cbid) {
#ifdef FT_MCPTI
  (void)t, (void)driver, (void)cbid;
  return false;
#else
  if (t->all_apis) return false;
  if (driver) return !in_list(kept_driver, sizeof kept_driver / sizeof *kept_driver, cbid);
  return in_list(quiet_runtime, sizeof quiet_runtime / sizeof *quiet_runtime, cbid);
#endif
}

static void quiet_apis(cupti_tracer *t, bool driver) {
#ifdef FT_MCPTI
  (void)t, (void)driver; /* the ids above are CUPTI's; MCPTI numbers its APIs differently */
  return;
#endif
  /* set both ways: CUPTI keeps a per-API switch across sessions */
  uint8_t keep = t->all_apis;
  ft__pfn_cuptiActivityEnableRuntimeApi fn = driver ? t->api.cuptiActivityEnableDriverApi
                                                    : t->api.cuptiActivityEnableRuntimeApi;
  const CUpti_CallbackId *ids = driver ? quiet_driver : quiet_runtime;
  size_t n = driver ? sizeof quiet_driver / sizeof *quiet_driver : sizeof quiet_runtime / sizeof *quiet_runtime;
  for (size_t i = 0; i < n; i++) {
    CUptiResult r = fn ? fn(ids[i], keep) : CUPTI_ERROR_NOT_SUPPORTED;
    FT__LOG("%s %s %s: %s", keep ? "record" : "leave out", driver ? "driver" : "runtime",
            api_name(driver, ids[i]), r == CUPTI_SUCCESS ? "ok" : "no per-API switch in this CUPTI (recorded)");
  }
}

static void disable_kinds(cupti_tracer *t) {
  for (size_t i = 0; i < N_KINDS; i++)
    if (t->base.kinds & FT_KIND_BIT(kind_map[i].ft_kind)) t->api.cuptiActivityDisable(kind_map[i].cupti);
  t->api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
}

static ft_status enable_kinds(cupti_tracer *t) {
  ft_status st = ft__cuptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  FT__LOG("enable external correlation: %s", st ? t->base.err : "ok");
  for (size_t i = 0; i < N_KINDS && !st; i++) {
    if (!(t->base.kinds & FT_KIND_BIT(kind_map[i].ft_kind))) continue;
    st = ft__cuptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, kind_map[i].cupti);
    FT__LOG("enable kind %d: %s", (int)kind_map[i].cupti, st ? t->base.err : "ok");
    if (st && kind_map[i].optional) st = FT_OK;
    if (!st && (kind_map[i].ft_kind == FT_EVENT_RUNTIME || kind_map[i].ft_kind == FT_EVENT_DRIVER))
      quiet_apis(t, kind_map[i].ft_kind == FT_EVENT_DRIVER);
  }
  if (st) disable_kinds(t); /* disabling what was never enabled is harmless */
  return st;
}

static ft_status cu_start(ft_tracer *base, const ft_event_sink *sink, unsigned kinds) {
  cupti_tracer *t = (cupti_tracer *)base;
  t->base.kinds = kinds;
  ft_status claim = ft__tracer_claim(&t->base, sink, kinds);
  if (claim) return claim;
  t->all_apis = ft__env_flag("FLAGTRACE_CUPTI_ALL_APIS");
  atomic_store(&t->range_enabled, false);
  ft__thread_register();
  size_t want = env_size("FLAGTRACE_CUPTI_BUFFER_BYTES", DEFAULT_BUF_SIZE) & ~(size_t)7;
  int reserved = ft__pool_reserve(POOL_INITIAL, want);
  if (reserved < 0)
    FT__WARN("activity buffers still in use; keeping %zu-byte buffers", ft__pool_buffer_size());
  if (!reserved) {
    snprintf(t->base.err, sizeof t->base.err, "cannot reserve %d activity buffers of %zu KiB", POOL_INITIAL, want >> 10);
    ft__tracer_release(&t->base);
    return FT_ENOMEM;
  }
  ft_status st;
  t->dropped_untimed = 0;
  /* Clock: CUPTI and the capture window must share the UNIX-epoch domain (design.md §4). */
#ifdef FT_MCPTI
  /* MCPTI stamps records with its own (device) clock: mapped affinely from samples
   * against CLOCK_REALTIME taken here and at stop. */
  t->resyncs = t->skipped_bytes = 0;
  t->have_clock = ft__clock_sample(read_clock, t, &t->clock.v0, &t->clock.r0);
  t->clock.v1 = t->clock.v0, t->clock.r1 = t->clock.r0;
  if (!t->have_clock) FT__WARN("cannot read its clock (%s); timestamps are taken as CLOCK_REALTIME", t->base.err);
#else
  uint64_t cupti_now = 0;
  if (!ft__cuptiGetTimestamp(&t->api, t->base.err, sizeof t->base.err, &cupti_now)) {
    int64_t off = (int64_t)(cupti_now - ft__now_ns());
    FT__LOG("cuptiGetTimestamp - CLOCK_REALTIME = %lld ns", (long long)off);
    t->clock_offset = 0;
    if (off > 1000000000ll || off < -1000000000ll) {
      FT__WARN("CUPTI's clock is %lld ns away from CLOCK_REALTIME; shifting its timestamps",
               (long long)off);
      t->clock_offset = off;
    }
  }
#endif
  size_t dev_buf = env_size("FLAGTRACE_CUPTI_DEVICE_BUFFER_BYTES", 0);
  if (dev_buf) {
    size_t len = sizeof dev_buf;
    if (ft__cuptiActivitySetAttribute(&t->api, t->base.err, sizeof t->base.err, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &len,
                                      &dev_buf))
      FT__WARN("cannot set the device buffer size: %s", t->base.err);
    else
      FT__LOG("device buffer size %zu bytes", dev_buf);
  }
  st = ft__cuptiActivityRegisterCallbacks(&t->api, t->base.err, sizeof t->base.err, ft__buffer_requested, buffer_completed);
  FT__LOG("register callbacks: %s", st ? t->base.err : "ok");
  /* Waiting for cudaProfilerStart, nothing is enabled: an enabled kernel kind costs
   * every launch about 1 us even when nothing will be kept (gpu-facts). */
  if (!st && !t->range_only) st = enable_kinds(t);
  if (st) {
    ft__tracer_release(&t->base);
    return st;
  }
  t->base.armed = true;
  return FT_OK;
}

/* After the final flush: the second clock sample, then every held buffer. */
static void decode_all_held(cupti_tracer *t) {
  uint64_t v1, r1;
  if (t->have_clock && ft__clock_sample(read_clock, t, &v1, &r1)) t->clock.v1 = v1, t->clock.r1 = r1;
  size_t n = ft__held_take_all(&t->held, decode_held, t);
  FT__LOG("decoded %zu buffers at stop", n);
  if (t->resyncs)
    FT__WARN("%llu malformed stretches in its activity buffers (%llu bytes) were skipped to the next "
             "well-formed record", (unsigned long long)t->resyncs, (unsigned long long)t->skipped_bytes);
}

static ft_status cu_stop(ft_tracer *base) {
  cupti_tracer *t = (cupti_tracer *)base;
  if (!t->base.armed) return FT_OK;
  disable_kinds(t);
  ft_status st = ft__cuptiActivityFlushAll(&t->api, t->base.err, sizeof t->base.err, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (HOLD_UNTIL_STOP) decode_all_held(t);
  if (t->dropped_untimed) {
    atomic_fetch_add(&t->base.dropped, t->dropped_untimed);
    FT__LOG("%llu records without usable timing (start = end = 0, or implausible) dropped",
            (unsigned long long)t->dropped_untimed);
  }
  ft__tracer_release(&t->base);
  return st;
}

static ft_status cu_push(ft_tracer *base, uint64_t id) {
  cupti_tracer *t = (cupti_tracer *)base;
  ft__thread_register();
  char err[256];
  return t->base.loaded ? ft__cuptiActivityPushExternalCorrelationId(&t->api, err, sizeof err, FT_EXT_KIND, id)
                   : FT_EUNAVAILABLE;
}

static ft_status cu_pop(ft_tracer *base) {
  cupti_tracer *t = (cupti_tracer *)base;
  char err[256];
  uint64_t last = 0; /* a real out-pointer: some CUPTI-compatible libraries reject NULL */
  return t->base.loaded ? ft__cuptiActivityPopExternalCorrelationId(&t->api, err, sizeof err, FT_EXT_KIND, &last)
                   : FT_EUNAVAILABLE;
}

static int cu_device_count(const ft_tracer *base) {
  cupti_tracer *t = (cupti_tracer *)base;
  bind_cuda(t);
  int n = 0;
  return t->cuda_state > 0 && t->cuda.cuDeviceGetCount(&n) == CUDA_SUCCESS ? n : 0;
}

/* kineto's deviceProperties fields, in its order, from the driver's own queries. */
static size_t cu_device_properties(ft_tracer *base, int id, const ft_kv **out) {
  cupti_tracer *t = (cupti_tracer *)base;
  if (id < 0 || id >= MAX_DEVICES) return 0;
  if (t->props[id]) {
    *out = t->props[id]->kv;
    return t->props[id]->n;
  }
  bind_cuda(t);
  CUdevice dev;
  if (t->cuda_state < 0 || t->cuda.cuDeviceGet(&dev, id) != CUDA_SUCCESS) return 0;
  mdbuf *m = calloc(1, sizeof *m);
  if (!m) return 0;
  uint64_t q0 = own_query_begin(t); /* after stop nothing is recorded; noted all the same */
  char name[256];
  size_t mem = 0;
  if (t->cuda.cuDeviceGetName(name, (int)sizeof name, dev) == CUDA_SUCCESS) md_add(m, "name", "%s", name);
  if (t->cuda.cuDeviceTotalMem_v2(&mem, dev) == CUDA_SUCCESS) md_add(m, "totalGlobalMem", "%zu", mem);
  static const struct {
    const char *key;
    CUdevice_attribute a;
  } q[] = {
      {"computeMajor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {"computeMinor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {"maxThreadsPerBlock", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {"maxThreadsPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {"regsPerBlock", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {"warpSize", CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {"sharedMemPerBlock", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {"numSms", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {"regsPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
      {"sharedMemPerBlockOptin", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {"sharedMemPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    int v;
    if (t->cuda.cuDeviceGetAttribute(&v, q[i].a, dev) == CUDA_SUCCESS) md_add(m, q[i].key, "%d", v);
  }
  own_query_end(t, q0);
  t->props[id] = m;
  *out = m->kv;
  return m->n;
}

/* cudaProfilerStart/Stop (and the driver's cuProfilerStart/Stop) through CUPTI's
 * callback API: the one subscriber CUPTI allows is taken only when asked for. */
static void (*profiler_on)(void *ctx, bool start);
static void *profiler_ctx;

static void CUPTIAPI profiler_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                       const void *data) {
  (void)userdata;
  const CUpti_CallbackData *cb = data;
  bool start = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) ||
               (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
  /* the range opens when the start call returns and closes when the stop call begins */
  if (!profiler_on || cb->callbackSite != (start ? CUPTI_API_EXIT : CUPTI_API_ENTER)) return;
  /* Kinds are enabled at the first start, before the window opens, and stay enabled
   * after the stop: kernels launched inside the range still deliver their records,
   * and what comes later falls outside the window and is discarded (counted). */
  cupti_tracer *t = (cupti_tracer *)ft__tracer_active();
  if (start && t && t->range_only && !atomic_exchange(&t->range_enabled, true)) {
    ft_status st = enable_kinds(t);
    if (st) FT__WARN("cannot enable activity at cudaProfilerStart: %s", t->base.err);
    else FT__LOG("activity enabled at cudaProfilerStart");
  }
  profiler_on(profiler_ctx, start);
}

static ft_status cu_watch_profiler_api(ft_tracer *base, void (*on)(void *ctx, bool start), void *ctx) {
  cupti_tracer *t = (cupti_tracer *)base;
  if (!t->base.loaded) return FT_EUNAVAILABLE;
#ifdef FT_MCPTI
  (void)on, (void)ctx;
  snprintf(t->base.err, sizeof t->base.err, "MCPTI's callback ids for the profiler API are not known to flagtrace");
  return FT_EUNAVAILABLE;
#endif
  profiler_on = on;
  profiler_ctx = ctx;
  CUpti_SubscriberHandle sub;
  ft_status st = ft__cuptiSubscribe(&t->api, t->base.err, sizeof t->base.err, &sub, profiler_callback, NULL);
  struct {
    CUpti_CallbackDomain d;
    CUpti_CallbackId id;
  } ids[] = {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000},
             {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000},
             {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart},
             {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}};
  for (size_t i = 0; i < 4 && !st; i++)
    st = ft__cuptiEnableCallback(&t->api, t->base.err, sizeof t->base.err, 1, sub, ids[i].d, ids[i].id);
  t->range_only = !st; /* when watching fails the session records the whole run */
  return st;
}

static void cu_destroy(ft_tracer *base) {
  cupti_tracer *t = (cupti_tracer *)base;
  if (t->base.armed) cu_stop(base);
  /* libcupti stays loaded: CUPTI may still hold callbacks into this library. */
  ft__held_free(&t->held);
  for (int i = 0; i < MAX_DEVICES; i++) free(t->props[i]);
  pthread_mutex_destroy(&t->decode_mu);
  free(t);
}

static const ft_tracer_ops cupti_ops = {
    .name = FT__TRACER_NAME,
    .runtime_category = "cuda_runtime",
    .driver_category = "cuda_driver",
    .available = ft__tracer_available,
    .start = cu_start,
    .stop = cu_stop,
    .push_correlation = cu_push,
    .pop_correlation = cu_pop,
    .device_count = cu_device_count,
    .device_properties = cu_device_properties,
    .dropped_records = ft__tracer_dropped,
    .last_error = ft__tracer_last_error,
    .destroy = cu_destroy,
    .watch_profiler_api = cu_watch_profiler_api,
};

#ifdef FT_MCPTI
static bool library_usable(cupti_tracer *t) {
  /* MCPTI's versions are MACA's, not CUPTI's: its record sizes are fixed above. */
  if (ft__cuptiGetVersion(&t->api, t->base.err, sizeof t->base.err, &t->version)) t->version = 0;
  FT__LOG("bound %s (version %u%s)", t->base.path, t->version,
          t->get_api_name ? "" : "; no mcptiActivityGetApiName: API rows keep generic names");
  return true;
}
#else
static bool library_usable(cupti_tracer *t) {
  if (ft__cuptiGetVersion(&t->api, t->base.err, sizeof t->base.err, &t->version)) {
    snprintf(t->base.why, sizeof t->base.why, "%s: %s", t->base.path, t->base.err);
    return false;
  }
  if (t->version / 10000 != FT_CUPTI_COMPILED_MAJOR) {
    /* Never gated (design.md §8): decoding another major's layouts reads garbage. */
    ft__warn("CUPTI at %s reports API version %u, but this flagtrace decodes CUPTI %d.x "
             "record layouts (built with %d): device activity will not be collected",
             t->base.path, t->version, FT_CUPTI_COMPILED_MAJOR, CUPTI_API_VERSION);
    snprintf(t->base.why, sizeof t->base.why, "record layout mismatch: %s is CUPTI API %u, built for %d", t->base.path,
             t->version, CUPTI_API_VERSION);
    return false;
  }
  FT__LOG("bound %s (API version %u)", t->base.path, t->version);
  return true;
}
#endif

ft_status ft_make_device_tracer(ft_tracer **out) {
  cupti_tracer *t = calloc(1, sizeof *t);
  if (!t) return FT_ENOMEM;
  t->base.tracer.ops = &cupti_ops;
  pthread_mutex_init(&t->decode_mu, NULL);
  t->base.loaded = open_cupti(t) && library_usable(t);
  if (!t->base.loaded) FT__LOG("unavailable: %s", t->base.why);
  *out = &t->base.tracer;
  return FT_OK;
}
