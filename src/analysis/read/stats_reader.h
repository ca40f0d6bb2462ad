/* The stats reader's parse state (stats_reader.c): the keys it reads, an event being read, a worker's batch. */
#ifndef FLAGTRACE_ANALYSIS_STATS_READER_H
#define FLAGTRACE_ANALYSIS_STATS_READER_H

#include "json_scan.h"
#include "stats_internal.h"

enum key {
  K_OTHER,
  K_PH,
  K_CAT,
  K_NAME,
  K_TS,
  K_DUR,
  K_PID,
  K_TID,
  K_ARGS,
  K_EXT,
  K_BYTES,
  K_CORR,
  K_STREAM,
  K_REGS,
  K_GRID,
  K_BLOCK,
  K_DIMS,
  K_EVENTS,
  K_FLAGTRACE,
  K_DIST, /* top-level blocks */
  K_RANK,
  K_TRACER,
  K_ACTIVITY,
  K_STATUS,
  K_DROPPED,
  K_WINDOW,   /* keys inside them */
  K_DEVPROPS, /* the top-level "deviceProperties" array */
  K_DEVNAME,  /* a device's "name" in it */
  /* a [memory] instant's args (read only when the event may be one: the_mem()) */
  K_M_DEVTYPE,
  K_M_DEVID,
  K_M_ADDR,
  K_M_BYTES,
  K_M_TALLOC,
  K_M_TRES,
  K_M_POOLB,
  K_M_OP,
  K_M_KIND,
  K_META_NAME /* a thread_name / process_name event's args.name */
};

typedef struct reader {
  ft_stats *st;
  ft__json *j; /* its parser: the keep limit of the next value is set from the key */
  int depth;
  int events_depth; /* depth of the traceEvents array; events are maps one deeper */
  int ev_depth, args_depth;
  int meta_depth;     /* depth of the "flagtrace" or "distributedInfo" map */
  int devprops_depth; /* depth of the "deviceProperties" array (its devices are maps one deeper) */
  bool saw_events, top_array;
  enum key key;
  char err[256]; /* a callback's error; the parser names the offending token's offset */
  /* the current event */
  bool is_x, has_cat; /* "ph" is "X"; "cat" was read: cats[cat] */
  unsigned cat;
  /* the latest categories (cut to fit) and their sections: an event's and its
   * flows' ("ac2g") alternate, so one entry would miss half the time */
  struct {
    char s[40];
    size_t len;
    int sec;
  } cats[4];
  unsigned cats_next;
  char *name;
  size_t name_len, name_cap;
  bool has_ts, has_dur, pid_num, has_ext, has_tid, has_corr, has_stream, has_regs;
  bool bad_time;   /* ts or dur given as something other than a number */
  bool time_range; /* ts or dur beyond +-FT_STATS_MAX_US */
  bool bad_bytes;  /* args.bytes given, but not a whole number in [0, 2^63) */
  bool bad_ext;    /* args "External id" given, but not a whole number in +-2^63 */
  bool name_cut;   /* the name was longer than FT_STATS_KEEP */
  int64_t ts, dur, pid, ext, tid, corr, stream, regs;
  uint64_t bytes;
  int32_t grid[3], block[3];
  uint8_t grid_n, block_n; /* elements read (3 for a whole dim3) */
  /* an array value being read (grid, block, Input Dims): its depth and key */
  int arr_depth;
  enum key arr_key;
  bool arr_after; /* Input Dims: a value was written at this level (", " before the next) */
  char *dims;     /* Input Dims as Python prints the list (torch's key for group_by_input_shape) */
  size_t dims_len, dims_cap;
  bool has_dims;
  bool want_args;           /* correlation, stream, grid, block, registers: read only when a report uses them (P5) */
  bool want_modules;        /* python_function events: summarized only for ops_modules, else ignored */
  ft__evcounts cnt;         /* what every event adds: into st at the parse's end */
  struct ft__evbatch *sink; /* a parse worker's: events are kept here, not added to st */
  bool closed;              /* a worker's parse reached the end of the events array */
  /* [memory] instants (issue 51): ph and name as read so far; their args are read only while the event
   * may still be one (an "X" event whose ph comes first costs one test per args key: P5) */
  bool ph_seen, is_inst, name_seen, is_memname;
  bool mem_bad; /* a number field of its args was not a number */
  bool has_mbytes, has_addr;
  ft__ev mem; /* its mem_* fields */
  /* thread_name / process_name events (ph "M"): the row names the report draws */
  bool is_meta, meta_name_seen;
  uint8_t meta_kind; /* 0: not (or not yet known) one; 1: thread_name, 2: process_name */
  char meta_name[128];
} reader;

/* A segment's events as a parse worker read them (stats_internal.h). */
struct ft__evbatch {
  ft__ev *ev;
  size_t n, cap;
  char *text; /* the events' names (and unknown categories), each NUL-terminated */
  size_t len, tcap;
  uint64_t base, stop_at;
  unsigned depth;
  enum { BATCH_NONE, BATCH_BETWEEN, BATCH_STOPPED } end;
  reader r; /* its counts (r.cnt) are the segment's */
  ft__json *j;
};

/* stats_reader_args.c: args that take more than a number (Input Dims, grid and block, a [memory] instant's),
 * the batch a worker keeps events in, and what hands an event over. False: no memory. */
bool ft__rd_room(char **buf, size_t *cap, size_t need, size_t first);
bool ft__rd_batch_add(ft__evbatch *b, ft__ev e, const char *name, const char *cat_s);
bool ft__rd_memory_event(reader *r);
bool ft__rd_dims_put(reader *r, const char *s, size_t n);
bool ft__rd_dims_value(reader *r, const char *s, size_t n);
void ft__rd_arr_spoil(reader *r);
bool ft__rd_arr_number(reader *r, const char *s, size_t n);
void ft__rd_mem_key(reader *r, const unsigned char *k, size_t n);
void ft__rd_mem_string(reader *r, const unsigned char *s, size_t n);
void ft__rd_mem_number(reader *r, const char *s, size_t n);
/* An event to the summary (st) or a worker's batch. */
static inline bool ft__rd_emit(reader *r, ft__ev *e, const char *cat) {
  const char *name = r->name ? r->name : "";
  return r->sink ? ft__rd_batch_add(r->sink, *e, name, cat) : ft__stats_apply(r->st, e, name, cat);
}
/* The event may still be a thread_name / process_name event: ph "M" (or not read yet) and that name (or not read yet).
 */
static inline bool ft__rd_maybe_meta(const reader *r) {
  return (!r->ph_seen || r->is_meta) && (!r->name_seen || r->meta_kind);
}
/* The event may still be a [memory] instant: its ph and name are "i"/"I" and "[memory]", or not read yet. */
static inline bool ft__rd_maybe_mem(const reader *r) {
  return (!r->ph_seen || r->is_inst) && (!r->name_seen || r->is_memname);
}

#endif
