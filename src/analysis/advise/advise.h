/* `flagtrace advise`: a step's time split into busy and idle by cause, and findings ranked by what fixing each saves.
 */
#ifndef FLAGTRACE_ANALYSIS_ADVISE_H
#define FLAGTRACE_ANALYSIS_ADVISE_H

#include "model.h"

/* Definitions, thresholds and each vendor's calls: docs/advise.md. Times in ns. */

/* Why the device was idle (on the union of the rank's streams) during a step. The
 * parts add up to idle_ns exactly: an idle instant takes the first cause that holds
 * in this order. */
enum ft_idle_cause {
  FT_IDLE_STEP_START, /* before the step's first device work: data loading etc. (cpu_op: what ran then) */
  FT_IDLE_SYNC,       /* a synchronizing call was running (cudaDeviceSynchronize, .item()'s copy, ...) */
  FT_IDLE_H2D,        /* a blocking or pageable host-to-device copy's call was running */
  FT_IDLE_LAUNCH,     /* the next device work's launch had not been issued yet (HTA's host wait) */
  FT_IDLE_OTHER,
  FT_IDLE_N
};

typedef struct ft_advise_step {
  int64_t rank, number;                           /* number: ft_model_step's */
  int64_t start, end;                             /* wall = end - start */
  uint64_t busy_ns, compute_ns, comm_ns, copy_ns; /* busy: the union; the others: each kind's union */
  uint64_t exposed_comm_ns;                       /* communication not overlapped by compute (stragglers) */
  uint64_t idle_ns, idle[FT_IDLE_N];
  uint64_t critical_path_ns; /* the longest dependent chain (HTA's definition); the ceiling of any saving */
  /* HTA's idle-time breakdown per the same step (all streams): host wait, kernel wait, other */
  uint64_t hta_host_wait_ns, hta_kernel_wait_ns, hta_other_ns;
} ft_advise_step;
/* A step's wall time: its end is never before its start, and the span may pass 2^63 ns
 * (a trace's times are +-4e18 ns): unsigned. */
static inline uint64_t ft_advise_wall(const ft_advise_step *s) { return (uint64_t)s->end - (uint64_t)s->start; }

enum ft_rule {
  FT_RULE_SYNC,         /* a synchronizing call leaves the device idle */
  FT_RULE_H2D_COPY,     /* a blocking / pageable host-to-device copy */
  FT_RULE_STEP_START,   /* the device waits at the step's start (data loading) */
  FT_RULE_LAUNCH_BOUND, /* short kernels back to back: each shorter than its launch */
  FT_RULE_SYNC_MEMOP,   /* a synchronous memset / memcpy */
  FT_RULE_GAP,          /* a device gap over the threshold, with the CPU op running in it */
  FT_RULE_STRAGGLER,    /* a rank slower than the others on the same step (job only) */
  FT_RULE_FUSE,         /* a kernel sequence repeated often: fuse or capture in a CUDA graph */
  FT_RULE_LOW_FLOPS,    /* a matmul/conv/attention op far below the device's peak FLOP/s */
  /* device memory (issue 51; advise_memory.c, docs/advise.md "Memory") */
  FT_RULE_ALLOC_CALL,    /* cudaMalloc/cudaFree and kin in the steady-state steps: each one a sync */
  FT_RULE_FRAGMENTATION, /* peak reserved far above peak allocated */
  FT_RULE_LEAK,          /* allocated memory that grows step over step */
  FT_RULE_N
};
const char *ft_rule_name(enum ft_rule r); /* "sync", "h2d-copy", ... (the CLI's and JSON's spelling) */

typedef struct ft_advise_occurrence {
  int64_t rank, step; /* step number */
  int64_t ts, dur;    /* the occurrence's time on the file's clock */
  uint32_t slice;     /* the call / op / kernel it points at (model index), FT_MODEL_NONE */
} ft_advise_occurrence;

typedef struct ft_advise_finding {
  enum ft_rule rule;
  char what[160];       /* one line: what was found ("cudaStreamSynchronize under aten::item") */
  char where[96];       /* the op or call (name) */
  char suggestion[160]; /* one line */
  uint64_t count;       /* occurrences */
  uint64_t cost_ns;     /* device idle it causes per step (mean over the steps): what fixing it saves,
                         * each step's part capped at its critical_path_ns (docs/advise.md) */
  double cost_share;    /* cost_ns over the mean step wall time */
  uint64_t bytes;       /* memory findings: fragmentation's peak reserved less peak allocated, a leak's growth
                         * a step; 0 for the others (kept whatever their cost: they cost memory, not time) */
  ft_advise_occurrence *occ;
  size_t n_occ; /* the first FT_ADVISE_KEEP_OCC kept */
} ft_advise_finding;
#define FT_ADVISE_KEEP_OCC 64

typedef struct ft_advise_opts {
  uint64_t gap_ns;       /* FT_RULE_GAP threshold (default 100 us) */
  double min_share;      /* findings under this share of the step are dropped (default 0.01) */
  unsigned fuse_min_len; /* FT_RULE_FUSE: sequence length (default 3) */
} ft_advise_opts;
void ft_advise_opts_default(ft_advise_opts *o);

typedef struct ft_advice {
  ft_advise_step *steps;
  size_t n_steps;
  ft_advise_finding *findings; /* ranked by cost_ns, largest first */
  size_t n_findings;
} ft_advice;

/* One rank's advice from its model. */
ft_status ft_advise(const ft_model *m, const ft_advise_opts *o, ft_advice *out, char *err, size_t errlen);
/* A job's cross-rank part: stragglers (by step wall time and by exposed communication)
 * from per-rank results, appended to *job's findings and re-ranked. */
ft_status ft_advise_job(ft_advice *const *ranks, size_t n, const ft_advise_opts *o, ft_advice *job, char *err,
                        size_t errlen);
void ft_advice_free(ft_advice *a);

/* The vendor's runtime names of a synchronizing call (docs/advise.md's table):
 * true for cudaDeviceSynchronize, aclrtSynchronizeStream, hipDeviceSynchronize, ... */
bool ft_advise_is_sync_call(const char *name);
/* A host-to-device copy call that blocks the host (cudaMemcpy H2D, aclrtMemcpy, ...). */
bool ft_advise_is_blocking_copy(const char *name);
/* An allocation or free call that synchronizes (cudaMalloc, cudaFree, hipMalloc, aclrtFree, cuMemAlloc, ...;
 * not the stream-ordered cudaMallocAsync/cudaFreeAsync). */
bool ft_advise_is_alloc_call(const char *name);

/* The memory rules' thresholds (docs/advise.md "Memory"). */
#define FT_ADVISE_FRAG_RATIO 1.5              /* peak reserved over peak allocated */
#define FT_ADVISE_FRAG_MIN_BYTES (1ull << 30) /* and peak reserved over 1 GiB */
#define FT_ADVISE_LEAK_MIN_STEPS 3            /* steady-state steps (every step but the first) */
#define FT_ADVISE_LEAK_MIN_BYTES (1ull << 20) /* least-squares growth a step */

#endif
