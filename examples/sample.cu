// Sample CUDA program for `flagtrace record`: plain CUDA + NVTX, no flagtrace code.
// With --profiler-range it wraps its second phase in cudaProfilerStart/Stop.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scale_odd_block(float *y, int n) {  // 100 threads: not a multiple of 32
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= 0.5f;
}

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "sample: %s: %s\n", #x, cudaGetErrorString(e_));         \
      return 1;                                                                \
    }                                                                          \
  } while (0)

static int phase(const char *name, float *x, float *y, float *host, int n, int steps) {
  nvtxRangePushA(name);
  CHECK(cudaMemcpy(x, host, n * sizeof(float), cudaMemcpyHostToDevice));
  for (int s = 0; s < steps; s++) {
    nvtxRangePushA("step");
    saxpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
    scale_odd_block<<<(n + 99) / 100, 100>>>(y, n);
    nvtxRangePop();
  }
  CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), 0));
  CHECK(cudaMemcpy(host, y, n * sizeof(float), cudaMemcpyDeviceToHost));
  nvtxMarkA("phase done");
  nvtxRangePop();
  return 0;
}

int main(int argc, char **argv) {
  bool range = argc > 1 && !strcmp(argv[1], "--profiler-range");
  const int n = 1 << 20;
  float *host = (float *)calloc(n, sizeof(float)), *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  if (phase("warmup", x, y, host, n, 2)) return 1;
  if (range) CHECK(cudaProfilerStart());
  if (phase("measured", x, y, host, n, 5)) return 1;
  CHECK(cudaDeviceSynchronize());
  if (range) CHECK(cudaProfilerStop());
  if (phase("cooldown", x, y, host, n, 1)) return 1;
  CHECK(cudaDeviceSynchronize());
  printf("sample: done (%d floats, %s)\n", n, range ? "profiler range around 'measured'" : "whole run");
  return 0;
}
