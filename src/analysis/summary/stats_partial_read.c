/* Partial summaries, reading: the JSON of stats_partial_write.c parsed with json_scan into a job's files and rows, each
 * value checked. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FT__PARTIAL_SHORT_NAMES
#include "stats_partial.h"

static const char *const top_keys[] = {"flagtrace_partial",  "trace_limit", "strings", "files", "total",
                                       "unknown_categories", "trace",       NULL};

static const char *const file_keys[] = {
    "path",        "events",  "span_ns", "first_ns", "kernel_ns", "comm_ns", "device_cap_events",
    "cut_strings", "skipped", "meta",    "busy",     "hta",       "rows",    "source",
    "mem",         "mem_cpu", "mem_dev", "mem_cuda", NULL};

static const char *const source_keys[] = {"size", "digest", "dev", "ino", "mtime_ns", NULL};

static const char *const hta_keys[] = {
    "gpu_events",     "gpu_first_ns", "gpu_last_ns", "gpu_busy_ns",   "compute_ns",
    "comm_ns",        "overlap_ns",   "launches",    "short_kernels", "runtime_outliers",
    "delay_outliers", "cpu_ns",       "gpu_ns",      "delay_ns",      NULL};

static const char *const skip_keys[] = {"bad_time",  "time_range", "unknown_cat", "no_dur", "neg_dur",
                                        "bad_bytes", "bad_ext",    "unpaired",    NULL};

static const char *const meta_keys[] = {
    "rank", "device_activity", "tracer", "device_status", "dropped_records", "window_discarded", "has_flagtrace", NULL};

static const char *const dist_keys[] = {"n", "total", "min", "max", "sumsq", "vals", "hist_lo", "hist", NULL};

static const char *const hex_keys[] = {"hex", NULL};

/* Whole numbers only: a fraction or an exponent is refused, as is one past 64 bits. */
static bool to_u64(const char *s, size_t n, uint64_t *v) {
  if (!n || n > 20 || s[0] == '-') return false;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    unsigned dgt = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - dgt) / 10) return false;
    x = x * 10 + dgt;
  }
  *v = x;
  return true;
}
static bool to_i64(const char *s, size_t n, int64_t *v) {
  bool neg = n && s[0] == '-';
  uint64_t u;
  if (!to_u64(s + neg, n - neg, &u)) return false;
  if (u > (uint64_t)INT64_MAX + neg) return false;
  *v = neg ? (int64_t)(0 - u) : (int64_t)u;
  return true;
}

static const char *const *keys_of(uint8_t kind) {
  switch (kind) {
  case F_TOP: return top_keys;
  case F_FILE: return file_keys;
  case F_SKIPPED: return skip_keys;
  case F_META: return meta_keys;
  case F_ROW: return ft__partial_row_keys;
  case F_DIST: return dist_keys;
  case F_STRHEX: return hex_keys;
  case F_HTA: return hta_keys;
  case F_SOURCE: return source_keys;
  case F_MEM: return ft__pmem_keys;
  case F_MEM_DEV: return ft__pmem_dev_keys;
  default: return NULL;
  }
}

/* A refused member, named in the message: one line, printable (the input's bytes escaped). */
static int fail_key(reader *r, const char *fmt, const unsigned char *s, size_t n) {
  char name[80];
  size_t w = 0;
  for (size_t i = 0; i < n && w + 5 < 64; i++)
    w += (size_t)(s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\' ? snprintf(name + w, sizeof name - w, "%c", s[i])
                                                              : snprintf(name + w, sizeof name - w, "\\x%02x", s[i]));
  name[w] = '\0';
  return failf(r, fmt, name);
}

static int cb_key(void *ctx, const unsigned char *s, size_t n) {
  reader *r = ctx;
  frame *f = top(r);
  int k = -1;
  if (f->kind == F_ROWS) {
    for (int sec = 0; sec < FT_STAT_N_SECTIONS && k < 0; sec++) {
      char kbuf[32];
      const char *key = ft__partial_section_key(sec, kbuf, sizeof kbuf);
      if (strlen(key) == n && !memcmp(key, s, n)) k = sec;
    }
  } else {
    const char *const *keys = keys_of(f->kind);
    for (int i = 0; keys && keys[i] && k < 0; i++)
      if (strlen(keys[i]) == n && !memcmp(keys[i], s, n)) k = i;
  }
  if (f->kind == F_TOP && !f->seen && k != T_VERSION)
    return fail(r, "not a partial summary (stats --merge reads what stats --partial writes)");
  if (k < 0 || r->j->cut) return fail_key(r, "unknown member \"%s\" (a partial of another flagtrace version?)", s, n);
  if (f->seen & (1u << k)) return fail_key(r, "member \"%s\" given twice", s, n);
  f->seen |= 1u << k;
  f->key = k;
  return 1;
}

/* The name id of string table entry v (the string given before its use). */
static bool str_ref(reader *r, uint64_t v, uint32_t *id) {
  if (v >= r->n_strs) return fail(r, "a string index past the strings table"), false;
  *id = r->strs[v];
  return true;
}

static bool copy_str(reader *r, uint64_t v, char *dst, size_t cap) {
  uint32_t id;
  if (!str_ref(r, v, &id)) return false;
  size_t len = ft__intern_len(&r->job->total.names, id);
  if (len >= cap) return fail(r, "a string longer than its field"), false;
  memcpy(dst, ft__intern_str(&r->job->total.names, id), len + 1);
  return true;
}

static int number_u(reader *r, frame *f, uint64_t v) {
  ft_stat_file *x;
  switch (f->kind) {
  case F_TOP:
    if (f->key == T_VERSION) {
      if (v != FT_PARTIAL_VERSION) {
        /* version 1 names no file's source: a merge could not tell two partials of one trace */
        snprintf(r->msg, sizeof r->msg, "a partial summary of version %" PRIu64 "; this flagtrace reads version %d%s",
                 v, FT_PARTIAL_VERSION,
                 v == 1 ? " (version 1 names no trace's source: write it again with this stats --partial)" : "");
        r->err = r->msg;
        return 0;
      }
      return 1;
    }
    if (f->key == T_TRACE_LIMIT) return r->trace_limit = v, 1;
    break;
  case F_FILE:
    x = cur_file(r);
    switch (f->key) {
    case FI_PATH: {
      uint32_t id;
      if (!str_ref(r, v, &id)) return 0;
      x->path = ft__intern_str(&r->job->total.names, id);
      return 1;
    }
    case FI_EVENTS: x->events = v; return 1;
    case FI_SPAN: x->span_ns = v; return 1;
    case FI_KERNEL: x->kernel_ns = v; return 1;
    case FI_COMM: x->comm_ns = v; return 1;
    case FI_CAP: x->device_cap_events = v; return 1;
    case FI_CUT: x->cut_strings = v; return 1;
    }
    if (f->key >= FI_MEM_CPU) return x->mem_events[f->key - FI_MEM_CPU] = v, 1; /* the ops' memory columns */
    break;
  case F_SKIPPED: {
    x = cur_file(r);
    uint64_t *k[] = {&x->skipped.bad_time, &x->skipped.time_range, &x->skipped.unknown_cat, &x->skipped.no_dur,
                     &x->skipped.neg_dur,  &x->skipped.bad_bytes,  &x->skipped.bad_ext,     &x->skipped.unpaired};
    *k[f->key] = v;
    return 1;
  }
  case F_META:
    x = cur_file(r);
    switch (f->key) {
    case M_TRACER: return copy_str(r, v, x->meta.tracer, sizeof x->meta.tracer);
    case M_STATUS: return copy_str(r, v, x->meta.device_status, sizeof x->meta.device_status);
    case M_DROPPED: x->meta.dropped_records = v; return 1;
    case M_DISCARDED: x->meta.window_discarded = v; return 1;
    }
    break;
  case F_ROW:
    switch (f->key) {
    case R_NAME: r->row_has_name = true; return str_ref(r, v, &r->row.name_id);
    case R_AUX: return str_ref(r, v, &r->row.aux_id);
    case R_CAT:
      if (v > FT_STAT_CAT_OTHER) return fail(r, "a row's cat is not a category");
      r->row.cat = (uint8_t)v;
      return 1;
    case R_CALLS: r->row.calls = v; return 1;
    case R_SELF: r->row.self_ns = v; return 1;
    case R_SELF_CPU: r->row.self_cpu_ns = v; return 1;
    case R_TOTAL_DEV: r->row.total_dev_ns = v; return 1;
    }
    break;
  case F_DIST:
    switch (f->key) {
    case D_N: r->d.n = v; return 1;
    case D_TOTAL: r->d.total = v; return 1;
    case D_MIN: r->d.min = v; return 1;
    case D_MAX: r->d.max = v; return 1;
    case D_HIST_LO: r->d.hist_lo = v; return 1;
    }
    break;
  case F_HTA: {
    ft_stat_hta *h = &cur_file(r)->hta;
    uint64_t *k[] = {[H_GPU_EVENTS] = &h->gpu_events,    [H_GPU_BUSY] = &h->gpu_busy_ns,
                     [H_COMPUTE] = &h->compute_ns,       [H_COMM] = &h->comm_ns,
                     [H_OVERLAP] = &h->overlap_ns,       [H_LAUNCHES] = &h->launches,
                     [H_SHORT] = &h->short_kernels,      [H_RUNTIME_OUT] = &h->runtime_outliers,
                     [H_DELAY_OUT] = &h->delay_outliers, [H_DELAY] = NULL};
    if (k[f->key]) return *k[f->key] = v, 1;
    break;
  }
  case F_SOURCE:
    x = cur_file(r);
    if (f->key == S_SIZE) return x->source.size = v, 1;
    if (f->key == S_DEV) return x->source.dev = v, 1;
    if (f->key == S_INO) return x->source.ino = v, 1;
    break;
  case F_VALS:
    if (r->d.n_vals == FT_DIST_EXACT) return fail(r, "more exact values than a distribution keeps");
    r->d.vals[r->d.n_vals++] = v;
    return 1;
  case F_HIST:
    if (v > UINT32_MAX) return fail(r, "a histogram count past 32 bits");
    if (r->d.n_hist >= N_BUCKETS) return fail(r, "more histogram buckets than there are");
    if (r->d.n_hist == r->d.cap_hist) {
      size_t cap = r->d.cap_hist ? 2 * r->d.cap_hist : 64;
      uint32_t *h = realloc(r->d.hist, cap * sizeof *h);
      if (!h) return fail(r, "out of memory");
      r->d.hist = h;
      r->d.cap_hist = cap;
    }
    r->d.hist[r->d.n_hist++] = (uint32_t)v;
    return 1;
  case F_BUSY_DEV:
    if (f->pos == 1) {
      x = cur_file(r);
      x->busy[x->n_busy - 1].busy_ns = v;
      return 1;
    }
    break;
  case F_UCAT:
    if (f->pos == 0) return str_ref(r, v, &r->ev.name_id);
    if (f->pos == 1) {
      uint64_t *c = ft__map_upsert(&r->job->total.unknown_cats, r->ev.name_id);
      if (!c) return fail(r, "out of memory");
      if (!v) return fail(r, "an unknown category of no events");
      if (*c > UINT64_MAX - v || r->unknown_sum > UINT64_MAX - v) return fail(r, "a count too large");
      *c += v;
      r->unknown_sum += v;
      return 1;
    }
    break;
  case F_EVENT:
    switch (f->pos) {
    case 0:
      if (v >= r->job->n_files - r->file0) return fail(r, "a device event of a file the partial does not have");
      r->ev.file = (uint32_t)(v + r->file0);
      return 1;
    case 4: r->ev.bytes = v; return 1;
    case 5:
      if (v > 2) return fail(r, "a device event's kind is not 0, 1 or 2");
      r->ev.kind = (uint8_t)v;
      return 1;
    case 6: return str_ref(r, v, &r->ev.name_id);
    }
    break;
  }
  return fail(r, "a number where none belongs");
}

static int number_i(reader *r, frame *f, int64_t v) {
  if (f->kind == F_ROW && f->key >= R_CPU_MEM) return *ft__partial_row_mem(&r->row, f->key) = v, 1; /* signed */
  if (f->kind == F_FILE && f->key == FI_FIRST) return cur_file(r)->first_ns = (uint64_t)v, 1;
  if (f->kind == F_HTA && f->key == H_GPU_FIRST) return cur_file(r)->hta.gpu_first_ns = v, 1;
  if (f->kind == F_HTA && f->key == H_GPU_LAST) return cur_file(r)->hta.gpu_last_ns = v, 1;
  if (f->kind == F_SOURCE && f->key == S_MTIME) return cur_file(r)->source.mtime_ns = v, 1;
  if (f->kind == F_META && f->key == M_RANK) {
    if (v < -1) return fail(r, "a rank below -1");
    if (v > FT_STATS_MAX_RANK) return fail(r, "a rank past 2^31 - 1 (a read takes none larger)");
    cur_file(r)->meta.rank = v;
    return 1;
  }
  if (f->kind == F_META && f->key == M_ACTIVITY) {
    if (v < -1 || v > 1) return fail(r, "device_activity is not -1, 0 or 1");
    cur_file(r)->meta.device_activity = (int)v;
    return 1;
  }
  if (f->kind == F_BUSY_DEV && f->pos == 0) {
    ft_stat_file *x = cur_file(r);
    if (x->n_busy > 1 && x->busy[x->n_busy - 2].device >= v) return fail(r, "busy devices not in ascending order");
    x->busy[x->n_busy - 1].device = v;
    return 1;
  }
  if (f->kind == F_EVENT && f->pos >= 7 && f->pos < EV_VALUES) { /* stream, grid, block, registers */
    if (f->pos > 7 && (v < INT32_MIN || v > INT32_MAX)) return fail(r, "a launch dimension past 32 bits");
    int32_t *d[] = {r->ev.grid,      r->ev.grid + 1,  r->ev.grid + 2, r->ev.block,
                    r->ev.block + 1, r->ev.block + 2, &r->ev.regs};
    if (f->pos == 7) r->ev.stream = v;
    else *d[f->pos - 8] = (int32_t)v;
    return 1;
  }
  if (f->kind == F_EVENT && f->pos >= 1 && f->pos <= 3) {
    /* times within the reader's bounds (+-4e15 us): differences of two fit 64 bits */
    const int64_t lim = FT_STATS_MAX_US * 1000;
    if (f->pos < 3 && (v > lim || v < -lim)) return fail(r, "a device event's time out of range");
    if (f->pos == 2 && v < 0) return fail(r, "a device event with a negative duration");
    *(f->pos == 1 ? &r->ev.ts : f->pos == 2 ? &r->ev.dur : &r->ev.device) = v;
    return 1;
  }
  return fail(r, "a number where none belongs");
}

static bool signed_field(const frame *f) {
  return (f->kind == F_FILE && f->key == FI_FIRST) || (f->kind == F_ROW && f->key >= R_CPU_MEM) ||
         (f->kind == F_HTA && (f->key == H_GPU_FIRST || f->key == H_GPU_LAST)) ||
         (f->kind == F_META && (f->key == M_RANK || f->key == M_ACTIVITY)) || (f->kind == F_BUSY_DEV && f->pos == 0) ||
         (f->kind == F_SOURCE && f->key == S_MTIME) || (f->kind == F_EVENT && f->pos >= 1 && f->pos <= 3) ||
         (f->kind == F_EVENT && f->pos >= 7);
}

/* An array's element was read (containers count when they end). */
static void element_done(reader *r) {
  if (r->depth) top(r)->pos++;
}

static int cb_number(void *ctx, const char *s, size_t n) {
  reader *r = ctx;
  if (!r->depth) return fail(r, "not a partial summary (stats --merge reads what stats --partial writes)");
  frame *f = top(r);
  int ok;
  if (r->j->cut) return fail(r, "a number too long");
  if (f->kind >= F_MEM) {
    ok = ft__partial_mem_number(r, f, s, n);
  } else if (signed_field(f)) {
    int64_t v;
    if (!to_i64(s, n, &v)) return fail(r, "not a whole number in 64 bits");
    ok = number_i(r, f, v);
  } else {
    uint64_t v;
    if (!to_u64(s, n, &v)) return fail(r, "not a whole number in [0, 2^64)");
    ok = number_u(r, f, v);
  }
  if (ok) element_done(r);
  return ok;
}

static int add_string(reader *r, const unsigned char *s, size_t n) {
  if (n > MAX_STR) return fail(r, "a string longer than 64 KiB");
  if (memchr(s, 0, n)) return fail(r, "a string holding NUL");
  if (r->n_strs == r->cap_strs) {
    size_t cap = r->cap_strs ? 2 * r->cap_strs : 256;
    uint32_t *p = realloc(r->strs, cap * sizeof *p);
    if (!p) return fail(r, "out of memory");
    r->strs = p;
    r->cap_strs = cap;
  }
  if (ft__intern(&r->job->total.names, (const char *)s, n, &r->strs[r->n_strs])) return fail(r, "out of memory");
  r->n_strs++;
  return 1;
}

static int hexval(unsigned char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

static int cb_string(void *ctx, const unsigned char *s, size_t n) {
  reader *r = ctx;
  if (!r->depth) return fail(r, "not a partial summary (stats --merge reads what stats --partial writes)");
  frame *f = top(r);
  if (r->j->cut) return fail(r, "a string longer than 64 KiB");
  if (f->kind == F_STRINGS) {
    if (!add_string(r, s, n)) return 0;
    element_done(r);
    return 1;
  }
  if (f->kind == F_STRHEX) {
    if (n % 2) return fail(r, "a hex string of odd length");
    unsigned char *b = malloc(n / 2 + 1);
    if (!b) return fail(r, "out of memory");
    for (size_t i = 0; i < n / 2; i++) {
      int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
      if (hi < 0 || lo < 0) {
        free(b);
        return fail(r, "not a hex string");
      }
      b[i] = (unsigned char)(hi << 4 | lo);
    }
    int ok = add_string(r, b, n / 2);
    free(b);
    r->hex_given = true;
    return ok;
  }
  if (f->kind == F_SOURCE && f->key == S_DIGEST) { /* 64 bits, 16 hex digits */
    uint64_t x = 0;
    if (n != 16) return fail(r, "a source's digest is not 16 hex digits");
    for (size_t i = 0; i < n; i++) {
      int h = hexval(s[i]);
      if (h < 0) return fail(r, "a source's digest is not 16 hex digits");
      x = x << 4 | (uint64_t)h;
    }
    cur_file(r)->source.digest = x;
    return 1;
  }
  if (f->kind == F_DIST && f->key == D_SUMSQ) { /* 128 bits, in decimal */
    ft_u128 x = 0;
    if (!n || n > 39) return fail(r, "sumsq is not a whole number in 128 bits");
    for (size_t i = 0; i < n; i++) {
      if (s[i] < '0' || s[i] > '9') return fail(r, "sumsq is not a whole number in 128 bits");
      unsigned dgt = (unsigned)(s[i] - '0');
      if (x > (~(ft_u128)0 - dgt) / 10) return fail(r, "sumsq is not a whole number in 128 bits");
      x = x * 10 + dgt;
    }
    r->d.sumsq = x;
    return 1;
  }
  return fail(r, "a string where none belongs");
}

static int cb_boolean(void *ctx, int v) {
  reader *r = ctx;
  frame *f = r->depth ? top(r) : NULL;
  if (f && f->kind == F_META && f->key == M_HAS) return cur_file(r)->meta.has_flagtrace = v, 1;
  if (f && f->kind == F_ROW && f->key == R_COMM) return r->row.comm = v, 1;
  return fail(r, "a boolean where none belongs");
}

static int cb_null(void *ctx) { return fail(ctx, "null where a value belongs"); }

static int push(reader *r, uint8_t kind) {
  if (r->depth == MAX_FRAMES) return fail(r, "nested too deep");
  r->fr[r->depth++] = (frame){.kind = kind, .key = -1};
  return 1;
}

static int start_file(reader *r) {
  ft_stat_job *job = r->job;
  if (job->n_files >= UINT32_MAX - 1) return fail(r, "too many files");
  if (job->n_files == r->cap_files) {
    size_t cap = r->cap_files ? 2 * r->cap_files : 16;
    ft_stat_file *p = realloc(job->files, cap * sizeof *p);
    if (!p) return fail(r, "out of memory");
    job->files = p;
    r->cap_files = cap;
  }
  ft_stat_file *x = &job->files[job->n_files++];
  memset(x, 0, sizeof *x);
  r->file_kernel_rows = r->file_comm_rows = 0;
  r->file_longest = 0;
  x->meta.rank = -1;
  x->meta.device_activity = -1;
  return push(r, F_FILE);
}

static int cb_start_map(void *ctx) {
  reader *r = ctx;
  if (!r->depth) return push(r, F_TOP);
  frame *f = top(r);
  switch (f->kind) {
  case F_TOP:
    if (f->key == T_TOTAL) {
      r->have_total = true;
      r->row_target = -1;
      r->gen_id++;
      return push(r, F_ROWS);
    }
    break;
  case F_STRINGS: r->hex_given = false; return push(r, F_STRHEX);
  case F_FILES: return start_file(r);
  case F_FILE:
    if (f->key == FI_SKIPPED) return push(r, F_SKIPPED);
    if (f->key == FI_META) return push(r, F_META);
    if (f->key == FI_SOURCE) return push(r, F_SOURCE);
    if (f->key == FI_MEM) return ft__partial_mem_start(r, f, true);
    if (f->key == FI_HTA) {
      cur_file(r)->hta.kept = true;
      return push(r, F_HTA);
    }
    if (f->key == FI_ROWS) {
      ft_stat_file *x = cur_file(r);
      r->any_rows = true;
      r->row_target = (int)(r->job->n_files - 1);
      r->gen_id++;
      if (r->keep_rows) {
        if (!(x->own = malloc(sizeof *x->own))) return fail(r, "out of memory");
        if (ft_stats_init(x->own) != FT_OK) { /* small: one per file, grown as rows come */
          ft_stats_free(x->own);
          free(x->own);
          x->own = NULL;
          return fail(r, "out of memory");
        }
      }
      return push(r, F_ROWS);
    }
    break;
  case F_SECTION:
    memset(&r->row, 0, sizeof r->row);
    r->row_has_name = false;
    return push(r, F_ROW);
  case F_HTA:
  case F_ROW:
    if (f->kind == F_HTA ? f->key >= H_CPU : f->key == R_T || f->key == R_B) {
      ft__partial_dist_reset(r);
      return push(r, F_DIST);
    }
    break;
  default:
    if (f->kind >= F_MEM) return ft__partial_mem_start(r, f, true);
  }
  return fail(r, "an object where none belongs");
}

void ft__partial_dist_reset(reader *r) {
  free(r->d.hist);
  memset(&r->d, 0, offsetof(dist_in, vals));
  r->d.n_vals = 0;
  r->d.hist = NULL;
  r->d.n_hist = r->d.cap_hist = 0;
}

static int cb_start_array(void *ctx) {
  reader *r = ctx;
  if (!r->depth) return fail(r, "not a partial summary (stats --merge reads what stats --partial writes)");
  frame *f = top(r);
  switch (f->kind) {
  case F_TOP:
    if (f->key == T_STRINGS) return push(r, F_STRINGS);
    if (f->key == T_FILES) return push(r, F_FILES);
    if (f->key == T_UNKNOWN) return push(r, F_UNKNOWN);
    if (f->key == T_TRACE) return push(r, F_TRACE);
    break;
  case F_FILE:
    if (f->key == FI_BUSY) return push(r, F_BUSY);
    break;
  case F_BUSY: {
    ft_stat_file *x = cur_file(r);
    if (x->n_busy == FT_STATS_MAX_DEVICES) return fail(r, "more busy devices than a file keeps");
    if (!(x->n_busy & (x->n_busy - 1))) { /* 0, 1, 2, 4...: grown by doubling */
      ft_stat_busy *b = realloc(x->busy, (x->n_busy ? 2 * x->n_busy : 1) * sizeof *b);
      if (!b) return fail(r, "out of memory");
      x->busy = b;
    }
    x->busy[x->n_busy++] = (ft_stat_busy){0};
    return push(r, F_BUSY_DEV);
  }
  case F_ROWS: r->sec = f->key; return push(r, F_SECTION);
  case F_DIST:
    if (f->key == D_VALS) return push(r, F_VALS);
    if (f->key == D_HIST) return push(r, F_HIST);
    break;
  case F_UNKNOWN: return push(r, F_UCAT);
  case F_TRACE: memset(&r->ev, 0, sizeof r->ev); return push(r, F_EVENT);
  default:
    if (f->kind >= F_MEM) return ft__partial_mem_start(r, f, false);
  }
  return fail(r, "an array where none belongs");
}

static int cb_end(void *ctx) {
  reader *r = ctx;
  frame *f = top(r);
  int ok = 1;
  switch (f->kind) {
  case F_TOP: {
    const uint32_t need = (1u << T_VERSION) | (1u << T_TRACE_LIMIT) | (1u << T_STRINGS) | (1u << T_FILES);
    if ((f->seen & need) != need)
      ok = fail(r, "a partial summary without flagtrace_partial, trace_limit, strings and files");
    else if (r->have_total && r->any_rows) ok = fail(r, "both a total and files' own rows (one would count twice)");
    else if (!r->have_total && !r->all_rows && r->job->n_files > r->file0)
      ok = fail(r, "neither a total nor every file's own rows");
    else if (r->unknown_sum != r->file_unknown_sum)
      ok = fail(r, "unknown_categories do not add up to the files' skipped unknown_cat");
    else if (r->have_total && (r->files_kernel != r->total_kernel_rows || r->files_comm != r->total_comm_rows))
      ok = fail(r, "the files' kernel_ns or comm_ns is not the kernel rows' time");
    else if (r->have_total && !r->files_capped && r->total_longest > r->files_busiest)
      ok = fail(r, "a kernel longer than the busiest device was busy (busy time below kernel time)");
    break;
  }
  case F_STRHEX:
    if (!r->hex_given) ok = fail(r, "a hex string object without hex");
    break;
  case F_SOURCE: {
    const uint32_t need = (1u << S_SIZE) | (1u << S_DIGEST), id = (1u << S_DEV) | (1u << S_INO) | (1u << S_MTIME);
    if ((f->seen & need) != need) ok = fail(r, "a source without its size and digest");
    else if ((f->seen & id) && (f->seen & id) != id) ok = fail(r, "a source with some of dev, ino and mtime_ns");
    cur_file(r)->source.regular = (f->seen & id) == id;
    cur_file(r)->source.known = true;
    break;
  }
  case F_FILE: ok = ft__partial_end_file(r); break;
  case F_ROW: ok = ft__partial_end_row(r); break;
  case F_DIST: { /* into its row, or the file's HTA analyses */
    frame *up = &r->fr[r->depth - 2];
    ft_stat_hta *h = up->kind == F_HTA ? &cur_file(r)->hta : NULL;
    ok = ft__partial_end_dist(r, up->kind == F_MEM_DEV ? ft__partial_mem_dist(r, up)
                                 : !h                  ? (up->key == R_T ? &r->row.t : &r->row.b)
                                 : up->key == H_CPU    ? &h->cpu_ns
                                 : up->key == H_GPU    ? &h->gpu_ns
                                                       : &h->delay_ns);
    break;
  }
  case F_BUSY_DEV:
    if (f->pos != 2) ok = fail(r, "a busy device is [device, busy_ns]");
    break;
  case F_UCAT:
    if (f->pos != 2) ok = fail(r, "an unknown category is [name, events]");
    break;
  case F_EVENT: ok = ft__partial_end_event(r); break;
  default:
    if (f->kind >= F_MEM) ok = ft__partial_mem_end(r, f);
  }
  if (!ok) return 0;
  r->depth--;
  element_done(r);
  return 1;
}

static const ft__json_callbacks callbacks = {
    .null = cb_null,
    .boolean = cb_boolean,
    .number = cb_number,
    .string = cb_string,
    .start_map = cb_start_map,
    .map_key = cb_key,
    .end_map = cb_end,
    .start_array = cb_start_array,
    .end_array = cb_end,
};

/* One partial, chunk by chunk (from fd, or from mem when fd < 0), into r->job. */
ft_status ft__partial_read(reader *r, int fd, const char *mem, size_t len, char *err, size_t errlen) {
  ft__json j;
  ft__json_init(&j, &callbacks, r);
  j.keep = 2 * MAX_STR + 2; /* a 64-KiB name in hex, and a byte more to see it is longer */
  j.key_keep = 64;
  /* cppcheck-suppress autoVariables ; read only by the callbacks, during this call */
  r->j = &j;
  r->err = NULL;
  r->depth = 0;
  r->n_strs = 0;
  r->file0 = r->job->n_files;
  r->trace0 = r->job->total.n_trace;
  r->trace_limit = 0;
  r->have_total = r->any_rows = false;
  r->all_rows = true;
  r->unknown_sum = r->file_unknown_sum = 0;
  r->total_kernel_rows = r->total_comm_rows = r->files_kernel = r->files_comm = 0;
  r->total_longest = r->files_busiest = 0;
  r->files_capped = false;
  ft_status s = FT_OK;
  unsigned char *buf = fd >= 0 ? malloc(1 << 20) : NULL;
  if (fd >= 0 && !buf) {
    snprintf(err, errlen, "out of memory");
    s = FT_ENOMEM;
  }
  bool first = true;
  ft__json_status js = FT__JSON_OK;
  while (!s && js == FT__JSON_OK) {
    const unsigned char *p = (const unsigned char *)mem;
    ssize_t n;
    if (fd >= 0) {
      n = read(fd, buf, 1 << 20);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        snprintf(err, errlen, "cannot read: %s", strerror(errno));
        s = FT_EIO;
        break;
      }
      p = buf;
    } else {
      n = (ssize_t)len;
      len = 0;
    }
    if (first && n >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
      snprintf(err, errlen, "a gzip file, not a partial summary (traces are read without --merge)");
      s = FT_EPARSE;
      break;
    }
    first = first && n == 0;
    if (!n) {
      js = ft__json_finish(&j);
      break;
    }
    js = ft__json_feed(&j, p, (size_t)n);
  }
  if (!s && js != FT__JSON_OK) {
    const char *why = js == FT__JSON_STOPPED && r->err ? r->err : j.err_msg;
    snprintf(err, errlen, "%s at byte %llu", why, (unsigned long long)j.err_at);
    s = why && !strcmp(why, "out of memory") ? FT_ENOMEM : FT_EPARSE;
  }
  free(buf);
  ft__json_free(&j);
  return s;
}
