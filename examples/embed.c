/* Embedding example: profile named CPU ranges (and any device work inside them). */
#include <stdio.h>
#include <stdlib.h>

#include <flagtrace/flagtrace.h>

static double busy_work(long iters) {
  double x = 0;
  for (long i = 0; i < iters; i++) x += (double)i * 0.5;
  return x;
}

static int check(ft_session *s, ft_status st, const char *what) {
  if (st == FT_OK) return 0;
  fprintf(stderr, "embed_example: %s: %s (%s)\n", what, ft_strerror(st), s ? ft_session_last_error(s) : "");
  return 1;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "flagtrace-embed.json.gz";
  ft_session *s = NULL;
  if (check(NULL, ft_session_create(&s, NULL), "create")) return 1;
  const char *why = NULL;
  if (ft_session_device_status(s, &why) != FT_OK) printf("device activity: not collected (%s)\n", why);
  if (check(s, ft_session_start(s), "start")) return 1;

  for (int step = 0; step < 3; step++) {
    uint64_t id;
    if (check(s, ft_range_push(s, "step", &id), "push")) return 1;
    if (check(s, ft_range_push(s, "compute", NULL), "push")) return 1;
    if (busy_work(200000) < 0) return 1; /* never: keeps the work from being optimized out */
    if (check(s, ft_range_pop(s), "pop")) return 1;
    if (check(s, ft_range_pop(s), "pop")) return 1;
  }

  if (check(s, ft_session_stop(s), "stop")) return 1;
  if (check(s, ft_session_write(s, path), "write")) return 1;
  ft_session_counts c;
  if (check(s, ft_session_counts_get(s, &c), "counts")) return 1;
  printf("wrote %s: %llu CPU ranges, %llu device events, %llu flows, %llu dropped\n", path,
         (unsigned long long)c.cpu_ranges, (unsigned long long)c.device_events, (unsigned long long)c.flows,
         (unsigned long long)c.dropped_records);
  ft_session_destroy(s);
  return 0;
}
