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
enum { N_MEM_CALLS = sizeof mem_calls / sizeof mem_calls[0], N_WATCHED = N_MEM_CALLS + 1 };

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
  /* memory: the HIP API op ids of mem_calls (and hipGetDevice, last) this HIP
   * has, armed for callbacks; what they saw; the correlation ids of our own
   * hipGetDevice queries, whose HIP_API records are not the program's */
  uint32_t watched_op[N_WATCHED];
  bool watched[N_WATCHED];
  mem_op *mem;
  size_t n_mem, mem_cap;
  uint64_t *hidden;
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

static __thread bool querying; /* this thread is inside our own hipGetDevice */
typedef int (*hip_get_device_fn)(int *device);

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

/* The calling thread's current device, asked of HIP (loaded once its calls reach
 * us); 0 when it cannot be. */
static uint32_t current_device(void) {
  static _Atomic(hip_get_device_fn) get;
  hip_get_device_fn f = atomic_load(&get);
  if (!f) {
    f = find_get_device();
    if (!f) return 0;
    atomic_store(&get, f);
  }
  int dev = 0;
  querying = true;
  int r = f(&dev);
  querying = false;
  return r == 0 && dev >= 0 ? (uint32_t)dev : 0;
}

static uint64_t rd64(const void *p, size_t off) {
  uint64_t v;
  memcpy(&v, (const char *)p + off, 8);
  return v;
}

/* The HIP API callback of the watched calls: an allocation at EXIT (its address
 * is known then), a free at ENTER; our own hipGetDevice noted to be hidden. */
static void mem_callback(uint32_t domain, uint32_t cid, const void *data, void *arg) {
  roc_tracer *t = arg;
  if (domain != ACTIVITY_DOMAIN_HIP_API || !data || (ft__tracer_base *)t != ft__tracer_active()) return;
  uint32_t phase;
  memcpy(&phase, (const char *)data + HIP_API_DATA_PHASE, 4);
  uint64_t corr = rd64(data, HIP_API_DATA_CORRELATION);
  if (t->watched[N_MEM_CALLS] && cid == t->watched_op[N_MEM_CALLS]) {
    if (querying && phase == ACTIVITY_API_PHASE_ENTER) {
      pthread_mutex_lock(&t->mu);
      if (!push((void **)&t->hidden, &t->n_hidden, &t->hidden_cap, sizeof corr, &corr)) t->lost++;
      pthread_mutex_unlock(&t->mu);
    }
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
  m.device = current_device();
  if (t->api.roctracer_get_timestamp(&m.ts) != ROCTRACER_STATUS_SUCCESS) m.ts = 0;
  pthread_mutex_lock(&t->mu);
  if (!push((void **)&t->mem, &t->n_mem, &t->mem_cap, sizeof m, &m)) t->lost++;
  pthread_mutex_unlock(&t->mu);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static bool is_hidden(const roc_tracer *t, uint64_t corr) {
  return t->n_hidden && bsearch(&corr, t->hidden, t->n_hidden, sizeof corr, cmp_u64);
}

/* Arms the HIP API callbacks of the memory calls this HIP has (ids change between
 * releases: each is looked up by name; a name it lacks is left out). */
static ft_status arm_memory(roc_tracer *t) {
  for (size_t i = 0; i < N_WATCHED; i++) {
    const char *name = i < N_MEM_CALLS ? mem_calls[i].name : "hipGetDevice";
    uint32_t op = 0;
    t->watched[i] = false;
    if (t->api.roctracer_op_code(ACTIVITY_DOMAIN_HIP_API, name, &op, NULL) != ROCTRACER_STATUS_SUCCESS) {
      FT__LOG("%s: not in this HIP; its allocations are not recorded", name);
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
    if (is_hidden(t, r->correlation_id)) return; /* our own hipGetDevice, not the program's */
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
  if (t->n_hidden) qsort(t->hidden, t->n_hidden, sizeof *t->hidden, cmp_u64);
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
