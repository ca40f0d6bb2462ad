/* A capture through the real CUPTI tracer against the fake libcupti (no GPU): what
 * a captured event costs in memory (peak RSS growth, vendor buffers included), what
 * the stop costs (flush, decode, attribution), and what handing every event to an
 * adaptor costs (ft_session_foreach_event, the part of the kineto export we own).
 * Launches LAUNCHES kernels in ranges of 10, as bench/gpu/capture_bench.cu does on a
 * GPU. One JSON line; one capture per process (a peak is only measurable once).
 * Usage: FLAGOS_TRACER_LIBRARY=libfake_cupti.so bench_capture LAUNCHES */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_common.h"
#include "fake_cupti.h"
#include "flagtrace/device_tracer.h"
#include "flagtrace/flagtrace.h"

/* Minor page faults so far: fresh memory costs ~20 us a page on some VMs. */
static long minor_faults(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) ? 0 : u.ru_minflt;
}

/* What an adaptor does per event at the least: read every field it hands on. */
static int visit(void *ctx, const ft_export_event *x) {
  uint64_t *sum = ctx;
  *sum += x->event.start_ns + x->event.end_ns + x->event.external_id + x->event.correlation_id + x->flow_id +
          x->name_key + x->meta_key + x->event.n_metadata + (unsigned char)x->event.name[0];
  for (size_t i = 0; i < x->event.n_metadata; i++) *sum += (unsigned char)x->event.metadata[i].value[0];
  return 0;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 0;
  const char *lib = getenv("FLAGOS_TRACER_LIBRARY");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
  fake_cupti_launch_fn launch = h ? (fake_cupti_launch_fn)dlsym(h, "fake_cupti_launch") : NULL;
  if (n <= 0 || !launch) {
    fprintf(stderr, "usage: FLAGOS_TRACER_LIBRARY=libfake_cupti.so bench_capture LAUNCHES\n");
    return 2;
  }
  static const char *const names[] = {"_Z11fill_kernelPff", "_Z12scale_kernelPff"};
  double rss_at_create = ft_bench_proc_bytes("VmRSS:");
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s)) return 1;
  double rss0 = ft_bench_proc_bytes("VmRSS:"); /* from the armed session, as capture_bench.cu */
  char name[32];
  double t_capture = ft_bench_now_s();
  for (long i = 0; i < n; i += 10) {
    snprintf(name, sizeof name, "op%ld", (i / 10) % 50);
    ft_range_push(s, name, NULL);
    for (long j = i; j < n && j < i + 10; j++) {
      fake_launch k = {.kind = FAKE_KERNEL,
                       .name = names[j & 1],
                       .grid = {1, 1, 1},
                       .block = {32, 1, 1},
                       .regs = 16,
                       .dur_ns = 1500,
                       .stream = 7};
      launch(&k);
    }
    ft_range_pop(s);
  }
  t_capture = ft_bench_now_s() - t_capture; /* the fake completes full buffers inline: decoding included */
  double t0 = ft_bench_now_s();
  if (ft_session_stop(s)) return 1;
  double t_stop = ft_bench_now_s() - t0;
  double peak = ft_bench_proc_bytes("VmHWM:");
  ft_session_counts c;
  t0 = ft_bench_now_s();
  ft_session_counts_get(s, &c);
  double t_counts = ft_bench_now_s() - t0;
  uint32_t dev[16], stream[16];
  t0 = ft_bench_now_s();
  ft_session_streams(s, dev, stream, 16);
  double t_streams = ft_bench_now_s() - t0;
  uint64_t sum = 0, events = c.device_events + c.cpu_ranges;
  double best = 1e30;
  long faults = minor_faults();
  for (int r = 0; r < 3; r++) {
    t0 = ft_bench_now_s();
    if (ft_session_foreach_event(s, 0, UINT64_MAX, visit, &sum, NULL)) return 1;
    double t = ft_bench_now_s() - t0;
    if (t < best) best = t;
  }
  faults = minor_faults() - faults;
  printf(
      "{\"launches\": %ld, \"device_events\": %llu, \"events\": %llu, \"rss_before\": %.0f, \"rss_at_create\": %.0f, "
      "\"peak_rss\": %.0f, "
      "\"capture_s\": %.5f, \"stop_s\": %.5f, \"counts_s\": %.5f, \"streams_s\": %.5f, \"foreach_s\": %.5f, "
      "\"foreach_ns_per_event\": %.1f, \"foreach_faults\": %ld, \"checksum\": %llu}\n",
      n, (unsigned long long)c.device_events, (unsigned long long)events, rss0, rss_at_create, peak, t_capture, t_stop,
      t_counts, t_streams, best, best * 1e9 / (double)c.device_events, faults / 3, (unsigned long long)(sum & 0xffff));
  ft_session_destroy(s);
  return 0;
}
