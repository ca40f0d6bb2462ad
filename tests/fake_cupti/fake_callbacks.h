/* The fake libcupti's callback API: one subscriber, per-call switches, and the calls a
 * script makes (cudaProfilerStart/Stop, allocation and pool calls) delivered to it
 * at their entry and exit with CUDA 13's parameter structures; the libcuda pool
 * queries behind them. Included once, by fake_cupti.c. */
#ifndef FT_FAKE_CALLBACKS_H
#define FT_FAKE_CALLBACKS_H

#include <cupti.h>

/* atomic: a subscriber may go (flagtrace unsubscribes at stop) while other threads'
 * calls are delivered, as the real CUPTI allows */
static _Atomic(CUpti_CallbackFunc) subscriber_cb;
static _Atomic(void *) subscriber_data;
static _Atomic uint8_t cb_on[3][1024]; /* [driver 1 | runtime 2][cbid] */
/* cuptiFinalize forgets the subscriber, as the real one does; a later cuptiUnsubscribe
 * of the forgotten handle is counted: the real CUPTI attaches itself again at any call
 * (measured: the launches after the capture cost what CUPTI's callbacks cost) */
static CUpti_SubscriberHandle forgotten;
static atomic_int stale_unsubscribes;

/* FAKE_CUPTI_NO_CALLBACKS=1: a callback API that refuses (the subscriber slot is
 * someone else's, or the library has none), subscribing and enabling alike */
EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata) {
  if (subscriber_cb || getenv("FAKE_CUPTI_NO_CALLBACKS")) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  atomic_store(&subscriber_data, userdata);
  atomic_store(&subscriber_cb, callback);
  forgotten = NULL;
  *subscriber = (CUpti_SubscriberHandle)&subscriber_cb;
  return CUPTI_SUCCESS;
}

EXPORT int fake_cupti_stale_unsubscribes(void) { return atomic_load(&stale_unsubscribes); }
static void drop_subscriber(void) {
  atomic_store(&subscriber_cb, NULL);
  for (size_t d = 0; d < 3; d++)
    for (size_t i = 0; i < 1024; i++) atomic_store_explicit(&cb_on[d][i], 0, memory_order_relaxed);
}
static void forget_subscriber(void) { /* cuptiFinalize's */
  if (subscriber_cb) forgotten = (CUpti_SubscriberHandle)&subscriber_cb;
  drop_subscriber();
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  if (forgotten && subscriber == forgotten && !subscriber_cb) atomic_fetch_add(&stale_unsubscribes, 1);
  if (!subscriber_cb || subscriber != (CUpti_SubscriberHandle)&subscriber_cb) return CUPTI_ERROR_INVALID_PARAMETER;
  drop_subscriber();
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
                                       CUpti_CallbackId cbid) {
  if (!subscriber_cb || subscriber != (CUpti_SubscriberHandle)&subscriber_cb) return CUPTI_ERROR_INVALID_PARAMETER;
  if (getenv("FAKE_CUPTI_NO_CALLBACKS") && enable) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  /* FAKE_CUPTI_REFUSE_ENABLE=1: subscribing works, enabling a callback does not */
  if (getenv("FAKE_CUPTI_REFUSE_ENABLE") && enable) return CUPTI_ERROR_NOT_SUPPORTED;
  if ((domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) || cbid >= 1024)
    return CUPTI_ERROR_INVALID_PARAMETER;
  cb_on[domain][cbid] = enable != 0;
  return CUPTI_SUCCESS;
}

/* A context per device, as the driver's: the device is its low bits. */
#define FAKE_CTX(device) ((CUcontext)(uintptr_t)(0x1000u + (device)))

EXPORT CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *device) {
  uintptr_t c = (uintptr_t)context;
  if (!device || c < 0x1000u || c >= 0x1000u + 64) return CUPTI_ERROR_INVALID_CONTEXT;
  *device = (uint32_t)(c - 0x1000u);
  return CUPTI_SUCCESS;
}

/* A stream handle is its id here. */
EXPORT CUptiResult cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t per_thread, uint32_t *id) {
  (void)context, (void)per_thread;
  if (!id) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = (uint32_t)(uintptr_t)stream;
  return CUPTI_SUCCESS;
}

/* ---- libcuda's pools: each pool's reserved bytes, each device's current pool ---- */
static struct { uint64_t handle, level; } fake_pools[512];
static size_t n_fake_pools;
static uint64_t fake_current[64];
static pthread_mutex_t fake_pool_mu = PTHREAD_MUTEX_INITIALIZER; /* threads allocate at once (test_threads) */

static void fake_pool_set_locked(uint64_t handle, uint64_t level, int gone);
static void fake_pool_set(uint64_t handle, uint64_t level, int gone) {
  pthread_mutex_lock(&fake_pool_mu);
  fake_pool_set_locked(handle, level, gone);
  pthread_mutex_unlock(&fake_pool_mu);
}

static void fake_pool_set_locked(uint64_t handle, uint64_t level, int gone) {
  for (size_t i = 0; i < n_fake_pools; i++)
    if (fake_pools[i].handle == handle) {
      if (gone) fake_pools[i] = fake_pools[--n_fake_pools];
      else fake_pools[i].level = level;
      return;
    }
  if (!gone && n_fake_pools < 512)
    fake_pools[n_fake_pools++].handle = handle, fake_pools[n_fake_pools - 1].level = level;
}

EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice device) {
  if (!pool || device < 0 || device >= 64 || !fake_current[device]) return CUDA_ERROR_INVALID_VALUE;
  *pool = (CUmemoryPool)(uintptr_t)fake_current[device];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  if (attr != CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT || !value) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_pool_mu);
  for (size_t i = 0; i < n_fake_pools && r; i++)
    if (fake_pools[i].handle == (uint64_t)(uintptr_t)pool) {
      *(cuuint64_t *)value = fake_pools[i].level;
      r = CUDA_SUCCESS;
    }
  pthread_mutex_unlock(&fake_pool_mu);
  return r;
}

/* ---- a script's call, as the callback API delivers it ---- */
typedef struct fake_call {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  union {
    cudaMalloc_v3020_params malloc_;
    cudaHostAlloc_v3020_params host;
    cudaMallocAsync_v11020_params malloc_async;
    cudaMallocFromPoolAsync_v11020_params from_pool;
    cudaFree_v3020_params free_;
    cudaFreeAsync_v11020_params free_async;
    cudaMemPoolCreate_v11020_params pool_create;
    cudaMemPoolTrimTo_v11020_params trim;
    cudaMemPoolDestroy_v11020_params destroy;
    cudaDeviceSetMemPool_v11020_params set_pool;
    cuMemAlloc_v2_params d_alloc;
    cuMemFree_v2_params d_free;
    cuMemCreate_params d_create;
    cuMemRelease_params d_release;
  } p;
  void *out;            /* what an allocation hands back */
  CUdeviceptr out_dptr; /* the driver's */
  cudaMemPool_t out_pool;
  struct cudaMemPoolProps props;
  CUmemGenericAllocationHandle out_handle;
  CUmemAllocationProp alloc_prop;
  int result;
} fake_call;

static void deliver(fake_call *c, uint32_t device, uint32_t corr, CUpti_ApiCallbackSite site) {
  CUpti_CallbackFunc cb = atomic_load(&subscriber_cb);
  if (!cb || c->cbid >= 1024 || !cb_on[c->domain][c->cbid]) return;
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionParams = &c->p;
  d.functionReturnValue = &c->result;
  d.context = FAKE_CTX(device);
  d.correlationId = corr;
  cb(atomic_load(&subscriber_data), c->domain, c->cbid, &d);
}

/* What the call does to CUDA's pools, between its entry and its exit. */
static void fake_apply(const fake_launch *l) {
  if (l->kind == FAKE_SYNC && l->pool_address) fake_pool_set(l->pool_address, l->pool_size, 0);
  if (l->kind == FAKE_MEMORY_POOL)
    fake_pool_set(l->pool_address, l->mem_op == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED ? 0 : l->pool_size,
                  l->mem_op == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED);
  if (l->kind == FAKE_MEMORY && l->pool_address && l->mem_op != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID)
    fake_pool_set(l->pool_address, l->pool_size, 0);
}

/* The call a script's memory launch stands for, its parameters filled as the call
 * leaves them; false when none. */
static int fake_memory_call(const fake_launch *l, fake_call *c) {
  memset(c, 0, sizeof *c);
  c->domain = l->driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  c->cbid = l->cbid;
  c->out = (void *)(uintptr_t)l->address;
  c->out_dptr = (CUdeviceptr)l->address;
  void *stream = (void *)(uintptr_t)l->stream, *pool = (void *)(uintptr_t)l->pool_address;
  if (l->kind == FAKE_SYNC) { /* no parameters read */
    if (!c->cbid) c->cbid = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
    return 1;
  }
  if (l->kind == FAKE_MEMORY_POOL) {
    int created = l->mem_op == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
    c->out_pool = pool;
    c->props.location.type = cudaMemLocationTypeDevice;
    c->props.location.id = (int)l->device;
    if (created) c->p.pool_create = (cudaMemPoolCreate_v11020_params){&c->out_pool, &c->props};
    else c->p.trim.memPool = pool; /* TrimTo and Destroy begin alike */
    return 1;
  }
  if (l->kind != FAKE_MEMORY || l->mem_op == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID) return 0;
  switch (c->cbid + (l->driver ? 100000u : 0u)) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: c->p.malloc_ = (cudaMalloc_v3020_params){&c->out, l->bytes}; break;
  case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
    c->p.host = (cudaHostAlloc_v3020_params){&c->out, l->bytes, 0};
    break;
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    c->p.malloc_async = (cudaMallocAsync_v11020_params){&c->out, l->bytes, stream};
    break;
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    c->p.from_pool = (cudaMallocFromPoolAsync_v11020_params){&c->out, l->bytes, pool, stream};
    break;
  case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: c->p.free_.devPtr = c->out; break;
  case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    c->p.free_async = (cudaFreeAsync_v11020_params){c->out, stream};
    break;
  case 100000u + CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    c->p.d_alloc = (cuMemAlloc_v2_params){&c->out_dptr, l->bytes};
    break;
  case 100000u + CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: c->p.d_free.dptr = c->out_dptr; break;
  case 100000u + CUPTI_DRIVER_TRACE_CBID_cuMemCreate: /* address: the handle */
    c->out_handle = l->address;
    c->alloc_prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    c->alloc_prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    c->alloc_prop.location.id = (int)l->device;
    c->p.d_create = (cuMemCreate_params){&c->out_handle, l->bytes, &c->alloc_prop, 0};
    break;
  case 100000u + CUPTI_DRIVER_TRACE_CBID_cuMemRelease: c->p.d_release.handle = l->address; break;
  default: return 0;
  }
  return 1;
}

/* PPU's CUPTI reports the driver call a runtime call makes: the same memory twice
 * unless the tracer tells them apart. */
static int ppu_driver_form(const fake_call *rt, fake_call *d) {
  memset(d, 0, sizeof *d);
  d->domain = CUPTI_CB_DOMAIN_DRIVER_API;
  d->out_dptr = (CUdeviceptr)(uintptr_t)rt->out;
  if (rt->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) {
    d->cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2;
    d->p.d_alloc = (cuMemAlloc_v2_params){&d->out_dptr, rt->p.malloc_.size};
  } else if (rt->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020) {
    d->cbid = CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2;
    d->p.d_free.dptr = d->out_dptr;
  } else {
    return 0;
  }
  return 1;
}

/* A cudaMallocAsync from a pool that is not its device's current one: the program
 * called cudaDeviceSetMemPool first (its own call, made here). */
static void fake_current_pool(const fake_launch *l) {
  if (l->kind != FAKE_MEMORY || l->driver || l->cbid != CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020 ||
      l->device >= 64 || fake_current[l->device] == l->pool_address)
    return;
  fake_current[l->device] = l->pool_address;
  fake_call c;
  memset(&c, 0, sizeof c);
  c.domain = CUPTI_CB_DOMAIN_RUNTIME_API;
  c.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetMemPool_v11020;
  c.p.set_pool = (cudaDeviceSetMemPool_v11020_params){(int)l->device, (cudaMemPool_t)(uintptr_t)l->pool_address};
  uint32_t corr = next_corr++;
  deliver(&c, l->device, corr, CUPTI_API_ENTER);
  deliver(&c, l->device, corr, CUPTI_API_EXIT);
}

/* An allocation call on the calling thread, delivered to the subscriber at its entry
 * and exit outside the fake's lock (no records): threads allocating at once, as a
 * program's do, reach the tracer's callback concurrently (test_threads, under TSan). */
EXPORT void fake_cupti_call(const fake_launch *l) {
  fake_call c;
  if (!fake_memory_call(l, &c)) return;
  static atomic_uint corr = 1u << 30;
  uint32_t id = atomic_fetch_add(&corr, 1);
  deliver(&c, l->device, id, CUPTI_API_ENTER);
  fake_apply(l);
  deliver(&c, l->device, id, CUPTI_API_EXIT);
}

/* What cudaProfilerStart/Stop would make CUPTI do: enter and exit callbacks. */
EXPORT void fake_cupti_profiler_api(int start) {
  fake_call c;
  memset(&c, 0, sizeof c);
  c.domain = CUPTI_CB_DOMAIN_RUNTIME_API;
  c.cbid = start ? CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 : CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000;
  deliver(&c, 0, 0, CUPTI_API_ENTER);
  deliver(&c, 0, 0, CUPTI_API_EXIT);
}

#endif
