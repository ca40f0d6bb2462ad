/* Unit tests of the report's links to traces (src/cli/report.c): relative paths, percent-encoding, no scheme, which
 * names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static void expect_href(const char *rel, const char *want) {
  char *h = (char *)1;
  assert_int_equal(ft__report_href(rel, &h), FT_OK);
  assert_non_null(h);
  assert_string_equal(h, want);
  free(h);
}

static void test_hostile_names(void **state) {
  (void)state;
  expect_href("javascript:alert(1)", "./javascript%3Aalert%281%29");
  expect_href("JaVaScRiPt:x", "./JaVaScRiPt%3Ax");
  expect_href(" javascript:x", "./%20javascript%3Ax");
  expect_href("\njavascript:x", "./%0Ajavascript%3Ax");
  expect_href("data:text/html,<script>x</script>", "./data%3Atext/html%2C%3Cscript%3Ex%3C/script%3E");
  expect_href("\"><img onerror=x>", "./%22%3E%3Cimg%20onerror%3Dx%3E");
  expect_href("100% %2e%2e%2f", "./100%25%20%252e%252e%252f");
  expect_href("x?y#z", "./x%3Fy%23z");
  expect_href("back\\slash", "./back%5Cslash");
  expect_href("caf\xc3\xa9", "./caf%C3%A9");
  expect_href("\x7f\xff", "./%7F%FF");
}

static void test_plain_paths(void **state) {
  (void)state;
  expect_href("trace.json.gz", "./trace.json.gz");
  expect_href("run-1/rank_0.json~", "./run-1/rank_0.json~");
  expect_href("./a", "./a"); /* already dotted: no second "./" */
  expect_href("../../a/b", "../../a/b");
  expect_href("..a", "./..a"); /* a name starting with dots is not a parent */
  expect_href(".hidden", "./.hidden");
}

static void test_no_link(void **state) {
  (void)state;
  char *h = (char *)1;
  assert_int_equal(ft__report_href("/abs/trace.json", &h), FT_EINVAL);
  assert_null(h);
  h = (char *)1;
  assert_int_equal(ft__report_href("", &h), FT_EINVAL);
  assert_null(h);
}

/* Every byte: the link holds only unreserved characters, '/' and %XX, starts "./",
 * has no ':' before a '/' (no scheme), and decodes back to the name. */
static void test_every_byte(void **state) {
  (void)state;
  for (int c = 1; c < 256; c++) {
    char rel[4] = {'a', (char)c, 'b', 0}, *h;
    assert_int_equal(ft__report_href(rel, &h), FT_OK);
    assert_memory_equal(h, "./", 2);
    char back[4] = {0};
    size_t n = 0;
    for (const char *p = h + 2; *p; p++) {
      if (*p == '%') {
        unsigned v;
        assert_int_equal(sscanf(p + 1, "%2X", &v), 1);
        assert_true(strchr("0123456789ABCDEF", p[1]) && strchr("0123456789ABCDEF", p[2]));
        back[n++] = (char)v;
        p += 2;
      } else {
        assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/", *p));
        back[n++] = *p;
      }
      assert_true(n < sizeof back);
    }
    assert_string_equal(back, rel);
    assert_null(strchr(h, ':'));
    free(h);
  }
}

static void expect_relative(const char *dir, const char *file, const char *want) {
  char *r = ft__report_relative(dir, file);
  assert_non_null(r);
  assert_string_equal(r, want);
  free(r);
}

static void test_relative(void **state) {
  (void)state;
  expect_relative("/a/b", "/a/b/t.json", "t.json");
  expect_relative("/a/b", "/a/b/c/t.json", "c/t.json");
  expect_relative("/a/b/c", "/x/t.json", "../../../x/t.json");
  expect_relative("/a/bc", "/a/b/t.json", "../b/t.json"); /* a shared prefix is not a shared directory */
  expect_relative("/a/b", "/a/bc/t.json", "../bc/t.json");
  expect_relative("/", "/t.json", "t.json");
  expect_relative("/", "/a/t.json", "a/t.json");
}

static void test_linkable(void **state) {
  (void)state;
  const char *yes[] = {"/d/t.json",       "/d/t.json.gz", "/d/T.JSON",
                       "/d/t.Gz",         "/d/rank0",     "/d.x/javascript:alert(1)",
                       "t.pt.trace.json", "/d/.json"};
  const char *no[] = {"/d/t.html", "/d/t.json.html", "/d/t.svg",       "/d/t.xml", "/d/t.htm",
                      "/d/t.",     "/d/.bashrc",     "/d/t.json.gz.1", "t.mhtml"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) assert_true(ft__report_linkable(yes[i]));
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) assert_false(ft__report_linkable(no[i]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hostile_names), cmocka_unit_test(test_plain_paths), cmocka_unit_test(test_no_link),
      cmocka_unit_test(test_every_byte),    cmocka_unit_test(test_relative),    cmocka_unit_test(test_linkable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
