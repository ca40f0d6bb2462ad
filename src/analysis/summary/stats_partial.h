/* What the partial summary's reader (stats_partial_read.c) and its checks and merge (stats_partial.c) share. */
#ifndef FT_STATS_PARTIAL_H
#define FT_STATS_PARTIAL_H

#include <stdio.h>

#include "json_scan.h"
#include "stats.h"

/* The histogram's buckets (stats_dist.c): 128 exact ones below 128, then 128 per
 * power of two up to 2^64; a bucket past these would overflow bucket_mid's shift. */
#define N_BUCKETS (128u + 57u * 128u)
#define MAX_STR FT_STATS_KEEP /* the reader keeps no longer string */

/* A section's key in the document (stats_partial_write.c): its name, or
 * "section_N" for one added without a name there. */
const char *ft__partial_section_key(int sec, char *buf, size_t cap);

/* The document's containers. */
enum frame_kind {
  F_TOP,
  F_STRINGS,
  F_STRHEX,
  F_FILES,
  F_FILE,
  F_SKIPPED,
  F_META,
  F_BUSY,
  F_BUSY_DEV,
  F_ROWS,
  F_SECTION,
  F_ROW,
  F_DIST,
  F_VALS,
  F_HIST,
  F_UNKNOWN,
  F_UCAT,
  F_TRACE,
  F_EVENT,
  F_HTA,
  F_SOURCE,
  F_MEM, /* a file's device memory (stats_partial_mem.c): the kinds from here on are its */
  F_MEM_COUNTS,
  F_MEM_DEVS,
  F_MEM_DEV,
  F_MEM_NUMS,
  F_MEM_AT,
  F_MEM_LIVE
};
/* The members of each object, in the order they are written. */
enum { T_VERSION, T_TRACE_LIMIT, T_STRINGS, T_FILES, T_TOTAL, T_UNKNOWN, T_TRACE };
enum {
  FI_PATH,
  FI_EVENTS,
  FI_SPAN,
  FI_FIRST,
  FI_KERNEL,
  FI_COMM,
  FI_CAP,
  FI_CUT,
  FI_SKIPPED,
  FI_META,
  FI_BUSY,
  FI_HTA,
  FI_ROWS,
  FI_SOURCE,
  FI_MEM,     /* memread's memory summary (stats_partial_mem.c) */
  FI_MEM_CPU, /* the file's [memory] events (ft_stat_file.mem_events): the ops' memory columns */
  FI_MEM_DEV,
  FI_MEM_CUDA
};
enum { S_SIZE, S_DIGEST, S_DEV, S_INO, S_MTIME };
enum {
  H_GPU_EVENTS,
  H_GPU_FIRST,
  H_GPU_LAST,
  H_GPU_BUSY,
  H_COMPUTE,
  H_COMM,
  H_OVERLAP,
  H_LAUNCHES,
  H_SHORT,
  H_RUNTIME_OUT,
  H_DELAY_OUT,
  H_CPU,
  H_GPU,
  H_DELAY
};
enum { M_RANK, M_ACTIVITY, M_TRACER, M_STATUS, M_DROPPED, M_DISCARDED, M_HAS };
enum {
  R_NAME,
  R_AUX,
  R_CAT,
  R_COMM,
  R_CALLS,
  R_SELF,
  R_SELF_CPU,
  R_TOTAL_DEV,
  R_T,
  R_B,
  R_CPU_MEM,
  R_SELF_CPU_MEM,
  R_DEV_MEM,
  R_SELF_DEV_MEM
};
enum { D_N, D_TOTAL, D_MIN, D_MAX, D_SUMSQ, D_VALS, D_HIST_LO, D_HIST };

/* A row's members, in R_* order (stats_partial.c). */
extern const char *const ft__partial_row_keys[];
/* A row's memory sum of key k (R_CPU_MEM .. R_SELF_DEV_MEM): the ops' memory columns, signed. */
static inline int64_t *ft__partial_row_mem(ft_stat_row *r, int k) {
  return k == R_CPU_MEM        ? &r->cpu_mem
         : k == R_SELF_CPU_MEM ? &r->self_cpu_mem
         : k == R_DEV_MEM      ? &r->dev_mem
                               : &r->self_dev_mem;
}

typedef struct ft__pframe {
  uint8_t kind;
  int key;       /* the member being read (objects), -1 before one */
  uint32_t seen; /* members read so far (a bit each) */
  uint64_t pos;  /* elements read so far (arrays) */
} ft__pframe;

#define MAX_FRAMES 12
/* [file, ts, dur, device, bytes, kind, name, stream, grid x y z, block x y z, registers] */
#define EV_VALUES 15

/* A distribution as written, checked when its object ends. */
typedef struct ft__pdist {
  uint64_t n, total, min, max, hist_lo;
  ft_u128 sumsq;
  uint64_t vals[FT_DIST_EXACT];
  size_t n_vals;
  uint32_t *hist;
  size_t n_hist, cap_hist;
} ft__pdist;

typedef struct ft__preader {
  ft_stat_job *job;
  bool keep_rows;
  ft__json *j;
  const char *err; /* a static reason, or msg */
  char msg[160];
  ft__pframe fr[MAX_FRAMES];
  int depth;
  /* this partial */
  uint32_t *strs; /* strings table: index -> name id in job->total.names */
  size_t n_strs, cap_strs;
  bool hex_given;
  size_t file0;         /* job->files index of this partial's first file */
  size_t cap_files;     /* of job->files */
  uint64_t trace_limit; /* this partial's */
  bool have_total, any_rows, all_rows;
  uint64_t unknown_sum, file_unknown_sum;
  size_t trace0, cap_trace; /* job->total.trace: this partial's first event, capacity */
  uint64_t trace_in_file;   /* events of the current event's file so far */
  /* what the files' records must agree with: kernel and comm time in the kernel rows
   * (the file's own, or this partial's total), the longest kernel, the busiest device */
  ft_u128 file_kernel_rows, file_comm_rows, total_kernel_rows, total_comm_rows, files_kernel, files_comm;
  uint64_t file_longest, total_longest, files_busiest;
  bool files_capped; /* a file had devices past FT_STATS_MAX_DEVICES: not all its work is in busy */
  /* the row being read: its fields, and dists t and b once read */
  ft_stat_row row;
  bool row_has_name;
  int row_target; /* -1: the total ("total"); else the file (its own rows) */
  int sec;
  uint64_t *gen[FT_STAT_N_SECTIONS]; /* the last container (gen_id) each total row was given in */
  size_t cap_gen[FT_STAT_N_SECTIONS];
  uint64_t gen_id;
  ft__pdist d;
  int64_t num_i;
  uint64_t num_u;
  ft_stat_event ev;
} ft__preader;

/* A refusal: the reason for the message; 0, for the callback to return. */
static inline int ft__pfail(ft__preader *r, const char *why) {
  r->err = why;
  return 0;
}
static inline int ft__pfailf(ft__preader *r, const char *fmt, const char *a) {
  snprintf(r->msg, sizeof r->msg, fmt, a);
  r->err = r->msg;
  return 0;
}

static inline ft__pframe *ft__ptop(ft__preader *r) { return &r->fr[r->depth - 1]; }
static inline ft_stat_file *ft__pfile(ft__preader *r) { return &r->job->files[r->job->n_files - 1]; }

/* stats_partial.c: the checks and merges as containers end (0: refused, r->err says why) */
int ft__partial_end_dist(ft__preader *r, ft_stat_dist *out);
int ft__partial_end_row(ft__preader *r);
int ft__partial_end_file(ft__preader *r);
int ft__partial_end_event(ft__preader *r);
/* stats_partial_mem.c: a file's "mem" member (issue 51): its keys, containers, numbers and their ends */
extern const char *const ft__pmem_keys[], *const ft__pmem_dev_keys[];
int ft__partial_mem_start(ft__preader *r, ft__pframe *f, bool map);
int ft__partial_mem_number(ft__preader *r, ft__pframe *f, const char *s, size_t n);
int ft__partial_mem_end(ft__preader *r, ft__pframe *f);
ft_stat_dist *ft__partial_mem_dist(ft__preader *r, const ft__pframe *up);
void ft__partial_dist_reset(ft__preader *r);
/* stats_partial_read.c: one partial (from fd, or mem when fd < 0) into r->job */
ft_status ft__partial_read(ft__preader *r, int fd, const char *mem, size_t len, char *err, size_t errlen);

/* The short names the reading and merging files use (they define FT__PARTIAL_SHORT_NAMES). */
#ifdef FT__PARTIAL_SHORT_NAMES
typedef ft__preader reader;
typedef ft__pframe frame;
typedef ft__pdist dist_in;
#define fail ft__pfail
#define failf ft__pfailf
#define top ft__ptop
#define cur_file ft__pfile
#endif

#endif
