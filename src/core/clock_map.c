/* Affine mapping of a vendor's own clock onto CLOCK_REALTIME, from two samples. */
#include "tracer_support.h"

/* a record further than this outside the session is not a real timestamp */
#define IMPLAUSIBLE_NS 10000000000ull

uint64_t ft__clock_map_apply(const ft__clock_map *m, uint64_t v) {
  long double span = (long double)m->v1 - (long double)m->v0;
  long double scale = span > 0 ? ((long double)m->r1 - (long double)m->r0) / span : 1.0L;
  long double r = (long double)m->r0 + ((long double)v - (long double)m->v0) * scale;
  /* a garbage timestamp may map past 2^64: saturate (a cast would be UB), and the
   * span check then calls it implausible */
  return r <= 0 ? 0 : r + 0.5L >= 0x1p64L ? UINT64_MAX : (uint64_t)(r + 0.5L);
}

int ft__clock_map_span(const ft__clock_map *m, uint64_t start, uint64_t end, uint64_t *s, uint64_t *e) {
  if (!start || end < start) return 0;
  *s = ft__clock_map_apply(m, start);
  *e = ft__clock_map_apply(m, end);
  return *s + IMPLAUSIBLE_NS >= m->r0 && *e <= m->r1 + IMPLAUSIBLE_NS;
}

bool ft__clock_sample(ft__vendor_clock_fn read, void *ctx, uint64_t *v, uint64_t *r) {
  /* Three tries; the one bracketed most tightly by CLOCK_REALTIME reads wins (a
   * preemption between the reads skews one pair, rarely all three), and its
   * realtime is the bracket's midpoint. Over a session of milliseconds a 5 us skew
   * is already a 0.1 % rate error. */
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    uint64_t vv, before = ft__now_ns();
    if (!read(ctx, &vv)) return false;
    uint64_t after = ft__now_ns(), width = after - before;
    if (width < best) {
      best = width;
      *v = vv;
      *r = before + width / 2;
    }
  }
  return true;
}
