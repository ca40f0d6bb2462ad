/* flagtrace diff -f html: the diff's tables as one self-contained page (no script; the report's viewer is apart). */
#include <stdio.h>
#include <string.h>

#include "diff_html.h"

/* Text as HTML: the markup characters and control characters as references. */
static void put_text(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:
      if (*p < 0x20 || *p == 0x7f) fprintf(f, "&#x%x;", *p == 0x7f ? 0x2421 : 0x2400 + *p); /* control pictures */
      else fputc(*p, f);
    }
  }
}

static void side(FILE *f, const char *label, const ft_stat_job *j, uint64_t steps) {
  fprintf(f, "<p><b>%s</b>: %llu events, %zu file%s, %llu steps:", label, (unsigned long long)j->events, j->n_files,
          j->n_files == 1 ? "" : "s", (unsigned long long)steps);
  for (size_t i = 0; i < j->n_files; i++) {
    fputs(i ? ", " : " ", f);
    put_text(f, j->files[i].path);
  }
  fputs("</p>\n", f);
}

static void table(FILE *f, const ft_report *rep) {
  fputs("<h2>", f);
  put_text(f, rep->title);
  fprintf(f, "</h2>\n<table id=\"%s\">\n<tr>", rep->key);
  for (int j = 0; j < rep->n_cols; j++) {
    fputs("<th>", f);
    put_text(f, rep->cols[j].title);
    fputs("</th>", f);
  }
  fputs("</tr>\n", f);
  int delta = -1;
  for (int j = 0; j < rep->n_cols; j++)
    if (!strcmp(rep->cols[j].key, "delta_us") || !strcmp(rep->cols[j].key, "delta")) delta = j;
  for (size_t i = 0; i < rep->n_rows; i++) {
    const ft_cell *row = &rep->cells[i * (size_t)rep->n_cols];
    double d = delta >= 0 ? row[delta].d : 0;
    fprintf(f, "<tr%s>", d > 0 ? " class=\"up\"" : d < 0 ? " class=\"down\"" : "");
    for (int j = 0; j < rep->n_cols; j++) {
      char buf[64];
      if (rep->cols[j].kind == COL_STR) {
        fputs("<td class=\"s\">", f);
        put_text(f, row[j].s);
      } else {
        ft_cell_text(buf, sizeof buf, &rep->cols[j], row[j], FT_UNIT_US);
        fprintf(f, "<td>%s", buf);
      }
      fputs("</td>", f);
    }
    fputs("</tr>\n", f);
  }
  if (!rep->n_rows) fprintf(f, "<tr><td colspan=\"%d\">(none)</td></tr>\n", rep->n_cols);
  fputs("</table>\n", f);
}

void ft_diff_html(FILE *f, const ft_diff *d, const ft_stat_job *const job[2]) {
  fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<title>flagtrace diff</title>\n<style>body{font:13px sans-serif;margin:1em}"
        "table{border-collapse:collapse;margin-bottom:1em}td,th{border:1px solid #ccc;padding:2px 6px;"
        "text-align:right}td.s{text-align:left;font-family:monospace}tr.up td{background:#fde8e8}"
        "tr.down td{background:#e8f6e8}</style></head><body>\n<h1>flagtrace diff</h1>\n"
        "<p>A is the baseline: ratios are B/A, deltas B &minus; A (red: B slower or larger).</p>\n",
        f);
  side(f, "A", job[0], d->steps[0]);
  side(f, "B", job[1], d->steps[1]);
  uint64_t all = d->ops[0] + d->ops[1] - d->ops_matched;
  fputs("<p>steps: ", f);
  if (d->step_name[0]) {
    put_text(f, d->step_name);
    fputs(d->per_step ? " ranges, values per step" : " ranges, values are totals over the steps", f);
  } else {
    fputs("none used, the whole traces", f);
  }
  fprintf(f, "; ops aligned by name: %llu of %llu; kernels %s</p>\n", (unsigned long long)d->ops_matched,
          (unsigned long long)all, d->kernels_by_name ? "matched by name" : "compared per op as a group");
  for (int r = 0; r < FT_DIFF_N; r++) table(f, &d->reps[r]);
  fputs("</body></html>\n", f);
}
