/* The reports of HTA's analyses (temporal, overlap, launch, queue) as rows of typed cells, per rank. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "reports.h"
#include "stats_hta.h"

static const ft_col temporal_cols[] = {
    {"rank", "Rank", COL_I64, 5},
    {"gpu_events", "GPU events", COL_U64, 10},
    {"window_us", "Window(us)", COL_US, 14},
    {"idle_us", "Idle(us)", COL_US, 14},
    {"compute_us", "Compute(us)", COL_US, 14},
    {"non_compute_us", "Non-compute(us)", COL_US, 15},
    {"idle_pct", "Idle(%)", COL_PCT, 8},
    {"compute_pct", "Compute(%)", COL_PCT, 10},
    {"non_compute_pct", "Non-compute(%)", COL_PCT, 14},
    {"busy_pct", "Busy(%)", COL_PCT, 8},
    {"span_us", "Span(us)", COL_US, 14},
    {"file", "File", COL_STR, 0},
};
static const ft_col overlap_cols[] = {
    {"rank", "Rank", COL_I64, 5},
    {"comm_us", "Comm(us)", COL_US, 14},
    {"compute_us", "Compute(us)", COL_US, 14},
    {"overlap_us", "Overlap(us)", COL_US, 14},
    {"overlap_pct", "Overlap(%)", COL_PCT, 10},
    {"file", "File", COL_STR, 0},
};
static const ft_col launch_cols[] = {
    {"rank", "Rank", COL_I64, 5},
    {"launches", "Launches", COL_U64, 9},
    {"cpu_avg_us", "CPU avg(us)", COL_F3, 12},
    {"cpu_median_us", "CPU med(us)", COL_US, 12},
    {"gpu_avg_us", "GPU avg(us)", COL_F3, 12},
    {"gpu_median_us", "GPU med(us)", COL_US, 12},
    {"delay_avg_us", "Delay avg(us)", COL_F3, 14},
    {"delay_median_us", "Delay med(us)", COL_US, 14},
    {"delay_max_us", "Delay max(us)", COL_US, 14},
    {"short_kernels", "Short", COL_U64, 8},
    {"runtime_outliers", "CPU>50us", COL_U64, 9},
    {"delay_outliers", "Delay>100us", COL_U64, 11},
    {"file", "File", COL_STR, 0},
};
static const ft_col queue_cols[] = {
    {"rank", "Rank", COL_I64, 5},        {"stream", "Stream", COL_STR, -8}, {"samples", "Samples", COL_U64, 9},
    {"mean", "Mean", COL_F3, 10},        {"stddev", "StdDev", COL_F3, 10},  {"min", "Min", COL_U64, 6},
    {"median", "Med", COL_F3, 9},        {"max", "Max", COL_U64, 6},        {"kernels", "Kernels", COL_U64, 9},
    {"full_us", "Full(us)", COL_US, 12},
};

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0; }
static double avg_us(const ft_stat_dist *d) { return d->n ? (double)d->total / (double)d->n / 1000.0 : 0; }

static void temporal(ft_cell *c, const ft_stat_file *f) {
  const ft_stat_hta *h = &f->hta;
  uint64_t window = (uint64_t)h->gpu_last_ns - (uint64_t)h->gpu_first_ns, idle = window - h->gpu_busy_ns;
  uint64_t non = h->gpu_busy_ns - h->compute_ns, busy = 0;
  for (size_t d = 0; d < f->n_busy; d++) busy += f->busy[d].busy_ns;
  c[1].u = h->gpu_events;
  c[2].u = window;
  c[3].u = idle;
  c[4].u = h->compute_ns;
  c[5].u = non;
  c[6].d = pct(idle, window);
  c[7].d = pct(h->compute_ns, window);
  c[8].d = pct(non, window);
  /* ours beside it: the mean over the rank's devices of busy over the file's span */
  c[9].d = f->span_ns && f->n_busy ? 100.0 * (double)busy / ((double)f->span_ns * (double)f->n_busy) : 0;
  c[10].u = f->span_ns;
  c[11].s = f->path;
}

static void overlap(ft_cell *c, const ft_stat_file *f) {
  const ft_stat_hta *h = &f->hta;
  c[1].u = h->comm_ns;
  c[2].u = h->compute_ns;
  c[3].u = h->overlap_ns;
  c[4].d = pct(h->overlap_ns, h->comm_ns);
  c[5].s = f->path;
}

static void launch(ft_cell *c, const ft_stat_file *f) {
  const ft_stat_hta *h = &f->hta;
  c[1].u = h->launches;
  c[2].d = avg_us(&h->cpu_ns);
  c[3].u = ft_dist_median(&h->cpu_ns);
  c[4].d = avg_us(&h->gpu_ns);
  c[5].u = ft_dist_median(&h->gpu_ns);
  c[6].d = avg_us(&h->delay_ns);
  c[7].u = ft_dist_median(&h->delay_ns);
  c[8].u = h->delay_ns.max;
  c[9].u = h->short_kernels;
  c[10].u = h->runtime_outliers;
  c[11].u = h->delay_outliers;
  c[12].s = f->path;
}

typedef struct qitem {
  const ft_stat_row *row;
  const char *name;
  int64_t rank;
  size_t group;
} qitem;

static int by_stream(const void *a, const void *b) {
  const qitem *x = a, *y = b;
  if (x->group != y->group) return (x->group > y->group) - (x->group < y->group);
  /* NOLINTNEXTLINE(cert-err34-c): only an order; a name that is no number sorts as 0 */
  long long p = atoll(x->name), q = atoll(y->name); /* stream numbers in number order */
  return (p > q) - (p < q);
}

/* One row per stream: the total's (streams merged by number over the ranks) or each file's (by rank). */
static ft_status queue(ft_report *rep, const ft_stat_job *job, const ft_report_opts *o) {
  size_t n_st = o->by_rank ? job->n_files : 1, n = 0;
  for (size_t k = 0; k < n_st; k++) {
    const ft_stats *st = o->by_rank ? job->files[k].own : &job->total;
    if (st) n += st->rows[FT_STAT_STREAMS].len;
  }
  qitem *items = malloc((n + 1) * sizeof *items);
  rep->cells = calloc((n ? n : 1) * (size_t)rep->n_cols, sizeof *rep->cells);
  if (!items || !rep->cells) {
    free(items);
    return FT_ENOMEM;
  }
  size_t m = 0;
  for (size_t k = 0; k < n_st; k++) {
    const ft_stats *st = o->by_rank ? job->files[k].own : &job->total;
    for (size_t i = 0; st && i < st->rows[FT_STAT_STREAMS].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[FT_STAT_STREAMS], i);
      items[m++] = (qitem){r, ft__intern_str(&st->names, r->name_id), o->by_rank ? job->files[k].rank : -1, k};
    }
  }
  qsort(items, m, sizeof *items, by_stream);
  for (size_t i = 0; i < m; i++) {
    const ft_stat_dist *t = &items[i].row->t;
    ft_cell *c = rep->cells + i * (size_t)rep->n_cols;
    c[0].i = items[i].rank;
    c[1].s = items[i].name;
    c[2].u = t->n;
    c[3].d = t->n ? (double)t->total / (double)t->n / 2 : 0; /* the samples are doubled (stats_hta.c) */
    c[4].d = ft_dist_stddev(t) / 2;
    c[5].u = t->min / 2;
    c[6].d = (double)ft_dist_median(t) / 2;
    c[7].u = t->max / 2;
    c[8].u = items[i].row->calls;
    c[9].u = items[i].row->self_ns;
  }
  free(items);
  rep->n_rows = m;
  if (!o->by_rank) { /* no rank column, as the other name reports */
    for (size_t i = 0; i < m; i++)
      memmove(rep->cells + i * (size_t)(rep->n_cols - 1), rep->cells + i * (size_t)rep->n_cols + 1,
              (size_t)(rep->n_cols - 1) * sizeof *rep->cells);
    rep->cols++;
    rep->n_cols--;
  }
  return FT_OK;
}

/* (reports.h) */
ft_status ft__report_hta_build(ft_report *rep, int r, const ft_stat_job *job, const ft_report_opts *o) {
  static const struct {
    const char *title;
    const ft_col *cols;
    int n_cols;
    void (*row)(ft_cell *c, const ft_stat_file *f);
  } defs[] = {
      {"temporal breakdown (HTA): idle, compute and non-compute time over the GPU's window", temporal_cols,
       sizeof temporal_cols / sizeof *temporal_cols, temporal},
      {"communication / computation overlap (HTA)", overlap_cols, sizeof overlap_cols / sizeof *overlap_cols, overlap},
      {"kernel launch statistics (HTA): call, kernel, launch delay", launch_cols,
       sizeof launch_cols / sizeof *launch_cols, launch},
      {"queue length per stream (HTA): outstanding launches, sampled at each change", queue_cols,
       sizeof queue_cols / sizeof *queue_cols, NULL},
  };
  int k = r - REP_TEMPORAL;
  rep->key = ft_report_names[r];
  rep->title = defs[k].title;
  rep->cols = defs[k].cols;
  rep->n_cols = defs[k].n_cols;
  if (!defs[k].row) return queue(rep, job, o);
  rep->cells = calloc((job->n_files ? job->n_files : 1) * (size_t)rep->n_cols, sizeof *rep->cells);
  if (!rep->cells) return FT_ENOMEM;
  for (size_t f = 0; f < job->n_files; f++) {
    ft_cell *c = rep->cells + f * (size_t)rep->n_cols;
    c[0].i = job->files[f].rank;
    defs[k].row(c, &job->files[f]);
  }
  rep->n_rows = job->n_files;
  return FT_OK;
}
