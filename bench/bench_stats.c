/* `flagtrace stats` reader throughput on a 1 M-event trace, against yajl alone
 * (validation without callbacks) on the same bytes, measured in the same run;
 * with --write PATH N, writes an N-slice trace for the P5 memory row instead;
 * with --split PATH, where the time of reading a gzip trace goes (P5); with
 * --join, crafted External ids against sequential ones (P5 join). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>
#ifdef FT_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "deflate.h"
#include "internal.h"
#include "json_scan.h"
#include "stats.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A torch-like trace for stats' peak RSS: per launch a runtime call and a kernel
 * (two streams, two devices), one op range per 10 launches holding their External
 * id. Written through the library, so its layout is the writer's. */
static int write_trace(const char *path, size_t n) {
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) return 1;
  ft__session_set_window(s, 0, UINT64_MAX / 2);
  uint64_t t = 1000000;
  uint32_t op_name;
  if (ft__intern(&s->store.names, "aten::mm", 8, &op_name)) return 1;
  for (size_t i = 0; i < n; i += 2, t += 4000) {
    uint32_t corr = (uint32_t)(i / 2 + 1);
    uint64_t ext = i / 20 + 1;
    ft_device_event rt = {.kind = FT_EVENT_RUNTIME,
                          .start_ns = t,
                          .end_ns = t + 3000,
                          .correlation_id = corr,
                          .has_external_id = true,
                          .external_id = ext,
                          .thread_id = 7,
                          .name = "cudaLaunchKernel"};
    ft_device_event k = {.kind = FT_EVENT_KERNEL,
                         .start_ns = t + 5000,
                         .end_ns = t + 7000 + i % 3 * 1000,
                         .correlation_id = corr,
                         .has_external_id = true,
                         .external_id = ext,
                         .device = (uint32_t)(i / 2 % 2),
                         .stream = 7 + (uint32_t)(i / 4 % 2),
                         .name = i % 4 ? "gemm_kernel" : "elementwise_kernel"};
    if (ft__session_inject(s, &rt) || ft__session_inject(s, &k)) return 1;
    if (i % 20 == 0 && ft__store_add_range(&s->store, op_name, t, t + 40000, ext, 7)) return 1;
  }
  ft_status st = ft_session_write(s, path);
  if (st) fprintf(stderr, "bench_stats: %s\n", ft_session_last_error(s));
  ft_session_destroy(s);
  return st ? 1 : 0;
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Inflates all of gz into a growing buffer (zlib, or ISA-L); the text's length, 0 on failure. */
static size_t inflate_all(const unsigned char *gz, size_t n, unsigned char **text, bool isal) {
  size_t cap = n * 8 + (1 << 20), len = 0;
  *text = malloc(cap);
  if (!*text) return 0;
#ifdef FT_HAVE_ISAL
  const ft__isal_inflate_api *api = ft__isal_inflate();
  if (isal && api) {
    struct inflate_state *z = malloc(sizeof *z);
    api->init(z);
    z->crc_flag = ISAL_GZIP;
    z->next_in = (uint8_t *)gz;
    z->avail_in = (uint32_t)n;
    for (;;) {
      if (cap - len < (1 << 20) && !(*text = realloc(*text, cap *= 2))) return 0;
      z->next_out = *text + len;
      z->avail_out = (uint32_t)(cap - len);
      int r = api->inflate(z);
      len = (size_t)(z->next_out - *text);
      if (r < 0) return 0;
      if (z->block_state == ISAL_BLOCK_FINISH) break;
    }
    free(z);
    return len;
  }
#endif
  (void)isal;
  z_stream z = {0};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return 0;
  z.next_in = (unsigned char *)gz;
  z.avail_in = (uInt)n;
  int r = Z_OK;
  while (r != Z_STREAM_END) {
    if (cap - len < (1 << 20) && !(*text = realloc(*text, cap *= 2))) return 0;
    z.next_out = *text + len;
    z.avail_out = (uInt)(cap - len);
    r = inflate(&z, Z_NO_FLUSH);
    len = (size_t)(z.next_out - *text);
    if (r != Z_OK && r != Z_STREAM_END) return 0;
  }
  inflateEnd(&z);
  return len;
}

/* P5's split: inflate (zlib, ISA-L), yajl alone, our parser alone, the reader on the text, and the
 * whole read of the file as `stats` does it (inflating on a second thread). CPU
 * seconds of this process (a loaded host's wall time says little) and wall. */
static int split(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return perror(path), 1;
  fseek(f, 0, SEEK_END);
  size_t n = (size_t)ftell(f);
  rewind(f);
  unsigned char *gz = malloc(n);
  bool read_all = gz && fread(gz, 1, n, f) == n;
  fclose(f);
  if (!read_all) {
    free(gz);
    return 1;
  }
  printf("# bench_stats --split %s: %.1f MB gzip\n", path, (double)n / 1e6);
  printf("| part | CPU s | wall s | MB/s of text |\n|---|---|---|---|\n");
  size_t len = 0;
  /* the text the rest works on: zlib's, replaced by ISA-L's when that runs (a build
   * with ISA-L whose libisal.so.2 is not loadable here keeps zlib's) */
  unsigned char *text = NULL;
  for (int isal = 0; isal < 2; isal++) {
    if (isal && !ft__isal_inflate()) {
      printf("| inflate, ISA-L | (not built (FT_WITH_ISAL, libisal-dev) or libisal.so.2 not loadable) | | |\n");
      continue;
    }
    unsigned char *got;
    double c0 = cpu_s(), w0 = now_s();
    len = inflate_all(gz, n, &got, isal);
    double c = cpu_s() - c0, w = now_s() - w0;
    if (!len) return fprintf(stderr, "bench_stats: %s: inflate failed\n", path), 1;
    printf("| inflate, %s | %.3f | %.3f | %.0f |\n", isal ? "ISA-L" : "zlib", c, w, (double)len / 1e6 / w);
    free(text);
    text = got;
  }
  double c0 = cpu_s(), w0 = now_s();
  yajl_handle h = yajl_alloc(NULL, NULL, NULL);
  yajl_config(h, yajl_dont_validate_strings, 1);
  if (yajl_parse(h, text, len) != yajl_status_ok || yajl_complete_parse(h) != yajl_status_ok) return 1;
  yajl_free(h);
  double c = cpu_s() - c0, w = now_s() - w0;
  printf("| yajl alone (no callbacks) | %.3f | %.3f | %.0f |\n", c, w, (double)len / 1e6 / w);
  /* the reader's own parser (src/analysis/read/json_scan.c), no callbacks, in the reader's 1 MiB chunks */
  c0 = cpu_s(), w0 = now_s();
  static const ft__json_callbacks none;
  ft__json *jp = malloc(sizeof *jp);
  ft__json_init(jp, &none, NULL);
  for (size_t off = 0; off < len; off += 1 << 20)
    if (ft__json_feed(jp, text + off, len - off < (1 << 20) ? len - off : 1 << 20)) return 1;
  if (ft__json_finish(jp)) return 1;
  ft__json_free(jp);
  free(jp);
  c = cpu_s() - c0, w = now_s() - w0;
  printf("| json_scan alone (no callbacks) | %.3f | %.3f | %.0f |\n", c, w, (double)len / 1e6 / w);
  /* the floor of a parser of our own: one pass that finds every string's end
   * (memchr for the quote, escapes honored) and counts the objects */
  c0 = cpu_s(), w0 = now_s();
  uint64_t objects = 0;
  for (const unsigned char *p = text, *end = text + len; p < end; p++) {
    if (*p == '{') {
      objects++;
    } else if (*p == '"') {
      for (;;) {
        const unsigned char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
        if (!q) {
          p = end;
          break;
        }
        size_t bs = 0;
        while (q - bs - 1 > p && q[-1 - (ptrdiff_t)bs] == '\\') bs++;
        p = q;
        if (bs % 2 == 0) break;
      }
    }
  }
  c = cpu_s() - c0, w = now_s() - w0;
  printf(
      "| structural scan only (strings skipped by memchr, %llu objects): a parser of our own's floor | %.3f | %.3f "
      "| %.0f |\n",
      (unsigned long long)objects, c, w, (double)len / 1e6 / w);
  char err[256];
  ft_stats st;
  c0 = cpu_s(), w0 = now_s();
  if (ft_stats_init(&st) || ft_stats_read_mem(&st, (const char *)text, len, err, sizeof err)) return 1;
  ft_stats_finish(&st);
  c = cpu_s() - c0, w = now_s() - w0;
  uint64_t events = st.events;
  ft_stats_free(&st);
  printf("| reader on the text (parse + aggregation) | %.3f | %.3f | %.0f |\n", c, w, (double)len / 1e6 / w);
  c0 = cpu_s(), w0 = now_s();
  if (ft_stats_init(&st) || ft_stats_read(&st, path, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
  ft_stats_finish(&st);
  c = cpu_s() - c0, w = now_s() - w0;
  ft_stats_free(&st);
  printf(
      "| whole read of the gzip file (inflate on a second thread, parse workers: FLAGTRACE_STATS_THREADS) | %.3f | "
      "%.3f | %.0f |\n",
      c, w, (double)len / 1e6 / w);
  printf("\n%llu traceEvents entries, %.1f MB of text (%.0f B per entry).\n", (unsigned long long)events,
         (double)len / 1e6, (double)len / (double)events);
  free(text);
  free(gz);
  return 0;
}

/* The old join's finalizer inverted: ids made from it shared one slot of its
 * table (any table up to 2^20 slots). */
static uint64_t old_unmix(uint64_t x) {
  uint64_t c = 0xff51afd7ed558ccdull, inv = c;
  for (int i = 0; i < 6; i++) inv *= 2 - c * inv;
  x ^= x >> 33;
  x *= inv;
  return x ^ (x >> 33);
}

/* n ops and n kernels sharing External ids, crafted or sequential, as JSON. */
static char *join_trace(size_t n, bool crafted, size_t *len) {
  size_t cap = n * 320 + 64;
  char *doc = malloc(cap);
  if (!doc) return NULL;
  *len = (size_t)snprintf(doc, cap, "{\"traceEvents\":[");
  for (uint64_t i = 0, k = 1; i < n; i++, k++) {
    uint64_t id = k;
    if (crafted)
      while ((id = old_unmix(k << 20)) >> 63) k++; /* below 2^63: an External id the reader takes */
    *len += (size_t)snprintf(doc + *len, cap - *len,
                             "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"ts\":%llu,\"dur\":5,\"args\":{"
                             "\"External id\":%llu}},{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":%llu,"
                             "\"dur\":2,\"pid\":0,\"args\":{\"External id\":%llu}}",
                             i ? "," : "", (unsigned long long)(10 * i), (unsigned long long)id,
                             (unsigned long long)(10 * i + 1), (unsigned long long)id);
  }
  *len += (size_t)snprintf(doc + *len, 3, "]}");
  return doc;
}

/* P5 join: the reader on crafted External ids against sequential ones, in the
 * same run: the ratio of their times (the old unkeyed hash: 19 s against 0.02 s
 * for 160 000), and the probes per lookup (an operation count, not a time). */
static int join_bench(bool quick) {
  size_t n = quick ? 40000 : 160000;
  int reps = quick ? 3 : 7;
  double t[2][8], probes[2] = {0, 0};
  char err[256];
  for (int c = 0; c < 2; c++) {
    size_t len;
    char *doc = join_trace(n, c == 1, &len);
    if (!doc) return 1;
    for (int r = 0; r < reps; r++) {
      ft_stats st;
      if (ft_stats_init(&st)) return 1;
      double t0 = now_s();
      if (ft_stats_read_mem(&st, doc, len, err, sizeof err)) return fprintf(stderr, "bench_stats: %s\n", err), 1;
      t[c][r] = now_s() - t0;
      probes[c] = (double)st.ext_op.probes / (double)(2 * n);
      ft_stats_free(&st);
    }
    qsort(t[c], (size_t)reps, sizeof(double), cmp_double);
    free(doc);
  }
  double ratio = t[1][reps / 2] / t[0][reps / 2];
  printf(
      "# bench_stats --join: %zu ops and %zu kernels sharing External ids (the crafted ones have 19 digits, "
      "the sequential up to 6), %d reps each, sequential first\n",
      n, n, reps);
  printf(
      "| External ids | min s | median s | probes per lookup | median vs sequential | target |\n"
      "|---|---|---|---|---|---|\n");
  printf("| sequential (baseline) | %.3f | %.3f | %.2f | - | - |\n", t[0][0], t[0][reps / 2], probes[0]);
  printf("| crafted: one slot of the old unkeyed hash | %.3f | %.3f | %.2f | %.2fx | <= 1.5x: %s |\n", t[1][0],
         t[1][reps / 2], probes[1], ratio,
         quick          ? "(quick mode, not judged)"
         : ratio <= 1.5 ? "pass"
                        : "MISS");
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--write")) return write_trace(argv[2], strtoull(argv[3], NULL, 10));
  if (argc == 3 && !strcmp(argv[1], "--split")) return split(argv[2]);
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--join")) return join_bench(argc > 1 && !strcmp(argv[1], "--quick"));
  bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  size_t n = quick ? 100000 : 1000000;
  int reps = quick ? 1 : 5;
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent", 1); /* synthetic events only */
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) return 1;
  ft__session_set_window(s, 0, UINT64_MAX / 2);
  ft_kv md[] = {{"grid", "[256, 1, 1]"},
                {"block", "[256, 1, 1]"},
                {"registers per thread", "44"},
                {"est. achieved occupancy %", "24"}};
  ft_kv cbid[] = {{"cbid", "211"}};
  uint64_t t = 1000000;
  for (size_t i = 0; i < n; i += 2, t += 4000) {
    uint32_t corr = (uint32_t)(i / 2 + 1);
    ft_device_event rt = {.kind = FT_EVENT_RUNTIME,
                          .start_ns = t,
                          .end_ns = t + 3000,
                          .correlation_id = corr,
                          .has_external_id = true,
                          .external_id = i / 20,
                          .thread_id = 7,
                          .name = "cudaLaunchKernel",
                          .metadata = cbid,
                          .n_metadata = 1};
    ft_device_event k = {.kind = FT_EVENT_KERNEL,
                         .start_ns = t + 5000,
                         .end_ns = t + 7000,
                         .correlation_id = corr,
                         .has_external_id = true,
                         .external_id = i / 20,
                         .stream = 7,
                         .name = i % 4 ? "gemm_kernel" : "elementwise_kernel",
                         .metadata = md,
                         .n_metadata = 4};
    if (ft__session_inject(s, &rt) || ft__session_inject(s, &k)) return 1;
  }
  ft__out *o;
  if (ft__out_open_mem(&o, false) || ft__write_trace(s, o, NULL)) return 1;
  size_t len;
  const char *text = ft__out_mem(o, &len);

  double t_reader[8] = {0}, t_yajl[8] = {0};
  char err[256];
  uint64_t entries = 0;
  for (int r = 0; r < reps; r++) {
    ft_stats st;
    if (ft_stats_init(&st)) return 1;
    double t0 = now_s();
    if (ft_stats_read_mem(&st, text, len, err, sizeof err)) {
      fprintf(stderr, "bench_stats: %s\n", err);
      return 1;
    }
    ft_stats_finish(&st);
    t_reader[r] = now_s() - t0;
    entries = st.events;
    ft_stats_free(&st);
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    t0 = now_s();
    if (yajl_parse(h, (const unsigned char *)text, len) != yajl_status_ok || yajl_complete_parse(h) != yajl_status_ok)
      return 1;
    t_yajl[r] = now_s() - t0;
    yajl_free(h);
  }
  qsort(t_reader, (size_t)reps, sizeof(double), cmp_double);
  qsort(t_yajl, (size_t)reps, sizeof(double), cmp_double);
  /* A trace "event" is an entry of traceEvents: here each launch is a runtime
   * slice, a kernel slice and a flow pair, so the entries outnumber the slices. */
  double per_million = t_reader[0] / ((double)entries / 1e6);
  printf("# bench_stats: %zu slices (kernel + runtime), %llu traceEvents entries, %.1f MB of JSON, %d reps\n", n,
         (unsigned long long)entries, (double)len / 1e6, reps);
  printf(
      "| reader | min s | median s | entries/s (min) | s per 1 M entries | vs yajl alone | target |\n"
      "|---|---|---|---|---|---|---|\n");
  printf("| stats reader | %.3f | %.3f | %.2fM | %.3f | %.2fx | < 1 s per 1 M events: %s |\n", t_reader[0],
         t_reader[reps / 2], (double)entries / t_reader[0] / 1e6, per_million, t_reader[0] / t_yajl[0],
         quick               ? "(quick mode, not judged)"
         : per_million < 1.0 ? "pass"
                             : "MISS");
  ft__out_abort(o);
  ft_session_destroy(s);
  return 0;
}
