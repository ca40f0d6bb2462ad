/* flagtrace report: one self-contained HTML file (timeline, busy strips, bars, tables) from stats' aggregation. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "stats_out.h"

extern const char ft_report_html[]; /* src/cli/report_template.html, embedded at build time */

/* The path of file relative to the directory dir (both absolute, as realpath gives them), into out. */
static void relative(const char *dir, const char *file, char *out, size_t cap) {
  size_t i = 0, common = 0;
  for (; dir[i] && dir[i] == file[i]; i++)
    if (dir[i] == '/') common = i + 1;
  if (!dir[i] && file[i] == '/') common = i + 1; /* file lies under dir */
  size_t w = 0;
  out[0] = '\0';
  size_t dlen = strlen(dir);
  for (size_t k = common; k < dlen; k++) /* one "../" per component of dir left */
    if ((k == common || dir[k - 1] == '/') && dir[k] != '/' && w < cap) w += (size_t)snprintf(out + w, cap - w, "../");
  if (w < cap) snprintf(out + w, cap - w, "%s", file + common);
}

/* The data as JSON: the header, the timeline bins, every report, and each
 * trace's address from the report's directory (out_dir; NULL: as given). */
static void write_data(FILE *f, const ft_stat_job *job, ft_report *reps, size_t n_reps, const char *out_dir) {
  fputs("{\"schema\": 2, ", f);
  ft_summary_json(f, job);
  fputs(",\n  \"hrefs\": [", f);
  for (size_t i = 0; i < job->n_files; i++) {
    char *abs = out_dir && strcmp(job->files[i].path, "-") ? realpath(job->files[i].path, NULL) : NULL;
    char rel[4096];
    if (abs) relative(out_dir, abs, rel, sizeof rel);
    fputs(i ? ", " : "", f);
    if (!strcmp(job->files[i].path, "-")) fputs("null", f);
    else ft_json_string(f, abs ? rel : job->files[i].path);
    free(abs);
  }
  fputc(']', f);
  fputs(",\n  \"timeline\": [", f);
  bool first = true;
  for (size_t i = 0; i < job->n_files; i++) {
    const ft_stat_file *file = &job->files[i];
    for (size_t d = 0; d < file->n_busy; d++) {
      const ft_stat_busy *b = &file->busy[d];
      fprintf(f, "%s\n    {\"rank\": %lld, \"device\": %lld, \"file\": ", first ? "" : ",", (long long)file->rank,
              (long long)b->device);
      ft_json_string(f, file->path);
      fprintf(f, ", \"busy_pct\": %.2f, \"span_us\": %.3f, \"busy\": [",
              file->span_ns ? 100.0 * (double)b->busy_ns / (double)file->span_ns : 0.0, (double)file->span_ns / 1000.0);
      for (size_t k = 0; k < FT_TIMELINE_BINS; k++) fprintf(f, "%s%u", k ? "," : "", b->busy_bins ? b->busy_bins[k] : 0);
      fputs("], \"copy\": [", f);
      for (size_t k = 0; k < FT_TIMELINE_BINS; k++) fprintf(f, "%s%u", k ? "," : "", b->copy_bins ? b->copy_bins[k] : 0);
      fputs("]}", f);
      first = false;
    }
  }
  fputs("\n  ]", f);
  for (size_t r = 0; r < n_reps; r++) {
    fprintf(f, ",\n  \"%s\": ", reps[r].key);
    ft_report_json(f, &reps[r]);
  }
  fputs("\n}\n", f);
}

ft_status ft_report_html_write(FILE *out, const ft_stat_job *job, const char *out_dir) {
  ft_report reps[REP_N];
  size_t n_reps = 0;
  ft_report_opts o = {0};
  ft_status s = FT_OK;
  for (int r = 0; r < REP_N && !s; r++)
    if (r != REP_TRACE) s = ft_report_build(&reps[n_reps++], r, job, &o);
  char *data = NULL;
  size_t len = 0;
  FILE *m = s ? NULL : open_memstream(&data, &len);
  if (m) {
    write_data(m, job, reps, n_reps, out_dir);
    if (fclose(m)) s = FT_ENOMEM;
  } else {
    s = FT_ENOMEM;
  }
  if (!s) {
    const char *mark = strstr(ft_report_html, "@FT_DATA@");
    fwrite(ft_report_html, 1, (size_t)(mark - ft_report_html), out);
    /* '<' '>' '&' only occur inside JSON strings: as \u escapes no name can
     * close the script element or open a tag */
    for (size_t i = 0; i < len; i++) {
      char c = data[i];
      if (c == '<') fputs("\\u003c", out);
      else if (c == '>') fputs("\\u003e", out);
      else if (c == '&') fputs("\\u0026", out);
      else fputc(c, out);
    }
    fputs(mark + strlen("@FT_DATA@"), out);
  }
  free(data);
  for (size_t r = 0; r < n_reps; r++) ft_report_free(&reps[r]);
  return s;
}
