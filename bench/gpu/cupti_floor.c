/* The P2 floor: the least a CUPTI activity tracer can do, as an injection library
 * (CUDA_INJECTION64_PATH). It enables the kinds `flagtrace record` enables by default,
 * walks every record of every buffer (counting them), and flushes at exit. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF_BYTES (8u << 20)

static unsigned long long records;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, BUF_BYTES);
  *size = *buffer ? BUF_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) records++;
  free(buf);
}

static void at_exit(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
  fprintf(stderr, "cupti_floor: %llu records, %zu dropped\n", records, dropped);
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  static const CUpti_ActivityKind kinds[] = {
      CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
      CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS) return 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS) fprintf(stderr, "cupti_floor: kind %d not enabled\n", (int)kinds[i]);
  atexit(at_exit);
  return 1;
}
