/* Streaming Chrome-trace reader for `flagtrace stats` (yajl callbacks, bounded memory). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>
#ifdef FT_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "deflate.h" /* ISA-L's inflate, loaded at run time (zlib without it) */

#include "stats.h"

/* yajl: a streaming parser in Debian (libyajl-dev) and fast enough for the 1 M
 * events in under a second target (bench/bench_stats.c); json-c and jansson build
 * whole documents in memory, which multi-GB traces cannot afford. */

enum key {
  K_OTHER, K_PH, K_CAT, K_NAME, K_TS, K_DUR, K_PID, K_ARGS, K_EXT, K_BYTES, K_EVENTS,
  K_FLAGTRACE, K_DIST, /* top-level blocks */
  K_RANK, K_TRACER, K_ACTIVITY, K_STATUS, K_DROPPED, K_WINDOW /* keys inside them */
};

typedef struct reader {
  ft_stats *st;
  int depth;
  int events_depth; /* depth of the traceEvents array; events are maps one deeper */
  int ev_depth, args_depth;
  int meta_depth; /* depth of the "flagtrace" or "distributedInfo" map */
  bool saw_events, top_array;
  enum key key;
  char err[256];
  size_t err_back; /* bytes from the last one consumed back to the offending token's start */
  /* the current event */
  char ph[8], cat[40];
  char last_cat[40]; /* the previous event's category and its section */
  int last_sec;
  char *name;
  size_t name_len, name_cap;
  bool has_ts, has_dur, pid_num, has_ext;
  bool bad_time;   /* ts or dur given as something other than a number */
  bool time_range; /* ts or dur beyond +-FT_STATS_MAX_US */
  int64_t ts, dur, pid, ext;
  uint64_t bytes;
} reader;

enum num { NUM_OK, NUM_BAD, NUM_RANGE };

/* "12.345" (us) to ns without floating point, within +-FT_STATS_MAX_US. */
static enum num us_to_ns(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  bool neg = n && s[0] == '-';
  if (neg) i++;
  int64_t whole = 0, frac = 0;
  int frac_digits = 0;
  bool digits = false;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits = true) {
    if (whole > FT_STATS_MAX_US) return NUM_RANGE;
    whole = whole * 10 + (s[i] - '0');
  }
  if (i < n && s[i] == '.') {
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits = true)
      if (frac_digits < 3) frac = frac * 10 + (s[i] - '0'), frac_digits++;
  }
  if (!digits) return NUM_BAD;
  if (i < n) { /* exponent or anything else: go through double */
    char buf[64];
    if (n >= sizeof buf) return NUM_BAD;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (*end || d != d) return NUM_BAD;
    if (d > (double)FT_STATS_MAX_US || d < -(double)FT_STATS_MAX_US) return NUM_RANGE;
    *out = (int64_t)(d * 1000.0 + (d < 0 ? -0.5 : 0.5));
    return NUM_OK;
  }
  if (whole > FT_STATS_MAX_US) return NUM_RANGE;
  while (frac_digits < 3) frac *= 10, frac_digits++;
  *out = (neg ? -1 : 1) * (whole * 1000 + frac);
  return NUM_OK;
}

/* A JSON integer (pid, External id, bytes), or "5.0"; false when it is not one. */
static bool parse_int(const char *s, size_t n, int64_t *out) {
  size_t i = n && s[0] == '-';
  bool neg = i;
  uint64_t v = 0;
  if (i == n) return false;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (i < n && s[i] == '.') /* a whole number written with zeros after the point */
    for (i++; i < n && s[i] == '0'; i++) {
    }
  if (i < n || v > (uint64_t)INT64_MAX) return false;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return true;
}

/* ---- the External id -> op join (16 B a slot) ---- */

/* A value is an op row index with JOIN_OP set, or the device ns of an External id
 * whose op has not been read yet (fewer than 2^63 ns: times are bounded). */
#define JOIN_OP (1ull << 63)

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static void join_free(ft_stat_join *j) {
  free(j->keys);
  free(j->vals);
  free(j->used);
  memset(j, 0, sizeof *j);
}

static bool join_used(const ft_stat_join *j, size_t i) { return j->used[i >> 3] >> (i & 7) & 1; }

static uint64_t *join_upsert(ft_stat_join *j, uint64_t key);

static bool join_grow(ft_stat_join *j) {
  ft_stat_join n = {0};
  n.cap = j->cap ? 2 * j->cap : 1024;
  n.keys = malloc(n.cap * sizeof *n.keys);
  n.vals = malloc(n.cap * sizeof *n.vals);
  n.used = calloc(n.cap / 8, 1);
  if (!n.keys || !n.vals || !n.used) {
    join_free(&n);
    return false;
  }
  for (size_t i = 0; i < j->cap; i++)
    if (join_used(j, i)) *join_upsert(&n, j->keys[i]) = j->vals[i];
  join_free(j);
  *j = n;
  return true;
}

/* The value of key (0 when new); NULL on ENOMEM. Load stays under 3/4. */
static uint64_t *join_upsert(ft_stat_join *j, uint64_t key) {
  if ((j->len + 1) * 4 > j->cap * 3 && !join_grow(j)) return NULL;
  size_t i = mix(key) & (j->cap - 1);
  for (; join_used(j, i); i = (i + 1) & (j->cap - 1))
    if (j->keys[i] == key) return &j->vals[i];
  j->used[i >> 3] |= (uint8_t)(1u << (i & 7));
  j->keys[i] = key;
  j->vals[i] = 0;
  j->len++;
  return &j->vals[i];
}

/* ---- busy intervals per device ---- */

typedef struct span {
  int64_t lo, hi;
} span;

/* Most device events last under 4.3 s: 12 B each; longer ones (and merged busy
 * stretches that grow past it) go to a list of 16-B spans. */
typedef struct __attribute__((packed)) short_span {
  int64_t lo;
  uint32_t len;
} short_span;
_Static_assert(sizeof(short_span) == 12, "a short interval is 12 bytes");

static bool is_short(const ft__vec *v) { return v->elem == sizeof(short_span); }

static span iv_get(const ft__vec *v, size_t i) {
  if (!is_short(v)) return *(const span *)ft__vec_at(v, i);
  short_span s;
  memcpy(&s, ft__vec_at(v, i), sizeof s);
  return (span){s.lo, s.lo + (int64_t)s.len};
}

static void iv_put(ft__vec *v, size_t i, span x) {
  if (!is_short(v)) {
    *(span *)ft__vec_at(v, i) = x;
    return;
  }
  short_span s = {x.lo, (uint32_t)((uint64_t)x.hi - (uint64_t)x.lo)};
  memcpy(ft__vec_at(v, i), &s, sizeof s);
}

static bool fits_short(span x) { return (uint64_t)x.hi - (uint64_t)x.lo <= UINT32_MAX; }

static bool iv_less(span a, span b) { return a.lo < b.lo || (a.lo == b.lo && a.hi < b.hi); }

/* In place (heapsort): a chunked vector never needs a second copy. */
static void iv_sift(ft__vec *v, size_t root, size_t n) {
  for (;;) {
    size_t c = 2 * root + 1;
    if (c >= n) return;
    if (c + 1 < n && iv_less(iv_get(v, c), iv_get(v, c + 1))) c++;
    span r = iv_get(v, root), x = iv_get(v, c);
    if (!iv_less(r, x)) return;
    iv_put(v, root, x);
    iv_put(v, c, r);
    root = c;
  }
}

/* Sorts v (a cheap check first: traces are mostly in time order) and merges
 * overlapping or touching intervals in place; merged stretches too long for a
 * short interval move to longs. False on ENOMEM. */
static bool iv_compact(ft__vec *v, ft__vec *longs) {
  size_t n = v->len, k = 1;
  while (k < n && !iv_less(iv_get(v, k), iv_get(v, k - 1))) k++;
  if (k < n) {
    for (size_t i = n / 2; i-- > 0;) iv_sift(v, i, n);
    for (size_t end = n; end-- > 1;) {
      span a = iv_get(v, 0);
      iv_put(v, 0, iv_get(v, end));
      iv_put(v, end, a);
      iv_sift(v, 0, end);
    }
  }
  size_t w = 0;
  bool have = false, ok = true;
  span cur = {0, 0};
  for (size_t i = 0; i <= n; i++) {
    span x = i < n ? iv_get(v, i) : (span){0, 0};
    if (i < n && have && x.lo <= cur.hi) {
      if (x.hi > cur.hi) cur.hi = x.hi;
      continue;
    }
    if (have) { /* w < i: writes never pass reads */
      if (!longs || fits_short(cur)) {
        iv_put(v, w++, cur);
      } else {
        span *l = ft__vec_push(longs);
        if (l) *l = cur;
        ok &= l != NULL;
      }
    }
    cur = x;
    have = true;
  }
  v->len = w;
  return ok;
}

static void ivset_init(ft_stat_ivset *s) {
  ft__vec_init(&s->iv, sizeof(short_span), 12);
  ft__vec_init(&s->longs, sizeof(span), 8);
}

static void ivset_free(ft_stat_ivset *s) {
  ft__vec_free(&s->iv);
  ft__vec_free(&s->longs);
}

static ft_stat_device *device(ft_stats *st, int64_t id) {
  uint64_t *slot = ft__map_upsert(&st->device_index, (uint64_t)id);
  if (!slot) return NULL;
  if (!*slot) {
    if (st->n_devices == st->cap_devices) {
      size_t cap = st->cap_devices ? 2 * st->cap_devices : 8;
      ft_stat_device *n = realloc(st->devices, cap * sizeof *n);
      if (!n) return NULL;
      st->devices = n;
      st->cap_devices = cap;
    }
    ft_stat_device *d = &st->devices[st->n_devices++];
    memset(d, 0, sizeof *d);
    d->id = id;
    ivset_init(&d->all);
    ivset_init(&d->copy);
    *slot = st->n_devices;
  }
  return &st->devices[*slot - 1];
}

static bool add_interval(ft_stat_ivset *d, int64_t lo, int64_t hi) {
  span x = {lo, hi};
  if (!fits_short(x)) {
    if (d->longs.len >= 256 && d->longs.len >= 2 * d->longs_merged) {
      if (!iv_compact(&d->longs, NULL)) return false;
      d->longs_merged = d->longs.len;
    }
    span *l = ft__vec_push(&d->longs);
    if (l) *l = x;
    return l != NULL;
  }
  if (d->iv.len) { /* in time order and touching the last: extend it */
    span last = iv_get(&d->iv, d->iv.len - 1);
    if (lo >= last.lo && lo <= last.hi) {
      if (hi <= last.hi) return true;
      last.hi = hi;
      if (fits_short(last)) {
        iv_put(&d->iv, d->iv.len - 1, last);
        return true;
      }
    }
  }
  /* merge when the unmerged tail has grown as large as the merged part */
  if (d->iv.len >= 4096 && d->iv.len - d->merged >= d->merged) {
    if (!iv_compact(&d->iv, &d->longs)) return false;
    d->merged = d->iv.len;
  }
  if (!ft__vec_push(&d->iv)) return false;
  iv_put(&d->iv, d->iv.len - 1, x);
  return true;
}

/* Adds the part of [lo, hi) that falls in each of FT_TIMELINE_BINS bins over [t0, t0 + span). */
static void bin_add(uint64_t *bins, int64_t t0, uint64_t span_ns, int64_t lo, int64_t hi) {
  if (!bins || !span_ns) return;
  for (int64_t a = lo; a < hi;) {
    uint64_t off = (uint64_t)a - (uint64_t)t0;
    size_t i = (size_t)((ft_u128)off * FT_TIMELINE_BINS / span_ns);
    if (i >= FT_TIMELINE_BINS) break;
    /* the bin's end, rounded up so every ns lands in exactly one bin */
    uint64_t end_off = (uint64_t)(((ft_u128)(i + 1) * span_ns + FT_TIMELINE_BINS - 1) / FT_TIMELINE_BINS);
    int64_t end = (int64_t)((uint64_t)t0 + end_off); /* within [t0, t0 + span]: fits (spans exceed INT64_MAX) */
    int64_t b = hi < end ? hi : end;
    if (b <= a) b = a + 1;
    bins[i] += (uint64_t)(b - a);
    a = b;
  }
}

/* The union's length of a set's intervals, short and long; with bins, binned too. */
static bool device_busy(ft_stat_ivset *d, uint64_t *busy, uint64_t *bins, int64_t t0, uint64_t span_ns) {
  if (!iv_compact(&d->iv, &d->longs) || !iv_compact(&d->longs, NULL)) return false;
  d->merged = d->iv.len;
  d->longs_merged = d->longs.len;
  size_t a = 0, b = 0;
  bool have = false;
  span cur = {0, 0};
  *busy = 0;
  while (a < d->iv.len || b < d->longs.len) { /* the two sorted lists, merged */
    span x;
    if (b >= d->longs.len || (a < d->iv.len && iv_less(iv_get(&d->iv, a), iv_get(&d->longs, b))))
      x = iv_get(&d->iv, a++);
    else
      x = iv_get(&d->longs, b++);
    if (have && x.lo <= cur.hi) {
      if (x.hi > cur.hi) cur.hi = x.hi;
      continue;
    }
    if (have) {
      *busy += (uint64_t)cur.hi - (uint64_t)cur.lo;
      bin_add(bins, t0, span_ns, cur.lo, cur.hi);
    }
    cur = x;
    have = true;
  }
  if (have) {
    *busy += (uint64_t)cur.hi - (uint64_t)cur.lo;
    bin_add(bins, t0, span_ns, cur.lo, cur.hi);
  }
  return true;
}

static ft_stat_row *row(ft_stats *st, int section, const char *name, size_t len, uint8_t cat) {
  /* a small cache first: names repeat, and comparing is cheaper than hashing a
   * long kernel name (perf: ft__intern was 12 % of a read) */
  uint64_t head = 0, tail = 0; /* a cheap key: the length, the first and last 8 bytes */
  memcpy(&head, name, len < 8 ? len : 8);
  if (len > 8) memcpy(&tail, name + len - 8, 8);
  ft_stat_last *last = &st->last[section][mix(head ^ (tail * 31) ^ len) % FT_STAT_ROW_CACHE];
  if (last->valid && last->cat == cat && ft__intern_len(&st->names, last->name_id) == len &&
      !memcmp(ft__intern_str(&st->names, last->name_id), name, len))
    return ft__vec_at(&st->rows[section], last->index);
  uint32_t id;
  if (ft__intern(&st->names, name, len, &id)) return NULL;
  uint64_t *slot = ft__map_upsert(&st->index[section], (uint64_t)cat << 32 | id);
  if (!slot) return NULL;
  if (!*slot) {
    ft_stat_row *r = ft__vec_push(&st->rows[section]);
    if (!r) return NULL;
    r->name_id = id;
    r->cat = cat;
    r->comm = section == FT_STAT_KERNELS && ft_stats_is_comm(ft__intern_str(&st->names, id));
    *slot = st->rows[section].len;
  }
  *last = (ft_stat_last){true, cat, id, *slot - 1};
  return ft__vec_at(&st->rows[section], *slot - 1);
}

bool ft_stats_is_comm(const char *name) {
  return strcasestr(name, "nccl") || strcasestr(name, "hccl") || strcasestr(name, "rccl");
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

/* The section of a complete event's category, including older kineto spellings
 * (Runtime, Memcpy, Memset, Operator) and MTIA's. */
enum sec {
  SEC_UNKNOWN, SEC_IGNORED, SEC_KERNEL, SEC_MEMCPY, SEC_MEMSET, SEC_RUNTIME, SEC_DRIVER, SEC_OP, SEC_RANGE,
  SEC_GPU_RANGE
};

/* kineto's activity types (libkineto ActivityType.cpp) and their older
 * spellings; those that are not device work or calls are read and ignored, any
 * other category is counted and named in one line. */
static enum sec section_of(const char *c) {
  static const struct {
    const char *cat;
    enum sec sec;
  } cats[] = {
      {"kernel", SEC_KERNEL},         {"mtia_ccp_events", SEC_KERNEL},      {"gpu_memcpy", SEC_MEMCPY},
      {"memcpy", SEC_MEMCPY},         {"gpu_memset", SEC_MEMSET},           {"memset", SEC_MEMSET},
      {"cuda_runtime", SEC_RUNTIME},  {"privateuse1_runtime", SEC_RUNTIME}, {"runtime", SEC_RUNTIME},
      {"mtia_runtime", SEC_RUNTIME},  {"xpu_runtime", SEC_RUNTIME},         {"glow_runtime", SEC_RUNTIME},
      {"cuda_driver", SEC_DRIVER},    {"privateuse1_driver", SEC_DRIVER},   {"xpu_driver", SEC_DRIVER},
      {"cpu_op", SEC_OP},             {"operator", SEC_OP},                 {"hpu_op", SEC_OP},
      {"user_annotation", SEC_RANGE}, {"gpu_user_annotation", SEC_GPU_RANGE},
      {"python_function", SEC_IGNORED}, {"python", SEC_IGNORED},            {"overhead", SEC_IGNORED},
      {"cuda_sync", SEC_IGNORED},     {"cpu_instant_event", SEC_IGNORED},   {"cuda_profiler_range", SEC_IGNORED},
      {"trace", SEC_IGNORED},         {"fwdbwd", SEC_IGNORED},              {"ac2g", SEC_IGNORED},
      {"mtia_insight", SEC_IGNORED},  {"external_correlation", SEC_IGNORED}, {"collective_comm", SEC_IGNORED},
      {"mtia_counters", SEC_IGNORED},
  };
  for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++)
    if (!strcasecmp(c, cats[i].cat)) return cats[i].sec;
  return SEC_UNKNOWN;
}

static bool count_unknown(ft_stats *st, const char *cat) {
  uint32_t id;
  if (ft__intern(&st->names, *cat ? cat : "(none)", *cat ? strlen(cat) : 6, &id)) return false;
  uint64_t *n = ft__map_upsert(&st->unknown_cats, id);
  if (!n) return false;
  ++*n;
  st->skipped.unknown_cat++;
  return true;
}

/* Keeps the trace_limit earliest device events: a max-heap by ts. */
static bool trace_keep(ft_stats *st, const ft_stat_event *e) {
  ft_stat_event *h = st->trace;
  size_t n = st->n_trace, i;
  if (n == st->trace_limit) {
    if (e->ts >= h[0].ts) return true;
    i = 0; /* replace the latest, sift down */
    for (;;) {
      size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && h[c + 1].ts > h[c].ts) c++;
      if (h[c].ts <= e->ts) break;
      h[i] = h[c];
      i = c;
    }
    h[i] = *e;
    return true;
  }
  if (!h) {
    h = st->trace = malloc(st->trace_limit * sizeof *h);
    if (!h) return false;
  }
  for (i = st->n_trace++; i && h[(i - 1) / 2].ts < e->ts; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
  h[i] = *e;
  return true;
}

/* Device time of External id ext: to its op when read, else held until it is. */
static bool attribute(ft_stats *st, bool has_ext, int64_t ext, uint64_t ns) {
  st->device_ns += ns;
  if (!has_ext) return true;
  uint64_t *v = join_upsert(&st->ext_op, (uint64_t)ext);
  if (!v) return false;
  if (*v & JOIN_OP) {
    ((ft_stat_row *)ft__vec_at(&st->rows[FT_STAT_OPS], *v & ~JOIN_OP))->self_ns += ns;
    st->attributed_ns += ns;
  } else {
    *v += ns; /* the sum of a file's device times stays below 2^63: times are bounded */
  }
  return true;
}

static bool process_event(reader *r) {
  ft_stats *st = r->st;
  st->events++;
  if (strcmp(r->ph, "X")) return true;
  if (r->time_range) {
    st->skipped.time_range++;
    return true;
  }
  if (r->bad_time || !r->has_ts) {
    st->skipped.bad_time++;
    return true;
  }
  int64_t dur = r->has_dur && r->dur > 0 ? r->dur : 0; /* both within +-4e18: the sum fits */
  if (st->first_ns > r->ts) st->first_ns = r->ts;
  if (st->last_ns < r->ts + dur) st->last_ns = r->ts + dur;
  const char *name = r->name ? r->name : "";
  enum sec sec;
  if (!strcmp(r->cat, r->last_cat)) { /* categories repeat: skip the table's scan */
    sec = (enum sec)r->last_sec;
  } else {
    sec = section_of(r->cat);
    memcpy(r->last_cat, r->cat, sizeof r->cat);
    r->last_sec = (int)sec;
  }
  ft_stat_row *row_p = NULL;
  switch (sec) {
  case SEC_IGNORED: return true;
  case SEC_UNKNOWN: return count_unknown(st, r->cat);
  case SEC_KERNEL: row_p = row(st, FT_STAT_KERNELS, name, r->name_len, 0); break;
  case SEC_MEMCPY:
  case SEC_MEMSET:
    row_p = row(st, FT_STAT_MEMORY, name, r->name_len, sec == SEC_MEMSET ? FT_STAT_CAT_MEMSET : FT_STAT_CAT_MEMCPY);
    if (row_p && !ft_dist_add(&row_p->b, r->bytes)) return false;
    break;
  case SEC_RUNTIME:
  case SEC_DRIVER:
    row_p = row(st, FT_STAT_API, name, r->name_len, sec == SEC_DRIVER ? FT_STAT_CAT_DRIVER : FT_STAT_CAT_RUNTIME);
    break;
  case SEC_GPU_RANGE: /* a projection: not device work of its own (busy % counts its kernels) */
    row_p = row(st, FT_STAT_GPU_RANGES, name, r->name_len, 0);
    return row_p && ft_dist_add(&row_p->t, (uint64_t)dur);
  case SEC_RANGE:
    row_p = row(st, FT_STAT_RANGES, name, r->name_len, 0);
    if (!row_p || !ft_dist_add(&row_p->t, (uint64_t)dur)) return false;
    __attribute__((fallthrough)); /* a range is also an op (self device time) */
  case SEC_OP: {
    ft_stat_row *op = row(st, FT_STAT_OPS, name, op_name_len(name, r->name_len), 0);
    if (!op) return false;
    op->calls++;
    if (!r->has_ext) return true;
    uint64_t *v = join_upsert(&st->ext_op, (uint64_t)r->ext);
    if (!v) return false;
    if (!(*v & JOIN_OP)) { /* device work that came first */
      op->self_ns += *v;
      st->attributed_ns += *v;
    }
    *v = JOIN_OP | (ft__map_find(&st->index[FT_STAT_OPS], op->name_id)[0] - 1);
    return true;
  }
  }
  if (!row_p || !ft_dist_add(&row_p->t, (uint64_t)dur)) return false;
  if (sec == SEC_RUNTIME || sec == SEC_DRIVER) return true;
  int64_t dev = r->pid_num ? r->pid : -1;
  ft_stat_device *d = device(st, dev);
  if (!d || !attribute(st, r->has_ext, r->ext, (uint64_t)dur) || !add_interval(&d->all, r->ts, r->ts + dur))
    return false;
  if (st->timeline && sec != SEC_KERNEL && !add_interval(&d->copy, r->ts, r->ts + dur)) return false;
  if (st->trace_limit) {
    ft_stat_event e = {r->ts, dur, dev, r->bytes, row_p->name_id, 0, (uint8_t)(sec == SEC_MEMCPY ? 1 : sec == SEC_MEMSET)};
    if (sec == SEC_MEMSET) e.kind = 2;
    return trace_keep(st, &e);
  }
  return true;
}

/* ts or dur given as a string, null, list...: the event is skipped and counted. */
static void non_number(reader *r) {
  if (r->ev_depth && r->depth == r->ev_depth && (r->key == K_TS || r->key == K_DUR)) r->bad_time = true;
}

static int cb_start_map(void *ctx) {
  reader *r = ctx;
  non_number(r);
  r->depth++;
  if (r->depth == 2 && (r->key == K_FLAGTRACE || r->key == K_DIST)) {
    r->meta_depth = 2;
    if (r->key == K_FLAGTRACE) r->st->meta.has_flagtrace = true;
  }
  if (r->events_depth && r->depth == r->events_depth + 1) {
    r->ev_depth = r->depth;
    r->ph[0] = r->cat[0] = '\0';
    r->name_len = 0;
    if (r->name) r->name[0] = '\0';
    r->has_ts = r->has_dur = r->pid_num = r->has_ext = r->bad_time = r->time_range = false;
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
  } else if (r->depth == r->meta_depth) {
    r->meta_depth = 0;
  }
  r->depth--;
  r->key = K_OTHER;
  return 1;
}

static int cb_start_array(void *ctx) {
  reader *r = ctx;
  non_number(r);
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
    if (IS("traceEvents")) {
      if (r->saw_events) { /* summing both would double the totals: refused */
        snprintf(r->err, sizeof r->err, "duplicate \"traceEvents\" key");
        r->err_back = n + 1; /* point at the key's opening quote */
        return 0;
      }
      r->key = K_EVENTS;
    } else if (IS("flagtrace")) {
      r->key = K_FLAGTRACE;
    } else if (IS("distributedInfo")) {
      r->key = K_DIST;
    }
  } else if (r->meta_depth && r->depth == r->meta_depth) {
    if (IS("rank")) r->key = K_RANK;
    else if (IS("tracer")) r->key = K_TRACER;
    else if (IS("device_activity")) r->key = K_ACTIVITY;
    else if (IS("device_status")) r->key = K_STATUS;
    else if (IS("dropped_records")) r->key = K_DROPPED;
    else if (IS("window_discarded")) r->key = K_WINDOW;
  } else if (r->ev_depth && r->depth == r->ev_depth) {
    if (IS("ph")) r->key = K_PH;
    else if (IS("cat")) r->key = K_CAT;
    else if (IS("name")) r->key = K_NAME;
    else if (IS("ts")) r->key = K_TS;
    else if (IS("dur")) r->key = K_DUR;
    else if (IS("pid")) r->key = K_PID;
    else if (IS("args")) r->key = K_ARGS;
  } else if (r->args_depth && r->depth == r->args_depth) {
    if (IS("External id") || IS("external id")) r->key = K_EXT; /* the second: older kineto */
    else if (IS("bytes")) r->key = K_BYTES;
  }
#undef IS
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
  if (r->meta_depth && r->depth == r->meta_depth && (r->key == K_TRACER || r->key == K_STATUS)) {
    if (r->key == K_TRACER) copy_cut(r->st->meta.tracer, sizeof r->st->meta.tracer, s, n);
    else copy_cut(r->st->meta.device_status, sizeof r->st->meta.device_status, s, n);
  } else if (r->ev_depth && r->depth == r->ev_depth) {
    if (r->key == K_PH || r->key == K_CAT) {
      if (r->key == K_PH) copy_cut(r->ph, sizeof r->ph, s, n);
      else copy_cut(r->cat, sizeof r->cat, s, n);
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
    if (r->key == K_TS || r->key == K_DUR) {
      enum num v = us_to_ns(s, n, r->key == K_TS ? &r->ts : &r->dur);
      if (v == NUM_OK) *(r->key == K_TS ? &r->has_ts : &r->has_dur) = true;
      else if (v == NUM_RANGE) r->time_range = true;
      else r->bad_time = true;
    } else if (r->key == K_PID) r->pid_num = parse_int(s, n, &r->pid);
  } else if (r->meta_depth && r->depth == r->meta_depth) {
    int64_t v;
    ft_stat_meta *m = &r->st->meta;
    if (parse_int(s, n, &v) && v >= 0) {
      if (r->key == K_RANK) m->rank = v;
      else if (r->key == K_DROPPED) m->dropped_records = (uint64_t)v;
      else if (r->key == K_WINDOW) m->window_discarded = (uint64_t)v;
    }
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
  non_number(r);
  r->key = K_OTHER;
  return 1;
}
static int cb_bool(void *ctx, int b) {
  reader *r = ctx;
  if (r->meta_depth && r->depth == r->meta_depth && r->key == K_ACTIVITY) r->st->meta.device_activity = b != 0;
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

/* One parse over chunks pulled from next() (the chunk stays valid until the next
 * call); offset is in the uncompressed text. */
typedef long (*chunk_fn)(void *src, const unsigned char **data, char *err, size_t errlen);

static ft_status parse(ft_stats *st, chunk_fn next, void *src, char *err, size_t errlen) {
  reader r;
  memset(&r, 0, sizeof r);
  r.st = st;
  yajl_handle h = yajl_alloc(&callbacks, NULL, &r);
  if (!h) return FT_ENOMEM;
  /* Names are only counted and re-escaped on output (invalid bytes become U+FFFD
   * there), so UTF-8 validation here would cost time for nothing. */
  yajl_config(h, yajl_dont_validate_strings, 1);
  ft_status status = FT_OK;
  uint64_t offset = 0;
  bool any = false;
  while (!status) {
    const unsigned char *buf = NULL;
    long n = next(src, &buf, err, errlen);
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
    if (ys != yajl_status_ok && !n && r.top_array && r.depth == 1 && !r.err[0]) {
      /* The JSON Array Format may end without its "]" (a process that died
       * mid-trace): every event read so far counts. */
      break;
    }
    if (ys != yajl_status_ok) {
      /* the offending byte itself: the last one yajl consumed (0-based) */
      size_t used = n ? yajl_get_bytes_consumed(h) : 0;
      uint64_t at = offset + (used ? used - 1 : 0);
      at = at >= r.err_back ? at - r.err_back : 0;
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
  free(r.name);
  yajl_free(h);
  /* The External id join is per file: ids restart in every rank's trace. */
  join_free(&st->ext_op);
  return status;
}

/* Input bytes from a file or from memory, inflated when they start with gzip's
 * magic. Concatenated gzip members are read in turn (gzip(1) writes them);
 * anything else after the last member is refused, not ignored. */
typedef struct src {
  FILE *f;
  const unsigned char *mem; /* memory input, or the file's buffer */
  size_t left;              /* unread bytes at mem */
  unsigned char *fbuf;
  bool eof;
  uint64_t raw_read; /* compressed bytes taken so far */
  bool gz, gz_member_done;
  uint64_t total_out; /* text bytes inflated */
  z_stream z;
#ifdef FT_HAVE_ISAL
  /* ISA-L's inflate, ~4x zlib's (README, bench_stats --split), when libisal loads */
  const ft__isal_inflate_api *isal_api;
  struct inflate_state *isal;
#endif
  unsigned char *out; /* the chunk handed to the parser (single-threaded reads) */
} src;

enum { RAW_CHUNK = 1 << 18, CHUNK = 1 << 20 };

static bool gz_init(src *s) {
#ifdef FT_HAVE_ISAL
  if ((s->isal_api = ft__isal_inflate()) != NULL) {
    s->isal = malloc(sizeof *s->isal);
    if (!s->isal) return false;
    s->isal_api->init(s->isal);
    s->isal->crc_flag = ISAL_GZIP; /* header parsed, CRC and length checked */
    return true;
  }
#endif
  return inflateInit2(&s->z, 15 + 16) == Z_OK;
}

static void gz_end(src *s) {
#ifdef FT_HAVE_ISAL
  if (s->isal_api) {
    free(s->isal);
    return;
  }
#endif
  inflateEnd(&s->z);
}

static bool gz_reset(src *s) {
#ifdef FT_HAVE_ISAL
  if (s->isal_api) {
    s->isal_api->reset(s->isal);
    s->isal->crc_flag = ISAL_GZIP;
    return true;
  }
#endif
  return inflateReset(&s->z) == Z_OK;
}

/* Inflates from s->mem into out; *used input bytes taken. 1 at a member's end,
 * 0 for more, -1 on corrupt data (err set). */
static int gz_step(src *s, unsigned char *out, size_t *out_left, size_t *used, char *err, size_t errlen) {
  uint32_t in = (uint32_t)(s->left < UINT32_MAX ? s->left : UINT32_MAX);
#ifdef FT_HAVE_ISAL
  if (s->isal_api) {
    struct inflate_state *z = s->isal;
    z->next_in = (uint8_t *)s->mem;
    z->avail_in = in;
    z->next_out = out;
    z->avail_out = (uint32_t)*out_left;
    int r = s->isal_api->inflate(z);
    *used = in - z->avail_in;
    *out_left = z->avail_out;
    if (r < 0) {
      snprintf(err, errlen, "corrupt gzip data (%s)",
               r == ISAL_INCORRECT_CHECKSUM ? "incorrect data check"
               : r == ISAL_INVALID_WRAPPER  ? "incorrect header"
                                            : "invalid deflate data");
      return -1;
    }
    return z->block_state == ISAL_BLOCK_FINISH;
  }
#endif
  s->z.next_in = (unsigned char *)s->mem;
  s->z.avail_in = in;
  s->z.next_out = out;
  s->z.avail_out = (uInt)*out_left;
  int r = inflate(&s->z, Z_NO_FLUSH);
  *used = in - s->z.avail_in;
  *out_left = s->z.avail_out;
  if (r != Z_OK && r != Z_BUF_ERROR && r != Z_STREAM_END) {
    snprintf(err, errlen, "corrupt gzip data (%s)", s->z.msg ? s->z.msg : "inflate failed");
    return -1;
  }
  return r == Z_STREAM_END;
}

/* Makes unread raw bytes available; false at the end of input or on a read error. */
static bool raw_fill(src *s, char *err, size_t errlen, bool *failed) {
  if (s->left) return true;
  if (!s->f || s->eof) return false;
  size_t n = fread(s->fbuf, 1, RAW_CHUNK, s->f);
  if (n < RAW_CHUNK) {
    if (ferror(s->f)) {
      snprintf(err, errlen, "read error (%s)", strerror(errno));
      *failed = true;
      return false;
    }
    s->eof = true;
  }
  s->mem = s->fbuf;
  s->left = n;
  return n > 0;
}

static long src_next(void *p, unsigned char *buf, size_t cap, char *err, size_t errlen) {
  src *s = p;
  bool failed = false;
  if (!s->gz) {
    if (!raw_fill(s, err, errlen, &failed)) return failed ? -1 : 0;
    size_t n = s->left < cap ? s->left : cap;
    memcpy(buf, s->mem, n);
    s->mem += n;
    s->left -= n;
    return (long)n;
  }
  size_t out_left = cap;
  while (out_left == cap) {
    if (!raw_fill(s, err, errlen, &failed)) {
      if (failed) return -1;
      if (s->gz_member_done) return 0;
      snprintf(err, errlen, "truncated gzip data after %llu bytes of text", (unsigned long long)s->total_out);
      return -1;
    }
    if (s->gz_member_done) { /* more bytes after a member: another member, or garbage */
      if (s->left < 2 && s->f && !s->eof) { /* the magic straddles a read: keep one byte */
        unsigned char c = s->mem[0];
        s->fbuf[0] = c;
        size_t n = fread(s->fbuf + 1, 1, RAW_CHUNK - 1, s->f);
        if (n < RAW_CHUNK - 1) s->eof = true;
        s->mem = s->fbuf;
        s->left = n + 1;
      }
      if (s->left < 2 || s->mem[0] != 0x1f || s->mem[1] != 0x8b) {
        snprintf(err, errlen, "trailing garbage after the gzip data at compressed byte %llu",
                 (unsigned long long)s->raw_read);
        return -1;
      }
      if (!gz_reset(s)) return -1;
      s->gz_member_done = false;
    }
    size_t used, before = out_left;
    int r = gz_step(s, buf + (cap - out_left), &out_left, &used, err, errlen);
    s->mem += used;
    s->left -= used;
    s->raw_read += used;
    s->total_out += before - out_left;
    if (r < 0) return -1;
    s->gz_member_done = r == 1;
  }
  return (long)(cap - out_left);
}

static long sync_next(void *p, const unsigned char **data, char *err, size_t errlen) {
  src *s = p;
  *data = s->out;
  return src_next(s, s->out, CHUNK, err, errlen);
}

/* Reading (and inflating) on a second thread while the parser works: a ring of
 * PIPE_SLOTS chunks, so the parse waits only when inflating is the slower. */
enum { PIPE_SLOTS = 4 };
typedef struct pipe {
  src *s;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned char *buf[PIPE_SLOTS];
  long len[PIPE_SLOTS];
  size_t head, count; /* the oldest filled slot; filled slots, the one the parser holds included */
  bool held, stop;
  char err[256]; /* the reader's error, for the slot whose len is -1 */
} pipe_t;

static void *pipe_fill(void *p) {
  pipe_t *q = p;
  for (size_t tail = 0;; tail = (tail + 1) % PIPE_SLOTS) {
    pthread_mutex_lock(&q->mu);
    while (q->count == PIPE_SLOTS && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
    bool stop = q->stop;
    pthread_mutex_unlock(&q->mu);
    if (stop) return NULL;
    long n = src_next(q->s, q->buf[tail], CHUNK, q->err, sizeof q->err);
    pthread_mutex_lock(&q->mu);
    q->len[tail] = n;
    q->count++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (n <= 0) return NULL;
  }
}

static long pipe_next(void *p, const unsigned char **data, char *err, size_t errlen) {
  pipe_t *q = p;
  pthread_mutex_lock(&q->mu);
  if (q->held) { /* the parser is done with the previous chunk */
    q->head = (q->head + 1) % PIPE_SLOTS;
    q->count--;
    q->held = false;
    pthread_cond_broadcast(&q->cv);
  }
  while (!q->count) pthread_cond_wait(&q->cv, &q->mu);
  long n = q->len[q->head];
  *data = q->buf[q->head];
  q->held = n > 0;
  pthread_mutex_unlock(&q->mu);
  if (n < 0) snprintf(err, errlen, "%s", q->err);
  return n;
}

/* Parses s with its reading on a second thread; single-threaded when one cannot start. */
static ft_status parse_piped(ft_stats *st, src *s, char *err, size_t errlen) {
  pipe_t q;
  memset(&q, 0, sizeof q);
  q.s = s;
  unsigned char *mem = malloc((size_t)PIPE_SLOTS * CHUNK);
  pthread_t th;
  if (!mem || pthread_mutex_init(&q.mu, NULL)) {
    free(mem);
    return parse(st, sync_next, s, err, errlen);
  }
  pthread_cond_init(&q.cv, NULL);
  for (int i = 0; i < PIPE_SLOTS; i++) q.buf[i] = mem + (size_t)i * CHUNK;
  ft_status r;
  if (pthread_create(&th, NULL, pipe_fill, &q)) {
    r = parse(st, sync_next, s, err, errlen);
  } else {
    r = parse(st, pipe_next, &q, err, errlen);
    pthread_mutex_lock(&q.mu); /* the parse may stop early (an error): stop the reader */
    q.stop = true;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    pthread_join(th, NULL);
  }
  pthread_cond_destroy(&q.cv);
  pthread_mutex_destroy(&q.mu);
  free(mem);
  return r;
}

/* Reads from s after looking at its first bytes for gzip's magic. */
static ft_status read_src(ft_stats *st, src *s, char *err, size_t errlen) {
  bool failed = false;
  if (raw_fill(s, err, errlen, &failed) && s->left >= 2 && s->mem[0] == 0x1f && s->mem[1] == 0x8b) {
    if (!gz_init(s)) return FT_ENOMEM;
    s->gz = true;
  }
  ft_status r;
  if (failed) {
    r = FT_EIO;
  } else if (s->f) { /* a file: read and inflated on a second thread */
    r = parse_piped(st, s, err, errlen);
  } else {
    s->out = malloc(CHUNK);
    r = s->out ? parse(st, sync_next, s, err, errlen) : FT_ENOMEM;
    free(s->out);
  }
  if (s->gz) gz_end(s);
  return r;
}

ft_status ft_stats_read(ft_stats *st, const char *path, char *err, size_t errlen) {
  src s;
  memset(&s, 0, sizeof s);
  bool std_in = !strcmp(path, "-");
  s.f = std_in ? stdin : fopen(path, "rb");
  if (!s.f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return FT_EIO;
  }
  s.fbuf = malloc(RAW_CHUNK);
  ft_status r = s.fbuf ? read_src(st, &s, err, errlen) : FT_ENOMEM;
  free(s.fbuf);
  if (!std_in) fclose(s.f);
  return r;
}

ft_status ft_stats_read_mem(ft_stats *st, const char *data, size_t len, char *err, size_t errlen) {
  src s;
  memset(&s, 0, sizeof s);
  s.mem = (const unsigned char *)data;
  s.left = len;
  return read_src(st, &s, err, errlen);
}

ft_status ft_stats_init(ft_stats *st) {
  memset(st, 0, sizeof *st);
  ft__intern_init(&st->names);
  for (int i = 0; i < FT_STAT_N_SECTIONS; i++) {
    ft__vec_init(&st->rows[i], sizeof(ft_stat_row), 10);
    if (ft__map_init(&st->index[i], 256)) return FT_ENOMEM;
  }
  if (ft__map_init(&st->device_index, 8) || ft__map_init(&st->unknown_cats, 8)) return FT_ENOMEM;
  st->meta.rank = -1;
  st->meta.device_activity = -1;
  st->first_ns = INT64_MAX;
  st->last_ns = INT64_MIN;
  return FT_OK;
}

void ft_stats_free(ft_stats *st) {
  ft__intern_free(&st->names);
  for (int i = 0; i < FT_STAT_N_SECTIONS; i++) {
    for (size_t k = 0; k < st->rows[i].len; k++) {
      ft_stat_row *r = ft__vec_at(&st->rows[i], k);
      ft_dist_free(&r->t);
      ft_dist_free(&r->b);
    }
    ft__vec_free(&st->rows[i]);
    ft__map_free(&st->index[i]);
  }
  join_free(&st->ext_op);
  ft__map_free(&st->device_index);
  ft__map_free(&st->unknown_cats);
  for (size_t i = 0; i < st->n_devices; i++) {
    ivset_free(&st->devices[i].all);
    ivset_free(&st->devices[i].copy);
  }
  free(st->devices);
  free(st->trace);
}

void ft_stats_finish(ft_stats *st) {
  /* self device time of an op: device events whose External id is one of its
   * calls (the innermost op that launched them); the rest is left unattributed */
  uint64_t unattributed = st->device_ns - st->attributed_ns;
  if (unattributed && st->rows[FT_STAT_OPS].len) {
    ft_stat_row *r = row(st, FT_STAT_OPS, "(no op)", 7, 0);
    if (r) r->self_ns += unattributed;
  }
}

uint64_t ft_stats_span(const ft_stats *st) {
  /* both ends lie within +-8e18 ns: the difference fits unsigned */
  return st->last_ns > st->first_ns ? (uint64_t)st->last_ns - (uint64_t)st->first_ns : 0;
}

static int by_device(const void *a, const void *b) {
  const ft_stat_busy *x = a, *y = b;
  return (x->device > y->device) - (x->device < y->device);
}

ft_stat_busy *ft_stats_busy(ft_stats *st, size_t *n) {
  *n = 0;
  if (!st->n_devices) return NULL;
  ft_stat_busy *out = malloc(st->n_devices * sizeof *out);
  if (!out) {
    *n = SIZE_MAX;
    return NULL;
  }
  memset(out, 0, st->n_devices * sizeof *out);
  uint64_t span_ns = ft_stats_span(st);
  uint64_t *bins = st->timeline ? malloc(2 * FT_TIMELINE_BINS * sizeof *bins) : NULL;
  bool ok = !st->timeline || bins;
  for (size_t i = 0; ok && i < st->n_devices; i++) {
    uint64_t busy, copy;
    if (bins) memset(bins, 0, 2 * FT_TIMELINE_BINS * sizeof *bins);
    ok = device_busy(&st->devices[i].all, &busy, bins, st->first_ns, span_ns) &&
         device_busy(&st->devices[i].copy, &copy, bins ? bins + FT_TIMELINE_BINS : NULL, st->first_ns, span_ns);
    out[i] = (ft_stat_busy){st->devices[i].id, busy, NULL, NULL};
    if (ok && bins) { /* per mille of each bin's width */
      out[i].busy_bins = malloc(2 * FT_TIMELINE_BINS * sizeof *out[i].busy_bins);
      ok = out[i].busy_bins != NULL;
      for (size_t k = 0; ok && k < 2 * FT_TIMELINE_BINS; k++) {
        uint64_t w = span_ns / FT_TIMELINE_BINS + 1, v = bins[k] * 1000 / w;
        out[i].busy_bins[k] = (uint32_t)(v > 1000 ? 1000 : v);
      }
      if (ok) out[i].copy_bins = out[i].busy_bins + FT_TIMELINE_BINS;
    }
  }
  free(bins);
  if (!ok) {
    ft_stats_busy_free(out, st->n_devices);
    *n = SIZE_MAX;
    return NULL;
  }
  qsort(out, st->n_devices, sizeof *out, by_device);
  *n = st->n_devices;
  return out;
}

void ft_stats_busy_free(ft_stat_busy *b, size_t n) {
  for (size_t i = 0; b && i < n; i++) free(b[i].busy_bins);
  free(b);
}
