/* The tracer of builds without a device activity API: never available, says why. */
#include <stdio.h>
#include <stdlib.h>

#include "flagtrace/device_tracer.h"
#include "tracer_support.h"

#ifndef FT_ACCELERATOR_NAME
#define FT_ACCELERATOR_NAME "cpu"
#endif

static ft_status un_start(ft_tracer *t, const ft_event_sink *sink, unsigned kinds) {
  (void)t, (void)sink, (void)kinds;
  return FT_EUNAVAILABLE;
}
static ft_status un_stop(ft_tracer *t) {
  (void)t;
  return FT_OK;
}
static ft_status un_push(ft_tracer *t, uint64_t id) {
  (void)t, (void)id;
  return FT_OK;
}
static ft_status un_pop(ft_tracer *t) {
  (void)t;
  return FT_OK;
}
static void un_destroy(ft_tracer *t) { free(t); }

static const ft_tracer_ops unavailable_ops = {
    .name = "unavailable",
    .runtime_category = "cuda_runtime",
    .driver_category = "cuda_driver",
    .available = ft__tracer_available,
    .start = un_start,
    .stop = un_stop,
    .push_correlation = un_push,
    .pop_correlation = un_pop,
    .device_count = NULL,
    .dropped_records = ft__tracer_dropped,
    .last_error = ft__tracer_last_error,
    .destroy = un_destroy,
};

ft_status ft_make_device_tracer(ft_tracer **out) {
  ft__tracer_base *t = calloc(1, sizeof *t);
  if (!t) return FT_ENOMEM;
  t->tracer.ops = &unavailable_ops;
  snprintf(t->why, sizeof t->why, "%s",
           "this flagtrace was built without a device tracer (FLAGOS_ACCELERATOR=" FT_ACCELERATOR_NAME
           "); no device activity was collected");
  *out = &t->tracer;
  return FT_OK;
}
