/* Trace summaries for `flagtrace stats` and `flagtrace report`: a streaming reader and its aggregates. */
#ifndef FLAGTRACE_CLI_STATS_H
#define FLAGTRACE_CLI_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "containers.h"
#include "json_out.h"

struct ft__ev; /* stats_internal.h: one event as the reader hands it over */

/* A distribution of values (ns or bytes): count, sum, min, max, sum of squares
 * (stddev, exact), and the values themselves while there are at most
 * FT_DIST_EXACT of them (an exact median); past that a log-linear histogram of
 * 128 buckets per power of two, so the median is within 0.4 % (docs/stats.md). */
#define FT_DIST_EXACT 256
__extension__ typedef unsigned __int128 ft_u128;
typedef struct ft_stat_dist {
  uint64_t n, total, min, max;
  ft_u128 sumsq;
  uint64_t *vals; /* n values while hist is NULL and n <= FT_DIST_EXACT */
  uint32_t *hist; /* counts of buckets [hist_lo, hist_lo + hist_len) */
  uint32_t hist_lo, hist_len, vals_cap;
} ft_stat_dist;

bool ft_dist_add(ft_stat_dist *d, uint64_t v);
bool ft_dist_merge(ft_stat_dist *d, const ft_stat_dist *s);
void ft_dist_free(ft_stat_dist *d);
uint64_t ft_dist_median(const ft_stat_dist *d); /* 0 when empty */
double ft_dist_stddev(const ft_stat_dist *d);   /* sample stddev; 0 below 2 values */

/* One row of a summary, keyed by name (and kind). */
typedef struct ft_stat_row {
  uint32_t name_id;
  uint8_t cat;      /* FT_STAT_CAT_* of the api and memory sections */
  bool comm;        /* a communication kernel (NCCL/HCCL/RCCL in the name) */
  ft_stat_dist t;   /* durations, ns */
  ft_stat_dist b;   /* bytes (memory) */
  uint64_t calls;   /* ops: calls; user ranges: the files that have the range */
  uint64_t self_ns; /* ops: device time of the work they launched (key_averages' Self device) */
  /* ops, as torch's key_averages() counts them over the calls' nesting on their
   * thread (t: the calls' CPU durations, CPU total = t.total): */
  uint64_t self_cpu_ns;  /* CPU time less that of the calls and runtime calls nested in them */
  uint64_t total_dev_ns; /* device time of their work and of the calls nested in them */
  /* ops, memory as key_averages() counts it (stats_ops.c; docs/memory.md "Ops' memory"): bytes of the
   * [memory] events in a call's [start, end] (CPU: Device Type 0/2/5; device: 1/6/20), and self, that
   * less its children's; signed (frees are negative) */
  int64_t cpu_mem, self_cpu_mem, dev_mem, self_dev_mem;
  uint32_t aux_id; /* ft_stat_keyed_by_aux: the name id of its Input Dims text, or its module's */
  uint8_t hta;     /* HTA's class of the name, cached by stats_hta.c (0: not yet) */
} ft_stat_row;

enum {
  FT_STAT_KERNELS,
  FT_STAT_API,
  FT_STAT_MEMORY,
  FT_STAT_OPS,
  FT_STAT_RANGES,     /* user ranges (user_annotation): CPU time */
  FT_STAT_GPU_RANGES, /* their GPU projection (gpu_user_annotation) */
  FT_STAT_OP_SHAPES,  /* ops by name and Input Dims (record_shapes=True), keyed by both */
  FT_STAT_STREAMS,    /* HTA's queue length per stream ("7"): t twice the samples, calls the kernels,
                       * self_ns the time at FT_HTA_QUEUE_FULL or more (stats_hta.c) */
  FT_STAT_OP_MODULES, /* ops by name and the innermost nn.Module around them (with_modules / with_stack) */
  FT_STAT_OP_KERNELS, /* device work by the op that launched it (External id) and its name: t its durations
                       * (`diff`; "(no op)" for work of no op; read only when asked: op_kernels) */
  FT_STAT_N_SECTIONS
};
/* Sections whose rows are keyed by their name and a second text (aux_id). */
static inline bool ft_stat_keyed_by_aux(int sec) {
  return sec == FT_STAT_OP_SHAPES || sec == FT_STAT_OP_MODULES || sec == FT_STAT_OP_KERNELS;
}
enum { FT_STAT_CAT_RUNTIME, FT_STAT_CAT_DRIVER, FT_STAT_CAT_MEMCPY, FT_STAT_CAT_MEMSET, FT_STAT_CAT_OTHER };

/* Memory grows with what is reported (names, rows, devices) except for two pieces
 * of per-event state an exact answer needs (docs/stats.md: "Memory"). Kept strings
 * are cut to FT_STATS_KEEP bytes (counted), ignored values are never held, and a
 * file's devices past FT_STATS_MAX_DEVICES get no busy intervals (counted):
 *  - busy %: the union of each device's busy intervals, 12 B per device event at
 *    most (16 B for one longer than 4.3 s), merged as they come: overlapping or
 *    touching work costs less; kept only while its file is read;
 *  - ops: the External id join, one 16-B slot (at 3/8 to 3/4 load) per distinct
 *    External id in a file being read, dropped after the file. */
typedef struct ft_stat_ivset {
  ft__vec iv;    /* 12-B {lo, len} intervals; [0, merged) sorted and disjoint */
  ft__vec longs; /* {lo, hi} of those 4.3 s or longer */
  size_t merged, longs_merged;
} ft_stat_ivset;
typedef struct ft_stat_device {
  int64_t id;         /* the event's pid, -1 when it had none */
  ft_stat_ivset all;  /* every device event */
  ft_stat_ivset copy; /* copies and sets only: the report's timeline */
} ft_stat_device;

#define FT_STATS_KEEP (64 * 1024)
#define FT_STATS_MAX_DEVICES 1024
/* A trace's rank is torch.distributed's, a 32-bit int: a larger one is none (the file's
 * position), and a partial stating one is refused. */
#define FT_STATS_MAX_RANK INT32_MAX

/* A table of 64-bit keys (External id -> op row index | 1 << 63, or the device
 * ns seen before its op; device id -> index + 1). Open addressing with a bitmap
 * of used slots, placed by a keyed hash seeded per process (getrandom): the
 * input cannot choose keys that share a slot, so a lookup costs O(1) expected
 * whatever the keys (sequential or crafted). */
typedef struct ft_stat_join {
  uint64_t *keys, *vals;
  uint8_t *used;
  size_t cap, len;
  uint64_t probes; /* slots looked at, for tests and the bench (ops, not time) */
} ft_stat_join;

/* Events skipped (not summarized) and why; reported once, in one line. */
typedef struct ft_stat_skips {
  uint64_t bad_time;        /* complete events whose ts is missing or ts/dur is not a number */
  uint64_t time_range;      /* ts or dur beyond +-FT_STATS_MAX_US */
  uint64_t unknown_cat;     /* complete events of a category not read (named in unknown_cats) */
  uint64_t no_dur, neg_dur; /* complete events without a dur, with a negative one */
  uint64_t bad_bytes;       /* copies and sets whose args.bytes is not a whole number in [0, 2^63) */
  uint64_t bad_ext;         /* complete events whose args "External id" is not a whole number in +-2^63 */
  uint64_t unpaired;        /* HTA's analyses: launch calls and GPU events of a correlation id that has both, left
                             * without a pair (an id names one launch: the other events of it are not paired) */
} ft_stat_skips;
uint64_t ft_stat_skips_total(const ft_stat_skips *k);

/* Times beyond +-4e15 us (year 2096 since the epoch) are refused: every sum and
 * difference of two of them then fits in 64 bits. */
#define FT_STATS_MAX_US 4000000000000000LL

/* What a trace says about itself: its "flagtrace" block and distributedInfo. */
typedef struct ft_stat_meta {
  int64_t rank;        /* -1 when the trace names none */
  int device_activity; /* -1 not stated, 0 false, 1 true */
  char tracer[32];
  char device_status[200];
  uint64_t dropped_records, window_discarded;
  bool has_flagtrace;
} ft_stat_meta;

/* A device event of the per-event listing (`--report trace`). */
typedef struct ft_stat_event {
  int64_t ts, dur, device;
  uint64_t bytes;
  uint32_t name_id, file;
  /* the launch as the trace's args give it (nsys's cuda_gpu_trace columns):
   * stream -1 and the others 0 where the trace gives none */
  int64_t stream;
  int32_t grid[3], block[3], regs;
  uint8_t kind; /* 0 kernel, 1 memcpy, 2 memset */
} ft_stat_event;

/* Busy time of one device over its file's span, and the report's timeline. */
#define FT_TIMELINE_BINS 400
typedef struct ft_stat_busy {
  int64_t device;
  uint64_t busy_ns;
  uint32_t *busy_bins, *copy_bins; /* per-mille busy / in copies per bin; report only */
} ft_stat_busy;

/* A section's recent rows (a cache in front of the name table). */
#define FT_STAT_ROW_CACHE 64
typedef struct ft_stat_last {
  bool valid;
  uint8_t cat;
  uint32_t name_id;
  size_t index;
} ft_stat_last;

/* Where a file's events were read from, as a partial names it (issue 49): a merge
 * refuses a trace that two of its partials hold (the same file, or a copy of it). */
typedef struct ft_stat_source {
  uint64_t digest;   /* SipHash-2-4 (fixed key) of the bytes read, compressed ones as they are */
  uint64_t size;     /* the bytes read */
  uint64_t dev, ino; /* the file's, when regular */
  int64_t mtime_ns;
  bool regular; /* dev, ino and mtime_ns are known: a regular file */
  bool known;   /* read (ft_stat_read_opts.source) or from a partial: a partial is written only then */
} ft_stat_source;

/* ---- device memory (issue 51): `stats -r memory`, from [memory] instants (stats_memory.c) ---- */

/* Live allocations tracked per file at most (their addresses): past it an allocation is
 * counted (over_bound) but its address not kept, so memory stays bounded (64 B each). */
#define FT_MEM_MAX_LIVE (1u << 20)
/* Live allocations a summary keeps per device, the largest (leak candidates). */
#define FT_MEM_KEEP_LIVE 1000

/* A moment of a device's memory: a peak, or an allocation still live at the end. */
typedef struct ft_stat_mem_at {
  int64_t bytes; /* the peak's total, or the allocation's size */
  int64_t ts;    /* ns, the trace's clock */
  int64_t step;  /* ProfilerStep#N's N around it, -1 none */
  uint64_t addr; /* the allocation's address (live ones) */
  char *op;      /* the innermost op or range open around it (its thread), else by its External id, else the
                  * op of its runtime call; NULL none */
  char *call;    /* the runtime call of its correlation id; NULL none */
} ft_stat_mem_at;

typedef struct ft_stat_mem_dev {
  int32_t device;                       /* "Device Id", -1 absent */
  int16_t device_type;                  /* torch's DeviceType: 0 CPU, 1 CUDA, 20 PrivateUse1; -1 absent */
  ft_stat_mem_at peak_alloc, peak_res;  /* bytes 0 and ts INT64_MIN: never above 0 */
  ft_stat_dist alloc_sizes, free_sizes; /* n: allocations, frees; total: their bytes */
  int64_t end_alloc, end_res;           /* the totals after the last operation */
  uint64_t live_n, live_bytes;          /* allocations (of the window) still live at the end */
  ft_stat_mem_at *live;                 /* the largest of them, largest first, at most FT_MEM_KEEP_LIVE */
  size_t n_live;
} ft_stat_mem_dev;

typedef struct ft_stat_mem {
  ft_stat_mem_dev *devs; /* by device type, then id */
  size_t n_devs;
  uint64_t events;       /* [memory] instants summarized */
  uint64_t bad_field;    /* skipped: ts, Bytes or another number field missing or not a number (the reader's) */
  uint64_t bad_sign;     /* skipped: an "alloc" of negative Bytes, a "free" of positive */
  uint64_t unmatched;    /* frees of an address not live in the window (counted as frees: made before it?) */
  uint64_t over_bound;   /* allocations whose address was not tracked: FT_MEM_MAX_LIVE were live */
  uint64_t over_devices; /* events of devices past FT_STATS_MAX_DEVICES: skipped */
} ft_stat_mem;
void ft_stat_mem_free(ft_stat_mem *m);

typedef struct ft_stats {
  ft__strtab names;
  ft_stat_last (*last)[FT_STAT_ROW_CACHE]; /* [FT_STAT_N_SECTIONS], made on the first row; NULL once read */
  /* per section: name id (| cat << 32) -> index + 1 into rows */
  ft__map index[FT_STAT_N_SECTIONS];
  ft__vec rows[FT_STAT_N_SECTIONS]; /* ft_stat_row */
  ft_stat_join ext_op;              /* this file's External id -> the device ns of its work */
  struct ft__host_ev *host;         /* this file's ops, ranges and runtime calls: their nesting (stats_ops.c) */
  size_t n_host, cap_host;
  ft__vec host_early;  /* runtime calls without an External id before the file's first op (stats_ops.c) */
  ft_stat_join ext_rt; /* External id -> index + 1 into rt: runtime calls whose op is not read yet */
  struct ft__rt_wait *rt;
  size_t n_rt, cap_rt;
  int64_t host_main_tid, host_main_ts; /* the file's earliest op's thread: where kineto's overhead ran */
  bool host_has_main;
  uint64_t device_ns;        /* device time of all device events */
  uint64_t attributed_ns;    /* of which joined to an op */
  ft_stat_join device_index; /* device id -> index + 1 into devices */
  ft_stat_device *devices;
  size_t n_devices, cap_devices;
  size_t last_device;         /* the latest device's index: consecutive events mostly share one */
  uint64_t device_cap_events; /* device events of devices past the first FT_STATS_MAX_DEVICES: not in busy % */
  uint64_t cut_strings;       /* names (and other kept strings) cut to FT_STATS_KEEP bytes */
  int64_t first_ns, last_ns;  /* span of all complete events */
  uint64_t events;            /* trace events read */
  ft_stat_skips skipped;
  ft__map unknown_cats; /* name id of an unread category -> events */
  ft_stat_meta meta;
  /* options of the read */
  bool timeline;        /* keep copy intervals and bin the busy time (report) */
  bool want_args;       /* read device work's correlation, stream, grid, block, registers (trace, HTA's reports) */
  bool want_ops;        /* nest the calls for the ops' columns (stats_ops.c); without it ops rows stay empty */
  bool want_modules;    /* with want_ops: keep nn.Module python_function events for FT_STAT_OP_MODULES */
  bool read_pyfunc;     /* hand python_function events to on_event without want_modules (the model's read) */
  bool want_op_kernels; /* with want_ops: FT_STAT_OP_KERNELS rows */
  bool want_source;     /* the bytes' digest and the file's identity, in source */
  ft_stat_source source;
  ft__vec op_kernel_wait; /* this file's device work whose op is not read yet (24 B each; stats_ops.c) */
  size_t trace_limit;     /* keep the earliest this many device events (0: none) */
  ft_stat_event *trace;   /* a max-heap by ts of at most trace_limit events */
  size_t n_trace;
  /* parse workers (stats_input.c): -1 (ft_stats_init's) is the default,
   * FLAGTRACE_STATS_THREADS, else a file gets the CPUs beyond the first, shared
   * among file_threads files read at once; memory input gets none */
  int parse_threads, file_threads;
  size_t segment_bytes;            /* text asked of each read, a worker's segment; 0: 1 MiB (tests make it small) */
  size_t segments, segments_taken; /* diagnostics: segments read, those whose worker's parse was used */
  struct ft__hta *hta;             /* HTA's analyses' state while the file is read (stats_hta.c); NULL unless asked */
  /* every summarized complete event, in file order, as ft__stats_apply sees it (the
   * report's timeline), and those of a category not read (sec FT__SEC_UNKNOWN, the
   * category in cat); false stops the read for want of memory. NULL: none */
  bool (*on_event)(void *ctx, const struct ft__ev *e, const char *name, const char *cat);
  void *on_event_ctx;
  bool events_only;       /* the events to on_event, nothing summarized (the event model's read: model.c) */
  ft__vec ops_mem;        /* this file's [memory] events while its ops are nested (with want_ops; stats_ops.c) */
  uint64_t mem_events[3]; /* [memory] events read with want_ops: [0] CPU memory, [1] device memory, [2] of
                           * which CUDA's or HIP's (the ops' memory columns are shown when there are some) */
  char device_name[64];   /* the trace's first deviceProperties entry's name ("NVIDIA H200"), "" when none */
  /* device memory (issue 51) */
  bool want_memory;       /* summarize [memory] instants into mem_sum (stats -r memory) */
  uint64_t mem_bad;       /* [memory] instants the reader skipped (ft_stat_mem.bad_field) */
  uint64_t mem_seen;      /* [memory] instants read, asked for or not (a note points to -r memory) */
  struct ft__memacc *mem; /* the file's accumulator while it is read (stats_memory.h); NULL unless asked */
  ft_stat_mem mem_sum;    /* the file's summary, from its end (with want_memory) */
} ft_stats;

ft_status ft_stats_init(ft_stats *st);
void ft_stats_free(ft_stats *st);

/* Streams one Chrome trace (.json, or gzip by content; "-" is stdin) into st. On
 * malformed input returns FT_EPARSE (FT_EIO when unreadable) with a one-line
 * reason naming the problem and the byte offset (in the uncompressed text) in err. */
ft_status ft_stats_read(ft_stats *st, const char *path, char *err, size_t errlen);

/* Same, from memory (tests, fuzzing); gzip data is recognized by its magic bytes. */
ft_status ft_stats_read_mem(ft_stats *st, const char *data, size_t len, char *err, size_t errlen);

/* Joins ops with their device time; call once after all reads. */
void ft_stats_finish(ft_stats *st);

/* Busy time per device, every device (sorted by id): a malloc'ed array of *n
 * entries, NULL with *n 0 when there are none or on ENOMEM (*n then SIZE_MAX).
 * With st->timeline, each entry carries FT_TIMELINE_BINS bins over the span. */
ft_stat_busy *ft_stats_busy(ft_stats *st, size_t *n);
void ft_stats_busy_free(ft_stat_busy *b, size_t n);

/* The span of all complete events in ns (0 when there were none). */
uint64_t ft_stats_span(const ft_stats *st);

/* ---- a job: several files, read in parallel, summarized per file and in total ---- */

/* HTA's analyses of one file on HTA's definitions (docs/analyses.md), when the
 * read asked for them (ft_stat_read_opts.hta). Times in ns. */
typedef struct ft_stat_hta {
  bool kept;                             /* the read kept them */
  uint64_t gpu_events;                   /* events with an args.stream (not -1): HTA's GPU events */
  int64_t gpu_first_ns, gpu_last_ns;     /* the first start and the last end among them */
  uint64_t gpu_busy_ns;                  /* the union of their intervals */
  uint64_t compute_ns, comm_ns;          /* the union of the compute kernels', of the communication kernels' */
  uint64_t overlap_ns;                   /* the time both ran */
  uint64_t launches;                     /* launch call / device event pairs, by correlation id */
  ft_stat_dist cpu_ns, gpu_ns, delay_ns; /* over the pairs: the call's and the event's duration, the launch delay */
  uint64_t short_kernels;                /* pairs whose event is shorter than its call, a call of 50 us at most */
  uint64_t runtime_outliers;             /* pairs whose call took over 50 us */
  uint64_t delay_outliers;               /* pairs whose launch delay is over 100 us */
} ft_stat_hta;

typedef struct ft_stat_file {
  const char *path;
  ft_stat_source source; /* read with ft_stat_read_opts.source, or from a partial */
  ft_stat_meta meta;
  int64_t rank; /* meta.rank, or the file's position when the trace names none */
  uint64_t events, span_ns, first_ns, kernel_ns, comm_ns;
  ft_stat_skips skipped;
  uint64_t device_cap_events, cut_strings;
  ft_stat_busy *busy;
  size_t n_busy;
  struct ft_stats *own; /* this file's rows (by rank only); devices and joins freed */
  ft_stat_hta hta;      /* HTA's analyses (kept: asked for) */
  /* read through the event model (ft_stat_read_opts.model): its slices, the bytes it held
   * (ft_model_bytes) and of those what is held once (ft_model_bytes_distinct) */
  uint64_t model_slices, model_bytes, model_bytes_distinct;
  uint64_t mem_events[3]; /* [memory] events of the ops' memory columns (ft_stats.mem_events) */
  ft_stat_mem mem;        /* device memory (ft_stat_read_opts.memory); mem_kept: asked */
  bool mem_kept;
  uint64_t mem_seen; /* [memory] instants read (not in a partial: a read's note) */
} ft_stat_file;

typedef struct ft_stat_job {
  ft_stats total; /* rows of every file, merged by name */
  ft_stat_file *files;
  size_t n_files;
  uint64_t events;
  ft_stat_skips skipped;
} ft_stat_job;

/* Reads every file (one thread per file, up to the core count) and merges them.
 * On failure: the first failing file (in argument order) and its one-line reason
 * in err ("PATH: problem at byte N"); FT_ENOMEM when memory ran out. A file given
 * twice (the same device and inode, through any name, stdin included) is
 * refused before anything is read (FT_EINVAL): its totals would count twice. */
/* What a read keeps beyond the rows every report needs. */
typedef struct ft_stat_read_opts {
  bool timeline;      /* copy intervals and busy bins (the HTML report) */
  size_t trace_limit; /* the earliest this many device events per file (the trace report; SIZE_MAX: all) */
  bool by_rank;       /* each file's own rows (ft_stat_file.own) */
  bool hta;           /* HTA's analyses (ft_stat_file.hta, FT_STAT_STREAMS; the per-event cost in `stats --help`) */
  bool ops;           /* the ops' nesting (key_averages' columns: FT_STAT_OPS, FT_STAT_OP_SHAPES) */
  bool modules;       /* with ops: each op's innermost nn.Module (FT_STAT_OP_MODULES; python_function events) */
  bool op_kernels;    /* with ops: device work by its op and name (FT_STAT_OP_KERNELS: `diff`) */
  bool source;        /* each file's source (its bytes' digest: the cost of a hash; stats --partial) */
  bool model;         /* each file through the event model (model.h): read into it, then replayed into its summary */
  bool memory;        /* each file's device memory (ft_stat_file.mem: [memory] instants, stats -r memory) */
  struct ft_model *models; /* with model: file f's model kept in models[f] (the caller frees each), not freed */
  /* Each file's event model handed to on_model (on the file's reading thread) before it
   * is freed, built by the same parse as the file's summary (ft_model_read with its st:
   * one parse, both results; with model, the model replayed as always). A status other
   * than FT_OK fails the read with err's line (stats -r advice: advise_run.c). */
  ft_status (*on_model)(void *ctx, size_t file, struct ft_model *m, char *err, size_t errlen);
  void *on_model_ctx;
} ft_stat_read_opts;
ft_status ft_stat_job_read(ft_stat_job *job, const char *const *paths, size_t n, const ft_stat_read_opts *o, char *err,
                           size_t errlen);
/* The same for one file in memory, called name (tests, fuzzing). */
ft_status ft_stat_job_read_mem(ft_stat_job *job, const char *name, const char *data, size_t len,
                               const ft_stat_read_opts *o, char *err, size_t errlen);
void ft_stat_job_free(ft_stat_job *job);

/* True when the name is a collective-communication kernel (NCCL, HCCL, RCCL). */
bool ft_stats_is_comm(const char *name);

/* ---- partial summaries (stats_partial*.c): `stats --partial` and `--merge` ---- */

/* A job's whole state as one JSON document ("flagtrace_partial": 2): every file's
 * record (meta, events, skips, busy per device, HTA's analyses; with by-rank, its
 * own rows), the rows of the total (when some file has no own rows), unknown
 * categories and the kept device events. Names are kept byte for byte. */
/* 2: each file names its source (issue 49); a version 1 partial is refused: it cannot
 * tell a merge that two partials hold one trace */
#define FT_PARTIAL_VERSION 2
/* trace_limit: the device events kept per file (0: none, UINT64_MAX: all). FT_EINVAL,
 * nothing written, when a file's source is not known (read without .source). */
ft_status ft_stat_partial_write(FILE *f, const ft_stat_job *job, uint64_t trace_limit);
/* Reads partial summaries into one job, as if one read had read their files:
 * the partials in argument order, each one's files in its order (a file whose
 * trace names no rank takes its position in that order). by_rank: every file
 * must have its own rows; keep_rows: keep the own rows that are given. The
 * smallest trace_limit of the partials in *trace_limit. A partial that is not
 * one, of another version, or whose values do not add up is refused (FT_EPARSE,
 * "PATH: problem at byte N" in err), as is one named twice, or two that hold one
 * trace (its source: the same file or a copy; FT_EINVAL). */
ft_status ft_stat_job_merge(ft_stat_job *job, const char *const *paths, size_t n, bool by_rank, bool keep_rows,
                            uint64_t *trace_limit, char *err, size_t errlen);
ft_status ft_stat_job_merge_mem(ft_stat_job *job, const char *name, const char *data, size_t len, bool by_rank,
                                bool keep_rows, uint64_t *trace_limit, char *err, size_t errlen);

/* The slots of st->unknown_cats by category name (bytes): the order the writers
 * print them in, whichever order the job's files were read or merged in (the
 * map's own order follows name ids, which do not). Malloc'ed, *n entries; NULL
 * with *n 0 when there are none or memory ran out. */
size_t *ft_stat_unknown_order(const ft_stats *st, size_t *n);

#endif
