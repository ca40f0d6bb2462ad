/* Distributions for stats: exact count/sum/min/max/stddev, median exact up to FT_DIST_EXACT values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

/* Bucket of v: values under 128 have their own; above, 128 per power of two, so
 * a bucket is at most 1/128 of its values wide. */
static uint32_t bucket(uint64_t v) {
  if (v < 128) return (uint32_t)v;
  int e = 63 - __builtin_clzll(v); /* >= 7 */
  return 128 + (uint32_t)(e - 7) * 128 + (uint32_t)((v >> (e - 7)) - 128);
}

/* The middle of bucket i. */
static uint64_t bucket_mid(uint32_t i) {
  if (i < 128) return i;
  uint32_t e = 7 + (i - 128) / 128, m = (i - 128) % 128 + 128;
  uint64_t width = 1ull << (e - 7);
  return ((uint64_t)m << (e - 7)) + width / 2;
}

static bool hist_add(ft_stat_dist *d, uint32_t b, uint32_t count) {
  if (!d->hist) { /* hist and hist_len are set together */
    d->hist = calloc(16, sizeof *d->hist);
    if (!d->hist) return false;
    d->hist_lo = b >= 8 ? b - 8 : 0;
    d->hist_len = 16;
  }
  if (b < d->hist_lo || b >= d->hist_lo + d->hist_len) { /* grow to cover b, with room */
    uint32_t lo = b < d->hist_lo ? b : d->hist_lo,
             hi = b >= d->hist_lo + d->hist_len ? b + 1 : d->hist_lo + d->hist_len;
    uint32_t extra = (hi - lo) / 2;
    lo = b < d->hist_lo ? (lo > extra ? lo - extra : 0) : lo;
    if (b >= d->hist_lo + d->hist_len) hi += extra;
    uint32_t *h = calloc(hi - lo, sizeof *h);
    if (!h) return false;
    memcpy(h + (d->hist_lo - lo), d->hist, d->hist_len * sizeof *h);
    free(d->hist);
    d->hist = h;
    d->hist_lo = lo;
    d->hist_len = hi - lo;
  }
  d->hist[b - d->hist_lo] += count;
  return true;
}

/* Moves the exact values into the histogram. */
static bool to_hist(ft_stat_dist *d) {
  uint64_t n = d->hist ? 0 : d->n;
  if (!d->hist && !hist_add(d, d->n ? bucket(d->vals[0]) : 0, 0)) return false;
  for (uint64_t i = 0; i < n; i++)
    if (!hist_add(d, bucket(d->vals[i]), 1)) return false;
  free(d->vals);
  d->vals = NULL;
  d->vals_cap = 0;
  return true;
}

static void add_moments(ft_stat_dist *d, uint64_t n, uint64_t total, uint64_t mn, uint64_t mx, ft_u128 sumsq) {
  if (!d->n || mn < d->min) d->min = mn;
  if (!d->n || mx > d->max) d->max = mx;
  d->n += n;
  d->total += total;
  d->sumsq += sumsq;
}

bool ft_dist_add(ft_stat_dist *d, uint64_t v) {
  if (!d->hist) {
    if (d->n < FT_DIST_EXACT) {
      if (d->n == d->vals_cap) {
        uint32_t cap = d->vals_cap ? 2 * d->vals_cap : 4;
        uint64_t *p = realloc(d->vals, cap * sizeof *p);
        if (!p) return false;
        d->vals = p;
        d->vals_cap = cap;
      }
      d->vals[d->n] = v;
    } else if (!to_hist(d)) {
      return false;
    }
  }
  if (d->hist && !hist_add(d, bucket(v), 1)) return false;
  add_moments(d, 1, v, v, v, (ft_u128)v * v);
  return true;
}

bool ft_dist_merge(ft_stat_dist *d, const ft_stat_dist *s) {
  if (!s->n) return true;
  if (!d->hist && !s->hist && d->n + s->n <= FT_DIST_EXACT) {
    for (uint64_t i = 0; i < s->n; i++)
      if (!ft_dist_add(d, s->vals[i])) return false;
    return true;
  }
  if (!d->hist && !to_hist(d)) return false;
  if (s->hist) {
    for (uint32_t i = 0; i < s->hist_len; i++)
      if (s->hist[i] && !hist_add(d, s->hist_lo + i, s->hist[i])) return false;
  } else {
    for (uint64_t i = 0; i < s->n; i++)
      if (!hist_add(d, bucket(s->vals[i]), 1)) return false;
  }
  add_moments(d, s->n, s->total, s->min, s->max, s->sumsq);
  return true;
}

void ft_dist_free(ft_stat_dist *d) {
  free(d->vals);
  free(d->hist);
  memset(d, 0, sizeof *d);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

uint64_t ft_dist_median(const ft_stat_dist *d) {
  if (!d->n) return 0;
  /* exact values: at most FT_DIST_EXACT (adds and reads keep it), sorted on the stack,
   * never a median of 0 for want of memory; an even count: the mean of the middle two */
  if (!d->hist) {
    uint64_t v[FT_DIST_EXACT];
    uint64_t n = d->n < FT_DIST_EXACT ? d->n : FT_DIST_EXACT, k = (n - 1) / 2;
    memcpy(v, d->vals, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_u64);
    return n % 2 ? v[k] : v[k] + (v[k + 1] - v[k]) / 2;
  }
  uint64_t k = (d->n - 1) / 2;
  /* the middle of the bucket holding value k (and k + 1 for an even count: the
   * two middle values may lie in different buckets) */
  uint64_t seen = 0, lo = 0;
  bool have_lo = false;
  for (uint32_t i = 0; i < d->hist_len; i++) {
    seen += d->hist[i];
    if (!have_lo && seen > k) {
      lo = bucket_mid(d->hist_lo + i);
      lo = lo < d->min ? d->min : lo > d->max ? d->max : lo;
      have_lo = true;
    }
    if (seen > k + (d->n % 2 == 0)) {
      uint64_t hi = bucket_mid(d->hist_lo + i);
      hi = hi < d->min ? d->min : hi > d->max ? d->max : hi;
      return lo + (hi - lo) / 2;
    }
  }
  return d->max;
}

double ft_dist_stddev(const ft_stat_dist *d) {
  if (d->n < 2) return 0;
  /* n * sumsq - total^2 exactly when it fits 128 bits, else in long double */
  ft_u128 t2 = (ft_u128)d->total * d->total;
  long double num;
  if (d->sumsq <= ~(ft_u128)0 / d->n) num = (long double)(d->n * d->sumsq - t2);
  else num = (long double)d->n * (long double)d->sumsq - (long double)t2;
  if (num < 0) num = 0;
  return (double)sqrtl(num / ((long double)d->n * (long double)(d->n - 1)));
}
