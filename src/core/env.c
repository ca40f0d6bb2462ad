/* Environment switches (FLAGOS_TRACE), diagnostics on stderr, clocks. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

ft_status ft__parse_bool(const char *text, bool *out) {
  static const char *const yes[] = {"1", "true", "on", "yes"};
  static const char *const no[] = {"0", "false", "off", "no"};
  if (!text || !out) return FT_EINVAL;
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (strcasecmp(text, yes[i]) == 0) {
      *out = true;
      return FT_OK;
    }
    if (strcasecmp(text, no[i]) == 0) {
      *out = false;
      return FT_OK;
    }
  }
  return FT_EINVAL;
}

bool ft__env_flag(const char *name) {
  const char *v = getenv(name);
  bool on = false;
  if (v && *v && ft__parse_bool(v, &on) != FT_OK) {
    ft__warn("%s='%s' is not a boolean (use 1/true/on/yes or 0/false/off/no); read as off", name, v);
    on = false;
  }
  return on;
}

/* -1 = not read yet, 0 = off, 1 = on. Reading twice concurrently is harmless: both
 * threads compute the same answer, and the CAS makes only one of them warn. */
static atomic_int trace_state = -1;

bool ft__trace_enabled(void) {
  int st = atomic_load_explicit(&trace_state, memory_order_acquire);
  if (st >= 0) return st == 1;
  const char *v = getenv("FLAGOS_TRACE");
  bool on = false;
  bool bad = v && *v && ft__parse_bool(v, &on) != FT_OK;
  int expected = -1;
  if (atomic_compare_exchange_strong(&trace_state, &expected, on ? 1 : 0) && bad)
    ft__warn(
        "FLAGOS_TRACE='%s' is not a boolean (use 1/true/on/yes or 0/false/off/no); "
        "diagnostics stay off",
        v);
  return on;
}

bool ft__memory_allowed(void) {
  const char *v = getenv("FLAGOS_TRACE_MEMORY");
  bool on = true;
  if (v && *v && ft__parse_bool(v, &on) != FT_OK) {
    static atomic_bool said;
    if (!atomic_exchange(&said, true))
      ft__warn("FLAGOS_TRACE_MEMORY='%s' is not a boolean (use 1/true/on/yes or 0/false/off/no); ignored", v);
    on = true;
  }
  return on;
}

void ft__trace_reset_for_tests(void) { atomic_store(&trace_state, -1); }

static void vemit(const char *fmt, va_list ap) {
  /* One fprintf per line so lines from several threads do not interleave. */
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  fprintf(stderr, "flagtrace: %s\n", line);
}

void ft__log(const char *fmt, ...) {
  if (!ft__trace_enabled()) return;
  va_list ap;
  va_start(ap, fmt);
  vemit(fmt, ap);
  va_end(ap);
}

void ft__warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vemit(fmt, ap);
  va_end(ap);
}

uint64_t ft__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t ft__gettid(void) { return (uint32_t)syscall(SYS_gettid); }

int ft_diagnostics_enabled(void) { return ft__trace_enabled(); }
