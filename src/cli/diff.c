/* flagtrace diff: two traces (or two sets of rank files) compared step, op and kernel by kernel. */
#define _GNU_SOURCE
#include <getopt.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "advise_cli.h"
#include "cli.h"
#include "diff.h"
#include "report.h"
#include "stats_out.h"
#include "trace_dir.h"

static const char usage[] =
    "usage: flagtrace diff [options] A B\n"
    "       flagtrace diff [options] --a 'runA/*.json.gz' --b 'runB/*.json.gz'\n"
    "\n"
    "Compares two runs of one workload (two runs, two batch sizes, two accelerators):\n"
    "A is the baseline, B the run compared with it; ratios are B/A, deltas B - A.\n"
    "Each side is one trace, a directory of traces, or (--a, --b) a glob pattern of\n"
    "rank files; flagtrace's or torch.profiler's traces, of any vendor. Both sides\n"
    "are read as flagtrace stats reads them (the same rows: stats -r ops,kernels).\n"
    "\n"
    "Alignment (docs/diff.md):\n"
    "  steps    ProfilerStep#N ranges when both sides have them (--step: another\n"
    "           range), else the whole traces; when the sides ran different numbers\n"
    "           of steps every value is per step (the output says so)\n"
    "  ops      by name (--shapes: and Input Dims), over the steps' traces; device\n"
    "           time is the op's self device time: the work whose External id is\n"
    "           one of its calls\n"
    "  kernels  inside each op: by name when the sides share kernel names (one\n"
    "           vendor), else as a group (count, total, mean), never by name\n"
    "\n"
    "Reports, in order: summary (steps, step time, device busy, kernel, API and copy\n"
    "time, copies and bytes), steps (A's and B's side by side in their order), ops\n"
    "(the --limit largest regressions and improvements), unmatched (ops only in A or\n"
    "only in B), kernels (of each op shown, side by side), api (runtime and driver\n"
    "calls), copies (count, bytes, bandwidth A vs B).\n"
    "\n"
    "options:\n"
    "      --a PATTERN     side A: a file, a directory or a glob pattern (quoted);\n"
    "                      a name that exists is read as it is, never as a pattern\n"
    "      --b PATTERN     side B (both, or two operands A B)\n"
    "  -f, --format FMT    table (default), csv, json (schema in docs/diff.md) or\n"
    "                      html (flagtrace report's viewer: A above B by step, both\n"
    "                      sides' summary and tables, slower ops and kernels outlined;\n"
    "                      it reads each trace twice: regular files only, no stdin or FIFO)\n"
    "  -o, --output PATH   write to PATH instead of stdout\n"
    "      --force-overwrite  replace an existing -o file (default: refuse)\n"
    "  -n, --limit N       regressions and improvements shown, each (default 20;\n"
    "                      0: every op, unchanged ones too); with N only ops that\n"
    "                      grew or shrank, never unchanged ones to fill the count;\n"
    "                      the kernels report follows the ops shown\n"
    "      --width N       fit table lines to N characters (default: the terminal's\n"
    "                      width when stdout is one, else $COLUMNS on a terminal that\n"
    "                      gives none; piped or -o: no limit), as stats --width does:\n"
    "                      spare columns left out first (means, CPU times, GB/s),\n"
    "                      then deltas, then counts, A and B always together;\n"
    "                      names cut in the middle (docs/diff.md, Tables)\n"
    "      --step NAME     align on the user range NAME (or NAME#N); 'all': the\n"
    "                      whole traces even when they have ProfilerStep ranges\n"
    "      --shapes        ops by name and Input Dims (record_shapes=True on both)\n"
    "      --kernels MODE  auto (default), name (match kernels by name) or group\n"
    "                      (compare each op's kernels as a group)\n"
    "      --force         compare even when fewer than half the op names match\n"
    "      --by-step       step N of A against step N of B (by ProfilerStep#N, by\n"
    "                      position when the numbers differ; --step: a user range),\n"
    "                      each thread's top-level ops aligned by name in call order;\n"
    "                      per step its wall time and the -n ops that changed most\n"
    "                      (one trace a side; table, csv or json)\n"
    "  -q, --quiet         no notes on stderr (skipped events, incomplete traces)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Input that cannot be compared (a side with no ops or device work, ProfilerStep\n"
    "ranges on one side only, a --step range missing, two different workloads) is\n"
    "one line on stderr and exit status 2, never a table.\n"
    "\n"
    "example:\n"
    "  flagtrace diff cuda.json.gz musa.json.gz\n"
    "  flagtrace diff -f json -n 0 --a 'base/*.json.gz' --b 'opt/*.json.gz' > diff.json\n";

enum { OPT_A = 256, OPT_B, OPT_STEP, OPT_SHAPES, OPT_KERNELS, OPT_FORCE, OPT_OVERWRITE, OPT_BY_STEP, OPT_WIDTH };
enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON, FMT_HTML };

/* A side's files: operands as stats takes them (directories expanded), a glob pattern expanded first. */
static ft_status side_files(ft_trace_args *t, glob_t *g, const char *arg, char *err, size_t errlen) {
  memset(g, 0, sizeof *g);
  const char *one[1] = {arg};
  const char *const *paths = one;
  size_t n = 1;
  struct stat sb;
  /* a name that exists is read as it is, never as a pattern ('t[1].json' is not t1.json) */
  if (strpbrk(arg, "*?[") && lstat(arg, &sb)) {
    int rc = glob(arg, 0, NULL, g);
    if (rc == GLOB_NOSPACE) return FT_ENOMEM;
    if (rc) {
      snprintf(err, errlen, "no file matches '%s'", arg);
      return FT_ENOTFOUND;
    }
    paths = (const char *const *)g->gl_pathv;
    n = g->gl_pathc;
  }
  return ft_trace_args_expand(t, paths, n, true, err, errlen);
}

/* One side's read (a thread of its own). */
typedef struct side_read {
  ft_trace_args *t;
  ft_stat_job *job;
  ft_status st;
  bool read;
  char err[640];
} side_read;

static void *read_side(void *arg) {
  side_read *r = arg;
  ft_stat_read_opts ro = {.ops = true, .op_kernels = true, .memory = true}; /* memory: its peaks */
  r->st = ft_stat_job_read(r->job, r->t->paths, r->t->n, &ro, r->err, sizeof r->err);
  r->read = true;
  return NULL;
}

static void side_line(FILE *f, const char *label, const ft_stat_job *j) {
  fprintf(f, "%s: %llu events from %zu file%s (", label, (unsigned long long)j->events, j->n_files,
          j->n_files == 1 ? "" : "s");
  for (size_t i = 0; i < j->n_files && i < 3; i++) {
    fputs(i ? ", " : "", f);
    ft_put_visible(f, j->files[i].path);
  }
  fputs(j->n_files > 3 ? ", ...)\n" : ")\n", f);
}

static void write_table(FILE *f, const ft_diff *d, const ft_stat_job *job[2], size_t width) {
  fputs("flagtrace diff: A is the baseline, ratios are B/A, deltas B - A\n", f);
  side_line(f, "A", job[0]);
  side_line(f, "B", job[1]);
  if (!d->step_name[0]) fputs("steps: none used: the whole traces are compared\n", f);
  else
    fprintf(f, "steps: %s ranges, A %llu, B %llu: %s\n", d->step_name, (unsigned long long)d->steps[0],
            (unsigned long long)d->steps[1], d->per_step ? "values are per step" : "values are totals over the steps");
  uint64_t all = d->ops[0] + d->ops[1] - d->ops_matched;
  char ops[128], kernels[160];
  snprintf(ops, sizeof ops, "ops aligned by name: %llu of %llu (%.1f %%)", (unsigned long long)d->ops_matched,
           (unsigned long long)all, all ? 100.0 * (double)d->ops_matched / (double)all : 100.0);
  snprintf(kernels, sizeof kernels, "kernels %s (%llu of A's %llu names on B)",
           d->kernels_by_name ? "matched by name inside each op" : "compared per op as a group (not by name)",
           (unsigned long long)d->kernels_shared, (unsigned long long)d->kernels[0]);
  /* one line, or two where it would be wider than the width */
  bool two = width && strlen(ops) + 2 + strlen(kernels) > width;
  fprintf(f, "%s%s%s\n", ops, two ? "\n" : "; ", kernels);
  ft_table_opts to = {width, 0, FT_UNIT_US};
  for (int r = 0; r < FT_DIFF_N; r++) {
    if (!d->reps[r].key) continue; /* not built (memory: neither side has any) */
    fputc('\n', f);
    if (!d->reps[r].n_rows) fprintf(f, "== %s ==\n(none)\n", d->reps[r].title);
    else ft_report_table(f, &d->reps[r], &to);
  }
}

static void write_json(FILE *f, const ft_diff *d, const ft_stat_job *job[2]) {
  fputs("{\n  \"schema\": 1,\n", f);
  for (int s = 0; s < 2; s++) {
    fprintf(f, "  \"%s\": {", s ? "b" : "a");
    ft_summary_json(f, job[s]);
    fprintf(f, ", \"steps\": %llu},\n", (unsigned long long)d->steps[s]);
  }
  fputs("  \"alignment\": {\"step\": ", f);
  if (d->step_name[0]) ft_json_string(f, d->step_name);
  else fputs("null", f);
  fprintf(f,
          ", \"per_step\": %s, \"ops_a\": %llu, \"ops_b\": %llu, \"ops_matched\": %llu, \"kernels\": \"%s\", "
          "\"kernel_names_a\": %llu, \"kernel_names_b\": %llu, \"kernel_names_shared\": %llu}",
          d->per_step ? "true" : "false", (unsigned long long)d->ops[0], (unsigned long long)d->ops[1],
          (unsigned long long)d->ops_matched, d->kernels_by_name ? "name" : "group", (unsigned long long)d->kernels[0],
          (unsigned long long)d->kernels[1], (unsigned long long)d->kernels_shared);
  for (int r = 0; r < FT_DIFF_N; r++) {
    if (!d->reps[r].key) continue;
    fprintf(f, ",\n  \"%s\": ", d->reps[r].key);
    ft_report_json(f, &d->reps[r]);
  }
  fputs("\n}\n", f);
}

/* -f html reads each trace twice (its slices, html_inputs): a side that can be read
 * once (stdin, a FIFO, a pipe such as <(cmd), a device) is refused before any reading,
 * where a second open would wait for a writer for good or find the pipe empty. */
static ft_status html_readable(const ft_trace_args t[2], char *err, size_t errlen) {
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < t[s].n; i++) {
      struct stat sb;
      if (!strcmp(t[s].paths[i], "-"))
        return snprintf(err, errlen, "-f html reads each trace twice (its slices): stdin cannot be one"), FT_EINVAL;
      if (!stat(t[s].paths[i], &sb) && !S_ISREG(sb.st_mode))
        return snprintf(err, errlen,
                        "%s: -f html reads each trace twice (its slices): not a regular file (a FIFO, pipe or "
                        "device is read once)",
                        t[s].paths[i]),
               FT_EINVAL;
    }
  return FT_OK;
}

/* -f html: the report's viewer, A above B aligned by step, with this diff's json as its
 * tables (ops slower on B marked). Each side is read again for its slices (html_readable
 * let only regular files through); the inputs are read before the output is opened, as
 * report does. */
static ft_status html_inputs(ft_report_input in[2], size_t *n_read, const ft_trace_args t[2], char *err,
                             size_t errlen) {
  ft_status st = FT_OK;
  for (*n_read = 0; *n_read < 2 && !st; ++*n_read)
    st = ft_report_input_read(&in[*n_read], t[*n_read].paths, t[*n_read].n, err, errlen);
  return st;
}

static ft_status write_html(FILE *f, const ft_diff *d, const ft_stat_job *job[2], const ft_report_input in[2],
                            const char *output) {
  char *json = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&json, &len);
  if (!m) return FT_ENOMEM;
  write_json(m, d, job);
  if (fclose(m)) return free(json), FT_ENOMEM;
  /* links are relative to the page's directory (the working one for stdout) */
  char *dir = ft__report_dir(output ? output : "./-");
  ft_status st = ft_report_html_groups(f, in, 2, json, NULL, 0, dir);
  free(dir);
  free(json);
  return st;
}

/* --by-step: one trace a side (a pattern or directory that names one), read into its event model. */
static int by_step_sides(const char *side[2], enum fmt fmt, const char *output, bool overwrite, const char *step,
                         size_t limit, long width) {
  ft_trace_args t[2] = {{0}, {0}};
  glob_t g[2];
  memset(g, 0, sizeof g);
  char err[640];
  int rc = 0;
  for (int s = 0; s < 2 && !rc; s++) {
    ft_status st = side_files(&t[s], &g[s], side[s], err, sizeof err);
    if (st) ft_cli_error("diff", "%s: %s", s ? "B" : "A", err), rc = st == FT_ENOMEM ? 1 : FT_CLI_USAGE;
    else if (t[s].n != 1)
      rc = ft_cli_usage_error("diff", "--by-step compares one trace a side, %s has %zu files", s ? "B" : "A", t[s].n);
  }
  if (!rc) {
    const char *paths[2] = {t[0].paths[0], t[1].paths[0]};
    rc = ft__cli_diff_by_step(paths,
                              fmt == FMT_CSV    ? 1
                              : fmt == FMT_JSON ? 2
                                                : 0,
                              output, overwrite, step, limit, width);
  }
  for (int s = 0; s < 2; s++) {
    ft_trace_args_free(&t[s]);
    if (g[s].gl_pathv) globfree(&g[s]);
  }
  return rc;
}

static int parse_count(const char *s, size_t *out) {
  char *end;
  if (!*s || *s == '-') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end) return -1;
  *out = (size_t)v;
  return 0;
}

int ft_cli_diff(int argc, char **argv) {
  int advice_rc;
  if (ft_cli_diff_advice(argc, argv, &advice_rc)) return advice_rc; /* two advise results (advise_compare.c) */
  const char *side[2] = {NULL, NULL}, *output = NULL;
  enum fmt fmt = FMT_TABLE;
  ft_diff_opts o = {.limit = 20};
  bool quiet = false, overwrite = false, by_step = false, kernels_set = false;
  long width = -1; /* --width; -1: the terminal's (ft_table_width) */
  static const struct option longs[] = {{"a", required_argument, NULL, OPT_A},
                                        {"b", required_argument, NULL, OPT_B},
                                        {"format", required_argument, NULL, 'f'},
                                        {"output", required_argument, NULL, 'o'},
                                        {"limit", required_argument, NULL, 'n'},
                                        {"step", required_argument, NULL, OPT_STEP},
                                        {"shapes", no_argument, NULL, OPT_SHAPES},
                                        {"kernels", required_argument, NULL, OPT_KERNELS},
                                        {"force", no_argument, NULL, OPT_FORCE},
                                        {"by-step", no_argument, NULL, OPT_BY_STEP},
                                        {"force-overwrite", no_argument, NULL, OPT_OVERWRITE},
                                        {"width", required_argument, NULL, OPT_WIDTH},
                                        {"quiet", no_argument, NULL, 'q'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  for (;;) {
    int prev = optind, c = getopt_long(argc, argv, ":f:o:n:qh", longs, NULL);
    if (c == -1) break;
    const char *bad = argv[prev] ? argv[prev] : "";
    switch (c) {
    case 'h': fputs(usage, stdout); return 0;
    case OPT_A: side[0] = optarg; break;
    case OPT_B: side[1] = optarg; break;
    case 'f':
      if (!strcmp(optarg, "table")) fmt = FMT_TABLE;
      else if (!strcmp(optarg, "csv")) fmt = FMT_CSV;
      else if (!strcmp(optarg, "json")) fmt = FMT_JSON;
      else if (!strcmp(optarg, "html")) fmt = FMT_HTML;
      else return ft_cli_usage_error("diff", "--format takes table, csv, json or html, not '%s'", optarg);
      break;
    case 'o':
      /* "-o -- A B": -o took "--" for its value, and would write a file of that name */
      if (ft_cli_value_forgotten("diff", argv, optind, optarg)) return FT_CLI_USAGE;
      output = strcmp(optarg, "-") ? optarg : NULL;
      break;
    case 'n':
      if (parse_count(optarg, &o.limit)) return ft_cli_usage_error("diff", "--limit takes a count, not '%s'", optarg);
      break;
    case OPT_STEP:
      if (!*optarg) return ft_cli_usage_error("diff", "--step takes a range name or 'all'");
      o.step = optarg;
      break;
    case OPT_SHAPES: o.shapes = true; break;
    case OPT_KERNELS:
      if (!strcmp(optarg, "auto")) o.kernels = FT_DIFF_KERNELS_AUTO;
      else if (!strcmp(optarg, "name")) o.kernels = FT_DIFF_KERNELS_NAME;
      else if (!strcmp(optarg, "group")) o.kernels = FT_DIFF_KERNELS_GROUP;
      else return ft_cli_usage_error("diff", "--kernels takes auto, name or group, not '%s'", optarg);
      kernels_set = true;
      break;
    case OPT_FORCE: o.force = true; break;
    case OPT_BY_STEP: by_step = true; break;
    case OPT_OVERWRITE: overwrite = true; break;
    case OPT_WIDTH:
      if (ft_cli_width("diff", optarg, &width)) return FT_CLI_USAGE;
      break;
    case 'q': quiet = true; break;
    case ':': return ft_cli_usage_error("diff", "option '%s' needs a value", bad);
    default:
      if (optopt && optopt != '?' && bad[0] == '-' && bad[1] != '-')
        return ft_cli_usage_error("diff", "unknown option '-%c'", optopt);
      return ft_cli_usage_error("diff", "unknown option '%s'", bad);
    }
  }
  int operands = argc - optind;
  if (!side[0] != !side[1]) return ft_cli_usage_error("diff", "--a and --b go together");
  if (side[0] && operands)
    return ft_cli_usage_error("diff", "give the sides as --a and --b or as two operands, not both");
  if (!side[0] && operands != 2)
    return ft_cli_usage_error("diff", "two traces to compare are needed (A B), %d given", operands);
  if (!side[0]) side[0] = argv[optind], side[1] = argv[optind + 1];
  if (!strcmp(side[0], "-") && !strcmp(side[1], "-"))
    return ft_cli_usage_error("diff", "\"-\" (stdin) can be read once");
  if (by_step && (fmt == FMT_HTML || o.shapes || kernels_set))
    return ft_cli_usage_error("diff", "--by-step writes table, csv or json and aligns ops by name: no %s",
                              fmt == FMT_HTML ? "-f html"
                              : o.shapes      ? "--shapes"
                                              : "--kernels");
  if (by_step) return by_step_sides(side, fmt, output, overwrite, o.step, o.limit, width);
  char err[640];
  bool exists = false;
  const char *names[1] = {output};
  if (output && ft_outputs_check(names, 1, overwrite, &exists, err, sizeof err))
    return ft_cli_output_refused("diff", exists, err);
  ft_trace_args t[2] = {{0}, {0}};
  glob_t g[2];
  memset(g, 0, sizeof g);
  ft_stat_job job[2];
  bool read[2] = {false, false};
  int rc = 0;
  side_read sr[2];
  pthread_t tid;
  bool threaded = false;
  for (int s = 0; s < 2; s++) { /* the files first: a bad name costs no reading */
    sr[s] = (side_read){.t = &t[s], .job = &job[s]};
    if ((sr[s].st = side_files(&t[s], &g[s], side[s], sr[s].err, sizeof sr[s].err))) break;
  }
  if (!sr[0].st && !sr[1].st && fmt == FMT_HTML && html_readable(t, err, sizeof err)) {
    ft_cli_error("diff", "%s", err);
    rc = FT_CLI_USAGE;
  }
  if (!rc && !sr[0].st && !sr[1].st) { /* both sides at once, as stats reads its files */
    threaded = !pthread_create(&tid, NULL, read_side, &sr[1]);
    read_side(&sr[0]);
    if (threaded) pthread_join(tid, NULL);
    else read_side(&sr[1]);
  }
  for (int s = 0; s < 2 && !rc; s++) {
    if (sr[s].st) {
      ft_cli_error("diff", "%s: %s", s ? "B" : "A", sr[s].err);
      rc = sr[s].st == FT_ENOMEM ? 1 : FT_CLI_USAGE;
    }
  }
  for (int s = 0; s < 2; s++) read[s] = sr[s].read;
  for (int s = 0; s < 2 && !rc && !quiet; s++) {
    ft_trace_args_notes(stderr, &t[s], s ? "flagtrace diff: B: " : "flagtrace diff: A: ");
    ft_stat_job_notes(stderr, &job[s], s ? "flagtrace diff: B: " : "flagtrace diff: A: ");
    ft_summary_lines(stderr, &job[s], s ? "flagtrace diff: B: " : "flagtrace diff: A: ");
  }
  ft_diff d;
  bool built = false;
  if (!rc) {
    ft_status st = ft_diff_build(&d, &job[0], &job[1], &o, err, sizeof err);
    if (st == FT_ENOMEM) ft_cli_error("diff", "out of memory"), rc = 1;
    else if (st) ft_cli_error("diff", "%s", err), rc = FT_CLI_USAGE;
    built = !st;
  }
  ft_report_input in[2];
  size_t n_in = 0;
  if (built && fmt == FMT_HTML) {
    ft_status st = html_inputs(in, &n_in, t, err, sizeof err);
    if (st) ft_cli_error("diff", "%s", err), rc = st == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  }
  if (built && !rc) {
    ft_outfile out;
    FILE *f = stdout;
    if (output && ft_outputs_open(&out, names, 1, overwrite, &exists, err, sizeof err)) {
      rc = ft_cli_output_refused("diff", exists, err);
    } else {
      if (output) f = out.f;
      const ft_stat_job *jobs[2] = {&job[0], &job[1]};
      if (fmt == FMT_TABLE) write_table(f, &d, jobs, width >= 0 ? (size_t)width : output ? 0 : ft_table_width());
      else if (fmt == FMT_JSON) write_json(f, &d, jobs);
      else if (fmt == FMT_HTML && write_html(f, &d, jobs, in, output)) {
        ft_cli_error("diff", "out of memory");
        rc = 1;
      } else if (fmt != FMT_HTML)
        for (int r = 0; r < FT_DIFF_N; r++) {
          if (!d.reps[r].key) continue;
          fprintf(f, "%s# %s\n", r ? "\n" : "", d.reps[r].key);
          ft_report_csv(f, &d.reps[r]);
        }
      if (output && rc) ft_outfile_discard(&out);
      else if (output && ft_outfile_commit(&out, 1, err, sizeof err)) {
        ft_cli_error("diff", "%s", err);
        rc = 1;
      }
    }
  }
  if (built) ft_diff_free(&d);
  for (size_t g = 0; g < n_in; g++) ft_report_input_free(&in[g]);
  for (int s = 0; s < 2; s++) {
    if (read[s]) ft_stat_job_free(&job[s]);
    ft_trace_args_free(&t[s]);
    if (g[s].gl_pathv) globfree(&g[s]);
  }
  return rc;
}
