/* flagtrace report: one self-contained HTML file (timeline, busy strips, bars, tables) from stats' aggregation. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_scan.h"
#include "report.h"
#include "stats_out.h"

extern const char ft_report_html[]; /* src/cli/report/page.html, embedded at build time */

char *ft__report_relative(const char *dir, const char *file) {
  size_t i = 0, common = 0;
  for (; dir[i] && dir[i] == file[i]; i++)
    if (dir[i] == '/') common = i + 1;
  if (!dir[i] && file[i] == '/') common = i + 1; /* file lies under dir */
  size_t ups = 0, dlen = strlen(dir);
  for (size_t k = common; k < dlen; k++) ups += (k == common || dir[k - 1] == '/') && dir[k] != '/';
  size_t rest = strlen(file + common);
  char *out = malloc(3 * ups + rest + 1);
  if (!out) return NULL;
  for (size_t k = 0; k < ups; k++) memcpy(out + 3 * k, "../", 3);
  memcpy(out + 3 * ups, file + common, rest + 1);
  return out;
}

static bool unreserved(unsigned char c) { /* RFC 3986: never a delimiter, never escaped */
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

ft_status ft__report_href(const char *rel, char **href) {
  *href = NULL;
  if (!rel[0] || rel[0] == '/') return FT_EINVAL;
  /* a first segment other than "." or ".." gets "./": with ':' escaped there is no
   * scheme anyway, and the link reads as the file path it is */
  bool dotted = !strncmp(rel, "./", 2) || !strncmp(rel, "../", 3);
  size_t n = dotted ? 0 : 2;
  for (const unsigned char *p = (const unsigned char *)rel; *p; p++) n += unreserved(*p) || *p == '/' ? 1 : 3;
  char *h = malloc(n + 1), *w = h;
  if (!h) return FT_ENOMEM;
  if (!dotted) {
    memcpy(w, "./", 2);
    w += 2;
  }
  for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
    if (unreserved(*p) || *p == '/') {
      *w++ = (char)*p;
    } else {
      *w++ = '%';
      *w++ = "0123456789ABCDEF"[*p >> 4];
      *w++ = "0123456789ABCDEF"[*p & 15];
    }
  }
  *w = '\0';
  *href = h;
  return FT_OK;
}

bool ft__report_linkable(const char *path) {
  const char *name = strrchr(path, '/'), *dot;
  name = name ? name + 1 : path;
  if (!(dot = strrchr(name, '.'))) return true;
  return !strcasecmp(dot, ".json") || !strcasecmp(dot, ".gz");
}

/* The link to one trace from the report's directory out_dir (*href), or none and why
 * (*why): stdin, no out_dir, a trace whose real path is gone since it was read, or a
 * name a browser might open as a page of its own, outside the report's policy. */
static ft_status trace_href(const char *path, const char *out_dir, char **href, const char **why) {
  *href = NULL;
  *why = NULL;
  if (!strcmp(path, "-")) return *why = "read from stdin, there is no file to link", FT_OK;
  if (!out_dir) return *why = "the report's directory could not be resolved", FT_OK;
  errno = 0;
  char *abs = realpath(path, NULL);
  if (!abs) return *why = "the trace's path was not found", errno == ENOMEM ? FT_ENOMEM : FT_OK;
  ft_status s = FT_OK;
  if (!ft__report_linkable(abs)) {
    *why = "only .json, .gz and names without a dot are linked: a browser may open another file as a page";
  } else {
    char *rel = ft__report_relative(out_dir, abs);
    s = rel ? ft__report_href(rel, href) : FT_ENOMEM;
    free(rel);
    if (s == FT_EINVAL) s = FT_OK, *why = "the trace's path was not found"; /* empty: cannot be a file */
  }
  free(abs);
  return s;
}

/* The data as JSON: the header, the timeline bins, every report, and each trace's link
 * from the report's directory (out_dir; NULL: no links), or null and the reason. */
static ft_status write_data(FILE *f, const ft_stat_job *job, ft_report *reps, size_t n_reps, const char *out_dir,
                            ft__tl *tl) {
  fputs("{\"schema\": 3, ", f);
  ft_summary_json(f, job);
  fputs(",\n  \"hrefs\": [", f);
  const char **whys = calloc(job->n_files ? job->n_files : 1, sizeof *whys);
  if (!whys) return FT_ENOMEM;
  for (size_t i = 0; i < job->n_files; i++) {
    char *href;
    ft_status s = trace_href(job->files[i].path, out_dir, &href, &whys[i]);
    if (s) return free(whys), s;
    fputs(i ? ", " : "", f);
    if (href) ft_json_string(f, href);
    else fputs("null", f);
    free(href);
  }
  fputs("],\n  \"no_link\": [", f);
  for (size_t i = 0; i < job->n_files; i++) {
    fputs(i ? ", " : "", f);
    if (whys[i]) ft_json_string(f, whys[i]);
    else fputs("null", f);
  }
  free(whys);
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
      for (size_t k = 0; k < FT_TIMELINE_BINS; k++)
        fprintf(f, "%s%u", k ? "," : "", b->busy_bins ? b->busy_bins[k] : 0);
      fputs("], \"copy\": [", f);
      for (size_t k = 0; k < FT_TIMELINE_BINS; k++)
        fprintf(f, "%s%u", k ? "," : "", b->copy_bins ? b->copy_bins[k] : 0);
      fputs("]}", f);
      first = false;
    }
  }
  fputs("\n  ]", f);
  for (size_t r = 0; r < n_reps; r++) {
    fprintf(f, ",\n  \"%s\": ", reps[r].key);
    ft_report_json(f, &reps[r]);
  }
  fputs(",\n  \"tl\": ", f);
  ft_status s = ft__tl_write(f, tl, job);
  fputs(",\n  \"advice\": ", f);
  if (!s) s = ft__report_advice(f, tl, job);
  fputs("\n}", f);
  return s;
}

/* One group's data: its reports built, then write_data. */
static ft_status write_group(FILE *f, const ft_report_input *in, const char *out_dir) {
  ft_report reps[REP_N];
  size_t n_reps = 0;
  ft_report_opts o = {0};
  ft_status s = FT_OK;
  for (int r = 0; r < REP_N && !s; r++)
    if (r != REP_TRACE && r != REP_MEMORY && !(FT_REP_HTA & 1u << r))
      s = ft_report_build(&reps[n_reps++], r, &in->job, &o);
  if (!s) s = write_data(f, &in->job, reps, n_reps, out_dir, (ft__tl *)&in->tl);
  for (size_t r = 0; r < n_reps; r++) ft_report_free(&reps[r]);
  return s;
}

static bool valid_json(const char *text) {
  static const ft__json_callbacks none = {0};
  ft__json j;
  ft__json_init(&j, &none, NULL);
  size_t n = strlen(text);
  bool ok = n && ft__json_feed(&j, (const unsigned char *)text, n) == FT__JSON_OK && ft__json_finish(&j) == FT__JSON_OK;
  ft__json_free(&j);
  return ok;
}

ft_status ft_report_input_read(ft_report_input *in, const char *const *paths, size_t n, char *err, size_t errlen) {
  memset(in, 0, sizeof *in);
  ft_stat_read_opts o = {.timeline = true, .ops = true};
  ft_status s = ft__tl_new(&in->tl, n);
  if (s) return snprintf(err, errlen, "out of memory"), s;
  ft__tl_opts(&in->tl, &o);
  s = ft_stat_job_read(&in->job, paths, n, &o, err, errlen);
  if (!s) ft__tl_base_times(&in->tl, &in->job);
  return s;
}

char *ft__report_dir(const char *output) {
  char *copy = strdup(output), *dir = copy ? realpath(dirname(copy), NULL) : NULL;
  free(copy);
  return dir;
}

void ft_report_input_free(ft_report_input *in) {
  ft_stat_job_free(&in->job);
  ft__tl_free(&in->tl);
}

ft_status ft_report_html_groups(FILE *out, const ft_report_input *groups, size_t n_groups, const char *diff_json,
                                const char *const *regress, size_t n_regress, const char *out_dir) {
  if (!n_groups || n_groups > 2 || (diff_json && !valid_json(diff_json))) return FT_EINVAL;
  char *data = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&data, &len);
  if (!m) return FT_ENOMEM;
  ft_status s = write_group(m, &groups[0], out_dir);
  fseek(m, -1, SEEK_CUR); /* reopens A's object for the second group, the diff and the regressions */
  fputs(",\n  \"b\": ", m);
  if (!s && n_groups > 1) s = write_group(m, &groups[1], out_dir);
  else fputs("null", m);
  fputs(",\n  \"diff\": ", m);
  fputs(diff_json ? diff_json : "null", m);
  fputs(",\n  \"regress\": [", m);
  for (size_t i = 0; i < n_regress; i++) {
    fputs(i ? ", " : "", m);
    ft_json_string(m, regress[i]);
  }
  fputs("]\n}\n", m);
  if (fclose(m) && !s) s = FT_ENOMEM;
  if (!s) {
    const char *mark = strstr(ft_report_html, "@FT_DATA@");
    fwrite(ft_report_html, 1, (size_t)(mark - ft_report_html), out);
    /* '<' '>' '&' only occur inside JSON strings: as \u escapes no name can
     * close the script element or open a tag */
    for (size_t i = 0; i < len; i++) {
      size_t run = strcspn(data + i, "<>&");
      fwrite(data + i, 1, run, out);
      if ((i += run) >= len) break;
      fputs(data[i] == '<' ? "\\u003c" : data[i] == '>' ? "\\u003e" : "\\u0026", out);
    }
    fputs(mark + strlen("@FT_DATA@"), out);
  }
  free(data);
  return s;
}
