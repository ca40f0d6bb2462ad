/* What the tracers that decode CUPTI-shaped records at stop share: closing the clock
 * map, walking the held buffers with the vendor's iterator, copies and sets. */
#include <stdio.h>

#include "tracer_support.h"

typedef struct walk {
  const ft__stop_decoder *d;
  uint64_t implausible;
} walk;

static void decode_buffer(void *ctx, uint8_t *buf, size_t valid) {
  walk *w = ctx;
  const ft__stop_decoder *d = w->d;
  const void *rec = NULL;
  /* a record is at least its 4-byte kind: more calls than that is a stuck iterator */
  for (size_t n = 0, bound = valid / 4 + 1; n < bound; n++) {
    int r = d->next(d->ctx, buf, valid, &rec);
    if (r == d->end) return;
    if (r != d->success) {
      ft__warn(
          "%s: reading an activity buffer failed (result %d; %d is the end-of-buffer value); the rest of it "
          "is lost",
          d->who, r, d->end);
      return;
    }
    if (!d->decode(d->ctx, rec)) w->implausible++;
  }
}

uint64_t ft__decode_at_stop(ft__held *held, ft__clock_map *clock, ft__vendor_clock_fn read, const char *read_err,
                            const ft__stop_decoder *d) {
  if (!ft__clock_sample(read, d->ctx, &clock->v1, &clock->r1)) {
    clock->v1 = clock->v0, clock->r1 = clock->r0; /* offset only */
    ft__warn("%s: no clock sample at stop (%s); mapping by the start offset only", d->who, read_err);
  }
  ft__log("%s: clock: %llu %s ns = %llu realtime ns over the session", d->who,
          (unsigned long long)(clock->v1 - clock->v0), d->who, (unsigned long long)(clock->r1 - clock->r0));
  walk w = {d, 0};
  ft__held_take_all(held, decode_buffer, &w);
  if (w.implausible)
    ft__warn("%s: %llu records with implausible timestamps were dropped (counted in dropped_records)", d->who,
             (unsigned long long)w.implausible);
  return w.implausible;
}

bool ft__emit_transfer(ft__tracer_base *b, const ft__clock_map *clock, const ft__transfer *x) {
  uint64_t s, e;
  if (!ft__clock_map_span(clock, x->start, x->end, &s, &e)) return false;
  char ctx[32], bytes[32], extra[32];
  snprintf(ctx, sizeof ctx, "%u", x->context);
  snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)x->bytes);
  snprintf(extra, sizeof extra, "%llu", (unsigned long long)x->extra);
  ft_kv md[3] = {{"context", ctx}, {"bytes", bytes}, {x->extra_key, extra}};
  bool copy = x->kind == FT_EVENT_MEMCPY;
  ft_device_event ev = {.kind = x->kind,
                        .start_ns = s,
                        .end_ns = e,
                        .correlation_id = x->correlation_id,
                        .device = x->device,
                        .stream = x->stream,
                        .name = copy ? "Memcpy" : "Memset"};
  ft__tracer_emit(b, &ev, md, 3);
  return true;
}
