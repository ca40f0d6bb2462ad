/* flagtrace report: the command that writes the HTML report of a job's traces. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"
#include "stats_out.h"
#include "trace_dir.h"

static const char usage[] =
    "usage: flagtrace report [options] FILE|DIR...\n"
    "       flagtrace report [options] --a FILE|DIR... --b FILE|DIR...\n"
    "\n"
    "Writes one self-contained HTML file (no network needed to view it) from the\n"
    "same aggregation as flagtrace stats: the summary header (files, ranks, tracer,\n"
    "device status, dropped records, events outside the capture window), a timeline\n"
    "of every slice (every rank on one wall clock when each trace states its base\n"
    "time; CPU ops nested, runtime calls, one row per device and stream; names,\n"
    "tooltips, launch arrows, search, a step selector; about 25 bytes of page per\n"
    "slice), a GPU busy strip per rank, top kernels and ops, copies by size and\n"
    "bandwidth, sortable tables of every stats report, and per file a link to the\n"
    "trace itself for Perfetto or chrome://tracing. docs/report.md describes it.\n"
    "\n"
    "With --a and --b: two groups of traces, A's timeline above B's, aligned by\n"
    "step (ProfilerStep#N) or at their starts, the ops named by --regress marked.\n"
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
    "      --a FILE...     the first group (A): every file up to --b\n"
    "      --b FILE...     the second group (B), drawn below A\n"
    "      --diff-json PATH  a JSON document (flagtrace diff -f json) shown with them\n"
    "      --regress NAME  an op name marked as a regression (repeatable)\n"
    "  -q, --quiet         no notes on stderr and no \"wrote\" line (errors are\n"
    "                      still shown): a script's run prints nothing when it works\n"
    "  -h, --help          show this help\n"
    "\n"
    "Input (\"-\" is stdin; a directory: its traces, as for flagtrace stats) and exit\n"
    "status as for flagtrace stats, -o's rules too;\n"
    "options may come before or after the files, getopt_long's way.\n";

/* True when the report went to our own stdout (-o /dev/stdout): the "wrote" line
 * would land inside the page. */
static bool is_stdout(int fd) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int report(const char *output, bool force, bool quiet, const char *const *const *group, const size_t *n_group,
                  size_t n_groups, const char *diff_path, const char *const *regress, size_t n_regress);

int ft_cli_report(int argc, char **argv) {
  const char *output = "report.html";
  bool force = false, quiet = false;
  const char *diff_path = NULL;
  char **regress = calloc((size_t)argc + 1, sizeof *regress), **group[2];
  size_t n_regress = 0, n_group[2] = {0, 0};
  group[0] = calloc((size_t)argc + 1, sizeof *group[0]);
  group[1] = calloc((size_t)argc + 1, sizeof *group[1]);
  int in_group = -1; /* the files after --a (0) or --b (1) */
  if (!regress || !group[0] || !group[1]) return free(regress), free(group[0]), free(group[1]), 1;
  static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
                                        {"force-overwrite", no_argument, NULL, 'F'},
                                        {"a", no_argument, NULL, 'A'},
                                        {"b", no_argument, NULL, 'B'},
                                        {"diff-json", required_argument, NULL, 'D'},
                                        {"regress", required_argument, NULL, 'R'},
                                        {"quiet", no_argument, NULL, 'q'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int rc = 0;
  for (;;) {
    int prev = optind, c = getopt_long(argc, argv, "-:o:qh", longs, NULL);
    if (c == -1) break;
    const char *bad = argv[prev] ? argv[prev] : "";
    if (c == 'h') {
      fputs(usage, stdout);
      goto done;
    }
    if (c == 'o' && ft_cli_value_forgotten("report", argv, optind, optarg)) {
      rc = FT_CLI_USAGE;
      goto done;
    }
    if (c == 1) group[in_group < 0 ? 0 : in_group][n_group[in_group < 0 ? 0 : in_group]++] = optarg;
    else if (c == 'A' || c == 'B') in_group = c == 'B';
    else if (c == 'D') diff_path = optarg;
    else if (c == 'R') regress[n_regress++] = optarg;
    else if (c == 'o') output = optarg;
    else if (c == 'F') force = true;
    else if (c == 'q') quiet = true;
    else if (c == ':') {
      rc = ft_cli_usage_error("report", "option '%s' needs a value", bad);
      goto done;
    } else if (optopt && bad[0] == '-' && bad[1] == '-' && strchr(bad, '=')) { /* a switch given a value */
      rc = ft_cli_usage_error("report", "option '%.*s' takes no value", (int)(strchr(bad, '=') - bad), bad);
      goto done;
    } else {
      rc = ft_cli_usage_error("report", "unknown option '%s'", bad);
      goto done;
    }
  }
  for (; optind < argc; optind++)
    group[in_group < 0 ? 0 : in_group][n_group[in_group < 0 ? 0 : in_group]++] = argv[optind];
  size_t n_groups = in_group < 0 ? 1 : 2;
  if (!n_group[0] || (n_groups == 2 && !n_group[1])) {
    rc = ft_cli_usage_error("report", n_groups == 2 ? "--a and --b each need a trace file" : "no trace file given");
    goto done;
  }
  rc = report(output, force, quiet, (const char *const *const *)group, n_group, n_groups, diff_path,
              (const char *const *)regress, n_regress);
done:
  free(regress);
  free(group[0]);
  free(group[1]);
  return rc;
}

/* A file's whole text (the diff's JSON), or NULL with the reason in err. */
static char *slurp(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  size_t len = 0;
  FILE *m = f ? open_memstream(&text, &len) : NULL;
  if (!f || !m) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    if (f) fclose(f);
    return NULL;
  }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f))) fwrite(buf, 1, n, m);
  bool bad = ferror(f);
  fclose(f);
  fclose(m);
  if (bad) snprintf(err, errlen, "%s: read error", path), free(text), text = NULL;
  return text;
}

static int report(const char *output, bool force, bool quiet, const char *const *const *group, const size_t *n_group,
                  size_t n_groups, const char *diff_path, const char *const *regress, size_t n_regress) {
  char err[640];
  /* checked before the input is read, opened once it is (as stats -o) */
  bool exists = false;
  if (ft_outputs_check(&output, 1, force, &exists, err, sizeof err))
    return ft_cli_output_refused("report", exists, err);
  char *diff = diff_path ? slurp(diff_path, err, sizeof err) : NULL;
  if (diff_path && !diff) return ft_cli_error("report", "%s", err), FT_CLI_USAGE;
  ft_report_input in[2];
  ft_status s = FT_OK;
  size_t read = 0;
  ft_trace_args t[2] = {{0}, {0}}; /* a directory: the traces in it */
  for (; read < n_groups && !s; read++) {
    if ((s = ft_trace_args_expand(&t[read], group[read], n_group[read], true, err, sizeof err))) break;
    s = ft_report_input_read(&in[read], t[read].paths, t[read].n, err, sizeof err);
    if (!s && !quiet) { /* -q: errors only */
      ft_trace_args_notes(stderr, &t[read], "flagtrace report: ");
      ft_stat_job_notes(stderr, &in[read].job, "flagtrace report: ");
      ft_summary_lines(stderr, &in[read].job, "flagtrace report: ");
    }
  }
  ft_outfile out;
  int rc = 0;
  if (s) {
    ft_cli_error("report", "%s", err);
    rc = s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
    goto end;
  }
  if (ft_outputs_open(&out, &output, 1, force, &exists, err, sizeof err)) {
    rc = ft_cli_output_refused("report", exists, err);
    goto end;
  }
  quiet = quiet || is_stdout(out.file.fd); /* the "wrote" line would land inside the page */
  /* links are relative to the report's directory; when it cannot be resolved the page has none */
  char *dir = ft__report_dir(output);
  s = ft_report_html_groups(out.f, in, n_groups, diff, regress, n_regress, dir);
  free(dir);
  if (s) {
    ft_outfile_discard(&out);
    ft_cli_error("report", s == FT_EINVAL ? "%s: not a JSON document" : "out of memory", diff_path);
    rc = s == FT_EINVAL ? FT_CLI_USAGE : 1;
  } else if (ft_outfile_commit(&out, 1, err, sizeof err)) {
    ft_cli_error("report", "%s", err);
    rc = 1;
  } else if (!quiet) {
    char shown[PATH_MAX];
    ft__visible(shown, sizeof shown, output);
    printf("flagtrace report: wrote %s\n", shown);
  }
end:
  for (size_t g = 0; g < read; g++) ft_report_input_free(&in[g]);
  for (int g = 0; g < 2; g++) ft_trace_args_free(&t[g]);
  free(diff);
  return rc;
}
