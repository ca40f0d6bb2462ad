/* What every tracer shares: the armed-tracer claim, the common ops slots, emitting. */
#include <stdio.h>

#include "tracer_support.h"

static _Atomic(ft__tracer_base *) active;

ft_status ft__tracer_claim(ft__tracer_base *b, const ft_event_sink *sink, unsigned kinds) {
  if (!b->loaded) return FT_EUNAVAILABLE;
  ft__tracer_base *none = NULL;
  if (!atomic_compare_exchange_strong(&active, &none, b)) {
    snprintf(b->err, sizeof b->err, "another tracer instance is armed");
    return FT_EBUSY;
  }
  b->sink = sink;
  b->kinds = kinds;
  atomic_store(&b->dropped, 0);
  return FT_OK;
}

void ft__tracer_release(ft__tracer_base *b) {
  b->armed = false;
  ft__tracer_base *me = b;
  atomic_compare_exchange_strong(&active, &me, NULL);
}

ft__tracer_base *ft__tracer_active(void) { return atomic_load(&active); }

bool ft__tracer_available(const ft_tracer *t, const char **why) {
  const ft__tracer_base *b = (const ft__tracer_base *)t;
  if (!b->loaded && why) *why = b->why;
  return b->loaded;
}

uint64_t ft__tracer_dropped(const ft_tracer *t) { return atomic_load(&((const ft__tracer_base *)t)->dropped); }

const char *ft__tracer_last_error(const ft_tracer *t) { return ((const ft__tracer_base *)t)->err; }

void ft__tracer_emit(ft__tracer_base *b, ft_device_event *ev, const ft_kv *md, size_t n) {
  ev->metadata = md;
  ev->n_metadata = n;
  ft_status st = b->sink->event(b->sink->ctx, ev);
  if (st == FT_ENOMEM) ft__warn("%s: out of memory recording an event; it is lost", b->tracer.ops->name);
  else if (st) /* a memory event without its numbers or with an unknown op, ... */
    ft__warn("%s: an event was refused (%s); it is lost", b->tracer.ops->name, ft_strerror(st));
}

void ft__tracer_external(ft__tracer_base *b, uint32_t corr, uint64_t external_id) {
  if (b->sink->external_id(b->sink->ctx, corr, external_id) != FT_OK)
    ft__warn("%s: out of memory recording a correlation; attribution may be lost", b->tracer.ops->name);
}

void ft__tracer_call_span(ft__tracer_base *b, uint32_t corr, uint32_t tid, uint64_t start_ns, uint64_t end_ns) {
  if (b->sink->call_span && b->sink->call_span(b->sink->ctx, corr, tid, start_ns, end_ns) != FT_OK)
    ft__warn("%s: out of memory recording a call; attribution may be lost", b->tracer.ops->name);
}

void ft__buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = ft__pool_get(size);
  *max_records = 0;
}

bool ft__tracer_open(ft__tracer_base *b, const char *const *candidates, size_t n, const char *not_found,
                     ft__load_symbols_fn load, void *api) {
  b->loaded =
      ft__open_vendor_library(candidates, n, not_found, load, api, b->path, sizeof b->path, b->why, sizeof b->why);
  ft__log("%s: %s", b->tracer.ops->name, b->loaded ? b->path : b->why);
  return b->loaded;
}
