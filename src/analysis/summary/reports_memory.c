/* The `stats -r memory` report (issue 51): device memory per rank and device, from each file's ft_stat_file.mem. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports.h"
#include "stats_memory.h"

enum { C_RANK, C_DEVICE, C_WHAT, C_BYTES, C_COUNT, C_MIN, C_MED, C_MAX, C_TS, C_STEP, C_CALL, C_OP, C_N };
static const ft_col mem_cols[C_N] = {
    {"rank", "Rank", COL_I64, 4},         {"device", "Device", COL_STR, -8}, {"what", "What", COL_STR, -14},
    {"mem_bytes", "Bytes", COL_I64, 14},  {"count", "Count", COL_U64, 9},    {"min_bytes", "Min", COL_U64, 10},
    {"median_bytes", "Med", COL_U64, 10}, {"max_bytes", "Max", COL_U64, 10}, {"ts_us", "At(us)", COL_US, 14},
    {"step", "Step", COL_I64, 5},         {"call", "Call", COL_STR, 0},      {"op", "Op", COL_STR, 0},
};

/* Rows are built into a growing table; a number not set has no value (COL_NONE: null in json), a text is "". */
typedef struct tab {
  ft_report *rep;
  size_t cap;
  char *strs; /* device names and the skipped lines, 32/160 B each */
  size_t n_strs, cap_strs;
} tab;

static ft_cell *new_row(tab *t) {
  ft_report *rep = t->rep;
  if (rep->n_rows == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    ft_cell *c = realloc(rep->cells, cap * C_N * sizeof *c);
    if (!c) return NULL;
    rep->cells = c;
    uint8_t *k = realloc(rep->kinds, cap * C_N);
    if (!k) return NULL;
    rep->kinds = k;
    t->cap = cap;
  }
  ft_cell *c = rep->cells + rep->n_rows * C_N;
  uint8_t *k = rep->kinds + rep->n_rows * C_N;
  for (int j = 0; j < C_N; j++) c[j].s = "", k[j] = mem_cols[j].kind == COL_STR ? COL_STR : COL_NONE;
  rep->n_rows++;
  return c;
}

static void set(tab *t, ft_cell *c, int j, ft_cell v) {
  c[j] = v;
  t->rep->kinds[(size_t)(c - t->rep->cells) + (size_t)j] = (uint8_t)mem_cols[j].kind;
}

static void set_dist(tab *t, ft_cell *c, const ft_stat_dist *d) {
  set(t, c, C_BYTES, (ft_cell){.i = d->total > INT64_MAX ? INT64_MAX : (int64_t)d->total});
  set(t, c, C_COUNT, (ft_cell){.u = d->n});
  if (!d->n) return;
  set(t, c, C_MIN, (ft_cell){.u = d->min});
  set(t, c, C_MED, (ft_cell){.u = ft_dist_median(d)});
  set(t, c, C_MAX, (ft_cell){.u = d->max});
}

/* A moment's time (from its file's first event, as the other reports show times), step, op and call. */
static void set_at(tab *t, ft_cell *c, const ft_stat_mem_at *a, const ft_stat_file *f) {
  if (a->ts == INT64_MIN) return;
  int64_t first = (int64_t)f->first_ns; /* INT64_MAX: no complete event */
  if (first == INT64_MAX) first = 0;
  if (a->ts >= first) set(t, c, C_TS, (ft_cell){.u = (uint64_t)a->ts - (uint64_t)first});
  if (a->step >= 0) set(t, c, C_STEP, (ft_cell){.i = a->step});
  if (a->op) c[C_OP].s = a->op;
  if (a->call) c[C_CALL].s = a->call;
}

ft_status ft__report_memory_build(ft_report *rep, const ft_stat_job *job, const ft_report_opts *o) {
  memset(rep, 0, sizeof *rep);
  rep->key = ft_report_names[REP_MEMORY];
  rep->title = "device memory ([memory] events): peaks, allocations, frees, live at the end";
  rep->cols = mem_cols;
  rep->n_cols = C_N;
  tab t = {.rep = rep};
  /* the strings first: cells point into one block that does not move */
  size_t n_dev = 0;
  for (size_t f = 0; f < job->n_files; f++) n_dev += job->files[f].mem.n_devs + 1;
  rep->strs = calloc(n_dev ? n_dev : 1, 160);
  if (!rep->strs) return FT_ENOMEM;
  char *str = rep->strs;
  for (size_t f = 0; f < job->n_files; f++) {
    const ft_stat_file *file = &job->files[f];
    const ft_stat_mem *m = &file->mem;
    for (size_t i = 0; i < m->n_devs; i++, str += 160) {
      const ft_stat_mem_dev *d = &m->devs[i];
      ft__mem_device_name(d, str, 160);
      static const char *const what[] = {"peak_allocated", "peak_reserved", "allocations", "frees", "live_at_end"};
      for (int w = 0; w < 5; w++) {
        ft_cell *c = new_row(&t);
        if (!c) return FT_ENOMEM;
        set(&t, c, C_RANK, (ft_cell){.i = file->rank});
        c[C_DEVICE].s = str;
        c[C_WHAT].s = what[w];
        if (w < 2) {
          const ft_stat_mem_at *a = w ? &d->peak_res : &d->peak_alloc;
          set(&t, c, C_BYTES, (ft_cell){.i = a->bytes});
          set_at(&t, c, a, file);
        } else if (w < 4) {
          set_dist(&t, c, w == 2 ? &d->alloc_sizes : &d->free_sizes);
        } else {
          set(&t, c, C_BYTES, (ft_cell){.i = d->live_bytes > INT64_MAX ? INT64_MAX : (int64_t)d->live_bytes});
          set(&t, c, C_COUNT, (ft_cell){.u = d->live_n});
        }
      }
      size_t n = o->limit && o->limit < d->n_live ? o->limit : d->n_live;
      for (size_t k = 0; k < n; k++) { /* leak candidates, largest first */
        ft_cell *c = new_row(&t);
        if (!c) return FT_ENOMEM;
        set(&t, c, C_RANK, (ft_cell){.i = file->rank});
        c[C_DEVICE].s = str;
        c[C_WHAT].s = "live";
        set(&t, c, C_BYTES, (ft_cell){.i = d->live[k].bytes});
        set(&t, c, C_COUNT, (ft_cell){.u = 1});
        set_at(&t, c, &d->live[k], file);
      }
    }
    uint64_t skipped = m->bad_field + m->bad_sign + m->unmatched + m->over_bound + m->over_devices;
    if (skipped) { /* hostile or unmatched values: one line per file, what and how many */
      ft_cell *c = new_row(&t);
      if (!c) return FT_ENOMEM;
      snprintf(str, 160,
               "%llu bad fields, %llu bad signs, %llu frees of no live allocation, %llu untracked addresses, "
               "%llu past %d devices",
               (unsigned long long)m->bad_field, (unsigned long long)m->bad_sign, (unsigned long long)m->unmatched,
               (unsigned long long)m->over_bound, (unsigned long long)m->over_devices, FT_STATS_MAX_DEVICES);
      set(&t, c, C_RANK, (ft_cell){.i = file->rank});
      c[C_WHAT].s = "skipped";
      set(&t, c, C_COUNT, (ft_cell){.u = skipped});
      c[C_OP].s = str;
      str += 160;
    }
  }
  return FT_OK;
}
