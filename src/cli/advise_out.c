/* advise's writers: the steps and findings as a table that fits a width, json (schema 1), csv, and a stats report. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "advise_cli.h"
#include "stats_out.h"

/* ns as microseconds with every nanosecond digit (exact, any sign). */
static void put_us(FILE *f, int64_t ns) {
  uint64_t a = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
  fprintf(f, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
}

static const ft_col full_cols[] = {{"rank", "Rank", COL_I64, 4},
                                   {"rule", "Rule", COL_STR, -1},
                                   {"cost_per_step_us", "Cost/step(us)", COL_US, 0},
                                   {"share_pct", "Share(%)", COL_PCT, 0},
                                   {"count", "Count", COL_U64, 0},
                                   {"where", "Where", COL_STR, 0},
                                   {"what", "What", COL_STR, 0},
                                   {"suggestion", "Suggestion", COL_STR, 0}};
static const ft_col short_cols[] = {
    {"finding", "#", COL_U64, 2},          {"rank", "Rank", COL_I64, 4},
    {"rule", "Rule", COL_STR, -1},         {"cost_per_step_us", "Cost/step(us)", COL_US, 0},
    {"share_pct", "Share(%)", COL_PCT, 0}, {"count", "Count", COL_U64, 0},
    {"where", "Where", COL_STR, 0}};

const char ft_cli_advice_key[] = "advice";

static size_t shown(const ft_cli_advice *a, size_t top) { return top && top < a->n_ranked ? top : a->n_ranked; }

ft_status ft_cli_advice_report(ft_report *rep, const ft_cli_advice *a, size_t top, bool full) {
  memset(rep, 0, sizeof *rep);
  rep->key = ft_cli_advice_key;
  rep->title = "advice: findings by cost per step (docs/advise.md)";
  rep->cols = full ? full_cols : short_cols;
  rep->n_cols = full ? (int)(sizeof full_cols / sizeof *full_cols) : (int)(sizeof short_cols / sizeof *short_cols);
  size_t n = shown(a, top), nc = (size_t)rep->n_cols;
  rep->cells = calloc(n ? n * nc : 1, sizeof *rep->cells);
  if (!rep->cells) return FT_ENOMEM;
  rep->n_rows = n;
  for (size_t i = 0; i < n; i++) { /* strings are the advice's: the report lives no longer than it */
    const ft_advise_finding *f = a->ranked[i].f;
    ft_cell *row = rep->cells + i * nc;
    size_t c = 0;
    if (!full) row[c++].u = i + 1;
    row[c++].i = a->ranked[i].rank;
    row[c++].s = ft_rule_name(f->rule);
    row[c++].u = f->cost_ns;
    row[c++].d = 100.0 * f->cost_share;
    row[c++].u = f->count;
    row[c++].s = f->where;
    if (full) {
      row[c++].s = f->what;
      row[c++].s = f->suggestion;
    }
  }
  return FT_OK;
}

int ft_cli_advice_csv(FILE *f, const ft_cli_advice *a, size_t top) {
  ft_report rep;
  if (ft_cli_advice_report(&rep, a, top, true)) return -1;
  ft_report_delim(f, &rep, ',', FT_UNIT_US);
  ft_report_free(&rep);
  return 0;
}

/* ---- json ---- */

static void json_step(FILE *f, const ft_advise_step *s) {
  fprintf(f, "{\"rank\": %lld, \"step\": %lld, \"start_us\": ", (long long)s->rank, (long long)s->number);
  put_us(f, s->start);
  fputs(", \"end_us\": ", f);
  put_us(f, s->end);
  fputs(", \"wall_us\": ", f);
  uint64_t w = ft_advise_wall(s);
  fprintf(f, "%llu.%03llu", (unsigned long long)(w / 1000), (unsigned long long)(w % 1000));
  const struct {
    const char *k;
    uint64_t v;
  } parts[] = {{"busy_us", s->busy_ns}, {"compute_us", s->compute_ns}, {"comm_us", s->comm_ns},
               {"copy_us", s->copy_ns}, {"idle_us", s->idle_ns},       {"critical_path_us", s->critical_path_ns}};
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
    fprintf(f, ", \"%s\": ", parts[i].k);
    put_us(f, (int64_t)parts[i].v);
  }
  static const char *const keys[FT_IDLE_N] = {"step_start_us", "sync_us", "h2d_us", "launch_us", "other_us"};
  fputs(", \"idle_by_cause\": {", f);
  for (int c = 0; c < FT_IDLE_N; c++) {
    fprintf(f, "%s\"%s\": ", c ? ", " : "", keys[c]);
    put_us(f, (int64_t)s->idle[c]);
  }
  fputs("}, \"hta_idle\": {\"host_wait_us\": ", f);
  put_us(f, (int64_t)s->hta_host_wait_ns);
  fputs(", \"kernel_wait_us\": ", f);
  put_us(f, (int64_t)s->hta_kernel_wait_ns);
  fputs(", \"other_us\": ", f);
  put_us(f, (int64_t)s->hta_other_ns);
  fputs("}}", f);
}

static void json_finding(FILE *f, const ft_cli_finding *x) {
  const ft_advise_finding *g = x->f;
  fprintf(f, "{\"rule\": \"%s\", \"rank\": %lld, \"cost_us\": ", ft_rule_name(g->rule), (long long)x->rank);
  put_us(f, (int64_t)g->cost_ns);
  fprintf(f, ", \"share\": %.6f, \"count\": %llu, ", g->cost_share, (unsigned long long)g->count);
  if (g->bytes) fprintf(f, "\"bytes\": %llu, ", (unsigned long long)g->bytes); /* memory findings */
  fputs("\"where\": ", f);
  ft_json_string(f, g->where);
  fputs(", \"what\": ", f);
  ft_json_string(f, g->what);
  fputs(", \"suggestion\": ", f);
  ft_json_string(f, g->suggestion);
  fputs(", \"occurrences\": [", f);
  for (size_t k = 0; k < g->n_occ; k++) {
    const ft_advise_occurrence *o = &g->occ[k];
    fprintf(f, "%s{\"rank\": %lld, \"step\": %lld, \"ts_us\": ", k ? ", " : "", (long long)o->rank, (long long)o->step);
    put_us(f, o->ts);
    fputs(", \"dur_us\": ", f);
    put_us(f, o->dur);
    fputc('}', f);
  }
  fputs("]}", f);
}

void ft_cli_advice_json(FILE *f, const ft_cli_advice *a, size_t top) {
  fputs("{\n  \"schema\": 1,\n  \"step_name\": ", f);
  if (a->whole_trace) fputs("null", f);
  else ft_json_string(f, a->step ? a->step : "ProfilerStep");
  fputs(",\n  \"files\": [", f);
  for (size_t i = 0; i < a->n_files; i++) {
    fprintf(f, "%s\n    {\"file\": ", i ? "," : "");
    ft_json_string(f, a->paths[i]);
    fprintf(f, ", \"rank\": %lld, \"steps\": %zu, \"findings\": %zu}", (long long)a->ranks[i], a->per[i].n_steps,
            a->per[i].n_findings);
  }
  fputs("\n  ],\n  \"steps\": [", f);
  bool first = true;
  for (size_t i = 0; i < a->n_files; i++)
    for (size_t s = 0; s < a->per[i].n_steps; s++) {
      fputs(first ? "\n    " : ",\n    ", f);
      json_step(f, &a->per[i].steps[s]);
      first = false;
    }
  fprintf(f, "%s],\n  \"findings_total\": %zu,\n  \"findings\": [", first ? "" : "\n  ", a->n_ranked);
  size_t n = shown(a, top);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ",\n    " : "\n    ", f);
    json_finding(f, &a->ranked[i]);
  }
  fprintf(f, "%s]\n}\n", n ? "\n  " : "");
}

/* ---- the table ---- */

#define LABEL_W 16
#define VALUE_W 14

enum { R_WALL, R_BUSY, R_BUSY_PCT, R_COMPUTE, R_COMM, R_COPY, R_IDLE, R_IDLE0, R_CP = R_IDLE0 + FT_IDLE_N, R_N };
typedef struct col {
  char head[32];
  double v[R_N]; /* the rows below, in us (busy % in %) */
} col;
static const char *const row_label[R_N] = {"wall",     "busy",    "  busy %",     "  compute", "  communication",
                                           "  copy",   "idle",    "  step start", "  sync",    "  h2d copy",
                                           "  launch", "  other", "critical path"};

static void fill(double *v, const ft_advise_step *s, double k) {
  v[R_WALL] += k * (double)ft_advise_wall(s);
  v[R_BUSY] += k * (double)s->busy_ns;
  v[R_COMPUTE] += k * (double)s->compute_ns;
  v[R_COMM] += k * (double)s->comm_ns;
  v[R_COPY] += k * (double)s->copy_ns;
  v[R_IDLE] += k * (double)s->idle_ns;
  for (int c = 0; c < FT_IDLE_N; c++) v[R_IDLE0 + c] += k * (double)s->idle[c];
  v[R_CP] += k * (double)s->critical_path_ns;
}

static void step_head(char *buf, size_t cap, const char *pre, int64_t number) {
  if (number < 0) snprintf(buf, cap, "%swhole trace", pre);
  else snprintf(buf, cap, "%s#%lld", pre, (long long)number);
}

/* One rank's steps: each as a column when they fit (4 at most), else their mean and the slowest. */
static void steps_block(FILE *f, const ft_cli_advice *a, size_t i, size_t width) {
  const ft_advice *ad = &a->per[i];
  char head[64], tail[32], path[1024];
  snprintf(head, sizeof head, "rank %lld (", (long long)a->ranks[i]);
  snprintf(tail, sizeof tail, "): %zu step%s", ad->n_steps, ad->n_steps == 1 ? "" : "s");
  size_t n = ft__visible(path, sizeof path, a->paths[i]), fixed = strlen(head) + strlen(tail);
  if (n >= sizeof path) n = sizeof path - 1;
  /* a path too long for the width: its start and end, cut between characters (escapes are ASCII) */
  if (width && fixed + n > width && width > fixed + 11) {
    size_t keep = width - fixed - 3, h = keep / 2, t = n - (keep - h);
    while (h > 0 && ((unsigned char)path[h] & 0xC0) == 0x80) h--;
    while (t < n && ((unsigned char)path[t] & 0xC0) == 0x80) t++;
    fprintf(f, "%s%.*s...%s%s\n", head, (int)h, path, path + t, tail);
  } else {
    fprintf(f, "%s%s%s\n", head, path, tail);
  }
  if (!ad->n_steps) return;
  size_t fit = width ? (width > LABEL_W + VALUE_W ? (width - LABEL_W) / VALUE_W : 1) : SIZE_MAX;
  col cols[4];
  memset(cols, 0, sizeof cols);
  size_t nc = 0;
  if (ad->n_steps <= 4 && ad->n_steps <= fit) {
    for (size_t s = 0; s < ad->n_steps; s++) {
      step_head(cols[nc].head, sizeof cols[nc].head, "", ad->steps[s].number);
      fill(cols[nc++].v, &ad->steps[s], 1.0);
    }
  } else {
    size_t slow = 0;
    for (size_t s = 0; s < ad->n_steps; s++) {
      fill(cols[0].v, &ad->steps[s], 1.0 / (double)ad->n_steps);
      if (ft_advise_wall(&ad->steps[s]) > ft_advise_wall(&ad->steps[slow])) slow = s;
    }
    snprintf(cols[0].head, sizeof cols[0].head, "mean of %zu", ad->n_steps);
    nc = 1;
    if (fit >= 2) {
      step_head(cols[1].head, sizeof cols[1].head, "slowest ", ad->steps[slow].number);
      fill(cols[1].v, &ad->steps[slow], 1.0);
      nc = 2;
    }
  }
  for (size_t c = 0; c < nc; c++)
    cols[c].v[R_BUSY_PCT] = cols[c].v[R_WALL] > 0 ? 100.0 * cols[c].v[R_BUSY] / cols[c].v[R_WALL] : 0;
  fprintf(f, "  %-*s", LABEL_W - 2, "(us)");
  for (size_t c = 0; c < nc; c++) fprintf(f, "%*s", VALUE_W, cols[c].head);
  fputc('\n', f);
  for (int r = 0; r < R_N; r++) {
    fprintf(f, "  %-*s", LABEL_W - 2, row_label[r]);
    for (size_t c = 0; c < nc; c++)
      fprintf(f, "%*.*f", VALUE_W, r == R_BUSY_PCT ? 2 : 3, r == R_BUSY_PCT ? cols[c].v[r] : cols[c].v[r] / 1000.0);
    fputc('\n', f);
  }
}

/* "  N. label: text", words wrapped at width (0: one line), the text escaped. */
static void wrapped(FILE *f, const char *lead, const char *text, size_t width) {
  char buf[1024];
  ft__visible(buf, sizeof buf, text);
  size_t ind = strlen(lead), col = ind;
  fputs(lead, f);
  for (char *p = buf; *p;) {
    size_t w = strcspn(p, " ");
    if (width && col > ind && col + 1 + w > width) {
      fprintf(f, "\n%*s", (int)ind, "");
      col = ind;
    } else if (col > ind) {
      fputc(' ', f);
      col++;
    }
    fwrite(p, 1, w, f);
    col += w;
    p += w;
    while (*p == ' ') p++;
  }
  fputc('\n', f);
}

/* An occurrence's step start (the step of its rank's file), for times relative to it; 0 when not found. */
static int64_t step_start(const ft_cli_advice *a, int64_t rank, int64_t number) {
  for (size_t i = 0; i < a->n_files; i++)
    for (size_t s = 0; a->ranks[i] == rank && s < a->per[i].n_steps; s++)
      if (a->per[i].steps[s].number == number) return a->per[i].steps[s].start;
  return 0;
}

/* "at: rank R step N +T us for D us, ..." for the first few occurrences: where to look on the timeline. */
static void occ_line(FILE *f, const ft_cli_advice *a, const ft_advise_finding *g, size_t width) {
  char buf[512];
  size_t o = 0;
  for (size_t k = 0; k < g->n_occ && k < 3 && o < sizeof buf; k++) {
    const ft_advise_occurrence *x = &g->occ[k];
    int64_t t0 = step_start(a, x->rank, x->step);
    char step[32];
    if (x->step < 0) snprintf(step, sizeof step, "the trace");
    else snprintf(step, sizeof step, "step %lld", (long long)x->step);
    /* an op that began before its step: minus (the distance in 64 bits: a merged file's times may be any) */
    bool before = x->ts < t0;
    uint64_t m = before ? (uint64_t)t0 - (uint64_t)x->ts : (uint64_t)x->ts - (uint64_t)t0;
    uint64_t d = x->dur < 0 ? 0 - (uint64_t)x->dur : (uint64_t)x->dur;
    o += (size_t)snprintf(buf + o, sizeof buf - o, "%srank %lld %s %c%llu.%03llu us for %s%llu.%03llu us",
                          k ? ", " : "", (long long)x->rank, step, before ? '-' : '+', (unsigned long long)(m / 1000),
                          (unsigned long long)(m % 1000), x->dur < 0 ? "-" : "", (unsigned long long)(d / 1000),
                          (unsigned long long)(d % 1000));
  }
  if (o < sizeof buf && g->count > (g->n_occ < 3 ? g->n_occ : 3))
    snprintf(buf + o, sizeof buf - o, ", ... (%llu in all)", (unsigned long long)g->count);
  if (g->n_occ) wrapped(f, "    at: ", buf, width);
}

int ft_cli_advice_findings(FILE *f, const ft_cli_advice *a, size_t width, size_t top, int unit) {
  ft_report rep;
  if (ft_cli_advice_report(&rep, a, top, false)) return -1;
  rep.title = "advice: findings by cost per step"; /* one title whatever the count: scripts find the table by it */
  ft_table_opts to = {width, 0, unit};             /* stats --timeunit: the cost column in it */
  int rc = ft_report_table(f, &rep, &to);          /* no finding: "(none)" under the header, as every report */
  if (!rc && rep.n_rows < a->n_ranked)
    fprintf(f, "(%zu more under --limit %zu; -n 0 shows them all)\n", a->n_ranked - rep.n_rows, top);
  if (!rc && rep.n_rows) fputc('\n', f);
  for (size_t i = 0; !rc && i < rep.n_rows; i++) {
    char lead[32];
    snprintf(lead, sizeof lead, "%2zu. ", i + 1);
    wrapped(f, lead, a->ranked[i].f->what, width);
    wrapped(f, "    fix: ", a->ranked[i].f->suggestion, width);
    occ_line(f, a, a->ranked[i].f, width);
  }
  ft_report_free(&rep);
  return rc;
}

int ft_cli_advice_table(FILE *f, const ft_cli_advice *a, size_t width, size_t top) {
  fprintf(f, "flagtrace advise: %zu file%s; steps: %s\n", a->n_files, a->n_files == 1 ? "" : "s",
          a->whole_trace ? "none, each trace is one"
          : a->step      ? a->step
                         : "ProfilerStep#N");
  for (size_t i = 0; i < a->n_files; i++) {
    fputc('\n', f);
    steps_block(f, a, i, width);
  }
  fputc('\n', f);
  return ft_cli_advice_findings(f, a, width, top, FT_UNIT_US);
}
