/* `flagtrace stats` reader throughput on a 1 M-event trace, against yajl alone
 * (validation without callbacks) on the same bytes, measured in the same run;
 * with --write PATH N, writes an N-slice trace for the P5 memory row instead. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_parse.h>

#include "internal.h"
#include "stats.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A torch-like trace for stats' peak RSS: per launch a runtime call and a kernel
 * (two streams, two devices), one op range per 10 launches holding their External
 * id. Written through the library, so its layout is the writer's. */
static int write_trace(const char *path, size_t n) {
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) return 1;
  ft__session_set_window(s, 0, UINT64_MAX / 2);
  uint64_t t = 1000000;
  uint32_t op_name;
  if (ft__intern(&s->store.names, "aten::mm", 8, &op_name)) return 1;
  for (size_t i = 0; i < n; i += 2, t += 4000) {
    uint32_t corr = (uint32_t)(i / 2 + 1);
    uint64_t ext = i / 20 + 1;
    ft_device_event rt = {.kind = FT_EVENT_RUNTIME, .start_ns = t, .end_ns = t + 3000, .correlation_id = corr,
                          .has_external_id = true, .external_id = ext, .thread_id = 7, .name = "cudaLaunchKernel"};
    ft_device_event k = {.kind = FT_EVENT_KERNEL, .start_ns = t + 5000, .end_ns = t + 7000 + i % 3 * 1000,
                         .correlation_id = corr, .has_external_id = true, .external_id = ext,
                         .device = (uint32_t)(i / 2 % 2), .stream = 7 + (uint32_t)(i / 4 % 2),
                         .name = i % 4 ? "gemm_kernel" : "elementwise_kernel"};
    if (ft__session_inject(s, &rt) || ft__session_inject(s, &k)) return 1;
    if (i % 20 == 0 && ft__store_add_range(&s->store, op_name, t, t + 40000, ext, 7)) return 1;
  }
  ft_status st = ft_session_write(s, path);
  if (st) fprintf(stderr, "bench_stats: %s\n", ft_session_last_error(s));
  ft_session_destroy(s);
  return st ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--write")) return write_trace(argv[2], strtoull(argv[3], NULL, 10));
  bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  size_t n = quick ? 100000 : 1000000;
  int reps = quick ? 1 : 5;
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent", 1); /* synthetic events only */
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) return 1;
  ft__session_set_window(s, 0, UINT64_MAX / 2);
  ft_kv md[] = {{"grid", "[256, 1, 1]"}, {"block", "[256, 1, 1]"}, {"registers per thread", "44"},
                {"est. achieved occupancy %", "24"}};
  ft_kv cbid[] = {{"cbid", "211"}};
  uint64_t t = 1000000;
  for (size_t i = 0; i < n; i += 2, t += 4000) {
    uint32_t corr = (uint32_t)(i / 2 + 1);
    ft_device_event rt = {.kind = FT_EVENT_RUNTIME, .start_ns = t, .end_ns = t + 3000, .correlation_id = corr,
                          .has_external_id = true, .external_id = i / 20, .thread_id = 7,
                          .name = "cudaLaunchKernel", .metadata = cbid, .n_metadata = 1};
    ft_device_event k = {.kind = FT_EVENT_KERNEL, .start_ns = t + 5000, .end_ns = t + 7000, .correlation_id = corr,
                         .has_external_id = true, .external_id = i / 20, .stream = 7,
                         .name = i % 4 ? "gemm_kernel" : "elementwise_kernel", .metadata = md, .n_metadata = 4};
    if (ft__session_inject(s, &rt) || ft__session_inject(s, &k)) return 1;
  }
  ft__out *o;
  if (ft__out_open_mem(&o, false) || ft__write_trace(s, o, NULL)) return 1;
  size_t len;
  const char *text = ft__out_mem(o, &len);

  double t_reader[8], t_yajl[8];
  char err[256];
  uint64_t entries = 0;
  for (int r = 0; r < reps; r++) {
    ft_stats st;
    if (ft_stats_init(&st)) return 1;
    double t0 = now_s();
    if (ft_stats_read_mem(&st, text, len, err, sizeof err)) {
      fprintf(stderr, "bench_stats: %s\n", err);
      return 1;
    }
    ft_stats_finish(&st);
    t_reader[r] = now_s() - t0;
    entries = st.events;
    ft_stats_free(&st);
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    t0 = now_s();
    if (yajl_parse(h, (const unsigned char *)text, len) != yajl_status_ok || yajl_complete_parse(h) != yajl_status_ok)
      return 1;
    t_yajl[r] = now_s() - t0;
    yajl_free(h);
  }
  qsort(t_reader, (size_t)reps, sizeof(double), cmp_double);
  qsort(t_yajl, (size_t)reps, sizeof(double), cmp_double);
  /* A trace "event" is an entry of traceEvents: here each launch is a runtime
   * slice, a kernel slice and a flow pair, so the entries outnumber the slices. */
  double per_million = t_reader[0] / ((double)entries / 1e6);
  printf("# bench_stats: %zu slices (kernel + runtime), %llu traceEvents entries, %.1f MB of JSON, %d reps\n", n,
         (unsigned long long)entries, (double)len / 1e6, reps);
  printf("| reader | min s | median s | entries/s (min) | s per 1 M entries | vs yajl alone | target |\n"
         "|---|---|---|---|---|---|---|\n");
  printf("| stats reader | %.3f | %.3f | %.2fM | %.3f | %.2fx | < 1 s per 1 M events: %s |\n", t_reader[0],
         t_reader[reps / 2], (double)entries / t_reader[0] / 1e6, per_million, t_reader[0] / t_yajl[0],
         quick ? "(quick mode, not judged)" : per_million < 1.0 ? "pass" : "MISS");
  ft__out_abort(o);
  ft_session_destroy(s);
  return 0;
}
