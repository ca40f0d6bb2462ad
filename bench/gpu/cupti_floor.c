/* The P2 floor: the least a CUPTI activity tracer can do, as an injection library
 * (CUDA_INJECTION64_PATH). It enables the kinds `flagtrace record` enables by default,
 * walks every record of every buffer (counting them), and flushes at exit. */
#include <cupti.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* CUPTI_FLOOR_BUFFER_BYTES: P6 runs the floor with small buffers, so that its peak is
 * CUPTI's own memory, not its buffers' (8 MiB each, 1 or 2 in flight: the floor's
 * growth was bimodal, 13 or 21 MB); P2 keeps the default. */
static size_t buf_bytes = 8u << 20;

static unsigned long long records;
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
  fprintf(stderr, "cupti_floor: %llu records, %zu dropped, at most %ld buffers of %zu KiB held at once\n", records,
          dropped, atomic_load(&max_outstanding), buf_bytes >> 10);
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
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS) return 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS)
      fprintf(stderr, "cupti_floor: kind %d not enabled\n", (int)kinds[i]);
  atexit(at_exit);
  return 1;
}
