/* Streaming Chrome-trace reader for `flagtrace stats` (yajl callbacks, bounded memory). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "stats.h"

/* yajl: a streaming parser in Debian (libyajl-dev) and fast enough for the 1 M
 * events in under a second target (bench/bench_stats.c); json-c and jansson build
 * whole documents in memory, which multi-GB traces cannot afford. */

enum key { K_OTHER, K_PH, K_CAT, K_NAME, K_TS, K_DUR, K_PID, K_ARGS, K_EXT, K_BYTES, K_EVENTS };

typedef struct reader {
  ft_stats *st;
  int depth;
  int events_depth; /* depth of the traceEvents array; events are maps one deeper */
  int ev_depth, args_depth;
  bool saw_events, top_array;
  enum key key;
  char err[256];
  /* the current event */
  char ph[8], cat[40];
  char *name;
  size_t name_len, name_cap;
  bool has_ts, has_dur, pid_num, has_ext;
  int64_t ts, dur, pid, ext;
  uint64_t bytes;
} reader;

/* "12.345" (µs) to ns without floating point; false when it is not such a number. */
static bool us_to_ns(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  bool neg = n && s[0] == '-';
  if (neg) i++;
  int64_t whole = 0, frac = 0;
  int frac_digits = 0;
  bool digits = false;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits = true) {
    if (whole > (INT64_MAX / 10000)) return false;
    whole = whole * 10 + (s[i] - '0');
  }
  if (i < n && s[i] == '.') {
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits = true)
      if (frac_digits < 3) frac = frac * 10 + (s[i] - '0'), frac_digits++;
  }
  if (!digits) return false;
  if (i < n) { /* exponent or anything else: go through double */
    char buf[64];
    if (n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (*end || d != d || d > 9e15 || d < -9e15) return false;
    *out = (int64_t)(d * 1000.0 + (d < 0 ? -0.5 : 0.5));
    return true;
  }
  while (frac_digits < 3) frac *= 10, frac_digits++;
  *out = (neg ? -1 : 1) * (whole * 1000 + frac);
  return true;
}

static bool parse_int(const char *s, size_t n, int64_t *out) {
  int64_t v;
  if (!us_to_ns(s, n, &v)) return false;
  *out = v / 1000; /* integers: the same parser, scaled back */
  return v % 1000 == 0;
}

static ft_stat_row *row(ft_stats *st, int section, const char *name, size_t len, uint8_t cat) {
  uint32_t id;
  if (ft__intern(&st->names, name, len, &id)) return NULL;
  uint64_t *slot = ft__map_upsert(&st->index[section], (uint64_t)cat << 32 | id);
  if (!slot) return NULL;
  if (!*slot) {
    ft_stat_row *r = ft__vec_push(&st->rows[section]);
    if (!r) return NULL;
    r->name_id = id;
    r->cat = cat;
    r->min_ns = UINT64_MAX;
    *slot = st->rows[section].len;
  }
  return ft__vec_at(&st->rows[section], *slot - 1);
}

static void add_time(ft_stat_row *r, uint64_t ns) {
  r->calls++;
  r->total_ns += ns;
  if (ns < r->min_ns) r->min_ns = ns;
  if (ns > r->max_ns) r->max_ns = ns;
}

/* torch.autograd.profiler.emit_nvtx names ranges "aten::mm, seq = 3, op_id = 7,
 * sizes = [...]": group them by the op name. */
static size_t op_name_len(const char *name, size_t len) {
  static const char *const tails[] = {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
  size_t cut = len;
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    const char *p = memmem(name, len, tails[i], strlen(tails[i]));
    if (p && (size_t)(p - name) < cut) cut = (size_t)(p - name);
  }
  return cut;
}

static bool process_event(reader *r) {
  ft_stats *st = r->st;
  st->events++;
  if (strcmp(r->ph, "X") || !r->has_ts) return true;
  int64_t dur = r->has_dur && r->dur > 0 ? r->dur : 0;
  if (st->first_ns > r->ts) st->first_ns = r->ts;
  if (st->last_ns < r->ts + dur) st->last_ns = r->ts + dur;
  const char *c = r->cat;
  const char *name = r->name ? r->name : "";
  bool device = false;
  ft_stat_row *row_p = NULL;
  if (!strcasecmp(c, "kernel")) {
    row_p = row(st, FT_STAT_KERNELS, name, r->name_len, 0);
    device = true;
  } else if (!strcmp(c, "gpu_memcpy") || !strcmp(c, "gpu_memset")) {
    row_p = row(st, FT_STAT_MEMORY, name, r->name_len, c[4] == 'm' && c[7] == 's' ? FT_STAT_CAT_MEMSET : FT_STAT_CAT_MEMCPY);
    if (row_p) row_p->bytes += r->bytes;
    device = true;
  } else if (!strcmp(c, "cuda_runtime") || !strcmp(c, "privateuse1_runtime") || !strcmp(c, "cuda_driver")) {
    row_p = row(st, FT_STAT_API, name, r->name_len, !strcmp(c, "cuda_driver") ? FT_STAT_CAT_DRIVER : FT_STAT_CAT_RUNTIME);
  } else if (!strcmp(c, "cpu_op") || !strcmp(c, "user_annotation")) {
    ft_stat_row *op = row(st, FT_STAT_OPS, name, op_name_len(name, r->name_len), 0);
    if (!op) return false;
    op->calls++;
    if (r->has_ext) {
      uint64_t *slot = ft__map_upsert(&st->ext_op, (uint64_t)r->ext);
      if (!slot) return false;
      *slot = ft__map_find(&st->index[FT_STAT_OPS], op->name_id)[0];
    }
    return true;
  } else {
    return true;
  }
  if (!row_p) return false;
  add_time(row_p, (uint64_t)dur);
  if (device) {
    if (r->has_ext) {
      uint64_t *ns = ft__map_upsert(&st->ext_device_ns, (uint64_t)r->ext);
      if (!ns) return false;
      *ns += (uint64_t)dur;
    }
    int64_t *iv = ft__vec_push(&st->intervals);
    if (!iv) return false;
    iv[0] = r->pid_num ? r->pid : -1;
    iv[1] = r->ts;
    iv[2] = r->ts + dur;
  }
  return true;
}

static int cb_start_map(void *ctx) {
  reader *r = ctx;
  r->depth++;
  if (r->events_depth && r->depth == r->events_depth + 1) {
    r->ev_depth = r->depth;
    r->ph[0] = r->cat[0] = '\0';
    r->name_len = 0;
    if (r->name) r->name[0] = '\0';
    r->has_ts = r->has_dur = r->pid_num = r->has_ext = false;
    r->bytes = 0;
  } else if (r->ev_depth && r->depth == r->ev_depth + 1 && r->key == K_ARGS) {
    r->args_depth = r->depth;
  }
  r->key = K_OTHER;
  return 1;
}

static int cb_end_map(void *ctx) {
  reader *r = ctx;
  if (r->ev_depth && r->depth == r->ev_depth) {
    r->ev_depth = 0;
    if (!process_event(r)) {
      snprintf(r->err, sizeof r->err, "out of memory");
      return 0;
    }
  } else if (r->depth == r->args_depth) {
    r->args_depth = 0;
  }
  r->depth--;
  r->key = K_OTHER;
  return 1;
}

static int cb_start_array(void *ctx) {
  reader *r = ctx;
  r->depth++;
  if (r->depth == 1) { /* the JSON Array Format: a bare list of events */
    r->top_array = true;
    r->saw_events = true;
    r->events_depth = 1;
  } else if (r->depth == 2 && r->key == K_EVENTS) {
    r->saw_events = true;
    r->events_depth = 2;
  }
  r->key = K_OTHER;
  return 1;
}

static int cb_end_array(void *ctx) {
  reader *r = ctx;
  if (r->depth == r->events_depth) r->events_depth = 0;
  r->depth--;
  r->key = K_OTHER;
  return 1;
}

static int cb_key(void *ctx, const unsigned char *k, size_t n) {
  reader *r = ctx;
  r->key = K_OTHER;
#define IS(lit) (n == sizeof(lit) - 1 && !memcmp(k, lit, n))
  if (r->depth == 1 && !r->top_array) {
    if (IS("traceEvents")) r->key = K_EVENTS;
  } else if (r->ev_depth && r->depth == r->ev_depth) {
    if (IS("ph")) r->key = K_PH;
    else if (IS("cat")) r->key = K_CAT;
    else if (IS("name")) r->key = K_NAME;
    else if (IS("ts")) r->key = K_TS;
    else if (IS("dur")) r->key = K_DUR;
    else if (IS("pid")) r->key = K_PID;
    else if (IS("args")) r->key = K_ARGS;
  } else if (r->args_depth && r->depth == r->args_depth) {
    if (IS("External id")) r->key = K_EXT;
    else if (IS("bytes")) r->key = K_BYTES;
  }
#undef IS
  return 1;
}

static int bad_events(reader *r) {
  snprintf(r->err, sizeof r->err, "\"traceEvents\" is not an array");
  return 0;
}

static int cb_string(void *ctx, const unsigned char *s, size_t n) {
  reader *r = ctx;
  if (r->key == K_EVENTS) return bad_events(r);
  if (r->ev_depth && r->depth == r->ev_depth) {
    if (r->key == K_PH || r->key == K_CAT) {
      char *dst = r->key == K_PH ? r->ph : r->cat;
      size_t cap = r->key == K_PH ? sizeof r->ph : sizeof r->cat;
      size_t m = n < cap - 1 ? n : cap - 1;
      memcpy(dst, s, m);
      dst[m] = '\0';
    } else if (r->key == K_NAME) {
      if (n + 1 > r->name_cap) {
        size_t cap = n + 1 > 2 * r->name_cap ? n + 1 : 2 * r->name_cap;
        char *p = realloc(r->name, cap);
        if (!p) {
          snprintf(r->err, sizeof r->err, "out of memory");
          return 0;
        }
        r->name = p;
        r->name_cap = cap;
      }
      memcpy(r->name, s, n);
      r->name[n] = '\0';
      r->name_len = n;
    }
  }
  r->key = K_OTHER;
  return 1;
}

static int cb_number(void *ctx, const char *s, size_t n) {
  reader *r = ctx;
  if (r->key == K_EVENTS) return bad_events(r);
  if (r->ev_depth && r->depth == r->ev_depth) {
    if (r->key == K_TS) r->has_ts = us_to_ns(s, n, &r->ts);
    else if (r->key == K_DUR) r->has_dur = us_to_ns(s, n, &r->dur);
    else if (r->key == K_PID) r->pid_num = parse_int(s, n, &r->pid);
  } else if (r->args_depth && r->depth == r->args_depth) {
    int64_t v;
    if (r->key == K_EXT) r->has_ext = parse_int(s, n, &r->ext);
    else if (r->key == K_BYTES && parse_int(s, n, &v) && v >= 0) r->bytes = (uint64_t)v;
  }
  r->key = K_OTHER;
  return 1;
}

static int cb_scalar(void *ctx) {
  reader *r = ctx;
  if (r->key == K_EVENTS) return bad_events(r);
  r->key = K_OTHER;
  return 1;
}
static int cb_bool(void *ctx, int b) {
  (void)b;
  return cb_scalar(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = cb_scalar,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_key,
    .yajl_end_map = cb_end_map,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end_array,
};

/* One parse over chunks pulled from next(); offset is in the uncompressed text. */
typedef long (*chunk_fn)(void *src, unsigned char *buf, size_t cap, char *err, size_t errlen);

static ft_status parse(ft_stats *st, chunk_fn next, void *src, char *err, size_t errlen) {
  reader r;
  memset(&r, 0, sizeof r);
  r.st = st;
  yajl_handle h = yajl_alloc(&callbacks, NULL, &r);
  if (!h) return FT_ENOMEM;
  /* Names are only counted and re-escaped on output (invalid bytes become U+FFFD
   * there), so UTF-8 validation here would cost time for nothing. */
  yajl_config(h, yajl_dont_validate_strings, 1);
  enum { CHUNK = 1 << 20 };
  unsigned char *buf = malloc(CHUNK);
  ft_status status = buf ? FT_OK : FT_ENOMEM;
  uint64_t offset = 0;
  bool any = false;
  while (!status) {
    long n = next(src, buf, CHUNK, err, errlen);
    if (n < 0) {
      status = FT_EIO;
      break;
    }
    if (!n && !any) {
      snprintf(err, errlen, "empty file");
      status = FT_EPARSE;
      break;
    }
    yajl_status ys = n ? yajl_parse(h, buf, (size_t)n) : yajl_complete_parse(h);
    if (ys != yajl_status_ok) {
      uint64_t at = offset + (n ? yajl_get_bytes_consumed(h) : 0);
      if (r.err[0]) {
        snprintf(err, errlen, "%s at byte %llu", r.err, (unsigned long long)at);
      } else if (!n) {
        snprintf(err, errlen, "truncated JSON (the document ends early) at byte %llu", (unsigned long long)at);
      } else {
        unsigned char *e = yajl_get_error(h, 0, NULL, 0);
        char msg[160];
        snprintf(msg, sizeof msg, "%s", e ? (const char *)e : "parse error");
        if (e) yajl_free_error(h, e);
        msg[strcspn(msg, "\n")] = '\0';
        snprintf(err, errlen, "%s at byte %llu", msg, (unsigned long long)at);
      }
      status = FT_EPARSE;
      break;
    }
    if (!n) break;
    any = true;
    offset += (uint64_t)n;
  }
  if (!status && !r.saw_events) {
    snprintf(err, errlen, "no \"traceEvents\" array: not a Chrome trace");
    status = FT_EPARSE;
  }
  free(buf);
  free(r.name);
  yajl_free(h);
  return status;
}

static long gz_next(void *src, unsigned char *buf, size_t cap, char *err, size_t errlen) {
  gzFile f = src;
  int n = gzread(f, buf, (unsigned)cap);
  int code;
  const char *msg = gzerror(f, &code);
  if (code == Z_BUF_ERROR) { /* the gzip stream ends before its trailer */
    snprintf(err, errlen, "truncated gzip data after %lld bytes of text", (long long)gzoffset(f));
    return -1;
  }
  if (n < 0 || code != Z_OK) {
    snprintf(err, errlen, "%s (%s)", code == Z_ERRNO ? "read error" : "corrupt gzip data", msg);
    return -1;
  }
  return n;
}

ft_status ft_stats_read(ft_stats *st, const char *path, char *err, size_t errlen) {
  gzFile f = gzopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return FT_EIO;
  }
  gzbuffer(f, 1 << 18);
  ft_status s = parse(st, gz_next, f, err, errlen);
  gzclose(f);
  return s;
}

typedef struct mem_src {
  const char *p;
  size_t left;
  z_stream z; /* gzip data: inflated as it is read */
  bool gz, gz_done;
} mem_src;

static long mem_next(void *src, unsigned char *buf, size_t cap, char *err, size_t errlen) {
  (void)err, (void)errlen;
  mem_src *m = src;
  size_t n = m->left < cap ? m->left : cap;
  memcpy(buf, m->p, n);
  m->p += n;
  m->left -= n;
  return (long)n;
}

static long mem_gz_next(void *src, unsigned char *buf, size_t cap, char *err, size_t errlen) {
  mem_src *m = src;
  if (m->gz_done) return 0;
  m->z.next_out = buf;
  m->z.avail_out = (uInt)cap;
  int r = inflate(&m->z, Z_NO_FLUSH);
  long n = (long)(cap - m->z.avail_out);
  if (r == Z_STREAM_END) {
    m->gz_done = true;
  } else if (r == Z_BUF_ERROR && m->z.avail_in == 0 && !n) {
    snprintf(err, errlen, "truncated gzip data after %lu bytes of text", m->z.total_out);
    return -1;
  } else if (r != Z_OK && r != Z_BUF_ERROR) {
    snprintf(err, errlen, "corrupt gzip data (%s)", m->z.msg ? m->z.msg : "inflate failed");
    return -1;
  }
  return n;
}

ft_status ft_stats_read_mem(ft_stats *st, const char *data, size_t len, char *err, size_t errlen) {
  mem_src m;
  memset(&m, 0, sizeof m);
  m.p = data;
  m.left = len;
  if (len >= 2 && (unsigned char)data[0] == 0x1f && (unsigned char)data[1] == 0x8b) {
    /* like gzread, by content: gzip data is inflated on the way */
    if (inflateInit2(&m.z, 15 + 16) != Z_OK) return FT_ENOMEM;
    m.z.next_in = (unsigned char *)data;
    m.z.avail_in = (uInt)len;
    ft_status s = parse(st, mem_gz_next, &m, err, errlen);
    inflateEnd(&m.z);
    return s;
  }
  return parse(st, mem_next, &m, err, errlen);
}

ft_status ft_stats_init(ft_stats *st) {
  memset(st, 0, sizeof *st);
  ft__intern_init(&st->names);
  for (int i = 0; i < FT_STAT_N_SECTIONS; i++) {
    ft__vec_init(&st->rows[i], sizeof(ft_stat_row), 10);
    if (ft__map_init(&st->index[i], 256)) return FT_ENOMEM;
  }
  ft__vec_init(&st->intervals, 3 * sizeof(int64_t), 14);
  if (ft__map_init(&st->ext_device_ns, 1024) || ft__map_init(&st->ext_op, 1024)) return FT_ENOMEM;
  st->first_ns = INT64_MAX;
  st->last_ns = INT64_MIN;
  return FT_OK;
}

void ft_stats_free(ft_stats *st) {
  ft__intern_free(&st->names);
  for (int i = 0; i < FT_STAT_N_SECTIONS; i++) {
    ft__vec_free(&st->rows[i]);
    ft__map_free(&st->index[i]);
  }
  ft__vec_free(&st->intervals);
  ft__map_free(&st->ext_device_ns);
  ft__map_free(&st->ext_op);
}

void ft_stats_finish(ft_stats *st) {
  /* self device time of an op: device events whose External id is one of its
   * calls (the innermost op that launched them); the rest is left unattributed */
  uint64_t unattributed = 0, total = 0;
  for (size_t i = 0; i < st->intervals.len; i++) {
    int64_t *iv = ft__vec_at(&st->intervals, i);
    total += (uint64_t)(iv[2] - iv[1]);
  }
  uint64_t attributed = 0;
  for (size_t i = 0; i < st->ext_device_ns.cap; i++) {
    if (!st->ext_device_ns.used[i]) continue;
    uint64_t *op = ft__map_find(&st->ext_op, st->ext_device_ns.keys[i]);
    if (!op) continue;
    ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_OPS], *op - 1);
    r->total_ns += st->ext_device_ns.vals[i];
    attributed += st->ext_device_ns.vals[i];
  }
  unattributed = total - attributed;
  if (unattributed && st->rows[FT_STAT_OPS].len) {
    ft_stat_row *r = row(st, FT_STAT_OPS, "(no op)", 7, 0);
    if (r) r->total_ns += unattributed;
  }
}

static int cmp_interval(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

size_t ft_stats_busy(ft_stats *st, ft_stat_busy *out, size_t max) {
  /* copy the chunked intervals into one array to sort them */
  size_t n = st->intervals.len, devs = 0;
  int64_t *all = malloc(n * 3 * sizeof *all + 1);
  if (!all) return 0;
  for (size_t i = 0; i < n; i++) memcpy(all + 3 * i, ft__vec_at(&st->intervals, i), 3 * sizeof *all);
  qsort(all, n, 3 * sizeof *all, cmp_interval);
  for (size_t i = 0; i < n;) {
    int64_t dev = all[3 * i], lo = all[3 * i + 1], hi = all[3 * i + 2];
    uint64_t busy = 0;
    for (; i < n && all[3 * i] == dev; i++) {
      if (all[3 * i + 1] > hi) {
        busy += (uint64_t)(hi - lo);
        lo = all[3 * i + 1];
        hi = all[3 * i + 2];
      } else if (all[3 * i + 2] > hi) {
        hi = all[3 * i + 2];
      }
    }
    busy += (uint64_t)(hi - lo);
    if (devs < max) out[devs] = (ft_stat_busy){(uint64_t)dev, busy};
    devs++;
  }
  free(all);
  return devs < max ? devs : max;
}
