/* Partial summaries, merging: each distribution, row, file and device event checked as it ends, and added into the job
 * as stats_job.c merges files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FT__PARTIAL_SHORT_NAMES
#include "stats_partial.h"
#include "stats_internal.h"

/* (stats_partial.h) the ops' memory sums last (issue 51): signed, read as signed_field says */
const char *const ft__partial_row_keys[] = {"name",        "aux",          "cat", "comm", "calls",   "self_ns",
                                            "self_cpu_ns", "total_dev_ns", "t",   "b",    "cpu_mem", "self_cpu_mem",
                                            "dev_mem",     "self_dev_mem", NULL};

/* The key a row is merged under in its section, as stats_job.c's merge_rows keys it. */
static uint64_t row_key(int sec, uint32_t name_id, uint32_t aux_id, uint8_t cat) {
  return ft_stat_keyed_by_aux(sec) ? (uint64_t)aux_id << 32 | name_id : (uint64_t)cat << 32 | name_id;
}

/* A distribution's members agree with each other: the values (or histogram
 * counts) are n, and the sums are sums of values between min and max. */
int ft__partial_end_dist(reader *r, ft_stat_dist *out) {
  dist_in *d = &r->d;
  frame *f = top(r);
  memset(out, 0, sizeof *out);
  if (!d->n) return fail(r, "an empty distribution (an empty one is left out)");
  if (d->n <= FT_DIST_EXACT) {
    if (f->seen != ((1u << D_N) | (1u << D_VALS))) return fail(r, "a distribution of at most 256 values is its values");
    if (d->n_vals != d->n) return fail(r, "a distribution's values are not n");
    uint64_t mn = UINT64_MAX, mx = 0, tot = 0;
    ft_u128 sq = 0;
    for (size_t i = 0; i < d->n_vals; i++) {
      uint64_t v = d->vals[i];
      if (tot > UINT64_MAX - v) return fail(r, "a distribution's total past 64 bits");
      tot += v;
      sq += (ft_u128)v * v; /* 256 squares of 64-bit values fit 128 bits less 8 */
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
    }
    uint64_t *vals = malloc(d->n_vals * sizeof *vals);
    if (!vals) return fail(r, "out of memory");
    memcpy(vals, d->vals, d->n_vals * sizeof *vals);
    *out = (ft_stat_dist){
        .n = d->n, .total = tot, .min = mn, .max = mx, .sumsq = sq, .vals = vals, .vals_cap = (uint32_t)d->n};
    return 1;
  }
  const uint32_t need = (1u << D_N) | (1u << D_TOTAL) | (1u << D_MIN) | (1u << D_MAX) | (1u << D_SUMSQ) |
                        (1u << D_HIST_LO) | (1u << D_HIST);
  if (f->seen != need) return fail(r, "a distribution of more than 256 values is n, total, min, max, sumsq and hist");
  if (!d->n_hist || d->hist_lo > N_BUCKETS - d->n_hist) return fail(r, "histogram buckets out of range");
  if (!d->hist[0] || !d->hist[d->n_hist - 1]) return fail(r, "a histogram must start and end with a used bucket");
  uint64_t sum = 0;
  for (size_t i = 0; i < d->n_hist; i++) sum += d->hist[i]; /* at most 7424 counts of 32 bits */
  if (sum != d->n) return fail(r, "a histogram's counts are not n");
  if (d->min > d->max || (ft_u128)d->total < (ft_u128)d->n * d->min || (ft_u128)d->total > (ft_u128)d->n * d->max ||
      d->sumsq < (ft_u128)d->total * d->min || d->sumsq > (ft_u128)d->total * d->max)
    return fail(r, "a distribution's sums do not add up");
  *out = (ft_stat_dist){.n = d->n,
                        .total = d->total,
                        .min = d->min,
                        .max = d->max,
                        .sumsq = d->sumsq,
                        .hist = d->hist,
                        .hist_lo = (uint32_t)d->hist_lo,
                        .hist_len = (uint32_t)d->n_hist};
  d->hist = NULL; /* now the dist's */
  d->n_hist = d->cap_hist = 0;
  return 1;
}

/* d + s in the counters a merge adds to, none past its width. */
static bool dist_fits(const ft_stat_dist *d, const ft_stat_dist *s) {
  if (d->n > UINT64_MAX - s->n || d->total > UINT64_MAX - s->total || d->sumsq > ~(ft_u128)0 - s->sumsq) return false;
  if (d->n + s->n <= UINT32_MAX) return true; /* then no bucket's count can pass 32 bits */
  /* the most one bucket of each may hold, added */
  uint64_t dm = 0, sm = 0;
  if (!d->hist) dm = d->n;
  for (uint32_t i = 0; d->hist && i < d->hist_len; i++) dm = d->hist[i] > dm ? d->hist[i] : dm;
  if (!s->hist) sm = s->n;
  for (uint32_t i = 0; s->hist && i < s->hist_len; i++) sm = s->hist[i] > sm ? s->hist[i] : sm;
  if (dm + sm <= UINT32_MAX) return true;
  if (!d->hist || !s->hist) return false;
  for (uint32_t i = 0; i < s->hist_len; i++) {
    uint32_t b = s->hist_lo + i;
    uint64_t c = b >= d->hist_lo && b < d->hist_lo + d->hist_len ? d->hist[b - d->hist_lo] : 0;
    if (c + s->hist[i] > UINT32_MAX) return false;
  }
  return true;
}

static bool add_u64(uint64_t *a, uint64_t b) {
  if (*a > UINT64_MAX - b) return false;
  *a += b;
  return true;
}

/* Adds row s (names in dst's table already) into dst's section sec, as merge_rows
 * does; with gen, a row given twice in one container is refused. */
static int merge_row(reader *r, ft_stats *dst, int sec, const ft_stat_row *s, bool is_total) {
  uint64_t *slot = ft__map_upsert(&dst->index[sec], row_key(sec, s->name_id, s->aux_id, s->cat));
  if (!slot) return fail(r, "out of memory");
  bool fresh = !*slot;
  if (fresh) {
    ft_stat_row *n = ft__vec_push(&dst->rows[sec]);
    if (!n) return fail(r, "out of memory");
    n->name_id = s->name_id;
    n->aux_id = s->aux_id;
    n->cat = s->cat;
    n->comm = s->comm;
    *slot = dst->rows[sec].len;
  }
  size_t idx = *slot - 1;
  if (is_total) { /* the last container each total row came from */
    if (idx >= r->cap_gen[sec]) {
      size_t cap = r->cap_gen[sec] ? 2 * r->cap_gen[sec] : 256;
      while (cap <= idx) cap *= 2;
      uint64_t *g = realloc(r->gen[sec], cap * sizeof *g);
      if (!g) return fail(r, "out of memory");
      memset(g + r->cap_gen[sec], 0, (cap - r->cap_gen[sec]) * sizeof *g);
      r->gen[sec] = g;
      r->cap_gen[sec] = cap;
    }
    if (r->gen[sec][idx] == r->gen_id) return fail(r, "a row given twice");
    r->gen[sec][idx] = r->gen_id;
  } else if (!fresh) {
    return fail(r, "a row given twice");
  }
  ft_stat_row *d = ft__vec_at(&dst->rows[sec], idx);
  if (!dist_fits(&d->t, &s->t) || !dist_fits(&d->b, &s->b)) return fail(r, "a row's counts too large to add");
  ft_stat_row sum = *d;
  if (!add_u64(&sum.calls, s->calls) || !add_u64(&sum.self_ns, s->self_ns) ||
      !add_u64(&sum.self_cpu_ns, s->self_cpu_ns) || !add_u64(&sum.total_dev_ns, s->total_dev_ns))
    return fail(r, "a row's counts too large to add");
  if (!ft_dist_merge(&d->t, &s->t) || !ft_dist_merge(&d->b, &s->b)) return fail(r, "out of memory");
  d->calls = sum.calls;
  d->self_ns = sum.self_ns;
  d->self_cpu_ns = sum.self_cpu_ns;
  d->total_dev_ns = sum.total_dev_ns;
  /* the ops' memory: signed sums, wrapping as a read's do (hostile bytes) */
  d->cpu_mem = ft__wrap_add(d->cpu_mem, s->cpu_mem), d->self_cpu_mem = ft__wrap_add(d->self_cpu_mem, s->self_cpu_mem);
  d->dev_mem = ft__wrap_add(d->dev_mem, s->dev_mem), d->self_dev_mem = ft__wrap_add(d->self_dev_mem, s->self_dev_mem);
  return 1;
}

/* A row read: into the total, and into its file's own rows (kept by rank). */
int ft__partial_end_row(reader *r) {
  ft_stat_row *s = &r->row;
  frame *f = top(r);
  int ok = 1;
  if (!r->row_has_name) ok = fail(r, "a row without a name");
  else if (ft_stat_keyed_by_aux(r->sec) && !(f->seen & (1u << R_AUX)))
    ok = fail(r, "an op_shapes or op_modules row without aux");
  else if (!ft_stat_keyed_by_aux(r->sec) && (f->seen & (1u << R_AUX))) ok = fail(r, "aux in a row of another section");
  if (ok && r->row_target < 0 && r->job->n_files == r->file0) ok = fail(r, "rows of a total of no file");
  if (ok && r->sec == FT_STAT_KERNELS) { /* what the files' kernel_ns, comm_ns and busy must agree with */
    bool own = r->row_target >= 0;
    *(own ? &r->file_kernel_rows : &r->total_kernel_rows) += s->t.total;
    if (s->comm) *(own ? &r->file_comm_rows : &r->total_comm_rows) += s->t.total;
    uint64_t *longest = own ? &r->file_longest : &r->total_longest;
    if (s->t.n && s->t.max > *longest) *longest = s->t.max;
  }
  if (ok) ok = merge_row(r, &r->job->total, r->sec, s, true);
  ft_stat_file *x = r->row_target >= 0 ? &r->job->files[r->row_target] : NULL;
  if (ok && x && x->own) {
    ft_stat_row o = *s; /* its names in the file's own table */
    const ft__strtab *tn = &r->job->total.names;
    if (ft__intern(&x->own->names, ft__intern_str(tn, s->name_id), ft__intern_len(tn, s->name_id), &o.name_id) ||
        (ft_stat_keyed_by_aux(r->sec) &&
         ft__intern(&x->own->names, ft__intern_str(tn, s->aux_id), ft__intern_len(tn, s->aux_id), &o.aux_id)))
      ok = fail(r, "out of memory");
    if (ok) ok = merge_row(r, x->own, r->sec, &o, false);
  }
  ft_dist_free(&s->t);
  ft_dist_free(&s->b);
  return ok;
}

int ft__partial_end_file(reader *r) {
  ft_stat_file *x = cur_file(r);
  frame *f = top(r);
  if (!(f->seen & (1u << FI_PATH))) return fail(r, "a file without a path");
  if (!(f->seen & (1u << FI_SOURCE))) return fail(r, "a file without its source");
  if (x->comm_ns > x->kernel_ns) return fail(r, "a file's communication time exceeds its kernel time");
  /* what a read gives, and the reports rely on: a device busy at most the span
   * (busy % up to 100), kernel time that is its kernel rows', no kernel longer than
   * the busiest device was busy (unless devices past the cap have no busy time) */
  uint64_t busiest = 0;
  for (size_t d = 0; d < x->n_busy; d++) {
    if (x->busy[d].busy_ns > x->span_ns) return fail(r, "a device busy longer than its file's span");
    if (x->busy[d].busy_ns > busiest) busiest = x->busy[d].busy_ns;
  }
  if (f->seen & (1u << FI_ROWS)) {
    if (r->file_kernel_rows != x->kernel_ns || r->file_comm_rows != x->comm_ns)
      return fail(r, "a file's kernel_ns or comm_ns is not its kernel rows' time");
    if (!x->device_cap_events && r->file_longest > busiest)
      return fail(r, "a kernel longer than its file's busiest device was busy (busy time below kernel time)");
  }
  for (int c = 0; c < 3; c++) {
    if (r->job->total.mem_events[c] > UINT64_MAX - x->mem_events[c]) return fail(r, "a count too large");
    r->job->total.mem_events[c] += x->mem_events[c];
  }
  r->files_kernel += x->kernel_ns;
  r->files_comm += x->comm_ns;
  if (busiest > r->files_busiest) r->files_busiest = busiest;
  r->files_capped |= x->device_cap_events > 0;
  if (!(f->seen & (1u << FI_ROWS))) r->all_rows = false;
  if (r->file_unknown_sum > UINT64_MAX - x->skipped.unknown_cat) return fail(r, "a count too large");
  r->file_unknown_sum += x->skipped.unknown_cat;
  return 1;
}

int ft__partial_end_event(reader *r) {
  ft_stat_job *job = r->job;
  ft_stats *t = &job->total;
  if (top(r)->pos != EV_VALUES) return fail(r, "a device event is 15 values");
  if (t->n_trace > r->trace0) {
    const ft_stat_event *p = &t->trace[t->n_trace - 1];
    if (p->file > r->ev.file || (p->file == r->ev.file && p->ts > r->ev.ts))
      return fail(r, "device events not by file, then by start");
    r->trace_in_file = p->file == r->ev.file ? r->trace_in_file + 1 : 1;
  } else {
    r->trace_in_file = 1;
  }
  if (r->trace_in_file > r->trace_limit) return fail(r, "more device events of a file than trace_limit");
  if (t->n_trace == r->cap_trace) {
    size_t cap = r->cap_trace ? 2 * r->cap_trace : 256;
    ft_stat_event *p = realloc(t->trace, cap * sizeof *p);
    if (!p) return fail(r, "out of memory");
    t->trace = p;
    r->cap_trace = cap;
  }
  t->trace[t->n_trace++] = r->ev;
  return 1;
}

static void reader_free(reader *r) {
  free(r->strs);
  free(r->d.hist);
  for (int s = 0; s < FT_STAT_N_SECTIONS; s++) free(r->gen[s]);
  ft_dist_free(&r->row.t);
  ft_dist_free(&r->row.b);
}

/* The job's totals and ranks, as job_read gives them: a file whose trace names
 * no rank takes its position in the merged job. */
static ft_status finish_job(ft_stat_job *job, char *err, size_t errlen) {
  for (size_t f = 0; f < job->n_files; f++) {
    ft_stat_file *x = &job->files[f];
    const ft_stat_skips *k = &x->skipped;
    x->rank = x->meta.rank >= 0 ? x->meta.rank : (int64_t)f;
    if (!add_u64(&job->events, x->events) || !add_u64(&job->skipped.bad_time, k->bad_time) ||
        !add_u64(&job->skipped.time_range, k->time_range) || !add_u64(&job->skipped.unknown_cat, k->unknown_cat) ||
        !add_u64(&job->skipped.no_dur, k->no_dur) || !add_u64(&job->skipped.neg_dur, k->neg_dur) ||
        !add_u64(&job->skipped.bad_bytes, k->bad_bytes) || !add_u64(&job->skipped.bad_ext, k->bad_ext) ||
        !add_u64(&job->skipped.unpaired, k->unpaired) || ft_stat_skips_total(&job->skipped) < job->skipped.bad_time) {
      snprintf(err, errlen, "%s: the files' event counts add up past 64 bits", x->path);
      return FT_EPARSE;
    }
  }
  /* the skip reasons' sum is printed too: it must fit as well */
  const ft_stat_skips *k = &job->skipped;
  uint64_t t = 0;
  const uint64_t parts[] = {k->bad_time, k->time_range, k->unknown_cat, k->no_dur,
                            k->neg_dur,  k->bad_bytes,  k->bad_ext,     k->unpaired};
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    if (!add_u64(&t, parts[i])) {
      snprintf(err, errlen, "the files' skipped events add up past 64 bits");
      return FT_EPARSE;
    }
  return FT_OK;
}

static ft_status merge(ft_stat_job *job, const char *const *paths, size_t n, const char *mem, size_t mem_len,
                       bool by_rank, bool keep_rows, uint64_t *trace_limit, char *err, size_t errlen) {
  memset(job, 0, sizeof *job);
  *trace_limit = UINT64_MAX;
  if (ft_stats_init(&job->total)) {
    snprintf(err, errlen, "out of memory");
    return FT_ENOMEM;
  }
  reader r = {.job = job, .keep_rows = keep_rows || by_rank};
  ft_status s = FT_OK;
  char why[512];
  size_t *partial_of = NULL, cap_of = 0; /* each file's partial */
  for (size_t i = 0; i < n && !s; i++) {
    int fd = -1;
    if (!mem) {
      fd = !strcmp(paths[i], "-") ? STDIN_FILENO : open(paths[i], O_RDONLY | O_CLOEXEC);
      struct stat sb;
      if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", paths[i], strerror(errno));
        s = FT_EIO;
        break;
      }
      if (!fstat(fd, &sb) && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: a directory, not a partial summary", paths[i]);
        if (fd != STDIN_FILENO) close(fd);
        s = FT_EIO;
        break;
      }
    }
    s = ft__partial_read(&r, fd, mem, mem_len, why, sizeof why);
    if (fd > STDIN_FILENO) close(fd);
    if (s) {
      snprintf(err, errlen, "%s: %s", paths[i], why);
      break;
    }
    if (by_rank && !r.all_rows && job->n_files > r.file0) {
      snprintf(err, errlen, "%s: written without --by-rank: its files have no rows of their own", paths[i]);
      s = FT_EINVAL;
    }
    if (r.trace_limit < *trace_limit) *trace_limit = r.trace_limit;
    if (!s && job->n_files > cap_of) {
      size_t *p = realloc(partial_of, job->n_files * sizeof *p);
      if (!p) snprintf(err, errlen, "out of memory"), s = FT_ENOMEM;
      else partial_of = p, cap_of = job->n_files;
    }
    for (size_t f = r.file0; !s && f < job->n_files; f++) partial_of[f] = i;
  }
  reader_free(&r);
  if (!s) s = ft__sources_distinct(job, partial_of, paths, err, errlen);
  free(partial_of);
  if (!s) s = finish_job(job, err, errlen);
  return s;
}

/* The same partial named twice (by any name) would count its files twice. */
typedef struct file_id {
  dev_t dev;
  ino_t ino;
  size_t arg;
} file_id;

static int by_id(const void *a, const void *b) {
  const file_id *x = a, *y = b;
  if (x->dev != y->dev) return (x->dev > y->dev) - (x->dev < y->dev);
  if (x->ino != y->ino) return (x->ino > y->ino) - (x->ino < y->ino);
  return (x->arg > y->arg) - (x->arg < y->arg);
}

/* Sorted by device and inode, so that 10 000 partials cost no 10 000^2 compares;
 * the pair named is the first repeat in argument order's, its earlier name first. */
static bool partial_twice(const char *const *paths, size_t n, char *err, size_t errlen) {
  file_id *ids = calloc(n ? n : 1, sizeof *ids);
  size_t m = 0, best = SIZE_MAX, first = 0;
  for (size_t f = 0; ids && f < n; f++) {
    struct stat sb;
    bool ok = !strcmp(paths[f], "-") ? !fstat(STDIN_FILENO, &sb) : !stat(paths[f], &sb);
    if (ok && S_ISREG(sb.st_mode)) ids[m++] = (file_id){sb.st_dev, sb.st_ino, f};
  }
  if (ids) qsort(ids, m, sizeof *ids, by_id);
  for (size_t i = 1; ids && i < m; i++)
    if (ids[i].dev == ids[i - 1].dev && ids[i].ino == ids[i - 1].ino && ids[i].arg < best) {
      best = ids[i].arg;
      size_t g = i - 1; /* the first name of this file */
      while (g && ids[g - 1].dev == ids[i].dev && ids[g - 1].ino == ids[i].ino) g--;
      first = ids[g].arg;
    }
  free(ids);
  if (best == SIZE_MAX) return false;
  snprintf(err, errlen, "%s: the same file as %s, given twice (its files would be counted twice)", paths[best],
           paths[first]);
  return true;
}

ft_status ft_stat_job_merge(ft_stat_job *job, const char *const *paths, size_t n, bool by_rank, bool keep_rows,
                            uint64_t *trace_limit, char *err, size_t errlen) {
  if (partial_twice(paths, n, err, errlen)) {
    memset(job, 0, sizeof *job);
    *trace_limit = 0;
    return ft_stats_init(&job->total) ? FT_ENOMEM : FT_EINVAL;
  }
  return merge(job, paths, n, NULL, 0, by_rank, keep_rows, trace_limit, err, errlen);
}

ft_status ft_stat_job_merge_mem(ft_stat_job *job, const char *name, const char *data, size_t len, bool by_rank,
                                bool keep_rows, uint64_t *trace_limit, char *err, size_t errlen) {
  const char *paths[1] = {name};
  return merge(job, paths, 1, data ? data : "", len, by_rank, keep_rows, trace_limit, err, errlen);
}
