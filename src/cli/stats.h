/* Trace summaries for `flagtrace stats`: a streaming reader and its aggregates. */
#ifndef FLAGTRACE_CLI_STATS_H
#define FLAGTRACE_CLI_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* One row of a summary, keyed by name. Times in ns. */
typedef struct ft_stat_row {
  uint32_t name_id;
  uint8_t cat; /* FT_STAT_CAT_* of the api and memory sections */
  uint64_t calls, total_ns, min_ns, max_ns, bytes;
} ft_stat_row;

enum { FT_STAT_KERNELS, FT_STAT_API, FT_STAT_MEMORY, FT_STAT_OPS, FT_STAT_N_SECTIONS };
enum { FT_STAT_CAT_RUNTIME, FT_STAT_CAT_DRIVER, FT_STAT_CAT_MEMCPY, FT_STAT_CAT_MEMSET, FT_STAT_CAT_OTHER };

typedef struct ft_stats {
  ft__strtab names;
  /* per section: name id (| cat << 32) -> index + 1 into rows */
  ft__map index[FT_STAT_N_SECTIONS];
  ft__vec rows[FT_STAT_N_SECTIONS]; /* ft_stat_row */
  ft__map ext_device_ns; /* External id -> device ns of kernels, copies, sets */
  ft__map ext_op;        /* External id -> op row index + 1 (cpu_op / user_annotation) */
  ft__vec intervals;     /* {device, start, end} of device events, for busy % */
  int64_t first_ns, last_ns; /* span of all complete events */
  uint64_t events;           /* trace events read */
} ft_stats;

ft_status ft_stats_init(ft_stats *st);
void ft_stats_free(ft_stats *st);

/* Streams one Chrome trace (.json, or gzip by content) into st. On malformed input
 * returns FT_EPARSE (FT_EIO when unreadable) with a one-line reason naming the
 * problem and the byte offset (in the uncompressed text) in err. */
ft_status ft_stats_read(ft_stats *st, const char *path, char *err, size_t errlen);

/* Same, from memory (tests, fuzzing); gzip data is recognized by its magic bytes. */
ft_status ft_stats_read_mem(ft_stats *st, const char *data, size_t len, char *err, size_t errlen);

/* Joins ops with their device time; call once after all reads. */
void ft_stats_finish(ft_stats *st);

/* Busy time per device: fills up to max entries of {device, busy_ns}, returns the
 * number of devices. */
typedef struct ft_stat_busy {
  uint64_t device, busy_ns;
} ft_stat_busy;
size_t ft_stats_busy(ft_stats *st, ft_stat_busy *out, size_t max);

#endif
