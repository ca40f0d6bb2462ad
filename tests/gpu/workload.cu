// GPU workload for the CUPTI tracer: kernels of several shapes, copies, a memset,
// traced through the C API with named ranges; writes the trace and what it launched.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include <flagtrace/flagtrace.h>

__global__ void add_kernel(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += in[i];
}

// a block size that is not a multiple of 32
__global__ void odd_block_kernel(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = out[i] * 0.5f + 1.0f;
}

template <int N>
__global__ void scale_kernel(float *out, int n) {
  int i = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  int j = i * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
  if (j < n) out[j] *= (float)N;
}

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      fprintf(stderr, "workload: %s: %s\n", #x, cudaGetErrorString(e_));          \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)
#define FT(x)                                                                     \
  do {                                                                            \
    ft_status s_ = (x);                                                           \
    if (s_ != FT_OK) {                                                            \
      fprintf(stderr, "workload: %s: %s (%s)\n", #x, ft_strerror(s_),              \
              ft_session_last_error(sess));                                        \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: gpu_workload TRACE EXPECT_JSON\n");
    return 2;
  }
  const int n = 1 << 20;
  float *host = (float *)calloc(n, sizeof(float));
  float *a, *b;
  CHECK(cudaFree(0)); // the context exists before the session: late arming (gpu-facts)
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));

  ft_session *sess = NULL;
  FT(ft_session_create(&sess, NULL));
  const char *why = "";
  if (ft_session_device_status(sess, &why) != FT_OK) {
    fprintf(stderr, "workload: no device tracer: %s\n", why);
    return 1;
  }
  FT(ft_session_start(sess));
  uint64_t r_setup, r_kernels, r_copies;

  FT(ft_range_push(sess, "setup", &r_setup));
  CHECK(cudaMemcpy(a, host, n * sizeof(float), cudaMemcpyHostToDevice)); // 4 MiB pageable H2D
  CHECK(cudaMemcpy(b, host, n * sizeof(float), cudaMemcpyHostToDevice));
  FT(ft_range_pop(sess));

  FT(ft_range_push(sess, "kernels", &r_kernels));
  for (int rep = 0; rep < 3; rep++) add_kernel<<<4096, 256>>>(a, b, n);
  add_kernel<<<100, 96>>>(a, b, 9600);
  odd_block_kernel<<<37, 100>>>(a, 3700);
  scale_kernel<3><<<dim3(8, 4, 2), dim3(16, 8, 1)>>>(a, 8192);
  CHECK(cudaGetLastError());
  FT(ft_range_pop(sess));

  FT(ft_range_push(sess, "copies", &r_copies));
  CHECK(cudaMemcpyAsync(b, a, 512 * 1024, cudaMemcpyDeviceToDevice, 0));
  CHECK(cudaMemsetAsync(b, 0, 256 * 1024, 0));
  CHECK(cudaMemcpy(host, a, n * sizeof(float), cudaMemcpyDeviceToHost)); // 4 MiB D2H
  CHECK(cudaDeviceSynchronize());
  FT(ft_range_pop(sess));

  FT(ft_session_stop(sess));
  FT(ft_session_write(sess, argv[1]));
  uint64_t t_setup, t_kernels, t_copies, n_setup, n_kernels, n_copies;
  FT(ft_session_device_time(sess, r_setup, &t_setup, &n_setup));
  FT(ft_session_device_time(sess, r_kernels, &t_kernels, &n_kernels));
  FT(ft_session_device_time(sess, r_copies, &t_copies, &n_copies));
  ft_session_counts c;
  FT(ft_session_counts_get(sess, &c));

  FILE *f = fopen(argv[2], "w");
  fprintf(f,
          "{\"kernels\": ["
          "{\"name\": \"add_kernel(float*, float const*, int)\", \"grid\": [4096, 1, 1], \"block\": [256, 1, 1], \"count\": 3},"
          "{\"name\": \"add_kernel(float*, float const*, int)\", \"grid\": [100, 1, 1], \"block\": [96, 1, 1], \"count\": 1},"
          "{\"name\": \"odd_block_kernel(float*, int)\", \"grid\": [37, 1, 1], \"block\": [100, 1, 1], \"count\": 1},"
          "{\"name\": \"void scale_kernel<3>(float*, int)\", \"grid\": [8, 4, 2], \"block\": [16, 8, 1], \"count\": 1}],"
          " \"memcpy\": [{\"kind\": \"HtoD\", \"bytes\": %d, \"count\": 2}, {\"kind\": \"DtoD\", \"bytes\": 524288, \"count\": 1},"
          " {\"kind\": \"DtoH\", \"bytes\": %d, \"count\": 1}],"
          " \"memset\": [{\"bytes\": 262144, \"count\": 1}],"
          " \"ranges\": {\"setup\": [%llu, %llu, %llu], \"kernels\": [%llu, %llu, %llu], \"copies\": [%llu, %llu, %llu]},"
          " \"dropped\": %llu}\n",
          (int)(n * sizeof(float)), (int)(n * sizeof(float)), (unsigned long long)r_setup,
          (unsigned long long)t_setup, (unsigned long long)n_setup, (unsigned long long)r_kernels,
          (unsigned long long)t_kernels, (unsigned long long)n_kernels, (unsigned long long)r_copies,
          (unsigned long long)t_copies, (unsigned long long)n_copies, (unsigned long long)c.dropped_records);
  fclose(f);
  printf("workload: %llu device events, %llu flows, %llu dropped, %llu outside the window\n",
         (unsigned long long)c.device_events, (unsigned long long)c.flows,
         (unsigned long long)c.dropped_records, (unsigned long long)c.window_discarded);
  ft_session_destroy(sess);
  return 0;
}
