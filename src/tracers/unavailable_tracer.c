/* The tracer of builds without a device activity API: never available, says why. */
#include <stdlib.h>

#include "flagtrace/device_tracer.h"

#ifndef FT_ACCELERATOR_NAME
#define FT_ACCELERATOR_NAME "cpu"
#endif

static bool un_available(const ft_tracer *t, const char **why) {
  (void)t;
  if (why)
    *why = "this flagtrace was built without a device tracer (FLAGOS_ACCELERATOR="
           FT_ACCELERATOR_NAME "); no device activity was collected";
  return false;
}
static ft_status un_start(ft_tracer *t, const ft_event_sink *sink, unsigned kinds) {
  (void)t, (void)sink, (void)kinds;
  return FT_EUNAVAILABLE;
}
static ft_status un_stop(ft_tracer *t) { (void)t; return FT_OK; }
static ft_status un_drain(ft_tracer *t) { (void)t; return FT_OK; }
static ft_status un_push(ft_tracer *t, uint64_t id) { (void)t, (void)id; return FT_OK; }
static ft_status un_pop(ft_tracer *t) { (void)t; return FT_OK; }
static int un_device_count(const ft_tracer *t) { (void)t; return 0; }
static uint64_t un_dropped(const ft_tracer *t) { (void)t; return 0; }
static const char *un_last_error(const ft_tracer *t) { (void)t; return ""; }
static void un_destroy(ft_tracer *t) { free(t); }

static const ft_tracer_ops unavailable_ops = {
    .name = "unavailable",
    .runtime_category = "cuda_runtime",
    .driver_category = "cuda_driver",
    .available = un_available,
    .start = un_start,
    .stop = un_stop,
    .drain = un_drain,
    .push_correlation = un_push,
    .pop_correlation = un_pop,
    .device_count = un_device_count,
    .dropped_records = un_dropped,
    .last_error = un_last_error,
    .destroy = un_destroy,
};

ft_status ft_make_device_tracer(ft_tracer **out) {
  ft_tracer *t = malloc(sizeof *t);
  if (!t) return FT_ENOMEM;
  t->ops = &unavailable_ops;
  *out = t;
  return FT_OK;
}
