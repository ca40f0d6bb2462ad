/* The export rules every reader of a stopped session shares (design.md §3, §5, §6):
 * the capture window, flow pairing, and CPU ranges projected onto device rows. */
#ifndef FLAGTRACE_CORE_EXPORT_H
#define FLAGTRACE_CORE_EXPORT_H

#include "internal.h"

/* Flow bookkeeping per vendor correlation id: 12 bytes, since the dense table has
 * a slot per id of the span and CUDA 13 takes two ids per launch (a 40-byte slot made
 * 40 MB for 500 k launches, above glibc's mmap threshold: fresh pages at every export,
 * ~20 us a fault on a VM). */
typedef struct flowrec {
  uint32_t owner;      /* index + 1 of the first in-window runtime event with the id */
  uint32_t n_dev : 31; /* in-window device events it launched */
  uint32_t owner_is_runtime : 1;
  uint32_t span; /* index + 1 in plan.spans; 0: none (no CPU ranges, or no device work) */
} flowrec;

/* The device work of one launch, for range projections: only built when the window
 * has CPU ranges, one per launch with device work rather than one per id. */
typedef struct devspan {
  uint64_t lo, hi;
  uint32_t device, stream;
} devspan;

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

/* The window's memory events replayed per device in timestamp order (memory.c):
 * the running totals each one is written with. */
typedef struct ft__mem_row {
  int64_t bytes;                /* "Bytes": + allocated, - freed, 0 for a pool's change */
  int64_t pool_bytes;           /* "Pool Bytes": + reserved, - unreserved (pool changes only) */
  uint64_t allocated, reserved; /* the device's totals after it */
  uint64_t pool;                /* its pool (a free: its allocation's), 0 for none */
  uint64_t ts;                  /* its time, inside its API call (a callback's is after it) */
  uint32_t tid;                 /* the calling thread: its API call's, else the tracer's */
  uint32_t device;              /* whose totals it changed: a free's is its allocation's */
  bool written;                 /* false: skipped, and counted in ft__mem_totals */
} ft__mem_row;

/* Host memory the vendor reports (pinned, pageable) is not the device's: it has its
 * own totals, under this key, written as torch writes CPU memory (Device Type 0,
 * Device Id -1), so that a device's totals are what its allocator holds. */
#define FT__MEM_HOST UINT32_MAX
static inline bool ft__mem_on_host(const ft_memory_info *m) {
  return m->memory_kind == FT_MEMKIND_PINNED || m->memory_kind == FT_MEMKIND_PAGEABLE;
}

typedef struct ft__mem_device {
  uint32_t device;     /* FT__MEM_HOST: the host's */
  uint64_t operations; /* written */
  uint64_t peak_allocated, peak_allocated_ns, peak_reserved, peak_reserved_ns;
  uint64_t allocated, reserved; /* at the window's end */
} ft__mem_device;

/* At most this many allocations of one device are tracked live at once (the table
 * holds 2^21 slots of 24 bytes at most: 48 MiB); an allocation past it is skipped,
 * and so then is its free (an unknown address). Devices are replayed one at a time. */
enum { FT__MEM_LIVE_MAX = 1 << 20 };
/* The live limit replays use (the trace's "live_limit"): FT__MEM_LIVE_MAX, unless a
 * test set another (0 restores it; not thread-safe: tests only). */
size_t ft__mem_live_max(void);
void ft__mem_set_live_max_for_tests(size_t n);
/* Bytes above this (1 PiB) in one operation are implausible: the operation is skipped. */
#define FT__MEM_BYTES_MAX (1ull << 50)

typedef struct ft__mem_totals {
  ft__mem_row *rows; /* by store.mems index; NULL when the window has no memory event */
  ft__mem_device *devices;
  size_t n_devices;
  uint64_t operations;          /* memory events in the window */
  uint64_t written;             /* of them, written ([memory] instants) */
  uint64_t skipped_frees;       /* frees of an address with no live allocation */
  uint64_t skipped_allocs;      /* allocations (pool changes) past FT__MEM_LIVE_MAX live ones (pools) */
  uint64_t skipped_implausible; /* bytes above FT__MEM_BYTES_MAX */
  uint64_t replaced;            /* allocations at a live address: the older one taken as freed */
  uint64_t unreserve_clamped;   /* pool trims of more than the pool was seen to reserve */
  uint64_t moved_frees;         /* frees named on another device than their allocation's, moved to it */
} ft__mem_totals;

/* Replays the memory events inside [lo, hi]: allocated = live ALLOC bytes (a FREE
 * takes its allocation's size; a FREE of an unknown address is skipped), reserved =
 * allocations outside a pool, and inside a pool that reports no reservation, plus
 * each pool's RESERVE less UNRESERVE bytes. Also adds each written event's calling
 * thread to *tids. FT_ENOMEM; ft__mem_totals_free after, also on failure. */
ft_status ft__mem_totals_build(const ft_session *s, uint64_t lo, uint64_t hi, ft__map *tids, ft__mem_totals *t);
void ft__mem_totals_free(ft__mem_totals *t);

typedef struct plan {
  uint64_t window_lo_ns, window_hi_ns; /* the window exported */
  /* Vendor ids are mostly dense and increasing, so they index an array directly
   * (corr - corr_min); sparse ids fall back to a map from id to array index. */
  flowrec *flows;
  size_t n_flows;
  devspan *spans; /* only with projections and CPU ranges in the window */
  size_t n_spans;
  unsigned char *block; /* the one allocation of spans, calls and flows */
  uint32_t corr_min;
  bool dense;
  ft__map corr;    /* sparse mode: corr -> index into flows */
  ft__map devices; /* device -> 1 */
  ft__map streams; /* device << 32 | stream -> 1 */
  ft__map tids;    /* CPU thread id -> 1 */
  api_call *calls; /* sorted by (tid, start); as spans */
  size_t n_calls;
  bool projections;     /* ft__plan_build's: calls and spans are built */
  size_t n_user;        /* framework user ranges in the window (ft_user_range_push) */
  struct uproj *uprojs; /* their projections, one per (range, device, stream) */
  size_t n_uprojs;
  ft__export_stats stats;
  size_t n_mem;       /* memory events in the window */
  ft__mem_totals mem; /* their totals, built when writing (projections) */
  /* Interned strings rendered once as JSON (names and keys escaped, values raw or
   * escaped by the literal rule): kernel names repeat thousands of times. */
  ft__arena rendered;
  struct text {
    const char *p;
    size_t n;
  } * names, *values;
  /* A metadata list's whole text, by its first index: the store shares equal
   * lists, so a launch's args repeat thousands of times. Direct-mapped; a list is
   * rendered on its second sighting, within a byte budget (trace_writer.c). */
  struct meta_text {
    uint32_t first, count;
    bool seen;
    struct text t;
  } * meta;
  size_t meta_bytes;
} plan;

enum { FT__META_SLOTS = 1024, FT__META_BUDGET = 8 << 20 };

/* Selects and pairs the session's events inside [lo, hi]; ft__plan_free after, also
 * on failure. projections: also what ft__project needs (the writer's CPU ranges);
 * without, ft__project finds nothing, and two arrays of a few bytes per launch are
 * neither allocated nor filled (fresh pages cost ~20 us each on some VMs). */
ft_status ft__plan_build(const ft_session *s, plan *p, uint64_t lo, uint64_t hi, bool projections);
void ft__plan_free(plan *p);
/* Adds key to a set, skipping the lookup when it repeats the previous key (*last):
 * events come in runs of one thread, device or stream. */
ft_status ft__set_add(ft__map *m, uint64_t key, uint64_t *last);
/* FT_FLOW_START / FT_FLOW_END / FT_FLOW_NONE for event i (e). */
int ft__flow_role(const plan *p, size_t i, const ft__event *e);
/* The GPU projection of CPU range r; false when it launched nothing. */
bool ft__project(const plan *p, const ft__event *r, uint64_t *lo, uint64_t *hi, uint32_t *dev, uint32_t *stream);

#endif
