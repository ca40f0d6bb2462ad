/* flagtrace stats: kernel, API, memory, range, per-op, per-rank and GPU-busy summaries of traces. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "stats_out.h"

static const char usage[] =
    "usage: flagtrace stats [options] FILE...\n"
    "\n"
    "Summarizes Chrome traces written by flagtrace or by torch.profiler (.json, or\n"
    "gzip-compressed .json.gz; \"-\" reads stdin). The files of a job (every rank) are\n"
    "read in parallel, one thread per file up to the core count, each file on its\n"
    "own: External ids, correlation ids and devices are keyed per file, busy % is\n"
    "per (rank, device) over that file's span; the summaries merge rows by name.\n"
    "\n"
    "options:\n"
    "  -r, --report LIST   reports, a comma-separated subset of (default: all but trace)\n"
    "                        kernels     GPU time per kernel name\n"
    "                        api         runtime and driver API calls per name\n"
    "                        memory      copies and sets by time (kind, name)\n"
    "                        memsize     copies and sets by size, and bandwidth\n"
    "                        ranges      user ranges (user_annotation): CPU time\n"
    "                        gpu_ranges  their GPU projection (gpu_user_annotation)\n"
    "                        ops         self device time per op/range name: the device\n"
    "                                    work whose \"External id\" is one of its calls\n"
    "                        gpu         busy % per rank and device: union of its\n"
    "                                    kernels, copies and sets over the file's span\n"
    "                        ranks       per rank: kernel time, time in communication\n"
    "                                    kernels (NCCL/HCCL/RCCL names), compute, busy %\n"
    "                        trace       device events, the earliest per file by start\n"
    "                                    (--limit of them, 100 by default)\n"
    "                      time reports: Time(%), total, calls, avg, median, min, max,\n"
    "                      stddev (sample); times in us, sizes in bytes\n"
    "  -f, --format FMT    table (default), csv or json\n"
    "  -o, --output PATH   write there instead of stdout, by record's rules: under a\n"
    "                      temporary name renamed when complete, keeping the mode of\n"
    "                      a file it replaces (new: 0666 less the umask; a read-only\n"
    "                      one refused); a symlink followed (a dangling one refused);\n"
    "                      a device or FIFO written through (one nobody reads\n"
    "                      refused). With csv and several reports PATH is a prefix:\n"
    "                      PATH_kernels.csv, PATH_api.csv... and PATH_files.csv,\n"
    "                      renamed together or none (a device or FIFO PATH, such as\n"
    "                      /dev/null or /dev/stdout, takes them all, as stdout does)\n"
    "      --force-overwrite  replace existing files (default: refuse)\n"
    "  -s, --sort KEY      order rows by total (default), count, avg, median, min,\n"
    "                      max, stddev (largest first) or name\n"
    "  -n, --limit N       at most N rows per report (per rank with --by-rank); 0:\n"
    "                      all rows, the trace report's too (every device event,\n"
    "                      48 B of memory each)\n"
    "  -w, --name-width N  cut names in tables to N characters (default: to fit the\n"
    "                      terminal; not cut when stdout is not one); csv and json\n"
    "                      keep full names\n"
    "      --by-rank       per-rank rows (a rank column) instead of the job's total\n"
    "  -h, --help          show this help\n"
    "\n"
    "Options follow getopt_long: anywhere among the files, -oFILE, --opt=value,\n"
    "unambiguous abbreviations (--rep); after \"--\" everything is a file.\n"
    "\n"
    "The header names every file whose trace says it is incomplete (its flagtrace\n"
    "block: device activity off, with the trace's reason; dropped records; events\n"
    "outside the capture window), in every format, and on stderr. Complete events\n"
    "whose ts or dur is missing, not a number, negative (dur) or beyond +-4e15 us,\n"
    "copies and sets whose bytes is not a whole number in [0, 2^63), and events of\n"
    "a category flagtrace does not read are skipped and counted in one line on\n"
    "stderr (\"N events skipped: ...\"). Names longer than 64 KiB are cut to it, a\n"
    "file's devices past the first 1024 are left out of busy % (each in one note),\n"
    "and files that claim the same rank are named in one warning. Older kineto\n"
    "categories (Runtime, Memcpy, Memset, Kernel, Operator, \"external id\"), MTIA's,\n"
    "XPU's and privateuse1's are read as their current names. A file given twice\n"
    "(by any name), a second \"traceEvents\" key, a gzip header with reserved flags\n"
    "and data after the end of a gzip stream are errors; the array form ([...]) may\n"
    "lack its \"]\". The json output carries \"schema\": 2.\n"
    "\n"
    "memory: grows with the names (each at most 64 KiB), rows and devices (1024 per\n"
    "file) reported, plus what exact answers need per event of the files being\n"
    "read: 16 B per device event at most for busy % (less where device work overlaps\n"
    "or touches), and 21-43 B per distinct \"External id\" of an op, for ops; a value\n"
    "flagtrace does not read costs nothing. Medians are exact up to 256 values per\n"
    "row, then from a histogram within 0.4 %; the other columns are exact.\n"
    "\n"
    "Tables and messages show control characters in names as escapes (\\n, \\x1b):\n"
    "a name cannot drive the terminal or break a line; csv and json keep names whole.\n"
    "\n"
    "exit status: 0; 2 for a usage error, a refused output (an existing file without\n"
    "--force-overwrite, a dangling symlink, a directory: checked before any input is\n"
    "read; a FIFO nobody reads, when opened), or a file that cannot be read or parsed\n"
    "(reported in one line with the file, the problem and the byte offset of the\n"
    "offending byte, counted from 0 in the uncompressed text); 1 when the output\n"
    "cannot be written (a full disk, a closed stdout) or memory runs out.\n";

enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON };
#define REP_DEFAULT ((1u << REP_N) - 1 - (1u << REP_TRACE))

static int parse_report(const char *list, unsigned *out) {
  char buf[256];
  if (!*list || strlen(list) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", list);
  *out = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    unsigned bit = 0;
    for (unsigned i = 0; i < REP_N; i++)
      if (!strcmp(tok, ft_report_names[i])) bit = 1u << i;
    if (!strcmp(tok, "all")) bit = REP_DEFAULT;
    if (!bit) return -1;
    *out |= bit;
  }
  return *out ? 0 : -1;
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || errno || *s == '-') return -1;
  *out = (size_t)v;
  return 0;
}

static size_t terminal_name_width(const ft_report *rep) {
  struct winsize ws;
  if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_col) return 0;
  size_t used = 2;
  for (int j = 0; j < rep->n_cols; j++) used += rep->cols[j].width ? (size_t)abs(rep->cols[j].width) + 1 : 0;
  return ws.ws_col > used + 12 ? ws.ws_col - used : 12;
}

static void files_csv(FILE *f, const ft_stat_job *job) {
  fputs("file,rank,events,span_us,tracer,device_activity,device_status,dropped_records,window_discarded\n", f);
  for (size_t i = 0; i < job->n_files; i++) {
    const ft_stat_file *x = &job->files[i];
    ft_csv_field(f, x->path);
    fprintf(f, ",%lld,%llu,%.3f,", (long long)x->rank, (unsigned long long)x->events, (double)x->span_ns / 1000.0);
    ft_csv_field(f, x->meta.tracer);
    fprintf(f, ",%s,", x->meta.device_activity < 0 ? "" : x->meta.device_activity ? "true" : "false");
    ft_csv_field(f, x->meta.device_status);
    fprintf(f, ",%llu,%llu\n", (unsigned long long)x->meta.dropped_records,
            (unsigned long long)x->meta.window_discarded);
  }
}

/* Writes the chosen reports into fs: one stream (stdout, one -o file, or a device
 * or FIFO a csv PREFIX names), or with set one file per report and the files
 * table. Write errors stay in the streams, for the caller's flush to find. */
static void write_all(const ft_stat_job *job, ft_report *reps, size_t n_reps, enum fmt fmt, FILE *const *fs, bool set,
                      bool to_stdout, long name_width, const char *head, size_t head_len) {
  FILE *f = fs[0];
  if (!set) fwrite(head, 1, head_len, f);
  for (size_t r = 0; r < n_reps; r++) {
    const ft_report *rep = &reps[r];
    if (set) f = fs[r];
    if (fmt == FMT_TABLE) {
      fputc('\n', f);
      ft_report_table(f, rep, name_width >= 0 ? (size_t)name_width : to_stdout ? terminal_name_width(rep) : 0);
    } else if (fmt == FMT_JSON) {
      fprintf(f, ",\n  \"%s\": ", rep->key);
      ft_report_json(f, rep);
    } else {
      if (n_reps > 1 && !set) fprintf(f, "%s# %s\n", r ? "\n" : "", rep->key);
      ft_report_csv(f, rep);
    }
  }
  if (set) files_csv(fs[n_reps], job);
  if (fmt == FMT_JSON) fputs("\n}\n", f);
}

/* The files -o names, in the order write_all fills them (names zeroed: each one
 * set or NULL); -1 without memory. */
static int output_names(char **names, const char *output, unsigned report, bool set) {
  if (!set) return (names[0] = strdup(output)) ? 0 : -1;
  size_t n = 0;
  for (int r = 0; r < REP_N; r++) {
    if (!(report & (1u << r))) continue;
    if (asprintf(&names[n], "%s_%s.csv", output, ft_report_names[r]) < 0) {
      names[n] = NULL;
      return -1;
    }
    n++;
  }
  if (asprintf(&names[n], "%s_files.csv", output) < 0) {
    names[n] = NULL;
    return -1;
  }
  return 0;
}

int ft_cli_stats(int argc, char **argv) {
  unsigned report = REP_DEFAULT;
  enum fmt fmt = FMT_TABLE;
  const char *output = NULL;
  ft_report_opts ro = {0};
  long name_width = -1;
  bool limit_given = false, force = false;
  static const struct option longs[] = {
      {"report", required_argument, NULL, 'r'}, {"format", required_argument, NULL, 'f'},
      {"output", required_argument, NULL, 'o'}, {"sort", required_argument, NULL, 's'},
      {"limit", required_argument, NULL, 'n'},  {"name-width", required_argument, NULL, 'w'},
      {"by-rank", no_argument, NULL, 'R'},      {"help", no_argument, NULL, 'h'},
      {"force-overwrite", no_argument, NULL, 'F'}, {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  for (;;) {
    int prev = optind, c = getopt_long(argc, argv, ":r:f:o:s:n:w:h", longs, NULL);
    if (c == -1) break;
    const char *bad = argv[prev] ? argv[prev] : "";
    size_t v;
    switch (c) {
    case 'h': fputs(usage, stdout); return 0;
    case 'r':
      if (parse_report(optarg, &report))
        return ft_cli_usage_error("stats",
                                  "--report takes a comma-separated subset of kernels,api,memory,memsize,ranges,"
                                  "gpu_ranges,ops,gpu,ranks,trace, not '%s'",
                                  optarg);
      break;
    case 'f':
      if (!strcmp(optarg, "table")) fmt = FMT_TABLE;
      else if (!strcmp(optarg, "csv")) fmt = FMT_CSV;
      else if (!strcmp(optarg, "json")) fmt = FMT_JSON;
      else return ft_cli_usage_error("stats", "--format takes table, csv or json, not '%s'", optarg);
      break;
    case 'o': output = optarg; break;
    case 's': {
      int k = -1;
      for (int i = 0; i < SORT_N; i++)
        if (!strcmp(optarg, ft_sort_names[i])) k = i;
      if (k < 0)
        return ft_cli_usage_error("stats", "--sort takes total, count, avg, median, min, max, stddev or name, not '%s'",
                                  optarg);
      ro.sort = k;
      break;
    }
    case 'n':
      if (parse_size(optarg, &v)) return ft_cli_usage_error("stats", "--limit takes a count, not '%s'", optarg);
      ro.limit = v;
      limit_given = true;
      break;
    case 'w':
      if (parse_size(optarg, &v) || v < 4 || v > 100000)
        return ft_cli_usage_error("stats", "--name-width takes a width from 4, not '%s'", optarg);
      name_width = (long)v;
      break;
    case 'R': ro.by_rank = true; break;
    case 'F': force = true; break;
    case ':': return ft_cli_usage_error("stats", "option '%s' needs a value", bad);
    default:
      if (optopt && optopt != '?' && bad[0] == '-' && bad[1] != '-')
        return ft_cli_usage_error("stats", "unknown option '-%c'", optopt);
      if (optopt && bad[0] == '-' && bad[1] == '-' && strchr(bad, '=')) /* a switch given a value */
        return ft_cli_usage_error("stats", "option '%.*s' takes no value", (int)(strchr(bad, '=') - bad), bad);
      return ft_cli_usage_error("stats", "unknown option '%s'", bad);
    }
  }
  if (optind >= argc) return ft_cli_usage_error("stats", "no trace file given");
  size_t n_files = (size_t)(argc - optind);
  size_t n_stdin = 0;
  for (int i = optind; i < argc; i++) n_stdin += !strcmp(argv[i], "-");
  if (n_stdin > 1) return ft_cli_usage_error("stats", "\"-\" (stdin) can be read once");
  ro.reports = report;
  size_t n_reps = 0;
  for (int r = 0; r < REP_N; r++) n_reps += (report >> r) & 1;
  /* the trace report: the earliest N device events of each file, kept while reading
   * (100 unless --limit says; 0: all of them) */
  size_t trace_rows = limit_given ? ro.limit : 100;
  size_t trace_limit = !(report & (1u << REP_TRACE)) ? 0 : trace_rows ? trace_rows : SIZE_MAX;
  char err[640];
  /* -o is checked before the input is read, as record checks before the run: a
   * refused name costs no reading. A csv PREFIX that is a device or FIFO takes
   * every table as one stream, as stdout does. */
  bool set = fmt == FMT_CSV && output && n_reps > 1 && !ft__ofile_is_stream(output);
  size_t n_out = !output ? 0 : set ? n_reps + 1 : 1;
  char *names[REP_N + 1] = {0};
  bool exists = false;
  if (output && output_names(names, output, report, set)) {
    for (size_t i = 0; i < n_out; i++) free(names[i]);
    ft_cli_error("stats", "out of memory");
    return 1;
  }
  if (ft_outputs_check((const char *const *)names, n_out, force, &exists, err, sizeof err)) {
    for (size_t i = 0; i < n_out; i++) free(names[i]);
    return ft_cli_output_refused("stats", exists, err);
  }
  ft_stat_job job;
  ft_status s = ft_stat_job_read(&job, (const char *const *)argv + optind, n_files, false, trace_limit, ro.by_rank,
                                 err, sizeof err);
  if (s) {
    ft_cli_error("stats", "%s", err);
    ft_stat_job_free(&job);
    for (size_t i = 0; i < n_out; i++) free(names[i]);
    return s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  }
  ft_stat_job_notes(stderr, &job, "flagtrace stats: ");
  ft_summary_lines(stderr, &job, "flagtrace stats: ");
  ft_report reps[REP_N];
  int rc = 0;
  n_reps = 0;
  for (int r = 0; r < REP_N && !rc; r++) {
    if (!(report & (1u << r))) continue;
    ft_report_opts o = ro;
    if (r == REP_TRACE) o.limit = trace_rows;
    if (ft_report_build(&reps[n_reps++], r, &job, &o)) rc = 1;
  }
  /* the header goes first into the output (written by write_all's file) */
  char *hbuf = NULL;
  size_t hlen = 0;
  FILE *head = rc ? NULL : open_memstream(&hbuf, &hlen);
  if (head) {
    if (fmt == FMT_JSON) {
      fputs("{\n  \"schema\": 2,\n  ", head);
      ft_summary_json(head, &job);
    } else if (fmt == FMT_TABLE) {
      fprintf(head, "flagtrace stats: %llu events from %zu file%s\n", (unsigned long long)job.events, n_files,
              n_files == 1 ? "" : "s");
      ft_summary_lines(head, &job, "");
    } else if (!set && n_reps > 1) {
      fputs("# files\n", head);
      files_csv(head, &job);
      fputc('\n', head);
    }
    fclose(head);
  }
  ft_outfile outs[REP_N + 1];
  FILE *fs[REP_N + 1] = {stdout};
  if (rc || !hbuf) {
    ft_cli_error("stats", "out of memory");
    rc = 1;
  } else if (n_out && ft_outputs_open(outs, (const char *const *)names, n_out, force, &exists, err, sizeof err)) {
    rc = ft_cli_output_refused("stats", exists, err);
  } else {
    for (size_t i = 0; i < n_out; i++) fs[i] = outs[i].f;
    write_all(&job, reps, n_reps, fmt, fs, set, !output, name_width, hbuf, hlen);
    /* all or nothing: a set's files are renamed into place only when every one was written */
    if (n_out && ft_outfile_commit(outs, n_out, err, sizeof err)) {
      ft_cli_error("stats", "%s", err);
      rc = 1;
    }
  }
  for (size_t i = 0; i < n_out; i++) free(names[i]);
  free(hbuf);
  for (size_t r = 0; r < n_reps; r++) ft_report_free(&reps[r]);
  ft_stat_job_free(&job);
  return rc;
}
