/* flagtrace stats: kernel, API, memory, per-op and GPU-busy summaries of traces. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stats.h"

static const char usage[] =
    "usage: flagtrace stats [options] FILE...\n"
    "\n"
    "Summarizes Chrome traces written by flagtrace or by torch.profiler (.json, or\n"
    "gzip-compressed .json.gz). Several files are summarized together (every rank of\n"
    "a job, say). Files are streamed, so memory stays small on multi-GB traces.\n"
    "\n"
    "options:\n"
    "  -r, --report LIST   sections, a comma-separated subset of (default: all)\n"
    "                        kernels  GPU time per kernel name: calls, total, avg, min,\n"
    "                                 max, % of all kernel time\n"
    "                        api      runtime and driver API calls per name\n"
    "                        memory   copies and sets: count, bytes, time, bandwidth\n"
    "                        ops      self device time per op/range name: the device\n"
    "                                 work whose \"External id\" is one of its calls\n"
    "                        gpu      busy % per device: union of its kernels, copies\n"
    "                                 and sets over the trace's span\n"
    "  -f, --format FMT    table (default), csv or json\n"
    "  -h, --help          show this help\n"
    "\n"
    "Options may come before or after the files; after \"--\" everything is a file.\n"
    "\n"
    "Complete events whose ts is missing, or whose ts or dur is not a number (a\n"
    "string, say) or lies beyond +-4e15 us, are skipped and counted in one line on\n"
    "stderr (\"N events skipped: ...\"). Older kineto categories (Runtime, Memcpy,\n"
    "Memset, Operator, \"external id\") and MTIA's (mtia_runtime, mtia_ccp_events)\n"
    "are read as their current names. A second \"traceEvents\" key, and data after\n"
    "the end of a gzip stream, are errors; the array form ([...]) may lack its \"]\".\n"
    "\n"
    "memory: grows with the names, devices and rows reported, plus what exact answers\n"
    "need per event: 16 B per device event at most for busy % (less where device\n"
    "work overlaps or touches), and 16-32 B per distinct \"External id\" of an op in\n"
    "the file being read, for ops.\n"
    "\n"
    "exit status: 0; 2 for a usage error, or a file that cannot be read or parsed\n"
    "(reported in one line with the file, the problem and the byte offset of the\n"
    "offending byte, counted from 0 in the uncompressed text); 1 when the output\n"
    "cannot be written (a full disk, a closed stdout) or memory runs out.\n";

enum { REP_KERNELS = 1, REP_API = 2, REP_MEMORY = 4, REP_OPS = 8, REP_GPU = 16, REP_ALL = 31 };
enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON };

static int parse_report(const char *list, unsigned *out) {
  static const char *const names[] = {"kernels", "api", "memory", "ops", "gpu"};
  char buf[128];
  if (!*list || strlen(list) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", list);
  *out = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    unsigned bit = 0;
    for (unsigned i = 0; i < 5; i++)
      if (!strcmp(tok, names[i])) bit = 1u << i;
    if (!bit) return -1;
    *out |= bit;
  }
  return *out ? 0 : -1;
}

/* ---- output ---- */

typedef struct out {
  enum fmt fmt;
  bool first_section;
  const ft_stats *st;
} out;

static const char *name_of(const out *o, const ft_stat_row *r) { return ft__intern_str(&o->st->names, r->name_id); }

static void csv_field(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"') putchar('"');
    putchar(*s);
  }
  putchar('"');
}

static void json_str(const char *s) {
  ft__out *o;
  if (ft__out_open_mem(&o, false)) return;
  ft__out_json_string(o, s, strlen(s));
  size_t n;
  const char *m = ft__out_mem(o, &n);
  fwrite(m, 1, n, stdout);
  ft__out_abort(o);
}

static double us(uint64_t ns) { return (double)ns / 1000.0; }

static int by_total(const void *a, const void *b) {
  const ft_stat_row *x = *(const ft_stat_row *const *)a, *y = *(const ft_stat_row *const *)b;
  return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

/* The section's rows, sorted by total time (largest first). Caller frees. */
static ft_stat_row **sorted(const ft_stats *st, int section, size_t *n) {
  const ft__vec *v = &st->rows[section];
  *n = v->len;
  ft_stat_row **rows = malloc((v->len + 1) * sizeof *rows);
  if (!rows) {
    *n = 0;
    return NULL;
  }
  for (size_t i = 0; i < v->len; i++) rows[i] = ft__vec_at(v, i);
  qsort(rows, v->len, sizeof *rows, by_total);
  return rows;
}

static void section_begin(out *o, const char *key, const char *title, const char *header) {
  if (o->fmt == FMT_JSON) {
    printf("%s\n  \"%s\": [", o->first_section ? "" : ",", key);
  } else if (o->fmt == FMT_CSV) {
    printf("%s# %s\n%s\n", o->first_section ? "" : "\n", key, header);
  } else {
    printf("%s== %s ==\n%s\n", o->first_section ? "" : "\n", title, header);
  }
  o->first_section = false;
}

static void section_end(out *o, size_t rows) {
  if (o->fmt == FMT_JSON) printf("%s]", rows ? "\n  " : "");
  else if (o->fmt == FMT_TABLE && !rows) printf("  (none)\n");
}

static const char *cat_name(uint8_t cat) {
  switch (cat) {
  case FT_STAT_CAT_RUNTIME: return "runtime";
  case FT_STAT_CAT_DRIVER: return "driver";
  case FT_STAT_CAT_MEMCPY: return "memcpy";
  case FT_STAT_CAT_MEMSET: return "memset";
  default: return "other";
  }
}

static void print_times(out *o, int section, const char *key, const char *title, bool with_pct, bool with_kind) {
  size_t n;
  ft_stat_row **rows = sorted(o->st, section, &n);
  uint64_t all = 0;
  for (size_t i = 0; i < n; i++) all += rows[i]->total_ns;
  section_begin(o, key, title,
                o->fmt == FMT_CSV ? (with_pct ? "time_pct,total_us,calls,avg_us,min_us,max_us,name"
                                              : "kind,total_us,calls,avg_us,min_us,max_us,name")
                : with_pct ? " Time(%)     Total(us)     Calls      Avg(us)      Min(us)      Max(us)  Name"
                           : " Kind        Total(us)     Calls      Avg(us)      Min(us)      Max(us)  Name");
  for (size_t i = 0; i < n; i++) {
    const ft_stat_row *r = rows[i];
    double pct = all ? 100.0 * (double)r->total_ns / (double)all : 0;
    double avg = r->calls ? us(r->total_ns) / (double)r->calls : 0;
    double mn = r->calls ? us(r->min_ns) : 0;
    if (o->fmt == FMT_JSON) {
      printf("%s\n    {\"name\": ", i ? "," : "");
      json_str(name_of(o, r));
      if (with_kind) printf(", \"kind\": \"%s\"", cat_name(r->cat));
      printf(", \"calls\": %llu, \"total_us\": %.3f, \"avg_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f",
             (unsigned long long)r->calls, us(r->total_ns), avg, mn, us(r->max_ns));
      if (with_pct) printf(", \"percent\": %.2f", pct);
      printf("}");
    } else if (o->fmt == FMT_CSV) {
      if (with_pct) printf("%.2f,", pct);
      else printf("%s,", cat_name(r->cat));
      printf("%.3f,%llu,%.3f,%.3f,%.3f,", us(r->total_ns), (unsigned long long)r->calls, avg, mn, us(r->max_ns));
      csv_field(name_of(o, r));
      putchar('\n');
    } else {
      if (with_pct) printf("%8.2f", pct);
      else printf(" %-8s", cat_name(r->cat));
      printf(" %13.3f %9llu %12.3f %12.3f %12.3f  %s\n", us(r->total_ns), (unsigned long long)r->calls, avg, mn,
             us(r->max_ns), name_of(o, r));
    }
  }
  section_end(o, n);
  free(rows);
}

static void print_memory(out *o) {
  size_t n;
  ft_stat_row **rows = sorted(o->st, FT_STAT_MEMORY, &n);
  section_begin(o, "memory", "memory operations (copies and sets)",
                o->fmt == FMT_CSV ? "kind,count,bytes,total_us,bandwidth_gb_s,name"
                                  : " Kind       Count            Bytes     Total(us)   GB/s  Name");
  for (size_t i = 0; i < n; i++) {
    const ft_stat_row *r = rows[i];
    double bw = r->total_ns ? (double)r->bytes / (double)r->total_ns : 0; /* bytes/ns = GB/s */
    if (o->fmt == FMT_JSON) {
      printf("%s\n    {\"name\": ", i ? "," : "");
      json_str(name_of(o, r));
      printf(", \"kind\": \"%s\", \"count\": %llu, \"bytes\": %llu, \"total_us\": %.3f, \"bandwidth_gb_s\": %.3f}",
             cat_name(r->cat), (unsigned long long)r->calls, (unsigned long long)r->bytes, us(r->total_ns), bw);
    } else if (o->fmt == FMT_CSV) {
      printf("%s,%llu,%llu,%.3f,%.3f,", cat_name(r->cat), (unsigned long long)r->calls,
             (unsigned long long)r->bytes, us(r->total_ns), bw);
      csv_field(name_of(o, r));
      putchar('\n');
    } else {
      printf(" %-7s %8llu %16llu %13.3f %6.1f  %s\n", cat_name(r->cat), (unsigned long long)r->calls,
             (unsigned long long)r->bytes, us(r->total_ns), bw, name_of(o, r));
    }
  }
  section_end(o, n);
  free(rows);
}

static void print_ops(out *o) {
  size_t n;
  ft_stat_row **rows = sorted(o->st, FT_STAT_OPS, &n);
  section_begin(o, "ops", "self device time per op / range",
                o->fmt == FMT_CSV ? "self_device_us,calls,avg_us_per_call,name"
                                  : " Self device(us)     Calls  Avg/call(us)  Name");
  size_t shown = 0;
  for (size_t i = 0; i < n; i++) {
    const ft_stat_row *r = rows[i];
    if (!r->total_ns && o->fmt == FMT_TABLE) continue; /* ops that launched nothing */
    double avg = r->calls ? us(r->total_ns) / (double)r->calls : 0;
    if (o->fmt == FMT_JSON) {
      printf("%s\n    {\"name\": ", shown ? "," : "");
      json_str(name_of(o, r));
      printf(", \"calls\": %llu, \"self_device_us\": %.3f}", (unsigned long long)r->calls, us(r->total_ns));
    } else if (o->fmt == FMT_CSV) {
      printf("%.3f,%llu,%.3f,", us(r->total_ns), (unsigned long long)r->calls, avg);
      csv_field(name_of(o, r));
      putchar('\n');
    } else {
      printf(" %15.3f %9llu %13.3f  %s\n", us(r->total_ns), (unsigned long long)r->calls, avg, name_of(o, r));
    }
    shown++;
  }
  section_end(o, shown);
  free(rows);
}

static int print_gpu(out *o, ft_stats *st) {
  size_t n;
  ft_stat_busy *busy = ft_stats_busy(st, &n);
  if (n == SIZE_MAX) return -1;
  uint64_t span = ft_stats_span(st);
  section_begin(o, "gpu", "GPU busy",
                o->fmt == FMT_CSV ? "device,busy_us,span_us,busy_pct" : " Device      Busy(us)      Span(us)   Busy(%)");
  for (size_t i = 0; i < n; i++) {
    double pct = span ? 100.0 * (double)busy[i].busy_ns / (double)span : 0;
    if (o->fmt == FMT_JSON)
      printf("%s\n    {\"device\": %lld, \"busy_us\": %.3f, \"span_us\": %.3f, \"busy_percent\": %.2f}", i ? "," : "",
             (long long)busy[i].device, us(busy[i].busy_ns), us(span), pct);
    else if (o->fmt == FMT_CSV)
      printf("%lld,%.3f,%.3f,%.2f\n", (long long)busy[i].device, us(busy[i].busy_ns), us(span), pct);
    else
      printf(" %6lld %13.3f %13.3f %9.2f\n", (long long)busy[i].device, us(busy[i].busy_ns), us(span), pct);
  }
  section_end(o, n);
  free(busy);
  return 0;
}

/* One line on stderr for the complete events that were not summarized. */
static uint64_t report_skipped(const ft_stats *st) {
  const ft_stat_skips *k = &st->skipped;
  uint64_t n = k->bad_time + k->time_range;
  if (!n) return 0;
  char a[96] = "", b[96] = "";
  if (k->bad_time)
    snprintf(a, sizeof a, "%llu with ts missing or ts/dur not a number", (unsigned long long)k->bad_time);
  if (k->time_range)
    snprintf(b, sizeof b, "%s%llu with ts or dur beyond +-%.0e us", k->bad_time ? ", " : "",
             (unsigned long long)k->time_range, (double)FT_STATS_MAX_US);
  fprintf(stderr, "flagtrace stats: %llu events skipped: %s%s\n", (unsigned long long)n, a, b);
  return n;
}

int ft_cli_stats(int argc, char **argv) {
  unsigned report = REP_ALL;
  enum fmt fmt = FMT_TABLE;
  const char *report_arg = NULL, *format_arg = NULL;
  const ft_cli_option opts[] = {{'r', "report", &report_arg}, {'f', "format", &format_arg}, {0}};
  int i = ft_cli_parse_anywhere("stats", argc, argv, opts, usage);
  if (i == FT_CLI_HELP) return 0;
  if (i == FT_CLI_ERROR) return FT_CLI_USAGE;
  if (report_arg && parse_report(report_arg, &report))
    return ft_cli_usage_error("stats", "--report takes a comma-separated subset of kernels,api,memory,ops,gpu, not '%s'",
                              report_arg);
  if (format_arg) {
    if (!strcmp(format_arg, "table")) fmt = FMT_TABLE;
    else if (!strcmp(format_arg, "csv")) fmt = FMT_CSV;
    else if (!strcmp(format_arg, "json")) fmt = FMT_JSON;
    else return ft_cli_usage_error("stats", "--format takes table, csv or json, not '%s'", format_arg);
  }
  if (i >= argc) return ft_cli_usage_error("stats", "no trace file given");
  ft_stats st;
  if (ft_stats_init(&st)) {
    fprintf(stderr, "flagtrace stats: out of memory\n");
    return 1;
  }
  for (int f = i; f < argc; f++) {
    char err[512];
    ft_status s = ft_stats_read(&st, argv[f], err, sizeof err);
    if (s) {
      fprintf(stderr, "flagtrace stats: %s: %s\n", argv[f], err);
      ft_stats_free(&st);
      return s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
    }
  }
  ft_stats_finish(&st);
  uint64_t skipped = report_skipped(&st);
  out o = {.fmt = fmt, .first_section = true, .st = &st};
  if (fmt == FMT_JSON) {
    printf("{\"files\": [");
    for (int f = i; f < argc; f++) {
      if (f > i) printf(", ");
      json_str(argv[f]);
    }
    printf("], \"events\": %llu, \"skipped_events\": %llu", (unsigned long long)st.events,
           (unsigned long long)skipped);
    o.first_section = false;
  } else if (fmt == FMT_TABLE) {
    printf("flagtrace stats: %llu events from %d file%s\n\n", (unsigned long long)st.events, argc - i,
           argc - i == 1 ? "" : "s");
  }
  if (report & REP_KERNELS) print_times(&o, FT_STAT_KERNELS, "kernels", "GPU kernels", true, false);
  if (report & REP_API) print_times(&o, FT_STAT_API, "api", "runtime and driver API", false, true);
  if (report & REP_MEMORY) print_memory(&o);
  if (report & REP_OPS) print_ops(&o);
  int rc = 0;
  if ((report & REP_GPU) && print_gpu(&o, &st)) {
    fprintf(stderr, "flagtrace stats: out of memory\n");
    rc = 1;
  }
  if (fmt == FMT_JSON) printf("\n}\n");
  ft_stats_free(&st);
  return rc;
}
