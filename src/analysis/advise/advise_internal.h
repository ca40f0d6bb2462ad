/* advise's internals shared between its files: HTA's idle-time breakdown and critical path, the vendors' call classes,
 * the finding table. */
#ifndef FLAGTRACE_ANALYSIS_ADVISE_INTERNAL_H
#define FLAGTRACE_ANALYSIS_ADVISE_INTERNAL_H

#include "advise.h"

/* HTA's thresholds, in ns (HTA's are in the trace's us): get_idle_time_breakdown's
 * consecutive_kernel_delay default, and critical_path_analysis.py's
 * KERNEL_KERNEL_DELAY_THRESHOLD_US. */
#define FT_HTA_KERNEL_WAIT_NS 30000
#define FT_HTA_CP_KERNEL_DELAY_NS 1500000

/* hta_idle.c: HTA's idle-time breakdown (get_idle_time_breakdown) of one stream.
 * The device work on a stream (kernels, copies, memsets; not cuda_sync) in start
 * order; each one's gap is its start minus the previous one's end: host wait when
 * its launch started after that end, else kernel wait when the gap is under
 * FT_HTA_KERNEL_WAIT_NS, else other. The stream's first work has no gap. Streams are
 * told apart by stream id alone, as HTA does. Gaps are signed: HTA sums them as they
 * come, so work that overlaps its predecessor subtracts. */
typedef struct ft__hta_idle {
  int64_t stream;
  int64_t host_ns, kernel_ns, other_ns;
  uint64_t n_host, n_kernel, n_other; /* gaps counted in each (the first work's none) */
} ft__hta_idle;

/* The breakdown per stream id (ascending) over the whole trace (step >= m->n_steps) or
 * over the device work of one step (m->step: the work a step's launches issued, HTA's
 * definition applied to those alone). *out: malloc'd, the caller frees. False without memory. */
bool ft__hta_idle_streams(const ft_model *m, size_t step, ft__hta_idle **out, size_t *n);
/* One step's breakdown summed over its streams, each sum floored at 0 (zeros without memory). */
void ft__hta_idle_step(const ft_model *m, size_t step, uint64_t *host, uint64_t *kernel, uint64_t *other);
/* Every step's at once, one pass (out: m->n_steps rows of host, kernel, other). False without memory. */
bool ft__hta_idle_steps(const ft_model *m, uint64_t (*out)[3]);

/* critical_path.c: the length of HTA's critical path (critical_path_analysis.py) through
 * a step's window (step >= m->n_steps: the whole trace), in ns; 0 when the window holds
 * nothing. The graph: a start and an end node per CPU op, runtime/driver call and
 * device work; call-stack edges per thread; the runtime lock's edges between
 * cudaLaunchKernel / cudaMemcpyAsync / cudaHostAlloc calls; launch-delay edges (the
 * launch's start to its work's start) when the stream's queue was empty; kernel-kernel
 * edges under FT_HTA_CP_KERNEL_DELAY_NS; sync edges from device work to the end of
 * the synchronizing call. docs/advise.md "Against HTA" lists what differs. */
uint64_t ft__critical_path_ns(const ft_model *m, size_t step);
/* Every step's (out: m->n_steps entries), the per-trace part done once. False without memory. */
bool ft__critical_paths(const ft_model *m, uint64_t *out);

/* critical_dag.c: the orders HTA's sorts give the graph's nodes: by time, then slice,
 * then node (a start before its end); ft__sort_nearly sorts by it with an insertion sort
 * while its moves stay under a budget (ends of calls that do not overlap come sorted),
 * qsort past it. */
typedef struct ft__tkey {
  int64_t t;
  uint32_t s, node;
} ft__tkey;
static inline bool ft__tkey_lt(const ft__tkey *a, const ft__tkey *b) {
  if (a->t != b->t) return a->t < b->t;
  if (a->s != b->s) return a->s < b->s;
  return a->node < b->node;
}
void ft__sort_nearly(ft__tkey *k, size_t n);

/* critical_dag.c: networkx's dag_longest_path over nn nodes: in topological order, each
 * node's distance is the best predecessor's plus the edge (a later edge between the
 * same nodes replaces the earlier, as networkx's add_edge does); 0 when the graph has a
 * cycle (HTA's validation fails then) or without memory (*oom). d's buffers are kept
 * for the next call (a zeroed ft__dag to start; ft__dag_free). */
typedef struct ft__dag_edge {
  uint32_t u, v;
  int64_t w;
} ft__dag_edge;
typedef struct ft__dag {
  size_t *first;
  uint32_t *indeg, *order, *out_v;
  int64_t *dist, *out_w;
  size_t cap_first, cap_indeg, cap_order, cap_out_v, cap_dist, cap_out_w;
} ft__dag;
uint64_t ft__dag_longest(ft__dag *d, const ft__dag_edge *e, size_t ne, size_t nn, bool *oom);
void ft__dag_free(ft__dag *d);

/* vendor_calls.c: what a runtime or driver call is, by its vendor's name (any of
 * cuda/cu, hip, mc, musa/mu, tops, aclrt; version suffixes such as _v3020 and
 * _ptsz ignored). */
enum ft__call_class {
  FT__CALL_NONE,
  FT__CALL_SYNC,        /* waits for the device: cudaDeviceSynchronize, aclrtSynchronizeStream, ... */
  FT__CALL_SYNC_COPY,   /* a copy that returns when done: cudaMemcpy, aclrtMemcpy, cuMemcpyDtoH, ... */
  FT__CALL_SYNC_MEMSET, /* a memset that returns when done: cudaMemset, aclrtMemset, cuMemsetD32, ... */
  FT__CALL_ASYNC_COPY,  /* cudaMemcpyAsync and kin: blocks only for pageable host memory */
  FT__CALL_ALLOC        /* cudaMalloc, cudaFree, hipMalloc, aclrtFree, ...: synchronizing allocation calls */
};
enum ft__copy_dir { FT__DIR_UNKNOWN, FT__DIR_H2D, FT__DIR_D2H, FT__DIR_D2D };
/* The class of a call and, for a copy whose name says it (cuMemcpyHtoD), its direction. */
enum ft__call_class ft__advise_call_class(const char *name, enum ft__copy_dir *dir);
/* Device copy work's direction and host memory from its name as kineto and flagtrace
 * write it ("Memcpy HtoD (Pageable -> Device)"). */
enum ft__copy_dir ft__advise_copy_dir(const char *work_name, bool *pageable);

/* *p with room for need items of size bytes (doubling; large ones in huge pages); false without memory. */
bool ft__advise_grow(void **p, size_t *cap, size_t need, size_t size);

/* advise_findings.c: the findings under construction, one per key (rule, two name ids),
 * and each occurrence's cost in its step. */
typedef struct ft__credit {
  uint32_t finding, step; /* step: index into m->steps */
  uint64_t ns;
} ft__credit;
typedef struct ft__findings {
  ft_advise_finding *f;
  size_t n, cap;
  uint32_t *slot; /* hash of keys -> finding index + 1 */
  size_t n_slot;
  uint64_t *keys; /* per finding: (rule, k1, k2) packed */
  struct ft__last {
    uint32_t slice, step;
    int64_t ts;
    size_t cr; /* its latest credit (index into cr), SIZE_MAX: none */
  } * last;    /* per finding: its latest occurrence */
  ft__credit *cr;
  size_t n_cr, cap_cr;
} ft__findings;
/* The finding of key (rule, k1, k2), made when new (then *is_new); UINT32_MAX without memory. */
uint32_t ft__finding(ft__findings *t, enum ft_rule rule, uint32_t k1, uint32_t k2, bool *is_new);
/* One occurrence's cost: counted and kept once per (slice, step, ts) in a row (a call
 * that leaves the device idle in two gaps is one occurrence). False without memory. */
bool ft__credit_add(ft__findings *t, uint32_t finding, const ft_model *m, size_t step, uint32_t slice, int64_t ts,
                    int64_t dur, uint64_t ns);

void ft__findings_free(ft__findings *t);
/* Each finding's cost (mean over n_steps of its per-step sums, each capped at
 * ceil[step] when ceil is not NULL) and share of mean_wall; then the ranking: those
 * under min_share dropped, the rest by cost, largest first. */
void ft__cost_findings(ft__findings *t, const uint64_t *ceil, size_t n_steps, double mean_wall);
void ft__rank_findings(ft_advise_finding *f, size_t *n, double min_share);

/* advise_rules.c: the rules that are not idle causes, over the whole model. */
bool ft__rule_fuse(const ft_model *m, const ft_advise_opts *o, const int64_t *idle_a, const int64_t *idle_b,
                   const uint64_t *idle_pre, size_t n_idle, ft__findings *t);
bool ft__rule_low_flops(const ft_model *m, double peak, ft__findings *t);
/* advise_memory.c: alloc-call, fragmentation and leak (docs/advise.md "Memory"). */
bool ft__rule_memory(const ft_model *m, ft__findings *t);

#endif
