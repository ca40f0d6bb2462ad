/* libFuzzer harness for the `flagtrace stats` reader: arbitrary bytes, JSON or
 * gzip (recognized by its magic), truncated or corrupted, must give a result or
 * a clean error, never a crash or a hang; and parse workers must give exactly
 * what the single-threaded parse gives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "stats_digest.h"

/* One read: its status, error and digest (NULL on an error). */
static char *read_one(const uint8_t *data, size_t size, int threads, size_t segment, ft_status *s, char *err,
                      size_t errlen) {
  ft_stats st;
  if (ft_stats_init(&st)) abort();
  st.parse_threads = threads;
  st.segment_bytes = segment;
  err[0] = '\0';
  char *digest = NULL;
  if ((*s = ft_stats_read_mem(&st, (const char *)data, size, err, errlen)) == FT_OK) {
    ft_stats_finish(&st);
    (void)ft_stats_span(&st);
    if (!(digest = stats_digest(&st))) abort();
  } else if (!err[0]) {
    abort(); /* an error must say what went wrong */
  }
  ft_stats_free(&st);
  return digest;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512], err2[512];
  ft_status s, s2;
  free(read_one(data, size, 0, 0, &s, err, sizeof err)); /* the command's own read size (1 MiB) */
  /* reads of 16 to 271 bytes, chosen by the input's last byte: one thread, then workers */
  size_t seg = 16 + (size ? data[size - 1] : 0);
  char *one = read_one(data, size, 0, seg, &s, err, sizeof err);
  char *par = read_one(data, size, 2, seg, &s2, err2, sizeof err2);
  if (s != s2 || strcmp(err, err2) || (one && strcmp(one, par))) abort();
  free(one);
  free(par);
  return 0;
}
