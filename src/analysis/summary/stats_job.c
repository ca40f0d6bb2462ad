/* A job's traces for stats and report: each file read on its own thread, then merged by name. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deflate.h" /* ft__cpus */
#include "model.h"
#include "stats.h"
#include "stats_hta.h"
#include "stats_internal.h"
#include "stats_memory.h"

/* Adds src's rows into dst (names re-interned in dst's table). */
static bool merge_rows(ft_stats *dst, const ft_stats *src) {
  for (int sec = 0; sec < FT_STAT_N_SECTIONS; sec++) {
    for (size_t i = 0; i < src->rows[sec].len; i++) {
      const ft_stat_row *s = ft__vec_at(&src->rows[sec], i);
      uint32_t id;
      if (ft__intern(&dst->names, ft__intern_str(&src->names, s->name_id), ft__intern_len(&src->names, s->name_id),
                     &id))
        return false;
      uint32_t aux = 0; /* keyed by the name and the Input Dims text or module */
      if (ft_stat_keyed_by_aux(sec) &&
          ft__intern(&dst->names, ft__intern_str(&src->names, s->aux_id), ft__intern_len(&src->names, s->aux_id), &aux))
        return false;
      uint64_t *slot = ft__map_upsert(
          &dst->index[sec], ft_stat_keyed_by_aux(sec) ? (uint64_t)aux << 32 | id : (uint64_t)s->cat << 32 | id);
      if (!slot) return false;
      if (!*slot) {
        ft_stat_row *r = ft__vec_push(&dst->rows[sec]);
        if (!r) return false;
        r->name_id = id;
        r->aux_id = aux;
        r->cat = s->cat;
        r->comm = s->comm;
        *slot = dst->rows[sec].len;
      }
      ft_stat_row *r = ft__vec_at(&dst->rows[sec], *slot - 1);
      if (!ft_dist_merge(&r->t, &s->t) || !ft_dist_merge(&r->b, &s->b)) return false;
      r->calls += s->calls;
      r->self_ns += s->self_ns;
      r->self_cpu_ns += s->self_cpu_ns;
      r->total_dev_ns += s->total_dev_ns;
      r->cpu_mem = ft__wrap_add(r->cpu_mem, s->cpu_mem),
      r->self_cpu_mem = ft__wrap_add(r->self_cpu_mem, s->self_cpu_mem);
      r->dev_mem = ft__wrap_add(r->dev_mem, s->dev_mem),
      r->self_dev_mem = ft__wrap_add(r->self_dev_mem, s->self_dev_mem);
    }
  }
  return true;
}

/* A file's summary kept for --by-rank: its names, rows and their index, nothing
 * of the read (devices, joins, the row cache), so a file costs what it reports
 * (docs/guarantees.md). */
static void rows_only(ft_stats *st) {
  for (size_t i = 0; i < st->n_devices; i++) {
    ft__ivset_free(&st->devices[i].all);
    ft__ivset_free(&st->devices[i].copy);
  }
  free(st->devices);
  st->devices = NULL;
  st->n_devices = st->cap_devices = 0;
  ft__join_free(&st->device_index);
  ft__join_free(&st->ext_op);
  ft__join_free(&st->ext_rt);
  ft__vec_free(&st->op_kernel_wait);
  ft__vec_free(&st->host_early);
  ft__vec_free(&st->ops_mem);
  ft__hta_free(st->hta);
  st->hta = NULL;
  ft__memacc_free(st->mem);
  st->mem = NULL;
  free(st->last), free(st->host), free(st->rt), free(st->trace);
  st->last = NULL, st->host = NULL, st->rt = NULL, st->trace = NULL;
  st->n_host = st->cap_host = st->n_rt = st->cap_rt = st->n_trace = 0;
}

/* Moves src's names, rows and unknown categories into dst, empty: src is left empty. */
static void take_rows(ft_stats *dst, ft_stats *src) {
  ft__strtab names = dst->names;
  dst->names = src->names, src->names = names;
  for (int sec = 0; sec < FT_STAT_N_SECTIONS; sec++) {
    ft__vec rows = dst->rows[sec];
    ft__map index = dst->index[sec];
    dst->rows[sec] = src->rows[sec], src->rows[sec] = rows;
    dst->index[sec] = src->index[sec], src->index[sec] = index;
  }
  ft__map cats = dst->unknown_cats;
  dst->unknown_cats = src->unknown_cats, src->unknown_cats = cats;
}

typedef struct worker {
  ft_stat_job *job;
  const char *const *paths;
  const char *mem; /* one file from memory (fuzzing) instead of paths */
  size_t mem_len;
  size_t n, next;   /* the next file to read, under lock */
  size_t n_threads; /* files read at once */
  ft_stat_read_opts o;
  pthread_mutex_t lock;
  bool failed;       /* a file failed: start no other */
  ft_status *status; /* per file */
  char (*errs)[512];
  ft_stat_event **traces; /* per file, names re-interned in the total */
  size_t *n_traces;
} worker;

static ft_status read_one(worker *w, size_t f) {
  ft_stat_job *job = w->job;
  ft_stat_file *file = &job->files[f];
  ft_stats st;
  char *err = w->errs[f];
  if (ft_stats_init(&st)) {
    ft_stats_free(&st);
    snprintf(err, sizeof w->errs[f], "out of memory");
    return FT_ENOMEM;
  }
  st.timeline = w->o.timeline;
  st.trace_limit = w->o.trace_limit;
  st.want_args = w->o.trace_limit || w->o.hta; /* the trace report's columns, HTA's launches and queues */
  st.want_ops = w->o.ops;
  st.want_modules = w->o.ops && w->o.modules;
  st.want_op_kernels = w->o.ops && w->o.op_kernels;
  st.want_source = w->o.source;
  if (w->o.memory) { /* runtime calls' correlation ids name the call that allocated */
    st.want_memory = st.want_args = true;
    if (!(st.mem = ft__memacc_new())) {
      ft_stats_free(&st);
      snprintf(err, sizeof w->errs[f], "out of memory");
      return FT_ENOMEM;
    }
  }
  if (w->o.hta && !(st.hta = ft__hta_new())) {
    ft_stats_free(&st);
    snprintf(err, sizeof w->errs[f], "out of memory");
    return FT_ENOMEM;
  }
  st.file_threads = (int)w->n_threads;
  ft_status s;
  if (w->o.model || w->o.on_model) {
    /* the file into the event model, then the model into the summary (stats --engine=model); for
     * on_model alone, the summary from the same parse */
    ft_model m;
    ft_model_opts mo = {.source = w->o.source};
    ft_stats *same = w->o.model ? NULL : &st;
    s = w->mem ? ft_model_read_mem(&m, w->mem, w->mem_len, &mo, same, err, sizeof w->errs[f])
               : ft_model_read(&m, w->paths[f], &mo, same, err, sizeof w->errs[f]);
    if (!s && w->o.model) {
      file->model_slices = m.n;
      file->model_bytes = ft_model_bytes(&m);
      file->model_bytes_distinct = ft_model_bytes_distinct(&m);
      s = ft_model_replay(&m, &st);
    }
    if (!s && w->o.on_model) s = w->o.on_model(w->o.on_model_ctx, f, &m, err, sizeof w->errs[f]);
    if (!s && w->o.models) w->o.models[f] = m; /* the report's slices (report_events.c) */
    else ft_model_free(&m);
  } else {
    s = w->mem ? ft_stats_read_mem(&st, w->mem, w->mem_len, err, sizeof w->errs[f])
               : ft_stats_read(&st, w->paths[f], err, sizeof w->errs[f]);
  }
  if (!s) {
    ft_stats_finish(&st);
    if (!ft__hta_finish(&st, &file->hta)) s = FT_ENOMEM;
    file->busy = ft_stats_busy(&st, &file->n_busy);
    if (file->n_busy == SIZE_MAX) {
      file->n_busy = 0;
      s = FT_ENOMEM;
    }
  }
  if (!s) {
    file->meta = st.meta;
    file->rank = st.meta.rank >= 0 ? st.meta.rank : (int64_t)f;
    file->events = st.events;
    file->span_ns = ft_stats_span(&st);
    file->first_ns = st.first_ns;
    file->skipped = st.skipped;
    file->device_cap_events = st.device_cap_events;
    file->cut_strings = st.cut_strings;
    for (int c = 0; c < 3; c++) file->mem_events[c] = st.mem_events[c];
    file->source = st.source;
    file->mem_seen = st.mem_seen;
    if (w->o.memory) { /* moved */
      file->mem = st.mem_sum;
      file->mem_kept = true;
      memset(&st.mem_sum, 0, sizeof st.mem_sum);
    }
    for (size_t i = 0; i < st.rows[FT_STAT_KERNELS].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st.rows[FT_STAT_KERNELS], i);
      file->kernel_ns += r->t.total;
      if (r->comm) file->comm_ns += r->t.total;
    }
    pthread_mutex_lock(&w->lock);
    /* a job of one file (not kept by rank) takes its rows as they are: a copy would
     * hold every name and row twice at the end of the read */
    bool moved = job->n_files == 1 && !w->o.by_rank;
    if (moved) take_rows(&job->total, &st);
    bool ok = merge_rows(&job->total, &st);
    for (int c = 0; c < 3; c++) job->total.mem_events[c] += st.mem_events[c];
    for (size_t i = 0; ok && i < st.unknown_cats.cap; i++) {
      if (!st.unknown_cats.used[i]) continue;
      uint32_t id = (uint32_t)st.unknown_cats.keys[i];
      uint32_t nid;
      uint64_t *c;
      ok = !ft__intern(&job->total.names, ft__intern_str(&st.names, id), ft__intern_len(&st.names, id), &nid) &&
           (c = ft__map_upsert(&job->total.unknown_cats, nid)) != NULL;
      if (ok) *c += st.unknown_cats.vals[i];
    }
    if (ok && st.n_trace) {
      w->traces[f] = malloc(st.n_trace * sizeof *w->traces[f]);
      ok = w->traces[f] != NULL;
      for (size_t i = 0; ok && i < st.n_trace; i++) {
        ft_stat_event e = st.trace[i];
        ok = moved || !ft__intern(&job->total.names, ft__intern_str(&st.names, e.name_id),
                                  ft__intern_len(&st.names, e.name_id), &e.name_id);
        w->traces[f][i] = e;
      }
      w->n_traces[f] = st.n_trace;
    }
    pthread_mutex_unlock(&w->lock);
    if (!ok) s = FT_ENOMEM;
  }
  if (s == FT_ENOMEM) snprintf(err, sizeof w->errs[f], "out of memory");
  if (!s && w->o.by_rank && (file->own = malloc(sizeof *file->own)) != NULL) {
    rows_only(&st);
    *file->own = st;
    return s;
  }
  if (!s && w->o.by_rank) {
    snprintf(err, sizeof w->errs[f], "out of memory");
    s = FT_ENOMEM;
  }
  ft_stats_free(&st);
  return s;
}

/* Files are taken in argument order; after a failure no new one is started, so
 * every file before the first malformed one is read whole and the error named is
 * always the first in argument order. */
static void *run(void *p) {
  worker *w = p;
  for (;;) {
    pthread_mutex_lock(&w->lock);
    size_t f = w->next < w->n && !w->failed ? w->next++ : SIZE_MAX;
    pthread_mutex_unlock(&w->lock);
    if (f == SIZE_MAX) return NULL;
    ft_status s = read_one(w, f);
    pthread_mutex_lock(&w->lock);
    w->status[f] = s;
    w->failed |= s != FT_OK;
    pthread_mutex_unlock(&w->lock);
  }
}

static int by_file_ts(const void *a, const void *b) {
  const ft_stat_event *x = a, *y = b;
  return (x->ts > y->ts) - (x->ts < y->ts);
}

static ft_status job_read(ft_stat_job *job, const char *const *paths, size_t n, const char *mem, size_t mem_len,
                          const ft_stat_read_opts *o, char *err, size_t errlen);

/* A file named twice (./S and S, a symlink, a hard link, stdin redirected from
 * it): the second name, in err. Files that cannot be stat'ed are left to the
 * read, which says why. */
static bool given_twice(const char *const *paths, size_t n, char *err, size_t errlen) {
  struct stat *sb = calloc(n ? n : 1, sizeof *sb);
  bool *ok = calloc(n ? n : 1, sizeof *ok), twice = false;
  if (!sb || !ok) { /* then no check: reading twice is what it was */
    free(sb), free(ok);
    return false;
  }
  for (size_t f = 0; f < n && !twice; f++) {
    ok[f] = !strcmp(paths[f], "-") ? !fstat(STDIN_FILENO, &sb[f]) : !stat(paths[f], &sb[f]);
    ok[f] = ok[f] && !S_ISFIFO(sb[f].st_mode) && !S_ISCHR(sb[f].st_mode) && !S_ISSOCK(sb[f].st_mode);
    for (size_t g = 0; ok[f] && g < f && !twice; g++) {
      if (!ok[g] || sb[g].st_dev != sb[f].st_dev || sb[g].st_ino != sb[f].st_ino) continue;
      snprintf(err, errlen, "%s: the same file as %s, given twice (its events would be counted twice)", paths[f],
               paths[g]);
      twice = true;
    }
  }
  free(sb);
  free(ok);
  return twice;
}

ft_status ft_stat_job_read(ft_stat_job *job, const char *const *paths, size_t n, const ft_stat_read_opts *o, char *err,
                           size_t errlen) {
  if (given_twice(paths, n, err, errlen)) {
    memset(job, 0, sizeof *job);
    return ft_stats_init(&job->total) ? FT_ENOMEM : FT_EINVAL;
  }
  return job_read(job, paths, n, NULL, 0, o, err, errlen);
}

ft_status ft_stat_job_read_mem(ft_stat_job *job, const char *name, const char *data, size_t len,
                               const ft_stat_read_opts *o, char *err, size_t errlen) {
  const char *paths[1] = {name};
  return job_read(job, paths, 1, data ? data : "", len, o, err, errlen);
}

static ft_status job_read(ft_stat_job *job, const char *const *paths, size_t n, const char *mem, size_t mem_len,
                          const ft_stat_read_opts *o, char *err, size_t errlen) {
  memset(job, 0, sizeof *job);
  snprintf(err, errlen, "out of memory"); /* replaced by a file's own reason */
  if (ft_stats_init(&job->total)) return FT_ENOMEM;
  job->files = calloc(n, sizeof *job->files);
  worker w = {.job = job, .paths = paths, .mem = mem, .mem_len = mem_len, .n = n, .o = *o};
  w.status = calloc(n, sizeof *w.status);
  w.errs = calloc(n, sizeof *w.errs);
  w.traces = calloc(n, sizeof *w.traces);
  w.n_traces = calloc(n, sizeof *w.n_traces);
  if (!job->files || !w.status || !w.errs || !w.traces || !w.n_traces) {
    free(w.status), free(w.errs), free(w.traces), free(w.n_traces);
    return FT_ENOMEM;
  }
  job->n_files = n;
  for (size_t f = 0; f < n; f++) job->files[f].path = paths[f];
  pthread_mutex_init(&w.lock, NULL);
  /* One thread per file up to the core count; stdin ("-") is one file like another. */
  int cpus = ft__cpus(); /* usable ones: a taskset counts */
  size_t cores = cpus > 0 ? (size_t)cpus : 1, n_threads = n < cores ? n : cores;
  w.n_threads = n_threads;
  pthread_t *th = calloc(n_threads, sizeof *th);
  size_t started = 0;
  for (size_t t = 1; th && t < n_threads; t++, started++)
    if (pthread_create(&th[t - 1], NULL, run, &w)) break;
  run(&w); /* this thread works too */
  for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
  free(th);
  pthread_mutex_destroy(&w.lock);
  ft_status s = FT_OK;
  for (size_t f = 0; f < n; f++) { /* the first failure in argument order */
    if (!w.status[f]) continue;
    s = w.status[f];
    snprintf(err, errlen, "%s: %s", paths[f], w.errs[f]);
    break;
  }
  /* the listing: every file's earliest events, by time within each file */
  size_t total = 0;
  for (size_t f = 0; f < n; f++) total += w.n_traces[f];
  if (!s && total) {
    job->total.trace = malloc(total * sizeof *job->total.trace);
    if (!job->total.trace) s = FT_ENOMEM;
    for (size_t f = 0; !s && f < n; f++) {
      qsort(w.traces[f], w.n_traces[f], sizeof *w.traces[f], by_file_ts);
      for (size_t i = 0; i < w.n_traces[f]; i++) {
        job->total.trace[job->total.n_trace] = w.traces[f][i];
        job->total.trace[job->total.n_trace++].file = (uint32_t)f;
      }
    }
  }
  for (size_t f = 0; f < n; f++) free(w.traces[f]);
  free(w.traces), free(w.n_traces), free(w.status), free(w.errs);
  for (size_t f = 0; f < n; f++) {
    const ft_stat_skips *k = &job->files[f].skipped;
    job->events += job->files[f].events;
    job->skipped.bad_time += k->bad_time;
    job->skipped.time_range += k->time_range;
    job->skipped.unknown_cat += k->unknown_cat;
    job->skipped.no_dur += k->no_dur;
    job->skipped.neg_dur += k->neg_dur;
    job->skipped.bad_bytes += k->bad_bytes;
    job->skipped.bad_ext += k->bad_ext;
    job->skipped.unpaired += k->unpaired;
  }
  return s;
}

uint64_t ft_stat_skips_total(const ft_stat_skips *k) {
  return k->bad_time + k->time_range + k->unknown_cat + k->no_dur + k->neg_dur + k->bad_bytes + k->bad_ext +
         k->unpaired;
}

void ft_stat_job_free(ft_stat_job *job) {
  for (size_t f = 0; f < job->n_files; f++) {
    ft_stats_busy_free(job->files[f].busy, job->files[f].n_busy);
    ft__hta_result_free(&job->files[f].hta);
    ft_stat_mem_free(&job->files[f].mem);
    if (job->files[f].own) ft_stats_free(job->files[f].own);
    free(job->files[f].own);
  }
  free(job->files);
  ft_stats_free(&job->total);
  memset(job, 0, sizeof *job);
}
