/* The export rules every reader of a stopped session shares (design.md §3, §5, §6):
 * the capture window, flow pairing, and CPU ranges projected onto device rows. */
#ifndef FLAGTRACE_CORE_EXPORT_H
#define FLAGTRACE_CORE_EXPORT_H

#include "internal.h"

/* Flow bookkeeping per vendor correlation id. */
typedef struct flowrec {
  uint32_t owner; /* index + 1 of the first in-window runtime event with the id */
  uint32_t n_dev; /* in-window device events it launched */
  bool owner_is_runtime;
  /* the device work of this launch, for range projections */
  uint64_t dev_lo, dev_hi;
  uint32_t dev_device, dev_stream;
} flowrec;

/* An API call in the window, for projecting CPU ranges onto the GPU. */
typedef struct api_call {
  uint32_t tid, corr;
  uint64_t start;
} api_call;

/* A framework user range and one of its projections onto a device row. */
typedef struct user_range {
  uint32_t tid, idx; /* idx: the range's index in the store */
  uint64_t start, end;
} user_range;
typedef struct uproj {
  uint32_t range, device, stream;
  uint64_t lo, hi;
} uproj;

typedef struct plan {
  uint64_t window_lo_ns, window_hi_ns; /* the window exported */
  /* Vendor ids are mostly dense and increasing, so they index an array directly
   * (corr - corr_min); sparse ids fall back to a map from id to array index. */
  flowrec *flows;
  size_t n_flows;
  uint32_t corr_min;
  bool dense;
  ft__map corr;    /* sparse mode: corr -> index into flows */
  ft__map devices; /* device -> 1 */
  ft__map streams; /* device << 32 | stream -> 1 */
  ft__map tids;    /* CPU thread id -> 1 */
  api_call *calls; /* sorted by (tid, start); only when there are CPU ranges */
  size_t n_calls;
  bool has_ranges;
  size_t n_user; /* framework user ranges in the window (ft_user_range_push) */
  struct uproj *uprojs; /* their projections, one per (range, device, stream) */
  size_t n_uprojs;
  ft__export_stats stats;
  /* Interned strings rendered once as JSON (names and keys escaped, values raw or
   * escaped by the literal rule): kernel names repeat thousands of times. */
  ft__arena rendered;
  struct text { const char *p; size_t n; } *names, *values;
  /* A metadata list's whole text, by its first index: the store shares equal
   * lists, so a launch's args repeat thousands of times. Direct-mapped; a list is
   * rendered on its second sighting, within a byte budget (trace_writer.c). */
  struct meta_text { uint32_t first, count; bool seen; struct text t; } *meta;
  size_t meta_bytes;
} plan;

enum { FT__META_SLOTS = 1024, FT__META_BUDGET = 8 << 20 };

/* Selects and pairs the session's events inside [lo, hi]; ft__plan_free after, also
 * on failure. */
ft_status ft__plan_build(const ft_session *s, plan *p, uint64_t lo, uint64_t hi);
void ft__plan_free(plan *p);
/* Adds key to a set, skipping the lookup when it repeats the previous key (*last):
 * events come in runs of one thread, device or stream. */
ft_status ft__set_add(ft__map *m, uint64_t key, uint64_t *last);
/* FT_FLOW_START / FT_FLOW_END / FT_FLOW_NONE for event i (e). */
int ft__flow_role(const plan *p, size_t i, const ft__event *e);
/* The GPU projection of CPU range r; false when it launched nothing. */
bool ft__project(const plan *p, const ft__event *r, uint64_t *lo, uint64_t *hi, uint32_t *dev, uint32_t *stream);

#endif
