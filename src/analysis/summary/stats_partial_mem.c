/* Partial summaries, reading a file's "mem" member (issue 51): its device memory, each value checked. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#define FT__PARTIAL_SHORT_NAMES
#include "stats_partial.h"

/* "mem": {"counts": [events, bad_field, bad_sign, unmatched, over_bound, over_devices], "devs": [DEV...]}
 * DEV: {"dev": [device, device_type, end_alloc, end_res, live_n, live_bytes], "peak_alloc": AT,
 *       "peak_res": AT, "live": [AT...], "allocs": DIST, "frees": DIST}
 * AT: [bytes, ts, step, addr, op, call] (op and call: a string's index + 1, 0 none) */
const char *const ft__pmem_keys[] = {"counts", "devs", NULL};
const char *const ft__pmem_dev_keys[] = {"dev", "peak_alloc", "peak_res", "live", "allocs", "frees", NULL};
enum { MK_COUNTS, MK_DEVS };
enum { MD_DEV, MD_PEAK_ALLOC, MD_PEAK_RES, MD_LIVE, MD_ALLOCS, MD_FREES };

static int push(reader *r, uint8_t kind) {
  if (r->depth == MAX_FRAMES) return fail(r, "nested too deep");
  r->fr[r->depth++] = (frame){.kind = kind, .key = -1};
  return 1;
}

static ft_stat_mem_dev *cur_dev(reader *r) {
  ft_stat_mem *m = &cur_file(r)->mem;
  return &m->devs[m->n_devs - 1];
}

/* Grows *p (n elements of elem bytes) by doubling when n is 0 or a power of two. */
static bool grow(void **p, size_t n, size_t elem) {
  if (n && (n & (n - 1))) return true;
  void *q = realloc(*p, (n ? 2 * n : 1) * elem);
  if (!q) return false;
  *p = q;
  return true;
}

int ft__partial_mem_start(reader *r, frame *f, bool map) {
  ft_stat_mem *m = &cur_file(r)->mem;
  switch (f->kind) {
  case F_FILE: cur_file(r)->mem_kept = true; return push(r, F_MEM);
  case F_MEM:
    if (!map) return push(r, f->key == MK_COUNTS ? F_MEM_COUNTS : F_MEM_DEVS);
    break;
  case F_MEM_DEVS:
    if (!map) break;
    if (m->n_devs == FT_STATS_MAX_DEVICES) return fail(r, "more memory devices than a file keeps");
    if (!grow((void **)&m->devs, m->n_devs, sizeof *m->devs)) return fail(r, "out of memory");
    memset(&m->devs[m->n_devs++], 0, sizeof *m->devs);
    return push(r, F_MEM_DEV);
  case F_MEM_DEV:
    if (map && (f->key == MD_ALLOCS || f->key == MD_FREES)) {
      ft__partial_dist_reset(r);
      return push(r, F_DIST);
    }
    if (map) break;
    if (f->key == MD_DEV) return push(r, F_MEM_NUMS);
    if (f->key == MD_LIVE) return push(r, F_MEM_LIVE);
    if (f->key == MD_PEAK_ALLOC || f->key == MD_PEAK_RES) return push(r, F_MEM_AT);
    break;
  case F_MEM_LIVE: {
    ft_stat_mem_dev *d = cur_dev(r);
    if (map) break;
    if (d->n_live == FT_MEM_KEEP_LIVE) return fail(r, "more live allocations than a summary keeps");
    if (!grow((void **)&d->live, d->n_live, sizeof *d->live)) return fail(r, "out of memory");
    memset(&d->live[d->n_live++], 0, sizeof *d->live);
    return push(r, F_MEM_AT);
  }
  }
  return fail(r, map ? "an object where none belongs" : "an array where none belongs");
}

/* A whole number of at most 64 bits (signed: its magnitude at most 2^63). */
static bool whole(const char *s, size_t n, bool *neg, uint64_t *v) {
  *neg = n && s[0] == '-';
  size_t i = *neg;
  if (i == n || n - i > 20) return false;
  uint64_t x = 0;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    unsigned d = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  *v = x;
  return !*neg || x <= (uint64_t)INT64_MAX + 1;
}

static bool name_of(reader *r, uint64_t v, char **out) {
  if (!v) return true;
  if (v > r->n_strs) return fail(r, "a string index past the strings table"), false;
  if (!(*out = strdup(ft__intern_str(&r->job->total.names, r->strs[v - 1])))) return fail(r, "out of memory"), false;
  return true;
}

int ft__partial_mem_number(reader *r, frame *f, const char *s, size_t n) {
  bool neg;
  uint64_t u;
  if (!whole(s, n, &neg, &u)) return fail(r, "not a whole number in 64 bits");
  int64_t i = neg ? (int64_t)(0 - u) : (int64_t)u;
  bool is_u = !neg, is_i = neg || u <= INT64_MAX;
  ft_stat_mem *m = &cur_file(r)->mem;
  if (f->kind == F_MEM_COUNTS && f->pos < 6 && is_u) {
    uint64_t *c[] = {&m->events, &m->bad_field, &m->bad_sign, &m->unmatched, &m->over_bound, &m->over_devices};
    *c[f->pos] = u;
    return 1;
  }
  if (f->kind == F_MEM_NUMS && f->pos < 6) {
    ft_stat_mem_dev *d = cur_dev(r);
    switch (f->pos) {
    case 0:
      if (!is_i || i < -1 || i > INT32_MAX) return fail(r, "a memory device id is not in [-1, 2^31)");
      d->device = (int32_t)i;
      return 1;
    case 1:
      if (!is_i || i < -1 || i > INT16_MAX) return fail(r, "a memory device type is not in [-1, 2^15)");
      d->device_type = (int16_t)i;
      return 1;
    case 2:
    case 3:
      if (!is_i) break;
      *(f->pos == 2 ? &d->end_alloc : &d->end_res) = i;
      return 1;
    default:
      if (!is_u) break;
      *(f->pos == 4 ? &d->live_n : &d->live_bytes) = u;
      return 1;
    }
  }
  if (f->kind == F_MEM_AT && f->pos < 6) {
    const frame *up = &r->fr[r->depth - 2];
    ft_stat_mem_dev *d = cur_dev(r);
    ft_stat_mem_at *a = up->kind == F_MEM_LIVE     ? &d->live[d->n_live - 1]
                        : up->key == MD_PEAK_ALLOC ? &d->peak_alloc
                                                   : &d->peak_res;
    switch (f->pos) {
    case 0: return is_i ? (a->bytes = i, 1) : fail(r, "a memory size past 2^63");
    case 1: return is_i ? (a->ts = i, 1) : fail(r, "a time past 2^63");
    case 2: return is_i && i >= -1 ? (a->step = i, 1) : fail(r, "a step below -1");
    case 3: return is_u ? (a->addr = u, 1) : fail(r, "a negative address");
    default:
      if (!is_u) break;
      if ((f->pos == 4 ? a->op : a->call) != NULL) return fail(r, "a memory moment's name given twice");
      return name_of(r, u, f->pos == 4 ? &a->op : &a->call);
    }
  }
  return fail(r, "a number where none belongs");
}

int ft__partial_mem_end(reader *r, frame *f) {
  switch (f->kind) {
  case F_MEM_COUNTS:
  case F_MEM_NUMS:
  case F_MEM_AT: return f->pos == 6 ? 1 : fail(r, "a memory record of other than 6 values");
  case F_MEM: return f->seen == 3u ? 1 : fail(r, "a file's memory without its counts and devices");
  case F_MEM_DEV: {
    const ft_stat_mem_dev *d = cur_dev(r);
    if (!(f->seen & 1u << MD_DEV)) return fail(r, "a memory device without its numbers");
    if (d->n_live > d->live_n) return fail(r, "more live allocations listed than are live");
    return 1;
  }
  default: return 1;
  }
}

ft_stat_dist *ft__partial_mem_dist(reader *r, const frame *up) {
  ft_stat_mem_dev *d = cur_dev(r);
  return up->key == MD_ALLOCS ? &d->alloc_sizes : &d->free_sizes;
}
