/* Trace summaries for `flagtrace stats`: a streaming reader and its aggregates. */
#ifndef FLAGTRACE_CLI_STATS_H
#define FLAGTRACE_CLI_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "containers.h"
#include "json_out.h"

/* One row of a summary, keyed by name. Times in ns. */
typedef struct ft_stat_row {
  uint32_t name_id;
  uint8_t cat; /* FT_STAT_CAT_* of the api and memory sections */
  uint64_t calls, total_ns, min_ns, max_ns, bytes;
} ft_stat_row;

enum { FT_STAT_KERNELS, FT_STAT_API, FT_STAT_MEMORY, FT_STAT_OPS, FT_STAT_N_SECTIONS };
enum { FT_STAT_CAT_RUNTIME, FT_STAT_CAT_DRIVER, FT_STAT_CAT_MEMCPY, FT_STAT_CAT_MEMSET, FT_STAT_CAT_OTHER };

/* Memory grows with what is reported (names, rows, devices) except for two pieces
 * of per-event state an exact answer needs (README: "stats memory"):
 *  - busy %: the union of each device's busy intervals, 12 B per device event at
 *    most (16 B for one longer than 4.3 s), merged as they come: overlapping or
 *    touching work costs less;
 *  - ops: the External id join, one 16-B slot (at 3/8 to 3/4 load) per distinct
 *    External id in the file being read, dropped after each file. */
typedef struct ft_stat_device {
  int64_t id;    /* the event's pid, -1 when it had none */
  ft__vec iv;    /* 12-B {lo, len} intervals; [0, merged) sorted and disjoint */
  ft__vec longs; /* {lo, hi} of those 4.3 s or longer */
  size_t merged, longs_merged;
} ft_stat_device;

/* External id -> op row index | 1 << 63, or the device ns seen before its op.
 * Open addressing with a bitmap of used slots. */
typedef struct ft_stat_join {
  uint64_t *keys, *vals;
  uint8_t *used;
  size_t cap, len;
} ft_stat_join;

/* Events skipped (not summarized) and why; reported once, in one line. */
typedef struct ft_stat_skips {
  uint64_t bad_time;   /* complete events whose ts is missing or ts/dur is not a number */
  uint64_t time_range; /* ts or dur beyond +-FT_STATS_MAX_US */
} ft_stat_skips;

/* Times beyond +-4e15 us (year 2096 since the epoch) are refused: every sum and
 * difference of two of them then fits in 64 bits. */
#define FT_STATS_MAX_US 4000000000000000LL

typedef struct ft_stats {
  ft__strtab names;
  /* per section: name id (| cat << 32) -> index + 1 into rows */
  ft__map index[FT_STAT_N_SECTIONS];
  ft__vec rows[FT_STAT_N_SECTIONS]; /* ft_stat_row */
  ft_stat_join ext_op;   /* this file's External id -> op row (cpu_op / user_annotation) */
  uint64_t device_ns;    /* device time of all device events */
  uint64_t attributed_ns; /* of which joined to an op */
  ft__map device_index;  /* device id -> index + 1 into devices */
  ft_stat_device *devices;
  size_t n_devices, cap_devices;
  int64_t first_ns, last_ns; /* span of all complete events */
  uint64_t events;           /* trace events read */
  ft_stat_skips skipped;
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

/* Busy time per device, every device (sorted by id): a malloc'ed array of *n
 * entries, NULL with *n 0 when there are none or on ENOMEM (*n then SIZE_MAX). */
typedef struct ft_stat_busy {
  int64_t device;
  uint64_t busy_ns;
} ft_stat_busy;
ft_stat_busy *ft_stats_busy(ft_stats *st, size_t *n);

/* The span of all complete events in ns (0 when there were none). */
uint64_t ft_stats_span(const ft_stats *st);

#endif
