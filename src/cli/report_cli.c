/* flagtrace report: the command that writes the HTML report of a job's traces. */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    "A link is the trace's path relative to the report's directory, percent-encoded\n"
    "(never a URL with a scheme); stdin, and file names with a dot that do not end\n"
    "in .json or .gz, get none. The page runs only its own script (CSP by hash).\n"
    "\n"
    "options:\n"
    "  -o, --output PATH   the HTML file (default: report.html); written under a\n"
    "                      temporary name and renamed when complete; a symlink is\n"
    "                      followed, a device or FIFO (/dev/stdout) written through\n"
    "      --force-overwrite  replace an existing file (default: refuse)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Input (\"-\" is stdin) and exit status as for flagtrace stats, -o's rules too;\n"
    "options may come before or after the files, getopt_long's way.\n";

/* True when the report went to our own stdout (-o /dev/stdout): the "wrote" line
 * would land inside the page. */
static bool is_stdout(int fd) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int ft_cli_report(int argc, char **argv) {
  const char *output = "report.html";
  bool force = false;
  static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
                                        {"force-overwrite", no_argument, NULL, 'F'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  for (;;) {
    int prev = optind, c = getopt_long(argc, argv, ":o:h", longs, NULL);
    if (c == -1) break;
    const char *bad = argv[prev] ? argv[prev] : "";
    if (c == 'h') return fputs(usage, stdout), 0;
    if (c == 'o' && ft_cli_value_forgotten("report", argv, optind, optarg)) return FT_CLI_USAGE;
    if (c == 'o') output = optarg;
    else if (c == 'F') force = true;
    else if (c == ':') return ft_cli_usage_error("report", "option '%s' needs a value", bad);
    else if (optopt && bad[0] == '-' && bad[1] == '-' && strchr(bad, '=')) /* a switch given a value */
      return ft_cli_usage_error("report", "option '%.*s' takes no value", (int)(strchr(bad, '=') - bad), bad);
    else return ft_cli_usage_error("report", "unknown option '%s'", bad);
  }
  if (optind >= argc) return ft_cli_usage_error("report", "no trace file given");
  char err[640];
  /* checked before the input is read, opened once it is (as stats -o) */
  bool exists = false;
  if (ft_outputs_check(&output, 1, force, &exists, err, sizeof err)) return ft_cli_output_refused("report", exists, err);
  ft_stat_job job;
  ft_stat_read_opts o = {.timeline = true, .ops = true};
  ft_status s = ft_stat_job_read(&job, (const char *const *)argv + optind, (size_t)(argc - optind), &o, err, sizeof err);
  if (s) {
    ft_cli_error("report", "%s", err);
    ft_stat_job_free(&job);
    return s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  }
  ft_stat_job_notes(stderr, &job, "flagtrace report: ");
  ft_summary_lines(stderr, &job, "flagtrace report: ");
  ft_outfile out;
  if (ft_outputs_open(&out, &output, 1, force, &exists, err, sizeof err)) {
    ft_stat_job_free(&job);
    return ft_cli_output_refused("report", exists, err);
  }
  bool quiet = is_stdout(out.file.fd);
  /* links are relative to the report's directory; when it cannot be resolved the page has none */
  char *copy = strdup(output), *dir = copy ? realpath(dirname(copy), NULL) : NULL;
  s = ft_report_html_write(out.f, &job, dir);
  free(dir);
  free(copy);
  int rc = 0;
  if (s) {
    ft_outfile_discard(&out);
    ft_cli_error("report", "out of memory");
    rc = 1;
  } else if (ft_outfile_commit(&out, 1, err, sizeof err)) {
    ft_cli_error("report", "%s", err);
    rc = 1;
  } else if (!quiet) {
    char shown[PATH_MAX];
    ft__visible(shown, sizeof shown, output);
    printf("flagtrace report: wrote %s\n", shown);
  }
  ft_stat_job_free(&job);
  return rc;
}
