/* The few core services a tracer file may use (diagnostics, clock, number text). */
#ifndef FLAGTRACE_TRACER_SUPPORT_H
#define FLAGTRACE_TRACER_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FT__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FT__PRINTF(a, b)
#endif

/* Diagnostics on stderr, one line each: ft__log only when FLAGOS_TRACE is on;
 * ft__warn always (the two severe conditions of seed §4, and lost data). */
void ft__log(const char *fmt, ...) FT__PRINTF(1, 2);
void ft__warn(const char *fmt, ...) FT__PRINTF(1, 2);

/* CLOCK_REALTIME in ns: the clock every event uses (seed §3.3). */
uint64_t ft__now_ns(void);

/* The shortest text that reads back as the same double, laid out as kineto's
 * fmt "{}" prints it (fixed for exponents -4..15, else d.ddde±XX; 8e-05, 19.69..,
 * 100). buf needs 32 bytes; returns the length written (not NUL-terminated). */
size_t ft__fmt_double(double v, char *buf);

#endif
