/* The report's Advice panel: `flagtrace advise`'s findings on the report's event models, each
 * pointing at its first occurrence on the page's timeline. */
#include <stdlib.h>
#include <string.h>

#include "advise_cli.h"
#include "report_events.h"
#include "stats_out.h"

static void put_us(FILE *f, int64_t ns) { /* as advise -f json writes cost_us */
  uint64_t a = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
  fprintf(f, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
}

/* The file a finding's first occurrence lies in: the file whose advice holds it, else
 * (the job's stragglers) the file of the rank it names; -1 when none. */
static long file_of(const ft_cli_advice *a, const ft_cli_finding *x) {
  for (size_t i = 0; i < a->n_files; i++)
    if (a->per[i].n_findings && x->f >= a->per[i].findings && x->f < a->per[i].findings + a->per[i].n_findings)
      return (long)i;
  for (size_t i = 0; x->f->n_occ && i < a->n_files; i++)
    if (a->ranks[i] == x->f->occ[0].rank) return (long)i;
  return -1;
}

ft_status ft__report_advice(FILE *out, ft__tl *tl, const ft_stat_job *job) {
  size_t n = tl->n < job->n_files ? tl->n : job->n_files;
  const char **paths = calloc(n ? n : 1, sizeof *paths);
  if (!paths) return FT_ENOMEM;
  for (size_t i = 0; i < n; i++) paths[i] = job->files[i].path;
  ft_advise_opts o;
  ft_advise_opts_default(&o);
  ft_cli_advice a;
  char err[640];
  ft_status s = ft_cli_advice_models(&a, tl->models, paths, n, &o, err, sizeof err);
  if (s == FT_ENOMEM) {
    ft_cli_advice_free(&a);
    free(paths);
    return s;
  }
  if (s) { /* the report stands without its advice: the panel says why */
    fputs("{\"error\": ", out);
    ft_json_string(out, err);
    fputs(", \"findings\": []}", out);
  } else {
    fputs("{\"findings\": [", out);
    for (size_t r = 0; r < a.n_ranked; r++) {
      const ft_cli_finding *x = &a.ranked[r];
      const ft_advise_finding *g = x->f;
      fprintf(out, "%s\n    {\"rule\": \"%s\", \"rank\": %lld, \"cost_us\": ", r ? "," : "", ft_rule_name(g->rule),
              (long long)x->rank);
      put_us(out, (int64_t)g->cost_ns);
      fprintf(out, ", \"share\": %.6f, \"count\": %llu, \"where\": ", g->cost_share, (unsigned long long)g->count);
      ft_json_string(out, g->where);
      fputs(", \"what\": ", out);
      ft_json_string(out, g->what);
      fputs(", \"suggestion\": ", out);
      ft_json_string(out, g->suggestion);
      long fi = file_of(&a, x);
      int64_t first = fi >= 0 ? ft__tl_first_ts(&tl->models[fi]) : INT64_MAX;
      if (g->n_occ && fi >= 0 && first != INT64_MAX)
        fprintf(out, ", \"at\": {\"file\": %ld, \"t_ns\": %lld, \"dur_ns\": %lld}}", fi,
                (long long)(g->occ[0].ts - first), (long long)g->occ[0].dur);
      else fputs(", \"at\": null}", out);
    }
    fputs(a.n_ranked ? "\n  ]}" : "]}", out);
  }
  ft_cli_advice_free(&a);
  free(paths);
  return FT_OK;
}
