/* Unit tests: JSON escaping, the metadata literal rule, number formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "test_support.h"

/* Renders one JSON string literal for s and returns it (malloc'ed). */
static char *escape(const char *s, size_t n) {
  ft__out *o;
  assert_int_equal(ft__out_open_mem(&o, false), FT_OK);
  ft__out_json_string(o, s, n);
  size_t len;
  const char *m = ft__out_mem(o, &len);
  char *r = malloc(len + 1);
  memcpy(r, m, len);
  r[len] = '\0';
  ft__out_abort(o);
  return r;
}

static void expect_escape(const char *in, size_t n, const char *want) {
  char *got = escape(in, n);
  assert_string_equal(got, want);
  /* and it must be a valid JSON document on its own */
  char err[256];
  yajl_val v = ft_test_parse_json(got, strlen(got), err, sizeof err);
  assert_non_null(v);
  assert_true(YAJL_IS_STRING(v));
  yajl_tree_free(v);
  free(got);
}

static void test_escape_specials(void **state) {
  (void)state;
  expect_escape("plain", 5, "\"plain\"");
  expect_escape("a\"b", 3, "\"a\\\"b\"");
  expect_escape("back\\slash", 10, "\"back\\\\slash\"");
  expect_escape("\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\"");
  expect_escape("\x01\x1f", 2, "\"\\u0001\\u001f\"");
  expect_escape("x\0y", 3, "\"x\\u0000y\"");
  expect_escape("del\x7f", 4, "\"del\x7f\"");
}

static void test_escape_utf8(void **state) {
  (void)state;
  /* valid multi-byte sequences pass through */
  expect_escape("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
  /* lone continuation, truncated sequence, overlong, surrogate, > U+10FFFF */
  expect_escape("\x80", 1, "\"\\ufffd\"");
  expect_escape("\xe2\x82", 2, "\"\\ufffd\\ufffd\"");
  expect_escape("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"");
  expect_escape("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
  expect_escape("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
  expect_escape("\xff", 1, "\"\\ufffd\"");
}

static void test_literal_rule(void **state) {
  (void)state;
  static const char *const yes[] = {"0",    "-0",    "12",   "-3.25",       "8e-05",    "1E+10", "19.692307692307693",
                                    "true", "false", "null", "[256, 1, 1]", "[8,16,5]", "[1.5]", "[ 1 , -2 ]"};
  static const char *const no[] = {"",    "N/A", "1.",   "1e",  "1e+",   ".5",      "01",   "+1",         "-",
                                   "NaN", "inf", "True", "nul", "\"x\"", "[]",      "[1,]", "[1 2]",      "[1",
                                   "1]",  "[a]", "1 ",   " 1",  "0x10",  "[1],[2]", "{}",   "Memcpy HtoD"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) assert_true(ft__json_is_literal(yes[i], strlen(yes[i])));
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
    if (ft__json_is_literal(no[i], strlen(no[i]))) fail_msg("'%s' taken as a JSON literal", no[i]);
  }
}

static void test_value_quoting(void **state) {
  (void)state;
  ft__out *o;
  assert_int_equal(ft__out_open_mem(&o, false), FT_OK);
  ft__out_str(o, "[");
  ft__out_json_value(o, "N/A", 3);
  ft__out_str(o, ",");
  ft__out_json_value(o, "8e-05", 5);
  ft__out_str(o, ",");
  ft__out_json_value(o, "1.", 2);
  ft__out_str(o, ",");
  ft__out_json_value(o, "[8,16,5]", 8);
  ft__out_str(o, "]");
  size_t len;
  const char *m = ft__out_mem(o, &len);
  assert_int_equal(len, strlen("[\"N/A\",8e-05,\"1.\",[8,16,5]]"));
  assert_memory_equal(m, "[\"N/A\",8e-05,\"1.\",[8,16,5]]", len);
  ft__out_abort(o);
}

static void expect_double(double v, const char *want) {
  char buf[32];
  size_t n = ft__fmt_double(v, buf);
  buf[n] = '\0';
  assert_string_equal(buf, want);
}

static void test_double_format(void **state) {
  (void)state;
  /* The layout of kineto's fmt "{}" (values seen in the torch-cuda reference). */
  expect_double(16384.0 / 832.0, "19.692307692307693");
  expect_double(32768.0 / 960.0, "34.13333333333333");
  expect_double(8e-05, "8e-05");
  expect_double(0.0001, "0.0001");
  expect_double(100.0, "100");
  expect_double(0.5, "0.5");
  expect_double(1e16, "1e+16");
  expect_double(123456789012345.0, "123456789012345");
  expect_double(0.0, "0");
}

static void test_us3(void **state) {
  (void)state;
  ft__out *o;
  assert_int_equal(ft__out_open_mem(&o, false), FT_OK);
  ft__out_us3(o, 0);
  ft__out_str(o, " ");
  ft__out_us3(o, 1);
  ft__out_str(o, " ");
  ft__out_us3(o, 1234567);
  ft__out_str(o, " ");
  ft__out_us3(o, UINT64_MAX);
  size_t len;
  const char *m = ft__out_mem(o, &len);
  const char *want = "0.000 0.001 1234.567 18446744073709551.615";
  assert_int_equal(len, strlen(want));
  assert_memory_equal(m, want, len);
  ft__out_abort(o);
}

/* Integers as printf writes them, at every digit count and around the powers of
 * ten (the writer converts two digits at a time). */
static void test_integers_match_printf(void **state) {
  (void)state;
  ft__out *o;
  assert_int_equal(ft__out_open_mem(&o, false), FT_OK);
  char want[64 * 1024], one[96];
  size_t wlen = 0;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 600; i++) {
    uint64_t v;
    if (i < 200) {
      uint64_t p = 1;
      for (int k = 0; k < i / 10; k++) p *= 10;
      v = p + (uint64_t)(i % 10) - 5; /* around 10^k, wrapping below 1 to huge values */
    } else {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      v = i % 2 ? x : x >> (i % 64);
    }
    ft__out_u64(o, v);
    ft__out_write(o, " ", 1);
    ft__out_i64(o, -(int64_t)(v >> 1));
    ft__out_write(o, " ", 1);
    ft__out_us3(o, v);
    ft__out_write(o, "\n", 1);
    int n = snprintf(one, sizeof one, "%llu %lld %llu.%03llu\n", (unsigned long long)v, -(long long)(v >> 1),
                     (unsigned long long)(v / 1000), (unsigned long long)(v % 1000));
    memcpy(want + wlen, one, (size_t)n);
    wlen += (size_t)n;
  }
  size_t len;
  const char *m = ft__out_mem(o, &len);
  assert_int_equal(len, wlen);
  assert_memory_equal(m, want, wlen);
  ft__out_abort(o);
}

static void test_gzip_memory_round_trip(void **state) {
  (void)state;
  ft__out *o;
  assert_int_equal(ft__out_open_mem(&o, true), FT_OK);
  for (int i = 0; i < 100000; i++) ft__out_str(o, "{\"a\": 1}\n");
  size_t zlen;
  const char *z = ft__out_mem(o, &zlen);
  assert_true(zlen > 0 && zlen < 100000);
  size_t len;
  char *plain = ft_test_gunzip(z, zlen, &len);
  assert_non_null(plain);
  assert_int_equal(len, 100000 * 9);
  assert_memory_equal(plain, "{\"a\": 1}\n", 9);
  free(plain);
  ft__out_abort(o);
}

/* One sequence of writes into a plain and a gzip writer (a write larger than the
 * buffer and a long escaped string in the middle): the same bytes, in order. */
static void write_mixed(ft__out *o, const char *big, size_t big_len) {
  char line[64];
  for (int i = 0; i < 60000; i++) {
    int n = snprintf(line, sizeof line, "{\"i\": %d}\n", i);
    ft__out_write(o, line, (size_t)n);
    if (i == 20000) ft__out_write(o, big, big_len);           /* > one buffer: written past it */
    if (i == 40000) ft__out_json_string(o, big, big_len / 2); /* escaped in pieces */
  }
}

static void test_gzip_matches_plain_byte_for_byte(void **state) {
  (void)state;
  size_t big_len = 700 * 1024;
  char *big = malloc(big_len);
  assert_non_null(big);
  for (size_t i = 0; i < big_len; i++) big[i] = (char)('a' + (i * 7) % 26);
  ft__out *p, *z;
  assert_int_equal(ft__out_open_mem(&p, false), FT_OK);
  assert_int_equal(ft__out_open_mem(&z, true), FT_OK);
  write_mixed(p, big, big_len);
  write_mixed(z, big, big_len);
  ft_test_gzip_matches_plain(p, z);
  free(big);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape_specials),
      cmocka_unit_test(test_escape_utf8),
      cmocka_unit_test(test_literal_rule),
      cmocka_unit_test(test_value_quoting),
      cmocka_unit_test(test_double_format),
      cmocka_unit_test(test_us3),
      cmocka_unit_test(test_integers_match_printf),
      cmocka_unit_test(test_gzip_memory_round_trip),
      cmocka_unit_test(test_gzip_matches_plain_byte_for_byte),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
