// Device memory probe for `flagtrace record` (issue 51; plain CUDA, no flagtrace code):
// the fake CUPTI tests' script on a real GPU. After each call it prints what CUDA itself
// says (the pointer, the pool's reserved and used bytes) as one JSON line, so that
// check_mem_pool.py can hold the trace's [memory] instants against it, and settle how
// CUPTI's pool sizes read (docs/memory.md, "Capture: CUDA").
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#define CHECK(x)                                                            \
  do {                                                                      \
    cudaError_t e_ = (x);                                                   \
    if (e_ != cudaSuccess) {                                                \
      fprintf(stderr, "mem_pool_probe: %s: %s\n", #x, cudaGetErrorString(e_)); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

static FILE *out;

// One line: the call just made, its pointer (0 for none), the pool's reserved and used
// bytes after it (-1 when there is no pool).
static int say(const char *call, const void *ptr, cudaMemPool_t pool) {
  unsigned long long reserved = 0, used = 0;
  long long r = -1, u = -1;
  if (pool) {
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess)
      return 1;
    r = (long long)reserved, u = (long long)used;
  }
  fprintf(out, "{\"call\": \"%s\", \"ptr\": %llu, \"reserved\": %lld, \"used\": %lld}\n", call,
          (unsigned long long)(uintptr_t)ptr, r, u);
  return 0;
}

int main(int argc, char **argv) {
  out = argc > 1 ? fopen(argv[1], "w") : stdout;
  if (!out) return 2;
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));  // the context, before anything is measured
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  const size_t MiB = 1 << 20;
  void *a = NULL, *p = NULL, *q = NULL;
  CHECK(cudaMalloc(&a, MiB));
  if (say("cudaMalloc", a, NULL)) return 1;

  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  if (say("cudaMemPoolCreate", NULL, pool)) return 1;
  // kept across synchronizations: only the trim releases it
  unsigned long long keep = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  CHECK(cudaMallocFromPoolAsync(&p, 4 * MiB, pool, s));
  CHECK(cudaStreamSynchronize(s));
  if (say("cudaMallocFromPoolAsync", p, pool)) return 1;
  CHECK(cudaMallocFromPoolAsync(&q, 8 * MiB, pool, s));
  CHECK(cudaStreamSynchronize(s));
  if (say("cudaMallocFromPoolAsync", q, pool)) return 1;
  CHECK(cudaFreeAsync(p, s));
  CHECK(cudaStreamSynchronize(s));
  if (say("cudaFreeAsync", p, pool)) return 1;
  CHECK(cudaFreeAsync(q, s));
  CHECK(cudaStreamSynchronize(s));
  if (say("cudaFreeAsync", q, pool)) return 1;
  CHECK(cudaMemPoolTrimTo(pool, 0));
  if (say("cudaMemPoolTrimTo", NULL, pool)) return 1;
  CHECK(cudaFree(a));
  if (say("cudaFree", a, NULL)) return 1;

  // the device's default pool (release threshold 0: released at each synchronization)
  cudaMemPool_t def;
  CHECK(cudaDeviceGetDefaultMemPool(&def, 0));
  CHECK(cudaMallocAsync(&p, 16 * MiB, s));
  CHECK(cudaStreamSynchronize(s));
  if (say("cudaMallocAsync", p, def)) return 1;
  CHECK(cudaFreeAsync(p, s));
  CHECK(cudaStreamSynchronize(s));
  if (say("cudaFreeAsync", p, def)) return 1;

  CHECK(cudaMemPoolDestroy(pool));
  if (say("cudaMemPoolDestroy", NULL, NULL)) return 1;
  CHECK(cudaStreamDestroy(s));
  if (out != stdout) fclose(out);
  return 0;
}
