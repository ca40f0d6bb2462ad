/* What the benches share: a monotonic clock and /proc/self/status figures. */
#ifndef FT_BENCH_COMMON_H
#define FT_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double ft_bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A /proc/self/status figure in bytes ("VmRSS:", "VmHWM:" the peak); 0 without /proc. */
static inline double ft_bench_proc_bytes(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double kb = 0;
  size_t klen = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, klen)) kb = atof(line + klen + 1);
  if (f) fclose(f);
  return kb * 1024;
}

#endif
