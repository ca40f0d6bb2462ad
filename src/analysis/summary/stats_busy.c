/* `flagtrace stats` state that grows with the trace: the External id -> op join, each device's busy intervals and their
 * timeline bins. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "stats_internal.h"

/* ---- the External id -> op join and the device table (16 B a slot) ---- */

void ft__join_free(ft_stat_join *j) {
  free(j->keys);
  free(j->vals);
  free(j->used);
  uint64_t probes = j->probes; /* a count over the table's life */
  memset(j, 0, sizeof *j);
  j->probes = probes;
}

static bool join_used(const ft_stat_join *j, size_t i) { return j->used[i >> 3] >> (i & 7) & 1; }

static bool join_grow(ft_stat_join *j) {
  ft_stat_join n = {0};
  n.cap = j->cap ? 2 * j->cap : 64; /* small first: a file of few ids or devices costs little */
  n.keys = malloc(n.cap * sizeof *n.keys);
  n.vals = malloc(n.cap * sizeof *n.vals);
  n.used = calloc(n.cap / 8, 1);
  if (!n.keys || !n.vals || !n.used) {
    ft__join_free(&n);
    return false;
  }
  for (size_t i = 0; i < j->cap; i++)
    if (join_used(j, i)) *ft__join_upsert(&n, j->keys[i]) = j->vals[i];
  n.probes += j->probes;
  ft__join_free(j);
  *j = n;
  return true;
}

/* The slot of key, or the empty slot where it would go (the join's and the device
 * table's). Keyed (keyed_hash.h), so an input cannot choose ids that share one. */
static size_t join_slot(ft_stat_join *j, uint64_t key) {
  size_t i = ft__hash_u64_keyed(key) & (j->cap - 1), probes = 1;
  for (; join_used(j, i) && j->keys[i] != key; probes++) i = (i + 1) & (j->cap - 1);
  j->probes += probes;
  return i;
}

/* The value of key (0 when new); NULL on ENOMEM. Load stays under 3/4. */
uint64_t *ft__join_upsert(ft_stat_join *j, uint64_t key) {
  if ((j->len + 1) * 4 > j->cap * 3 && !join_grow(j)) return NULL;
  size_t i = join_slot(j, key);
  if (!join_used(j, i)) {
    j->used[i >> 3] |= (uint8_t)(1u << (i & 7));
    j->keys[i] = key;
    j->vals[i] = 0;
    j->len++;
  }
  return &j->vals[i];
}

uint64_t *ft__join_find(ft_stat_join *j, uint64_t key) {
  if (!j->cap) return NULL;
  size_t i = join_slot(j, key);
  return join_used(j, i) ? &j->vals[i] : NULL;
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

/* Chunks of 256 intervals (3 KiB), allocated on a device's first event: a trace
 * of many devices with few events each costs little per device, and a long one
 * adds 8 B of chunk pointer per 256 intervals. */
static void ivset_init(ft_stat_ivset *s) {
  ft__vec_init(&s->iv, sizeof(short_span), 8);
  ft__vec_init(&s->longs, sizeof(span), 6);
}

void ft__ivset_free(ft_stat_ivset *s) {
  ft__vec_free(&s->iv);
  ft__vec_free(&s->longs);
}

ft_stat_device *ft__stats_device(ft_stats *st, int64_t id, bool *over) {
  *over = false;
  if (st->n_devices && st->devices[st->last_device].id == id) return &st->devices[st->last_device];
  uint64_t *slot = ft__join_find(&st->device_index, (uint64_t)id);
  if (slot) {
    st->last_device = *slot - 1;
    return &st->devices[*slot - 1];
  }
  if (st->n_devices == FT_STATS_MAX_DEVICES) { /* past the cap: its events are in every report but busy % */
    *over = true;
    return NULL;
  }
  if (st->n_devices == st->cap_devices) {
    size_t cap = st->cap_devices ? 2 * st->cap_devices : 8;
    ft_stat_device *n = realloc(st->devices, cap * sizeof *n);
    if (!n) return NULL;
    st->devices = n;
    st->cap_devices = cap;
  }
  if (!(slot = ft__join_upsert(&st->device_index, (uint64_t)id))) return NULL;
  ft_stat_device *d = &st->devices[st->n_devices++];
  memset(d, 0, sizeof *d);
  d->id = id;
  ivset_init(&d->all);
  ivset_init(&d->copy);
  *slot = st->n_devices;
  st->last_device = st->n_devices - 1;
  return d;
}

bool ft__add_interval(ft_stat_ivset *d, int64_t lo, int64_t hi) {
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
bool ft__device_busy(ft_stat_ivset *d, uint64_t *busy, uint64_t *bins, int64_t t0, uint64_t span_ns) {
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
    else x = iv_get(&d->longs, b++);
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

/* ---- the devices' busy time and timeline bins (ft_stats_busy) ---- */

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
    ok = ft__device_busy(&st->devices[i].all, &busy, bins, st->first_ns, span_ns) &&
         ft__device_busy(&st->devices[i].copy, &copy, bins ? bins + FT_TIMELINE_BINS : NULL, st->first_ns, span_ns);
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

/* ---- for HTA's analyses (stats_hta.c): a set of its own, and two sets' overlap ---- */

void ft__ivset_init(ft_stat_ivset *s) { ivset_init(s); }

/* A set's union as one sorted walk over its two compacted lists. */
typedef struct iv_walk {
  const ft_stat_ivset *s;
  size_t a, b;
  bool have;
  span cur;
} iv_walk;

static bool walk_next(iv_walk *w, span *out) {
  const ft_stat_ivset *d = w->s;
  while (w->a < d->iv.len || w->b < d->longs.len) {
    span x;
    if (w->b >= d->longs.len || (w->a < d->iv.len && iv_less(iv_get(&d->iv, w->a), iv_get(&d->longs, w->b))))
      x = iv_get(&d->iv, w->a++);
    else x = iv_get(&d->longs, w->b++);
    if (w->have && x.lo <= w->cur.hi) {
      if (x.hi > w->cur.hi) w->cur.hi = x.hi;
      continue;
    }
    bool had = w->have;
    *out = w->cur;
    w->cur = x;
    w->have = true;
    if (had) return true;
  }
  if (!w->have) return false;
  *out = w->cur;
  w->have = false;
  return true;
}

bool ft__ivset_overlap(ft_stat_ivset *a, ft_stat_ivset *b, uint64_t *ns) {
  *ns = 0;
  ft_stat_ivset *sets[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    ft_stat_ivset *d = sets[i];
    if (!iv_compact(&d->iv, &d->longs) || !iv_compact(&d->longs, NULL)) return false;
    d->merged = d->iv.len;
    d->longs_merged = d->longs.len;
  }
  iv_walk wa = {a, 0, 0, false, {0, 0}}, wb = {b, 0, 0, false, {0, 0}};
  span x, y;
  bool hx = walk_next(&wa, &x), hy = walk_next(&wb, &y);
  while (hx && hy) { /* two sorted disjoint lists: the one that ends first moves on */
    int64_t lo = x.lo > y.lo ? x.lo : y.lo, hi = x.hi < y.hi ? x.hi : y.hi;
    if (hi > lo) *ns += (uint64_t)hi - (uint64_t)lo;
    if (x.hi < y.hi) hx = walk_next(&wa, &x);
    else hy = walk_next(&wb, &y);
  }
  return true;
}
