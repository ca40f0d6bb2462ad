/* libFuzzer harness for the `flagtrace stats` reader: arbitrary bytes, JSON or
 * gzip (recognized by its magic), truncated or corrupted, must give a result or
 * a clean error, never a crash or a hang. */
#include <stdint.h>
#include <stdlib.h>

#include "stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ft_stats st;
  if (ft_stats_init(&st)) abort();
  char err[512];
  if (ft_stats_read_mem(&st, (const char *)data, size, err, sizeof err) == FT_OK) {
    ft_stats_finish(&st);
    size_t n;
    free(ft_stats_busy(&st, &n));
    (void)ft_stats_span(&st);
  } else if (!err[0]) {
    abort(); /* an error must say what went wrong */
  }
  ft_stats_free(&st);
  return 0;
}
