/* Unit tests: FLAGOS_TRACE boolean parsing and its once-only warning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static void test_parse_bool(void **state) {
  (void)state;
  static const char *const on[] = {"1", "true", "TRUE", "On", "yes", "YeS"};
  static const char *const off[] = {"0", "false", "OFF", "no", "No"};
  static const char *const bad[] = {"", "maybe", "2", "yess", " 1", "t", "y"};
  bool b;
  for (size_t i = 0; i < sizeof on / sizeof *on; i++) {
    b = false;
    assert_int_equal(ft__parse_bool(on[i], &b), FT_OK);
    assert_true(b);
  }
  for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
    b = true;
    assert_int_equal(ft__parse_bool(off[i], &b), FT_OK);
    assert_false(b);
  }
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_int_equal(ft__parse_bool(bad[i], &b), FT_EINVAL);
}

/* Captures stderr while f runs; returns what was written (malloc'ed). */
static char *capture_stderr(bool (*f)(void), bool *result) {
  fflush(stderr);
  int saved = dup(2);
  char path[] = "/tmp/ft_env_XXXXXX";
  int fd = mkstemp(path);
  dup2(fd, 2);
  *result = f();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  off_t n = lseek(fd, 0, SEEK_END);
  char *buf = calloc(1, (size_t)n + 1);
  pread(fd, buf, (size_t)n, 0);
  close(fd);
  unlink(path);
  return buf;
}

static bool read_twice(void) {
  bool a = ft__trace_enabled();
  bool b = ft__trace_enabled();
  return a || b;
}

static void test_flagos_trace_values(void **state) {
  (void)state;
  bool r;
  setenv("FLAGOS_TRACE", "ON", 1);
  ft__trace_reset_for_tests();
  char *out = capture_stderr(read_twice, &r);
  assert_true(r);
  assert_string_equal(out, "");
  free(out);

  setenv("FLAGOS_TRACE", "0", 1);
  ft__trace_reset_for_tests();
  out = capture_stderr(read_twice, &r);
  assert_false(r);
  assert_string_equal(out, "");
  free(out);

  /* unrecognized: off, and exactly one warning line naming the value */
  setenv("FLAGOS_TRACE", "maybe", 1);
  ft__trace_reset_for_tests();
  out = capture_stderr(read_twice, &r);
  assert_false(r);
  assert_non_null(strstr(out, "FLAGOS_TRACE='maybe'"));
  assert_null(strchr(out, '\n') == NULL ? NULL : strchr(strchr(out, '\n') + 1, '\n'));
  free(out);

  unsetenv("FLAGOS_TRACE");
  ft__trace_reset_for_tests();
  out = capture_stderr(read_twice, &r);
  assert_false(r);
  assert_string_equal(out, "");
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_bool),
      cmocka_unit_test(test_flagos_trace_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
