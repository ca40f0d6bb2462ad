/* Control interface of the fake libcupti: what a test "launches" becomes records. */
#ifndef FT_FAKE_CUPTI_H
#define FT_FAKE_CUPTI_H

#include <stddef.h>
#include <stdint.h>

enum { FAKE_KERNEL, FAKE_MEMCPY, FAKE_MEMSET, FAKE_RUNTIME_ONLY, FAKE_P2P, FAKE_SYNC, FAKE_MEMORY, FAKE_MEMORY_POOL };

typedef struct fake_launch {
  int kind;
  const char *name; /* kernels: the (possibly mangled) name CUPTI would report */
  int grid[3], block[3];
  int regs, static_smem, dynamic_smem;
  uint8_t copy_kind, src_kind, dst_kind; /* memcpy */
  uint16_t memory_kind;                  /* memset */
  uint64_t bytes;
  int64_t start_offset_ns; /* device record start relative to the launch call */
  uint64_t dur_ns;
  int device_records; /* 0 = 1; 2+ = one launch producing several (a graph) */
  int no_runtime;     /* 1: no runtime record (a launch CUPTI did not see) */
  uint32_t cbid;      /* runtime callback id; 0 = cudaLaunchKernel (211) */
  int driver;         /* 1: a driver API call (cbid 0 = cuLaunchKernel, 307) */
  uint32_t stream;
  uint32_t device;                 /* device records: the device that ran them */
  uint32_t src_device, dst_device; /* FAKE_P2P: a CUPTI_ACTIVITY_KIND_MEMCPY2 record */
  int no_timing;                   /* 1: device records with start = end = 0 ("timing unavailable") */
  /* FAKE_SYNC: a CUpti_ActivitySynchronization2 record of this type (1 event, 2 stream
   * wait event, 3 stream, 4 context sync) beside the runtime call (cbid: the caller's,
   * default cudaStreamSynchronize); stream 0 means none (CUPTI's invalid value) */
  int sync_type;
  uint32_t event_id;
  /* FAKE_MEMORY: a CUpti_ActivityMemory4 record (mem_op: CUPTI's memory operation type;
   * memory_kind, address, bytes; stream 0 means none; pool_type, pool_address,
   * pool_size, pool_used: its memoryPoolConfig). FAKE_MEMORY_POOL: a
   * CUpti_ActivityMemoryPool3 record (mem_op: the pool operation type; pool_type,
   * pool_address, pool_size, pool_used, min_keep). Both stamped inside the call (t0 + 200)
   * and in the device buffer; cbid: the runtime call that made it. */
  int mem_op, pool_type;
  uint64_t address, pool_address, pool_size, pool_used, min_keep;
} fake_launch;

/* Records the launch as CUPTI would: a runtime API record (and an external
 * correlation record when an id is pushed) in the API buffer, the device
 * records in the device buffer. Returns the correlation id. */
typedef uint32_t (*fake_cupti_launch_fn)(const fake_launch *l);
/* Records CUPTI will report as dropped at the next buffer completion. */
typedef void (*fake_cupti_drop_fn)(size_t n);

#endif
