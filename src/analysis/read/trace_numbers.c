/* The trace reader's general number path: any JSON spelling of a number, scaled by a power of ten, exactly. */
#include "trace_numbers.h"

/* The JSON number s[0, n) times 10^scale, truncated toward zero: its sign and
 * magnitude when that is at most max (FT__NUM_RANGE past it), with *exact (may be
 * NULL) telling whether nothing was truncated. Exact for any spelling: "1e12",
 * "100000000000000000000e-18", 20 000 digits; no floating point. */
enum ft__num ft__decimal(const char *s, size_t n, int scale, uint64_t max, bool *neg, uint64_t *mag, bool *exact) {
  size_t i = n && s[0] == '-', int_end = i, frac = 0, frac_end = 0;
  *neg = i;
  while (int_end < n && ft__is_digit(s[int_end])) int_end++;
  if (int_end == i) return FT__NUM_BAD;
  frac = frac_end = int_end;
  if (int_end < n && s[int_end] == '.') {
    frac = frac_end = int_end + 1;
    while (frac_end < n && ft__is_digit(s[frac_end])) frac_end++;
  }
  int64_t e = 0; /* saturated far beyond any digit count that matters */
  size_t k = frac_end;
  if (k < n && (s[k] | 0x20) == 'e') {
    bool eneg = ++k < n && s[k] == '-';
    if (k < n && (s[k] == '-' || s[k] == '+')) k++;
    if (k == n || !ft__is_digit(s[k])) return FT__NUM_BAD;
    for (; k < n && ft__is_digit(s[k]); k++)
      if (e < 1000000000) e = e * 10 + (s[k] - '0');
    if (eneg) e = -e;
  }
  if (k != n) return FT__NUM_BAD;
  /* the digits d[0, len) (integer then fraction); the point falls after `point` of them */
  size_t n_int = int_end - i, len = n_int + (frac_end - frac);
#define DIGIT(t) (s[(t) < n_int ? i + (t) : frac + (t)-n_int] - '0')
  size_t z = 0;
  while (z < len && DIGIT(z) == 0) z++;
  int64_t point = (int64_t)n_int + e + scale;
  uint64_t v = 0;
  if (z < len && point - (int64_t)z > 20) return FT__NUM_RANGE; /* 21 digits exceed 2^64 */
  /* every digit zero: 0 whatever the exponent (looping up to "0e10000000000"'s point took seconds); else the loop
   * runs at most 21 times past z */
  int64_t end = z < len ? point : (int64_t)z;
  for (int64_t t = (int64_t)z; t < end; t++) {
    unsigned d = (size_t)t < len ? (unsigned)DIGIT((size_t)t) : 0;
    if (v > (UINT64_MAX - d) / 10) return FT__NUM_RANGE;
    v = v * 10 + d;
  }
  if (v > max) return FT__NUM_RANGE;
  if (exact) {
    *exact = true;
    for (size_t t = point > (int64_t)z ? (size_t)point : z; *exact && t < len; t++) *exact = DIGIT(t) == 0;
  }
#undef DIGIT
  *mag = v;
  return FT__NUM_OK;
}
