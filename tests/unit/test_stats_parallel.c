/* `flagtrace stats` with parse workers: the same summary and the same errors as one thread, on random and hostile
 * traces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "stats.h"
#include "stats_digest.h"
#include "test_support.h"

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n) { return ft_test_rand(&rng, n); }

typedef struct text {
  char *p;
  size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (t->len + (size_t)n + 1 > t->cap) {
    t->cap = (t->len + (size_t)n + 1) * 2;
    t->p = realloc(t->p, t->cap);
    assert_non_null(t->p);
  }
  va_start(ap, fmt);
  vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

/* Names and categories that look like a cut between events from the inside of a
 * string: a guess that took them for one would add a "fake" kernel. */
static const char *const NAMES[] = {"gemm_kernel",
                                    "aten::mm",
                                    "ncclAllReduce_sum",
                                    "aten::add, seq = 3, op_id = 7",
                                    "cudaLaunchKernel",
                                    "",
                                    "Memcpy HtoD (Pageable -> Device)"};
static const char *const NASTY[] = {
    "x}, {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"fake\",\"ts\":1,\"dur\":500}, {\"a\":\"", "q\\\"}, {\\\"",
    "esc\\u00e9\\n\\ud83d\\ude00", "},{"};
static const char *const CATS[] = {"kernel",      "cpu_op",          "cuda_runtime",        "gpu_memcpy",
                                   "gpu_memset",  "user_annotation", "gpu_user_annotation", "ac2g",
                                   "mystery}, {", "cuda_driver"};
static const char *const SEPS[] = {", ", ",\n  ", ",", "\n,\n", " ,\t"};

/* false: no string or value that looks like a cut, and no broken document */
static bool nasty = true;

static void event(text *t) {
  unsigned kind = nasty ? rnd(12) : 2 + rnd(10);
  if (kind == 0) {
    put(t, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":\"p}, {%u\"}}", rnd(3), rnd(9));
    return;
  }
  if (kind == 1) { /* elements that are not events */
    static const char *const other[] = {"17", "\"}, {\"", "[1, {\"a\": 2}, {\"b\": [3]}]", "null", "{}", "[]"};
    put(t, "%s", other[rnd(6)]);
    return;
  }
  put(t, "{\"ph\":\"%s\"", rnd(8) ? "X" : "f");
  const char *cat = CATS[rnd(sizeof CATS / sizeof *CATS)];
  if (rnd(10)) put(t, ",\"cat\":\"%s\"", nasty || !strchr(cat, '}') ? cat : "mystery");
  if (nasty && rnd(1500) == 0) { /* longer than the reader keeps (64 KiB): cut, across segments */
    put(t, ",\"name\":\"");
    for (unsigned i = 0, n = 16500 + rnd(2000); i < n; i++) put(t, "%s", rnd(9) ? "ab\xc3\xa9" : "\\u00e9}, {");
    put(t, "\"");
  } else {
    put(t, ",\"name\":\"%s\"", rnd(6) || !nasty ? NAMES[rnd(sizeof NAMES / sizeof *NAMES)] : NASTY[rnd(4)]);
  }
  put(t, ",\"pid\":%s", rnd(6) ? (rnd(2) ? "0" : "1") : "\"Spans\"");
  switch (rnd(12)) {
  case 0: break; /* no ts */
  case 1: put(t, ",\"ts\":\"12\""); break;
  case 2: put(t, ",\"ts\":9e99"); break;
  default: put(t, ",\"ts\":%u.%03u", 1000 + rnd(100000), rnd(1000));
  }
  if (rnd(8)) put(t, ",\"dur\":%s%u.%u", rnd(20) ? "" : "-", rnd(5000), rnd(10));
  put(t, ",\"args\":{");
  if (rnd(4)) put(t, "\"External id\":%u, ", rnd(40));
  if (rnd(3) == 0) {
    static const char *const odd[] = {"1e12", "-1", "\"7\"", "9223372036854775808", "2.5", "null", "4096.0"};
    if (rnd(4)) put(t, "\"bytes\":%u, ", rnd(1 << 20));
    else put(t, "\"bytes\":%s, ", odd[rnd(sizeof odd / sizeof *odd)]);
  }
  if (nasty && rnd(10) == 0) put(t, "\"Input Dims\":[[1, 2], [{\"x\": 1}, {\"y\": \"}, {\"}]], ");
  put(t, "\"correlation\":%u}}", rnd(1000));
}

static void events(text *t, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    if (i) put(t, "%s", SEPS[rnd(sizeof SEPS / sizeof *SEPS)]);
    event(t);
  }
}

/* A trace in one of the layouts a reader meets; sometimes broken on purpose. */
static void document(text *t) {
  t->len = 0;
  unsigned n = rnd(4) ? 20 + rnd(300) : rnd(3);
  switch (rnd(nasty ? 5 : 4)) {
  case 0: /* ours: a header, then the events, then more keys */
  case 1:
    put(t, "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"%s\"}%s],\n", nasty ? "G}, {" : "G",
        nasty ? ", {\"id\": 1}" : "");
    put(t, "\"flagtrace\": {\"tracer\": \"cupti\", \"device_activity\": true, \"dropped_records\": 3},\n");
    put(t, "\"traceEvents\": [\n  ");
    events(t, n);
    put(t, "\n], \"traceName\": \"%s\", \"distributedInfo\": {\"rank\": 2}}", nasty ? "x}, {" : "x");
    break;
  case 2: /* the events first */
    put(t, "{\"traceEvents\":[");
    events(t, n);
    put(t, "],\"displayTimeUnit\":\"ms\",\"more\":[{\"a\":1}%s{\"b\":2}]}", nasty ? ", " : ",[],");
    break;
  case 3: /* the JSON Array Format, closed or not */
    put(t, "[");
    events(t, n);
    if (rnd(2)) put(t, "]");
    break;
  default: /* two events arrays: refused */
    put(t, "{\"traceEvents\":[");
    events(t, n);
    put(t, "], \"traceEvents\": []}");
    break;
  }
  if (nasty && t->len && rnd(4) == 0) { /* broken: cut, a byte changed, or a '}' put in */
    size_t at = rnd((unsigned)t->len);
    switch (rnd(3)) {
    case 0: t->len = at; break;
    case 1: t->p[at] = "}{,\"x]"[rnd(6)]; break;
    default:
      put(t, " ");
      memmove(t->p + at + 1, t->p + at, t->len - at - 1);
      t->p[at] = '}';
    }
  }
}

typedef struct result {
  ft_status status;
  char err[512];
  char *digest;
  size_t segments, taken;
} result;

static size_t cut_reads; /* reads that cut a long name: the generator's long names were met */

static void read_with(const char *data, size_t len, int threads, size_t segment, bool timeline, result *out) {
  ft_stats st;
  assert_int_equal(ft_stats_init(&st), FT_OK);
  st.parse_threads = threads;
  st.segment_bytes = segment;
  st.timeline = timeline;
  st.trace_limit = timeline ? 7 : 0;
  out->err[0] = '\0';
  out->status = ft_stats_read_mem(&st, data, len, out->err, sizeof out->err);
  out->digest = NULL;
  if (out->status == FT_OK) {
    ft_stats_finish(&st);
    out->digest = stats_digest(&st);
    assert_non_null(out->digest);
  }
  cut_reads += st.cut_strings > 0;
  out->segments = st.segments;
  out->taken = st.segments_taken;
  ft_stats_free(&st);
}

static void same(const result *a, const result *b, const char *doc) {
  if (a->status != b->status || strcmp(a->err, b->err) || (a->digest && strcmp(a->digest, b->digest))) {
    fprintf(stderr, "differs on:\n%s\n-- one thread: %d %s\n%s\n-- workers: %d %s\n%s\n", doc, a->status, a->err,
            a->digest ? a->digest : "", b->status, b->err, b->digest ? b->digest : "");
    fail();
  }
}

static void test_random_documents(void **state) {
  (void)state;
  static const size_t segs[] = {7, 64, 256, 1024, 1 << 16};
  text t = {0};
  for (int d = 0; d < 600; d++) {
    document(&t);
    put(&t, "%s", ""); /* a NUL after the text, for the message */
    bool timeline = rnd(2);
    for (int k = 0; k < 4; k++) { /* one thread reading alike: a corrupt gzip stream's text before the error */
      result one, par;
      size_t seg = segs[rnd(sizeof segs / sizeof *segs)];
      read_with(t.p, t.len, 0, seg, timeline, &one);
      read_with(t.p, t.len, 1 + (int)rnd(3), seg, timeline, &par);
      same(&one, &par, t.p);
      free(one.digest), free(par.digest);
    }
  }
  assert_true(cut_reads > 0);
  free(t.p);
}

/* Random traces without look-alike cuts, in 1 kB segments: every segment after
 * the first is taken from a worker (none is parsed twice). */
static void test_random_clean_all_taken(void **state) {
  (void)state;
  text t = {0};
  nasty = false;
  size_t segments = 0;
  for (int d = 0; d < 200; d++) {
    document(&t);
    put(&t, "%s", "");
    result one, par;
    read_with(t.p, t.len, 0, 0, false, &one);
    read_with(t.p, t.len, 1 + (int)rnd(3), 1024, false, &par);
    same(&one, &par, t.p);
    assert_int_equal(par.taken, par.segments - 1);
    segments += par.segments;
    free(one.digest), free(par.digest);
  }
  nasty = true;
  assert_true(segments > 1000);
  free(t.p);
}

/* A clean trace of ours cut every ~200 bytes: every segment but the first starts
 * between two events, so every one is taken from a worker. */
static void test_clean_trace_all_taken(void **state) {
  (void)state;
  text t = {0};
  put(&t, "{\"flagtrace\": {\"rank\": 1},\n\"traceEvents\": [\n");
  for (int i = 0; i < 2000; i++)
    put(&t,
        "%s  {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%d\",\"pid\":0,\"ts\":%d.5,\"dur\":2,\"args\":{\"External "
        "id\":%d}}",
        i ? ",\n" : "", i % 7, 10 * i, i);
  put(&t, "\n]}\n");
  result one, par;
  read_with(t.p, t.len, 0, 0, false, &one);
  read_with(t.p, t.len, 3, 200, false, &par);
  same(&one, &par, t.p);
  assert_true(par.segments > 100);
  assert_int_equal(par.taken, par.segments - 1); /* the first holds the header: parsed here */
  assert_non_null(strstr(one.digest, "events=2000 "));
  free(one.digest), free(par.digest), free(t.p);
}

/* gzip input, in two members as a parallel writer makes them, whole or cut short. */
static void test_gzip_members(void **state) {
  (void)state;
  text t = {0};
  for (int d = 0; d < 40; d++) {
    document(&t);
    size_t cut = t.len ? rnd((unsigned)t.len) : 0;
    unsigned char *gz = malloc(2 * t.len + 256);
    size_t len = 0;
    for (int m = 0; m < 2; m++) {
      z_stream z = {0};
      assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
      z.next_in = (unsigned char *)t.p + (m ? cut : 0);
      z.avail_in = (uInt)(m ? t.len - cut : cut);
      z.next_out = gz + len;
      z.avail_out = (uInt)(2 * t.len + 256 - len);
      assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
      len += z.total_out;
      deflateEnd(&z);
    }
    if (d % 3 == 0) len = rnd((unsigned)len); /* cut: the text before the cut comes first, then the error */
    result one, par;
    size_t seg = 16 + rnd(200);
    read_with((const char *)gz, len, 0, seg, false, &one);
    read_with((const char *)gz, len, 2, seg, false, &par);
    put(&t, "%s", "");
    same(&one, &par, t.p);
    free(one.digest), free(par.digest), free(gz);
  }
  free(t.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_documents),
      cmocka_unit_test(test_random_clean_all_taken),
      cmocka_unit_test(test_clean_trace_all_taken),
      cmocka_unit_test(test_gzip_members),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
