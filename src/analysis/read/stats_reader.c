/* Streaming Chrome-trace reader for `flagtrace stats` (json_scan.c's callbacks, bounded memory). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stats_reader.h"
#include "trace_numbers.h"

/* A streaming parser of our own (json_scan.c): yajl's lexer and parser were 68 %
 * of a read (docs/measurements.md, P5); json-c and jansson build whole documents
 * in memory, which multi-GB traces cannot afford. */

/* The cache entry of a category (cut to 39 bytes, up to a NUL as a C string):
 * categories repeat, so the latest are compared first, without a copy. */
static unsigned cat_entry(reader *r, const unsigned char *s, size_t n) {
  size_t m = n < sizeof r->cats[0].s - 1 ? n : sizeof r->cats[0].s - 1;
  for (unsigned i = 0; i < 4; i++) /* a match has no NUL in it: no entry has */
    if (r->cats[i].len == m && r->cats[i].sec >= 0 && !memcmp(s, r->cats[i].s, m)) return i;
  unsigned i = r->cats_next++ % 4;
  m = strnlen((const char *)s, m);
  memcpy(r->cats[i].s, s, m);
  r->cats[i].s[m] = '\0';
  r->cats[i].len = m;
  r->cats[i].sec = (int)ft__stats_section_of(r->cats[i].s);
  return i;
}

/* A thread's or a process's name (ph "M"): to the event model, which names the report's rows with it. */
static bool meta_event(reader *r) {
  ft__ev e;
  memset(&e, 0, sizeof e);
  e.sec = FT__SEC_META;
  e.dev = r->pid_num ? r->pid : -1;
  e.has_tid = r->has_tid && r->meta_kind == 1;
  e.tid = e.has_tid ? r->tid : -1;
  e.bytes = r->meta_kind == 2;
  e.name_len = (uint32_t)strlen(r->meta_name);
  return r->sink ? ft__rd_batch_add(r->sink, e, r->meta_name, "") : ft__stats_apply(r->st, &e, r->meta_name, "");
}

/* The event just read: counted, then added to st (or kept in a worker's batch). */
static bool process_event(reader *r) {
  ft__evcounts *c = &r->cnt;
  c->events++;
  if (!r->is_x && r->is_meta && r->meta_kind && r->meta_name_seen) return meta_event(r);
  if (!r->is_x) return r->is_inst && r->is_memname ? ft__rd_memory_event(r) : true;
  if (r->time_range) {
    c->time_range++;
    return true;
  }
  if (r->bad_time || !r->has_ts) {
    c->bad_time++;
    return true;
  }
  if (!r->has_dur || r->dur < 0) { /* not a 0 us call: the event says nothing true about its length */
    ++*(r->has_dur ? &c->neg_dur : &c->no_dur);
    return true;
  }
  unsigned cat = r->has_cat ? r->cat : cat_entry(r, (const unsigned char *)"", 0);
  int sec = r->cats[cat].sec;
  if (sec == FT__SEC_PYFUNC && !r->want_modules) sec = FT__SEC_IGNORED;
  if (r->bad_bytes && (sec == FT__SEC_MEMCPY || sec == FT__SEC_MEMSET)) { /* its size is unknown, not 0 */
    c->bad_bytes++;
    return true;
  }
  if (r->bad_ext && sec != FT__SEC_IGNORED && sec != FT__SEC_UNKNOWN) { /* its op is unknown, not "(no op)" */
    c->bad_ext++;
    return true;
  }
  int64_t dur = r->dur; /* both within +-4e18: the sum fits */
  if (c->first_ns > r->ts) c->first_ns = r->ts;
  if (c->last_ns < r->ts + dur) c->last_ns = r->ts + dur;
  if (sec == FT__SEC_IGNORED) return true;
  c->cut_strings += r->name_cut && sec != FT__SEC_UNKNOWN; /* names of the events summarized */
  ft__ev e = {.ts = r->ts,
              .dur = dur,
              .dev = r->pid_num ? r->pid : -1,
              .ext = r->ext,
              .bytes = r->bytes,
              .name_len = (uint32_t)r->name_len,
              .sec = (uint8_t)r->cats[cat].sec,
              .has_ext = r->has_ext,
              .name_cut = r->name_cut};
  e.tid = r->tid;
  e.corr = r->corr;
  e.stream = r->stream;
  if (!r->want_args) r->has_corr = r->has_stream = false; /* read for a [memory] instant's sake (ph after args) */
  e.regs = r->regs;
  memcpy(e.grid, r->grid, sizeof e.grid);
  memcpy(e.block, r->block, sizeof e.block);
  e.has_tid = r->has_tid;
  e.has_corr = r->has_corr;
  e.has_stream = r->has_stream;
  e.has_regs = r->has_regs;
  e.has_grid = r->grid_n == 3;
  e.has_block = r->block_n == 3;
  e.has_dims = r->has_dims;
  e.dims = r->has_dims ? r->dims : NULL;
  e.dims_len = r->has_dims ? (uint32_t)r->dims_len : 0;
  return ft__rd_emit(r, &e, r->cats[cat].s);
}

static void counts_add(ft__evcounts *to, const ft__evcounts *c) {
  to->events += c->events;
  to->bad_time += c->bad_time;
  to->time_range += c->time_range;
  to->no_dur += c->no_dur;
  to->neg_dur += c->neg_dur;
  to->bad_bytes += c->bad_bytes;
  to->bad_ext += c->bad_ext;
  to->cut_strings += c->cut_strings;
  to->mem_bad += c->mem_bad;
  if (to->first_ns > c->first_ns) to->first_ns = c->first_ns;
  if (to->last_ns < c->last_ns) to->last_ns = c->last_ns;
}

static const ft__evcounts COUNTS0 = {0, 0, 0, 0, 0, 0, 0, 0, INT64_MAX, INT64_MIN, 0};

/* ts or dur (or a copy's bytes) given as a string, null, list...: the event is
 * skipped and counted. */
static void non_number(reader *r) {
  if (r->ev_depth && r->depth == r->ev_depth && (r->key == K_TS || r->key == K_DUR)) r->bad_time = true;
  else if (r->args_depth && r->depth == r->args_depth && r->key == K_BYTES) r->bad_bytes = true;
  else if (r->args_depth && r->depth == r->args_depth && r->key == K_EXT) r->bad_ext = true;
  else if (r->args_depth && r->depth == r->args_depth && r->key >= K_M_DEVTYPE && r->key <= K_M_POOLB)
    r->mem_bad = true;
}

static int cb_start_map(void *ctx) {
  reader *r = ctx;
  non_number(r);
  if (r->arr_depth) { /* a map in grid, block or Input Dims: not one we read */
    if (r->arr_key == K_DIMS) r->has_dims = false, r->arr_key = K_OTHER;
    else ft__rd_arr_spoil(r);
  }
  r->depth++;
  if (r->depth == 2 && (r->key == K_FLAGTRACE || r->key == K_DIST)) {
    r->meta_depth = 2;
    if (r->key == K_FLAGTRACE) r->st->meta.has_flagtrace = true;
  }
  if (r->events_depth && r->depth == r->events_depth + 1) {
    r->ev_depth = r->depth;
    r->is_x = r->has_cat = false;
    r->name_len = 0;
    if (r->name) r->name[0] = '\0';
    r->has_ts = r->has_dur = r->pid_num = r->has_ext = r->bad_time = r->time_range = r->bad_bytes = r->bad_ext =
        r->name_cut = false;
    r->has_tid = r->has_corr = r->has_stream = r->has_regs = r->has_dims = false;
    r->grid_n = r->block_n = 0;
    r->bytes = 0;
    r->ph_seen = r->is_inst = r->name_seen = r->is_memname = r->mem_bad = r->has_mbytes = r->has_addr = false;
    r->is_meta = r->meta_name_seen = false;
    r->meta_kind = 0;
    r->mem.mem_total_alloc = r->mem.mem_total_res = -1;
    r->mem.mem_device = -1;
    r->mem.mem_device_type = -1;
    r->mem.mem_pool_bytes = 0;
    r->mem.mem_op = FT__MOP_NONE;
    r->mem.mem_kind = FT__MKIND_NONE;
  } else if (r->ev_depth && r->depth == r->ev_depth + 1 && r->key == K_ARGS) {
    r->args_depth = r->depth;
  }
  r->key = K_OTHER;
  return 1;
}

static int cb_end_map(void *ctx) {
  reader *r = ctx;
  r->j->keep = 0; /* what follows in an array has no key: see cb_key */
  if (r->ev_depth && r->depth == r->ev_depth) {
    r->ev_depth = 0;
    if (!process_event(r)) {
      snprintf(r->err, sizeof r->err, "out of memory");
      return 0;
    }
  } else if (r->depth == r->args_depth) {
    r->args_depth = 0;
  } else if (r->depth == r->meta_depth) {
    r->meta_depth = 0;
  }
  r->depth--;
  r->key = K_OTHER;
  return 1;
}

static int cb_start_array(void *ctx) {
  reader *r = ctx;
  r->j->keep = 0; /* its elements have no key: none is kept */
  non_number(r);
  r->depth++;
  if (r->args_depth && r->depth == r->args_depth + 1 && (r->key == K_GRID || r->key == K_BLOCK || r->key == K_DIMS)) {
    r->arr_depth = r->depth; /* its elements are read: numbers are short */
    r->arr_key = r->key;
    r->arr_after = false;
    r->dims_len = 0;
    r->j->keep = 64;
    if (r->key == K_DIMS && !ft__rd_dims_put(r, "[", 1)) return 0;
    if (r->key != K_DIMS) *(r->key == K_GRID ? &r->grid_n : &r->block_n) = 0;
  } else if (r->arr_depth) {
    r->j->keep = 64;
    if (r->arr_key == K_DIMS) {
      if ((r->arr_after && !ft__rd_dims_put(r, ", ", 2)) || !ft__rd_dims_put(r, "[", 1)) return 0;
      r->arr_after = false;
    } else if (r->arr_key != K_OTHER) ft__rd_arr_spoil(r);
  }
  if (r->depth == 1) { /* the JSON Array Format: a bare list of events */
    r->top_array = true;
    r->saw_events = true;
    r->events_depth = 1;
  } else if (r->depth == 2 && r->key == K_EVENTS) {
    r->saw_events = true;
    r->events_depth = 2;
  } else if (r->depth == 2 && r->key == K_DEVPROPS) {
    r->devprops_depth = 2;
  }
  r->key = K_OTHER;
  return 1;
}

static int cb_end_array(void *ctx) {
  reader *r = ctx;
  if (r->depth == r->events_depth && r->sink) { /* a worker reads events only: the rest is the reader's */
    r->closed = true;
    return 0;
  }
  if (r->depth == r->events_depth) r->events_depth = 0;
  if (r->depth == r->devprops_depth) r->devprops_depth = 0;
  if (r->arr_depth && r->depth >= r->arr_depth) {
    if (r->arr_key == K_DIMS) {
      if (!ft__rd_dims_put(r, "]", 1)) return 0;
      r->arr_after = true;
    }
    if (r->depth == r->arr_depth) {
      r->has_dims = r->arr_key == K_DIMS;
      r->arr_depth = 0;
    }
  }
  r->depth--;
  r->key = K_OTHER;
  return 1;
}

static int cb_key(void *ctx, const unsigned char *k, size_t n) {
  reader *r = ctx;
  r->key = K_OTHER;
#define IS(lit) (n == sizeof(lit) - 1 && !memcmp(k, lit, n))
  if (r->depth == 1 && !r->top_array) {
    if (IS("traceEvents")) {
      if (r->saw_events) { /* summing both would double the totals: refused */
        snprintf(r->err, sizeof r->err, "duplicate \"traceEvents\" key");
        return 0;
      }
      r->key = K_EVENTS;
    } else if (IS("flagtrace")) {
      r->key = K_FLAGTRACE;
    } else if (IS("distributedInfo")) {
      r->key = K_DIST;
    } else if (IS("deviceProperties")) {
      r->key = K_DEVPROPS;
    }
  } else if (r->devprops_depth && r->depth == r->devprops_depth + 1) {
    if (IS("name")) r->key = K_DEVNAME;
  } else if (r->meta_depth && r->depth == r->meta_depth) {
    if (IS("rank")) r->key = K_RANK;
    else if (IS("tracer")) r->key = K_TRACER;
    else if (IS("device_activity")) r->key = K_ACTIVITY;
    else if (IS("device_status")) r->key = K_STATUS;
    else if (IS("dropped_records")) r->key = K_DROPPED;
    else if (IS("window_discarded")) r->key = K_WINDOW;
  } else if (r->ev_depth && r->depth == r->ev_depth) { /* every event's keys: by length first */
    switch (n) {
    case 2: r->key = IS("ph") ? K_PH : IS("ts") ? K_TS : K_OTHER; break;
    case 3: r->key = IS("cat") ? K_CAT : IS("dur") ? K_DUR : IS("pid") ? K_PID : IS("tid") ? K_TID : K_OTHER; break;
    case 4: r->key = IS("name") ? K_NAME : IS("args") ? K_ARGS : K_OTHER; break;
    default: break;
    }
  } else if (r->args_depth && r->depth == r->args_depth && n == 4 && IS("name") && ft__rd_maybe_meta(r)) {
    r->key = K_META_NAME;
  } else if (r->args_depth && r->depth == r->args_depth && ft__rd_maybe_mem(r)) {
    ft__rd_mem_key(r, k, n);
  } else if (r->args_depth && r->depth == r->args_depth) {
    switch (n) { /* by length first: a kernel has a dozen args (perf: P5) */
    case 11:
      if (IS("External id") || IS("external id")) r->key = K_EXT; /* the second: older kineto */
      else if (r->want_args && IS("correlation")) r->key = K_CORR;
      break;
    case 5: r->key = IS("bytes") ? K_BYTES : r->want_args && IS("block") ? K_BLOCK : K_OTHER; break;
    case 10: r->key = IS("Input Dims") ? K_DIMS : K_OTHER; break;
    case 6: r->key = r->want_args && IS("stream") ? K_STREAM : K_OTHER; break;
    case 4: r->key = r->want_args && IS("grid") ? K_GRID : K_OTHER; break;
    case 20: r->key = r->want_args && IS("registers per thread") ? K_REGS : K_OTHER; break;
    default: break;
    }
  }
#undef IS
  /* a value read as a string or number is kept (cut to FT_STATS_KEEP); any other
   * is scanned, never held. Only a key makes keep nonzero; the next token after
   * its value is another key or the map's end, which resets it, and an array
   * (whose elements have no key) resets it at its start. */
  static const size_t keep_of[] = {[K_PH] = FT_STATS_KEEP,
                                   [K_CAT] = FT_STATS_KEEP,
                                   [K_NAME] = FT_STATS_KEEP,
                                   [K_TS] = FT_STATS_KEEP,
                                   [K_DUR] = FT_STATS_KEEP,
                                   [K_PID] = FT_STATS_KEEP,
                                   [K_EXT] = FT_STATS_KEEP,
                                   [K_BYTES] = FT_STATS_KEEP,
                                   [K_RANK] = FT_STATS_KEEP,
                                   [K_TRACER] = FT_STATS_KEEP,
                                   [K_STATUS] = FT_STATS_KEEP,
                                   [K_DROPPED] = FT_STATS_KEEP,
                                   [K_WINDOW] = FT_STATS_KEEP,
                                   [K_TID] = FT_STATS_KEEP,
                                   [K_CORR] = FT_STATS_KEEP,
                                   [K_STREAM] = FT_STATS_KEEP,
                                   [K_REGS] = FT_STATS_KEEP,
                                   [K_EVENTS] = 0,
                                   [K_DEVNAME] = FT_STATS_KEEP,
                                   [K_DEVPROPS] = 0,
                                   [K_M_DEVTYPE] = 64,
                                   [K_M_DEVID] = 64,
                                   [K_M_ADDR] = 64,
                                   [K_M_BYTES] = 64,
                                   [K_M_TALLOC] = 64,
                                   [K_M_TRES] = 64,
                                   [K_M_POOLB] = 64,
                                   [K_M_OP] = 64,
                                   [K_M_KIND] = 64,
                                   [K_META_NAME] = sizeof r->meta_name};
  r->j->keep = keep_of[r->key];
  return 1;
}

static int bad_events(reader *r) {
  snprintf(r->err, sizeof r->err, "\"traceEvents\" is not an array");
  return 0;
}

/* s[0, n) into dst, cut to fit, NUL-terminated. */
static void copy_cut(char *dst, size_t cap, const unsigned char *s, size_t n) {
  size_t m = n < cap - 1 ? n : cap - 1;
  memcpy(dst, s, m);
  dst[m] = '\0';
}

static int cb_string(void *ctx, const unsigned char *s, size_t n) {
  reader *r = ctx;
  if (r->key == K_EVENTS) return bad_events(r);
  non_number(r);
  if (r->arr_depth) {
    if (r->arr_key == K_DIMS) { /* not a shape: kept as Python shows a str */
      if (!ft__rd_dims_value(r, "'", 1) || !ft__rd_dims_put(r, (const char *)s, n) || !ft__rd_dims_put(r, "'", 1))
        return 0;
    } else if (r->arr_key != K_OTHER) ft__rd_arr_spoil(r);
  } else if (r->key == K_DEVNAME && r->st && !r->st->device_name[0]) { /* the first device's: a rank's GPU */
    copy_cut(r->st->device_name, sizeof r->st->device_name, s, n);
  } else if (r->meta_depth && r->depth == r->meta_depth && (r->key == K_TRACER || r->key == K_STATUS)) {
    if (r->key == K_TRACER) copy_cut(r->st->meta.tracer, sizeof r->st->meta.tracer, s, n);
    else copy_cut(r->st->meta.device_status, sizeof r->st->meta.device_status, s, n);
  } else if (r->ev_depth && r->depth == r->ev_depth) {
    if (r->key == K_TID) { /* a thread named by a string: its hash, apart from numbered ones */
      uint64_t h = 1469598103934665603ull;
      for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
      r->tid = (int64_t)(h | 1ull << 63);
      r->has_tid = true;
    } else if (r->key == K_PH) {
      r->is_x = n == 1 && s[0] == 'X';
      r->ph_seen = true;
      r->is_inst = n == 1 && (s[0] == 'i' || s[0] == 'I');
      r->is_meta = n == 1 && s[0] == 'M';
    } else if (r->key == K_CAT) {
      r->cat = cat_entry(r, s, n);
      r->has_cat = true;
    } else if (r->key == K_NAME) {
      if (!ft__rd_room(&r->name, &r->name_cap, n + 1, 64)) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return 0;
      }
      memcpy(r->name, s, n);
      r->name[n] = '\0';
      r->name_len = n;
      r->name_cut = r->j->cut != 0;
      r->name_seen = true;
      r->is_memname = n == 8 && !memcmp(s, "[memory]", 8);
      r->meta_kind = n == 11 && !memcmp(s, "thread_name", 11) ? 1 : n == 12 && !memcmp(s, "process_name", 12) ? 2 : 0;
    }
  } else if (r->args_depth && r->depth == r->args_depth && r->key == K_META_NAME) {
    copy_cut(r->meta_name, sizeof r->meta_name, s, n);
    r->meta_name_seen = true;
  } else if (r->args_depth && r->depth == r->args_depth && (r->key == K_M_OP || r->key == K_M_KIND)) {
    ft__rd_mem_string(r, s, n);
  }
  r->key = K_OTHER;
  return 1;
}

static int cb_number(void *ctx, const char *s, size_t n) {
  reader *r = ctx;
  if (r->key == K_EVENTS) return bad_events(r);
  if (__builtin_expect(n >= FT_STATS_KEEP, 0)) n = 0; /* FT_STATS_KEEP or longer (maybe cut): no number read */
  if (r->ev_depth && r->depth == r->ev_depth) {
    if (r->key == K_TS || r->key == K_DUR) {
      enum ft__num v = us_to_ns(s, n, r->key == K_TS ? &r->ts : &r->dur);
      if (v == FT__NUM_OK) *(r->key == K_TS ? &r->has_ts : &r->has_dur) = true;
      else if (v == FT__NUM_RANGE) r->time_range = true;
      else r->bad_time = true;
    } else if (r->key == K_PID) r->pid_num = parse_int(s, n, &r->pid);
    else if (r->key == K_TID && (!r->has_cat || r->cats[r->cat].sec >= FT__SEC_RUNTIME || r->is_memname))
      /* host calls and [memory] instants only */
      r->has_tid = parse_int(s, n, &r->tid);
  } else if (r->arr_depth) {
    if (r->arr_key != K_OTHER && !ft__rd_arr_number(r, s, n)) return 0;
  } else if (r->meta_depth && r->depth == r->meta_depth) {
    int64_t v;
    ft_stat_meta *m = &r->st->meta;
    if (parse_int(s, n, &v) && v >= 0) {
      if (r->key == K_RANK) m->rank = v <= FT_STATS_MAX_RANK ? v : -1;
      else if (r->key == K_DROPPED) m->dropped_records = (uint64_t)v;
      else if (r->key == K_WINDOW) m->window_discarded = (uint64_t)v;
    }
  } else if (r->args_depth && r->depth == r->args_depth) {
    int64_t v;
    if (r->key == K_EXT) {
      r->has_ext = parse_int(s, n, &r->ext);
      r->bad_ext = !r->has_ext;
    } else if (r->key == K_BYTES) {
      if (parse_int(s, n, &v) && v >= 0) r->bytes = (uint64_t)v;
      else r->bad_bytes = true;
    } else if (r->key == K_CORR) {
      r->has_corr = parse_int(s, n, &r->corr);
    } else if (r->key == K_STREAM) {
      r->has_stream = parse_int(s, n, &r->stream);
    } else if (r->key == K_REGS) {
      r->has_regs = parse_int(s, n, &r->regs);
    } else if (r->key >= K_M_DEVTYPE && r->key <= K_M_POOLB) {
      ft__rd_mem_number(r, s, n);
    }
  }
  r->key = K_OTHER;
  return 1;
}

static int cb_scalar(void *ctx) {
  reader *r = ctx;
  if (r->key == K_EVENTS) return bad_events(r);
  non_number(r);
  if (r->arr_depth && r->arr_key != K_OTHER) { /* null or a boolean */
    if (r->arr_key != K_DIMS) ft__rd_arr_spoil(r);
    else if (!ft__rd_dims_value(r, "None", 4)) return 0;
  }
  r->key = K_OTHER;
  return 1;
}
static int cb_bool(void *ctx, int b) {
  reader *r = ctx;
  if (r->meta_depth && r->depth == r->meta_depth && r->key == K_ACTIVITY) r->st->meta.device_activity = b != 0;
  return cb_scalar(ctx);
}

static const ft__json_callbacks callbacks = {
    .null = cb_scalar,
    .boolean = cb_bool,
    .number = cb_number,
    .string = cb_string,
    .start_map = cb_start_map,
    .map_key = cb_key,
    .end_map = cb_end_map,
    .start_array = cb_start_array,
    .end_array = cb_end_array,
};

/* r between two events of the events array at depth d (the state a segment's
 * worker started from); its category cache and name buffer are kept. */
static void reader_between(reader *r, unsigned d) {
  r->depth = r->events_depth = (int)d;
  r->ev_depth = r->args_depth = r->meta_depth = r->arr_depth = r->devprops_depth = 0;
  r->saw_events = true;
  r->top_array = d == 1;
  r->key = K_OTHER;
  r->closed = false;
}

/* What the reader's parser keeps: keys up to 64 bytes (every key read is
 * shorter), \u0000 as U+FFFD (names are C strings on output), nothing of a
 * value until a key asks for it. */
static void json_limits(ft__json *j) {
  j->keep = 0;
  j->key_keep = 64;
  j->nul_fffd = true;
}

static void reader_init(reader *r, ft_stats *st) {
  memset(r, 0, sizeof *r);
  r->st = st;
  r->cnt = COUNTS0;
  for (int i = 0; i < 4; i++) r->cats[i].sec = -1; /* empty */
}

ft__evbatch *ft__evbatch_new(bool want_args, bool want_modules) {
  ft__evbatch *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  if (!(b->j = malloc(sizeof *b->j))) { /* its nesting stack is 10 kB */
    free(b);
    return NULL;
  }
  reader_init(&b->r, NULL);
  b->r.want_args = want_args;
  b->r.want_modules = want_modules;
  b->r.sink = b;
  ft__json_init(b->j, &callbacks, &b->r);
  json_limits(b->j);
  b->r.j = b->j;
  return b;
}

void ft__evbatch_free(ft__evbatch *b) {
  if (!b) return;
  free(b->ev);
  free(b->text);
  free(b->r.name);
  free(b->r.dims);
  ft__json_free(b->j);
  free(b->j);
  free(b);
}

/* (stats_internal.h) Parses buf as if it came just after an event of the
 * events array at depth d; b->end says how far that held. */
void ft__stats_parse_segment(ft__evbatch *b, const unsigned char *buf, size_t n, uint64_t base, unsigned depth) {
  b->n = b->len = 0;
  b->base = base;
  b->depth = depth;
  b->end = BATCH_NONE;
  reader *r = &b->r;
  reader_between(r, depth);
  r->cnt = COUNTS0;
  ft__json_set_between(b->j, depth, base);
  b->j->keep = 0;
  ft__json_status js = ft__json_feed(b->j, buf, n);
  if (js == FT__JSON_OK && ft__json_is_between(b->j, depth) && r->depth == (int)depth && !r->ev_depth) {
    b->end = BATCH_BETWEEN;
  } else if (js == FT__JSON_STOPPED && r->closed) {
    b->end = BATCH_STOPPED; /* at the array's ']': the state before it was between events */
    b->stop_at = b->j->err_at;
  }
}

/* Whether the reader (r, j) is between two events of the events array, where
 * a worker's segment may start. */
static bool between(const reader *r, const ft__json *j, unsigned *d) {
  *d = r->top_array ? 1 : 2;
  return r->events_depth == (int)*d && r->depth == (int)*d && !r->ev_depth && ft__json_is_between(j, *d);
}

/* One parse over chunks pulled from next() (the chunk stays valid until the next
 * call); offset is in the uncompressed text. A chunk may come with a worker's
 * batch: its events are taken, and its text skipped, only when this parse is
 * between events where the chunk starts, as the worker assumed; otherwise the
 * chunk is parsed here, so that a wrong guess never changes the result. */
ft_status ft__stats_parse(ft_stats *st, ft__chunk_fn next, void *src, char *err, size_t errlen) {
  reader r;
  reader_init(&r, st);
  r.want_args = st->want_args || st->want_memory; /* runtime calls' correlation ids name the call that allocated */
  r.want_modules = st->want_modules || st->read_pyfunc;
  ft__json *j = malloc(sizeof *j); /* its nesting stack is 10 kB: not on a file thread's stack */
  if (!j) return FT_ENOMEM;
  ft__json_init(j, &callbacks, &r);
  json_limits(j);
  r.j = j;
  ft_status status = FT_OK;
  bool any = false;
  while (!status) {
    const unsigned char *buf = NULL;
    const ft__evbatch *b = NULL;
    long n = next(src, &buf, &b, err, errlen);
    if (n < 0) {
      status = FT_EIO;
      break;
    }
    if (!n && !any) {
      snprintf(err, errlen, "empty file");
      status = FT_EPARSE;
      break;
    }
    ft__json_status js = FT__JSON_OK;
    unsigned d;
    st->segments += n > 0;
    if (n && b && b->end != BATCH_NONE && b->base == j->base && between(&r, j, &d) && b->depth == d) {
      st->segments_taken++;
      bool ok = true;
      for (size_t i = 0; ok && i < b->n; i++) {
        ft__ev e = b->ev[i];
        if (e.has_dims) e.dims = b->text + e.dims_off;
        ok = ft__stats_apply(st, &e, b->text + e.name_off, b->text + e.cat_off);
      }
      if (!ok) {
        snprintf(err, errlen, "out of memory");
        status = FT_ENOMEM;
        break;
      }
      counts_add(&r.cnt, &b->r.cnt);
      if (b->end == BATCH_STOPPED) { /* the rest from the array's end on */
        size_t off = (size_t)(b->stop_at - b->base);
        ft__json_set_between(j, d, b->stop_at);
        js = ft__json_feed(j, buf + off, (size_t)n - off);
      } else {
        ft__json_set_between(j, d, b->base + (uint64_t)n);
      }
    } else {
      js = n ? ft__json_feed(j, buf, (size_t)n) : ft__json_finish(j);
    }
    if (js != FT__JSON_OK && !n && r.top_array && r.depth == 1 && !r.err[0]) {
      /* The JSON Array Format may end without its "]" (a process that died
       * mid-trace): every event read so far counts. */
      break;
    }
    if (js != FT__JSON_OK) {
      const char *why = r.err[0] ? r.err : j->err_msg;
      snprintf(err, errlen, "%s at byte %llu", why, (unsigned long long)j->err_at);
      status = why && !strcmp(why, "out of memory") ? FT_ENOMEM : FT_EPARSE; /* not the input's fault */
      break;
    }
    if (!n) break;
    any = true;
  }
  if (!status && !r.saw_events) {
    snprintf(err, errlen, "no \"traceEvents\" array: not a Chrome trace");
    status = FT_EPARSE;
  }
  st->events += r.cnt.events;
  st->skipped.bad_time += r.cnt.bad_time;
  st->skipped.time_range += r.cnt.time_range;
  st->skipped.no_dur += r.cnt.no_dur;
  st->skipped.neg_dur += r.cnt.neg_dur;
  st->skipped.bad_bytes += r.cnt.bad_bytes;
  st->skipped.bad_ext += r.cnt.bad_ext;
  st->cut_strings += r.cnt.cut_strings;
  st->mem_bad += r.cnt.mem_bad;
  if (st->first_ns > r.cnt.first_ns) st->first_ns = r.cnt.first_ns;
  if (st->last_ns < r.cnt.last_ns) st->last_ns = r.cnt.last_ns;
  free(r.name);
  free(r.dims);
  ft__json_free(j);
  free(j);
  /* The External id join and the calls' nesting are per file: ids restart in
   * every rank's trace. */
  if (!ft__stats_mem_file_end(st) && !status) {
    snprintf(err, errlen, "out of memory");
    status = FT_ENOMEM;
  }
  if (!ft__ops_file_end(st) && !status) {
    snprintf(err, errlen, "out of memory");
    status = FT_ENOMEM;
  }
  ft__join_free(&st->ext_op);
  return status;
}
