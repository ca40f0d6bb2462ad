/* The core's session and store internals (ft__ prefix, hidden); the containers and
 * the output sink have their own headers. */
#ifndef FLAGTRACE_CORE_INTERNAL_H
#define FLAGTRACE_CORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flagtrace/device_tracer.h"
#include "flagtrace/flagtrace.h"
#include "containers.h"
#include "json_out.h"
#include "tracer_support.h"

/* ---- environment and diagnostics (env.c) ---- */

/* Parses a boolean as design.md §8 defines it: 1/true/on/yes, 0/false/off/no,
 * case-insensitive. Returns FT_OK and sets *out, or FT_EINVAL for anything else
 * (the text is not a boolean). */
ft_status ft__parse_bool(const char *text, bool *out);

/* FLAGOS_TRACE, read once per process; an unrecognized value warns once on stderr
 * and reads as off. */
bool ft__trace_enabled(void);

/* Re-reads FLAGOS_TRACE (tests only). */
void ft__trace_reset_for_tests(void);

uint32_t ft__gettid(void);

/* FLAGOS_TRACE_MEMORY: false when it is 0/false/off/no, which takes device memory
 * (FT_ACTIVITY_MEMORY) out of every session of the process; unset, a true value or
 * anything else (warned once) leaves the sessions' options as they are. */
bool ft__memory_allowed(void);

/* ---- events (store.c) ---- */

enum {
  FT__EV_KERNEL = FT_EVENT_KERNEL,
  FT__EV_MEMCPY = FT_EVENT_MEMCPY,
  FT__EV_MEMSET = FT_EVENT_MEMSET,
  FT__EV_RUNTIME = FT_EVENT_RUNTIME,
  FT__EV_DRIVER = FT_EVENT_DRIVER,
  FT__EV_SYNC = FT_EVENT_SYNC,
  FT__EV_MEMORY = FT_EVENT_MEMORY,
  FT__EV_CPU_RANGE = 8, /* 6 is FT_EVENT_GPU_USER_ANNOTATION, exported only */
};
#define FT__F_HAS_EXTERNAL 1u
/* a framework's user range (ft_user_range_push): projected, never written as a slice */
#define FT__F_USER_RANGE 2u

typedef struct ft__event {
  uint64_t start_ns, end_ns;
  uint64_t external_id;
  uint32_t correlation_id;
  /* A device event has a device and stream, a call or CPU range a thread, never
   * both: sharing the bytes makes an event 48 bytes instead of 56 (P6, bench/).
   * Read only the member of the event's kind. */
  union {
    struct {
      uint32_t device, stream;
    };
    uint32_t thread_id;
  };
  uint32_t name_id;
  uint32_t meta_first;
  uint16_t meta_count;
  uint8_t kind;
  uint8_t flags;
} ft__event;

_Static_assert(sizeof(ft__event) == 48, "an event grew: check P6 (memory per captured event)");

typedef struct ft__kvid {
  uint32_t key, value; /* interned ids */
} ft__kvid;

/* A memory event's numbers (FT__EV_MEMORY), beside the event so that every event
 * stays 48 bytes (P6): the event's meta_first indexes store.mems (a memory event
 * keeps no metadata), its device and stream are the event's own. */
typedef struct ft__mem {
  ft_memory_info info;
  uint32_t thread_id; /* the calling thread the tracer named (0: none) */
} ft__mem;

typedef struct ft__store {
  ft__strtab names;  /* event names and metadata keys */
  ft__strtab values; /* metadata values (grids, sizes repeat heavily) */
  ft__vec events;    /* ft__event */
  ft__vec kvs;       /* ft__kvid */
  ft__vec mems;      /* ft__mem, of the memory events */
  /* identical metadata lists (a kernel's args repeat with the kernel) are stored
   * once: hash of the id list -> first | count << 32 */
  ft__map meta_sets;
  /* the last list stored, for API calls [0] and device events [1] (first | count
   * << 32; 0 = none): a tracer repeats one list over many events, which then costs
   * string compares, not interning */
  uint64_t last_meta[2];
} ft__store;

void ft__store_init(ft__store *st);
void ft__store_free(ft__store *st);
ft_status ft__store_add_device(ft__store *st, const ft_device_event *ev);
ft_status ft__store_add_range(ft__store *st, uint32_t name_id, uint64_t start, uint64_t end, uint64_t external_id,
                              uint32_t tid);
/* Stored event e as a tracer would have handed it over, its metadata resolved into
 * *kv (grown as needed; the caller frees it); FT_ENOMEM. Pointers are st's. */
ft_status ft__store_view(const ft__store *st, const ft__event *e, ft_kv **kv, size_t *kv_cap, ft_device_event *out);
static inline bool ft__is_device_kind(unsigned k) {
  return k == FT__EV_KERNEL || k == FT__EV_MEMCPY || k == FT__EV_MEMSET;
}
/* Host-side API calls: they launch device work and carry the thread id. */
static inline bool ft__is_api_kind(unsigned k) { return k == FT__EV_RUNTIME || k == FT__EV_DRIVER; }
/* A device memory operation: an instant on its calling thread, written as a
 * [memory] instant and a sample of its device's "Memory" counter (memory.c). */
static inline bool ft__is_memory_kind(unsigned k) { return k == FT__EV_MEMORY; }
/* Events on a device row (pid = device, tid = stream): device work and syncs. */
static inline bool ft__on_device_row(unsigned k) { return ft__is_device_kind(k) || k == FT__EV_SYNC; }

/* ---- sessions (session.c) and export (trace_writer.c) ---- */

enum { FT__S_CREATED, FT__S_RUNNING, FT__S_STOPPED };

/* a start/end range awaiting its end (ft__range_start) */
typedef struct ft__open_range {
  uint64_t start_ns;
  uint32_t name_id, tid;
} ft__open_range;

struct ft_session {
  pthread_mutex_t mu;
  int state;
  atomic_bool running; /* state == RUNNING, for the lock-free correlation push */
  uint64_t gen;        /* unique per session in the process: thread-local range
                        * frames, correlation pushes and error texts carry it, so
                        * a later session at the same address never takes them */
  ft_tracer *tracer;
  atomic_bool tracer_armed; /* read without the lock by ft_correlation_push */
  ft_status device_status;
  char device_why[256];
  ft__store store;
  ft_event_sink sink;
  /* (vendor correlation id, external id) reports, applied at stop. Reports in id
   * order go to runs: consecutive ids under one external id (an op's launches) share
   * one 16-byte entry, where a pair each cost 16 B and a hash map 34-68 B (P6,
   * bench/). A report below the runs' end (threads, buffers out of order, an id
   * reported again) is kept as its own pair, sorted at stop; it always postdates
   * any run covering its id, so it wins over the runs. */
  struct ft__corr_run *corr_runs;
  size_t n_corr_runs, cap_corr_runs;
  uint64_t corr_runs_end; /* one past the highest id in the runs */
  /* Runs may span ids nobody reports (set at stop by attribution by time, which then
   * reports every call, FT__EXT_NONE where no id was open): on CUDA 13 a launch takes
   * two ids (CUPTI is told not to record the nested cuKernelGetName), so runs of
   * consecutive ids were one per launch (8 MiB at stop for 500 k launches, P6). */
  bool corr_gaps;
  struct ft__corr_ext *corr_ext;
  size_t n_corr_ext, cap_corr_ext;
  bool corr_ext_sorted;
  /* Attribution by time (attribute.c), when the tracer stamps calls on our clock:
   * every thread's pushes and pops, and the calls the tracer left out of the rows. */
  bool timed;
  struct ft__thread_log *logs;
  ft__vec call_spans;                  /* struct ft__call_span */
  ft__map open_ranges;                 /* start/end ranges: id -> index into open_vec */
  ft__vec open_vec;                    /* ft__open_range */
  uint64_t window_lo_ns, window_hi_ns; /* the capture window (design.md §3) */
  uint64_t next_external_id;
  uint64_t dropped;
  int rank, world_size;
  uint64_t serial; /* unique per process: a freed session's address can come back */
  /* deviceProperties: per device, its entries in store.kvs (read at stop) */
  struct ft__devprop {
    uint32_t first, count;
  } * devprops;
  int n_devprops;
  unsigned activities;
  char process_name[128];
  uint32_t pid;
  /* ft_session_set_collecting: stopped intervals [lo, hi) (hi UINT64_MAX while
   * open), applied at stop */
  struct ft__pause {
    uint64_t lo, hi;
  } * pauses;
  size_t n_pauses, cap_pauses;
  uint64_t paused_left_out; /* events left out for them */
  /* attaching (ft_session_start): a whole-run session (record's) accepts one attached
   * session; an attached one reads its window from the parent at stop */
  bool accepts_attach;
  atomic_bool has_child;
  ft_session *parent;
  size_t parent_events_from, parent_spans_from; /* the parent's store at our start */
  uint64_t parent_dropped_from;
  /* another client took the vendor's activity API (ft__session_relinquish) */
  uint64_t lost_ns;
  char lost_why[512];
};

/* ---- attribution by time (attribute.c, design.md §2) ---- */

/* A call reported with no id open around it (only while s->corr_gaps): a barrier
 * that keeps a run spanning ids of other ops' calls from claiming it. */
#define FT__EXT_NONE UINT64_MAX

struct ft__call_span {
  uint64_t start, end;
  uint32_t corr, tid;
};
/* Notes a push / pop of the calling thread (s->timed sessions). */
ft_status ft__timed_push(ft_session *s, uint64_t id);
ft_status ft__timed_pop(ft_session *s);
/* sink->call_span */
ft_status ft__timed_call_span(ft_session *s, uint32_t corr, uint32_t tid, uint64_t start, uint64_t end);
/* At stop, under s->mu: gives each API event of a thread that pushed ids the
 * innermost id open around it, and reports (correlation id, that id) through pair
 * for every such call and call span, so that its device work follows. */
typedef ft_status (*ft__attribute_pair_fn)(ft_session *s, uint32_t corr, uint64_t ext);
ft_status ft__timed_attribute(ft_session *s, ft__attribute_pair_fn pair);
void ft__timed_free(ft_session *s);
/* At stop, under s->mu, after the ids are resolved: gives each memory operation
 * that still has no external id but names its calling thread the id of the
 * innermost frame (timed sessions) or CPU range open on that thread at its time. */
ft_status ft__attribute_by_thread(ft_session *s);
/* Stop's last step: attribution by time (timed) and every event's external id from
 * the reports; tests run it on sessions without a tracer. */
ft_status ft__session_attribute(ft_session *s, bool timed);

/* Sets the calling thread's last error message for s and returns status. */
ft_status ft__session_fail(ft_session *s, ft_status status, const char *fmt, ...) FT__PRINTF(3, 4);

/* Export statistics computed by the writer's rules (window, flows). */
typedef struct ft__export_stats {
  uint64_t exported;
  uint64_t window_discarded;
  uint64_t flows;       /* device events with a flow end */
  uint64_t flow_starts; /* launches with a flow start (a graph replay: one for all its nodes) */
} ft__export_stats;

/* Writes the session's trace to o (kineto layout); with o NULL, only computes stats. */
ft_status ft__write_trace(ft_session *s, ft__out *o, ft__export_stats *stats);
/* Tests: render the body on `workers` threads besides the caller in chunks of
 * `chunk` events, whatever the trace's size; workers < 0 and chunk 0 restore the
 * defaults (FLAGOS_TRACE_RENDER_THREADS, 1024-event chunks, small traces serial).
 * Returns the workers the last trace written before this call started. */
int ft__render_split(int workers, size_t chunk);
/* True when e lies wholly inside [lo, hi] (strict containment, design.md §3). */
static inline bool ft__in_window(const ft__event *e, uint64_t lo, uint64_t hi) {
  return e->start_ns >= lo && e->end_ns <= hi && e->start_ns <= e->end_ns;
}

/* Injects events into a session as if a tracer had drained them (tests, benches). */
ft_status ft__session_inject(ft_session *s, const ft_device_event *ev);
/* Ranges that are not nested on one thread (NVTX start/end): opened on any thread,
 * closed by id, never attributed through the correlation stack. */
ft_status ft__range_start(ft_session *s, const char *name, uint64_t *id);
ft_status ft__range_end(ft_session *s, uint64_t id);
/* An instant marker (a zero-length range). */
ft_status ft__mark(ft_session *s, const char *name);
/* Nesting depth of the calling thread's ranges of s. */
int ft__range_depth(const ft_session *s);

/* Reports a correlation -> external id pair as a tracer would, and resolves. */
ft_status ft__session_inject_external(ft_session *s, uint32_t corr, uint64_t ext);
/* Lets sessions started while s runs attach to it (record's whole-run session). */
void ft__session_accept_attach(ft_session *s);
/* Another client of the vendor's activity API is taking it over (who: one line
 * naming it): s's tracer relinquishes it; what s recorded so far stays, and its
 * trace and counts say from when device activity is missing. Thread-safe. */
void ft__session_relinquish(ft_session *s, const char *who);
/* session_share.c, for session.c: what record's whole-run session lends an attached
 * one (attach at start, read at stop), the stopped intervals applied at stop (under
 * s->mu), and the first account of lost device activity (from the sink too). */
bool ft__session_attach(ft_session *s, ft_session *parent);
ft_status ft__session_read_parent(ft_session *s);
ft_status ft__session_apply_pauses(ft_session *s);
void ft__session_set_lost(ft_session *s, uint64_t at_ns, const char *why);
/* Serializes what reaches an armed tracer from outside its session's thread: start
 * and stop, an attached session's flush, another client's takeover (relinquish). */
extern pthread_mutex_t ft__tracer_mu;

/* Forces the capture window (tests, benches). */
void ft__session_set_window(ft_session *s, uint64_t lo, uint64_t hi);

#endif
