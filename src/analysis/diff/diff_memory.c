/* `flagtrace diff`'s memory report: each device's peaks and each op's self device memory, A vs B (issue 51). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "stats_memory.h"

static const ft_col mem_cols[] = {{"what", "What", COL_STR, -14},   {"device", "Device", COL_STR, -14},
                                  {"a_bytes", "A(B)", COL_I64, 14}, {"b_bytes", "B(B)", COL_I64, 14},
                                  {"ratio", "B/A", COL_F3, 8},      {"delta_bytes", "Delta(B)", COL_I64, 14},
                                  {"name", "Name", COL_STR, 0}};
enum { C_WHAT, C_DEV, C_A, C_B, C_RATIO, C_DELTA, C_NAME };

#define DEV_NAME 32

/* A device's peaks on one side: the largest over its files (ranks). */
typedef struct dpeak {
  int16_t type;
  int32_t device;
  int64_t alloc[2], res[2];
  bool has[2];
} dpeak;

static int by_device(const void *x, const void *y) {
  const dpeak *a = x, *b = y;
  if (a->type != b->type) return a->type < b->type ? -1 : 1;
  return a->device < b->device ? -1 : a->device > b->device;
}

static bool has_memory(const ft_stat_job *j) {
  if (j->total.mem_events[0] || j->total.mem_events[1]) return true;
  for (size_t f = 0; f < j->n_files; f++)
    if (j->files[f].mem.n_devs) return true;
  return false;
}

static void put_i64(ft_report *rep, int j, double v) {
  rep->cells[rep->n_rows * (size_t)rep->n_cols + (size_t)j].i = (int64_t)llround(v);
}

static void row(ft_report *rep, const char *what, const char *dev, double a, double b, const char *name) {
  ft__diff_str(rep, C_WHAT, what);
  ft__diff_str(rep, C_DEV, dev);
  put_i64(rep, C_A, a);
  put_i64(rep, C_B, b);
  ft__diff_num(rep, C_RATIO, ft__diff_ratio(a, b));
  put_i64(rep, C_DELTA, b - a);
  ft__diff_str(rep, C_NAME, name);
  rep->n_rows++;
}

/* Ops paired by name on their self device memory (key_averages' Self CUDA Mem), per step when the
 * values are. */
static bool pair_ops(ft__diff_ctx *c, ft__pairing *pg) {
  for (int s = 0; s < 2; s++) {
    const ft_stats *st = &c->job[s]->total;
    for (size_t i = 0; i < st->rows[FT_STAT_OPS].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_OPS], i);
      if (!r->self_dev_mem) continue;
      ft__pair *p =
          ft__pairing_get(pg, ft__intern_str(&st->names, r->name_id), ft__intern_len(&st->names, r->name_id), NULL, 0);
      if (!p) return false;
      p->r[s] = r;
      p->v[s] = (double)r->self_dev_mem * c->scale[s];
    }
  }
  return true;
}

/* (diff_internal.h) */
bool ft__diff_memory(ft__diff_ctx *c) {
  if (!has_memory(c->job[0]) && !has_memory(c->job[1])) return true; /* no report: nothing to compare */
  size_t n = 0;
  for (int s = 0; s < 2; s++)
    for (size_t f = 0; f < c->job[s]->n_files; f++) n += c->job[s]->files[f].mem.n_devs;
  dpeak *d = calloc(n + 1, sizeof *d);
  ft__pairing pg;
  bool ok = d && ft__pairing_init(&pg);
  if (!ok) {
    free(d);
    return false;
  }
  size_t nd = 0;
  for (int s = 0; s < 2; s++)
    for (size_t f = 0; f < c->job[s]->n_files; f++) {
      const ft_stat_mem *m = &c->job[s]->files[f].mem;
      for (size_t k = 0; k < m->n_devs; k++) {
        const ft_stat_mem_dev *x = &m->devs[k];
        size_t j = 0;
        while (j < nd && !(d[j].type == x->device_type && d[j].device == x->device)) j++;
        if (j == nd) d[nd++] = (dpeak){.type = x->device_type, .device = x->device};
        if (x->peak_alloc.bytes > d[j].alloc[s]) d[j].alloc[s] = x->peak_alloc.bytes;
        if (x->peak_res.bytes > d[j].res[s]) d[j].res[s] = x->peak_res.bytes;
        d[j].has[s] = true;
      }
    }
  if (nd) qsort(d, nd, sizeof *d, by_device);
  ok = pair_ops(c, &pg);
  ft__diff_sort(&pg); /* the largest growth first */
  size_t lim = c->o->limit, shown = pg.n;
  if (lim && pg.n > 2 * lim) shown = 2 * lim;
  ok = ok && ft__diff_report(c, FT_DIFF_MEMORY, "memory",
                             "device memory, A vs B: peaks per device, each op's self device memory (bytes)", mem_cols,
                             sizeof mem_cols / sizeof *mem_cols, 2 * nd + shown);
  ft_report *rep = &c->d->reps[FT_DIFF_MEMORY];
  if (ok && !(rep->strs = malloc(nd * DEV_NAME + 1))) ok = false;
  for (size_t j = 0; ok && j < nd; j++) {
    ft_stat_mem_dev x = {.device = d[j].device, .device_type = d[j].type};
    char *name = (char *)ft__mem_device_name(&x, rep->strs + j * DEV_NAME, DEV_NAME);
    row(rep, "peak allocated", name, (double)d[j].alloc[0], (double)d[j].alloc[1], "");
    row(rep, "peak reserved", name, (double)d[j].res[0], (double)d[j].res[1], "");
  }
  for (size_t i = 0, k = 0; ok && i < pg.n; i++, k++) {
    const ft__pair *p = &pg.p[i];
    if (lim && pg.n > 2 * lim && k >= lim && k < pg.n - lim) continue; /* the middle: small changes */
    int s = p->r[0] ? 0 : 1;
    const ft_stats *st = &c->job[s]->total;
    row(rep, "op self memory", "", p->v[0], p->v[1], ft__intern_str(&st->names, p->r[s]->name_id));
  }
  ft__pairing_free(&pg);
  free(d);
  return ok;
}
