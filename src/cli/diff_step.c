/* flagtrace diff --by-step: two traces read into event models, step N against step N, op by op in call order. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "diff_step.h"
#include "stats_out.h"

typedef struct model_read {
  const char *path;
  ft_model m;
  ft_model_opts mo;
  ft_status st;
  bool read;
  char err[640];
} model_read;

static void *read_model(void *arg) {
  model_read *r = arg;
  r->st = ft_model_read(&r->m, r->path, &r->mo, NULL, r->err, sizeof r->err);
  r->read = !r->st;
  return NULL;
}

/* Rows [from, to) of rep under its own title. */
static void sub_table(FILE *f, const ft_report *rep, size_t from, size_t to, const char *title,
                      const ft_table_opts *to_opts) {
  ft_report v = *rep;
  v.title = title;
  v.cells = rep->cells + from * (size_t)rep->n_cols;
  v.n_rows = to - from;
  v.kinds = NULL;
  ft_report_table(f, &v, to_opts);
}

/* A line of the header: whole, or where wider than width broken at spaces, the rest indented. */
static void header_line(FILE *f, size_t width, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void header_line(FILE *f, size_t width, const char *fmt, ...) {
  char line[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  const char *p = line;
  for (size_t room = width; width > 20 && strlen(p) > room; room = width - 2) {
    const char *cut = p + room;
    while (cut > p && *cut != ' ') cut--;
    if (cut == p) break; /* one word wider than the line */
    fprintf(f, "%.*s\n  ", (int)(cut - p), p);
    p = cut + 1;
  }
  fprintf(f, "%s\n", p);
}

static const char *step_label(const ft_diff_step *d, const char *step) {
  return d->by == FT_DSTEP_WHOLE ? NULL : step ? step : "ProfilerStep";
}

static void write_table(FILE *f, const ft_diff_step *d, const char *const path[2], const ft_model *m[2],
                        const char *step, size_t width) {
  fputs("flagtrace diff --by-step: A is the baseline, ratios are B/A, deltas B - A\n", f);
  for (int s = 0; s < 2; s++) {
    fprintf(f, "%s: ", s ? "B" : "A");
    ft_put_visible(f, path[s]);
    fprintf(f, " (%zu slices, %zu step%s)\n", m[s]->n, d->steps[s], d->steps[s] == 1 ? "" : "s");
  }
  if (d->by == FT_DSTEP_WHOLE) fputs("steps: none used: the whole traces are compared as one step\n", f);
  else if (d->by == FT_DSTEP_BY_NUMBER)
    header_line(f, width, "steps: %s ranges paired by number: %zu of A's %zu with B's %zu", step_label(d, step),
                d->steps_matched, d->steps[0], d->steps[1]);
  else
    header_line(f, width, "steps: %s ranges paired by position (%s): %zu of A's %zu with B's %zu", step_label(d, step),
                step ? "a user range's k-th occurrence with the k-th" : "the step numbers differ between the files",
                d->steps_matched, d->steps[0], d->steps[1]);
  header_line(f, width,
              "ops: each thread's top-level ops in call order, aligned by name: %llu of A's %llu and B's %llu, %llu "
              "break%s (a name mismatch, resynced by name)",
              (unsigned long long)d->ops_matched, (unsigned long long)d->ops[0], (unsigned long long)d->ops[1],
              (unsigned long long)d->resyncs, d->resyncs == 1 ? "" : "s");
  ft_table_opts to = {width, 0, FT_UNIT_US};
  fputc('\n', f);
  ft_report_table(f, &d->reps[FT_DSTEP_STEPS], &to);
  const ft_report *st = &d->reps[FT_DSTEP_STEPS];
  for (size_t k = 0; k < st->n_rows; k++) {
    const ft_cell *c = st->cells + k * (size_t)st->n_cols;
    char title[512];
    fputc('\n', f);
    snprintf(title, sizeof title, "step %zu: A %s (%.3f us) vs B %s (%.3f us), B/A %.3f: the ops that changed most",
             k + 1, c[12].s[0] ? c[12].s : "-", c[1].d, c[13].s[0] ? c[13].s : "-", c[2].d, c[3].d);
    if (d->ops_at[k] == d->ops_at[k + 1]) fprintf(f, "== %s ==\n(none aligned)\n", title);
    else sub_table(f, &d->reps[FT_DSTEP_OPS], d->ops_at[k], d->ops_at[k + 1], title, &to);
    if (d->unmatched_at[k] == d->unmatched_at[k + 1]) continue;
    fputc('\n', f);
    snprintf(title, sizeof title, "step %zu: ops only in A or only in B", k + 1);
    sub_table(f, &d->reps[FT_DSTEP_UNMATCHED], d->unmatched_at[k], d->unmatched_at[k + 1], title, &to);
  }
}

static void write_json(FILE *f, const ft_diff_step *d, const char *const path[2], const ft_model *m[2],
                       const char *step) {
  fputs("{\n  \"schema\": 1,\n  \"by_step\": true,\n", f);
  for (int s = 0; s < 2; s++) {
    fprintf(f, "  \"%s\": {\"file\": ", s ? "b" : "a");
    ft_json_string(f, path[s]);
    fprintf(f, ", \"slices\": %zu, \"steps\": %zu},\n", m[s]->n, d->steps[s]);
  }
  fputs("  \"alignment\": {\"step\": ", f);
  const char *label = step_label(d, step);
  if (label) ft_json_string(f, label);
  else fputs("null", f);
  fprintf(f,
          ", \"steps_by\": \"%s\", \"steps_matched\": %zu, \"ops_a\": %llu, \"ops_b\": %llu, \"ops_matched\": %llu, "
          "\"resyncs\": %llu}",
          ft_diff_step_by_name(d->by), d->steps_matched, (unsigned long long)d->ops[0], (unsigned long long)d->ops[1],
          (unsigned long long)d->ops_matched, (unsigned long long)d->resyncs);
  for (int r = 0; r < FT_DSTEP_N; r++) {
    fprintf(f, ",\n  \"%s\": ", d->reps[r].key);
    ft_report_json(f, &d->reps[r]);
  }
  fputs("\n}\n", f);
}

int ft__cli_diff_by_step(const char *const path[2], int fmt, const char *output, bool overwrite, const char *step,
                         size_t limit, long width) {
  char err[640];
  bool exists = false;
  const char *names[1] = {output};
  if (output && ft_outputs_check(names, 1, overwrite, &exists, err, sizeof err))
    return ft_cli_output_refused("diff", exists, err);
  bool whole = step && !strcmp(step, "all");
  if (whole) step = NULL;
  model_read mr[2];
  for (int s = 0; s < 2; s++) mr[s] = (model_read){.path = path[s], .mo = {.step = step}};
  pthread_t tid;
  bool threaded = !pthread_create(&tid, NULL, read_model, &mr[1]); /* both sides at once */
  read_model(&mr[0]);
  if (threaded) pthread_join(tid, NULL);
  else read_model(&mr[1]);
  int rc = 0;
  for (int s = 0; s < 2 && !rc; s++)
    if (mr[s].st) {
      ft_cli_error("diff", "%s: %s", s ? "B" : "A", mr[s].err);
      rc = mr[s].st == FT_ENOMEM ? 1 : FT_CLI_USAGE;
    }
  for (int s = 0; s < 2 && !rc; s++)
    if (!mr[s].m.n) { /* as the plain diff refuses a side with nothing to compare */
      ft_cli_error("diff", "%s (%s) has no ops, kernels or copies to compare", s ? "B" : "A", path[s]);
      rc = FT_CLI_USAGE;
    }
  ft_diff_step d;
  bool built = false;
  const ft_model *m[2] = {&mr[0].m, &mr[1].m};
  if (!rc) {
    ft_diff_step_opts o = {.limit = limit, .whole = whole, .step = step};
    ft_status st = ft_diff_step_build(&d, m[0], m[1], &o, err, sizeof err);
    if (st == FT_ENOMEM) ft_cli_error("diff", "out of memory"), rc = 1;
    else if (st) ft_cli_error("diff", "%s", err), rc = FT_CLI_USAGE;
    built = !st;
  }
  if (built) {
    ft_outfile out;
    FILE *f = stdout;
    if (output && ft_outputs_open(&out, names, 1, overwrite, &exists, err, sizeof err)) {
      rc = ft_cli_output_refused("diff", exists, err);
    } else {
      if (output) f = out.f;
      if (fmt == 0) write_table(f, &d, path, m, step, width >= 0 ? (size_t)width : output ? 0 : ft_table_width());
      else if (fmt == 2) write_json(f, &d, path, m, step);
      else
        for (int r = 0; r < FT_DSTEP_N; r++) {
          fprintf(f, "%s# %s\n", r ? "\n" : "", d.reps[r].key);
          ft_report_csv(f, &d.reps[r]);
        }
      if (output && ft_outfile_commit(&out, 1, err, sizeof err)) {
        ft_cli_error("diff", "%s", err);
        rc = 1;
      }
    }
    ft_diff_step_free(&d);
  }
  for (int s = 0; s < 2; s++)
    if (mr[s].read) ft_model_free(&mr[s].m);
  return rc;
}
