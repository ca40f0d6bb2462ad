/* Hygon DCU / AMD roctracer tracer: HIP_OPS (kernels, copies, fills) and HIP API
 * activity through one pool, external ids from EXT_API records, allocations from
 * HIP API callbacks' arguments, the roctracer clock mapped onto CLOCK_REALTIME.
 * Verified by decoding records we synthesize (CI). */
#define _GNU_SOURCE
#define FT__TRACER_NAME "roctracer"
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flagtrace/device_tracer.h"
#include "roctracer_shim.h"
#include "tracer_support.h"

/* The HIP calls whose arguments say what was allocated or freed (hip_prof_str.h's
 * argument structs, roctracer_shim.h's layout): the address through the first
 * parameter (void **out at EXIT for allocations, the pointer itself at ENTER for
 * frees) and the size after the out pointer and its __val. Pitched, 3D and array
 * allocations are left out: their bytes are not one argument. */
typedef struct mem_call {
  const char *name;
  bool free;
  ft_memory_kind kind;
} mem_call;
static const mem_call mem_calls[] = {
    {"hipMalloc", false, FT_MEMKIND_DEVICE},
    {"hipExtMallocWithFlags", false, FT_MEMKIND_DEVICE},
    {"hipMallocAsync", false, FT_MEMKIND_DEVICE},
    {"hipMallocFromPoolAsync", false, FT_MEMKIND_DEVICE},
    {"hipMallocManaged", false, FT_MEMKIND_MANAGED},
    {"hipHostMalloc", false, FT_MEMKIND_PINNED},
    {"hipHostAlloc", false, FT_MEMKIND_PINNED},
    {"hipMallocHost", false, FT_MEMKIND_PINNED},
    {"hipFree", true, FT_MEMKIND_DEVICE},
    {"hipFreeAsync", true, FT_MEMKIND_DEVICE},
    {"hipHostFree", true, FT_MEMKIND_PINNED},
    {"hipFreeHost", true, FT_MEMKIND_PINNED},
};
/* hipSetDevice is watched too (last), so that a thread's device is asked again */
enum { N_MEM_CALLS = sizeof mem_calls / sizeof mem_calls[0], N_WATCHED = N_MEM_CALLS + 1 };

/* When and on which thread we asked HIP for the device: that hipGetDevice's
 * HIP_API record (inside the window, on that thread) is ours, not the program's. */
typedef struct query_window {
  uint32_t tid;
  uint64_t q0, q1; /* roctracer's clock */
} query_window;

/* One allocation or free seen in a callback, kept until stop (the clock mapping). */
typedef struct mem_op {
  uint64_t ts, address, bytes;
  uint32_t corr, tid, device;
  uint8_t call; /* index into mem_calls */
} mem_op;

typedef struct roc_tracer {
  ft__tracer_base base; /* first: loaded, path, why, err, sink, armed, kinds, dropped */
  ft__roctracer_api api;
  roctracer_pool_t *pool;
  ft__clock_map clock;
  /* roctracer's records live in its buffer only during the callback: copied here,
   * decoded at stop once the clock mapping is known */
  pthread_mutex_t mu;
  roctracer_record *recs;
  size_t n_recs, recs_cap;
  uint64_t lost; /* records we could not keep (out of memory) */
  uint64_t dropped_untimed;
  /* memory: the HIP API op ids of mem_calls (and hipSetDevice, last) this HIP
   * has, armed for callbacks; what they saw; our own device queries; this start's
   * number (a thread's cached device is this start's or asked again) */
  uint32_t watched_op[N_WATCHED];
  bool watched[N_WATCHED];
  uint32_t get_device_op;
  bool has_get_device_op;
  uint64_t gen;
  mem_op *mem;
  size_t n_mem, mem_cap;
  query_window *hidden;
  size_t n_hidden, hidden_cap;
} roc_tracer;

/* 64-bit correlation ids go to flows as 32-bit ones; roctracer counts from 1, so
 * a larger one means 4 G calls: it keeps no flow rather than a wrong one. */
static uint32_t corr32(uint64_t id) { return id <= UINT32_MAX ? (uint32_t)id : 0; }

/* Appends one element to *arr (capacity *cap, length *n): false when out of memory. */
static bool push(void **arr, size_t *n, size_t *cap, size_t elem, const void *v) {
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 256;
    void *p = realloc(*arr, ncap * elem);
    if (!p) return false;
    *arr = p;
    *cap = ncap;
  }
  memcpy((char *)*arr + *n * elem, v, elem);
  (*n)++;
  return true;
}

typedef int (*hip_get_device_fn)(int *device);
static _Atomic uint64_t starts; /* numbers each start: the caches' generation */
static __thread struct {
  uint64_t gen;
  uint32_t device;
} thread_device; /* the calling thread's device as last asked, for start gen */

/* dl_iterate_phdr visitor: the path of a loaded HIP runtime (AMD's or Hygon's). */
static int find_hip(struct dl_phdr_info *info, size_t size, void *out) {
  (void)size;
  const char *n = info->dlpi_name;
  if (!n || !(strstr(n, "/libamdhip64.so") || strstr(n, "/libgalaxyhip.so"))) return 0;
  snprintf(out, PATH_MAX, "%s", n);
  return 1;
}

/* hipGetDevice of the program's HIP runtime: in the global scope, or in a runtime
 * loaded privately (a Python extension's dependency is RTLD_LOCAL), which
 * RTLD_NOLOAD reopens without loading anything. */
static hip_get_device_fn find_get_device(void) {
  void *f = dlsym(RTLD_DEFAULT, "hipGetDevice");
  char path[PATH_MAX] = "";
  if (!f && dl_iterate_phdr(find_hip, path)) {
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (h) f = dlsym(h, "hipGetDevice"); /* the reference is kept: the runtime stays for the process */
  }
  hip_get_device_fn fn;
  memcpy(&fn, &f, sizeof fn);
  return fn;
}

/* The calling thread's current device: asked of HIP (loaded once its calls reach
 * us) at the thread's first operation of this start and after each hipSetDevice,
 * so that hipGetDevice, which frameworks call all the time, is never hooked; the
 * query's window is kept to leave its row out. 0 when HIP has no hipGetDevice. */
static uint32_t current_device(roc_tracer *t, uint32_t tid) {
  if (thread_device.gen == t->gen) return thread_device.device;
  static _Atomic(hip_get_device_fn) get;
  hip_get_device_fn f = atomic_load(&get);
  if (!f && (f = find_get_device()) != NULL) atomic_store(&get, f);
  int dev = 0;
  query_window w = {.tid = tid};
  if (f) {
    t->api.roctracer_get_timestamp(&w.q0);
    if (f(&dev) != 0 || dev < 0) dev = 0;
    t->api.roctracer_get_timestamp(&w.q1);
    pthread_mutex_lock(&t->mu);
    if (!push((void **)&t->hidden, &t->n_hidden, &t->hidden_cap, sizeof w, &w)) t->lost++;
    pthread_mutex_unlock(&t->mu);
  }
  thread_device.gen = t->gen;
  thread_device.device = (uint32_t)dev;
  return (uint32_t)dev;
}

static uint64_t rd64(const void *p, size_t off) {
  uint64_t v;
  memcpy(&v, (const char *)p + off, 8);
  return v;
}

/* The HIP API callback of the watched calls: an allocation at EXIT (its address
 * is known then), a free at ENTER; hipSetDevice makes the thread's device unknown. */
static void mem_callback(uint32_t domain, uint32_t cid, const void *data, void *arg) {
  roc_tracer *t = arg;
  if (domain != ACTIVITY_DOMAIN_HIP_API || !data || (ft__tracer_base *)t != ft__tracer_active()) return;
  uint32_t phase;
  memcpy(&phase, (const char *)data + HIP_API_DATA_PHASE, 4);
  uint64_t corr = rd64(data, HIP_API_DATA_CORRELATION);
  if (t->watched[N_MEM_CALLS] && cid == t->watched_op[N_MEM_CALLS]) {
    if (phase == ACTIVITY_API_PHASE_EXIT) thread_device.gen = 0; /* asked again at the next operation */
    return;
  }
  size_t i = 0;
  while (i < N_MEM_CALLS && !(t->watched[i] && t->watched_op[i] == cid)) i++;
  if (i == N_MEM_CALLS || phase != (mem_calls[i].free ? ACTIVITY_API_PHASE_ENTER : ACTIVITY_API_PHASE_EXIT)) return;
  const char *args = (const char *)data + HIP_API_DATA_ARGS;
  mem_op m = {.corr = corr32(corr), .tid = (uint32_t)syscall(SYS_gettid), .call = (uint8_t)i};
  if (mem_calls[i].free) {
    m.address = rd64(args, HIP_ARG_FIRST); /* the size is not an argument: the core finds it */
  } else {
    void **out;
    memcpy(&out, args + HIP_ARG_FIRST, sizeof out);
    m.address = out ? (uint64_t)(uintptr_t)*out : 0;
    m.bytes = rd64(args, HIP_ARG_SIZE_AFTER_OUT_PTR);
  }
  if (!m.address) return; /* a failed allocation, or a free of NULL: no operation */
  m.device = current_device(t, m.tid);
  if (t->api.roctracer_get_timestamp(&m.ts) != ROCTRACER_STATUS_SUCCESS) m.ts = 0;
  pthread_mutex_lock(&t->mu);
  if (!push((void **)&t->mem, &t->n_mem, &t->mem_cap, sizeof m, &m)) t->lost++;
  pthread_mutex_unlock(&t->mu);
}

static int by_thread_time(const void *a, const void *b) {
  const query_window *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return (x->q0 > y->q0) - (x->q0 < y->q0);
}

/* True for the HIP_API record of one of our own device queries (windows sorted by
 * thread and time; one thread's windows never overlap). */
static bool is_hidden(const roc_tracer *t, const roctracer_record *r) {
  if (!t->has_get_device_op || r->op != t->get_device_op) return false;
  size_t lo = 0, hi = t->n_hidden; /* the first window after (tid, begin) */
  const query_window key = {.tid = r->u.host.tid, .q0 = r->begin_ns};
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (by_thread_time(&t->hidden[mid], &key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  const query_window *w = lo ? &t->hidden[lo - 1] : NULL;
  return w && w->tid == key.tid && r->end_ns <= w->q1;
}

/* Arms the HIP API callbacks of the memory calls this HIP has (ids change between
 * releases: each is looked up by name; a name it lacks is left out). */
static ft_status arm_memory(roc_tracer *t) {
  t->has_get_device_op = t->api.roctracer_op_code(ACTIVITY_DOMAIN_HIP_API, "hipGetDevice", &t->get_device_op, NULL) ==
                         ROCTRACER_STATUS_SUCCESS;
  t->gen = atomic_fetch_add(&starts, 1) + 1;
  for (size_t i = 0; i < N_WATCHED; i++) {
    const char *name = i < N_MEM_CALLS ? mem_calls[i].name : "hipSetDevice";
    uint32_t op = 0;
    t->watched[i] = false;
    if (t->api.roctracer_op_code(ACTIVITY_DOMAIN_HIP_API, name, &op, NULL) != ROCTRACER_STATUS_SUCCESS) {
      FT__LOG("%s: not in this HIP; left out", name);
      continue;
    }
    ft_status st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err,
                                t->api.roctracer_enable_op_callback(ACTIVITY_DOMAIN_HIP_API, op, mem_callback, t));
    if (st) return st;
    t->watched_op[i] = op;
    t->watched[i] = true;
  }
  return FT_OK;
}

static void disarm_memory(roc_tracer *t) {
  for (size_t i = 0; i < N_WATCHED; i++)
    if (t->watched[i]) t->api.roctracer_disable_op_callback(ACTIVITY_DOMAIN_HIP_API, t->watched_op[i]);
  memset(t->watched, 0, sizeof t->watched);
}

/* The allocations and frees the callbacks saw, on the mapped clock. */
static void emit_memory(roc_tracer *t) {
  for (size_t i = 0; i < t->n_mem; i++) {
    const mem_op *m = &t->mem[i];
    uint64_t at, unused;
    if (!ft__clock_map_span(&t->clock, m->ts, m->ts, &at, &unused)) {
      t->dropped_untimed++;
      continue;
    }
    const mem_call *c = &mem_calls[m->call];
    ft_memory_info info = {.op = c->free ? FT_MEMORY_FREE : FT_MEMORY_ALLOC,
                           .memory_kind = c->kind,
                           .address = m->address,
                           .bytes = m->bytes};
    /* the stream argument is a hipStream_t handle, not the queue id the device
     * rows carry: none named */
    ft_device_event ev = {.kind = FT_EVENT_MEMORY,
                          .start_ns = at,
                          .end_ns = at,
                          .correlation_id = m->corr,
                          .device = m->device,
                          .stream = UINT32_MAX,
                          .thread_id = m->tid,
                          .name = "[memory]",
                          .memory = &info};
    ft__tracer_emit(&t->base, &ev, NULL, 0);
  }
  t->n_mem = 0;
}

static void buffer_callback(const char *begin, const char *end, void *arg) {
  (void)arg;
  roc_tracer *t = (roc_tracer *)ft__tracer_active();
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  /* only whole records inside [begin, end), each after the last: a library handing
   * back a short tail or a pointer that does not advance is not followed */
  for (const roctracer_record *r = (const roctracer_record *)begin;
       (size_t)(end - (const char *)r) >= sizeof *r && (const char *)r >= begin;) {
    if (t->n_recs == t->recs_cap) {
      size_t ncap = t->recs_cap ? t->recs_cap * 2 : 4096;
      roctracer_record *n = realloc(t->recs, ncap * sizeof *n);
      if (n) {
        t->recs = n;
        t->recs_cap = ncap;
      }
    }
    /* out of memory: keep walking so every record we cannot keep is counted */
    if (t->n_recs < t->recs_cap) t->recs[t->n_recs++] = *r;
    else t->lost++;
    const roctracer_record *next = NULL;
    if (t->api.roctracer_next_record(r, &next) != ROCTRACER_STATUS_SUCCESS || !next || next <= r) break;
    r = next;
  }
  pthread_mutex_unlock(&t->mu);
}

static void decode(roc_tracer *t, const roctracer_record *r, char **demangled) {
  char a[32];
  uint64_t s, e;
  if (r->domain == ACTIVITY_DOMAIN_EXT_API) {
    ft__tracer_external(&t->base, corr32(r->correlation_id), r->u.external_id);
    return;
  }
  if (r->domain != ACTIVITY_DOMAIN_HIP_OPS && r->domain != ACTIVITY_DOMAIN_HIP_API) return;
  if (r->domain == ACTIVITY_DOMAIN_HIP_OPS && r->op == HIP_OP_BARRIER) return;
  if (!ft__clock_map_span(&t->clock, r->begin_ns, r->end_ns, &s, &e)) {
    t->dropped_untimed++;
    return;
  }
  if (r->domain == ACTIVITY_DOMAIN_HIP_API) {
    if (is_hidden(t, r)) return; /* our own hipGetDevice, not the program's */
    const char *name = t->api.roctracer_op_string(ACTIVITY_DOMAIN_HIP_API, r->op, 0);
    snprintf(a, sizeof a, "%u", r->op);
    ft_kv md[1] = {{"cbid", a}}; /* HIP API ids change between ROCm releases: the name comes from roctracer */
    ft_device_event ev = {.kind = FT_EVENT_RUNTIME,
                          .start_ns = s,
                          .end_ns = e,
                          .correlation_id = corr32(r->correlation_id),
                          .thread_id = r->u.host.tid,
                          .name = name ? name : "hipApi"};
    ft__tracer_emit(&t->base, &ev, md, 1);
    return;
  }
  ft_device_event ev = {.start_ns = s,
                        .end_ns = e,
                        .correlation_id = corr32(r->correlation_id),
                        .device = (uint32_t)r->u.device.device_id,
                        .stream = (uint32_t)r->u.device.queue_id};
  if (r->kind == HIP_KIND_KERNEL) {
    const char *raw = r->v.kernel_name ? r->v.kernel_name : "<unnamed kernel>";
    *demangled = ft__demangle(raw);
    ev.kind = FT_EVENT_KERNEL;
    ev.name = *demangled ? *demangled : raw;
    ft__tracer_emit(&t->base, &ev, NULL, 0); /* the HIP_OPS record has no grid or block: omitted */
    return;
  }
  snprintf(a, sizeof a, "%llu", (unsigned long long)r->v.bytes);
  ft_kv md[1] = {{"bytes", a}};
  if (r->kind == HIP_KIND_FILL) {
    ev.kind = FT_EVENT_MEMSET;
    ev.name = "Memset";
  } else {
    ev.kind = FT_EVENT_MEMCPY;
    ev.name = r->kind == HIP_KIND_H2D                                                 ? "Memcpy HtoD"
              : r->kind == HIP_KIND_D2H                                               ? "Memcpy DtoH"
              : r->kind == HIP_KIND_D2D                                               ? "Memcpy DtoD"
              : r->kind >= HIP_KIND_COPY_2D_FIRST && r->kind <= HIP_KIND_COPY_2D_LAST ? "Memcpy 2D"
                                                                                      : "Memcpy";
  }
  ft__tracer_emit(&t->base, &ev, md, 1);
}

static bool read_clock(void *ctx, uint64_t *v) {
  roc_tracer *t = ctx;
  return !FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err, t->api.roctracer_get_timestamp(v));
}

static bool sample_clock(roc_tracer *t, uint64_t *v, uint64_t *r) { return ft__clock_sample(read_clock, t, v, r); }

/* ---- ops ---- */

static ft_status roc_start(ft_tracer *base, const ft_event_sink *sink, unsigned kinds) {
  roc_tracer *t = (roc_tracer *)base;
  ft_status claim = ft__tracer_claim(&t->base, sink, kinds);
  if (claim) return claim;
  t->lost = t->dropped_untimed = 0;
  t->n_mem = t->n_hidden = 0;
  ft_status st = sample_clock(t, &t->clock.v0, &t->clock.r0) ? FT_OK : FT_EVENDOR;
  roctracer_properties_t props = {.mode = 0, .buffer_size = 4 << 20, .buffer_callback_fun = buffer_callback};
  if (!st)
    st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err, t->api.roctracer_open_pool_expl(&props, &t->pool));
  bool device = kinds & (FT_KIND_BIT(FT_EVENT_KERNEL) | FT_KIND_BIT(FT_EVENT_MEMCPY) | FT_KIND_BIT(FT_EVENT_MEMSET));
  if (!st && device)
    st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err,
                      t->api.roctracer_enable_domain_activity_expl(ACTIVITY_DOMAIN_HIP_OPS, t->pool));
  if (!st && (kinds & FT_KIND_BIT(FT_EVENT_RUNTIME)))
    st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err,
                      t->api.roctracer_enable_domain_activity_expl(ACTIVITY_DOMAIN_HIP_API, t->pool));
  if (!st)
    st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err,
                      t->api.roctracer_enable_domain_activity_expl(ACTIVITY_DOMAIN_EXT_API, t->pool));
  if (!st && (kinds & FT_KIND_BIT(FT_EVENT_MEMORY))) st = arm_memory(t);
  if (st) {
    disarm_memory(t);
    if (t->pool) t->api.roctracer_close_pool_expl(t->pool);
    t->pool = NULL;
    ft__tracer_release(&t->base);
    return st;
  }
  t->base.armed = true;
  return FT_OK;
}

static ft_status roc_stop(ft_tracer *base) {
  roc_tracer *t = (roc_tracer *)base;
  if (!t->base.armed) return FT_OK;
  static const uint32_t domains[] = {ACTIVITY_DOMAIN_HIP_OPS, ACTIVITY_DOMAIN_HIP_API, ACTIVITY_DOMAIN_EXT_API};
  disarm_memory(t);
  for (size_t i = 0; i < 3; i++) t->api.roctracer_disable_domain_activity(domains[i]);
  ft_status st = FT__ROC_CALL(&t->api, t->base.err, sizeof t->base.err, t->api.roctracer_flush_activity_expl(t->pool));
  if (!sample_clock(t, &t->clock.v1, &t->clock.r1)) t->clock.v1 = t->clock.v0, t->clock.r1 = t->clock.r0;
  pthread_mutex_lock(&t->mu);
  if (t->n_hidden) qsort(t->hidden, t->n_hidden, sizeof *t->hidden, by_thread_time);
  for (size_t i = 0; i < t->n_recs; i++) {
    char *demangled = NULL;
    decode(t, &t->recs[i], &demangled);
    free(demangled);
  }
  t->n_recs = 0;
  t->n_hidden = 0;
  emit_memory(t);
  pthread_mutex_unlock(&t->mu);
  atomic_fetch_add(&t->base.dropped, t->dropped_untimed + t->lost);
  if (t->dropped_untimed || t->lost)
    FT__WARN(
        "%llu records with implausible timestamps and %llu that could not be kept were dropped "
        "(counted in dropped_records)",
        (unsigned long long)t->dropped_untimed, (unsigned long long)t->lost);
  t->api.roctracer_close_pool_expl(t->pool);
  t->pool = NULL;
  ft__tracer_release(&t->base);
  return st;
}

static ft_status roc_push(ft_tracer *base, uint64_t id) {
  roc_tracer *t = (roc_tracer *)base;
  char err[128];
  return t->base.loaded
             ? FT__ROC_CALL(&t->api, err, sizeof err, t->api.roctracer_activity_push_external_correlation_id(id))
             : FT_EUNAVAILABLE;
}

static ft_status roc_pop(ft_tracer *base) {
  roc_tracer *t = (roc_tracer *)base;
  char err[128];
  uint64_t last = 0; /* a real out-pointer */
  return t->base.loaded
             ? FT__ROC_CALL(&t->api, err, sizeof err, t->api.roctracer_activity_pop_external_correlation_id(&last))
             : FT_EUNAVAILABLE;
}

static void roc_destroy(ft_tracer *base) {
  roc_tracer *t = (roc_tracer *)base;
  if (t->base.armed) roc_stop(base);
  free(t->recs);
  free(t->mem);
  free(t->hidden);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static const ft_tracer_ops roctracer_ops = {
    .name = FT__TRACER_NAME,
    .runtime_category = "privateuse1_runtime",
    .driver_category = "privateuse1_driver",
    .available = ft__tracer_available,
    .start = roc_start,
    .stop = roc_stop,
    .push_correlation = roc_push,
    .pop_correlation = roc_pop,
    .device_count = NULL, /* not queried: no HIP runtime binding here */
    .dropped_records = ft__tracer_dropped,
    .last_error = ft__tracer_last_error,
    .destroy = roc_destroy,
    .watch_profiler_api = NULL,
};

static int load_roctracer(void *api, void *handle, char *why, size_t len) {
  return ft__roctracer_load_symbols(api, handle, why, len);
}

ft_status ft_make_device_tracer(ft_tracer **out) {
  roc_tracer *t = calloc(1, sizeof *t);
  if (!t) return FT_ENOMEM;
  t->base.tracer.ops = &roctracer_ops;
  pthread_mutex_init(&t->mu, NULL);
  const char *home = getenv("ROCM_PATH");
  char in_home[PATH_MAX];
  snprintf(in_home, sizeof in_home, "%s/lib/libroctracer64.so", home && *home ? home : "/opt/dtk");
  const char *const candidates[] = {"libroctracer64.so", in_home};
  ft__tracer_open(&t->base, candidates, 2, "libroctracer64 not found (set FLAGOS_TRACER_LIBRARY or ROCM_PATH)",
                  load_roctracer, &t->api);
  *out = &t->base.tracer;
  return FT_OK;
}
