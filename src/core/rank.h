/* One reading of RANK / WORLD_SIZE / LOCAL_RANK for the C API and the injection (libc only). */
#ifndef FLAGTRACE_RANK_H
#define FLAGTRACE_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* A rank from the environment: decimal digits only (no sign, space, or other text),
 * below 2^30. -1 when unset or empty; -2 when set but not such a number. */
static inline long ft__env_decimal(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return -1;
  long x = 0;
  for (const char *p = v; *p; p++) {
    if (*p < '0' || *p > '9' || p - v > 9) return -2;
    x = x * 10 + (*p - '0');
  }
  return x < (1l << 30) ? x : -2;
}

/* Whether the variable is set to decimal digits only (of any length). */
static inline bool ft__env_digits(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return false;
  for (; *v; v++)
    if (*v < '0' || *v > '9') return false;
  return true;
}

/* The first 32 bytes of an environment value for a one-line message: control bytes
 * as '?' (RANK=$'a\nb' must not split the line). */
static inline const char *ft__env_shown(const char *name, char *buf, size_t len) {
  const char *v = getenv(name);
  size_t i = 0;
  for (; v && v[i] && i < 32 && i + 1 < len; i++) buf[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
  buf[i] = '\0';
  return buf;
}

/* RANK and WORLD_SIZE, checked together: *rank and *world_size get -1 for unknown.
 * A value that is set but is no rank (text, a sign, a path, a line break) or a rank
 * not below a known WORLD_SIZE is unknown too, and why (len bytes) says so in one
 * line; why is "" when everything set was used. */
static inline void ft__env_rank(int *rank, int *world_size, char *why, size_t len) {
  long r = ft__env_decimal("RANK"), w = ft__env_decimal("WORLD_SIZE");
  char shown[40];
  if (why && len) why[0] = '\0';
  if (w == -2 || w == 0) {
    if (why && w == -2 && ft__env_digits("WORLD_SIZE"))
      snprintf(why, len, "WORLD_SIZE=%s is not a world size: flagtrace takes world sizes below 2^30 (1073741824)",
               ft__env_shown("WORLD_SIZE", shown, sizeof shown));
    else if (why)
      snprintf(why, len, "WORLD_SIZE='%s' is not a world size (a positive decimal number)",
               ft__env_shown("WORLD_SIZE", shown, sizeof shown));
    w = -1;
  }
  if (r == -2) {
    if (why && ft__env_digits("RANK")) /* a number, just too large: say the limit, not "not a number" */
      snprintf(why, len, "RANK=%s is not a rank: flagtrace takes ranks below 2^30 (1073741824): the rank is unknown",
               ft__env_shown("RANK", shown, sizeof shown));
    else if (why)
      snprintf(why, len, "RANK='%s' is not a rank (a decimal number): the rank is unknown",
               ft__env_shown("RANK", shown, sizeof shown));
    r = -1;
  } else if (r >= 0 && w > 0 && r >= w) {
    if (why) snprintf(why, len, "RANK=%ld is not below WORLD_SIZE=%ld: the rank is unknown", r, w);
    r = -1;
  }
  *rank = (int)r;
  *world_size = (int)w;
}

/* What %r names: RANK when it is a rank, else LOCAL_RANK when it is one, else NULL
 * (the caller writes "norank"); digits only, so a file name can never leave its
 * directory or hold a line break. */
static inline const char *ft__env_rank_text(void) {
  int r, w;
  ft__env_rank(&r, &w, NULL, 0);
  if (r >= 0) return getenv("RANK");
  long l = ft__env_decimal("LOCAL_RANK");
  return l >= 0 ? getenv("LOCAL_RANK") : NULL;
}

#endif
