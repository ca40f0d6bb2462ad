/* flagtrace advise: why each step is slow: its time split into busy and idle by cause, and findings ranked by cost. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advise_cli.h"
#include "advise_partial.h"
#include "cli.h"
#include "stats_out.h"
#include "trace_dir.h"

static const char usage[] =
    "usage: flagtrace advise [options] FILE|DIR...\n"
    "\n"
    "Says why each step is slow. Per rank (a file: its trace's rank, else its\n"
    "position) and per step (ProfilerStep#N, a range named with --step, or the whole\n"
    "trace when it has neither), the step's wall time is split into device busy\n"
    "(compute, communication, copies) and device idle, and the idle by cause:\n"
    "the step's start before its first device work (data loading), a synchronizing\n"
    "call, a blocking host-to-device copy, the host not launching fast enough, other.\n"
    "Then findings, each a rule with a documented definition and threshold\n"
    "(docs/advise.md), ranked by what it costs per step: the device idle it causes,\n"
    "which is what fixing it saves, never more than the step's critical path allows.\n"
    "Rules: sync, h2d-copy, step-start, launch-bound, sync-memop, gap, straggler (two\n"
    "or more files: a rank slower than the others on the same step), fuse, low-flops.\n"
    "Files are flagtrace's or torch.profiler's traces (.json, .json.gz, \"-\" stdin;\n"
    "a directory: the traces directly in it), of any vendor, read in parallel.\n"
    "\n"
    "options:\n"
    "  -f, --format FMT    table (default), json (\"schema\": 1: steps and findings with\n"
    "                      their occurrences) or csv (the findings)\n"
    "  -o, --output PATH   write there instead of stdout (\"-\": stdout), by stats's\n"
    "                      rules (written whole or not at all)\n"
    "      --force-overwrite  replace an existing -o file (default: refuse)\n"
    "      --step NAME     the user range (NVTX, user_annotation) NAME's occurrences\n"
    "                      are the steps; a file without it is an error (default:\n"
    "                      ProfilerStep#N, else the whole trace)\n"
    "      --gap-us N      the gap rule's threshold: device gaps over N us (default 100)\n"
    "      --min-share F   leave out findings that cost less than F of the step's\n"
    "                      wall time, a fraction from 0 to 1 (default 0.01)\n"
    "  -n, --limit N       the N costliest findings (default 20; 0: all of them)\n"
    "      --width N       fit the table to N characters (default: the terminal's\n"
    "                      width when stdout is one, else no limit)\n"
    "      --partial       write the files' per-rank advice as JSON (for --merge)\n"
    "      --merge         the files are --partial outputs: reduce them to the job's\n"
    "                      advice (stragglers), printed as advise prints it\n"
    "  -q, --quiet         no notes on stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "Options follow getopt_long: anywhere among the files, --opt=value, unambiguous\n"
    "abbreviations; after \"--\" everything is a file.\n"
    "\n"
    "exit status: 0; 2 for a usage error, a refused output, a file that cannot be\n"
    "read or is not a trace, or one without the --step range (one line on\n"
    "stderr, never a table); 1 when the output cannot be written or memory runs out.\n"
    "\n"
    "example:\n"
    "  flagtrace advise train.json.gz\n"
    "  flagtrace advise -f json -n 0 -o advice.json run/\n";

enum { OPT_STEP = 256, OPT_GAP, OPT_SHARE, OPT_WIDTH, OPT_OVERWRITE, OPT_PARTIAL, OPT_MERGE };
enum fmt { FMT_TABLE, FMT_JSON, FMT_CSV };

static int parse_count(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || errno || *s == '-') return -1;
  *out = (size_t)v;
  return 0;
}

static int parse_number(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int write_out(FILE *f, const ft_cli_advice *a, enum fmt fmt, size_t width, size_t top) {
  if (fmt == FMT_JSON) {
    ft_cli_advice_json(f, a, top);
    return 0;
  }
  return fmt == FMT_CSV ? ft_cli_advice_csv(f, a, top) : ft_cli_advice_table(f, a, width, top);
}

int ft_cli_advise(int argc, char **argv) {
  enum fmt fmt = FMT_TABLE;
  const char *output = NULL, *step = NULL;
  size_t top = 20;
  long width = -1;
  bool quiet = false, overwrite = false, partial = false, merge = false;
  ft_advise_opts ao;
  ft_advise_opts_default(&ao);
  static const struct option longs[] = {{"format", required_argument, NULL, 'f'},
                                        {"output", required_argument, NULL, 'o'},
                                        {"force-overwrite", no_argument, NULL, OPT_OVERWRITE},
                                        {"step", required_argument, NULL, OPT_STEP},
                                        {"gap-us", required_argument, NULL, OPT_GAP},
                                        {"min-share", required_argument, NULL, OPT_SHARE},
                                        {"limit", required_argument, NULL, 'n'},
                                        {"width", required_argument, NULL, OPT_WIDTH},
                                        {"quiet", no_argument, NULL, 'q'},
                                        {"partial", no_argument, NULL, OPT_PARTIAL},
                                        {"merge", no_argument, NULL, OPT_MERGE},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  for (;;) {
    int prev = optind, c = getopt_long(argc, argv, ":f:o:n:qh", longs, NULL);
    if (c == -1) break;
    const char *bad = argv[prev] ? argv[prev] : "";
    double d;
    switch (c) {
    case 'h': fputs(usage, stdout); return 0;
    case 'f':
      if (!strcmp(optarg, "table")) fmt = FMT_TABLE;
      else if (!strcmp(optarg, "json")) fmt = FMT_JSON;
      else if (!strcmp(optarg, "csv")) fmt = FMT_CSV;
      else return ft_cli_usage_error("advise", "--format takes table, json or csv, not '%s'", optarg);
      break;
    case 'o':
      if (ft_cli_value_forgotten("advise", argv, optind, optarg)) return FT_CLI_USAGE;
      output = strcmp(optarg, "-") ? optarg : NULL;
      break;
    case OPT_OVERWRITE: overwrite = true; break;
    case OPT_STEP:
      if (!*optarg) return ft_cli_usage_error("advise", "--step takes a range name");
      step = optarg;
      break;
    case OPT_GAP:
      if (parse_number(optarg, 0, 1e12, &d))
        return ft_cli_usage_error("advise", "--gap-us takes microseconds from 0, not '%s'", optarg);
      ao.gap_ns = (uint64_t)llround(d * 1000.0);
      break;
    case OPT_SHARE:
      if (parse_number(optarg, 0, 1, &d))
        return ft_cli_usage_error("advise", "--min-share takes a fraction from 0 to 1, not '%s'", optarg);
      ao.min_share = d;
      break;
    case 'n':
      if (parse_count(optarg, &top)) return ft_cli_usage_error("advise", "--limit takes a count, not '%s'", optarg);
      break;
    case OPT_WIDTH:
      if (ft_cli_width("advise", optarg, &width)) return FT_CLI_USAGE;
      break;
    case 'q': quiet = true; break;
    case OPT_PARTIAL: partial = true; break;
    case OPT_MERGE: merge = true; break;
    case ':': return ft_cli_usage_error("advise", "option '%s' needs a value", bad);
    default:
      if (optopt && optopt != '?' && bad[0] == '-' && bad[1] != '-')
        return ft_cli_usage_error("advise", "unknown option '-%c'", optopt);
      if (optopt && bad[0] == '-' && bad[1] == '-' && strchr(bad, '='))
        return ft_cli_usage_error("advise", "option '%.*s' takes no value", (int)(strchr(bad, '=') - bad), bad);
      return ft_cli_usage_error("advise", "unknown option '%s'", bad);
    }
  }
  if (optind >= argc) return ft_cli_usage_error("advise", "no trace file given");
  if (partial && merge) return ft_cli_usage_error("advise", "--partial and --merge: one or the other");
  char err[640];
  bool exists = false;
  const char *names[1] = {output};
  if (output && ft_outputs_check(names, 1, overwrite, &exists, err, sizeof err)) /* before any reading */
    return ft_cli_output_refused("advise", exists, err);
  ft_trace_args files;
  ft_status s = ft_trace_args_expand(&files, (const char *const *)argv + optind, (size_t)(argc - optind), !merge, err,
                                     sizeof err);
  size_t n_stdin = 0;
  for (size_t i = 0; !s && i < files.n; i++) n_stdin += !strcmp(files.paths[i], "-");
  if (s || n_stdin > 1) {
    if (s) ft_cli_error("advise", "%s", err);
    else ft_cli_usage_error("advise", "\"-\" (stdin) can be read once");
    ft_trace_args_free(&files);
    return s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  }
  if (!quiet) ft_trace_args_notes(stderr, &files, "flagtrace advise: ");
  ft_cli_advice a;
  ft_advise_partial parts = {0};
  const char *const *merged = NULL;
  if (merge) { /* the files are partials (a directory: the .json files in it) */
    s = ft_cli_advice_merge(&a, &parts, files.paths, files.n, &ao, err, sizeof err);
    merged = a.paths;
  } else {
    s = ft_cli_advice_read(&a, files.paths, files.n, step, &ao, err, sizeof err);
  }
  int rc = 0;
  if (s) {
    ft_cli_error("advise", "%s", err);
    rc = s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  } else {
    if (!quiet && a.whole_trace && fmt != FMT_TABLE) /* the table's first line says it */
      fprintf(stderr, "flagtrace advise: note: no ProfilerStep#N range: each trace is one step\n");
    for (size_t i = 0; !quiet && i < a.n_files; i++) { /* all idle reads as advice on nothing */
      uint64_t busy = 0;
      for (size_t k = 0; k < a.per[i].n_steps; k++) busy += a.per[i].steps[k].busy_ns;
      if (!busy)
        ft_cli_error("advise", "note: %s has no device work in its steps: the device reads as idle", files.paths[i]);
    }
    ft_outfile out;
    FILE *f = stdout;
    if (output && ft_outputs_open(&out, names, 1, overwrite, &exists, err, sizeof err)) {
      rc = ft_cli_output_refused("advise", exists, err);
    } else {
      if (output) f = out.f;
      size_t w = width >= 0 ? (size_t)width : output ? 0 : ft_table_width();
      if (partial ? ft_cli_advice_write_partial(f, &a, &ao) != FT_OK : write_out(f, &a, fmt, w, top) != 0) {
        ft_cli_error("advise", "out of memory");
        rc = 1;
        if (output) ft_outfile_discard(&out);
      } else if (output && ft_outfile_commit(&out, 1, err, sizeof err)) {
        ft_cli_error("advise", "%s", err);
        rc = 1;
      }
    }
  }
  ft_cli_advice_free(&a);
  free((void *)merged);
  ft_advise_partial_free(&parts);
  ft_trace_args_free(&files);
  return rc;
}
