/* Unit tests of the stats reader's JSON parser (src/analysis/read/json_scan.c): tokens, escapes, chunk splits, errors,
 * depth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_diff.h"
#include "json_scan.h"

/* Events as readable text: "{ k:a n:1 s:x t f z [ ] }", bytes outside 0x21-0x7e as \xHH. */
typedef struct text {
  char b[1 << 16];
  size_t len;
  int stop_at; /* the 1-based event whose callback returns 0; 0: none */
  int events;
} text;

static int add(text *t, const char *kind, const unsigned char *s, size_t n) {
  if (t->len) t->b[t->len++] = ' ';
  t->len += (size_t)snprintf(t->b + t->len, sizeof t->b - t->len, "%s", kind);
  for (size_t i = 0; s && i < n && t->len + 8 < sizeof t->b; i++)
    t->len += (size_t)(s[i] > 0x20 && s[i] < 0x7f ? snprintf(t->b + t->len, 8, "%c", s[i])
                                                  : snprintf(t->b + t->len, 8, "\\x%02x", s[i]));
  return ++t->events != t->stop_at;
}
static int t_null(void *c) { return add(c, "z", NULL, 0); }
static int t_bool(void *c, int v) { return add(c, v ? "t" : "f", NULL, 0); }
static int t_number(void *c, const char *s, size_t n) { return add(c, "n:", (const unsigned char *)s, n); }
static int t_string(void *c, const unsigned char *s, size_t n) { return add(c, "s:", s, n); }
static int t_key(void *c, const unsigned char *s, size_t n) { return add(c, "k:", s, n); }
static int t_start_map(void *c) { return add(c, "{", NULL, 0); }
static int t_end_map(void *c) { return add(c, "}", NULL, 0); }
static int t_start_array(void *c) { return add(c, "[", NULL, 0); }
static int t_end_array(void *c) { return add(c, "]", NULL, 0); }
static const ft__json_callbacks text_cb = {t_null, t_bool,    t_number,      t_string,   t_start_map,
                                           t_key,  t_end_map, t_start_array, t_end_array};

static ft__json j; /* 10 kB */

/* Parses doc in one chunk into t; the status. */
static ft__json_status parse(const char *doc, size_t n, text *t) {
  memset(t->b, 0, 16);
  t->len = 0;
  t->events = 0;
  ft__json_init(&j, &text_cb, t);
  ft__json_status st = n ? ft__json_feed(&j, (const unsigned char *)doc, n) : FT__JSON_OK;
  if (!st) st = ft__json_finish(&j);
  ft__json_free(&j);
  t->b[t->len] = '\0';
  return st;
}

static void expect_events(const char *doc, const char *want) {
  static text t;
  t.stop_at = 0;
  ft__json_status st = parse(doc, strlen(doc), &t);
  if (st) fail_msg("%s: %s at %llu", doc, j.err_msg, (unsigned long long)j.err_at);
  assert_string_equal(t.b, want);
}

static void test_every_token_kind(void **state) {
  (void)state;
  expect_events("{\"a\": [1, -2.5e+3, \"x\", true, false, null, {}, []], \"b\": {\"c\": \"d\"}}",
                "{ k:a [ n:1 n:-2.5e+3 s:x t f z { } [ ] ] k:b { k:c s:d } }");
  /* any value at the top, whitespace around it */
  expect_events(" \t\r\n5 \n", "n:5");
  expect_events("\"s\"", "s:s");
  expect_events("true", "t");
  expect_events("null ", "z");
  expect_events("[[[]],{\"\":{}}]", "[ [ [ ] ] { k: { } } ]");
}

static void test_every_escape(void **state) {
  (void)state;
  expect_events("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20AC\\ud83d\\ude00\\u0000x\"]",
                "[ s:\"\\/\\x08\\x0c\\x0a\\x0d\\x09A\\xc3\\xa9\\xe2\\x82\\xac\\xf0\\x9f\\x98\\x80\\x00x ]");
  /* a raw DEL and bytes >= 0x80 pass as they are (no UTF-8 check, like the reader's yajl) */
  expect_events("\"\x7f\xff\xc3\xa9\"", "s:\\x7f\\xff\\xc3\\xa9");
  /* keys are unescaped the same way */
  expect_events("{\"a\\nb\":1}", "{ k:a\\x0ab n:1 }");
}

/* A lone surrogate escape is U+FFFD (invalid UTF-8 is U+FFFD on output too); a
 * high surrogate before a non-low \u escape is U+FFFD and that escape on its own.
 * yajl 2.1 has "?" for a lone high one and the 3 bytes of a lone low one
 * (test_json_diff folds those, the documented difference). */
static void test_lone_surrogates(void **state) {
  (void)state;
  expect_events("\"\\ud800x\"", "s:\\xef\\xbf\\xbdx");
  expect_events("\"\\udc00\"", "s:\\xef\\xbf\\xbd");
  expect_events("\"a\\uDBFF\"", "s:a\\xef\\xbf\\xbd");
  expect_events("\"\\ud800\\n\"", "s:\\xef\\xbf\\xbd\\x0a");
  expect_events("\"\\ud800\\u0041\"", "s:\\xef\\xbf\\xbdA");
  expect_events("\"\\ud800\\ud800\\udc00\"", "s:\\xef\\xbf\\xbd\\xf0\\x90\\x80\\x80");
  expect_events("\"\\udfff\\ud800\"", "s:\\xef\\xbf\\xbd\\xef\\xbf\\xbd");
  char why[256];
  const char *both = "[\"\\ud800x\", \"\\udc00\", \"\\uDBFF\"]";
  if (ft_json_diff((const unsigned char *)both, strlen(both), 1, why, sizeof why)) fail_msg("%s", why);
}

/* nul_fffd: \u0000 is U+FFFD, so that a C string of the name is the whole name. */
static void test_nul_as_fffd(void **state) {
  (void)state;
  static text t;
  t.stop_at = 0;
  const char *doc = "[\"a\\u0000b\", \"\\u0000\"]";
  ft__json_init(&j, &text_cb, &t);
  t.len = 0;
  t.events = 0;
  j.nul_fffd = true;
  assert_int_equal(ft__json_feed(&j, (const unsigned char *)doc, strlen(doc)), FT__JSON_OK);
  assert_int_equal(ft__json_finish(&j), FT__JSON_OK);
  ft__json_free(&j);
  t.b[t.len] = '\0';
  assert_string_equal(t.b, "[ s:a\\xef\\xbf\\xbdb s:\\xef\\xbf\\xbd ]");
  expect_events(doc, "[ s:a\\x00b s:\\x00 ]"); /* off by default: yajl's reading */
}

/* The fast path: a string without escapes is the chunk's own bytes. */
static const unsigned char *seen;
static size_t seen_len;
static int keep(void *c, const unsigned char *s, size_t n) {
  (void)c;
  seen = s;
  seen_len = n;
  return 1;
}
static void test_strings_without_escapes_are_not_copied(void **state) {
  (void)state;
  static const ft__json_callbacks cb = {.string = keep};
  const unsigned char doc[] = "\"plain name\"", esc[] = "\"a\\tb\"";
  ft__json_init(&j, &cb, NULL);
  assert_int_equal(ft__json_feed(&j, doc, sizeof doc - 1), FT__JSON_OK);
  assert_int_equal(ft__json_finish(&j), FT__JSON_OK);
  assert_ptr_equal(seen, doc + 1);
  assert_int_equal(seen_len, 10);
  ft__json_free(&j);
  ft__json_init(&j, &cb, NULL);
  assert_int_equal(ft__json_feed(&j, esc, sizeof esc - 1), FT__JSON_OK);
  assert_true(seen < esc || seen >= esc + sizeof esc); /* unescaped into the parser's buffer */
  assert_memory_equal(seen, "a\tb", 3);
  ft__json_free(&j);
}

/* Valid and invalid documents whose every split gives the one-chunk parse. */
static const char *const split_docs[] = {
    ("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\\u00e9\\ud83d\\ude00\", \"ts\": "
     "5118589557525.698, \"dur\": -1.5e-3, \"args\": {\"External id\": 3001, \"a\": [true, false, null]}}]}"),
    "[\"\\ud800\\u0041\", \"\\\\\\\"\", 0, -0.0E+12, 123456789012345678901234567890]",
    "  \"top\"  ",
    "[1, 2, tru]",
    "[\"abc\\q\"]",
    "[\"ab\x01\"]",
    "[\"\\u12G4\"]",
    "{\"a\": 1,}",
    "[1.e5]",
    "[-]",
    "[1e+]",
    "[] x",
    "{\"a\":\"b",
    "[12",
    "nul",
    "0",
    "-",
    "\"\\ud800",
};

static void expect_same(const char *what, ft__json_status st, ft_json_log *log, ft__json_status st0, ft_json_log *log0,
                        const char *msg0, uint64_t at0) {
  if (st != st0 || log->len != log0->len || (log->len && memcmp(log->b, log0->b, log->len)) ||
      (st && (j.err_at != at0 || j.err_msg != msg0)))
    fail_msg("%s: status %d/%d, %zu/%zu B of events, error at %llu/%llu", what, st, st0, log->len, log0->len,
             (unsigned long long)j.err_at, (unsigned long long)at0);
}

static void test_chunk_splits_at_every_byte(void **state) {
  (void)state;
  for (size_t d = 0; d < sizeof split_docs / sizeof split_docs[0]; d++) {
    const unsigned char *doc = (const unsigned char *)split_docs[d];
    size_t n = strlen(split_docs[d]);
    ft_json_log log0 = {0}, log = {0};
    ft__json_status st0 = ft_json_log_ours(&j, &log0, doc, n, 0);
    const char *msg0 = j.err_msg;
    uint64_t at0 = j.err_at;
    for (size_t i = 1; i < n; i++) { /* two chunks: [0, i) and [i, n) */
      log.len = 0;
      ft__json_init(&j, &ft_json_log_callbacks, &log);
      ft__json_status st = ft__json_feed(&j, doc, i);
      if (!st) st = ft__json_feed(&j, doc + i, n - i);
      if (!st) st = ft__json_finish(&j);
      ft__json_free(&j);
      char what[64];
      snprintf(what, sizeof what, "document %zu split at %zu", d, i);
      expect_same(what, st, &log, st0, &log0, msg0, at0);
    }
    for (size_t c = 1; c <= 3; c++) { /* every byte its own chunk, then 2 and 3 */
      ft__json_status st = ft_json_log_ours(&j, &log, doc, n, c);
      char what[64];
      snprintf(what, sizeof what, "document %zu in %zu-byte chunks", d, c);
      expect_same(what, st, &log, st0, &log0, msg0, at0);
    }
    ft_json_log_free(&log0);
    ft_json_log_free(&log);
  }
}

static void test_error_offsets(void **state) {
  (void)state;
  static const struct {
    const char *doc;
    size_t len; /* 0: strlen */
    unsigned long long at;
    const char *msg;
  } cases[] = {
      {"{\"traceEvents\": [}", 0, 17, "expected a value or ']'"},
      {"x", 0, 0, "expected a value"},
      {"[1,]", 0, 3, "expected a value"},
      {"{\"a\" 1}", 0, 5, "expected ':' after a key"},
      {"{\"a\":1,}", 0, 7, "expected a string key"},
      {"{1:2}", 0, 1, "expected a string key or '}'"},
      {"[1 2]", 0, 3, "expected ',' or ']'"},
      {"{\"a\":1]", 0, 6, "expected ',' or '}'"},
      {"[] x", 0, 3, "trailing garbage after the JSON value"},
      {"[]]", 0, 2, "trailing garbage after the JSON value"},
      {"[\"a\x01\"]", 0, 3, "control character in a string (it must be escaped)"},
      {"[\"a\nb\"]", 0, 3, "control character in a string (it must be escaped)"},
      {"[\"\\q\"]", 0, 3, "invalid escape in a string"},
      {"[\"\\u12G4\"]", 0, 6, "invalid \\u escape (4 hex digits expected)"},
      {"[\"\\ud800\\u0G00\"]", 0, 11, "invalid \\u escape (4 hex digits expected)"},
      {"[tru]", 0, 4, "invalid literal (true, false or null expected)"},
      {"[nulL]", 0, 4, "invalid literal (true, false or null expected)"},
      {"[01]", 0, 2, "expected ',' or ']'"},
      {"[-]", 0, 2, "invalid number (a digit expected)"},
      {"[+1]", 0, 1, "expected a value or ']'"},
      {"[1.]", 0, 3, "invalid number (a digit expected)"},
      {"[1e]", 0, 3, "invalid number (a digit expected)"},
      {"[1e+]", 0, 4, "invalid number (a digit expected)"},
      {"[1,\v2]", 0, 3, "expected a value"}, /* RFC 8259: \v and \f are not whitespace */
      {"\xef\xbb\xbf[]", 0, 0, "expected a value"},
      {"[1,\0]", 5, 3, "expected a value"},
      {"", 0, 0, "truncated JSON (the document ends early)"},
      {"   ", 0, 3, "truncated JSON (the document ends early)"},
      {"{\"a\":\"b", 0, 7, "truncated JSON (the document ends early)"},
      {"[nul", 0, 4, "truncated JSON (the document ends early)"},
      {"[1e", 0, 3, "truncated JSON (the document ends early)"},
      {"{\"a\":[1,2", 0, 9, "truncated JSON (the document ends early)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    static text t;
    t.stop_at = 0;
    size_t n = cases[i].len ? cases[i].len : strlen(cases[i].doc);
    ft__json_status st = parse(cases[i].doc, n, &t);
    if (st != FT__JSON_ERROR || j.err_at != cases[i].at || strcmp(j.err_msg, cases[i].msg))
      fail_msg("case %zu (%s): status %d, \"%s\" at %llu; want \"%s\" at %llu", i, cases[i].doc, st,
               st ? j.err_msg : "", (unsigned long long)j.err_at, cases[i].msg, cases[i].at);
  }
}

static void test_number_grammar(void **state) {
  (void)state;
  static const char *const good[] = {"0",
                                     "-0",
                                     "1",
                                     "-1",
                                     "10",
                                     "123456789012345678901234567890",
                                     "0.5",
                                     "-0.0",
                                     "1e5",
                                     "1E5",
                                     "1e+5",
                                     "1e-5",
                                     "1.5e10",
                                     "0e0",
                                     "-0.0e-0",
                                     "9.99E+999",
                                     "5118589557525.698"};
  static const char *const bad[] = {"01",  "-01",      "+1",        ".5",    "1.",  "-",   "1e",
                                    "1e+", "1.e5",     "00",        "0x1",   "1_0", "-a",  "1.5.5",
                                    "NaN", "Infinity", "-Infinity", "1e5.0", "--1", "1ee5"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char doc[64], want[80];
    snprintf(doc, sizeof doc, "[%s]", good[i]);
    snprintf(want, sizeof want, "[ n:%s ]", good[i]);
    expect_events(doc, want);
    snprintf(want, sizeof want, "n:%s", good[i]);
    expect_events(good[i], want); /* at the top, ended by the end of the text */
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char doc[64];
    static text t;
    t.stop_at = 0;
    snprintf(doc, sizeof doc, "[%s]", bad[i]);
    if (parse(doc, strlen(doc), &t) != FT__JSON_ERROR) fail_msg("%s accepted", doc);
    if (parse(bad[i], strlen(bad[i]), &t) != FT__JSON_ERROR) fail_msg("%s accepted at the top", bad[i]);
  }
}

static void test_depth_cap(void **state) {
  (void)state;
  size_t n = FT__JSON_MAX_DEPTH;
  char *doc = malloc(2 * n + 8);
  memset(doc, '[', n);
  memset(doc + n, ']', n);
  ft_json_log log = {.kinds_only = true};
  assert_int_equal(ft_json_log_ours(&j, &log, (const unsigned char *)doc, 2 * n, 0), FT__JSON_OK);
  assert_int_equal(log.len, 2 * n);
  memset(doc, '[', n + 1); /* one deeper */
  memset(doc + n + 1, ']', n + 1);
  assert_int_equal(ft_json_log_ours(&j, &log, (const unsigned char *)doc, 2 * n + 2, 0), FT__JSON_ERROR);
  assert_int_equal(j.err_at, n);
  assert_string_equal(j.err_msg, "nesting deeper than 10000 levels");
  assert_int_equal(log.len, n); /* the 10000 arrays opened, nothing after */
  /* maps count alike: {"a": nested 10001 times */
  char *m = malloc(5 * (n + 1) + 1);
  for (size_t i = 0; i <= n; i++) memcpy(m + 5 * i, "{\"a\":", 5);
  assert_int_equal(ft_json_log_ours(&j, &log, (const unsigned char *)m, 5 * (n + 1), 7), FT__JSON_ERROR);
  assert_int_equal(j.err_at, 5 * n);
  ft_json_log_free(&log);
  free(m);
  free(doc);
}

static void test_callback_stop(void **state) {
  (void)state;
  static text t;
  const char *doc = "[1, \"abc\", {\"k\": 2}]";
  for (int stop = 1; stop <= 5; stop++) {
    static const unsigned long long at[] = {0, 0, 1, 4, 11, 12};
    t.stop_at = stop;
    assert_int_equal(parse(doc, strlen(doc), &t), FT__JSON_STOPPED);
    assert_int_equal(t.events, stop);
    assert_int_equal(j.err_at, at[stop]); /* the first byte of the token whose callback said stop */
    /* sticky: more input does nothing */
    ft__json_init(&j, &text_cb, &t);
    t.events = 0;
    assert_int_equal(ft__json_feed(&j, (const unsigned char *)doc, 5), stop <= 2 ? FT__JSON_STOPPED : FT__JSON_OK);
    if (stop <= 2) {
      assert_int_equal(ft__json_feed(&j, (const unsigned char *)doc + 5, strlen(doc) - 5), FT__JSON_STOPPED);
      assert_int_equal(ft__json_finish(&j), FT__JSON_STOPPED);
      assert_int_equal(t.events, stop);
    }
    ft__json_free(&j);
  }
  /* a token completed from the carry: stopped at its start in the earlier chunk */
  t.stop_at = 3;
  t.events = 0;
  ft__json_init(&j, &text_cb, &t);
  assert_int_equal(ft__json_feed(&j, (const unsigned char *)doc, 6), FT__JSON_OK);
  assert_int_equal(ft__json_feed(&j, (const unsigned char *)doc + 6, strlen(doc) - 6), FT__JSON_STOPPED);
  assert_int_equal(j.err_at, 4);
  ft__json_free(&j);
}

/* A string and a number far longer than a chunk, fed in 4 kB chunks. */
static size_t got_len;
static unsigned char *got;
static int copy_string(void *c, const unsigned char *s, size_t n) {
  (void)c;
  got = malloc(n + 1);
  memcpy(got, s, n);
  got_len = n;
  return 1;
}
static int copy_number(void *c, const char *s, size_t n) { return copy_string(c, (const unsigned char *)s, n); }
static void test_tokens_longer_than_chunks(void **state) {
  (void)state;
  static const ft__json_callbacks cb = {.string = copy_string, .number = copy_number};
  size_t n = 3 << 20;
  unsigned char *doc = malloc(n + 2), *want = malloc(n);
  size_t w = 0, i = 1;
  doc[0] = '"';
  while (i + 6 < n) { /* escapes at every alignment, across chunk ends */
    if (i % 4093 < 6) {
      memcpy(doc + i, "\\u00e9", 6);
      i += 6;
      want[w++] = 0xc3, want[w++] = 0xa9;
    } else {
      doc[i] = want[w++] = (unsigned char)('a' + i % 26);
      i++;
    }
  }
  doc[i++] = '"';
  ft__json_init(&j, &cb, NULL);
  for (size_t off = 0; off < i; off += 4096)
    assert_int_equal(ft__json_feed(&j, doc + off, i - off < 4096 ? i - off : 4096), FT__JSON_OK);
  assert_int_equal(ft__json_finish(&j), FT__JSON_OK);
  assert_int_equal(got_len, w);
  assert_memory_equal(got, want, w);
  free(got);
  ft__json_free(&j);
  /* 1 M digits */
  memset(doc, '7', 1 << 20);
  memcpy(doc + (1 << 20), ".5", 2);
  ft__json_init(&j, &cb, NULL);
  size_t total = (1 << 20) + 2;
  for (size_t off = 0; off < total; off += 4096)
    assert_int_equal(ft__json_feed(&j, doc + off, total - off < 4096 ? total - off : 4096), FT__JSON_OK);
  assert_int_equal(ft__json_finish(&j), FT__JSON_OK);
  assert_int_equal(got_len, (1 << 20) + 2);
  assert_memory_equal(got, doc, got_len);
  free(got);
  ft__json_free(&j);
  free(doc);
  free(want);
}

/* keep limits: a 3 MiB string and a 1 M-digit number, fed in 4 kB chunks, are
 * handed over as their first keep bytes with cut counting the rest, and the
 * parser's buffers stay within a chunk and the keep limit (nothing is held). */
static size_t seen_cut;
static int keep_cut(void *c, const unsigned char *s, size_t n) {
  seen_cut = j.cut;
  return copy_string(c, s, n);
}
static int keep_cut_number(void *c, const char *s, size_t n) { return keep_cut(c, (const unsigned char *)s, n); }
static void test_keep_limits_hold_nothing(void **state) {
  (void)state;
  static const ft__json_callbacks cb = {.string = keep_cut, .number = keep_cut_number};
  size_t n = 3 << 20, i = 0;
  unsigned char *doc = malloc(n + 16);
  doc[i++] = '"';
  while (i < n) { /* an escape every 1000 bytes, some across chunk ends; 2-byte characters between */
    if (i % 1000 == 0) {
      memcpy(doc + i, "\\u00e9", 6);
      i += 6;
    } else {
      doc[i++] = 0xc3, doc[i++] = 0xa9; /* é as UTF-8 */
    }
  }
  doc[i++] = '"';
  size_t keep = 65;                      /* odd: a cut inside a 2-byte character, trimmed to 64 */
  for (int pass = 0; pass < 2; pass++) { /* 4 kB chunks, then the whole text in one */
    ft__json_init(&j, &cb, NULL);
    j.keep = keep;
    size_t step = pass ? i : 4096;
    for (size_t off = 0; off < i; off += step) {
      assert_int_equal(ft__json_feed(&j, doc + off, i - off < step ? i - off : step), FT__JSON_OK);
      assert_true(j.carry_cap <= 3 * 4096 && j.ucap <= 256); /* within a chunk; keep's */
    }
    assert_int_equal(ft__json_finish(&j), FT__JSON_OK);
    assert_int_equal(got_len, 64);
    for (size_t k = 0; k < 64; k += 2) assert_memory_equal(got + k, "\xc3\xa9", 2);
    size_t total = 0; /* the unescaped length: every 2 bytes of text, or 6 for one escape, are 2 bytes */
    for (size_t k = 1; k + 1 < i;) {
      if (doc[k] == '\\') k += 6;
      else k += 2;
      total += 2;
    }
    assert_int_equal(seen_cut, total - 64);
    free(got);
    ft__json_free(&j);
  }
  /* 1 M digits then ".5e3": the first 10 bytes, the rest cut; the grammar still checked */
  size_t d = 1 << 20;
  memset(doc, '7', d);
  memcpy(doc + d, ".5e3 ", 5);
  ft__json_init(&j, &cb, NULL);
  j.keep = 10;
  for (size_t off = 0; off < d + 5; off += 4096) {
    assert_int_equal(ft__json_feed(&j, doc + off, d + 5 - off < 4096 ? d + 5 - off : 4096), FT__JSON_OK);
    assert_true(j.carry_cap <= 3 * 4096);
  }
  assert_int_equal(ft__json_finish(&j), FT__JSON_OK);
  assert_int_equal(got_len, 10);
  assert_memory_equal(got, "7777777777", 10);
  assert_int_equal(seen_cut, d + 4 - 10);
  free(got);
  ft__json_free(&j);
  /* a bad number's error is at its byte however much was dropped before it */
  memcpy(doc + d, ".e", 2);
  ft__json_init(&j, &cb, NULL);
  j.keep = 10;
  ft__json_status st = FT__JSON_OK;
  for (size_t off = 0; !st && off < d + 2; off += 4096)
    st = ft__json_feed(&j, doc + off, d + 2 - off < 4096 ? d + 2 - off : 4096);
  if (!st) st = ft__json_finish(&j);
  assert_int_equal(st, FT__JSON_ERROR);
  assert_int_equal(j.err_at, d + 1);
  ft__json_free(&j);
  free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_token_kind),
      cmocka_unit_test(test_every_escape),
      cmocka_unit_test(test_lone_surrogates),
      cmocka_unit_test(test_strings_without_escapes_are_not_copied),
      cmocka_unit_test(test_chunk_splits_at_every_byte),
      cmocka_unit_test(test_error_offsets),
      cmocka_unit_test(test_number_grammar),
      cmocka_unit_test(test_depth_cap),
      cmocka_unit_test(test_callback_stop),
      cmocka_unit_test(test_tokens_longer_than_chunks),
      cmocka_unit_test(test_nul_as_fffd),
      cmocka_unit_test(test_keep_limits_hold_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
