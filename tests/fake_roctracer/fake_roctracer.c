/* A fake libroctracer64 for CI: 64-byte activity records in roctracer's layout
 * (HIP_OPS, HIP_API, EXT_API), on a clock of its own, scripted by the test. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
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

/* HIP API op ids of this fake HIP (real ones change between releases; the tracer
 * looks them up by name). hipHostAlloc is missing, as in a HIP without it. */
static const char *const op_names[] = {
    NULL,           "hipLaunchKernel",  "hipMemsetAsync",        "hipMemcpyAsync",         "hipMalloc",
    "hipFree",      "hipMallocAsync",   "hipFreeAsync",          "hipHostMalloc",          "hipHostFree",
    "hipGetDevice", "hipMallocManaged", "hipExtMallocWithFlags", "hipMallocFromPoolAsync", "hipSetDevice",
};
enum { N_OPS = sizeof op_names / sizeof op_names[0] };
static roctracer_rtapi_callback_t op_cb[N_OPS];
static void *op_arg[N_OPS];
static __thread int thread_device;

static uint32_t op_of(const char *name) {
  for (uint32_t i = 1; i < N_OPS; i++)
    if (!strcmp(op_names[i], name)) return i;
  return 0;
}

/* hip_api_data_t as ROCm 5's hip_prof_str.h lays it out (roctracer_shim.h):
 * correlation_id @0, phase @8, the call's arguments @16. */
typedef struct fake_api_data {
  uint64_t correlation_id;
  uint32_t phase;
  uint32_t pad;
  union {
    struct {
      void **ptr;
      void *ptr__val;
      size_t size;
      void *more[2]; /* stream, pool, flags: never read by the tracer */
    } alloc;
    struct {
      void *ptr;
      void *stream;
    } free;
  } args;
  uint64_t *phase_data;
} fake_api_data;
_Static_assert(offsetof(fake_api_data, args) == HIP_API_DATA_ARGS, "hip_api_data_t's arguments at 16");
_Static_assert(offsetof(fake_api_data, args.alloc.size) - offsetof(fake_api_data, args) == HIP_ARG_SIZE_AFTER_OUT_PTR,
               "an allocation's size after void** and its __val");

/* One HIP call: its callbacks at ENTER and EXIT (outside mu: a callback may call
 * hipGetDevice), what it does between them, then its activity records. */
static uint64_t hip_call(uint32_t op, fake_api_data *d, void (*body)(void *), void *ctx) {
  pthread_mutex_lock(&mu);
  uint64_t corr = next_corr++;
  roctracer_rtapi_callback_t cb = op_cb[op];
  void *arg = op_arg[op];
  pthread_mutex_unlock(&mu);
  uint64_t t0 = clock_ns();
  d->correlation_id = corr;
  d->phase = ACTIVITY_API_PHASE_ENTER;
  if (cb) cb(ACTIVITY_DOMAIN_HIP_API, op, d, arg);
  body(ctx);
  d->phase = ACTIVITY_API_PHASE_EXIT;
  if (cb) cb(ACTIVITY_DOMAIN_HIP_API, op, d, arg);
  uint64_t t1 = clock_ns();
  pthread_mutex_lock(&mu);
  if ((domains >> ACTIVITY_DOMAIN_EXT_API) & 1 && depth) {
    roctracer_record *x = add(ACTIVITY_DOMAIN_EXT_API);
    x->correlation_id = corr;
    x->u.external_id = stack[depth - 1];
  }
  if ((domains >> ACTIVITY_DOMAIN_HIP_API) & 1) {
    roctracer_record *a = add(ACTIVITY_DOMAIN_HIP_API);
    a->op = op;
    a->correlation_id = corr;
    a->begin_ns = t0;
    a->end_ns = t1;
    a->u.host.pid = (uint32_t)getpid();
    a->u.host.tid = (uint32_t)syscall(SYS_gettid);
  }
  pthread_mutex_unlock(&mu);
  return corr;
}

typedef struct alloc_body {
  void **out;
  uint64_t address;
} alloc_body;
static void do_alloc(void *ctx) {
  alloc_body *b = ctx;
  *b->out = (void *)(uintptr_t)b->address;
}
static void do_nothing(void *ctx) { (void)ctx; }
static void do_get_device(void *ctx) { *(int *)ctx = thread_device; }

EXPORT int hipGetDevice(int *device) {
  fake_api_data d;
  memset(&d, 0, sizeof d);
  d.args.free.ptr = device;
  hip_call(op_of("hipGetDevice"), &d, do_get_device, device);
  return 0;
}

static void do_set_device(void *ctx) { thread_device = *(int *)ctx; }

/* hipSetDevice(device): its callbacks and records, as any HIP call's */
EXPORT void fake_roctracer_set_device(int device) {
  fake_api_data d;
  memset(&d, 0, sizeof d);
  memcpy(&d.args, &device, sizeof device);
  hip_call(op_of("hipSetDevice"), &d, do_set_device, &device);
}

EXPORT uint64_t fake_roctracer_memory(const fake_roc_memory *m) {
  uint32_t op = op_of(m->call);
  if (!op) abort();
  fake_api_data d;
  memset(&d, 0, sizeof d);
  bool is_free = strstr(m->call, "Free") != NULL;
  if (is_free) {
    d.args.free.ptr = (void *)(uintptr_t)m->address;
    return hip_call(op, &d, do_nothing, NULL);
  }
  void *out = (void *)(uintptr_t)0xdeadbeef; /* what the caller's variable held before */
  alloc_body b = {&out, m->address};
  d.args.alloc.ptr = &out;
  d.args.alloc.ptr__val = out;
  d.args.alloc.size = m->bytes;
  return hip_call(op, &d, do_alloc, &b);
}

EXPORT roctracer_status_t roctracer_op_code(uint32_t domain, const char *str, uint32_t *op, uint32_t *kind) {
  uint32_t o = domain == ACTIVITY_DOMAIN_HIP_API && str ? op_of(str) : 0;
  if (!o) return -3; /* ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT */
  *op = o;
  if (kind) *kind = 0;
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_enable_op_callback(uint32_t domain, uint32_t op, roctracer_rtapi_callback_t cb,
                                                       void *arg) {
  if (domain != ACTIVITY_DOMAIN_HIP_API || !op || op >= N_OPS || !cb) return -3;
  pthread_mutex_lock(&mu);
  op_cb[op] = cb;
  op_arg[op] = arg;
  pthread_mutex_unlock(&mu);
  return ROCTRACER_STATUS_SUCCESS;
}
EXPORT roctracer_status_t roctracer_disable_op_callback(uint32_t domain, uint32_t op) {
  if (domain != ACTIVITY_DOMAIN_HIP_API || !op || op >= N_OPS) return -3;
  pthread_mutex_lock(&mu);
  op_cb[op] = NULL;
  pthread_mutex_unlock(&mu);
  return ROCTRACER_STATUS_SUCCESS;
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
  if (domain != ACTIVITY_DOMAIN_HIP_API || !op || op >= N_OPS) return NULL;
  return op_names[op];
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
