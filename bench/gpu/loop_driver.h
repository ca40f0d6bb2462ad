// What the lockstep loop programs (launch_loop, alloc_loop) share: the host clock, the
// layout offsets bench/run.py draws, and the serve / REPS ways of running one loop.
#ifndef FLAGTRACE_BENCH_LOOP_DRIVER_H
#define FLAGTRACE_BENCH_LOOP_DRIVER_H
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// With ASLR off, every later mapping and heap chunk moves with these (never released;
// volatile, so that the compiler keeps the allocation nothing reads).
static void *volatile heap_pad;

static bool take_layout_pads(void) {
  const char *mm = getenv("FT_BENCH_MMAP_PAD"), *heap = getenv("FT_BENCH_HEAP_PAD");
  long size = mm ? atol(mm) : 0;
  if (size > 0 && mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED)
    return false;
  size = heap ? atol(heap) : 0;
  if (size <= 0) return true;
  heap_pad = malloc((size_t)size);
  return heap_pad != NULL;
}

// serve: "ready", then one loop(n) per line read from stdin, its µs per unit on a line
// of its own (it waits in read() between loops: no CPU taken from the process measured
// meanwhile); else reps loops as one JSON line {"<count_key>": n, "<each_key>": [...],
// "best": ...}. The exit status of main.
static int drive_loops(double (*loop)(long), long n, bool serve, int reps, const char *count_key,
                       const char *each_key) {
  if (serve) {
    char line[64];
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
      double us = loop(n);
      if (us < 0) return 1;
      printf("%.4f\n", us);
      fflush(stdout);
    }
    return 0;
  }
  double best = 1e30;
  printf("{\"%s\": %ld, \"%s\": [", count_key, n, each_key);
  for (int r = 0; r < reps; r++) {
    double us = loop(n);
    if (us < 0) return 1;
    if (us < best) best = us;
    printf("%s%.4f", r ? ", " : "", us);
  }
  printf("], \"best\": %.4f}\n", best);
  return 0;
}
#endif
