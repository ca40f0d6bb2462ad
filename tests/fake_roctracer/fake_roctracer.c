/* A fake libroctracer64 for CI: 64-byte activity records in roctracer's layout
 * (HIP_OPS, HIP_API, EXT_API), on a clock of its own, scripted by the test. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_roctracer.h"
#include "roctracer_shim.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static roctracer_properties_t props;
static int pool_open;
static uint32_t domains;
static uint64_t next_corr = 1;
static __thread uint64_t stack[64];
static __thread size_t depth;
static roctracer_record pending[4096];
static size_t n_pending;

static uint64_t clock_ns(void) { /* roctracer's clock: monotonic, not the epoch */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Hands the pending records to the pool's callback (under mu), in a copy that is
 * gone afterwards: the tracer must copy them. */
static void deliver(void) {
  roctracer_record *copy = malloc(n_pending * sizeof *copy + 1);
  if (!copy) abort();
  memcpy(copy, pending, n_pending * sizeof *copy);
  size_t n = n_pending;
  n_pending = 0;
  props.buffer_callback_fun((const char *)copy, (const char *)(copy + n), props.buffer_callback_arg);
  memset(copy, 0xAB, n * sizeof *copy);
  free(copy);
}

/* A full buffer (the pool's buffer_size, at most the array) goes to the callback as
 * roctracer's own pool does; a 3 s capture of a 2 ms loop fills 4096 records. */
static roctracer_record *add(uint32_t domain) {
  size_t cap = props.buffer_size / sizeof pending[0];
  if (!cap || cap > sizeof pending / sizeof pending[0]) cap = sizeof pending / sizeof pending[0];
  if (n_pending >= cap) {
    if (!pool_open) abort();
    deliver();
  }
  roctracer_record *r = &pending[n_pending++];
  memset(r, 0, sizeof *r);
  r->domain = domain;
  return r;
}

EXPORT uint64_t fake_roctracer_launch(const fake_roc_launch *l) {
  uint32_t kind = l->kind;
  const char *kernel = l->kernel;
  uint64_t bytes = l->bytes, dur = l->dur_ns;
  pthread_mutex_lock(&mu);
  uint64_t corr = next_corr++, t0 = clock_ns();
  if ((domains >> ACTIVITY_DOMAIN_EXT_API) & 1 && depth) {
    roctracer_record *x = add(ACTIVITY_DOMAIN_EXT_API);
    x->correlation_id = corr;
    x->u.external_id = stack[depth - 1];
  }
  if ((domains >> ACTIVITY_DOMAIN_HIP_API) & 1) {
    roctracer_record *a = add(ACTIVITY_DOMAIN_HIP_API);
    a->op = kind == HIP_KIND_KERNEL ? 1 : kind == HIP_KIND_FILL ? 2 : 3;
    a->correlation_id = corr;
    a->begin_ns = t0;
    a->end_ns = t0 + 300;
    a->u.host.pid = (uint32_t)getpid();
    a->u.host.tid = (uint32_t)syscall(SYS_gettid);
  }
  if ((domains >> ACTIVITY_DOMAIN_HIP_OPS) & 1) {
    roctracer_record *d = add(ACTIVITY_DOMAIN_HIP_OPS);
    d->kind = kind;
    d->op = kind == HIP_KIND_KERNEL ? HIP_OP_DISPATCH : HIP_OP_COPY;
    d->correlation_id = corr;
    d->begin_ns = t0 + 1000;
    d->end_ns = t0 + 1000 + dur;
    d->u.device.device_id = 0;
    d->u.device.queue_id = 5;
    if (kind == HIP_KIND_KERNEL) d->v.kernel_name = kernel;
    else d->v.bytes = bytes;
    roctracer_record *b = add(ACTIVITY_DOMAIN_HIP_OPS); /* barriers: not activity to show */
    b->op = HIP_OP_BARRIER;
    b->begin_ns = t0 + 10;
    b->end_ns = t0 + 20;
  }
  pthread_mutex_unlock(&mu);
  return corr;
}

EXPORT roctracer_status_t roctracer_open_pool_expl(const roctracer_properties_t *p, roctracer_pool_t **pool) {
  if (!p || !p->buffer_callback_fun || pool_open) return 1;
  props = *p;
  pool_open = 1;
  *pool = (roctracer_pool_t *)&props;
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_close_pool_expl(roctracer_pool_t *pool) {
  (void)pool;
  pool_open = 0;
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_enable_domain_activity_expl(uint32_t domain, roctracer_pool_t *pool) {
  if (!pool) return 1;
  domains |= 1u << domain;
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_disable_domain_activity(uint32_t domain) {
  domains &= ~(1u << domain);
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_flush_activity_expl(roctracer_pool_t *pool) {
  (void)pool;
  pthread_mutex_lock(&mu);
  deliver();
  pthread_mutex_unlock(&mu);
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_next_record(const roctracer_record *r, const roctracer_record **next) {
  *next = r + 1;
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_get_timestamp(uint64_t *ts) {
  *ts = clock_ns();
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT const char *roctracer_op_string(uint32_t domain, uint32_t op, uint32_t kind) {
  (void)kind;
  if (domain != ACTIVITY_DOMAIN_HIP_API) return NULL;
  return op == 1 ? "hipLaunchKernel" : op == 2 ? "hipMemsetAsync" : "hipMemcpyAsync";
}
EXPORT roctracer_status_t roctracer_activity_push_external_correlation_id(uint64_t id) {
  if (depth == 64) return 1;
  stack[depth++] = id;
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_activity_pop_external_correlation_id(uint64_t *last) {
  if (!depth) return 1;
  if (last) *last = stack[depth - 1];
  depth--;
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT const char *roctracer_error_string(void) { return "fake roctracer error"; }
