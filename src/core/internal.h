/* Internal declarations shared by the core's files (ft__ prefix, hidden). */
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

/* ---- memory (store.c) ---- */

/* Bump allocator in 64 KiB chunks: events never malloc one by one. */
typedef struct ft__arena_chunk ft__arena_chunk;
typedef struct ft__arena {
  ft__arena_chunk *head;
  size_t bytes; /* total bytes handed out, for accounting */
} ft__arena;

void ft__arena_init(ft__arena *a);
void *ft__arena_alloc(ft__arena *a, size_t size);
void ft__arena_free(ft__arena *a);

/* String interning: equal strings get equal ids; text lives in the arena. */
typedef struct ft__strtab {
  ft__arena arena;
  const char **strs;
  uint32_t *lens;
  uint32_t n, cap;
  uint32_t *table; /* id + 1, 0 = empty */
  uint32_t tcap;   /* power of two */
} ft__strtab;

void ft__intern_init(ft__strtab *in);
void ft__intern_free(ft__strtab *in);
ft_status ft__intern(ft__strtab *in, const char *s, size_t len, uint32_t *id);
static inline const char *ft__intern_str(const ft__strtab *in, uint32_t id) { return in->strs[id]; }
static inline uint32_t ft__intern_len(const ft__strtab *in, uint32_t id) { return in->lens[id]; }

/* A growable array stored in fixed chunks: appending never moves elements and
 * never mallocs per element. */
typedef struct ft__vec {
  char **chunks;
  size_t n_chunks, cap_chunks;
  size_t len;
  size_t elem;
  unsigned shift; /* elements per chunk = 1 << shift */
} ft__vec;

void ft__vec_init(ft__vec *v, size_t elem, unsigned shift);
void ft__vec_free(ft__vec *v);
void *ft__vec_push(ft__vec *v); /* zeroed slot, or NULL on ENOMEM */
static inline void *ft__vec_at(const ft__vec *v, size_t i) {
  return v->chunks[i >> v->shift] + (i & (((size_t)1 << v->shift) - 1)) * v->elem;
}

/* Open-addressing map from uint64 to uint64. */
typedef struct ft__map {
  uint64_t *keys;
  uint64_t *vals;
  uint8_t *used;
  size_t cap, len; /* cap is a power of two */
} ft__map;

ft_status ft__map_init(ft__map *m, size_t expected);
void ft__map_free(ft__map *m);
/* Returns a pointer to the value for key, inserting 0 if absent; NULL on ENOMEM. */
uint64_t *ft__map_upsert(ft__map *m, uint64_t key);
uint64_t *ft__map_find(const ft__map *m, uint64_t key);

/* ---- events (store.c) ---- */

enum {
  FT__EV_KERNEL = FT_EVENT_KERNEL,
  FT__EV_MEMCPY = FT_EVENT_MEMCPY,
  FT__EV_MEMSET = FT_EVENT_MEMSET,
  FT__EV_RUNTIME = FT_EVENT_RUNTIME,
  FT__EV_DRIVER = FT_EVENT_DRIVER,
  FT__EV_CPU_RANGE = 5,
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

typedef struct ft__store {
  ft__strtab names;  /* event names and metadata keys */
  ft__strtab values; /* metadata values (grids, sizes repeat heavily) */
  ft__vec events;    /* ft__event */
  ft__vec kvs;       /* ft__kvid */
  /* identical metadata lists (a kernel's args repeat with the kernel) are stored
   * once: hash of the id list -> first | count << 32 */
  ft__map meta_sets;
} ft__store;

void ft__store_init(ft__store *st);
void ft__store_free(ft__store *st);
ft_status ft__store_add_device(ft__store *st, const ft_device_event *ev);
ft_status ft__store_add_range(ft__store *st, uint32_t name_id, uint64_t start, uint64_t end,
                              uint64_t external_id, uint32_t tid);
static inline bool ft__is_device_kind(unsigned k) {
  return k == FT__EV_KERNEL || k == FT__EV_MEMCPY || k == FT__EV_MEMSET;
}
/* Host-side API calls: they launch device work and carry the thread id. */
static inline bool ft__is_api_kind(unsigned k) { return k == FT__EV_RUNTIME || k == FT__EV_DRIVER; }

/* ---- the output file (trace_file.c) ---- */

/* A trace's destination. A regular file or a new name is written under a
 * temporary name beside it and renamed over it at commit (readers never see half
 * a trace); a FIFO or character device is written through in place; a symlink is
 * followed (its target written, the link kept; a dangling one is refused);
 * directories, block devices and sockets are refused. */
typedef struct ft__trace_file {
  int fd;
  char *target; /* what the temporary file is renamed to (the symlink resolved) */
  char *tmp;    /* NULL when writing through */
  bool fifo;    /* SIGPIPE is held off while writing */
} ft__trace_file;

/* Opens path's destination; on failure nothing is left behind and err says why. */
ft_status ft__trace_file_open(ft__trace_file *f, const char *path, char *err, size_t errlen);
/* Writes all of p; 0 or the errno of the failure (EPIPE, never SIGPIPE). */
int ft__trace_file_write(ft__trace_file *f, const void *p, size_t n);
/* Closes, and renames the temporary file into place; path names it in errors. */
ft_status ft__trace_file_commit(ft__trace_file *f, const char *path, char *err, size_t errlen);
/* Closes and removes the temporary file, if any; frees. Safe after commit. */
void ft__trace_file_discard(ft__trace_file *f);

/* ---- JSON output (json.c) ---- */

typedef struct ft__out ft__out;
/* Opens a writer on path (gzip when it ends in ".gz"), writing to a temporary file
 * in the same directory. errbuf receives a message on failure. */
ft_status ft__out_open(ft__out **out, const char *path, char *errbuf, size_t errlen);
/* Opens a writer into a caller-owned memory buffer (tests, fuzzing, benches). */
ft_status ft__out_open_mem(ft__out **out, bool gzip);
/* Opens a writer that only counts bytes (benchmarks: the writer's own cost). */
ft_status ft__out_open_null(ft__out **out, bool gzip);
/* Flushes, renames the temporary file into place, frees. On any earlier error the
 * temporary file is removed and the error returned. */
ft_status ft__out_close(ft__out *o, char *errbuf, size_t errlen);
/* Discards a writer (removes the temporary file). */
void ft__out_abort(ft__out *o);
/* For memory writers: the bytes written so far (not NUL-terminated), valid until
 * close/abort; finishes a gzip stream. Null writers return NULL and the count. */
const char *ft__out_mem(ft__out *o, size_t *len);

/* The buffer at the start of every ft__out, so small writes inline to a memcpy. */
typedef struct ft__out_head {
  char *buf;
  size_t used, cap;
} ft__out_head;
void ft__out_write_slow(ft__out *o, const char *s, size_t n);
static inline void ft__out_write(ft__out *o, const char *s, size_t n) {
  ft__out_head *h = (ft__out_head *)o;
  if (n <= h->cap - h->used) {
    memcpy(h->buf + h->used, s, n);
    h->used += n;
  } else {
    ft__out_write_slow(o, s, n);
  }
}
void ft__out_str(ft__out *o, const char *s); /* raw, no escaping */
/* A string literal, its length known at compile time. */
#define FT__OUT_LIT(o, lit) ft__out_write((o), "" lit, sizeof(lit) - 1)
void ft__out_u64(ft__out *o, uint64_t v);
void ft__out_i64(ft__out *o, int64_t v);
/* ns as microseconds with exactly three decimals. */
void ft__out_us3(ft__out *o, uint64_t ns);
/* s as a JSON string literal (with quotes), fully escaped; invalid UTF-8 bytes
 * become U+FFFD so the output is always valid JSON. */
void ft__out_json_string(ft__out *o, const char *s, size_t n);
/* The one escaping function: writes s as a quoted JSON string into dst, which must
 * hold 6 * n + 2 bytes; returns the bytes written. */
size_t ft__json_escape(char *dst, const char *s, size_t n);
/* A metadata value: raw if ft__json_is_literal, else a JSON string. */
void ft__out_json_value(ft__out *o, const char *s, size_t n);

/* True when s is provably a JSON literal: a number per RFC 8259, true, false, null,
 * or "[" number ("," number)* "]" with optional spaces. */
bool ft__json_is_literal(const char *s, size_t n);


/* ---- sessions (session.c) and export (trace_writer.c) ---- */

enum { FT__S_CREATED, FT__S_RUNNING, FT__S_STOPPED };

struct ft_session {
  pthread_mutex_t mu;
  int state;
  atomic_bool running;  /* state == RUNNING, for the lock-free correlation push */
  uint64_t gen;         /* unique per session in the process: thread-local range
                         * frames, correlation pushes and error texts carry it, so
                         * a later session at the same address never takes them */
  ft_tracer *tracer;
  atomic_bool tracer_armed; /* read without the lock by ft_correlation_push */
  ft_status device_status;
  char device_why[256];
  ft__store store;
  ft_event_sink sink;
  /* (vendor correlation id, external id) pairs as reported, sorted and applied at
   * stop: 16 B per pair, where a hash map cost 34-68 B (P6, bench/). */
  struct ft__corr_ext *corr_ext;
  size_t n_corr_ext, cap_corr_ext;
  bool corr_ext_sorted;
  ft__map open_ranges; /* start/end ranges: id -> index into open_vec */
  ft__vec open_vec;    /* struct open_range */
  uint64_t window_lo_ns, window_hi_ns; /* the capture window (design.md §3) */
  uint64_t next_external_id;
  uint64_t dropped;
  int rank, world_size;
  uint64_t serial; /* unique per process: a freed session's address can come back */
  /* deviceProperties: per device, its entries in store.kvs (read at stop) */
  struct ft__devprop {
    uint32_t first, count;
  } *devprops;
  int n_devprops;
  unsigned activities;
  char process_name[128];
  uint32_t pid;
};

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
/* Forces the capture window (tests, benches). */
void ft__session_set_window(ft_session *s, uint64_t lo, uint64_t hi);

#endif
