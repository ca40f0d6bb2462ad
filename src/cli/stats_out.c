/* The writers of `flagtrace stats`: reports as a table, csv or json, the job's header and notes, and output files. */
#define _GNU_SOURCE
#include "stats_out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
static double us(uint64_t ns) { return (double)ns / 1000.0; }

/* ---- writers ---- */

static const char *const unit_names[] = {"ns", "us", "ms", "s"};
static const uint64_t unit_ns[] = {1, 1000, 1000000, 1000000000};
static const int unit_digits[] = {0, 3, 6, 9}; /* exact to the nanosecond in every unit */

int ft_unit_parse(const char *s) {
  for (int u = 0; u < FT_UNIT_N; u++)
    if (!strcmp(s, unit_names[u])) return u;
  return -1;
}

/* A time column: its key names microseconds (total_us, avg_us_per_call). */
static const char *time_part(const ft_col *col) {
  for (const char *p = strstr(col->key, "_us"); p; p = strstr(p + 1, "_us"))
    if (p[3] == '\0' || p[3] == '_') return p;
  return NULL;
}

void ft_col_label(char *buf, size_t cap, const ft_col *col, int unit, bool key) {
  const char *text = key ? col->key : col->title, *p = time_part(col);
  if (unit != FT_UNIT_US && p && !key) p = strstr(text, "(us)");
  if (unit == FT_UNIT_US || !p) {
    snprintf(buf, cap, "%s", text);
    return;
  }
  int at = (int)(p - text) + 1; /* the "us" after '_' or '(' */
  snprintf(buf, cap, "%.*s%s%s", at, text, unit_names[unit], p + 3);
}

/* Digits of v (and a sign), without snprintf: a trace report of every event has
 * millions of integer cells. */
static void put_int(char *buf, size_t cap, uint64_t v, bool neg) {
  char tmp[24];
  size_t n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while (v /= 10);
  if (neg) tmp[n++] = '-';
  if (n + 1 > cap) n = cap - 1;
  for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
  buf[n] = '\0';
}

void ft_cell_text(char *buf, size_t cap, const ft_col *col, ft_cell c, int unit) {
  bool t = unit != FT_UNIT_US && time_part(col);
  switch (col->kind) {
  case COL_U64: put_int(buf, cap, c.u, false); break;
  case COL_I64: put_int(buf, cap, c.i < 0 ? 0 - (uint64_t)c.i : (uint64_t)c.i, c.i < 0); break;
  case COL_US:
    if (!t) snprintf(buf, cap, "%.3f", us(c.u));
    else if (unit == FT_UNIT_NS) snprintf(buf, cap, "%llu", (unsigned long long)c.u);
    else /* from the integer: no rounding */
      snprintf(buf, cap, "%llu.%0*llu", (unsigned long long)(c.u / unit_ns[unit]), unit_digits[unit],
               (unsigned long long)(c.u % unit_ns[unit]));
    break;
  case COL_PCT: snprintf(buf, cap, "%.2f", c.d); break;
  case COL_NONE: snprintf(buf, cap, "%s", c.s ? c.s : ""); break; /* a table's word for no value ("new"), or none */
  case COL_F3:                                                    /* a time here is in microseconds */
    if (!t) snprintf(buf, cap, "%.3f", c.d);
    else snprintf(buf, cap, "%.*f", unit_digits[unit], c.d * 1000.0 / (double)unit_ns[unit]);
    break;
  default: snprintf(buf, cap, "%s", c.s); break;
  }
}

/* s as a table shows it: control characters escaped (a name from a trace must not
 * drive the terminal). s itself when nothing changes, else buf or *heap (freed by
 * the caller); a name too long for buf and memory is shown cut. */
static const char *visible(const char *s, char *buf, size_t cap, char **heap) {
  *heap = NULL;
  if (!ft__visible_changes(s)) return s;
  size_t n = ft__visible(buf, cap, s);
  if (n < cap || !(*heap = malloc(n + 1))) return buf;
  ft__visible(*heap, n + 1, s);
  return *heap;
}

void ft_put_visible(FILE *f, const char *s) {
  char buf[1024], *heap;
  fputs(visible(s, buf, sizeof buf, &heap), f);
  free(heap);
}

void ft_csv_field(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* A cell: strings through quote (csv's or json's), numbers as cell_text gives them.
 * The writers below hold f's lock (flockfile) and write unlocked: a trace report
 * of every event is millions of cells. */
static void put_cell(FILE *f, const ft_col *col, ft_cell c, void (*quote)(FILE *, const char *), int unit) {
  if (col->kind == COL_STR) {
    quote(f, c.s);
    return;
  }
  if (col->kind == COL_NONE) {
    if (quote == ft_json_string) fputs_unlocked("null", f);
    return;
  }
  char buf[64];
  ft_cell_text(buf, sizeof buf, col, c, unit);
  fputs_unlocked(buf, f);
}

void ft_report_delim(FILE *f, const ft_report *rep, char sep, int unit) {
  char key[128];
  flockfile(f);
  for (int j = 0; j < rep->n_cols; j++) {
    ft_col_label(key, sizeof key, &rep->cols[j], unit, true);
    fprintf(f, "%s%s", j ? (char[]){sep, 0} : "", key);
  }
  fputc_unlocked('\n', f);
  for (size_t i = 0; i < rep->n_rows; i++) {
    for (int j = 0; j < rep->n_cols; j++) {
      ft_col tmp;
      if (j) fputc_unlocked(sep, f);
      /* tsv has no quoting: a tab or newline in a name is shown as its escape */
      put_cell(f, ft_report_cell_col(rep, i, j, &tmp), rep->cells[i * (size_t)rep->n_cols + j],
               sep == ',' ? ft_csv_field : ft_put_visible, unit);
    }
    fputc_unlocked('\n', f);
  }
  funlockfile(f);
}

void ft_report_csv(FILE *f, const ft_report *rep) { ft_report_delim(f, rep, ',', FT_UNIT_US); }

void ft_json_string(FILE *f, const char *s) {
  /* Piece by piece through a stack buffer: a writer of its own per string (every string
   * cell of every table) cost a 256 KiB buffer each, under ASan an mmap and munmap each
   * (81 s of CPU for a 100 000-kernel report) */
  char buf[6 * FT__JSON_PIECE + 2];
  size_t n = strlen(s), take;
  bool first = true;
  do {
    size_t w = ft__json_escape_piece(buf, s, n, first, &take);
    fwrite(buf, 1, w, f);
    s += take;
    n -= take;
    first = false;
  } while (n);
}

void ft_report_json(FILE *f, const ft_report *rep) { ft_report_json_unit(f, rep, FT_UNIT_US); }

void ft_report_json_unit(FILE *f, const ft_report *rep, int unit) {
  char(*keys)[128] = malloc(((size_t)rep->n_cols + 1) * sizeof *keys); /* once, not per row */
  if (!keys) { /* the report's own keys: right in us, the default */
    unit = FT_UNIT_US;
  } else {
    for (int j = 0; j < rep->n_cols; j++) ft_col_label(keys[j], sizeof keys[j], &rep->cols[j], unit, true);
  }
  flockfile(f);
  fputc_unlocked('[', f);
  for (size_t i = 0; i < rep->n_rows; i++) {
    fprintf(f, "%s\n    {", i ? "," : "");
    for (int j = 0; j < rep->n_cols; j++) {
      fputs_unlocked(j ? ", \"" : "\"", f);
      fputs_unlocked(keys ? keys[j] : rep->cols[j].key, f);
      fputs_unlocked("\": ", f);
      ft_col tmp;
      put_cell(f, ft_report_cell_col(rep, i, j, &tmp), rep->cells[i * (size_t)rep->n_cols + j], ft_json_string, unit);
    }
    fputc_unlocked('}', f);
  }
  fprintf(f, "%s]", rep->n_rows ? "\n  " : "");
  funlockfile(f);
  free(keys);
}

size_t ft_table_width(void) {
  struct winsize ws;
  if (!isatty(STDOUT_FILENO)) return 0;
  if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  char *end;
  long v = c ? strtol(c, &end, 10) : 0;
  return c && *c && !*end && v > 0 && v < 100000 ? (size_t)v : 80;
}

/* ---- the header ---- */

static bool incomplete(const ft_stat_meta *m) {
  return m->device_activity == 0 || m->dropped_records || m->window_discarded;
}

size_t ft_summary_notes(const ft_stat_job *job) {
  size_t n = 0;
  for (size_t f = 0; f < job->n_files; f++) n += incomplete(&job->files[f].meta);
  return n;
}

void ft_summary_json(FILE *f, const ft_stat_job *job) {
  fputs("\"files\": [", f);
  for (size_t i = 0; i < job->n_files; i++) {
    const ft_stat_file *file = &job->files[i];
    const ft_stat_meta *m = &file->meta;
    fprintf(f, "%s\n    {\"file\": ", i ? "," : "");
    ft_json_string(f, file->path);
    fprintf(f, ", \"rank\": %lld, \"events\": %llu, \"span_us\": %.3f, \"tracer\": ", (long long)file->rank,
            (unsigned long long)file->events, us(file->span_ns));
    if (m->has_flagtrace) ft_json_string(f, m->tracer);
    else fputs("null", f);
    fprintf(f, ", \"device_activity\": %s, \"device_status\": ",
            m->device_activity < 0 ? "null"
            : m->device_activity   ? "true"
                                   : "false");
    if (m->has_flagtrace) ft_json_string(f, m->device_status);
    else fputs("null", f);
    fprintf(f, ", \"dropped_records\": %llu, \"window_discarded\": %llu, \"complete\": %s}",
            (unsigned long long)m->dropped_records, (unsigned long long)m->window_discarded,
            incomplete(m) ? "false" : "true");
  }
  fprintf(f, "\n  ],\n  \"events\": %llu,\n  \"skipped_events\": %llu,\n  \"unknown_categories\": {",
          (unsigned long long)job->events, (unsigned long long)ft_stat_skips_total(&job->skipped));
  const ft__map *u = &job->total.unknown_cats;
  bool first = true;
  size_t n_u, *by_name = ft_stat_unknown_order(&job->total, &n_u); /* the same however the job was read */
  for (size_t o = 0; o < n_u; o++) {
    size_t i = by_name[o];
    fputs(first ? "" : ", ", f);
    ft_json_string(f, ft__intern_str(&job->total.names, (uint32_t)u->keys[i]));
    fprintf(f, ": %llu", (unsigned long long)u->vals[i]);
    first = false;
  }
  free(by_name);
  fputc('}', f);
}

void ft_summary_lines(FILE *f, const ft_stat_job *job, const char *prefix) {
  for (size_t i = 0; i < job->n_files; i++) {
    const ft_stat_meta *m = &job->files[i].meta;
    if (!incomplete(m)) continue;
    fprintf(f, "%snote: ", prefix);
    ft_put_visible(f, job->files[i].path);
    fprintf(f, " (rank %lld) is incomplete:", (long long)job->files[i].rank);
    const char *sep = " ";
    if (m->device_activity == 0) { /* the trace's own words: escaped as its names are */
      fprintf(f, "%sno device activity (", sep);
      ft_put_visible(f, m->device_status[0] ? m->device_status : "no reason given");
      fputc(')', f);
      sep = "; ";
    }
    if (m->dropped_records) {
      fprintf(f, "%s%llu records dropped", sep, (unsigned long long)m->dropped_records);
      sep = "; ";
    }
    if (m->window_discarded)
      fprintf(f, "%s%llu events outside the capture window discarded", sep, (unsigned long long)m->window_discarded);
    fputc('\n', f);
  }
}

/* ---- output files: out_file.h's policy behind a FILE ---- */

static ssize_t cookie_write(void *cookie, const char *buf, size_t n) {
  ft_outfile *o = cookie;
  int e = ft__ofile_write(&o->file, buf, n);
  if (!e) return (ssize_t)n;
  if (!o->err) o->err = e;
  errno = e;
  return -1;
}

FILE *ft_outfile_open(ft_outfile *o, const char *path, char *err, size_t errlen) {
  memset(o, 0, sizeof *o);
  if (ft__ofile_open(&o->file, path, "", err, errlen)) return NULL;
  cookie_io_functions_t io = {.write = cookie_write};
  if (!(o->f = fopencookie(o, "w", io))) {
    snprintf(err, errlen, "out of memory");
    ft__ofile_discard(&o->file);
    return NULL;
  }
  setvbuf(o->f, NULL, _IOFBF, 1 << 16);
  return o->f;
}

int ft_outfile_flush(ft_outfile *o, char *err, size_t errlen) {
  if (!o->f) return 0;
  int rc = fflush(o->f) || ferror(o->f) ? -1 : 0;
  if (fclose(o->f)) rc = -1;
  o->f = NULL;
  if (rc) snprintf(err, errlen, "cannot write '%s': %s", o->file.shown, strerror(o->err ? o->err : EIO));
  return rc;
}

int ft_outfile_commit(ft_outfile *os, size_t n, char *err, size_t errlen) {
  int rc = 0;
  for (size_t i = 0; i < n; i++) /* the first failure is the one named */
    if (ft_outfile_flush(&os[i], rc ? NULL : err, rc ? 0 : errlen)) rc = -1;
  ft__ofile **files = rc ? NULL : calloc(n ? n : 1, sizeof *files);
  if (!rc && !files) rc = -1, snprintf(err, errlen, "out of memory");
  for (size_t i = 0; files && i < n; i++) files[i] = &os[i].file;
  if (files && ft__ofile_commit_set(files, n, err, errlen)) rc = -1;
  free(files);
  for (size_t i = 0; i < n; i++) ft_outfile_discard(&os[i]);
  return rc;
}

void ft_outfile_discard(ft_outfile *o) {
  if (o->f) fclose(o->f);
  o->f = NULL;
  if (o->file.shown) ft__ofile_discard(&o->file); /* opened (a zeroed o never was) */
}

int ft_outputs_check(const char *const *names, size_t n, bool force, bool *exists, char *err, size_t errlen) {
  *exists = false;
  for (size_t i = 0; i < n; i++) {
    bool replaces;
    if (ft__ofile_check(names[i], "", &replaces, err, errlen)) return -1;
    if (replaces && !force) {
      *exists = true;
      snprintf(err, errlen, "'%s' exists; --force-overwrite replaces it", names[i]);
      return -1;
    }
  }
  return 0;
}

int ft_outputs_open(ft_outfile *files, const char *const *names, size_t n, bool force, bool *exists, char *err,
                    size_t errlen) {
  /* checked again: a file may have appeared while the input was read */
  if (ft_outputs_check(names, n, force, exists, err, errlen)) return -1;
  for (size_t i = 0; i < n; i++) {
    if (!ft_outfile_open(&files[i], names[i], err, errlen)) {
      while (i--) ft_outfile_discard(&files[i]);
      return -1;
    }
  }
  return 0;
}

/* ---- the job's notes (stderr) ---- */

static int by_rank_then_file(const void *a, const void *b) {
  const ft_stat_file *x = *(const ft_stat_file *const *)a, *y = *(const ft_stat_file *const *)b;
  return x->rank != y->rank ? (x->rank > y->rank) - (x->rank < y->rank) : (x > y) - (x < y);
}

void ft_stat_job_notes(FILE *f, const ft_stat_job *job, const char *prefix) {
  const ft_stat_skips *k = &job->skipped;
  uint64_t n = ft_stat_skips_total(k);
  if (n) { /* one line: every reason, then the unknown categories by name */
    fprintf(f, "%s%llu events skipped: ", prefix, (unsigned long long)n);
    const struct {
      uint64_t n;
      const char *why;
    } parts[] = {{k->bad_time, "with ts missing or ts/dur not a number"},
                 {k->no_dur, "with no dur"},
                 {k->neg_dur, "with a negative dur"},
                 {k->time_range, "with ts or dur beyond +-4e+15 us"},
                 {k->bad_bytes, "copies or sets whose bytes is not a whole number in [0, 2^63)"},
                 {k->bad_ext, "with an External id that is not a whole number in +-2^63"},
                 {k->unpaired, "launch calls or GPU events left unpaired (their correlation id names one launch)"}};
    const char *sep = "";
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
      if (!parts[i].n) continue;
      fprintf(f, "%s%llu %s", sep, (unsigned long long)parts[i].n, parts[i].why);
      sep = ", ";
    }
    if (k->unknown_cat) {
      fprintf(f, "%sunknown categories", *sep ? "; " : "");
      const ft__map *u = &job->total.unknown_cats;
      sep = " ";
      size_t n_u, *by_name = ft_stat_unknown_order(&job->total, &n_u); /* by name: as the json header */
      for (size_t o = 0; o < n_u; o++) {
        size_t i = by_name[o];
        fprintf(f, "%s\"", sep); /* a category is the trace's text: shown escaped */
        ft_put_visible(f, ft__intern_str(&job->total.names, (uint32_t)u->keys[i]));
        fprintf(f, "\" (%llu)", (unsigned long long)u->vals[i]);
        sep = ", ";
      }
      free(by_name);
    }
    fputc('\n', f);
  }
  for (size_t i = 0; i < job->n_files; i++) {
    const ft_stat_file *x = &job->files[i];
    char path[1024]; /* a file name is shown escaped: one line whatever it holds */
    ft__visible(path, sizeof path, x->path);
    if (x->cut_strings)
      fprintf(f, "%snote: %s: %llu name%s longer than %d KiB cut to their first %d KiB\n", prefix, path,
              (unsigned long long)x->cut_strings, x->cut_strings == 1 ? "" : "s", FT_STATS_KEEP >> 10,
              FT_STATS_KEEP >> 10);
    if (x->device_cap_events)
      fprintf(f,
              "%snote: %s has more than %d devices: busy %% and the timeline leave out the %llu events of the "
              "others (every other report has them)\n",
              prefix, path, FT_STATS_MAX_DEVICES, (unsigned long long)x->device_cap_events);
  }
  /* files that claim one rank (a file without distributedInfo takes its position
   * as its rank): their rows stay apart, each under its own file */
  const ft_stat_file **by = job->n_files > 1 ? malloc(job->n_files * sizeof *by) : NULL;
  if (!by) return;
  for (size_t i = 0; i < job->n_files; i++) by[i] = &job->files[i];
  qsort(by, job->n_files, sizeof *by, by_rank_then_file);
  bool any = false;
  for (size_t i = 0; i < job->n_files;) {
    size_t e = i + 1;
    while (e < job->n_files && by[e]->rank == by[i]->rank) e++;
    if (e - i > 1) {
      if (!any) fprintf(f, "%swarning: files claim the same rank (their rows stay apart, by file): ", prefix);
      fprintf(f, "%srank %lld:", any ? "; " : "", (long long)by[i]->rank);
      for (size_t g = i; g < e; g++) {
        fputs(g > i ? ", " : " ", f);
        ft_put_visible(f, by[g]->path);
      }
      any = true;
    }
    i = e;
  }
  if (any) fputc('\n', f);
  free(by);
}
