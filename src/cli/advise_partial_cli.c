/* advise --partial / --merge: a chunk of a job's files written as per-rank advice, and per-rank advice reduced to the
 * job's. */
#include <stdlib.h>
#include <string.h>

#include "advise_cli.h"
#include "advise_partial.h"

ft_status ft_cli_advice_write_partial(FILE *f, const ft_cli_advice *a, const ft_advise_opts *o) {
  ft_advise_partial p = {.n = a->n_files, .opts = *o, .has_opts = true, .whole_trace = a->whole_trace};
  p.step = (char *)a->step; /* borrowed for the write: p is not freed */
  p.parts = calloc(a->n_files ? a->n_files : 1, sizeof *p.parts);
  if (!p.parts) return FT_ENOMEM;
  for (size_t i = 0; i < a->n_files; i++) /* shallow: the advice stays a's */
    p.parts[i] = (ft_advise_part){
        .advice = a->per[i], .file = (char *)a->paths[i], .rank = a->ranks[i], .positional = a->positional[i]};
  ft_status st = ft_advise_partial_write(f, &p);
  free(p.parts);
  return st;
}

/* A rank taken from the file's position in its partial: every rank the advice holds becomes r. */
static void renumber(ft_advice *a, int64_t r) {
  for (size_t i = 0; i < a->n_steps; i++) a->steps[i].rank = r;
  for (size_t i = 0; i < a->n_findings; i++)
    for (size_t k = 0; k < a->findings[i].n_occ; k++) a->findings[i].occ[k].rank = r;
}

ft_status ft_cli_advice_merge(ft_cli_advice *a, ft_advise_partial *p, const char *const *paths, size_t n,
                              ft_advise_opts *o, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  memset(p, 0, sizeof *p);
  for (size_t i = 0; i < n; i++) {
    ft_status st = ft_advise_partial_read(paths[i], p, err, errlen);
    if (st) return st;
  }
  return ft_cli_advice_take(a, p, o, err, errlen);
}

ft_status ft_cli_advice_take(ft_cli_advice *a, ft_advise_partial *p, ft_advise_opts *o, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  a->n_files = p->n;
  a->per = calloc(p->n ? p->n : 1, sizeof *a->per);
  a->ranks = calloc(p->n ? p->n : 1, sizeof *a->ranks);
  a->positional = calloc(p->n ? p->n : 1, sizeof *a->positional);
  const char **names = calloc(p->n ? p->n : 1, sizeof *names);
  if (!a->per || !a->ranks || !a->positional || !names) {
    free(names);
    snprintf(err, errlen, "out of memory");
    return FT_ENOMEM;
  }
  for (size_t i = 0; i < p->n; i++) { /* the advice moves to a: a frees it */
    a->per[i] = p->parts[i].advice;
    memset(&p->parts[i].advice, 0, sizeof p->parts[i].advice);
    a->ranks[i] = p->parts[i].rank;
    a->positional[i] = p->parts[i].positional;
    if (p->parts[i].positional) /* its position in the whole job, as one advise run gives it */
      renumber(&a->per[i], a->ranks[i] = (int64_t)i);
    names[i] = p->parts[i].file ? p->parts[i].file : "";
  }
  a->paths = names; /* the caller frees it after ft_cli_advice_free (a borrows its paths) */
  a->step = p->step;
  a->whole_trace = p->whole_trace;
  if (p->has_opts) *o = p->opts;
  return ft_cli_advice_finish(a, o, err, errlen);
}
