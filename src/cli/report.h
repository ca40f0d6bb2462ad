/* The HTML report of a job (flagtrace report). */
#ifndef FLAGTRACE_CLI_REPORT_H
#define FLAGTRACE_CLI_REPORT_H

#include <stdio.h>

#include "report_events.h"
#include "stats.h"

/* A group of traces read for the report: the job (with timeline bins and the ops'
 * columns) and every slice of its files (report_events.h). */
typedef struct ft_report_input {
  ft_stat_job job;
  ft__tl tl;
} ft_report_input;
/* Reads paths into in (free it with ft_report_input_free whatever the result); errors
 * as ft_stat_job_read's, the one-line reason in err. */
ft_status ft_report_input_read(ft_report_input *in, const char *const *paths, size_t n, char *err, size_t errlen);
void ft_report_input_free(ft_report_input *in);

/* Writes the self-contained HTML of one group of traces (n_groups 1) or of two, A above
 * B (n_groups 2: `flagtrace diff -f html`), to out. diff_json: NULL or a JSON value
 * (flagtrace diff -f json's document) shown with the timelines; regress: op names
 * highlighted as regressions on both. FT_EINVAL for another n_groups or a diff_json
 * that is not JSON. Its link to each trace is the trace's real path relative to
 * out_dir (the report's directory, as realpath gives it), percent-encoded; no link
 * (the reason in the page) for stdin, for a trace whose real path is gone, for a name
 * ft__report_linkable refuses, or for any trace when out_dir is NULL. */
ft_status ft_report_html_groups(FILE *out, const ft_report_input *groups, size_t n_groups, const char *diff_json,
                                const char *const *regress, size_t n_regress, const char *out_dir);

/* The directory a page written to output lies in, as realpath gives it (the links'
 * base: ft_report_html_groups' out_dir), malloc'd; NULL when it cannot be resolved (the
 * page then links nothing). */
char *ft__report_dir(const char *output);

/* Whether the browser may be sent to the file at path: its name has no dot or ends in
 * .json or .gz (any case), which chromium shows as text or downloads; another name
 * (.html, .svg, .xml ...) could open as a page that runs what the trace holds. */
bool ft__report_linkable(const char *path);

/* The path of file relative to the directory dir (both absolute, as realpath gives
 * them): one "../" per component of dir below their common ancestor, then the rest of
 * file. Malloc'd; NULL when out of memory. */
char *ft__report_relative(const char *dir, const char *file);

/* The link to the relative path rel (malloc'd into *href): every byte but RFC 3986's
 * unreserved ones and '/' as %XX, "./" in front unless rel starts with "./" or "../",
 * so that no browser reads a scheme, a host or a query into it. FT_EINVAL (and no
 * link) when rel is empty or absolute, FT_ENOMEM. */
ft_status ft__report_href(const char *rel, char **href);

#endif
