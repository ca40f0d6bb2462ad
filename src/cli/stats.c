/* flagtrace stats: kernel, API, memory, range, per-op, per-rank and GPU-busy summaries of traces. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "advise_cli.h"
#include "cli.h"
#include "stats_out.h"
#include "trace_dir.h"

static const char usage[] =
    "usage: flagtrace stats [options] FILE|DIR...\n"
    "\n"
    "Summarizes Chrome traces written by flagtrace or by torch.profiler (.json, or\n"
    "gzip-compressed .json.gz; \"-\" reads stdin; a directory: the .json and .json.gz\n"
    "files directly in it, by name, such as kineto's *.pt.trace.json.gz, less those\n"
    "that are not traces (named in a note: SQLite, text, JSON without \"traceEvents\"...);\n"
    "one without any trace is an error). The files of a job (every rank) are\n"
    "read in parallel, one thread per file up to the core count, each file on its\n"
    "own: External ids, correlation ids and devices are keyed per file, busy % is\n"
    "per (rank, device) over that file's span; the summaries merge rows by name.\n"
    "\n"
    "options:\n"
    "  -r, --report LIST   reports, a comma-separated subset of (default: all but trace\n"
    "                      and HTA's four)\n"
    "                        kernels     GPU time per kernel name\n"
    "                        api         runtime and driver API calls per name\n"
    "                        memops      copies and sets by time (kind, name)\n"
    "                        memsize     copies and sets by size, and bandwidth\n"
    "                        ranges      user ranges (user_annotation): CPU time\n"
    "                        gpu_ranges  their GPU projection (gpu_user_annotation)\n"
    "                        ops         ops and ranges as torch's key_averages() counts\n"
    "                                    them: self CPU, CPU total, self device (the work\n"
    "                                    whose \"External id\" is one of its calls), device\n"
    "                                    total (nested calls' work too), calls; nesting\n"
    "                                    per thread, runtime calls count as children\n"
    "                                    (with [memory] events: CPU Mem, Self CPU Mem,\n"
    "                                    CUDA Mem, Self CUDA Mem, as key_averages())\n"
    "                        ops_shapes  the same by op and Input Dims (record_shapes)\n"
    "                        ops_modules the same by op and the innermost nn.Module\n"
    "                                    around it (with_modules or with_stack)\n"
    "                        gpu         busy % per rank and device: union of its\n"
    "                                    kernels, copies and sets over the file's span\n"
    "                        ranks       per rank: kernel time, time in communication\n"
    "                                    kernels (NCCL/HCCL/RCCL names), compute, busy %\n"
    "                        trace       device events, the earliest per file by start\n"
    "                                    (--limit of them, 100 by default)\n"
    "                      Holistic Trace Analysis's, on its definitions, per rank\n"
    "                      (docs/analyses.md); GPU events: those with args.stream:\n"
    "                        temporal    idle, compute and non-compute time over the\n"
    "                                    GPU's window (first start to last end), beside\n"
    "                                    busy % over the whole span\n"
    "                        overlap     time communication kernels ran beside compute\n"
    "                                    kernels, % of communication time\n"
    "                        launch      launch call / kernel pairs by correlation id:\n"
    "                                    call and kernel time, launch delay (kernel\n"
    "                                    start less call end, 0 at least), short\n"
    "                                    kernels (shorter than a call of 50 us at\n"
    "                                    most), calls over 50 us, delays over 100 us\n"
    "                        queue       launches outstanding per stream, sampled at\n"
    "                                    each launch and kernel start: mean, stddev,\n"
    "                                    min, median, max; time at 1024 or more\n"
    "                      device memory (asked for only; docs/memory.md):\n"
    "                        memory      per rank and device, from [memory] events\n"
    "                                    (torch's profile_memory=True, record's):\n"
    "                                    peak allocated and peak reserved (when,\n"
    "                                    step, op, call), allocations and frees\n"
    "                                    (count, bytes, min/median/max size), bytes\n"
    "                                    live at the end and the allocations still\n"
    "                                    live, largest first (--limit per device),\n"
    "                                    with the op and call that made each; a\n"
    "                                    skipped row counts hostile values\n"
    "                                    (copies and sets by time are memops)\n"
    "                      advise's (asked for only; docs/advise.md):\n"
    "                        advice      findings by what each costs per step, as\n"
    "                                    flagtrace advise ranks them (rank, rule,\n"
    "                                    cost, share, count, where, what,\n"
    "                                    suggestion); each trace is read again for\n"
    "                                    it (no stdin, no --merge or --partial)\n"
    "                      time reports: Time(%), total, calls, avg, median, min, max,\n"
    "                      stddev (sample); times in us, sizes in bytes\n"
    "                      nsys's names work too: cuda_gpu_kern_sum (kernels),\n"
    "                      cuda_api_sum (api), cuda_gpu_mem_time_sum (memops),\n"
    "                      cuda_gpu_mem_size_sum (memsize), nvtx_sum (ranges),\n"
    "                      nvtx_gpu_proj_sum (gpu_ranges), cuda_gpu_trace (trace:\n"
    "                      with stream, grid, block and registers per thread)\n"
    "  -f, --format FMT    table (default), csv, tsv or json; tsv does not quote:\n"
    "                      tabs, newlines and other control characters in names\n"
    "                      are shown as escapes (\\t, \\n), as tables show them\n"
    "      --timeunit U    ns, us (default), ms or s: the reports' time columns in\n"
    "                      that unit, named by it (Total(ms), csv/json total_ms),\n"
    "                      exact to the ns (0, 3, 6 or 9 decimals); the files\n"
    "                      header keeps span_us\n"
    "  -o, --output PATH   write there instead of stdout (\"-\": stdout; ./- is a\n"
    "                      file named -), by record's rules: under a\n"
    "                      temporary name renamed when complete, keeping the mode of\n"
    "                      a file it replaces (new: 0666 less the umask; a read-only\n"
    "                      one refused); a symlink followed (a dangling one refused);\n"
    "                      a device or FIFO written through (one nobody reads\n"
    "                      refused). With csv or tsv and several reports PATH is a\n"
    "                      prefix: PATH_kernels.csv, PATH_api.csv... and\n"
    "                      PATH_files.csv (.tsv),\n"
    "                      renamed together or none (a device or FIFO PATH, such as\n"
    "                      /dev/null or /dev/stdout, takes them all, as stdout does)\n"
    "      --force-overwrite  replace existing files (default: refuse)\n"
    "  -s, --sort KEY      order rows by total (default), count (or calls), avg,\n"
    "                      median, min, max, stddev (largest first) or name\n"
    "  -n, --limit N       at most N rows per report (per rank with --by-rank); 0:\n"
    "                      all rows, the trace report's too (every device event,\n"
    "                      80 B of memory each)\n"
    "      --width N       fit table lines to N characters (default: the terminal's\n"
    "                      width when stdout is one, else $COLUMNS on a terminal\n"
    "                      that gives none; piped or written to a file: no limit,\n"
    "                      whole names and every column). Columns are as wide as\n"
    "                      their title and widest cell; while the name column would\n"
    "                      get less than 40 characters, the spare columns are left\n"
    "                      out, in this order: StdDev, Min, Max, Med, Avg; the\n"
    "                      trace's Reg/Trd, Blk X/Y/Z, Grd X/Y/Z, Strm, Bytes;\n"
    "                      Devices, Events, Span, Compute; ops' CPU Mem, Self CPU\n"
    "                      Mem, CUDA Mem, CPU total; while it would get less than\n"
    "                      16, the needed ones: Self CUDA Mem, Device total, Calls\n"
    "                      (a line under the table names them; a column goes with\n"
    "                      its X/Y/Z or A/B family; docs/stats.md, Narrow tables).\n"
    "                      Names wider than what is left (never less than 16;\n"
    "                      Input Dims: 24, down to 20, cut by whole entries:\n"
    "                      [[4096, 1024],...]) are cut in the middle, \"...\"\n"
    "                      keeping the start and the end; where two would read\n"
    "                      the same, elsewhere (another split, or a window where\n"
    "                      they differ)\n"
    "  -w, --name-width N  cut names in tables to N characters (escapes counted as\n"
    "                      shown), whatever the width; csv, tsv and json keep whole\n"
    "                      names\n"
    "  -q, --quiet         no notes or warnings on stderr (errors are still shown)\n"
    "      --by-rank       per-rank rows (a rank column) instead of the job's total;\n"
    "                      a File column too where two files claim one rank\n"
    "      --partial       write the job's partial summary (JSON, see below) instead\n"
    "                      of reports, for --merge to combine later\n"
    "      --merge         the FILEs are partial summaries: print what one run over\n"
    "                      all of their traces prints; with --partial, write them\n"
    "                      merged into one partial (a tree of merges)\n"
    "      --engine E      stream (default): each file summarized as it is parsed;\n"
    "                      model: each file read into the event model (typed\n"
    "                      columns, up to 61 B a slice) and replayed into the\n"
    "                      summary in file order: the same numbers (a check of\n"
    "                      the model; docs/stats.md)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Options follow getopt_long: anywhere among the files, -oFILE, --opt=value,\n"
    "unambiguous abbreviations (--rep); after \"--\" everything is a file.\n"
    "\n"
    "The header counts trace entries: every entry of the files' traceEvents (slices,\n"
    "flow halves, metadata), more than record's \"wrote PATH (N events ...)\" line,\n"
    "which counts calls, ranges and device work. It names every file whose trace says\n"
    "it is incomplete (its flagtrace block: device activity off, with the trace's\n"
    "reason; dropped records; events outside the capture window), in every format,\n"
    "and on stderr. Complete events whose ts or dur is missing, not a number,\n"
    "negative (dur) or beyond +-4e15 us, copies and sets whose bytes is not a whole\n"
    "number in [0, 2^63), events whose External id is not a whole number, and\n"
    "events of a category flagtrace does not read are skipped and counted in one\n"
    "line on stderr (\"N events skipped: ...\"), as are (launch, queue) the calls and\n"
    "GPU events beyond one pair per correlation id. Names\n"
    "longer than 64 KiB are cut to it, a file's devices past the first 1024 are left\n"
    "out of busy % (each in one note), and files that claim the same rank are named\n"
    "in one warning. Older kineto categories (Runtime, Memcpy, Memset, Kernel,\n"
    "Operator, \"external id\"), MTIA's, XPU's and privateuse1's are read as their\n"
    "current names. A file given twice (by any name), a second \"traceEvents\" key, a\n"
    "gzip header with reserved flags and data after the end of a gzip stream are\n"
    "errors; the array form ([...]) may lack its \"]\". The json output carries\n"
    "\"schema\": 2.\n"
    "\n"
    "memory: grows with the names (each at most 64 KiB), rows and devices (1024 per\n"
    "file) reported, plus what exact answers need per event of the files being\n"
    "read: 16 B per device event at most for busy % (less where device work overlaps\n"
    "or touches), and for ops reports 21-43 B per distinct \"External id\" and 64 B\n"
    "per op, range and runtime call without one (their nesting; ops_modules: and\n"
    "per nn.Module event; 24 B per [memory] event for their memory columns); a\n"
    "value flagtrace does not read costs nothing. HTA's\n"
    "reports add, only when asked for: 12 B per GPU event and 12 B\n"
    "more per compute or communication kernel (16 B past 4.3 s; less where they\n"
    "touch or overlap), 32 B per GPU event with a correlation id and 24 B per\n"
    "launch call (by name) with one; at a file's end 8 B per queue step. Medians\n"
    "are exact up to 256 values per row, then from a histogram within 0.4 %; the\n"
    "other columns are exact.\n"
    "\n"
    "partial summaries: --partial writes {\"flagtrace_partial\": 2, ...}: each file's\n"
    "record (its header line, busy per device, HTA's analyses: read as for HTA's\n"
    "reports, at their memory cost; its source: size, digest of its bytes, device,\n"
    "inode, mtime) and every row's exact count, sum, min, max and\n"
    "sum of squares with its median sketch (the values up to 256, then the\n"
    "histogram); with --by-rank each file's own rows, with -r trace its earliest\n"
    "device events (as many as --limit says). Merging reads them (a trace, a partial\n"
    "of another version, or one whose numbers do not add up is refused in one line,\n"
    "as are two partials of one trace: the same file, or a copy by its digest)\n"
    "in argument order, each one's files in its order, and prints byte for byte what\n"
    "one run over the traces in that order prints (a file without a rank takes its\n"
    "position in it): medians too, as a row's is exact up to 256 values and from its\n"
    "histogram (within 0.4 %) past that, merged or not. Merging by rank needs\n"
    "partials written with --by-rank; the trace report, partials that kept as many\n"
    "events. Notes go to stderr at the merge, not with --partial.\n"
    "\n"
    "Tables and messages show control characters in names as escapes (\\n, \\x1b):\n"
    "a name cannot drive the terminal or break a line; csv and json keep names whole.\n"
    "\n"
    "exit status: 0; 2 for a usage error, a refused output (an existing file without\n"
    "--force-overwrite, a dangling symlink, a directory: checked before any input is\n"
    "read; a FIFO nobody reads, when opened), a directory with no trace in it, or a\n"
    "file that cannot be read or parsed (reported in one line with the file, the\n"
    "problem and the byte offset of the offending byte, counted from 0 in the\n"
    "uncompressed text); 1 when the output cannot be written (a full disk, a closed\n"
    "stdout) or memory runs out.\n";

enum fmt { FMT_TABLE, FMT_CSV, FMT_TSV, FMT_JSON };
enum { OPT_PARTIAL = 0x100, OPT_MERGE, OPT_ENGINE }; /* long options without a letter */
#define REP_DEFAULT ((1u << REP_N) - 1 - (1u << REP_TRACE) - (1u << REP_OPS_MODULES) - FT_REP_HTA - (1u << REP_MEMORY))
/* advise's findings: a report of the CLI's (advise_out.c), built from the event model, not the job */
#define REP_ADVICE REP_N
#define REP_ALL (REP_N + 1)
static const char *rep_name(int r) { return r == REP_ADVICE ? "advice" : ft_report_names[r]; }

/* What an unknown name was renamed to: issue 51 made "memory" the device memory
 * report (it was "mem") and the copies and sets "memops". */
static const char *renamed(const char *bad) {
  return !strcmp(bad, "mem") ? " (device memory is -r memory now; copies and sets by time are -r memops)" : "";
}

/* A bad name is copied to bad (empty when the list itself is empty or too long), the names near it to near. */
static int parse_report(const char *list, unsigned *out, char *bad, size_t bad_len, char *near, size_t near_len) {
  char buf[256];
  bad[0] = 0;
  if (!*list || strlen(list) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", list);
  *out = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    unsigned bit = 0;
    for (unsigned i = 0; i < REP_N; i++)
      if (!strcmp(tok, ft_report_names[i])) bit = 1u << i;
    /* nsys's report names, for its users' habits */
    static const struct {
      const char *alias;
      int r;
    } nsys[] = {
        {"cuda_gpu_kern_sum", REP_KERNELS},     {"cuda_api_sum", REP_API}, {"cuda_gpu_mem_time_sum", REP_MEMOPS},
        {"cuda_gpu_mem_size_sum", REP_MEMSIZE}, {"nvtx_sum", REP_RANGES},  {"nvtx_gpu_proj_sum", REP_GPU_RANGES},
        {"cuda_gpu_trace", REP_TRACE}};
    for (size_t i = 0; i < sizeof nsys / sizeof *nsys; i++)
      if (!strcmp(tok, nsys[i].alias)) bit = 1u << nsys[i].r;
    if (!strcmp(tok, "advice")) bit = 1u << REP_ADVICE;
    if (!strcmp(tok, "all")) bit = REP_DEFAULT;
    if (!bit) {
      const char *names[REP_N + sizeof nsys / sizeof *nsys + 2] = {"advice", "all"};
      size_t k = 2;
      for (unsigned i = 0; i < REP_N; i++) names[k++] = ft_report_names[i];
      for (size_t i = 0; i < sizeof nsys / sizeof *nsys; i++) names[k++] = nsys[i].alias;
      snprintf(bad, bad_len, "%s", tok);
      char names_near[96];
      if (ft_cli_nearest(tok, names, k, names_near, sizeof names_near))
        snprintf(near, near_len, " (did you mean %s?)", names_near);
      return -1;
    }
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

static void files_csv(FILE *f, const ft_stat_job *job, char sep) {
  void (*field)(FILE *, const char *) = sep == ',' ? ft_csv_field : ft_put_visible; /* tsv: escaped */
  fprintf(f,
          "file%1$crank%1$cevents%1$cspan_us%1$ctracer%1$cdevice_activity%1$cdevice_status%1$cdropped_records%1$c"
          "window_discarded\n",
          sep);
  for (size_t i = 0; i < job->n_files; i++) {
    const ft_stat_file *x = &job->files[i];
    field(f, x->path);
    /* cppcheck-suppress invalidPrintfArgType_uint ; positional arguments (%1$c), which cppcheck does not follow */
    fprintf(f, "%1$c%2$lld%1$c%3$llu%1$c%4$.3f%1$c", sep, (long long)x->rank, (unsigned long long)x->events,
            (double)x->span_ns / 1000.0);
    field(f, x->meta.tracer);
    fprintf(f, "%c%s%c", sep, x->meta.device_activity < 0 ? "" : x->meta.device_activity ? "true" : "false", sep);
    field(f, x->meta.device_status);
    /* cppcheck-suppress invalidPrintfArgType_uint ; positional arguments (%1$c), which cppcheck does not follow */
    fprintf(f, "%1$c%2$llu%1$c%3$llu\n", sep, (unsigned long long)x->meta.dropped_records,
            (unsigned long long)x->meta.window_discarded);
  }
}

/* Writes the chosen reports into fs: one stream (stdout, one -o file, or a device
 * or FIFO a csv PREFIX names), or with set one file per report and the files
 * table. Write errors stay in the streams, for the caller's flush to find. */
static int write_all(const ft_stat_job *job, ft_report *reps, size_t n_reps, enum fmt fmt, FILE *const *fs, bool set,
                     const ft_table_opts *to, const char *head, size_t head_len, const ft_cli_advice *adv,
                     size_t limit) {
  FILE *f = fs[0];
  if (!set) fwrite(head, 1, head_len, f);
  for (size_t r = 0; r < n_reps; r++) {
    const ft_report *rep = &reps[r];
    if (set) f = fs[r];
    if (fmt == FMT_TABLE) {
      fputc('\n', f);
      /* advice: its rows, then each finding's what and fix wrapped under them, as advise writes it */
      if (rep->key == ft_cli_advice_key ? ft_cli_advice_findings(f, adv, to->width, limit, to->unit)
                                        : ft_report_table(f, rep, to))
        return -1;
    } else if (fmt == FMT_JSON) {
      fprintf(f, ",\n  \"%s\": ", rep->key);
      ft_report_json_unit(f, rep, to->unit);
    } else {
      if (n_reps > 1 && !set) fprintf(f, "%s# %s\n", r ? "\n" : "", rep->key);
      ft_report_delim(f, rep, fmt == FMT_TSV ? '\t' : ',', to->unit);
    }
  }
  if (set) files_csv(fs[n_reps], job, fmt == FMT_TSV ? '\t' : ',');
  if (fmt == FMT_JSON) fputs("\n}\n", f);
  return 0;
}

/* The files -o names, in the order write_all fills them (names zeroed: each one
 * set or NULL); -1 without memory. */
static int output_names(char **names, const char *output, unsigned report, bool set, const char *ext) {
  if (!set) return (names[0] = strdup(output)) ? 0 : -1;
  size_t n = 0;
  for (int r = 0; r < REP_ALL; r++) {
    if (!(report & (1u << r))) continue;
    if (asprintf(&names[n], "%s_%s.%s", output, rep_name(r), ext) < 0) {
      names[n] = NULL;
      return -1;
    }
    n++;
  }
  if (asprintf(&names[n], "%s_files.%s", output, ext) < 0) {
    names[n] = NULL;
    return -1;
  }
  return 0;
}

/* A merged job answers the reports asked: HTA's need the files' analyses, the
 * trace report as many device events per file as it shows. */
static ft_status merged_ok(const ft_stat_job *job, unsigned report, uint64_t trace_rows, uint64_t kept, char *err,
                           size_t errlen) {
  for (size_t i = 0; (report & 1u << REP_MEMORY) && i < job->n_files; i++)
    if (!job->files[i].mem_kept) {
      snprintf(err, errlen, "%s: its partial has no memory summary (written by another flagtrace?)",
               job->files[i].path);
      return FT_EINVAL;
    }
  for (size_t i = 0; (report & FT_REP_HTA) && i < job->n_files; i++)
    if (!job->files[i].hta.kept) {
      snprintf(err, errlen, "%s: its partial has no HTA analyses (written by another flagtrace?)", job->files[i].path);
      return FT_EINVAL;
    }
  if ((report & (1u << REP_TRACE)) && trace_rows > kept) {
    if (!kept) snprintf(err, errlen, "the partials keep no device events: write them with --partial -r trace");
    else
      snprintf(err, errlen,
               "the partials keep the earliest %llu device events per file, fewer than the trace "
               "report shows: write them with -r trace --limit of as many",
               (unsigned long long)kept);
    return FT_EINVAL;
  }
  return FT_OK;
}

/* --partial: the job's summary to -o PATH (by the output rules) or stdout. */
static int write_partial(const ft_stat_job *job, const char *output, bool force, uint64_t trace_limit, char *err,
                         size_t errlen) {
  ft_outfile out;
  bool exists = false;
  FILE *f = stdout;
  if (output && ft_outputs_open(&out, &output, 1, force, &exists, err, errlen))
    return ft_cli_output_refused("stats", exists, err);
  if (output) f = out.f;
  if (ft_stat_partial_write(f, job, trace_limit)) {
    if (output) ft_outfile_discard(&out);
    ft_cli_error("stats", "out of memory");
    return 1;
  }
  if (output ? ft_outfile_commit(&out, 1, err, errlen) : fflush(stdout) || ferror(stdout)) {
    if (!output) snprintf(err, errlen, "cannot write to stdout: %s", strerror(errno));
    ft_cli_error("stats", "%s", err);
    return 1;
  }
  return 0;
}

int ft_cli_stats(int argc, char **argv) {
  unsigned report = REP_DEFAULT;
  enum fmt fmt = FMT_TABLE;
  const char *output = NULL;
  ft_report_opts ro = {0};
  long name_width = -1, width = -1;
  int unit = FT_UNIT_US;
  bool limit_given = false, force = false, quiet = false;
  bool partial = false, merge = false; /* --partial, --merge (stats_partial.c) */
  bool model = false;                  /* --engine=model: each file through the event model (model.h) */
  static const struct option longs[] = {{"report", required_argument, NULL, 'r'},
                                        {"format", required_argument, NULL, 'f'},
                                        {"output", required_argument, NULL, 'o'},
                                        {"sort", required_argument, NULL, 's'},
                                        {"limit", required_argument, NULL, 'n'},
                                        {"name-width", required_argument, NULL, 'w'},
                                        {"by-rank", no_argument, NULL, 'R'},
                                        {"help", no_argument, NULL, 'h'},
                                        {"force-overwrite", no_argument, NULL, 'F'},
                                        {"width", required_argument, NULL, 'W'},
                                        {"timeunit", required_argument, NULL, 'T'},
                                        {"quiet", no_argument, NULL, 'q'},
                                        {"partial", no_argument, NULL, OPT_PARTIAL},
                                        {"merge", no_argument, NULL, OPT_MERGE},
                                        {"engine", required_argument, NULL, OPT_ENGINE},
                                        {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  for (;;) {
    int prev = optind, c = getopt_long(argc, argv, ":r:f:o:s:n:w:hq", longs, NULL);
    if (c == -1) break;
    const char *bad = argv[prev] ? argv[prev] : "";
    size_t v;
    switch (c) {
    case 'h': fputs(usage, stdout); return 0;
    case 'r': {
      char bad_name[256], near[128] = "";
      if (parse_report(optarg, &report, bad_name, sizeof bad_name, near, sizeof near))
        return ft_cli_usage_error(
            "stats",
            "--report: %s%s%s%s%s; it takes a comma-separated subset of kernels,api,memops,memsize,"
            "ranges,gpu_ranges,ops,ops_shapes,ops_modules,gpu,ranks,trace,temporal,overlap,"
            "launch,queue,memory,advice or nsys's names (--help)",
            bad_name[0] ? "no report named '" : "not a list of reports: '", bad_name[0] ? bad_name : optarg, "'",
            renamed(bad_name), *renamed(bad_name) ? "" : near);
      break;
    }
    case 'f':
      if (!strcmp(optarg, "table")) fmt = FMT_TABLE;
      else if (!strcmp(optarg, "csv")) fmt = FMT_CSV;
      else if (!strcmp(optarg, "tsv")) fmt = FMT_TSV;
      else if (!strcmp(optarg, "json")) fmt = FMT_JSON;
      else return ft_cli_usage_error("stats", "--format takes table, csv, tsv or json, not '%s'", optarg);
      break;
    case 'o':
      if (ft_cli_value_forgotten("stats", argv, optind, optarg)) return FT_CLI_USAGE;
      output = strcmp(optarg, "-") ? optarg : NULL; /* "-": stdout, as for the input */
      break;
    case 'T':
      if ((unit = ft_unit_parse(optarg)) < 0)
        return ft_cli_usage_error("stats", "--timeunit takes ns, us, ms or s, not '%s'", optarg);
      break;
    case 'W':
      if (ft_cli_width("stats", optarg, &width)) return FT_CLI_USAGE;
      break;
    case 'q': quiet = true; break;
    case OPT_PARTIAL: partial = true; break;
    case OPT_MERGE: merge = true; break;
    case OPT_ENGINE:
      if (!strcmp(optarg, "stream")) model = false;
      else if (!strcmp(optarg, "model")) model = true;
      else return ft_cli_usage_error("stats", "--engine takes stream or model, not '%s'", optarg);
      break;
    case 's': {
      int k = -1;
      for (int i = 0; i < SORT_N; i++)
        if (!strcmp(optarg, ft_sort_names[i])) k = i;
      if (!strcmp(optarg, "calls")) k = SORT_COUNT; /* the tables' column is "Calls" */
      if (k < 0)
        return ft_cli_usage_error("stats",
                                  "--sort takes total, count (or calls), avg, median, min, max, stddev or "
                                  "name, not '%s'",
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
  if (optind >= argc) return ft_cli_usage_error("stats", merge ? "no partial summary given" : "no trace file given");
  if (partial && fmt != FMT_TABLE) return ft_cli_usage_error("stats", "--partial writes its own JSON: no --format");
  if (merge && model)
    return ft_cli_usage_error("stats", "--engine=model reads traces: --merge reads partial summaries");
  char err[640];
  ft_trace_args files; /* a directory: the traces in it */
  ft_status s = ft_trace_args_expand(&files, (const char *const *)argv + optind, (size_t)(argc - optind), !merge, err,
                                     sizeof err);
  if (s) {
    ft_cli_error("stats", "%s", err);
    ft_trace_args_free(&files);
    return s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  }
  if (!quiet) ft_trace_args_notes(stderr, &files, "flagtrace stats: ");
  size_t n_files = files.n, n_stdin = 0;
  for (size_t i = 0; i < n_files; i++) n_stdin += !strcmp(files.paths[i], "-");
  if (n_stdin > 1) {
    ft_trace_args_free(&files);
    return ft_cli_usage_error("stats", "\"-\" (stdin) can be read once");
  }
  ro.reports = report;
  size_t n_reps = 0;
  for (int r = 0; r < REP_ALL; r++) n_reps += (report >> r) & 1;
  bool advice = report & (1u << REP_ADVICE);
  if (advice && (merge || partial)) {
    ft_trace_args_free(&files);
    return ft_cli_usage_error("stats", "-r advice reads the traces themselves: not with --%s",
                              merge ? "merge" : "partial");
  }
  /* the trace report: the earliest N device events of each file, kept while reading
   * (100 unless --limit says; 0: all of them) */
  size_t trace_rows = limit_given ? ro.limit : 100;
  size_t trace_limit = !(report & (1u << REP_TRACE)) ? 0 : trace_rows ? trace_rows : SIZE_MAX;
  /* -o is checked before the input is read, as record checks before the run: a
   * refused name costs no reading. A csv PREFIX that is a device or FIFO takes
   * every table as one stream, as stdout does. */
  bool set = (fmt == FMT_CSV || fmt == FMT_TSV) && output && n_reps > 1 && !ft__ofile_is_stream(output);
  size_t n_out = !output ? 0 : set ? n_reps + 1 : 1;
  char *names[REP_ALL + 1] = {0};
  bool exists = false;
  if (output && output_names(names, output, report, set, fmt == FMT_TSV ? "tsv" : "csv")) {
    for (size_t i = 0; i < n_out; i++) free(names[i]);
    ft_trace_args_free(&files);
    ft_cli_error("stats", "out of memory");
    return 1;
  }
  if (ft_outputs_check((const char *const *)names, n_out, force, &exists, err, sizeof err)) {
    for (size_t i = 0; i < n_out; i++) free(names[i]);
    ft_trace_args_free(&files);
    return ft_cli_output_refused("stats", exists, err);
  }
  ft_stat_job job;
  /* advice: each file's event model from the stats read's own parse, advised as it is read */
  ft_cli_advice adv;
  ft_advise_opts ao;
  ft_advise_opts_default(&ao);
  memset(&adv, 0, sizeof adv);
  if (advice && ft_cli_advice_begin(&adv, files.paths, n_files, NULL, &ao)) {
    ft_cli_advice_free(&adv);
    for (size_t i = 0; i < n_out; i++) free(names[i]);
    ft_trace_args_free(&files);
    ft_cli_error("stats", "out of memory");
    return 1;
  }
  uint64_t part_limit = trace_limit == SIZE_MAX ? UINT64_MAX : trace_limit; /* device events kept per file */
  /* a partial keeps what every report needs (HTA's analyses too); a merge keeps
   * the files' own rows where a by-rank output (or partial) can use them */
  if (merge) s = ft_stat_job_merge(&job, files.paths, n_files, ro.by_rank, partial, &part_limit, err, sizeof err);
  else {
    ft_stat_read_opts o = {
        .trace_limit = trace_limit,
        .by_rank = ro.by_rank,
        .hta = partial || (report & FT_REP_HTA) != 0,
        .ops = partial || (report & (1u << REP_OPS | 1u << REP_OPS_SHAPES | 1u << REP_OPS_MODULES)) != 0,
        .modules = partial || (report & 1u << REP_OPS_MODULES) != 0,
        .memory = partial || (report & 1u << REP_MEMORY) != 0,
        .source = partial, /* a partial names each trace's source: a merge refuses one given twice */
        .model = model,
        .on_model = advice ? ft_cli_advice_on_model : NULL,
        .on_model_ctx = &adv};
    s = ft_stat_job_read(&job, files.paths, n_files, &o, err, sizeof err);
  }
  if (!s && merge && !partial)
    s = merged_ok(&job, report, trace_rows ? trace_rows : UINT64_MAX, part_limit, err, sizeof err);
  if (!s && advice) s = ft_cli_advice_end(&adv, &ao, err, sizeof err);
  if (s) {
    ft_cli_error("stats", "%s", err);
    ft_cli_advice_free(&adv);
    ft_stat_job_free(&job);
    ft_trace_args_free(&files);
    for (size_t i = 0; i < n_out; i++) free(names[i]);
    return s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  }
  if (partial) { /* no reports: the summary, whole */
    int prc = write_partial(&job, output, force, part_limit, err, sizeof err);
    for (size_t i = 0; i < n_out; i++) free(names[i]);
    ft_stat_job_free(&job);
    ft_trace_args_free(&files);
    return prc;
  }
  if (!quiet) { /* -q: errors only */
    ft_stat_job_notes(stderr, &job, "flagtrace stats: ");
    uint64_t mem_events = 0; /* device memory the reports asked do not show: where to look */
    for (size_t f = 0; !(report & 1u << REP_MEMORY) && f < job.n_files; f++) mem_events += job.files[f].mem_seen;
    if (mem_events)
      fprintf(stderr, "flagtrace stats: %llu [memory] events (device memory): -r memory summarizes them\n",
              (unsigned long long)mem_events);
    ft_summary_lines(stderr, &job, "flagtrace stats: ");
    for (size_t f = 0; model && f < job.n_files; f++) { /* what the model held (docs/stats.md, --engine) */
      const ft_stat_file *fl = &job.files[f];
      fprintf(stderr,
              "flagtrace stats: %s: event model of %llu slices held %llu bytes (%.1f B a slice; %llu of them "
              "not per slice: names, launch configurations, tracks, memory rows)\n",
              fl->path, (unsigned long long)fl->model_slices, (unsigned long long)fl->model_bytes,
              fl->model_slices ? (double)fl->model_bytes / (double)fl->model_slices : 0.0,
              (unsigned long long)fl->model_bytes_distinct);
    }
  }
  ft_report reps[REP_ALL];
  int rc = 0;
  n_reps = 0;
  for (int r = 0; r < REP_ALL && !rc; r++) {
    if (!(report & (1u << r))) continue;
    if (r == REP_ADVICE) {
      if (ft_cli_advice_report(&reps[n_reps++], &adv, ro.limit, true)) rc = 1;
      continue;
    }
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
      /* every traceEvents entry (slices, flow halves, metadata): more than record's line counts */
      fprintf(head, "flagtrace stats: %llu trace entries from %zu file%s\n", (unsigned long long)job.events,
              job.n_files, job.n_files == 1 ? "" : "s");
      ft_summary_lines(head, &job, "");
    } else if (!set && n_reps > 1) {
      fputs("# files\n", head);
      files_csv(head, &job, fmt == FMT_TSV ? '\t' : ',');
      fputc('\n', head);
    }
    fclose(head);
  }
  ft_outfile outs[REP_ALL + 1];
  FILE *fs[REP_ALL + 1] = {stdout};
  if (rc || !hbuf) {
    ft_cli_error("stats", "out of memory");
    rc = 1;
  } else if (n_out && ft_outputs_open(outs, (const char *const *)names, n_out, force, &exists, err, sizeof err)) {
    rc = ft_cli_output_refused("stats", exists, err);
  } else {
    for (size_t i = 0; i < n_out; i++) fs[i] = outs[i].f;
    /* tables fit --width, else the terminal stdout is; a file or pipe gets whole lines */
    ft_table_opts to = {width >= 0 ? (size_t)width
                        : output   ? 0
                                   : ft_table_width(),
                        name_width >= 0 ? (size_t)name_width : 0, unit};
    if (write_all(&job, reps, n_reps, fmt, fs, set, &to, hbuf, hlen, &adv, ro.limit)) {
      ft_cli_error("stats", "out of memory");
      rc = 1;
      for (size_t i = 0; i < n_out; i++) ft_outfile_discard(&outs[i]);
    } else if (n_out && ft_outfile_commit(outs, n_out, err, sizeof err)) {
      /* all or nothing: a set's files are renamed into place only when every one was written */
      ft_cli_error("stats", "%s", err);
      rc = 1;
    }
  }
  for (size_t i = 0; i < n_out; i++) free(names[i]);
  free(hbuf);
  for (size_t r = 0; r < n_reps; r++) ft_report_free(&reps[r]);
  ft_cli_advice_free(&adv);
  ft_stat_job_free(&job);
  ft_trace_args_free(&files);
  return rc;
}
