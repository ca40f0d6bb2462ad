// A real capture through the C API for P4 (write throughput on a real capture), P5
// (the trace `flagtrace stats` reads) and P6 (memory per captured event). Launches
// KERNELS kernels in named ranges of 10 (a CPU range, its launches and kernels, as a
// framework op would make), then writes the trace REPS times, JSON and gzip.
// CAPTURE_BENCH_NO_FLAGTRACE=1: the launches only (run under the raw-CUPTI floor,
// its peak RSS is what CUPTI itself holds for the same records).
#include <cuda_runtime.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <flagtrace/flagtrace.h>

#include "../bench_common.h"

__global__ void fill_kernel(float *x, float v) { x[threadIdx.x] = v; }
__global__ void scale_kernel(float *x, float v) { x[threadIdx.x] *= v; }

// CAPTURE_BENCH_MEMORY=1: where the peak's memory is (P6's split), on stderr: the
// process's anonymous and file pages, and malloc's view (in use, free in its arenas,
// mapped blocks) over every arena.
static void print_memory(const char *when) {
  if (!getenv("CAPTURE_BENCH_MEMORY")) return;
  struct mallinfo2 m = mallinfo2();
  fprintf(stderr, "{\"memory\": \"%s\", \"rss\": %.0f, \"hwm\": %.0f, \"anon\": %.0f, \"file\": %.0f, \"shmem\": %.0f, "
          "\"malloc_in_use\": %zu, \"malloc_free\": %zu, \"malloc_mmapped\": %zu, \"arena\": %zu}\n",
          when, ft_bench_proc_bytes("VmRSS:"), ft_bench_proc_bytes("VmHWM:"), ft_bench_proc_bytes("RssAnon:"),
          ft_bench_proc_bytes("RssFile:"), ft_bench_proc_bytes("RssShmem:"), m.uordblks, m.fordblks, m.hblkhd, m.arena);
}

static void print_times(const char *key, const double *t, int n) {
  printf("\"%s\": [", key);
  for (int i = 0; i < n; i++) printf("%s%.5f", i ? ", " : "", t[i]);
  printf("], ");
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: capture_bench KERNELS OUT_PREFIX [REPS]\n");
    return 2;
  }
  long n = atol(argv[1]);
  const char *prefix = argv[2];
  int reps = argc > 3 ? atoi(argv[3]) : 5;
  if (n <= 0 || reps <= 0 || reps > 32) return 2;
  float *x;
  if (cudaMalloc(&x, 1024 * sizeof(float)) != cudaSuccess) {
    fprintf(stderr, "capture_bench: no CUDA device\n");
    return 1;
  }
  for (int i = 0; i < 1000; i++) fill_kernel<<<1, 32>>>(x, 1.0f);
  cudaDeviceSynchronize();
  double rss0 = ft_bench_proc_bytes("VmRSS:");
  print_memory("before");
  if (getenv("CAPTURE_BENCH_NO_FLAGTRACE")) { // the P6 baseline: the same launches, no session
    for (long i = 0; i < n; i++) {
      if (i & 1) scale_kernel<<<1, 32>>>(x, 1.0001f);
      else fill_kernel<<<1, 32>>>(x, 2.0f);
    }
    cudaDeviceSynchronize();
    print_memory("floor, after");
    printf("{\"kernels\": %ld, \"rss_before\": %.0f, \"peak_rss\": %.0f}\n", n, rss0, ft_bench_proc_bytes("VmHWM:"));
    return 0;
  }
  ft_session *s;
  ft_status st = ft_session_create(&s, NULL);
  if (!st) st = ft_session_start(s);
  const char *why = "";
  if (st || ft_session_device_status(s, &why)) {
    fprintf(stderr, "capture_bench: no device tracing: %s %s\n", ft_strerror(st), why);
    return 1;
  }
  // P6 counts from here, the session armed, as the floor's figure counts from its
  // own armed state (its CUPTI is loaded and enabled at CUDA init, before rss0):
  // libcupti's code and CUPTI's enable-time allocations are per process, not per
  // event. Our activity buffers are untouched until CUPTI fills them, so they stay
  // in the figure. rss_at_create: the same from before ft_session_create.
  double rss_at_create = rss0;
  rss0 = ft_bench_proc_bytes("VmRSS:");
  print_memory("armed");
  char name[32];
  double t_capture = ft_bench_now_s();
  for (long i = 0; i < n; i += 10) {
    snprintf(name, sizeof name, "op%ld", (i / 10) % 50);
    ft_range_push(s, name, NULL);
    for (long j = i; j < n && j < i + 10; j++) {
      if (j & 1) scale_kernel<<<1, 32>>>(x, 1.0001f);
      else fill_kernel<<<1, 32>>>(x, 2.0f);
    }
    ft_range_pop(s);
  }
  cudaDeviceSynchronize();
  t_capture = ft_bench_now_s() - t_capture;
  print_memory("launched");
  ft_session_stop(s);
  double peak = ft_bench_proc_bytes("VmHWM:");
  print_memory("stopped");
  ft_session_counts c;
  ft_session_counts_get(s, &c);
  double tj[32], tg[32];
  char path[4096];
  long long bytes_json = 0, bytes_gz = 0;
  for (int gz = 0; gz < 2; gz++) {
    snprintf(path, sizeof path, "%s%s", prefix, gz ? ".json.gz" : ".json");
    for (int r = 0; r < reps; r++) {
      double t0 = ft_bench_now_s();
      if ((st = ft_session_write(s, path))) {
        fprintf(stderr, "capture_bench: %s: %s\n", path, ft_session_last_error(s));
        return 1;
      }
      (gz ? tg : tj)[r] = ft_bench_now_s() - t0;
    }
    FILE *f = fopen(path, "rb");
    if (f) {
      fseek(f, 0, SEEK_END);
      (gz ? bytes_gz : bytes_json) = ftell(f);
      fclose(f);
    }
  }
  unsigned long long events = c.device_events + c.cpu_ranges;
  printf("{\"kernels\": %ld, \"device_events\": %llu, \"cpu_ranges\": %llu, \"flows\": %llu, \"dropped\": %llu, ", n,
         (unsigned long long)c.device_events, (unsigned long long)c.cpu_ranges, (unsigned long long)c.flows,
         (unsigned long long)c.dropped_records);
  print_times("write_json_s", tj, reps);
  print_times("write_gzip_s", tg, reps);
  printf("\"bytes_json\": %lld, \"bytes_gzip\": %lld, \"events\": %llu, \"rss_before\": %.0f, "
         "\"rss_at_create\": %.0f, \"peak_rss\": %.0f, \"capture_s\": %.4f}\n",
         bytes_json, bytes_gz, events, rss0, rss_at_create, peak, t_capture);
  ft_session_destroy(s);
  cudaFree(x);
  return 0;
}
