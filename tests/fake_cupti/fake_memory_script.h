/* The memory script of the fake CUPTI tests (issue 51): CUDA allocation calls, each
 * with the record CUPTI 13 hands back for it; run at the sink (fake_memory.h) and
 * under `flagtrace record` (inject_driver memory, tests/e2e/test_record_memory.py). */
#ifndef FT_FAKE_MEMORY_SCRIPT_H
#define FT_FAKE_MEMORY_SCRIPT_H

#include <cupti_activity.h>
#include <cupti_runtime_cbid.h>

#include "fake_cupti.h"

#define MIB (1024ull * 1024ull)
#define MEM_DEV_A 0x7f0000000000ull /* cudaMalloc's */
#define MEM_POOL 0x7e0000000000ull  /* the pool's base, and its first allocation */
#define MEM_POOL_B (MEM_POOL + 4 * MIB)
#define MEM_HOST 0x7d0000000000ull

/* The script: what the program calls, each call with its memory record. */
static inline void fake_memory_script(fake_cupti_launch_fn launch) {
  const CUpti_ActivityMemoryKind DEV = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  const int LOCAL = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  const int ALLOC = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
            FREE = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  fake_launch script[] = {
      /* cudaMalloc(1 MiB): outside any pool */
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
       .mem_op = ALLOC,
       .memory_kind = DEV,
       .address = MEM_DEV_A,
       .bytes = MIB},
      /* cudaMemPoolCreate: an empty local pool */
      {.kind = FAKE_MEMORY_POOL,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020,
       .mem_op = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED,
       .pool_type = LOCAL,
       .pool_address = MEM_POOL},
      /* cudaMallocAsync(4 MiB) on stream 7: the pool grows to 32 MiB for it */
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
       .mem_op = ALLOC,
       .memory_kind = DEV,
       .address = MEM_POOL,
       .bytes = 4 * MIB,
       .stream = 7,
       .pool_type = LOCAL,
       .pool_address = MEM_POOL,
       .pool_size = 32 * MIB,
       .pool_used = 4 * MIB},
      /* cudaMallocAsync(8 MiB): from what the pool holds */
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
       .mem_op = ALLOC,
       .memory_kind = DEV,
       .address = MEM_POOL_B,
       .bytes = 8 * MIB,
       .stream = 7,
       .pool_type = LOCAL,
       .pool_address = MEM_POOL,
       .pool_size = 32 * MIB,
       .pool_used = 12 * MIB},
      /* cudaFreeAsync of both */
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
       .mem_op = FREE,
       .memory_kind = DEV,
       .address = MEM_POOL,
       .bytes = 4 * MIB,
       .stream = 7,
       .pool_type = LOCAL,
       .pool_address = MEM_POOL,
       .pool_size = 32 * MIB,
       .pool_used = 8 * MIB},
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
       .mem_op = FREE,
       .memory_kind = DEV,
       .address = MEM_POOL_B,
       .bytes = 8 * MIB,
       .stream = 7,
       .pool_type = LOCAL,
       .pool_address = MEM_POOL,
       .pool_size = 32 * MIB,
       .pool_used = 0},
      /* cudaMemPoolTrimTo(pool, 0): all 32 MiB released */
      {.kind = FAKE_MEMORY_POOL,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolTrimTo_v11020,
       .mem_op = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED,
       .pool_type = LOCAL,
       .pool_address = MEM_POOL,
       .pool_size = 0,
       .min_keep = 0},
      /* cudaFree of the first */
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
       .mem_op = FREE,
       .memory_kind = DEV,
       .address = MEM_DEV_A,
       .bytes = MIB},
      /* cudaMemPoolDestroy */
      {.kind = FAKE_MEMORY_POOL,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020,
       .mem_op = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED,
       .pool_type = LOCAL,
       .pool_address = MEM_POOL},
      /* cudaHostAlloc(64 KiB) on device 1: pinned host memory */
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
       .mem_op = ALLOC,
       .memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
       .address = MEM_HOST,
       .bytes = 65536,
       .device = 1},
      /* a record naming no operation: dropped, counted */
      {.kind = FAKE_MEMORY,
       .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
       .mem_op = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID,
       .memory_kind = DEV,
       .address = 1,
       .bytes = 1},
  };
  for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) launch(&script[i]);
}

#endif
