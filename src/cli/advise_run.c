/* advise's reading: each trace into the model and advised (in parallel), then the job's part, findings ranked. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advise_cli.h"

typedef struct ft_cli_file_job {
  const char *path;
  size_t pos;
  const char *step;
  const ft_advise_opts *o;
  ft_advice *out;
  int64_t rank;
  bool positional;
  bool whole; /* the model had no step: the whole trace is one */
  ft_status st;
  char err[640];
} file_job;

/* A file's model advised into j (a model without a rank takes the file's position,
 * as stats gives it); the reason of a failure in err, without the file's name. */
static ft_status advise_model(file_job *j, ft_model *m, char *err, size_t errlen) {
  j->whole = m->n_steps == 0 || (m->n_steps == 1 && m->steps[0].number == -1 && m->steps[0].slice == FT_MODEL_NONE);
  if (j->step && j->whole) { /* a name that names nothing is a mistake, not a whole-trace step */
    snprintf(err, errlen, "no range named '%s' (--step)", j->step);
    return j->st = FT_ENOTFOUND;
  }
  j->positional = m->rank < 0;
  if (m->rank < 0) m->rank = (int64_t)j->pos;
  j->rank = m->rank;
  return j->st = ft_advise(m, j->o, j->out, err, errlen);
}

/* One file: the model is held only while it is advised (the advice keeps no index into it that is read later). */
static void advise_file(file_job *j) {
  ft_model m;
  ft_model_opts mo = {.step = j->step};
  memset(&m, 0, sizeof m);
  char err[512];
  j->st = ft_model_read(&m, j->path, &mo, NULL, err, sizeof err);
  if (j->st) { /* one line naming the file, whether or not the reader's message does */
    bool named = !strncmp(err, j->path, strlen(j->path)) && err[strlen(j->path)] == ':';
    snprintf(j->err, sizeof j->err, "%s%s%s", named ? "" : j->path, named ? "" : ": ", err);
  } else if (advise_model(j, &m, err, sizeof err)) {
    snprintf(j->err, sizeof j->err, "%s: %s", j->path, err);
  }
  ft_model_free(&m);
}

typedef struct pool {
  file_job *jobs;
  size_t n;
  atomic_size_t next;
} pool;

static void *worker(void *arg) {
  pool *p = arg;
  for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) advise_file(&p->jobs[i]);
  return NULL;
}

static int by_cost(const void *a, const void *b) {
  const ft_cli_finding *x = a, *y = b;
  if (x->f->cost_ns != y->f->cost_ns) return x->f->cost_ns < y->f->cost_ns ? 1 : -1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1; /* the job's (-1) first */
  if (x->f->rule != y->f->rule) return x->f->rule < y->f->rule ? -1 : 1;
  return strcmp(x->f->where, y->f->where);
}

static ft_status rank_findings(ft_cli_advice *a) {
  size_t n = a->job.n_findings;
  for (size_t i = 0; i < a->n_files; i++) n += a->per[i].n_findings;
  a->ranked = calloc(n ? n : 1, sizeof *a->ranked);
  if (!a->ranked) return FT_ENOMEM;
  for (size_t i = 0; i < a->n_files; i++)
    for (size_t k = 0; k < a->per[i].n_findings; k++)
      a->ranked[a->n_ranked++] = (ft_cli_finding){&a->per[i].findings[k], a->ranks[i]};
  for (size_t k = 0; k < a->job.n_findings; k++) { /* a straggler: the rank its occurrences name */
    const ft_advise_finding *f = &a->job.findings[k];
    a->ranked[a->n_ranked++] = (ft_cli_finding){f, f->n_occ ? f->occ[0].rank : -1};
  }
  if (a->n_ranked) qsort(a->ranked, a->n_ranked, sizeof *a->ranked, by_cost);
  return FT_OK;
}

/* (advise_cli.h) */
ft_status ft_cli_advice_begin(ft_cli_advice *a, const char *const *paths, size_t n, const char *step,
                              const ft_advise_opts *o) {
  memset(a, 0, sizeof *a);
  a->paths = paths;
  a->step = step;
  a->per = calloc(n ? n : 1, sizeof *a->per);
  a->ranks = calloc(n ? n : 1, sizeof *a->ranks);
  a->positional = calloc(n ? n : 1, sizeof *a->positional);
  a->jobs = calloc(n ? n : 1, sizeof *a->jobs);
  if (!a->per || !a->ranks || !a->positional || !a->jobs) return FT_ENOMEM;
  a->n_files = n;
  for (size_t i = 0; i < n; i++)
    a->jobs[i] = (file_job){.path = paths[i], .pos = i, .step = step, .o = o, .out = &a->per[i]};
  return FT_OK;
}

/* (advise_cli.h) */
ft_status ft_cli_advice_on_model(void *ctx, size_t file, struct ft_model *m, char *err, size_t errlen) {
  ft_cli_advice *a = ctx;
  if (file >= a->n_files) return FT_EINVAL;
  file_job *j = &a->jobs[file];
  if (advise_model(j, m, err, errlen)) snprintf(j->err, sizeof j->err, "%s: %s", j->path, err);
  return j->st;
}

/* (advise_cli.h) */
ft_status ft_cli_advice_end(ft_cli_advice *a, const ft_advise_opts *o, char *err, size_t errlen) {
  ft_status st = FT_OK;
  a->whole_trace = a->n_files > 0;
  for (size_t i = 0; i < a->n_files; i++) {
    file_job *j = &a->jobs[i];
    a->ranks[i] = j->rank;
    a->positional[i] = j->positional;
    a->whole_trace = a->whole_trace && j->whole;
    if (!st && j->st) {
      st = j->st;
      snprintf(err, errlen, "%s", j->err);
    }
  }
  free(a->jobs);
  a->jobs = NULL;
  return st ? st : ft_cli_advice_finish(a, o, err, errlen);
}

/* (advise_cli.h) */
ft_status ft_cli_advice_read(ft_cli_advice *a, const char *const *paths, size_t n, const char *step,
                             const ft_advise_opts *o, char *err, size_t errlen) {
  if (ft_cli_advice_begin(a, paths, n, step, o)) {
    snprintf(err, errlen, "out of memory");
    return FT_ENOMEM;
  }
  pool p = {a->jobs, n, 0};
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nt = cores > 1 ? (size_t)cores : 1;
  if (nt > n) nt = n;
  pthread_t tid[64];
  size_t started = 0;
  for (; nt > 1 && started < nt - 1 && started < 64; started++) /* this thread is one more */
    if (pthread_create(&tid[started], NULL, worker, &p)) break;
  worker(&p);
  for (size_t t = 0; t < started; t++) pthread_join(tid[t], NULL);
  return ft_cli_advice_end(a, o, err, errlen);
}

ft_status ft_cli_advice_models(ft_cli_advice *a, const ft_model *models, const char *const *paths, size_t n,
                               const ft_advise_opts *o, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  a->paths = paths;
  a->per = calloc(n ? n : 1, sizeof *a->per);
  a->ranks = calloc(n ? n : 1, sizeof *a->ranks);
  a->positional = calloc(n ? n : 1, sizeof *a->positional);
  if (!a->per || !a->ranks || !a->positional) return snprintf(err, errlen, "out of memory"), FT_ENOMEM;
  a->n_files = n;
  a->whole_trace = n > 0;
  for (size_t i = 0; i < n; i++) {
    ft_model m = models[i]; /* a shallow copy: only its rank is set, as advise_file does */
    a->whole_trace =
        a->whole_trace &&
        (m.n_steps == 0 || (m.n_steps == 1 && m.steps[0].number == -1 && m.steps[0].slice == FT_MODEL_NONE));
    a->positional[i] = m.rank < 0;
    if (m.rank < 0) m.rank = (int64_t)i;
    a->ranks[i] = m.rank;
    char merr[512];
    ft_status st = ft_advise(&m, o, &a->per[i], merr, sizeof merr);
    if (st) return snprintf(err, errlen, "%s: %s", paths[i], merr), st;
  }
  return ft_cli_advice_finish(a, o, err, errlen);
}

ft_status ft_cli_advice_finish(ft_cli_advice *a, const ft_advise_opts *o, char *err, size_t errlen) {
  ft_status st = FT_OK;
  size_t n = a->n_files;
  if (n > 1) { /* the cross-rank part reduces on the per-rank results */
    ft_advice **ptr = malloc(n * sizeof *ptr);
    if (!ptr) st = FT_ENOMEM, snprintf(err, errlen, "out of memory");
    for (size_t i = 0; ptr && i < n; i++) ptr[i] = &a->per[i];
    char jerr[512];
    if (ptr && (st = ft_advise_job((ft_advice *const *)ptr, n, o, &a->job, jerr, sizeof jerr)))
      snprintf(err, errlen, "%s", jerr);
    a->has_job = ptr && !st;
    free(ptr);
  }
  if (!st && rank_findings(a)) st = FT_ENOMEM, snprintf(err, errlen, "out of memory");
  return st;
}

void ft_cli_advice_free(ft_cli_advice *a) {
  for (size_t i = 0; a->per && i < a->n_files; i++) ft_advice_free(&a->per[i]);
  ft_advice_free(&a->job); /* zeroed when there was none */
  free(a->per);
  free(a->ranks);
  free(a->positional);
  free(a->ranked);
  free(a->jobs);
  memset(a, 0, sizeof *a);
}
