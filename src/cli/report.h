/* The HTML report of a job (flagtrace report). */
#ifndef FLAGTRACE_CLI_REPORT_H
#define FLAGTRACE_CLI_REPORT_H

#include <stdio.h>

#include "stats.h"

/* Writes the self-contained HTML of job (read with timeline bins) to out. Its link
 * to each trace is the trace's real path relative to out_dir (the report's directory,
 * as realpath gives it), percent-encoded; no link (the reason in the page) for stdin,
 * for a trace whose real path is gone, for a name ft__report_linkable refuses, or for
 * any trace when out_dir is NULL. */
ft_status ft_report_html_write(FILE *out, const ft_stat_job *job, const char *out_dir);

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
