/* The trace reader's numbers (src/analysis/read/trace_numbers.c): exact values, and a cost bounded by the number's
 * length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>

#include "trace_numbers.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Zero digits under a huge exponent are 0, at once: the point past 10^10 digits
 * used to be walked one digit at a time (seconds a number, issue 49). */
static void test_zero_with_a_huge_exponent_is_zero_at_once(void **state) {
  (void)state;
  static const char *const zeros[] = {"0e10000000000", "-0.000e+9999999999", "0.0E999999999", "00000e5000000000",
                                      "0e99999999999999999999999"};
  for (size_t k = 0; k < sizeof zeros / sizeof *zeros; k++) {
    const char *s = zeros[k];
    double t0 = now();
    bool neg = true, exact = false;
    uint64_t mag = 1;
    assert_int_equal(ft__decimal(s, strlen(s), 3, UINT64_MAX, &neg, &mag, &exact), FT__NUM_OK);
    assert_int_equal(mag, 0);
    assert_true(exact);
    assert_int_equal(neg, s[0] == '-');
    int64_t ns = 1, v = 1;
    assert_int_equal(us_to_ns(s, strlen(s), &ns), FT__NUM_OK);
    assert_int_equal(ns, 0);
    assert_true(parse_int(s, strlen(s), &v));
    assert_int_equal(v, 0);
    assert_true(now() - t0 < 0.05); /* microseconds now; each call took about 3 s before */
  }
}

/* The other spellings keep their values: a nonzero digit under a huge exponent is
 * out of range, under a huge negative one a truncated 0. */
static void test_other_spellings_keep_their_values(void **state) {
  (void)state;
  bool neg, exact;
  uint64_t mag;
  int64_t ns;
  assert_int_equal(ft__decimal("1e10000000000", 13, 0, UINT64_MAX, &neg, &mag, &exact), FT__NUM_RANGE);
  assert_int_equal(ft__decimal("0.001e10000000000", 17, 0, UINT64_MAX, &neg, &mag, &exact), FT__NUM_RANGE);
  assert_int_equal(ft__decimal("1e-10000000000", 14, 0, UINT64_MAX, &neg, &mag, &exact), FT__NUM_OK);
  assert_int_equal(mag, 0);
  assert_false(exact);
  assert_int_equal(ft__decimal("18446744073709551615", 20, 0, UINT64_MAX, &neg, &mag, &exact), FT__NUM_OK);
  assert_int_equal(mag, UINT64_MAX);
  assert_int_equal(ft__decimal("18446744073709551616", 20, 0, UINT64_MAX, &neg, &mag, &exact), FT__NUM_RANGE);
  assert_int_equal(ft__decimal("0.00000e3", 9, 0, UINT64_MAX, &neg, &mag, &exact), FT__NUM_OK);
  assert_int_equal(mag, 0);
  assert_int_equal(us_to_ns("12.5e1", 6, &ns), FT__NUM_OK);
  assert_int_equal(ns, 125000);
  assert_int_equal(us_to_ns("-0.0000015e6", 12, &ns), FT__NUM_OK);
  assert_int_equal(ns, -1500);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zero_with_a_huge_exponent_is_zero_at_once),
      cmocka_unit_test(test_other_spellings_keep_their_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
