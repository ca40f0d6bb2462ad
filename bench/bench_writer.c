/* Trace writer throughput: synthetic kernel+runtime events to JSON and gzip,
 * against zlib alone on the same bytes, measured in the same run. Output goes to
 * a byte-counting sink, so the figure is the writer's CPU cost, not the disk's.
 * Also the memory a captured event costs (resident set growth while capturing). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "internal.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ft_session *make_session(size_t n) {
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) exit(1);
  ft__session_set_window(s, 0, UINT64_MAX / 2);
  static const char *const names[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
      "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
      "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)"};
  ft_kv md[] = {{"queued", "0"}, {"context", "1"}, {"registers per thread", "44"},
                {"shared memory", "0"}, {"blocks per SM", "1.939394"}, {"warps per SM", "15.515152"},
                {"grid", "[256, 1, 1]"}, {"block", "[256, 1, 1]"}, {"est. achieved occupancy %", "24"}};
  ft_kv cbid[] = {{"cbid", "211"}};
  uint64_t t = 1000000;
  for (size_t i = 0; i < n; i += 2) {
    uint32_t corr = (uint32_t)(i / 2 + 1);
    ft_device_event rt = {.kind = FT_EVENT_RUNTIME, .start_ns = t, .end_ns = t + 3000,
                          .correlation_id = corr, .has_external_id = true, .external_id = i / 20,
                          .thread_id = 4242, .name = "cudaLaunchKernel", .metadata = cbid, .n_metadata = 1};
    ft_device_event k = {.kind = FT_EVENT_KERNEL, .start_ns = t + 5000, .end_ns = t + 7000,
                         .correlation_id = corr, .has_external_id = true, .external_id = i / 20,
                         .device = 0, .stream = 7, .name = names[i % 3], .metadata = md, .n_metadata = 9};
    if (ft__session_inject(s, &rt) || ft__session_inject(s, &k)) exit(1);
    t += 4000;
  }
  return s;
}

/* One run: seconds to render the session, and the bytes produced. */
static double run_writer(ft_session *s, bool gz, size_t *bytes) {
  ft__out *o;
  if (ft__out_open_null(&o, gz)) exit(1);
  double t0 = now_s();
  if (ft__write_trace(s, o, NULL)) exit(1);
  size_t len;
  const char *m = ft__out_mem(o, &len); /* finishes the gzip stream */
  (void)m;
  double dt = now_s() - t0;
  *bytes = len;
  ft__out_abort(o);
  return dt;
}

/* The baseline: zlib alone (level 1, as the writer uses) compressing the exact JSON
 * the writer produced, so the gzip ratio shows what the writer adds on top. */
static double zlib_only(ft_session *s) {
  ft__out *o;
  if (ft__out_open_mem(&o, false) || ft__write_trace(s, o, NULL)) exit(1);
  size_t len;
  const char *m = ft__out_mem(o, &len);
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) exit(1);
  unsigned char *buf = malloc(1 << 20);
  double t0 = now_s();
  z.next_in = (unsigned char *)m;
  z.avail_in = (uInt)len;
  int r;
  do {
    z.next_out = buf;
    z.avail_out = 1 << 20;
    r = deflate(&z, Z_FINISH);
  } while (r == Z_OK);
  double dt = now_s() - t0;
  deflateEnd(&z);
  free(buf);
  ft__out_abort(o);
  return dt;
}

/* Resident set size in bytes (VmRSS), 0 when /proc is not there. */
static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %zu kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb * 1024;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent", 1); /* synthetic events only: no vendor library */
  size_t n = quick ? 100000 : 1000000;
  int reps = quick ? 1 : 5;
  size_t rss0 = rss_bytes();
  ft_session *s = make_session(n);
  size_t rss1 = rss_bytes();
  printf("# bench_writer: %zu events (kernel + cudaLaunchKernel pairs, 13 kernel args), %d reps\n", n, reps);
  printf("| output | min s | median s | events/s (min) | MB | writer / zlib-only | target |\n|---|---|---|---|---|---|---|\n");
  for (int gz = 0; gz < 2; gz++) {
    double t[16];
    size_t bytes = 0;
    for (int r = 0; r < reps; r++) t[r] = run_writer(s, gz, &bytes);
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    char ratio[32] = "-";
    if (gz) snprintf(ratio, sizeof ratio, "%.2fx", t[0] / zlib_only(s));
    double rate = (double)n / t[0];
    double target = gz ? 1e6 : 3e6;
    printf("| %s | %.3f | %.3f | %.2fM | %.1f | %s | >= %.0fM ev/s: %s |\n", gz ? "gzip" : "JSON",
           t[0], t[reps / 2], rate / 1e6, (double)bytes / 1e6, ratio, target / 1e6,
           quick ? "(quick mode, not judged)" : rate >= target ? "pass" : "MISS");
  }
  /* the 3 kernel names and the arg texts are interned once; what grows is per event */
  double per_event = rss1 > rss0 ? (double)(rss1 - rss0) / (double)n : 0;
  printf("\n| memory | RSS growth MB | bytes per captured event | target |\n|---|---|---|---|\n");
  printf("| %zu events | %.1f | %.1f | <= 64 B + interned names: %s |\n", n, (double)(rss1 - rss0) / 1e6, per_event,
         quick ? "(quick mode, not judged)" : per_event <= 64 ? "pass" : "MISS");
  ft_session_destroy(s);
  return 0;
}
