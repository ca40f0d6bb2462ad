/* Partial summaries (stats --partial / --merge): a job written and read back prints byte for byte what the job printed;
 * hostile partials are refused in one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "reports.h"
#include "stats.h"
#include "stats_internal.h"
#include "stats_out.h"
#include "test_support.h"

/* The structs stats_partial_write.c writes field by field. A field added to one
 * of them changes its size here: write it there, read it in stats_partial_read.c
 * (and compare it in test_round_trip_generated), then update the size. */
static void test_serialized_structs_unchanged(void **state) {
  (void)state;
  assert_int_equal(sizeof(ft_stat_dist), 80);
  /* name, cat, comm, t, b, calls, self_ns, self_cpu_ns, total_dev_ns, cpu_mem, self_cpu_mem, dev_mem,
   * self_dev_mem, aux (hta is a cache, left to recompute) */
  assert_int_equal(sizeof(ft_stat_row), 256);
  assert_int_equal(sizeof(ft_stat_meta), 272);
  assert_int_equal(sizeof(ft_stat_skips), 64);
  assert_int_equal(sizeof(ft_stat_busy), 32); /* device, busy_ns (the bins are the report's) */
  assert_int_equal(sizeof(ft_stat_event), 80);
  assert_int_equal(sizeof(ft_stat_hta), 352);
  /* source: 48; skips unpaired, bad_ext: 16; model_*: 24 (and 8 of padding), not written (a --engine=model read's
   * note on stderr, not the summary's) */
  /* mem and mem_kept (issue 51): 64 + 8, written as the file's "mem" (stats_partial_mem.c reads it); mem_events:
   * 24, written as "mem_cpu", "mem_dev", "mem_cuda" (the ops' memory columns); mem_seen: 8 (in mem_kept's padding), not
   * written (a read's note on stderr) */
  assert_int_equal(sizeof(ft_stat_file), 960);
  assert_int_equal(sizeof(ft_stat_mem), 64);
  assert_int_equal(sizeof(ft_stat_mem_dev), 320);
  assert_int_equal(sizeof(ft_stat_mem_at), 48);
  assert_int_equal(FT_STAT_N_SECTIONS, 10); /* op_kernels (diff): written and read as op_shapes is */
}

static char *data_path(const char *name) {
  const char *dir = getenv("FT_TEST_DATA");
  char *p;
  assert_true(asprintf(&p, "%s/%s", dir ? dir : "tests/data", name) > 0);
  return p;
}

/* Everything stats prints of a job: the json header, every report in json, csv
 * and table form, by total and by rank, under every sort, and the stderr notes. */
static char *render(const ft_stat_job *job, bool by_rank) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  ft_summary_json(f, job);
  ft_summary_lines(f, job, "> ");
  ft_stat_job_notes(f, job, "! ");
  for (int sort = 0; sort < SORT_N; sort++)
    for (int r = 0; r < REP_N; r++) {
      ft_report rep;
      ft_report_opts o = {.reports = ~0u, .sort = sort, .limit = 0, .by_rank = by_rank};
      assert_int_equal(ft_report_build(&rep, r, job, &o), FT_OK);
      ft_report_json(f, &rep);
      ft_report_csv(f, &rep);
      ft_table_opts to = {0, 0, FT_UNIT_US};
      assert_int_equal(ft_report_table(f, &rep, &to), 0);
      ft_report_free(&rep);
    }
  fclose(f);
  return buf;
}

static char *partial_text(const ft_stat_job *job, uint64_t trace_limit) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_int_equal(ft_stat_partial_write(f, job, trace_limit), FT_OK);
  fclose(f);
  return buf;
}

static char *write_tmp(const char *text) {
  char *path = strdup("/tmp/ft_partial_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  return path;
}

static const char *const TRACES[] = {"torch_cuda_2.11_reference.json.gz", "workload_h200.json.gz",
                                     "sample_h200.json.gz", "torch_with_modules.json.gz"};
#define N_TRACES (sizeof TRACES / sizeof *TRACES)

static void read_direct(ft_stat_job *job, const char *const *paths, size_t n, bool by_rank) {
  char err[512];
  ft_stat_read_opts o = {.trace_limit = SIZE_MAX,
                         .by_rank = by_rank,
                         .hta = true,
                         .ops = true,
                         .modules = true,
                         .op_kernels = true, /* diff's rows too: they round-trip like the others */
                         .source = true};
  ft_status s = ft_stat_job_read(job, paths, n, &o, err, sizeof err);
  if (s) fail_msg("%s", err);
}

/* Each trace in a partial of its own (the first two together, once), merged:
 * the same output as one read of all of them. */
static void round_trip(bool by_rank, bool pair_first) {
  char *paths[N_TRACES];
  for (size_t i = 0; i < N_TRACES; i++) paths[i] = data_path(TRACES[i]);
  ft_stat_job direct;
  read_direct(&direct, (const char *const *)paths, N_TRACES, by_rank);
  char *want = render(&direct, by_rank);
  char *parts[N_TRACES];
  size_t n_parts = 0;
  for (size_t i = 0; i < N_TRACES; i++) {
    size_t n = pair_first && i == 0 ? 2 : 1;
    ft_stat_job one;
    read_direct(&one, (const char *const *)paths + i, n, by_rank);
    char *text = partial_text(&one, UINT64_MAX);
    parts[n_parts++] = write_tmp(text);
    free(text);
    ft_stat_job_free(&one);
    i += n - 1;
  }
  ft_stat_job merged;
  uint64_t kept;
  char err[512];
  ft_status s =
      ft_stat_job_merge(&merged, (const char *const *)parts, n_parts, by_rank, by_rank, &kept, err, sizeof err);
  if (s) fail_msg("%s", err);
  assert_true(kept == UINT64_MAX);
  char *got = render(&merged, by_rank);
  assert_string_equal(got, want);
  /* the merged job's partial, merged (a tree of merges), is itself again: every
   * field it holds comes back, those that no report shows yet too */
  char *p1 = partial_text(&merged, UINT64_MAX), *tmp = write_tmp(p1);
  ft_stat_job again;
  const char *one[] = {tmp};
  s = ft_stat_job_merge(&again, one, 1, by_rank, by_rank, &kept, err, sizeof err);
  if (s) fail_msg("%s", err);
  char *p2 = partial_text(&again, UINT64_MAX), *got2 = render(&again, by_rank);
  assert_string_equal(p2, p1);
  assert_string_equal(got2, want);
  ft_stat_job_free(&again);
  unlink(tmp);
  free(tmp), free(p1), free(p2), free(got), free(got2), free(want);
  ft_stat_job_free(&merged);
  ft_stat_job_free(&direct);
  for (size_t i = 0; i < n_parts; i++) unlink(parts[i]), free(parts[i]);
  for (size_t i = 0; i < N_TRACES; i++) free(paths[i]);
}

static void test_round_trip_total(void **state) {
  (void)state;
  round_trip(false, false);
  round_trip(false, true);
}

static void test_round_trip_by_rank(void **state) {
  (void)state;
  round_trip(true, false);
  round_trip(true, true);
}

/* A job with what the committed traces lack: names that are not UTF-8 or hold
 * control characters, more than 256 values in a row (the histogram), sizes,
 * unknown categories, a file without a rank, and fields checked one by one. */
static const char GEN[] =
    "{\"traceEvents\": [%s"
    "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":1,\"tid\":7,\"ts\":10,\"dur\":5,"
    "\"args\":{\"bytes\":4096}},"
    "{\"ph\":\"X\",\"cat\":\"mystery\",\"name\":\"m\",\"pid\":1,\"tid\":7,\"ts\":10,\"dur\":5},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\\u0001\\n\\\"q\\u00e9\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":9000,"
    "\"args\":{\"External id\":3}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"bad\xff\xfe name\",\"pid\":1,\"tid\":7,\"ts\":20,\"dur\":3,"
    "\"args\":{\"External id\":3}}]%s}";

static char *gen_trace(int rank, unsigned kernels) {
  char *ev = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&ev, &len);
  for (unsigned i = 0; i < kernels; i++)
    fprintf(f, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%u\",\"pid\":%u,\"tid\":7,\"ts\":%u,\"dur\":%u},", i % 3,
            i % 2, 100 + 7 * i, 1 + (i * 7919) % 1000);
  fclose(f);
  char rk[64] = "";
  if (rank >= 0) snprintf(rk, sizeof rk, ", \"distributedInfo\": {\"rank\": %d}", rank);
  char *out;
  assert_true(asprintf(&out, GEN, ev, rk) > 0);
  free(ev);
  return out;
}

static void test_round_trip_generated(void **state) {
  (void)state;
  char *paths[3];
  const int ranks[] = {4, -1, 2};
  const unsigned kernels[] = {900, 5, 300};
  for (int i = 0; i < 3; i++) {
    char *t = gen_trace(ranks[i], kernels[i]);
    paths[i] = write_tmp(t);
    free(t);
  }
  for (int by_rank = 0; by_rank < 2; by_rank++) {
    ft_stat_job direct, merged;
    read_direct(&direct, (const char *const *)paths, 3, by_rank);
    char *parts[3];
    for (int i = 0; i < 3; i++) {
      ft_stat_job one;
      read_direct(&one, (const char *const *)paths + i, 1, by_rank);
      char *text = partial_text(&one, UINT64_MAX);
      parts[i] = write_tmp(text);
      free(text);
      ft_stat_job_free(&one);
    }
    uint64_t kept;
    char err[512];
    ft_status s = ft_stat_job_merge(&merged, (const char *const *)parts, 3, by_rank, by_rank, &kept, err, sizeof err);
    if (s) fail_msg("%s", err);
    char *want = render(&direct, by_rank), *got = render(&merged, by_rank);
    assert_string_equal(got, want);
    /* a file without a rank takes its position in the merged job */
    assert_int_equal(merged.files[1].rank, 1);
    assert_int_equal(merged.files[0].rank, 4);
    /* every row, field by field (some are in no report yet) */
    for (int sec = 0; sec < FT_STAT_N_SECTIONS; sec++) {
      assert_int_equal(merged.total.rows[sec].len, direct.total.rows[sec].len);
      for (size_t i = 0; i < direct.total.rows[sec].len; i++) {
        const ft_stat_row *a = ft__vec_at(&direct.total.rows[sec], i), *b = ft__vec_at(&merged.total.rows[sec], i);
        assert_string_equal(ft__intern_str(&direct.total.names, a->name_id),
                            ft__intern_str(&merged.total.names, b->name_id));
        assert_int_equal(a->cat, b->cat);
        assert_int_equal(a->comm, b->comm);
        assert_int_equal(a->calls, b->calls);
        assert_int_equal(a->self_ns, b->self_ns);
        assert_int_equal(a->self_cpu_ns, b->self_cpu_ns);
        assert_int_equal(a->total_dev_ns, b->total_dev_ns);
        assert_int_equal(a->cpu_mem, b->cpu_mem);
        assert_int_equal(a->self_cpu_mem, b->self_cpu_mem);
        assert_int_equal(a->dev_mem, b->dev_mem);
        assert_int_equal(a->self_dev_mem, b->self_dev_mem);
        const ft_stat_dist *da[] = {&a->t, &a->b}, *db[] = {&b->t, &b->b};
        for (int k = 0; k < 2; k++) {
          assert_int_equal(da[k]->n, db[k]->n);
          assert_int_equal(da[k]->total, db[k]->total);
          assert_int_equal(da[k]->min, db[k]->min);
          assert_int_equal(da[k]->max, db[k]->max);
          assert_true(da[k]->sumsq == db[k]->sumsq);
          assert_int_equal(ft_dist_median(da[k]), ft_dist_median(db[k]));
          assert_int_equal(da[k]->hist != NULL, db[k]->hist != NULL);
        }
      }
    }
    for (size_t i = 0; i < 3; i++) {
      const ft_stat_file *a = &direct.files[i], *b = &merged.files[i];
      assert_string_equal(a->path, b->path);
      assert_memory_equal(&a->meta, &b->meta, sizeof a->meta);
      assert_memory_equal(&a->skipped, &b->skipped, sizeof a->skipped);
      assert_int_equal(a->events, b->events);
      assert_int_equal(a->span_ns, b->span_ns);
      assert_int_equal(a->first_ns, b->first_ns);
      assert_int_equal(a->kernel_ns, b->kernel_ns);
      assert_int_equal(a->comm_ns, b->comm_ns);
      assert_int_equal(a->n_busy, b->n_busy);
      assert_memory_equal(&a->source, &b->source, sizeof a->source);
      assert_true(a->source.known && a->source.regular && a->source.size > 0);
      const ft_stat_hta *ha = &a->hta, *hb = &b->hta;
      assert_int_equal(ha->kept, hb->kept);
      assert_int_equal(ha->gpu_events, hb->gpu_events);
      assert_int_equal(ha->gpu_busy_ns, hb->gpu_busy_ns);
      assert_int_equal(ha->launches, hb->launches);
      assert_int_equal(ha->delay_ns.n, hb->delay_ns.n);
      assert_int_equal(ha->cpu_ns.total, hb->cpu_ns.total);
    }
    /* the row of 900 + 300 values: a histogram, whose median the merge keeps */
    const ft_stat_row *k0 = ft__vec_at(&merged.total.rows[FT_STAT_KERNELS], 0);
    assert_non_null(k0->t.hist);
    free(want), free(got);
    ft_stat_job_free(&direct);
    ft_stat_job_free(&merged);
    for (int i = 0; i < 3; i++) unlink(parts[i]), free(parts[i]);
  }
  for (int i = 0; i < 3; i++) unlink(paths[i]), free(paths[i]);
}

/* ---- refusals ---- */

static const char HEAD[] = "{\"flagtrace_partial\": 2, \"trace_limit\": 0, \"strings\": [\"f\", \"k\"], ";
#define SRC0 "\"source\": {\"size\": 9, \"digest\": \"00000000000000a0\"}"
#define FILE0 "{\"path\": 0, \"events\": 3, " SRC0 "}"

static void refused(const char *doc, const char *why) {
  ft_stat_job job;
  uint64_t kept;
  char err[512] = "";
  ft_status s = ft_stat_job_merge_mem(&job, "p.json", doc, strlen(doc), false, false, &kept, err, sizeof err);
  if (s == FT_OK) fail_msg("accepted: %s", doc);
  if (!strstr(err, why)) fail_msg("'%s' lacks '%s' for %s", err, why, doc);
  assert_non_null(strstr(err, "p.json: "));
  assert_null(strchr(err, '\n'));
  ft_stat_job_free(&job);
}

static void test_refusals(void **state) {
  (void)state;
  char doc[2048];
  refused("{\"traceEvents\": []}", "not a partial summary");
  refused("[1]", "not a partial summary");
  refused("", "");
  refused("\x1f\x8b\x08", "a gzip file");
  refused("{\"flagtrace_partial\": 3}", "version 3; this flagtrace reads version 2");
  refused("{\"flagtrace_partial\": 1}", "version 1; this flagtrace reads version 2 (version 1 names no trace's source");
  refused("{\"flagtrace_partial\": \"1\"}", "a string where none belongs");
  refused("{\"flagtrace_partial\": 2, \"trace_limit\": 0}",
          "without flagtrace_partial, trace_limit, strings and files");
  refused("{\"flagtrace_partial\": 2, \"extra\": 0}", "unknown member \"extra\"");
  refused("{\"flagtrace_partial\": 2, \"trace_limit\": 0, \"trace_limit\": 0}", "given twice");
  snprintf(doc, sizeof doc, "%s\"files\": [{\"path\": 5}], \"total\": {}}", HEAD);
  refused(doc, "past the strings table");
  snprintf(doc, sizeof doc, "%s\"files\": [{\"path\": 0, \"events\": 1.5}], \"total\": {}}", HEAD);
  refused(doc, "not a whole number");
  snprintf(doc, sizeof doc, "%s\"files\": [{\"path\": 0, \"events\": 18446744073709551616}], \"total\": {}}", HEAD);
  refused(doc, "not a whole number");
  snprintf(doc, sizeof doc, "%s\"files\": [{\"path\": 0, \"events\": -1}], \"total\": {}}", HEAD);
  refused(doc, "not a whole number");
  snprintf(doc, sizeof doc, "%s\"files\": [{\"path\": 0, \"kernel_ns\": 1, \"comm_ns\": 2, " SRC0 "}], \"total\": {}}",
           HEAD);
  refused(doc, "communication time exceeds");
  snprintf(doc, sizeof doc, "%s\"files\": [" FILE0 "]}", HEAD);
  refused(doc, "neither a total nor");
  snprintf(doc, sizeof doc, "%s\"files\": [{\"path\": 0, \"rows\": {}, " SRC0 "}], \"total\": {}}", HEAD);
  refused(doc, "both a total and");
  snprintf(doc, sizeof doc,
           "%s\"files\": [" FILE0 "], \"total\": {\"kernels\": [{\"name\": 1, \"t\": {\"n\": 2, \"vals\": [1]}}]}}",
           HEAD);
  refused(doc, "values are not n");
  snprintf(doc, sizeof doc,
           "%s\"files\": [" FILE0
           "], \"total\": {\"kernels\": [{\"name\": 1, \"t\": {\"n\": 300, "
           "\"total\": 300, \"min\": 1, \"max\": 1, \"sumsq\": \"300\", \"hist_lo\": 1, \"hist\": [299]}}]}}",
           HEAD);
  refused(doc, "counts are not n");
  snprintf(doc, sizeof doc,
           "%s\"files\": [" FILE0
           "], \"total\": {\"kernels\": [{\"name\": 1, \"t\": {\"n\": 300, "
           "\"total\": 300, \"min\": 1, \"max\": 1, \"sumsq\": \"299\", \"hist_lo\": 1, \"hist\": [300]}}]}}",
           HEAD);
  refused(doc, "sums do not add up");
  snprintf(doc, sizeof doc,
           "%s\"files\": [" FILE0
           "], \"total\": {\"kernels\": [{\"name\": 1, \"t\": {\"n\": 300, "
           "\"total\": 300, \"min\": 1, \"max\": 1, \"sumsq\": \"300\", \"hist_lo\": 9000, \"hist\": [300]}}]}}",
           HEAD);
  refused(doc, "buckets out of range");
  snprintf(doc, sizeof doc,
           "%s\"files\": [" FILE0
           "], \"total\": {\"kernels\": [{\"name\": 1, \"t\": {\"n\": 1, "
           "\"vals\": [1]}}, {\"name\": 1, \"t\": {\"n\": 1, \"vals\": [2]}}]}}",
           HEAD);
  refused(doc, "a row given twice");
  snprintf(doc, sizeof doc, "%s\"files\": [" FILE0 "], \"total\": {\"kernels\": [{\"name\": 1, \"cat\": 9}]}}", HEAD);
  refused(doc, "not a category");
  snprintf(doc, sizeof doc, "%s\"files\": [" FILE0 "], \"total\": {\"nope\": []}}", HEAD);
  refused(doc, "unknown member \"nope\"");
  snprintf(doc, sizeof doc,
           "%s\"files\": [{\"path\": 0, \"skipped\": {\"unknown_cat\": 2}, " SRC0
           "}], \"total\": {}, "
           "\"unknown_categories\": [[1, 1]]}",
           HEAD);
  refused(doc, "do not add up");
  snprintf(doc, sizeof doc,
           "{\"flagtrace_partial\": 2, \"trace_limit\": 5, \"strings\": [\"f\", \"k\"], \"files\": [" FILE0
           "], \"total\": {}, \"trace\": [[0, 9, 1, 0, 0, 0, 1, -1, 0, 0, 0, 0, 0, 0, 0], [0, 5, 1, 0, 0, 0, 1, -1, 0, "
           "0, 0, 0, 0, 0, 0]]}");
  refused(doc, "not by file, then by start");
  snprintf(doc, sizeof doc,
           "{\"flagtrace_partial\": 2, \"trace_limit\": 1, \"strings\": [\"f\", \"k\"], \"files\": [" FILE0
           "], \"total\": {}, \"trace\": [[0, 1, 1, 0, 0, 0, 1, -1, 0, 0, 0, 0, 0, 0, 0], [0, 5, 1, 0, 0, 0, 1, -1, 0, "
           "0, 0, 0, 0, 0, 0]]}");
  refused(doc, "more device events of a file than trace_limit");
  snprintf(doc, sizeof doc,
           "{\"flagtrace_partial\": 2, \"trace_limit\": 5, \"strings\": [\"f\", \"k\"], \"files\": [" FILE0
           "], \"total\": {}, \"trace\": [[1, 1, 1, 0, 0, 0, 1, -1, 0, 0, 0, 0, 0, 0, 0]]}");
  refused(doc, "of a file the partial does not have");
  snprintf(doc, sizeof doc, "%s\"files\": [{\"path\": 0, \"busy\": [[2, 1], [1, 1]]}], \"total\": {}}", HEAD);
  refused(doc, "ascending");
  refused("{\"flagtrace_partial\": 2, \"trace_limit\": 0, \"strings\": [{\"hex\": \"6\"}]}", "odd length");
  refused("{\"flagtrace_partial\": 2, \"trace_limit\": 0, \"strings\": [\"a\\u0000b\"]}", "NUL");
  refused(
      "{\"flagtrace_partial\": 2, \"trace_limit\": 0, \"strings\": [], \"files\": [], \"total\": {\"kernels\": [[]]}}",
      "an array where none belongs");
  refused("{\"flagtrace_partial\": 2, \"trace_limit\": 0, \"strings\": [], \"files\": [null]}", "null");
  refused("{\"flagtrace_partial\": 2", "truncated");
}

/* Counts that fit one partial but not two added: refused, never wrapped. */
static void test_refused_sums(void **state) {
  (void)state;
  char doc[1024];
  snprintf(doc, sizeof doc,
           "%s\"files\": [" FILE0 "], \"total\": {\"ops\": [{\"name\": 1, \"calls\": 10000000000000000000}]}}", HEAD);
  char *a = write_tmp(doc), *b = write_tmp(doc);
  const char *paths[] = {a, b};
  ft_stat_job job;
  uint64_t kept;
  char err[512];
  assert_int_equal(ft_stat_job_merge(&job, paths, 2, false, false, &kept, err, sizeof err), FT_EPARSE);
  assert_non_null(strstr(err, "too large"));
  ft_stat_job_free(&job);
  /* the same partial twice, by two names */
  const char *twice[] = {a, a};
  assert_int_equal(ft_stat_job_merge(&job, twice, 2, false, false, &kept, err, sizeof err), FT_EINVAL);
  assert_non_null(strstr(err, "given twice"));
  ft_stat_job_free(&job);
  unlink(a), unlink(b);
  free(a), free(b);
}

/* The source digest is SipHash-2-4: the reference vectors (key 00..0f, message 00..n-1),
 * whole or fed a byte at a time (a file is read in chunks of any size). */
static void test_source_digest(void **state) {
  (void)state;
  unsigned char msg[64];
  for (int i = 0; i < 64; i++) msg[i] = (unsigned char)i;
  const struct {
    size_t n;
    uint64_t want;
  } vec[] = {{0, 0x726fdb47dd0e0e31ull},
             {1, 0x74f839c593dc67fdull},
             {8, 0x93f5f5799a932462ull},
             {15, 0xa129ca6149be45e5ull},
             {63, 0x958a324ceb064572ull}};
  for (size_t v = 0; v < sizeof vec / sizeof *vec; v++) {
    ft__digest whole, bytes;
    ft__digest_init(&whole);
    ft__digest_add(&whole, msg, vec[v].n);
    ft__digest_init(&bytes);
    for (size_t i = 0; i < vec[v].n; i++) ft__digest_add(&bytes, msg + i, 1);
    assert_int_equal(ft__digest_end(&whole), vec[v].want);
    assert_int_equal(ft__digest_end(&bytes), vec[v].want);
  }
}

/* Two partials of one trace (the digest and size agree) are refused, whichever names
 * they have; one partial may hold a trace and its copy (stats takes them in one run). */
static void test_same_source(void **state) {
  (void)state;
  char doc[1024];
  snprintf(doc, sizeof doc, "%s\"files\": [" FILE0 "], \"total\": {}}", HEAD);
  char *a = write_tmp(doc), *b = write_tmp(doc);
  snprintf(doc, sizeof doc, "%s\"files\": [" FILE0 ", " FILE0 "], \"total\": {}}", HEAD);
  char *both = write_tmp(doc);
  ft_stat_job job;
  uint64_t kept;
  char err[512], want[512];
  const char *two[] = {a, b}, *one[] = {both};
  assert_int_equal(ft_stat_job_merge(&job, two, 2, false, false, &kept, err, sizeof err), FT_EINVAL);
  snprintf(want, sizeof want,
           "%s: its trace f is a copy of %s's f (9 bytes, digest 00000000000000a0): merged, its events would be "
           "counted twice",
           b, a);
  assert_string_equal(err, want);
  ft_stat_job_free(&job);
  assert_int_equal(ft_stat_job_merge(&job, one, 1, false, false, &kept, err, sizeof err), FT_OK);
  assert_int_equal(job.n_files, 2);
  ft_stat_job_free(&job);
  unlink(a), unlink(b), unlink(both);
  free(a), free(b), free(both);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_serialized_structs_unchanged),
      cmocka_unit_test(test_round_trip_total),
      cmocka_unit_test(test_round_trip_by_rank),
      cmocka_unit_test(test_round_trip_generated),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_refused_sums),
      cmocka_unit_test(test_source_digest),
      cmocka_unit_test(test_same_source),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
