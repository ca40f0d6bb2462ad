/* The CUDA calls memory capture from callbacks follows, and what each does to memory, read from its parameters. */
#include <cupti.h> /* the calls' parameter structures (generated_cuda*_meta.h), as CUPTI includes them */

#include "cupti_tracer.h"

#ifndef FT_MCPTI /* MCPTI's callback ids are not CUPTI's */
#define P(type) const type *p = params
#define OUT(x) ((x) ? (uint64_t)(uintptr_t) * (x) : 0)

/* What a runtime call does to memory (read at its exit); false when it is not one of ours. */
bool ft__cupti_read_runtime(CUpti_CallbackId id, const void *params, ft__mem_call *c) {
  switch (id) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
    P(cudaMalloc_v3020_params);
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_DEVICE, .ptr = OUT(p->devPtr), .bytes = p->size};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
    P(cudaMallocPitch_v3020_params);
    uint64_t pitch = p->pitch ? *p->pitch : 0;
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_DEVICE, .ptr = OUT(p->devPtr), .bytes = pitch * p->height};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
    P(cudaMallocManaged_v6000_params);
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_MANAGED, .ptr = OUT(p->devPtr), .bytes = p->size};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
    P(cudaMallocHost_v3020_params);
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_PINNED, .ptr = OUT(p->ptr), .bytes = p->size};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
    P(cudaHostAlloc_v3020_params);
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_PINNED, .ptr = OUT(p->pHost), .bytes = p->size};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
    P(cudaMallocAsync_v11020_params); /* the _ptsz form's parameters are the same */
    *c = (ft__mem_call){
        FT__MEM_ALLOC,  FT_MEMKIND_DEVICE, true, true,       id == CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
        OUT(p->devPtr), p->size,           NULL, p->hStream, -1,
        false};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
    P(cudaMallocFromPoolAsync_v11020_params);
    *c = (ft__mem_call){FT__MEM_ALLOC,
                        FT_MEMKIND_DEVICE,
                        true,
                        true,
                        id == CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
                        OUT(p->ptr),
                        p->size,
                        (CUmemoryPool)p->memPool,
                        p->stream,
                        -1,
                        false};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: {
    P(cudaFree_v3020_params);
    *c = (ft__mem_call){FT__MEM_FREE, FT_MEMKIND_DEVICE, .ptr = (uint64_t)(uintptr_t)p->devPtr};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020: {
    P(cudaFreeHost_v3020_params);
    *c = (ft__mem_call){FT__MEM_FREE, FT_MEMKIND_PINNED, .ptr = (uint64_t)(uintptr_t)p->ptr};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020: {
    P(cudaFreeAsync_v11020_params);
    *c = (ft__mem_call){FT__MEM_FREE,
                        FT_MEMKIND_DEVICE,
                        false,
                        true,
                        id == CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
                        (uint64_t)(uintptr_t)p->devPtr,
                        0,
                        NULL,
                        p->hStream,
                        -1,
                        false};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020: {
    P(cudaMemPoolCreate_v11020_params);
    int dev = p->poolProps && p->poolProps->location.type == cudaMemLocationTypeDevice ? p->poolProps->location.id : -1;
    *c = (ft__mem_call){FT__MEM_POOL_NEW, FT_MEMKIND_DEVICE, .pool = p->memPool ? (CUmemoryPool)*p->memPool : NULL,
                        .device = dev};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolTrimTo_v11020: {
    P(cudaMemPoolTrimTo_v11020_params);
    *c = (ft__mem_call){FT__MEM_POOL_TRIM, FT_MEMKIND_DEVICE, .pool = (CUmemoryPool)p->memPool};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020: {
    P(cudaMemPoolDestroy_v11020_params);
    *c = (ft__mem_call){FT__MEM_POOL_GONE, FT_MEMKIND_DEVICE, .pool = (CUmemoryPool)p->memPool};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetMemPool_v11020: {
    P(cudaDeviceSetMemPool_v11020_params);
    *c = (ft__mem_call){FT__MEM_POOL_SET, .device = p->device};
    return true;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020: *c = (ft__mem_call){.role = FT__MEM_SYNC}; return true;
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050: *c = (ft__mem_call){.role = FT__MEM_STREAM_GONE}; return true;
  default: return false;
  }
}

/* The same for a driver call (JAX's allocator, CuPy's driver path, ...). */
bool ft__cupti_read_driver(CUpti_CallbackId id, const void *params, ft__mem_call *c) {
  switch (id) {
  case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
    P(cuMemAlloc_v2_params);
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_DEVICE, .ptr = OUT(p->dptr), .bytes = p->bytesize};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
    P(cuMemAllocPitch_v2_params);
    uint64_t pitch = p->pPitch ? *p->pPitch : 0;
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_DEVICE, .ptr = OUT(p->dptr), .bytes = pitch * p->Height};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
    P(cuMemAllocManaged_params);
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_MANAGED, .ptr = OUT(p->dptr), .bytes = p->bytesize};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
    P(cuMemAllocHost_v2_params);
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_PINNED, .ptr = OUT(p->pp), .bytes = p->bytesize};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
    P(cuMemHostAlloc_params);
    *c = (ft__mem_call){FT__MEM_ALLOC, FT_MEMKIND_PINNED, .ptr = OUT(p->pp), .bytes = p->bytesize};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
    P(cuMemAllocAsync_params);
    *c = (ft__mem_call){
        FT__MEM_ALLOC, FT_MEMKIND_DEVICE, true, true,       id == CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
        OUT(p->dptr),  p->bytesize,       NULL, p->hStream, -1,
        false};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
    P(cuMemAllocFromPoolAsync_params);
    *c = (ft__mem_call){FT__MEM_ALLOC,
                        FT_MEMKIND_DEVICE,
                        true,
                        true,
                        id == CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
                        OUT(p->dptr),
                        p->bytesize,
                        p->pool,
                        p->hStream,
                        -1,
                        false};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: {
    P(cuMemFree_v2_params);
    *c = (ft__mem_call){FT__MEM_FREE, FT_MEMKIND_DEVICE, .ptr = p->dptr};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost: {
    P(cuMemFreeHost_params);
    *c = (ft__mem_call){FT__MEM_FREE, FT_MEMKIND_PINNED, .ptr = (uint64_t)(uintptr_t)p->p};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
    P(cuMemFreeAsync_params);
    *c = (ft__mem_call){
        FT__MEM_FREE, FT_MEMKIND_DEVICE, false, true, id == CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, p->dptr, 0,
        NULL,         p->hStream,        -1,    false};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemPoolCreate: {
    P(cuMemPoolCreate_params);
    int dev =
        p->poolProps && p->poolProps->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? p->poolProps->location.id : -1;
    *c = (ft__mem_call){FT__MEM_POOL_NEW, FT_MEMKIND_DEVICE, .pool = p->pool ? *p->pool : NULL, .device = dev};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo: {
    P(cuMemPoolTrimTo_params);
    *c = (ft__mem_call){FT__MEM_POOL_TRIM, FT_MEMKIND_DEVICE, .pool = p->pool};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy: {
    P(cuMemPoolDestroy_params);
    *c = (ft__mem_call){FT__MEM_POOL_GONE, FT_MEMKIND_DEVICE, .pool = p->pool};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuDeviceSetMemPool: {
    P(cuDeviceSetMemPool_params);
    *c = (ft__mem_call){FT__MEM_POOL_SET, .device = (int)p->dev};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: { /* virtual memory (XLA's allocator, torch's expandable segments) */
    P(cuMemCreate_params);
    bool host = p->prop && (p->prop->location.type == CU_MEM_LOCATION_TYPE_HOST ||
                            p->prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA);
    int dev = p->prop && p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? p->prop->location.id : -1;
    *c = (ft__mem_call){FT__MEM_ALLOC,         host ? FT_MEMKIND_PINNED : FT_MEMKIND_DEVICE,
                        .ptr = OUT(p->handle), .bytes = p->size,
                        .device = dev,         .own_device = dev >= 0};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemRelease: {
    P(cuMemRelease_params);
    *c = (ft__mem_call){FT__MEM_FREE, FT_MEMKIND_DEVICE, .ptr = p->handle, .device = -1, .own_device = true};
    return true;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
  case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
  case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
  case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize: *c = (ft__mem_call){.role = FT__MEM_SYNC}; return true;
  case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy:
  case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2: *c = (ft__mem_call){.role = FT__MEM_STREAM_GONE}; return true;
  default: return false;
  }
}
#undef P
#undef OUT

/* Whether a call's entry matters (a synchronization, a trim, a pool's destruction:
 * cupti_memory.c reads pools there), told from its id alone: every other call's entry
 * costs no parameter read. Agrees with the roles above (test_cupti_fake checks). */
bool ft__cupti_entry_call(bool driver, CUpti_CallbackId id) {
  if (driver) {
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo:
    case CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize: return true;
    default: return false;
    }
  }
  switch (id) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolTrimTo_v11020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020: return true;
  default: return false;
  }
}

/* Every call above, per domain, enabled together. */
const CUpti_CallbackId ft__cupti_runtime_calls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolTrimTo_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetMemPool_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050,
};
const CUpti_CallbackId ft__cupti_driver_calls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemPoolCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo,
    CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceSetMemPool,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy,
    CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2,
};

const size_t ft__cupti_n_runtime_calls = sizeof ft__cupti_runtime_calls / sizeof *ft__cupti_runtime_calls;
const size_t ft__cupti_n_driver_calls = sizeof ft__cupti_driver_calls / sizeof *ft__cupti_driver_calls;
#endif
