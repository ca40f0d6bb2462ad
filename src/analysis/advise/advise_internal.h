/* advise's internals shared between its files: HTA's idle-time breakdown and critical path on the event model. */
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

#endif
