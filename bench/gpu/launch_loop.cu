// Launch-bound loop for the overhead benchmarks (P1, P2): empty kernels, timed on
// the host. Knows nothing of flagtrace or CUPTI: what it runs under (nothing,
// `flagtrace record`, the raw-CUPTI floor) is the variable.
//   launch_loop [LAUNCHES] [REPS]   REPS loops, one JSON line
//   launch_loop LAUNCHES serve      "ready", then one loop per line read from stdin,
//                                   its µs/launch on a line of its own (bench/run.py
//                                   takes turns between live processes: lockstep)
// FT_BENCH_MMAP_PAD / FT_BENCH_HEAP_PAD (bytes): the layout offsets bench/run.py drew
// for this process's group (its layout()), taken before CUDA is touched.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_driver.h"

__global__ void empty_kernel() {}

static double one_loop(long n) {
  double t0 = now_s();
  for (long i = 0; i < n; i++) empty_kernel<<<1, 1>>>();
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  return (now_s() - t0) * 1e6 / (double)n;
}

int main(int argc, char **argv) {
  if (!take_layout_pads()) {
    fprintf(stderr, "launch_loop: could not take the layout offsets FT_BENCH_MMAP_PAD / FT_BENCH_HEAP_PAD\n");
    return 1;
  }
  long n = argc > 1 ? atol(argv[1]) : 200000;
  bool serve = argc > 2 && !strcmp(argv[2], "serve");
  int reps = argc > 2 && !serve ? atoi(argv[2]) : 3;
  if (n <= 0 || reps <= 0 || reps > 64) {
    fprintf(stderr, "usage: launch_loop [LAUNCHES>0] [REPS 1..64 | serve]\n");
    return 2;
  }
  if (cudaFree(0) != cudaSuccess) {
    fprintf(stderr, "launch_loop: no CUDA device\n");
    return 1;
  }
  for (long i = 0; i < 10000; i++) empty_kernel<<<1, 1>>>(); // warm-up: module load, queues
  cudaDeviceSynchronize();
  return drive_loops(one_loop, n, serve, reps, "launches", "us_per_launch");
}
