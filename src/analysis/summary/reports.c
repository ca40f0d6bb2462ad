/* The reports of a job as rows of typed cells: what stats, report and the Python API show. */
#define _GNU_SOURCE
#include "reports.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const ft_report_names[REP_N] = {"kernels",  "api",        "memops",      "memsize", "ranges", "gpu_ranges",
                                            "ops",      "ops_shapes", "ops_modules", "gpu",     "ranks",  "trace",
                                            "temporal", "overlap",    "launch",      "queue",   "memory"};
const char *const ft_sort_names[SORT_N] = {"total", "count", "avg", "median", "min", "max", "stddev", "name"};

#define RANK_COL \
  { "rank", "Rank", COL_I64, 5 }
#define DIST_COLS(u, U)                                                                                           \
  {"total_" u, "Total(" U ")", COL_US, 13}, {"calls", "Calls", COL_U64, 9}, {"avg_" u, "Avg(" U ")", COL_F3, 12}, \
      {"median_" u, "Med(" U ")", COL_US, 12}, {"min_" u, "Min(" U ")", COL_US, 12},                              \
      {"max_" u, "Max(" U ")", COL_US, 12}, {                                                                     \
    "stddev_" u, "StdDev(" U ")", COL_F3, 12                                                                      \
  }

static const ft_col kernel_cols[] = {
    RANK_COL, {"time_pct", "Time(%)", COL_PCT, 8}, DIST_COLS("us", "us"), {"name", "Name", COL_STR, 0}};
static const ft_col kind_cols[] = {RANK_COL,
                                   {"time_pct", "Time(%)", COL_PCT, 8},
                                   DIST_COLS("us", "us"),
                                   {"kind", "Kind", COL_STR, -8},
                                   {"name", "Name", COL_STR, 0}};
static const ft_col size_cols[] = {RANK_COL,
                                   {"total_bytes", "Total(B)", COL_U64, 16},
                                   {"calls", "Calls", COL_U64, 9},
                                   {"avg_bytes", "Avg(B)", COL_F3, 16},
                                   {"median_bytes", "Med(B)", COL_U64, 14},
                                   {"min_bytes", "Min(B)", COL_U64, 14},
                                   {"max_bytes", "Max(B)", COL_U64, 14},
                                   {"stddev_bytes", "StdDev(B)", COL_F3, 16},
                                   {"bandwidth_gb_s", "GB/s", COL_F3, 10},
                                   {"kind", "Kind", COL_STR, -8},
                                   {"name", "Name", COL_STR, 0}};
/* key_averages()'s columns: Self CPU, CPU total and its average per call, Self
 * device, device total (the work of nested calls included) and its average */
#define OPS_COLS                                                                                            \
  {"self_cpu_us", "Self CPU(us)", COL_US, 13}, {"cpu_total_us", "CPU total(us)", COL_US, 14},               \
      {"cpu_avg_us", "CPU avg(us)", COL_F3, 12}, {"self_device_us", "Self device(us)", COL_US, 15},         \
      {"device_total_us", "Device total(us)", COL_US, 16}, {"device_avg_us", "Device avg(us)", COL_F3, 14}, \
      {"calls", "Calls", COL_U64, 9}, {                                                                     \
    "avg_us_per_call", "Self dev/call(us)", COL_F3, 17                                                      \
  }
static const ft_col ops_cols[] = {RANK_COL, OPS_COLS, {"name", "Name", COL_STR, 0}};
static const ft_col ops_shape_cols[] = {
    RANK_COL, OPS_COLS, {"input_dims", "Input Dims", COL_STR, 0}, {"name", "Name", COL_STR, 0}};
static const ft_col ops_module_cols[] = {
    RANK_COL, OPS_COLS, {"module", "Module", COL_STR, 0}, {"name", "Name", COL_STR, 0}};
/* the sections of ops' rows (key_averages' columns) */
static bool ops_section(int sec) { return sec == FT_STAT_OPS || ft_stat_keyed_by_aux(sec); }
static const ft_col gpu_cols[] = {{"rank", "Rank", COL_I64, 5},        {"device", "Device", COL_I64, 7},
                                  {"busy_us", "Busy(us)", COL_US, 16}, {"span_us", "Span(us)", COL_US, 16},
                                  {"busy_pct", "Busy(%)", COL_PCT, 8}, {"file", "File", COL_STR, 0}};
static const ft_col rank_cols[] = {{"rank", "Rank", COL_I64, 5},        {"devices", "Devices", COL_U64, 8},
                                   {"events", "Events", COL_U64, 10},   {"kernel_us", "Kernel(us)", COL_US, 14},
                                   {"comm_us", "Comm(us)", COL_US, 14}, {"compute_us", "Compute(us)", COL_US, 14},
                                   {"comm_pct", "Comm(%)", COL_PCT, 8}, {"busy_pct", "Busy(%)", COL_PCT, 8},
                                   {"span_us", "Span(us)", COL_US, 14}, {"file", "File", COL_STR, 0}};
static const ft_col trace_cols[] = {{"start_us", "Start(us)", COL_US, 14},
                                    {"duration_us", "Dur(us)", COL_US, 12},
                                    {"rank", "Rank", COL_I64, 5},
                                    {"device", "Device", COL_I64, 7},
                                    {"kind", "Kind", COL_STR, -7},
                                    {"bytes", "Bytes", COL_U64, 12},
                                    /* nsys's cuda_gpu_trace: the launch (-1 and 0 where the trace gives none) */
                                    {"stream", "Strm", COL_I64, 5},
                                    {"grid_x", "GrdX", COL_I64, 6},
                                    {"grid_y", "GrdY", COL_I64, 5},
                                    {"grid_z", "GrdZ", COL_I64, 5},
                                    {"block_x", "BlkX", COL_I64, 5},
                                    {"block_y", "BlkY", COL_I64, 5},
                                    {"block_z", "BlkZ", COL_I64, 5},
                                    {"registers", "Reg/Trd", COL_I64, 7},
                                    {"name", "Name", COL_STR, 0}};

static const char *cat_name(uint8_t cat) {
  switch (cat) {
  case FT_STAT_CAT_RUNTIME: return "runtime";
  case FT_STAT_CAT_DRIVER: return "driver";
  case FT_STAT_CAT_MEMCPY: return "memcpy";
  case FT_STAT_CAT_MEMSET: return "memset";
  default: return "other";
  }
}

/* ---- building ---- */

typedef struct item {
  const ft_stat_row *row;
  const ft_stats *st;
  int64_t rank;
  size_t group; /* rows sort within their group (a rank) */
  uint64_t group_total;
} item;

static int g_sort;
static int g_section;

static uint64_t sort_key(const item *x, double *d) {
  const ft_stat_dist *t = ops_section(g_section) ? NULL : &x->row->t;
  if (g_section == FT_STAT_MEMORY && g_sort < 0) t = &x->row->b; /* memsize */
  int s = g_sort < 0 ? -g_sort - 1 : g_sort;
  *d = 0;
  if (!t) return s == SORT_COUNT ? x->row->calls : x->row->self_ns;
  switch (s) {
  case SORT_COUNT: return t->n;
  case SORT_AVG: *d = t->n ? (double)t->total / (double)t->n : 0; return 0;
  case SORT_MEDIAN: return ft_dist_median(t);
  case SORT_MIN: return t->min;
  case SORT_MAX: return t->max;
  case SORT_STDDEV: *d = ft_dist_stddev(t); return 0;
  default: return t->total;
  }
}

static const char *item_name(const item *x) { return ft__intern_str(&x->st->names, x->row->name_id); }

static int by_key(const void *a, const void *b) {
  const item *x = a, *y = b;
  if (x->group != y->group) return (x->group > y->group) - (x->group < y->group);
  int s = g_sort < 0 ? -g_sort - 1 : g_sort;
  if (s != SORT_NAME) {
    double dx, dy;
    uint64_t kx = sort_key(x, &dx), ky = sort_key(y, &dy);
    if (kx != ky) return (kx < ky) - (kx > ky); /* largest first */
    if (dx != dy) return (dx < dy) - (dx > dy);
  }
  int c = strcmp(item_name(x), item_name(y));
  if (c) return c;
  /* one name twice (a runtime and a driver call; an op in two modules or shapes):
   * an order of their own, not the order the file threads merged them in */
  if (x->row->cat != y->row->cat) return (x->row->cat > y->row->cat) - (x->row->cat < y->row->cat);
  return x->row->aux_id == y->row->aux_id
             ? 0
             : strcmp(ft__intern_str(&x->st->names, x->row->aux_id), ft__intern_str(&y->st->names, y->row->aux_id));
}

static ft_status alloc_cells(ft_report *rep, size_t rows) {
  rep->cells = calloc(rows ? rows * (size_t)rep->n_cols : 1, sizeof *rep->cells);
  return rep->cells ? FT_OK : FT_ENOMEM;
}

static double us(uint64_t ns) { return (double)ns / 1000.0; }

/* Rows of one section, from the total or from every file (by rank). */
static ft_status build_rows(ft_report *rep, int section, bool size, const ft_stat_job *job, const ft_report_opts *o) {
  size_t n = 0;
  const ft_stats *sts[1] = {&job->total};
  size_t n_st = o->by_rank ? job->n_files : 1;
  for (size_t k = 0; k < n_st; k++) n += (o->by_rank ? job->files[k].own : sts[0])->rows[section].len;
  item *items = malloc((n + 1) * sizeof *items);
  if (!items) return FT_ENOMEM;
  size_t m = 0;
  for (size_t k = 0; k < n_st; k++) {
    const ft_stats *st = o->by_rank ? job->files[k].own : sts[0];
    uint64_t total = 0;
    for (size_t i = 0; i < st->rows[section].len; i++)
      total += ((const ft_stat_row *)ft__vec_at(&st->rows[section], i))->t.total;
    for (size_t i = 0; i < st->rows[section].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[section], i);
      /* an op whose every call torch folds into its parent of the same name: no row */
      if (ops_section(section) && !r->self_ns && !r->calls) continue;
      items[m++] = (item){r, st, o->by_rank ? job->files[k].rank : -1, k, total};
    }
  }
  g_sort = size ? -o->sort - 1 : o->sort;
  g_section = section;
  qsort(items, m, sizeof *items, by_key);
  /* --limit: per group */
  size_t w = 0, in_group = 0;
  for (size_t i = 0; i < m; i++) {
    in_group = i && items[i].group == items[i - 1].group ? in_group + 1 : 0;
    if (!o->limit || in_group < o->limit) items[w++] = items[i];
  }
  m = w;
  ft_status s = alloc_cells(rep, m);
  for (size_t i = 0; !s && i < m; i++) {
    const item *x = &items[i];
    const ft_stat_row *r = x->row;
    ft_cell *c = rep->cells + i * (size_t)rep->n_cols;
    int j = 0;
    c[j++].i = x->rank;
    if (!strcmp(rep->cols[j].key, "file")) c[j++].s = job->files[x->group].path; /* ranks that collide */
    if (ops_section(section)) {
      double calls = (double)r->calls;
      c[j++].u = r->self_cpu_ns;
      c[j++].u = r->t.total;
      c[j++].d = r->calls ? us(r->t.total) / calls : 0;
      c[j++].u = r->self_ns;
      c[j++].u = r->total_dev_ns;
      c[j++].d = r->calls ? us(r->total_dev_ns) / calls : 0;
      c[j++].u = r->calls;
      c[j++].d = r->calls ? us(r->self_ns) / calls : 0;
      for (; j < rep->n_cols && rep->cols[j].kind == COL_I64; j++) { /* the memory columns, when shown */
        const char *k = rep->cols[j].key;
        bool self = !strncmp(k, "self_", 5), cpu = strstr(k, "cpu_") != NULL;
        c[j].i = cpu ? (self ? r->self_cpu_mem : r->cpu_mem) : (self ? r->self_dev_mem : r->dev_mem);
      }
      if (ft_stat_keyed_by_aux(section)) c[j++].s = ft__intern_str(&x->st->names, r->aux_id);
    } else if (size) {
      const ft_stat_dist *b = &r->b;
      c[j++].u = b->total;
      c[j++].u = b->n;
      c[j++].d = b->n ? (double)b->total / (double)b->n : 0;
      c[j++].u = ft_dist_median(b);
      c[j++].u = b->min;
      c[j++].u = b->max;
      c[j++].d = ft_dist_stddev(b);
      c[j++].d = r->t.total ? (double)b->total / (double)r->t.total : 0; /* bytes/ns = GB/s */
    } else {
      const ft_stat_dist *t = &r->t;
      c[j++].d = x->group_total ? 100.0 * (double)t->total / (double)x->group_total : 0;
      c[j++].u = t->total;
      c[j++].u = t->n;
      c[j++].d = t->n ? us(t->total) / (double)t->n : 0;
      c[j++].u = ft_dist_median(t);
      c[j++].u = t->min;
      c[j++].u = t->max;
      c[j++].d = ft_dist_stddev(t) / 1000.0;
    }
    if (rep->cols[j].kind == COL_STR && !strcmp(rep->cols[j].key, "kind")) c[j++].s = cat_name(r->cat);
    c[j++].s = item_name(x);
  }
  free(items);
  if (!s) rep->n_rows = m;
  return s;
}

static ft_status build_gpu(ft_report *rep, const ft_stat_job *job) {
  size_t n = 0;
  for (size_t f = 0; f < job->n_files; f++) n += job->files[f].n_busy;
  ft_status s = alloc_cells(rep, n);
  size_t i = 0;
  for (size_t f = 0; !s && f < job->n_files; f++) {
    const ft_stat_file *file = &job->files[f];
    for (size_t d = 0; d < file->n_busy; d++, i++) {
      ft_cell *c = rep->cells + i * (size_t)rep->n_cols;
      c[0].i = file->rank;
      c[1].i = file->busy[d].device;
      c[2].u = file->busy[d].busy_ns;
      c[3].u = file->span_ns;
      c[4].d = file->span_ns ? 100.0 * (double)file->busy[d].busy_ns / (double)file->span_ns : 0;
      c[5].s = file->path;
    }
  }
  rep->n_rows = i;
  return s;
}

static ft_status build_ranks(ft_report *rep, const ft_stat_job *job) {
  ft_status s = alloc_cells(rep, job->n_files);
  for (size_t f = 0; !s && f < job->n_files; f++) {
    const ft_stat_file *file = &job->files[f];
    ft_cell *c = rep->cells + f * (size_t)rep->n_cols;
    uint64_t busy = 0;
    for (size_t d = 0; d < file->n_busy; d++) busy += file->busy[d].busy_ns;
    c[0].i = file->rank;
    c[1].u = file->n_busy;
    c[2].u = file->events;
    c[3].u = file->kernel_ns;
    c[4].u = file->comm_ns;
    c[5].u = file->kernel_ns - file->comm_ns;
    c[6].d = file->kernel_ns ? 100.0 * (double)file->comm_ns / (double)file->kernel_ns : 0;
    /* the mean over the rank's devices */
    c[7].d = file->span_ns && file->n_busy ? 100.0 * (double)busy / ((double)file->span_ns * (double)file->n_busy) : 0;
    c[8].u = file->span_ns;
    c[9].s = file->path;
  }
  rep->n_rows = job->n_files;
  return s;
}

static ft_status build_trace(ft_report *rep, const ft_stat_job *job, size_t limit) {
  static const char *const kinds[] = {"kernel", "memcpy", "memset"};
  size_t n = job->total.n_trace;
  if (limit && n > limit) n = limit;
  ft_status s = alloc_cells(rep, n);
  for (size_t i = 0; !s && i < n; i++) {
    const ft_stat_event *e = &job->total.trace[i];
    const ft_stat_file *file = &job->files[e->file];
    ft_cell *c = rep->cells + i * (size_t)rep->n_cols;
    c[0].u = (uint64_t)e->ts - (uint64_t)file->first_ns;
    c[1].u = (uint64_t)e->dur;
    c[2].i = file->rank;
    c[3].i = e->device;
    c[4].s = kinds[e->kind];
    c[5].u = e->bytes;
    c[6].i = e->stream;
    for (int k = 0; k < 3; k++) c[7 + k].i = e->grid[k], c[10 + k].i = e->block[k];
    c[13].i = e->regs;
    c[14].s = ft__intern_str(&job->total.names, e->name_id);
  }
  rep->n_rows = n;
  return s;
}

/* key_averages()' memory columns, after the ops' time columns, when the job has [memory] events:
 * CPU memory's when it has some, the device's likewise ("CUDA" as torch names them for CUDA and
 * HIP, else "Device"). Bytes, signed: what a call frees counts against it. */
static bool mem_cols(ft_report *rep, const ft_stats *total) {
  static const ft_col cpu[] = {{"cpu_mem_bytes", "CPU Mem", COL_I64, 14},
                               {"self_cpu_mem_bytes", "Self CPU Mem", COL_I64, 14}};
  static const ft_col cuda[] = {{"device_mem_bytes", "CUDA Mem", COL_I64, 14},
                                {"self_device_mem_bytes", "Self CUDA Mem", COL_I64, 14}};
  static const ft_col dev[] = {{"device_mem_bytes", "Device Mem", COL_I64, 14},
                               {"self_device_mem_bytes", "Self Device Mem", COL_I64, 14}};
  int at = 0;
  while (strcmp(rep->cols[at].key, "avg_us_per_call")) at++;
  at++;
  ft_col *c = malloc((size_t)(rep->n_cols + 4) * sizeof *c);
  if (!c) return false;
  int n = 0;
  for (int j = 0; j < at; j++) c[n++] = rep->cols[j];
  if (total->mem_events[0]) c[n++] = cpu[0], c[n++] = cpu[1];
  if (total->mem_events[1]) {
    const ft_col *d = total->mem_events[2] == total->mem_events[1] ? cuda : dev;
    c[n++] = d[0], c[n++] = d[1];
  }
  for (int j = at; j < rep->n_cols; j++) c[n++] = rep->cols[j];
  rep->cols = rep->own_cols = c;
  rep->n_cols = n;
  return true;
}

/* Whether two of the job's files claim one rank (a file without distributedInfo
 * takes its position as its rank): --by-rank's rows then need their file. */
static bool ranks_collide(const ft_stat_job *job) {
  for (size_t i = 0; i < job->n_files; i++)
    for (size_t k = i + 1; k < job->n_files; k++)
      if (job->files[i].rank == job->files[k].rank) return true;
  return false;
}

/* A File column after the rank one: the rows of files that claim one rank told apart. */
static bool file_col(ft_report *rep) {
  ft_col *c = malloc((size_t)(rep->n_cols + 1) * sizeof *c);
  if (!c) return false;
  c[0] = rep->cols[0];
  c[1] = (ft_col){"file", "File", COL_STR, 0};
  memcpy(c + 2, rep->cols + 1, (size_t)(rep->n_cols - 1) * sizeof *c);
  free(rep->own_cols);
  rep->cols = rep->own_cols = c;
  rep->n_cols++;
  return true;
}

ft_status ft_report_build(ft_report *rep, int r, const ft_stat_job *job, const ft_report_opts *o) {
  static const struct {
    const char *title;
    const ft_col *cols;
    int n_cols, section;
  } defs[REP_N] = {
      {"GPU kernels", kernel_cols, sizeof kernel_cols / sizeof *kernel_cols, FT_STAT_KERNELS},
      {"runtime and driver API", kind_cols, sizeof kind_cols / sizeof *kind_cols, FT_STAT_API},
      {"memory operations by time (copies and sets)", kind_cols, sizeof kind_cols / sizeof *kind_cols, FT_STAT_MEMORY},
      {"memory operations by size", size_cols, sizeof size_cols / sizeof *size_cols, FT_STAT_MEMORY},
      {"user ranges (CPU time)", kernel_cols, sizeof kernel_cols / sizeof *kernel_cols, FT_STAT_RANGES},
      {"user ranges projected on the GPU", kernel_cols, sizeof kernel_cols / sizeof *kernel_cols, FT_STAT_GPU_RANGES},
      {"ops and ranges as key_averages() shows them", ops_cols, sizeof ops_cols / sizeof *ops_cols, FT_STAT_OPS},
      {"ops by input shapes (key_averages(group_by_input_shape=True))", ops_shape_cols,
       sizeof ops_shape_cols / sizeof *ops_shape_cols, FT_STAT_OP_SHAPES},
      {"ops by the innermost nn.Module around them (with_modules)", ops_module_cols,
       sizeof ops_module_cols / sizeof *ops_module_cols, FT_STAT_OP_MODULES},
      {"GPU busy per rank and device", gpu_cols, sizeof gpu_cols / sizeof *gpu_cols, -1},
      {"ranks: kernel, communication and compute time", rank_cols, sizeof rank_cols / sizeof *rank_cols, -1},
      {"device events (the earliest, per file)", trace_cols, sizeof trace_cols / sizeof *trace_cols, -1},
  };
  if (r == REP_MEMORY) return ft__report_memory_build(rep, job, o);
  memset(rep, 0, sizeof *rep);
  rep->key = ft_report_names[r];
  rep->title = defs[r].title;
  rep->cols = defs[r].cols;
  rep->n_cols = defs[r].n_cols;
  if (r == REP_GPU) return build_gpu(rep, job);
  if (r == REP_RANKS) return build_ranks(rep, job);
  if (r == REP_TRACE) return build_trace(rep, job, o->limit);
  if (r >= REP_TEMPORAL) return ft__report_hta_build(rep, r, job, o);
  if (ops_section(defs[r].section) && (job->total.mem_events[0] || job->total.mem_events[1]) &&
      !mem_cols(rep, &job->total))
    return FT_ENOMEM;
  if (o->by_rank && ranks_collide(job) && !file_col(rep)) return FT_ENOMEM;
  ft_status s = build_rows(rep, defs[r].section, r == REP_MEMSIZE, job, o);
  if (!s && !o->by_rank) { /* no rank column */
    for (size_t i = 0; i < rep->n_rows; i++)
      memmove(rep->cells + i * (size_t)(rep->n_cols - 1), rep->cells + i * (size_t)rep->n_cols + 1,
              (size_t)(rep->n_cols - 1) * sizeof *rep->cells);
    rep->cols++;
    rep->n_cols--;
  }
  return s;
}

void ft_report_free(ft_report *rep) {
  free(rep->cells);
  free(rep->strs);
  free(rep->kinds);
  free(rep->own_cols);
  memset(rep, 0, sizeof *rep);
}
