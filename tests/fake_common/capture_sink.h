/* A sink that keeps what a tracer hands over (events with their memory numbers,
 * correlation -> external id reports), so that a test asserts the exact contract. */
#ifndef FT_CAPTURE_SINK_H
#define FT_CAPTURE_SINK_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flagtrace/device_tracer.h"

enum { CAP_MAX = 256, CAP_NAME = 96 };

typedef struct cap_event {
  ft_device_event ev; /* name, metadata and memory point into this entry or are NULL */
  ft_memory_info mem;
  bool has_mem;
  char name[CAP_NAME];
} cap_event;

typedef struct capture {
  pthread_mutex_t mu;
  cap_event ev[CAP_MAX];
  size_t n;
  struct {
    uint32_t corr;
    uint64_t ext;
  } ext[CAP_MAX];
  size_t n_ext;
} capture;

static inline ft_status cap_on_event(void *ctx, const ft_device_event *e) {
  capture *c = ctx;
  pthread_mutex_lock(&c->mu);
  if (c->n < CAP_MAX) {
    cap_event *x = &c->ev[c->n++];
    x->ev = *e;
    snprintf(x->name, sizeof x->name, "%s", e->name ? e->name : "(null)");
    x->ev.name = x->name;
    x->ev.metadata = NULL;
    x->has_mem = e->memory != NULL;
    if (e->memory) x->mem = *e->memory;
    x->ev.memory = e->memory ? &x->mem : NULL;
  }
  pthread_mutex_unlock(&c->mu);
  return FT_OK;
}

static inline ft_status cap_on_external(void *ctx, uint32_t corr, uint64_t ext) {
  capture *c = ctx;
  pthread_mutex_lock(&c->mu);
  if (c->n_ext < CAP_MAX) {
    c->ext[c->n_ext].corr = corr;
    c->ext[c->n_ext].ext = ext;
    c->n_ext++;
  }
  pthread_mutex_unlock(&c->mu);
  return FT_OK;
}

static inline void cap_init(capture *c, ft_event_sink *sink) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
  memset(sink, 0, sizeof *sink);
  sink->event = cap_on_event;
  sink->external_id = cap_on_external;
  sink->ctx = c;
}

/* The i-th captured event of kind k (NULL when there are fewer). */
static inline const cap_event *cap_nth(const capture *c, ft_event_kind k, size_t i) {
  for (size_t j = 0; j < c->n; j++)
    if (c->ev[j].ev.kind == k && i-- == 0) return &c->ev[j];
  return NULL;
}

static inline size_t cap_count(const capture *c, ft_event_kind k) {
  size_t n = 0;
  for (size_t j = 0; j < c->n; j++) n += c->ev[j].ev.kind == k;
  return n;
}

/* The runtime event of correlation id corr (NULL when none). */
static inline const cap_event *cap_runtime(const capture *c, uint32_t corr) {
  for (size_t j = 0; j < c->n; j++)
    if (c->ev[j].ev.kind == FT_EVENT_RUNTIME && c->ev[j].ev.correlation_id == corr) return &c->ev[j];
  return NULL;
}

/* The external id reported for corr, or UINT64_MAX. */
static inline uint64_t cap_external(const capture *c, uint32_t corr) {
  for (size_t j = 0; j < c->n_ext; j++)
    if (c->ext[j].corr == corr) return c->ext[j].ext;
  return UINT64_MAX;
}

#endif
