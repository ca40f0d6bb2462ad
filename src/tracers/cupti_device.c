/* The CUPTI tracer's device queries: occupancy inputs and kineto's deviceProperties, from the process's own libcuda. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "cupti_tracer.h"

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
  if (t->timed) return ft__now_ns(); /* CUPTI's records are on it, whatever cuptiGetTimestamp reads */
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

bool ft__cupti_is_own_query(uint32_t cbid, uint32_t cupti_tid, uint64_t start, uint64_t end) {
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

const ft__occ_device *ft__cupti_device_props(cupti_tracer *t, uint32_t id) {
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
  struct {
    int *out;
    CUdevice_attribute a;
  } q[] = {
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

int ft__cupti_device_count(const ft_tracer *base) {
  cupti_tracer *t = (cupti_tracer *)base;
  bind_cuda(t);
  int n = 0;
  return t->cuda_state > 0 && t->cuda.cuDeviceGetCount(&n) == CUDA_SUCCESS ? n : 0;
}

/* kineto's deviceProperties fields, in its order, from the driver's own queries. */
size_t ft__cupti_device_properties(ft_tracer *base, int id, const ft_kv **out) {
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
