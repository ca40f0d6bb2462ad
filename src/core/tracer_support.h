/* The few core services a tracer file may use (diagnostics, clock, number text). */
#ifndef FLAGTRACE_TRACER_SUPPORT_H
#define FLAGTRACE_TRACER_SUPPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flagtrace/device_tracer.h"

#if defined(__GNUC__)
#define FT__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FT__PRINTF(a, b)
#endif

/* Diagnostics on stderr, one line each: ft__log only when FLAGOS_TRACE is on;
 * ft__warn always (the two severe conditions of design.md §8, and lost data). */
void ft__log(const char *fmt, ...) FT__PRINTF(1, 2);
void ft__warn(const char *fmt, ...) FT__PRINTF(1, 2);

/* A tracer file names itself once, defining FT__TRACER_NAME before including this
 * header (uftrace's PR_FMT idea); FT__LOG and FT__WARN then prefix every line with
 * it, so shared code paths say which tracer speaks (mcpti, not cupti, on MetaX).
 * The format must be a string literal. */
#ifdef FT__TRACER_NAME
#define FT__LOG(...) ft__log(FT__TRACER_NAME ": " __VA_ARGS__)
#define FT__WARN(...) ft__warn(FT__TRACER_NAME ": " __VA_ARGS__)
#endif

/* ---- what every tracer holds (as curl's ssl_connect_data holds what every TLS
 * backend shares): the framework owns it, a tracer file embeds it first and keeps
 * only arming and decoding (tracer_base.c). ---- */
typedef struct ft__tracer_base {
  ft_tracer tracer;             /* the ops table: first, so the tracer casts back */
  bool loaded;                  /* the vendor library is bound */
  bool armed;                   /* between a successful start and stop */
  unsigned kinds;               /* the FT_KIND_BIT set armed */
  const ft_event_sink *sink;    /* valid while armed */
  atomic_uint_fast64_t dropped; /* records lost since start: the vendor's count and ours */
  char path[4096];              /* the library bound */
  char why[512];                /* why the tracer is unavailable, one line */
  char err[512];                /* the last vendor error text */
} ft__tracer_base;

/* Vendor activity APIs are process-wide, so one tracer is armed at a time.
 * ft__tracer_claim: FT_EUNAVAILABLE when the library is not bound, FT_EBUSY (err
 * set) when another instance is armed; else b is the armed one, with sink and kinds
 * recorded and dropped zeroed. ft__tracer_release undoes it (a failed start, or
 * stop): not armed, and ft__tracer_active() is NULL again. */
ft_status ft__tracer_claim(ft__tracer_base *b, const ft_event_sink *sink, unsigned kinds);
void ft__tracer_release(ft__tracer_base *b);
/* The armed tracer, for vendor callbacks that carry no context of ours. */
ft__tracer_base *ft__tracer_active(void);

/* ft_tracer_ops slots every tracer fills the same way: available (loaded, else why),
 * dropped_records (dropped), last_error (err). */
bool ft__tracer_available(const ft_tracer *t, const char **why);
uint64_t ft__tracer_dropped(const ft_tracer *t);
const char *ft__tracer_last_error(const ft_tracer *t);

/* Hands ev with its metadata to the sink, and reports corr -> external id; what
 * is lost for memory is warned about under the tracer's name. */
void ft__tracer_emit(ft__tracer_base *b, ft_device_event *ev, const ft_kv *md, size_t n);
void ft__tracer_external(ft__tracer_base *b, uint32_t corr, uint64_t external_id);
/* Reports a call left out of the rows, for attribution by time (sink->call_span). */
void ft__tracer_call_span(ft__tracer_base *b, uint32_t corr, uint32_t tid, uint64_t start_ns, uint64_t end_ns);

/* The vendors' buffer-request callback (CUPTI's shape): a buffer from the pool, no
 * record limit. */
void ft__buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);

/* A boolean environment switch (1/true/on/yes, 0/false/off/no); unset or empty is
 * false, anything else warns once per call and reads as false. */
bool ft__env_flag(const char *name);

/* CLOCK_REALTIME in ns: the clock every event uses (design.md §4). */
uint64_t ft__now_ns(void);

/* The shortest text that reads back as the same double, laid out as kineto's
 * fmt "{}" prints it (fixed for exponents -4..15, else d.ddde±XX; 8e-05, 19.69..,
 * 100). buf needs 32 bytes; returns the length written (not NUL-terminated). */
size_t ft__fmt_double(double v, char *buf);

/* Vendor API records that carry pthread_self()'s low 32 bits where the trace needs
 * the OS thread id (CUPTI measured; TOPSPTI by default): ft__thread_register records
 * the calling thread's pair once (cheap after the first call); ft__thread_os_tid
 * translates, returning vendor_tid itself for a thread never registered. */
void ft__thread_register(void);
uint32_t ft__thread_os_tid(uint32_t vendor_tid);

/* The activity-buffer pool (buffer_pool.c), process-wide like the vendors' own
 * activity APIs. ft__pool_reserve makes n buffers of buffer_size bytes ready
 * (called at session start, so launching threads never allocate); it returns 1,
 * 0 when out of memory, or -1 when buffers of the old size are still lent and the
 * size could not change. ft__pool_get never returns NULL unless memory is
 * exhausted: it grows the pool instead. */
int ft__pool_reserve(size_t n, size_t buffer_size);
uint8_t *ft__pool_get(size_t *buffer_size);
void ft__pool_put(uint8_t *buffer);
size_t ft__pool_buffer_size(void);
/* Buffers lent now (pool and first buffers). */
size_t ft__pool_lent(void);
/* The most buffers lent at once since the last ft__pool_reserve. */
size_t ft__pool_max_lent(void);
/* A start's first n requests (at most FT__POOL_MAX_FIRST) get buffers of
 * buffer_size bytes, when larger than the pool's: a profile whose records fit in
 * them completes no buffer inside its region. They stay home between starts until a
 * start asks for more buffers than n, and then go back to the system as they come
 * home, so a long capture's memory is that of the pool's size. n = 0: none. Called
 * at each start, after ft__pool_reserve. */
enum { FT__POOL_MAX_FIRST = 8 };
void ft__pool_first(size_t n, size_t buffer_size);
/* The first buffers there are, home and lent, and whether this start outgrew them. */
void ft__pool_first_count(size_t *home, size_t *lent, bool *outgrown);

/* Completed activity buffers held until stop, for tracers that can decode only then
 * (the second clock sample, name lookups after the last flush). Not locked: the
 * caller serializes. ft__held_add returns false when out of memory (the buffer is
 * then still the caller's); ft__held_take_all hands each held buffer to decode and
 * back to the pool, in arrival order; ft__held_free returns any left and frees. */
typedef struct ft__held {
  struct ft__held_buf {
    uint8_t *buf;
    size_t valid;
  } * items;
  size_t n, cap;
} ft__held;
bool ft__held_add(ft__held *h, uint8_t *buf, size_t valid);
/* A completed buffer as the vendor hands it over: held under mu, or (empty, or out
 * of memory: warned under who's name) back to the pool at once. */
void ft__held_keep(ft__held *h, pthread_mutex_t *mu, uint8_t *buf, size_t valid, const char *who);
size_t ft__held_take_all(ft__held *h, void (*decode)(void *ctx, uint8_t *buf, size_t valid), void *ctx);
void ft__held_free(ft__held *h);

/* A vendor clock mapped onto CLOCK_REALTIME: (v0, r0) sampled at session start,
 * (v1, r1) at stop; the mapping is affine between them (offset only if v1 == v0). */
typedef struct ft__clock_map {
  uint64_t v0, r0, v1, r1;
} ft__clock_map;
uint64_t ft__clock_map_apply(const ft__clock_map *m, uint64_t vendor_ns);
/* Maps [start, end]; 0 for timestamps no real record has (zero, reversed, or
 * further than 10 s outside the session). */
int ft__clock_map_span(const ft__clock_map *m, uint64_t start, uint64_t end, uint64_t *s, uint64_t *e);
/* One (vendor, CLOCK_REALTIME) sample pair for the map: read returns true with the
 * vendor's time in *v. False when the vendor clock cannot be read. */
typedef bool (*ft__vendor_clock_fn)(void *ctx, uint64_t *v);
bool ft__clock_sample(ft__vendor_clock_fn read, void *ctx, uint64_t *v, uint64_t *r);

/* Tracers that hold buffers until stop and read them with the vendor's own record
 * iterator (MUPTI, TOPSPTI): how to read and decode one record. */
typedef struct ft__stop_decoder {
  const char *who; /* the tracer's name, for diagnostics */
  /* the vendor's iterator: returns its result; *rec is its position (NULL: first) */
  int (*next)(void *ctx, uint8_t *buf, size_t valid, const void **rec);
  int success, end; /* next's results for "a record" and "end of buffer" */
  /* false when the record's timestamps are implausible: it was dropped */
  bool (*decode)(void *ctx, const void *rec);
  void *ctx; /* also read's ctx */
} ft__stop_decoder;
/* At stop, after the final flush: closes clock with a stop sample (offset only,
 * warned with read_err, when there is none), decodes every held buffer, and returns
 * how many records were dropped for implausible timestamps (warned). */
uint64_t ft__decode_at_stop(ft__held *held, ft__clock_map *clock, ft__vendor_clock_fn read, const char *read_err,
                            const ft__stop_decoder *d);

/* A copy or set as CUPTI-shaped records (MUPTI, TOPSPTI) describe it, in vendor
 * time. ft__emit_transfer maps it through clock and emits it (ft__tracer_emit) as
 * "Memcpy" or "Memset" with the metadata context, bytes and extra_key; false when its
 * times are implausible (nothing emitted). */
typedef struct ft__transfer {
  ft_event_kind kind; /* FT_EVENT_MEMCPY or FT_EVENT_MEMSET */
  uint64_t start, end;
  uint32_t correlation_id, device, context, stream;
  uint64_t bytes;
  const char *extra_key; /* "copy kind", "value" */
  uint64_t extra;
} ft__transfer;
bool ft__emit_transfer(ft__tracer_base *b, const ft__clock_map *clock, const ft__transfer *x);

/* Binds a tracer's vendor library. FLAGOS_TRACER_LIBRARY, when set, is the only
 * file tried (honoured or reported, never replaced); else each non-empty
 * candidate in turn. load resolves the symbols from a handle into api (0 with the
 * reason in why). On success path holds the file bound; on failure why reads
 * "<not_found>: <every attempt's reason>". */
typedef int (*ft__load_symbols_fn)(void *api, void *handle, char *why, size_t why_len);
bool ft__open_vendor_library(const char *const *candidates, size_t n, const char *not_found, ft__load_symbols_fn load,
                             void *api, char *path, size_t path_len, char *why, size_t why_len);
/* The path of the library file `name` in the directory of the library holding this
 * code (libflagtrace.so or the injection library): false when that is not known. */
bool ft__path_beside_us(const char *name, char *out, size_t cap);
/* The same into b (loaded, path, why), logging the outcome under the tracer's name. */
bool ft__tracer_open(ft__tracer_base *b, const char *const *candidates, size_t n, const char *not_found,
                     ft__load_symbols_fn load, void *api);

/* The body of a shim loader's X-macro step (used where api, handle, why and
 * why_len are in scope): resolves name into api->name; a required symbol that is
 * missing makes the loader return 0, naming it in why. */
#define FT__SHIM_RESOLVE(name, required) FT__SHIM_RESOLVE_AS(name, #name, required)
/* The same, for a library that exports the function under another name (MetaX's
 * mcpti* for CUPTI's cupti*). */
#define FT__SHIM_RESOLVE_AS(name, symbol, required)                                             \
  dlerror();                                                                                    \
  api->name = (ft__pfn_##name)dlsym(handle, symbol);                                            \
  if (!api->name && (required)) {                                                               \
    const char *dl_err_ = dlerror();                                                            \
    snprintf(why, why_len, "symbol %s missing: %s", symbol, dl_err_ ? dl_err_ : "NULL symbol"); \
    return 0;                                                                                   \
  }

/* The demangled form of a mangled C++ name ("_Z..."), malloc'd (the caller frees),
 * or NULL when name is not mangled or cannot be demangled (keep the raw name).
 * libstdc++'s __cxa_demangle is looked up at first use, so the library never
 * needs libstdc++ (demangle.c). Thread-safe. */
char *ft__demangle(const char *name);

#endif
