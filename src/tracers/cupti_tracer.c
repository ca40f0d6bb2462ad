/* NVIDIA CUPTI tracer (also PPU's CUPTI, and MetaX's MCPTI when built with FT_MCPTI):
 * arms activity at session start; cupti_decode.c decodes its records. */
#define _GNU_SOURCE
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

#include "cupti_tracer.h"

/* The layouts cupti_decode.c decodes are CUDA 13's (CUpti_ActivityKernel10, Memcpy6,
 * Memset4, API, ExternalCorrelation, Memory4, MemoryPool3's MemoryPool2 prefix). CUPTI changes record versions only
 * with a major release, so any CUPTI 13.x reads them; anything else must not be decoded. */
#define FT_CUPTI_COMPILED_MAJOR (CUPTI_API_VERSION / 10000)

/* A decimal number in lo..hi from the environment into *x: 1, 0 when unset, -1 when
 * not one (the caller warns, naming what it wanted). */
static int env_number(const char *name, unsigned long long lo, unsigned long long hi, unsigned long long *x) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  char *end;
  *x = strtoull(v, &end, 10);
  return *end || *v == '-' || *x < lo || *x > hi ? -1 : 1;
}

/* Buffer sizes can be made small on purpose (FLAGTRACE_CUPTI_BUFFER_BYTES for our
 * host buffers, FLAGTRACE_CUPTI_DEVICE_BUFFER_BYTES for CUPTI's device-side one) to
 * check that records CUPTI cannot keep are counted as dropped, never lost silently. */
static size_t env_size(const char *name, size_t lo, size_t fallback) {
  unsigned long long x;
  int got = env_number(name, lo, 1ull << 34, &x);
  if (got < 0) ft__warn("%s=%s is not a size in bytes (%zu .. 16 GiB); using %zu", name, getenv(name), lo, fallback);
  return got > 0 ? (size_t)x : fallback;
}

/* A count in 0..max from the environment, else fallback (warned). */
static size_t env_count(const char *name, size_t fallback, size_t max) {
  unsigned long long x;
  int got = env_number(name, 0, max, &x);
  if (got < 0) ft__warn("%s=%s is not a count of 0 .. %zu; using %zu", name, getenv(name), max, fallback);
  return got > 0 ? (size_t)x : fallback;
}

/* ---- thread ids ----
 * CUPTI's API records carry the low 32 bits of pthread_self(), measured on the
 * H200 (1389465600 where gettid() said 745); the trace's CPU rows use OS thread
 * ids. Each thread that pushes a correlation id (or starts the session) registers
 * its pair with the core (ft__thread_register), and runtime records are translated. */

static bool read_clock(void *ctx, uint64_t *v) {
  cupti_tracer *t = ctx;
  return !ft__cuptiGetTimestamp(&t->api, t->base.err, sizeof t->base.err, v);
}

static void decode_held(void *ctx, uint8_t *buf, size_t valid) { ft__cupti_decode_buffer(ctx, buf, valid); }

/* What the held buffers hold, decoded now (outside decode_mu: the decoder takes it). */
static void decode_held_now(cupti_tracer *t) {
  pthread_mutex_lock(&t->decode_mu);
  ft__held batch = t->held;
  t->held = (ft__held){0};
  pthread_mutex_unlock(&t->decode_mu);
  ft__held_take_all(&batch, decode_held, t);
  ft__held_free(&batch);
}

/* Decoding a buffer takes the CPU the program may be using: completed buffers wait,
 * up to t->hold_first of them, and are decoded in order with the one after. A short
 * profile's records are then decoded at stop, after the profiled region, as kineto
 * decodes all of them (on the H200 a 10 000-op torch profile makes ~2.5 MB of kernel
 * records: one 2 MiB buffer completes inside the loop). False: buf is kept. */
static bool decode_with_held(cupti_tracer *t, uint8_t *buf, size_t valid) {
  pthread_mutex_lock(&t->decode_mu);
  bool held = t->held.n < t->hold_first && ft__held_add(&t->held, buf, valid);
  pthread_mutex_unlock(&t->decode_mu);
  if (held) return false;
  decode_held_now(t); /* the earlier ones first: arrival order */
  ft__cupti_decode_buffer(t, buf, valid);
  return true;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)size;
  cupti_tracer *t = (cupti_tracer *)ft__tracer_active();
  if (t) atomic_store_explicit(&t->last_completion_ns, ft__now_ns(), memory_order_relaxed);
  if (t && HOLD_UNTIL_STOP) {
    ft__held_keep(&t->held, &t->decode_mu, buf, valid, FT__TRACER_NAME); /* to the pool after decoding at stop */
    buf = NULL;
  } else if (t && buf && valid && !decode_with_held(t, buf, valid)) {
    buf = NULL; /* held: to the pool once decoded */
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
   * verified on MetaX hardware (docs/vendors.md) */
  const char *maca = getenv("MACA_PATH");
  char in_maca[PATH_MAX] = "";
  if (maca && *maca) snprintf(in_maca, sizeof in_maca, "%s/lib/libmcpti.so", maca);
  const char *const candidates[] = {"libmcpti.so", in_maca, "/opt/maca/lib/libmcpti.so"};
  bool ok =
      ft__open_vendor_library(candidates, 3, "libmcpti not found (set FLAGOS_TRACER_LIBRARY or MACA_PATH)", load_cupti,
                              &t->api, t->base.path, sizeof t->base.path, t->base.why, sizeof t->base.why);
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
                                 load_cupti, &t->api, t->base.path, sizeof t->base.path, t->base.why,
                                 sizeof t->base.why);
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
#ifndef FT_MCPTI                                          /* MCPTI's record sizes for it are not in our facts */
    {FT_EVENT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, true}, /* peer-to-peer copies */
#endif
    {FT_EVENT_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, false},
    {FT_EVENT_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME, false},
    {FT_EVENT_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER, false},
#ifndef FT_MCPTI
    /* only when asked (FT_ACTIVITY_SYNC): CUPTI instruments every sync call for it */
    {FT_EVENT_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, true},
    /* device memory (issue 51): allocations and frees, then pool operations; a CUPTI
     * that refuses them traces the rest without them (said once, in last_error) */
    {FT_EVENT_MEMORY, CUPTI_ACTIVITY_KIND_MEMORY2, true},
    {FT_EVENT_MEMORY, CUPTI_ACTIVITY_KIND_MEMORY_POOL, true},
#endif
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
static const CUpti_CallbackId quiet_runtime[] = {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020};
static const CUpti_CallbackId quiet_driver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute};
#ifndef FT_MCPTI
static const CUpti_CallbackId kept_driver[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                               CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                               CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
                                               CUPTI_DRIVER_TRACE_CBID_cuMemMap,
                                               CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
                                               CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
                                               CUPTI_DRIVER_TRACE_CBID_cuMemExportToShareableHandle,
                                               CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle};

static bool in_list(const CUpti_CallbackId *ids, size_t n, uint32_t cbid) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == cbid) return true;
  return false;
}
#endif

/* Decode-time half of the filter, for CUPTIs without the per-API switch. */
bool ft__cupti_api_left_out(const cupti_tracer *t, bool driver, uint32_t cbid) {
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
  ft__pfn_cuptiActivityEnableRuntimeApi fn =
      driver ? t->api.cuptiActivityEnableDriverApi : t->api.cuptiActivityEnableRuntimeApi;
  const CUpti_CallbackId *ids = driver ? quiet_driver : quiet_runtime;
  size_t n = driver ? sizeof quiet_driver / sizeof *quiet_driver : sizeof quiet_runtime / sizeof *quiet_runtime;
  for (size_t i = 0; i < n; i++) {
    CUptiResult r = fn ? fn(ids[i], keep) : CUPTI_ERROR_NOT_SUPPORTED;
    FT__LOG("%s %s %s: %s", keep ? "record" : "leave out", driver ? "driver" : "runtime",
            ft__cupti_api_name(driver, ids[i]),
            r == CUPTI_SUCCESS ? "ok" : "no per-API switch in this CUPTI (recorded)");
  }
}

static void disable_kinds(cupti_tracer *t) {
  ft__cupti_memory_disarm(t);
  for (size_t i = 0; i < N_KINDS; i++)
    if (t->base.kinds & FT_KIND_BIT(kind_map[i].ft_kind)) t->api.cuptiActivityDisable(kind_map[i].cupti);
  t->api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
}

/* An older CUPTI (or a compatible library) without memory records. Without MEMORY2
 * the session goes on without memory; without MEMORY_POOL only the pools' own
 * operations are missing (a pool's size still comes with each allocation and free
 * from it). Said once: the warning, and last_error. */
static void memory_refused(cupti_tracer *t, CUpti_ActivityKind kind, bool *no_memory) {
  bool allocations = kind == CUPTI_ACTIVITY_KIND_MEMORY2;
  char why[sizeof t->base.err];
  snprintf(why, sizeof why, "%s", t->base.err);
  snprintf(
      t->base.err, sizeof t->base.err, "%s: %s refused %s (%.400s)",
      allocations ? "device memory is not recorded" : "memory pools' creation, trims and destruction are not recorded",
      t->base.path, allocations ? "CUPTI_ACTIVITY_KIND_MEMORY2" : "CUPTI_ACTIVITY_KIND_MEMORY_POOL", why);
  FT__WARN("%s", t->base.err);
  *no_memory = allocations;
}

static ft_status enable_kinds(cupti_tracer *t) {
  /* attributed by time, a correlation record per call would be paid for nothing */
  ft_status st = t->timed ? FT_OK
                          : ft__cuptiActivityEnable(&t->api, t->base.err, sizeof t->base.err,
                                                    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (!t->timed) FT__LOG("enable external correlation: %s", st ? t->base.err : "ok");
  bool no_memory = false;
  /* memory from callbacks where CUPTI gives them (cupti_memory.c: MEMORY2's records
   * cost an allocation loop 1.19x), else from its records */
  if (!st && (t->base.kinds & FT_KIND_BIT(FT_EVENT_MEMORY))) ft__cupti_memory_arm(t);
  for (size_t i = 0; i < N_KINDS && !st; i++) {
    if (!(t->base.kinds & FT_KIND_BIT(kind_map[i].ft_kind))) continue;
    bool memory = kind_map[i].ft_kind == FT_EVENT_MEMORY;
    if (memory && (no_memory || t->mem_callbacks)) continue; /* pool records without allocations would mislead */
    st = ft__cuptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, kind_map[i].cupti);
    FT__LOG("enable kind %d: %s", (int)kind_map[i].cupti, st ? t->base.err : "ok");
    if (st && memory) memory_refused(t, kind_map[i].cupti, &no_memory);
    if (st && kind_map[i].optional) st = FT_OK;
    if (!st && (kind_map[i].ft_kind == FT_EVENT_RUNTIME || kind_map[i].ft_kind == FT_EVENT_DRIVER))
      quiet_apis(t, kind_map[i].ft_kind == FT_EVENT_DRIVER);
  }
  if (st) disable_kinds(t); /* disabling what was never enabled is harmless */
  return st;
}

#ifndef FT_MCPTI
static uint64_t CUPTIAPI core_clock(void) {
  uint64_t ns = ft__now_ns();
  ft__cupti_clock_taken(ns); /* a runtime call's end, for its memory events (cupti_memory.c) */
  return ns;
}

/* CUPTI takes its timestamps from our clock (registered once per library instance,
 * before any kind is enabled, and kept): its API records are then bracketed exactly by the
 * core's push and pop times on the calling thread, and attribution needs no
 * external correlation (design.md §2). NVIDIA's CUPTI only: PPU's compatible
 * library is not known to honour the callback. FLAGTRACE_CUPTI_EXTERNAL_CORRELATION=1
 * keeps CUPTI's correlation records (what kineto uses). */
/* the library instance that took our clock (FLAGOS_TRACER_LIBRARY may name another
 * later); cleared by cuptiFinalize, which forgets it */
static ft__pfn_cuptiActivityRegisterTimestampCallback registered_in;

static bool take_clock(cupti_tracer *t) {
  ft__pfn_cuptiActivityRegisterTimestampCallback reg = t->api.cuptiActivityRegisterTimestampCallback;
  if (strcmp(FT_ACCELERATOR_NAME, "cuda") || ft__env_flag("FLAGTRACE_CUPTI_EXTERNAL_CORRELATION") || !reg) return false;
  if (reg != registered_in) {
    CUptiResult r = reg(core_clock);
    FT__LOG("cuptiActivityRegisterTimestampCallback: %s",
            r == CUPTI_SUCCESS ? "ok" : "failed (external correlation kept)");
    if (r != CUPTI_SUCCESS) return false;
    registered_in = reg;
  }
  return true;
}
#endif

static ft_status cu_start(ft_tracer *base, const ft_event_sink *sink, unsigned kinds) {
  cupti_tracer *t = (cupti_tracer *)base;
  t->base.kinds = kinds;
  ft_status claim = ft__tracer_claim(&t->base, sink, kinds);
  if (claim) return claim;
  t->all_apis = ft__env_flag("FLAGTRACE_CUPTI_ALL_APIS");
  t->hold_first = env_count("FLAGTRACE_CUPTI_HELD_BUFFERS", DEFAULT_HELD, MAX_HELD);
  atomic_store(&t->range_enabled, false);
  ft__thread_register();
  size_t want = env_size("FLAGTRACE_CUPTI_BUFFER_BYTES", 4096, DEFAULT_BUF_SIZE) & ~(size_t)7;
  int reserved = ft__pool_reserve(POOL_INITIAL, want);
  if (reserved < 0) FT__WARN("activity buffers still in use; keeping %zu-byte buffers", ft__pool_buffer_size());
  if (!reserved) {
    snprintf(t->base.err, sizeof t->base.err, "cannot reserve %d activity buffers of %zu KiB", POOL_INITIAL,
             want >> 10);
    ft__tracer_release(&t->base);
    return FT_ENOMEM;
  }
  /* 0: off, as is a size not above the pool's (ft__pool_first). A buffer size the
   * user set (small, to see drops counted) is every buffer's unless this is set too. */
  size_t first = getenv("FLAGTRACE_CUPTI_BUFFER_BYTES") ? 0 : DEFAULT_FIRST_SIZE;
  ft__pool_first(FIRST_BUFFERS, env_size("FLAGTRACE_CUPTI_FIRST_BUFFER_BYTES", 0, first) & ~(size_t)7);
  ft_status st;
  t->dropped_untimed = 0;
  t->n_pools = 0;
  t->memory_invalid = 0;
  t->last_kernel.valid = false;
  atomic_store(&t->relinquished, false);
  atomic_store(&t->last_completion_ns, ft__now_ns());
  t->lent_at_start = ft__pool_lent();
  /* Clock: CUPTI and the capture window must share the UNIX-epoch domain (design.md §4). */
#ifdef FT_MCPTI
  if (kinds & FT_KIND_BIT(FT_EVENT_MEMORY)) /* kind_map has no memory entry here */
    FT__LOG("device memory is not recorded: MCPTI's memory record layout is not known");
  /* MCPTI stamps records with its own (device) clock: mapped affinely from samples
   * against CLOCK_REALTIME taken here and at stop. */
  t->resyncs = t->skipped_bytes = 0;
  t->have_clock = ft__clock_sample(read_clock, t, &t->clock.v0, &t->clock.r0);
  t->clock.v1 = t->clock.v0, t->clock.r1 = t->clock.r0;
  if (!t->have_clock) FT__WARN("cannot read its clock (%s); timestamps are taken as CLOCK_REALTIME", t->base.err);
#else
  uint64_t cupti_now = 0;
  t->clock_offset = 0;
  t->timed = take_clock(t);
  if (!t->timed && !ft__cuptiGetTimestamp(&t->api, t->base.err, sizeof t->base.err, &cupti_now)) {
    int64_t off = (int64_t)(cupti_now - ft__now_ns());
    FT__LOG("cuptiGetTimestamp - CLOCK_REALTIME = %lld ns", (long long)off);
    if (off > 1000000000ll || off < -1000000000ll) {
      FT__WARN("CUPTI's clock is %lld ns away from CLOCK_REALTIME; shifting its timestamps", (long long)off);
      t->clock_offset = off;
    }
  }
#endif
  size_t dev_buf = env_size("FLAGTRACE_CUPTI_DEVICE_BUFFER_BYTES", 4096, 0);
  if (dev_buf) {
    size_t len = sizeof dev_buf;
    if (ft__cuptiActivitySetAttribute(&t->api, t->base.err, sizeof t->base.err, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE,
                                      &len, &dev_buf))
      FT__WARN("cannot set the device buffer size: %s", t->base.err);
    else FT__LOG("device buffer size %zu bytes", dev_buf);
  }
  st = ft__cuptiActivityRegisterCallbacks(&t->api, t->base.err, sizeof t->base.err, ft__buffer_requested,
                                          buffer_completed);
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
    FT__WARN(
        "%llu malformed stretches in its activity buffers (%llu bytes) were skipped to the next "
        "well-formed record",
        (unsigned long long)t->resyncs, (unsigned long long)t->skipped_bytes);
}

/* Buffers still lent once a forced flush has returned them all were kept by another
 * CUPTI client (its own buffer callbacks replaced ours: CUPTI then hands it ours,
 * measured on the H200): say so, never a trace claiming nothing was lost. */
static void check_buffers_home(cupti_tracer *t) {
  size_t now = ft__pool_lent(), lent = now > t->lent_at_start ? now - t->lent_at_start : 0;
  if (!lent || atomic_load(&t->relinquished) || !t->base.sink || !t->base.sink->lost) return;
  char why[512];
  snprintf(why, sizeof why,
           "%zu activity buffers lent to CUPTI never came back: another CUPTI client in the process registered its "
           "own buffer callbacks, so device activity after the last buffer that came home is missing "
           "(flagtrace record guards against this; an embedding program cannot)",
           lent);
  t->base.sink->lost(t->base.sink->ctx, atomic_load(&t->last_completion_ns), why);
}

static ft_status cu_stop(ft_tracer *base) {
  cupti_tracer *t = (cupti_tracer *)base;
  if (!t->base.armed) return FT_OK;
  if (atomic_load(&t->relinquished)) { /* CUPTI is another client's now: not touched */
    ft__tracer_release(&t->base);
    return FT_OK;
  }
  disable_kinds(t);
  ft_status st = ft__cuptiActivityFlushAll(&t->api, t->base.err, sizeof t->base.err, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  decode_all_held(t); /* MCPTI's, or the last few CUPTI held */
  check_buffers_home(t);
  size_t first_home, first_lent;
  bool outgrew;
  ft__pool_first_count(&first_home, &first_lent, &outgrew);
  FT__LOG("activity buffers: at most %zu of %zu KiB lent at once; first buffers %s (%zu home, %zu lent)",
          ft__pool_max_lent(), ft__pool_buffer_size() >> 10, outgrew ? "outgrown" : "enough", first_home, first_lent);
  if (t->dropped_untimed) {
    atomic_fetch_add(&t->base.dropped, t->dropped_untimed);
    FT__LOG("%llu records without usable timing (start = end = 0, or implausible) dropped",
            (unsigned long long)t->dropped_untimed);
  }
  if (t->memory_invalid) {
    atomic_fetch_add(&t->base.dropped, t->memory_invalid);
    FT__LOG("%llu memory records naming no operation dropped", (unsigned long long)t->memory_invalid);
  }
  ft__tracer_release(&t->base);
#ifndef FT_MCPTI
  /* record --on-demand: CUPTI detached between captures, so that the wait after one
   * costs the launches what the wait before it did (its callbacks alone cost ~3 %) */
  if (ft__env_flag("FLAGTRACE_CUPTI_FINALIZE") && t->api.cuptiFinalize) {
    /* unsubscribed first (memory's callbacks): any CUPTI call after cuptiFinalize attaches
     * CUPTI again, and the launches after a capture cost 1.038x (an H100), not 1.004x */
    ft__cupti_unsubscribe(t);
    CUptiResult r = t->api.cuptiFinalize();
    FT__LOG("cuptiFinalize: %s", r == CUPTI_SUCCESS ? "ok (CUPTI detached until the next start)" : "failed");
    if (r == CUPTI_SUCCESS) registered_in = NULL; /* the next start registers our clock again */
  }
#endif
  return st;
}

/* An attached session's window: what has completed, delivered now (forced: a buffer
 * partly filled holds the last records), CUPTI left armed. MCPTI decodes only at stop. */
static ft_status cu_flush(ft_tracer *base) {
  cupti_tracer *t = (cupti_tracer *)base;
  if (!t->base.armed || atomic_load(&t->relinquished)) return FT_OK;
  if (HOLD_UNTIL_STOP) {
    snprintf(t->base.err, sizeof t->base.err, "its records are decoded only at stop");
    return FT_EUNAVAILABLE;
  }
  ft_status st = ft__cuptiActivityFlushAll(&t->api, t->base.err, sizeof t->base.err, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  decode_held_now(t);
  ft__cupti_memory_flush(t);
  return st;
}

/* Another client registers its buffer callbacks next: everything CUPTI holds of ours
 * comes home first (disabled, then a forced flush), so none of our buffers reaches
 * it (it would free them: JAX's profiler aborted in free() on our mmap'd buffers). */
static void cu_relinquish(ft_tracer *base) {
  cupti_tracer *t = (cupti_tracer *)base;
  if (!t->base.armed || atomic_exchange(&t->relinquished, true)) return;
  /* a record of work still in flight may make CUPTI ask us for one more buffer before
   * the other client registers: never one of the mmap'd first buffers then, which
   * its free() would abort on (a pool buffer is malloc'd: at worst it is not ours again) */
  ft__pool_first(0, 0);
  disable_kinds(t); /* memory's callbacks let CUPTI's one subscriber slot go (JAX's profiler subscribes) */
  if (ft__cuptiActivityFlushAll(&t->api, t->base.err, sizeof t->base.err, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED))
    FT__WARN("flushing before another client takes CUPTI: %s", t->base.err);
  decode_held_now(t);
  FT__LOG("relinquished CUPTI's activity API to another client (%zu buffers still lent)", ft__pool_lent());
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

static bool cu_calls_on_core_clock(const ft_tracer *base) { return ((const cupti_tracer *)base)->timed; }

/* cudaProfilerStart/Stop (and the driver's cuProfilerStart/Stop) through CUPTI's
 * callback API: the one subscriber CUPTI allows is taken only when asked for. */
static void (*profiler_on)(void *ctx, bool start);
static void *profiler_ctx;

void ft__cupti_profiler_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
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
  ft_status st = ft__cupti_subscriber(t, &sub); /* shared with memory capture */
  struct {
    CUpti_CallbackDomain d;
    CUpti_CallbackId id;
  } ids[] = {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000},
             {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000},
             {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart},
             {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}};
  /* An enabled runtime-API callback may cost every runtime call while the range
   * waits (P1): FLAGTRACE_CUPTI_RANGE_CALLBACKS=driver|runtime watches one domain
   * only, for measuring that (bench/run.py P1); both by default. */
  const char *only = getenv("FLAGTRACE_CUPTI_RANGE_CALLBACKS");
  CUpti_CallbackDomain skip = CUPTI_CB_DOMAIN_INVALID;
  if (only && !strcmp(only, "driver")) skip = CUPTI_CB_DOMAIN_RUNTIME_API;
  else if (only && !strcmp(only, "runtime")) skip = CUPTI_CB_DOMAIN_DRIVER_API;
  else if (only && *only && strcmp(only, "both"))
    FT__WARN("FLAGTRACE_CUPTI_RANGE_CALLBACKS='%s' is not driver, runtime or both: both are watched", only);
  for (size_t i = 0; i < 4 && !st; i++)
    if (ids[i].d != skip)
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
  free(t->last_kernel.m);
  pthread_mutex_destroy(&t->decode_mu);
  pthread_mutex_destroy(&t->mem_mu);
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
    .device_count = ft__cupti_device_count,
    .device_properties = ft__cupti_device_properties,
    .dropped_records = ft__tracer_dropped,
    .last_error = ft__tracer_last_error,
    .destroy = cu_destroy,
    .watch_profiler_api = cu_watch_profiler_api,
    .calls_on_core_clock = cu_calls_on_core_clock,
    .flush = cu_flush,
    .relinquish = cu_relinquish,
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
    ft__warn(
        "CUPTI at %s reports API version %u, but this flagtrace decodes CUPTI %d.x "
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
  pthread_mutex_init(&t->mem_mu, NULL);
  t->base.loaded = open_cupti(t) && library_usable(t);
  if (!t->base.loaded) FT__LOG("unavailable: %s", t->base.why);
  *out = &t->base.tracer;
  return FT_OK;
}
