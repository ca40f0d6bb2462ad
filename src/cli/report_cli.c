/* flagtrace report: the command that writes the HTML report of a job's traces. */
#define _GNU_SOURCE
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"
#include "stats_out.h"

static const char usage[] =
    "usage: flagtrace report [options] FILE...\n"
    "\n"
    "Writes one self-contained HTML file (no network needed to view it) from the\n"
    "same aggregation as flagtrace stats: the summary header (files, ranks, tracer,\n"
    "device status, dropped records, events outside the capture window), a timeline\n"
    "of kernel, copy and idle time per (rank, device) and a GPU busy strip per rank\n"
    "(both binned: the file grows with kernels and ranks, not events), top kernels\n"
    "and ops, copies by size and bandwidth, sortable tables of every stats report,\n"
    "and per file a link to the trace itself for Perfetto or chrome://tracing.\n"
    "\n"
    "options:\n"
    "  -o, --output PATH   the HTML file (default: report.html); written under a\n"
    "                      temporary name and renamed when complete\n"
    "  -h, --help          show this help\n"
    "\n"
    "Input (\"-\" is stdin) and exit status as for flagtrace stats; options may\n"
    "come before or after the files, getopt_long's way.\n";

int ft_cli_report(int argc, char **argv) {
  const char *output = "report.html";
  static const struct option longs[] = {
      {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  for (;;) {
    int prev = optind, c = getopt_long(argc, argv, ":o:h", longs, NULL);
    if (c == -1) break;
    const char *bad = argv[prev] ? argv[prev] : "";
    if (c == 'h') return fputs(usage, stdout), 0;
    if (c == 'o') output = optarg;
    else if (c == ':') return ft_cli_usage_error("report", "option '%s' needs a value", bad);
    else return ft_cli_usage_error("report", "unknown option '%s'", bad);
  }
  if (optind >= argc) return ft_cli_usage_error("report", "no trace file given");
  ft_stat_job job;
  char err[640];
  ft_status s = ft_stat_job_read(&job, (const char *const *)argv + optind, (size_t)(argc - optind), true, 0, false, err,
                                 sizeof err);
  if (s) {
    fprintf(stderr, "flagtrace report: %s\n", err);
    ft_stat_job_free(&job);
    return s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  }
  ft_stat_job_notes(stderr, &job, "flagtrace report: ");
  ft_summary_lines(stderr, &job, "flagtrace report: ");
  ft_outfile out = {0};
  FILE *f = ft_outfile_open(&out, output, err, sizeof err);
  int rc = 0;
  if (!f) {
    rc = 1;
  } else {
    char *copy = strdup(output), *dir = copy ? realpath(dirname(copy), NULL) : NULL;
    s = ft_report_html_write(f, &job, dir);
    free(dir);
    free(copy);
    if (ft_outfile_close(&out, !s, err, sizeof err)) rc = 1;
    if (s) snprintf(err, sizeof err, "out of memory"), rc = 1;
  }
  if (rc) fprintf(stderr, "flagtrace report: %s\n", err);
  else printf("flagtrace report: wrote %s\n", output);
  ft_stat_job_free(&job);
  return rc;
}
