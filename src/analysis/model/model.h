/* The event model: one trace file held as typed columns that every analysis reads (docs/design.md "The event model").
 */
#ifndef FLAGTRACE_ANALYSIS_MODEL_H
#define FLAGTRACE_ANALYSIS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flagtrace/flagtrace.h" /* ft_status */
#include "stats.h"

/* Perfetto's trace processor is the pattern: the file is imported once (by the stats
 * reader's parse, through its on_event hook), then every analysis is a pass over these
 * arrays. Slices are held in start order (ties: file order). Times are ns on the
 * file's clock. What grows with slices is at most 64 bytes a slice (61 B of columns, plus
 * steps and wide ids); names, texts, launch configurations and tracks are held once each
 * (ft_model_bytes, ft_model_bytes_distinct; test_model.py checks both on every committed
 * trace, and the whole at most 64 B a slice on a generated 1 M-event trace). */

#define FT_MODEL_NONE UINT32_MAX /* an index column's "no such slice / step / op"; corr32/ext32: none */
#define FT_MODEL_NO_ID INT64_MIN /* ft_model_corr/ft_model_ext: the event had none */
/* corr32/ext32: the id is outside [0, FT_MODEL_WIDE), held in a side table (ft_model_corr/ext read it) */
#define FT_MODEL_WIDE (UINT32_MAX - 1)

/* What a slice is: the stats reader's sections (enum ft__sec in stats_internal.h),
 * narrowed to what analyses ask. */
enum ft_model_kind {
  FT_MK_KERNEL,  /* device work: a kernel */
  FT_MK_MEMCPY,  /* device work: a copy (arg: bytes; aux: the copy kind's name id when known) */
  FT_MK_MEMSET,  /* device work: a memset (arg: bytes) */
  FT_MK_RUNTIME, /* a runtime call on the CPU (cudaLaunchKernel, aclrtSynchronizeStream, ...) */
  FT_MK_DRIVER,  /* a driver call on the CPU */
  FT_MK_OP,      /* a framework op (cpu_op / operator) */
  FT_MK_RANGE,   /* a user range (user_annotation, NVTX; ProfilerStep#N) */
  FT_MK_GPU_RANGE,
  FT_MK_SYNC,     /* cuda_sync: the device-side span of a synchronization */
  FT_MK_OVERHEAD, /* the profiler's own CPU work */
  FT_MK_PYFUNC,   /* python_function */
  FT_MK_N
};
static inline bool ft_model_is_device(uint8_t k) { return k == FT_MK_KERNEL || k == FT_MK_MEMCPY || k == FT_MK_MEMSET; }

enum ft_track_kind { FT_TRACK_THREAD, FT_TRACK_STREAM };
typedef struct ft_model_track {
  int64_t pid, tid; /* the trace's (pid -1: none or not a number; tid -1: none); a stream's tid is its
                     * stream: args.stream, else the event's tid */
  int64_t device;   /* a stream's device (its pid in kineto traces); -1 on a thread */
  uint32_t name;    /* thread or stream name when the trace names it, else FT_MODEL_NONE (not read yet:
                     * metadata events never reach the model) */
  uint8_t kind;     /* enum ft_track_kind */
} ft_model_track;

/* A thread's or process's name as the trace's metadata ("ph": "M") gives it. */
typedef struct ft_model_meta {
  int64_t pid, tid; /* tid -1: a process's name */
  bool process;
  char name[128]; /* cut to fit */
} ft_model_meta;

/* A step: a user range (FT_MK_RANGE) ProfilerStep#N (number N), a range named by the caller
 * (ft_model_opts.step: numbered in order of start from 0), or, when the trace has neither,
 * the whole trace (number -1: first start to last end). Steps are in start order. */
typedef struct ft_model_step {
  int64_t number;
  int64_t start, end; /* ns */
  uint32_t slice;     /* the range's slice; FT_MODEL_NONE for the whole trace */
} ft_model_step;

/* One device (or CPU) memory operation (issue 51): a torch `[memory]` instant or
 * flagtrace's own (the writer uses torch's keys, so one reader reads both). In
 * time order (ties: file order). Not a slice: the 64 B/slice bound does not count
 * these (ft_model_bytes does). */
typedef struct ft_model_mem {
  int64_t ts;                              /* ns */
  int64_t bytes;                           /* args.Bytes: > 0 allocated, < 0 freed (torch's sign) */
  uint64_t addr;                           /* args.Addr */
  int64_t total_allocated, total_reserved; /* args "Total Allocated"/"Total Reserved" after it; -1 absent */
  int32_t device;                          /* args "Device Id"; -1 absent */
  int16_t device_type;                     /* args "Device Type" (torch's DeviceType: 0 CPU, 1 CUDA, 20 PrivateUse1) */
  uint32_t track;                          /* the thread track it was recorded on */
  uint32_t op;   /* the innermost op or range open around it on its thread, else (ours) the op or range of
                  * its External id (the latest in file order), else the op of the runtime call that made it
                  * (its correlation id); FT_MODEL_NONE */
  uint32_t call; /* the runtime or driver call slice that made it (ours: args.correlation; the latest of that
                  * id in file order), FT_MODEL_NONE */
  uint32_t step; /* the step it falls in, FT_MODEL_NONE */
} ft_model_mem;

typedef struct ft_model {
  size_t n; /* slices */
  /* columns, n entries each */
  int64_t *ts, *dur; /* ns */
  /* correlation id and External id (the op join), 32 bits a slice to fit the 64 B bound: the id itself
   * below FT_MODEL_WIDE, FT_MODEL_NONE when absent, FT_MODEL_WIDE when wider (then ft_model_corr/ext
   * give it). Read them through ft_model_corr(m, i) and ft_model_ext(m, i). */
  uint32_t *corr32;
  uint32_t *ext32;
  uint64_t *arg;   /* args.bytes: copies' and memsets' bytes; 0 when absent (other slices have none) */
  uint32_t *name;  /* string id: ft_model_str */
  uint32_t *track; /* index into tracks: device work, GPU ranges and syncs on streams, the rest on threads */
  uint32_t *link;  /* a launch's device work, device work's launch: runtime and driver calls paired with
                    * kernels, copies and memsets by correlation id, one launch per id (the same pairing as
                    * stats_hta.c's join_id: each piece of work with the nearest unpaired call before it);
                    * FT_MODEL_NONE */
  uint32_t *op;    /* a slice on a thread: the innermost op or range around it there (torch's nesting: by
                    * start, the longer first; it starts before the op's end and does not outlast it), not
                    * itself; on a stream: its launch's op when linked, else the op or range of its External
                    * id (the latest in the file, as stats_ops.c joins them); FT_MODEL_NONE */
  uint32_t *step;  /* index into steps: the step the slice starts in ([start, end)), linked device work its
                    * launch's; FT_MODEL_NONE */
  uint8_t *kind;   /* enum ft_model_kind */
  /* each slice's launch arguments and Input Dims: through ft_model_kernel_args (deduplicated) */
  ft_model_track *tracks;
  size_t n_tracks;
  ft_model_step *steps;
  size_t n_steps;
  ft_model_mem *mem; /* memory operations, n_mem of them (issue 51) */
  size_t n_mem;
  ft_model_meta *meta; /* the trace's thread_name / process_name events, in file order (the report's row names) */
  size_t n_meta;
  /* what the file's "flagtrace"/"distributedInfo" blocks say */
  int64_t rank;            /* -1 when not named */
  double peak_flops;       /* the device's dense BF16 tensor peak FLOP/s by its name (ft_model_peak_flops: the
                            * one table, docs/advise.md "Peaks"); 0 unknown. What advise's low-flops reads */
  char device_name[64];    /* the first deviceProperties entry's name, "" when absent */
  struct ft_model_priv *p; /* strings, kernel args, build state */
} ft_model;

/* (a struct tag only: a typedef of this name would clash with the function's) */
struct ft_model_kernel_args {
  int32_t grid[3], block[3]; /* 0s when absent */
  int64_t stream, regs;      /* -1 when absent */
  const char *dims;          /* an op's Input Dims as Python prints them, NULL when absent (ops only) */
};

typedef struct ft_model_opts {
  const char *step; /* a range name whose occurrences are the steps; NULL: ProfilerStep#N */
  bool source;      /* ft_model_read: keep the file's source (its bytes' digest) for a replay into a st that wants it */
} ft_model_opts;

/* Reads one trace (.json/.json.gz, "-" stdin) into m and, when st is not NULL, the
 * same parse's summary into st (one parse, both results; st fresh from ft_stats_init,
 * its options set; m is the same model either way, python_function slices included,
 * and st the summary a read of its own gives). Errors as ft_stats_read's; m is then
 * empty (ft_model_free is harmless). */
ft_status ft_model_read(ft_model *m, const char *path, const ft_model_opts *o, ft_stats *st, char *err, size_t errlen);
ft_status ft_model_read_mem(ft_model *m, const char *data, size_t len, const ft_model_opts *o, ft_stats *st, char *err,
                            size_t errlen);
void ft_model_free(ft_model *m);

/* The builder the reader uses, for tests too: ft_model_init, then ft_model_add per
 * event (as the stats reader hands it over), then ft_model_finish (sorts, links
 * launches to device work, attributes ops, assigns steps). False without memory. */
void ft_model_init(ft_model *m, const ft_model_opts *o);
struct ft__ev;
bool ft_model_add(ft_model *m, const struct ft__ev *e, const char *name, const char *cat);
ft_status ft_model_finish(ft_model *m);

const char *ft_model_str(const ft_model *m, uint32_t id); /* "" for FT_MODEL_NONE */
/* A device's dense BF16 tensor peak in FLOP/s (FP16 where it has no BF16) by its
 * deviceProperties name, from the vendors' data sheets (model.c's table, docs/advise.md
 * "Peaks"); 0 when the name is not in the table or NULL. */
double ft_model_peak_flops(const char *device_name);
/* The id of a name, FT_MODEL_NONE when no slice has it. */
uint32_t ft_model_find_str(const ft_model *m, const char *s);
bool ft_model_kernel_args(const ft_model *m, size_t slice, struct ft_model_kernel_args *a); /* false: none held */
/* Bytes held (columns, strings, tracks, side tables), for the 64 B/slice bound. */
size_t ft_model_bytes(const ft_model *m);
/* Of which what does not grow with slices: names and Input Dims texts, the kernel-args
 * variants, tracks, the memory rows (they grow with [memory] events), the model's own structs. A trace of few slices
 * holds more of these than 64 B a slice (a 107-slice trace has 7 kB of kernel names); what grows with slices
 * (ft_model_bytes less this) is 61 B a slice plus steps and ids wider than 32 bits. */
size_t ft_model_bytes_distinct(const ft_model *m);

/* The full correlation / External id of slice i, FT_MODEL_NO_ID when it has none. */
int64_t ft__model_wide(const ft_model *m, size_t i, bool ext);
static inline int64_t ft_model_corr(const ft_model *m, size_t i) {
  uint32_t v = m->corr32[i];
  return v < FT_MODEL_WIDE ? (int64_t)v : v == FT_MODEL_NONE ? FT_MODEL_NO_ID : ft__model_wide(m, i, false);
}
static inline int64_t ft_model_ext(const ft_model *m, size_t i) {
  uint32_t v = m->ext32[i];
  return v < FT_MODEL_WIDE ? (int64_t)v : v == FT_MODEL_NONE ? FT_MODEL_NO_ID : ft__model_wide(m, i, true);
}

/* Advice that a large buffer go in huge pages where the kernel offers them (THP
 * "madvise"): a fresh 4 KiB page costs a fault. For the model's columns and the
 * analyses' scratch arrays; harmless on small or NULL buffers. */
void ft__model_huge(void *p, size_t bytes);

/* Every slice into st in the file's order, as the streaming read added it. The
 * numbers equal a streaming read's of the same file: test_model checks every
 * committed trace. */
ft_status ft_model_replay(const ft_model *m, ft_stats *st);

#endif
