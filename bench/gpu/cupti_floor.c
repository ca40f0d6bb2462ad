/* The P2 floor: the least a CUPTI activity tracer can do, as an injection library
 * (CUDA_INJECTION64_PATH). It enables the kinds `flagtrace record` enables by default,
 * walks every record of every buffer (counting them), and flushes at exit.
 * CUPTI_FLOOR_MEMORY=1 adds MEMORY2 and MEMORY_POOL: P7's floor, what CUPTI itself costs an
 * allocation when memory records are on, whatever a tracer then does with them. Where that
 * cost lies (FT_BENCH_P7_PARTS): =records MEMORY2 alone, =pool MEMORY_POOL alone, =callbacks
 * no memory records but a callback on every allocation and free call that takes a timestamp
 * and reads an allocation's size (what a tracer built on callbacks would pay instead). */
#include <cupti.h>
#include <cuda_runtime_api.h>
#include <string.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* CUPTI_FLOOR_BUFFER_BYTES: P6 runs the floor with small buffers, so that its peak is
 * CUPTI's own memory, not its buffers' (8 MiB each, 1 or 2 in flight: the floor's
 * growth was bimodal, 13 or 21 MB); P2 keeps the default. */
static size_t buf_bytes = 8u << 20;

static unsigned long long records;
static _Atomic unsigned long long calls, bytes;

/* =callbacks: what the callback itself would need of each call, no more */
static void CUPTIAPI on_call(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
  (void)ud, (void)domain;
  const CUpti_CallbackData *cb = data;
  if (cb->callbackSite != CUPTI_API_EXIT) return;
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts); /* an event's time: taken as a tracer would, the value not kept here */
  size_t n = 0;
  if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020)
    n = ((const cudaMallocAsync_v11020_params *)cb->functionParams)->size;
  else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020)
    n = ((const cudaMalloc_v3020_params *)cb->functionParams)->size;
  atomic_fetch_add_explicit(&bytes, n, memory_order_relaxed);
  atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
}
/* buffers CUPTI holds at once (its RSS share of P6's floor); CUPTI's callbacks may
 * come from several threads */
static atomic_long outstanding, max_outstanding;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, buf_bytes);
  *size = *buffer ? buf_bytes : 0;
  *max_records = 0;
  long now = atomic_fetch_add(&outstanding, 1) + 1;
  long m = atomic_load(&max_outstanding);
  while (now > m && !atomic_compare_exchange_weak(&max_outstanding, &m, now)) {
  }
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) records++;
  free(buf);
  atomic_fetch_sub(&outstanding, 1);
}

static void at_exit(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
  fprintf(stderr, "cupti_floor: %llu records, %zu dropped, at most %ld buffers of %zu KiB held at once", records,
          dropped, atomic_load(&max_outstanding), buf_bytes >> 10);
  if (atomic_load(&calls))
    fprintf(stderr, ", %llu allocation calls seen (%llu bytes allocated)", (unsigned long long)atomic_load(&calls),
            (unsigned long long)atomic_load(&bytes));
  fprintf(stderr, "\n");
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  const char *b = getenv("CUPTI_FLOOR_BUFFER_BYTES");
  unsigned long long want = b ? strtoull(b, NULL, 10) : 0;
  if (want >= 4096) buf_bytes = (size_t)want & ~(size_t)7;
  static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                             CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                             CUPTI_ACTIVITY_KIND_MEMCPY,
                                             CUPTI_ACTIVITY_KIND_MEMSET,
                                             CUPTI_ACTIVITY_KIND_RUNTIME,
                                             CUPTI_ACTIVITY_KIND_DRIVER};
  static const CUpti_ActivityKind memory[] = {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY_POOL};
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS) return 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS)
      fprintf(stderr, "cupti_floor: kind %d not enabled\n", (int)kinds[i]);
  const char *mem = getenv("CUPTI_FLOOR_MEMORY");
  mem = mem ? mem : "";
  bool all = !strcmp(mem, "1");
  for (size_t i = 0; i < sizeof memory / sizeof memory[0]; i++) {
    if (!all && strcmp(mem, i ? "pool" : "records")) continue;
    if (cuptiActivityEnable(memory[i]) != CUPTI_SUCCESS)
      fprintf(stderr, "cupti_floor: kind %d not enabled\n", (int)memory[i]);
  }
  static const CUpti_CallbackId watched[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020};
  CUpti_SubscriberHandle sub;
  if (!strcmp(mem, "callbacks") && cuptiSubscribe(&sub, on_call, NULL) == CUPTI_SUCCESS)
    for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++)
      if (cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, watched[i]) != CUPTI_SUCCESS)
        fprintf(stderr, "cupti_floor: callback %d not enabled\n", (int)watched[i]);
  atexit(at_exit);
  return 1;
}
