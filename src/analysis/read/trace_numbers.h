/* The trace reader's numbers: a JSON number as whole ns from us, or as a whole number, exactly and without floating
 * point. */
#ifndef FT_TRACE_NUMBERS_H
#define FT_TRACE_NUMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h" /* FT_STATS_MAX_US */

enum ft__num { FT__NUM_OK, FT__NUM_BAD, FT__NUM_RANGE };

static inline bool ft__is_digit(char c) { return c >= '0' && c <= '9'; }

/* The JSON number s[0, n) times 10^scale, truncated toward zero, for the
 * spellings the fast paths below leave (trace_numbers.c). */
__attribute__((cold)) enum ft__num ft__decimal(const char *s, size_t n, int scale, uint64_t max, bool *neg,
                                               uint64_t *mag, bool *exact);

/* "12.345" (us) to ns, truncated toward zero, within +-FT_STATS_MAX_US. The usual
 * spelling (no exponent, up to 16 digits before the point) without decimal(). */
static inline enum ft__num us_to_ns(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  bool neg = n && s[0] == '-';
  if (neg) i++;
  int64_t whole = 0, frac = 0;
  int frac_digits = 0;
  size_t start = i;
  for (; i < n && ft__is_digit(s[i]); i++) {
    if (i - start == 16) goto general; /* a 17th digit: beyond the range, unless an exponent says otherwise */
    whole = whole * 10 + (s[i] - '0');
  }
  if (i < n && s[i] == '.') {
    for (i++; i < n && ft__is_digit(s[i]); i++)
      if (frac_digits < 3) frac = frac * 10 + (s[i] - '0'), frac_digits++;
  }
  if (i == start) return FT__NUM_BAD;
  if (i < n) goto general; /* an exponent */
  if (whole > FT_STATS_MAX_US) return FT__NUM_RANGE;
  while (frac_digits < 3) frac *= 10, frac_digits++;
  *out = (neg ? -1 : 1) * (whole * 1000 + frac);
  return FT__NUM_OK;
general:;
  uint64_t mag;
  enum ft__num v = ft__decimal(s, n, 3, (uint64_t)FT_STATS_MAX_US * 1000 + 999, &neg, &mag, NULL);
  if (v == FT__NUM_OK) *out = neg ? -(int64_t)mag : (int64_t)mag;
  return v;
}

/* A JSON number that is a whole number within +-INT64_MAX ("5", "5.0", "1e12"),
 * for pid, External id and bytes; false when it is not one. */
static inline bool parse_int(const char *s, size_t n, int64_t *out) {
  size_t i = n && s[0] == '-';
  bool neg = i;
  uint64_t v = 0;
  if (i == n || n - i > 18) goto general;
  for (; i < n && ft__is_digit(s[i]); i++) v = v * 10 + (uint64_t)(s[i] - '0');
  if (i < n) goto general;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return true;
general:;
  bool exact;
  if (ft__decimal(s, n, 0, (uint64_t)INT64_MAX, &neg, &v, &exact) != FT__NUM_OK || !exact) return false;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return true;
}

#endif
