// Allocation-heavy loop for the memory capture's cost (P7): cudaMallocAsync/cudaFreeAsync
// pairs from the device's default pool, sizes cycling 4 KiB..4 MiB, a small kernel on each
// block, and a cudaMalloc/cudaFree pair every 64 iterations; timed on the host. Knows
// nothing of flagtrace or CUPTI: what it runs under (nothing, `flagtrace record
// --memory=on|off`) is the variable.
//   alloc_loop [ITERS] [REPS]   REPS loops, one JSON line
//   alloc_loop ITERS serve      "ready", then one loop per line read from stdin, its
//                               µs/iteration on a line of its own (bench/run.py's lockstep)
// FT_BENCH_MMAP_PAD / FT_BENCH_HEAP_PAD (bytes): the layout offsets bench/run.py drew for
// this process's group (its layout()), taken before CUDA is touched.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_driver.h"

__global__ void touch(char *p) { p[threadIdx.x] = 1; }

static cudaStream_t stream;

static double one_loop(long n) {
  double t0 = now_s();
  for (long i = 0; i < n; i++) {
    void *p = NULL;
    size_t size = (size_t)4096 << (i % 11); // 4 KiB .. 4 MiB
    if (cudaMallocAsync(&p, size, stream) != cudaSuccess) return -1;
    touch<<<1, 32, 0, stream>>>((char *)p);
    if (cudaFreeAsync(p, stream) != cudaSuccess) return -1;
    if (i % 64 == 63) { // the synchronous pair (each an implicit device sync)
      void *q = NULL;
      if (cudaMalloc(&q, 1 << 20) != cudaSuccess || cudaFree(q) != cudaSuccess) return -1;
    }
  }
  if (cudaStreamSynchronize(stream) != cudaSuccess) return -1;
  return (now_s() - t0) * 1e6 / (double)n;
}

int main(int argc, char **argv) {
  if (!take_layout_pads()) {
    fprintf(stderr, "alloc_loop: could not take the layout offsets FT_BENCH_MMAP_PAD / FT_BENCH_HEAP_PAD\n");
    return 1;
  }
  long n = argc > 1 ? atol(argv[1]) : 20000;
  bool serve = argc > 2 && !strcmp(argv[2], "serve");
  int reps = argc > 2 && !serve ? atoi(argv[2]) : 3;
  if (n <= 0 || reps <= 0 || reps > 64) {
    fprintf(stderr, "usage: alloc_loop [ITERS>0] [REPS 1..64 | serve]\n");
    return 2;
  }
  if (cudaFree(0) != cudaSuccess || cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    fprintf(stderr, "alloc_loop: no CUDA device\n");
    return 1;
  }
  if (one_loop(2000) < 0) { // warm-up: module load, the pool's first growth
    fprintf(stderr, "alloc_loop: the warm-up loop failed\n");
    return 1;
  }
  return drive_loops(one_loop, n, serve, reps, "iters", "us_per_iter");
}
