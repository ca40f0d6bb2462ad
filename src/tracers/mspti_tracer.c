/* Ascend CANN MSPTI tracer: loads libmspti at session start and decodes its packed
 * activity records. Verified by decoding records we synthesize (CI), not on hardware. */
#define _GNU_SOURCE
#define FT__TRACER_NAME "mspti"
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers.h"
#include "flagtrace/device_tracer.h"
#include "mspti_shim.h"
#include "tracer_support.h"

enum { POOL_INITIAL = 8, BUF_SIZE = 8 * 1024 * 1024, MAX_VISIBLE = 64 };

/* An API record held until stop: MSPTI reports several per correlation, and one is
 * kept (design.md §9: prefer the launch API for kernels, the copy/set API for transfers). */
typedef struct api_rec {
  uint32_t corr;
  uint32_t tid;
  uint64_t start, end;
  char *name;
} api_rec;

typedef struct mspti_tracer {
  ft__tracer_base base; /* first: loaded, path, why, err, sink, armed, kinds, dropped */
  ft__mspti_api api;
  bool preloaded; /* libmspti was in the link map at process start */
  msptiSubscriberHandle sub;
  pthread_mutex_t mu; /* the id map, held API records, device kinds */
  /* 64-bit MSPTI correlation ids -> nonzero 32-bit ids (flows need 32 bits) */
  ft__map ids;        /* MSPTI id -> our id */
  uint32_t n_ids;     /* ids handed out */
  uint8_t *dev_kinds; /* per 32-bit id: bit 0 kernel, 1 memcpy, 2 memset, 3 memory */
  size_t dev_kinds_cap;
  api_rec *apis;
  size_t n_apis, apis_cap;
  int visible[MAX_VISIBLE]; /* ASCEND_RT_VISIBLE_DEVICES: physical id per logical ordinal */
  int n_visible;
} mspti_tracer;

static uint32_t rd32(const uint8_t *p, size_t off) {
  uint32_t v;
  memcpy(&v, p + off, 4);
  return v;
}
static uint64_t rd64(const uint8_t *p, size_t off) {
  uint64_t v;
  memcpy(&v, p + off, 8);
  return v;
}
static const char *rdstr(const uint8_t *p, size_t off) {
  const char *s;
  memcpy(&s, p + off, sizeof s);
  return s ? s : "";
}

/* The nonzero 32-bit id of a 64-bit MSPTI correlation id (caller holds mu). */
static uint32_t remap(mspti_tracer *t, uint64_t id) {
  uint64_t *v = ft__map_upsert(&t->ids, id);
  if (!v) return 0;
  if (!*v) *v = ++t->n_ids;
  return (uint32_t)*v;
}

static void mark_device_kind(mspti_tracer *t, uint32_t corr, uint8_t bit) {
  if (corr >= t->dev_kinds_cap) {
    size_t ncap = t->dev_kinds_cap ? t->dev_kinds_cap : 1024;
    while (ncap <= corr) ncap *= 2;
    uint8_t *n = realloc(t->dev_kinds, ncap);
    if (!n) return;
    memset(n + t->dev_kinds_cap, 0, ncap - t->dev_kinds_cap);
    t->dev_kinds = n;
    t->dev_kinds_cap = ncap;
  }
  t->dev_kinds[corr] |= bit;
}

/* The logical ordinal of a physical device (ASCEND_RT_VISIBLE_DEVICES). */
static uint32_t logical_device(const mspti_tracer *t, uint32_t physical) {
  for (int i = 0; i < t->n_visible; i++)
    if (t->visible[i] == (int)physical) return (uint32_t)i;
  return physical;
}

/* An msptiActivityMemory record (mspti_shim.h's offsets) as an FT_EVENT_MEMORY. */
static void decode_memory(mspti_tracer *t, const uint8_t *r) {
  uint32_t op = rd32(r, MSPTI_MEMORY_OP), kind = rd32(r, MSPTI_MEMORY_KIND);
  if (op != MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION && op != MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
    atomic_fetch_add(&t->base.dropped, 1); /* an operation this layout does not know: counted, not guessed */
    return;
  }
  /* MSPTI's memory reporter takes deviceId from aclrtGetDevice: the logical id the
   * program selected (not the physical one kernels carry), or MSPTI_INVALID_DEVICE_ID
   * when that failed: such a record names no device's memory, counted */
  uint32_t device = rd32(r, MSPTI_MEMORY_DEVICE);
  if (device == MSPTI_INVALID_DEVICE_ID) {
    atomic_fetch_add(&t->base.dropped, 1);
    return;
  }
  bool alloc = op == MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  uint64_t raw = rd64(r, MSPTI_MEMORY_CORRELATION);
  uint32_t corr = raw ? remap(t, raw) : 0; /* 0 is MSPTI_INVALID_CORRELATION_ID */
  if (corr) mark_device_kind(t, corr, 8);
  ft_memory_info m = {.op = alloc ? FT_MEMORY_ALLOC : FT_MEMORY_FREE,
                      .memory_kind = kind == MSPTI_ACTIVITY_MEMORY_DEVICE    ? FT_MEMKIND_DEVICE
                                     : kind == MSPTI_ACTIVITY_MEMORY_UNKNOWN ? FT_MEMKIND_UNKNOWN
                                                                             : FT_MEMKIND_OTHER,
                      .address = rd64(r, MSPTI_MEMORY_ADDRESS),
                      .bytes = rd64(r, MSPTI_MEMORY_BYTES)};
  /* one instant inside the call: an allocation exists once it returns, a free
   * gives the memory up when called */
  uint64_t at = alloc ? rd64(r, MSPTI_MEMORY_END) : rd64(r, MSPTI_MEMORY_START);
  ft_device_event ev = {.kind = FT_EVENT_MEMORY,
                        .start_ns = at,
                        .end_ns = at,
                        .correlation_id = corr,
                        .device = device,
                        .stream = rd32(r, MSPTI_MEMORY_STREAM), /* MSPTI_INVALID_STREAM_ID = UINT32_MAX: none */
                        .name = "[memory]",
                        .memory = &m};
  ft__tracer_emit(&t->base, &ev, NULL, 0);
}

static void decode_record(mspti_tracer *t, const uint8_t *r) {
  char a[32], b[32], c[32];
  switch (rd32(r, 0)) {
  case MSPTI_ACTIVITY_KIND_KERNEL: {
    uint32_t corr = remap(t, rd64(r, MSPTI_KERNEL_CORRELATION));
    mark_device_kind(t, corr, 1);
    /* MSPTI's kernel record has no grid, block or occupancy: omitted, not made up */
    ft_kv md[1] = {{"kernel type", rdstr(r, MSPTI_KERNEL_TYPE)}};
    ft_device_event ev = {.kind = FT_EVENT_KERNEL,
                          .start_ns = rd64(r, MSPTI_KERNEL_START),
                          .end_ns = rd64(r, MSPTI_KERNEL_END),
                          .correlation_id = corr,
                          .device = logical_device(t, rd32(r, MSPTI_KERNEL_DEVICE)),
                          .stream = rd32(r, MSPTI_KERNEL_STREAM),
                          .name = rdstr(r, MSPTI_KERNEL_NAME)};
    ft__tracer_emit(&t->base, &ev, md, 1);
    break;
  }
  case MSPTI_ACTIVITY_KIND_MEMCPY:
  case MSPTI_ACTIVITY_KIND_MEMSET: {
    bool set = rd32(r, 0) == MSPTI_ACTIVITY_KIND_MEMSET;
    uint32_t corr = remap(t, rd64(r, MSPTI_MEM_CORRELATION));
    mark_device_kind(t, corr, set ? 4 : 2);
    snprintf(a, sizeof a, "%llu", (unsigned long long)rd64(r, MSPTI_MEM_BYTES));
    snprintf(b, sizeof b, "%u", rd32(r, MSPTI_MEM_KIND_OR_VALUE));
    snprintf(c, sizeof c, "%s", r[MSPTI_MEM_ASYNC] ? "true" : "false");
    ft_kv md[3] = {{"bytes", a}, {set ? "value" : "copy kind", b}, {"async", c}};
    ft_device_event ev = {.kind = set ? FT_EVENT_MEMSET : FT_EVENT_MEMCPY,
                          .start_ns = rd64(r, MSPTI_MEM_START),
                          .end_ns = rd64(r, MSPTI_MEM_END),
                          .correlation_id = corr,
                          .device = logical_device(t, rd32(r, MSPTI_MEM_DEVICE)),
                          .stream = rd32(r, MSPTI_MEM_STREAM),
                          .name = set ? "Memset" : "Memcpy"};
    ft__tracer_emit(&t->base, &ev, md, 3);
    break;
  }
  case MSPTI_ACTIVITY_KIND_API: {
    if (t->n_apis == t->apis_cap) {
      size_t ncap = t->apis_cap ? t->apis_cap * 2 : 1024;
      api_rec *n = realloc(t->apis, ncap * sizeof *n);
      if (!n) {
        FT__WARN("out of memory holding an API record; it is lost");
        return;
      }
      t->apis = n;
      t->apis_cap = ncap;
    }
    api_rec *x = &t->apis[t->n_apis];
    x->corr = remap(t, rd64(r, MSPTI_API_CORRELATION));
    x->tid = rd32(r, MSPTI_API_THREAD);
    x->start = rd64(r, MSPTI_API_START);
    x->end = rd64(r, MSPTI_API_END);
    x->name = strdup(rdstr(r, MSPTI_API_NAME));
    if (x->name) t->n_apis++;
    break;
  }
  case MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
    if ((int)rd32(r, MSPTI_EXT_KIND) == MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
      ft__tracer_external(&t->base, remap(t, rd64(r, MSPTI_EXT_CORRELATION)), rd64(r, MSPTI_EXT_ID));
    break;
  case MSPTI_ACTIVITY_KIND_MEMORY: decode_memory(t, r); break;
  default: break; /* markers, HCCL: not collected */
  }
}

/* True when the record the library handed back lies wholly inside the valid
 * bytes (the kind alone for kinds decode_record ignores): it never reads past
 * them, whatever the library returns. */
static bool record_fits(const uint8_t *buf, size_t valid, const uint8_t *rec) {
  if (rec < buf || (size_t)(rec - buf) > valid || valid - (size_t)(rec - buf) < 4) return false;
  size_t need = ft__mspti_record_size(rd32(rec, 0));
  return valid - (size_t)(rec - buf) >= (need ? need : 4);
}

static void buffer_completed(uint8_t *buffer, size_t size, size_t valid) {
  (void)size;
  mspti_tracer *t = (mspti_tracer *)ft__tracer_active();
  if (t && buffer && valid) {
    pthread_mutex_lock(&t->mu);
    msptiActivity *rec = NULL;
    /* the library's own end signal, bounded by what the valid bytes can hold */
    for (size_t n = 0, bound = valid / 8 + 1; n < bound; n++) {
      msptiResult r = t->api.msptiActivityGetNextRecord(buffer, valid, &rec);
      if (r == MSPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (r != MSPTI_SUCCESS) {
        FT__WARN("reading an activity buffer failed (msptiResult %d); the rest of it is lost", r);
        break;
      }
      if (!record_fits(buffer, valid, (const uint8_t *)rec)) {
        FT__WARN("a record runs past the buffer's valid bytes; the rest of it is lost");
        break;
      }
      decode_record(t, (const uint8_t *)rec);
    }
    pthread_mutex_unlock(&t->mu);
  }
  ft__pool_put(buffer);
}

static void on_callback(void *userdata, int domain, uint32_t cbid, const void *data) {
  (void)userdata, (void)domain, (void)cbid, (void)data; /* subscription only: activity comes through buffers */
}

/* How well a held API record fits the device work of its correlation. */
static int preference(const api_rec *a, uint8_t kinds) {
  const char *n = a->name;
  if ((kinds & 1) && (strstr(n, "Launch") || strstr(n, "Kernel"))) return 2;
  if ((kinds & 2) && (strstr(n, "Memcpy") || strstr(n, "memcpy"))) return 2;
  if ((kinds & 4) && (strstr(n, "Memset") || strstr(n, "memset"))) return 2;
  if ((kinds & 8) && (strstr(n, "Malloc") || strstr(n, "Free") || strstr(n, "malloc") || strstr(n, "free"))) return 2;
  return 1;
}

static int by_corr(const void *x, const void *y) {
  const api_rec *a = x, *b = y;
  if (a->corr != b->corr) return a->corr < b->corr ? -1 : 1;
  return (a->start > b->start) - (a->start < b->start);
}

/* One runtime event per correlation, after every buffer was decoded. */
static void emit_apis(mspti_tracer *t) {
  qsort(t->apis, t->n_apis, sizeof *t->apis, by_corr);
  for (size_t i = 0; i < t->n_apis;) {
    size_t j = i, best = i;
    uint8_t kinds = t->apis[i].corr < t->dev_kinds_cap ? t->dev_kinds[t->apis[i].corr] : 0;
    for (; j < t->n_apis && t->apis[j].corr == t->apis[i].corr; j++)
      if (preference(&t->apis[j], kinds) > preference(&t->apis[best], kinds)) best = j;
    const api_rec *a = &t->apis[best];
    ft_device_event ev = {.kind = FT_EVENT_RUNTIME,
                          .start_ns = a->start,
                          .end_ns = a->end,
                          .correlation_id = a->corr,
                          .thread_id = a->tid,
                          .name = a->name};
    ft__tracer_emit(&t->base, &ev, NULL, 0);
    i = j;
  }
  for (size_t i = 0; i < t->n_apis; i++) free(t->apis[i].name);
  t->n_apis = 0;
}

/* ---- library lookup ---- */

static bool in_link_map(void) {
  /* /proc/self/maps, not the LD_PRELOAD text: ld.so only warns about a bad path */
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[PATH_MAX + 128];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, "/libmspti.so") != NULL;
  fclose(f);
  return found;
}

static bool locate(mspti_tracer *t) {
  const char *override = getenv("FLAGOS_TRACER_LIBRARY");
  if (override && *override) {
    snprintf(t->base.path, sizeof t->base.path, "%s", override);
    FILE *f = fopen(override, "rb"); /* loaded (and its symbols checked) at session start */
    if (f) {
      fclose(f);
      return true;
    }
    snprintf(t->base.why, sizeof t->base.why, "FLAGOS_TRACER_LIBRARY=%s could not be used: %s", override,
             strerror(errno));
    return false;
  }
  static const char *const homes[] = {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"};
  for (size_t i = 0; i < 2; i++) {
    const char *h = getenv(homes[i]);
    if (!h || !*h) continue;
    snprintf(t->base.path, sizeof t->base.path, "%s/tools/mspti/lib64/libmspti.so", h);
    FILE *f = fopen(t->base.path, "rb");
    if (f) {
      fclose(f);
      return true;
    }
  }
  snprintf(t->base.path, sizeof t->base.path, "libmspti.so");
  if (t->preloaded) return true;
  snprintf(t->base.why, sizeof t->base.why,
           "libmspti.so not found (set FLAGOS_TRACER_LIBRARY, ASCEND_HOME_PATH or "
           "ASCEND_TOOLKIT_HOME)");
  return false;
}

/* Loads the library at session start (never at import: CANN's interposer has a cost). */
static ft_status load(mspti_tracer *t) {
  if (t->base.loaded) return FT_OK;
  /* kept loaded for the process's life: CANN may hold interposed ACL pointers */
  void *h = dlopen(t->base.path, RTLD_NOW | RTLD_GLOBAL);
  char why[256];
  if (!h) {
    snprintf(t->base.err, sizeof t->base.err, "%s", dlerror());
    return FT_EUNAVAILABLE;
  }
  if (!ft__mspti_load_symbols(&t->api, h, why, sizeof why)) {
    snprintf(t->base.err, sizeof t->base.err, "%s: %s", t->base.path, why);
    return FT_EUNAVAILABLE;
  }
  t->base.loaded = true;
  FT__LOG("bound %s", t->base.path);
  return FT_OK;
}

static void read_visible_devices(mspti_tracer *t) {
  const char *v = getenv("ASCEND_RT_VISIBLE_DEVICES");
  t->n_visible = 0;
  for (const char *p = v; p && *p && t->n_visible < MAX_VISIBLE;) {
    char *end;
    long d = strtol(p, &end, 10);
    if (end == p) break;
    t->visible[t->n_visible++] = (int)d;
    p = *end == ',' ? end + 1 : end;
  }
}

/* ---- ops ---- */

static bool ms_available(const ft_tracer *base, const char **why) {
  const mspti_tracer *t = (const mspti_tracer *)base;
  bool ok = !t->base.why[0];
  if (!ok && why) *why = t->base.why;
  return ok;
}

static ft_status ms_start(ft_tracer *base, const ft_event_sink *sink, unsigned kinds) {
  mspti_tracer *t = (mspti_tracer *)base;
  ft_status st = load(t);
  if (st) return st;
  ft_status claim = ft__tracer_claim(&t->base, sink, kinds);
  if (claim) return claim;
  read_visible_devices(t);
  if (ft__pool_reserve(POOL_INITIAL, BUF_SIZE) == 0) {
    ft__tracer_release(&t->base);
    snprintf(t->base.err, sizeof t->base.err, "cannot reserve activity buffers");
    return FT_ENOMEM;
  }
  st = ft__msptiSubscribe(&t->api, t->base.err, sizeof t->base.err, &t->sub, on_callback, NULL);
  if (!st)
    st = ft__msptiActivityRegisterCallbacks(&t->api, t->base.err, sizeof t->base.err, ft__buffer_requested,
                                            buffer_completed);
  if (!st)
    st = ft__msptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (!st && (kinds & FT_KIND_BIT(FT_EVENT_KERNEL)))
    st = ft__msptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, MSPTI_ACTIVITY_KIND_KERNEL);
  if (!st && (kinds & FT_KIND_BIT(FT_EVENT_RUNTIME)))
    st = ft__msptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, MSPTI_ACTIVITY_KIND_API);
  /* copies and sets come from CANN's interposer, which works only when libmspti was
   * in the link map at process start (measured; a later dlopen cannot substitute) */
  bool mem = t->preloaded && (kinds & (FT_KIND_BIT(FT_EVENT_MEMCPY) | FT_KIND_BIT(FT_EVENT_MEMSET)));
  if (!st && mem && (kinds & FT_KIND_BIT(FT_EVENT_MEMCPY)))
    st = ft__msptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, MSPTI_ACTIVITY_KIND_MEMCPY);
  if (!st && mem && (kinds & FT_KIND_BIT(FT_EVENT_MEMSET)))
    st = ft__msptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, MSPTI_ACTIVITY_KIND_MEMSET);
  /* allocations and frees come from the same interposer (MSPTI's acl_mem_inject
   * wraps aclrtMalloc/aclrtFree as it wraps the copies), so they too need it at
   * process start: assumed from the source, not measured on hardware */
  if (!st && t->preloaded && (kinds & FT_KIND_BIT(FT_EVENT_MEMORY)))
    st = ft__msptiActivityEnable(&t->api, t->base.err, sizeof t->base.err, MSPTI_ACTIVITY_KIND_MEMORY);
  if (!t->preloaded)
    FT__LOG("libmspti was not loaded at process start (LD_PRELOAD): copies, sets and allocations are not collected");
  if (st) {
    if (t->sub) t->api.msptiUnsubscribe(t->sub);
    t->sub = NULL;
    ft__tracer_release(&t->base);
    return st;
  }
  t->base.armed = true;
  return FT_OK;
}

static ft_status ms_stop(ft_tracer *base) {
  mspti_tracer *t = (mspti_tracer *)base;
  if (!t->base.armed) return FT_OK;
  /* the measured order: unsubscribe first, then flush the pending buffers */
  ft_status st = ft__msptiUnsubscribe(&t->api, t->base.err, sizeof t->base.err, t->sub);
  t->sub = NULL;
  ft_status fl = ft__msptiActivityFlushAll(&t->api, t->base.err, sizeof t->base.err, 1);
  static const msptiActivityKind all[] = {MSPTI_ACTIVITY_KIND_KERNEL, MSPTI_ACTIVITY_KIND_API,
                                          MSPTI_ACTIVITY_KIND_MEMCPY, MSPTI_ACTIVITY_KIND_MEMSET,
                                          MSPTI_ACTIVITY_KIND_MEMORY, MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t->api.msptiActivityDisable(all[i]);
  size_t dropped = 0;
  if (t->api.msptiActivityGetNumDroppedRecords && t->api.msptiActivityGetNumDroppedRecords(&dropped) == MSPTI_SUCCESS)
    atomic_fetch_add(&t->base.dropped, dropped); /* beside those we could not decode */
  pthread_mutex_lock(&t->mu);
  emit_apis(t);
  pthread_mutex_unlock(&t->mu);
  ft__tracer_release(&t->base);
  return st ? st : fl;
}

static ft_status ms_push(ft_tracer *base, uint64_t id) {
  mspti_tracer *t = (mspti_tracer *)base;
  char err[128];
  return t->base.loaded ? ft__msptiActivityPushExternalCorrelationId(&t->api, err, sizeof err,
                                                                     MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id)
                        : FT_EUNAVAILABLE;
}

static ft_status ms_pop(ft_tracer *base) {
  mspti_tracer *t = (mspti_tracer *)base;
  char err[128];
  /* a real out-pointer: CANN 9.0 rejects NULL and leaves the stack as it was */
  uint64_t last = 0;
  return t->base.loaded ? ft__msptiActivityPopExternalCorrelationId(&t->api, err, sizeof err,
                                                                    MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last)
                        : FT_EUNAVAILABLE;
}

static int ms_device_count(const ft_tracer *base) {
  const mspti_tracer *t = (const mspti_tracer *)base;
  return t->n_visible;
}

static void ms_destroy(ft_tracer *base) {
  mspti_tracer *t = (mspti_tracer *)base;
  if (t->base.armed) ms_stop(base);
  for (size_t i = 0; i < t->n_apis; i++) free(t->apis[i].name);
  free(t->apis);
  ft__map_free(&t->ids);
  free(t->dev_kinds);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static const ft_tracer_ops mspti_ops = {
    .name = FT__TRACER_NAME,
    .runtime_category = "privateuse1_runtime",
    .driver_category = "privateuse1_driver",
    .available = ms_available, /* the library loads at start: available when located */
    .start = ms_start,
    .stop = ms_stop,
    .push_correlation = ms_push,
    .pop_correlation = ms_pop,
    .device_count = ms_device_count,
    .dropped_records = ft__tracer_dropped,
    .last_error = ft__tracer_last_error,
    .destroy = ms_destroy,
    .watch_profiler_api = NULL,
};

ft_status ft_make_device_tracer(ft_tracer **out) {
  mspti_tracer *t = calloc(1, sizeof *t);
  if (!t) return FT_ENOMEM;
  t->base.tracer.ops = &mspti_ops;
  pthread_mutex_init(&t->mu, NULL);
  /* sampled once, before anything of ours loads the library */
  static int preloaded = -1;
  if (preloaded < 0) preloaded = in_link_map();
  t->preloaded = preloaded;
  if (locate(t)) t->base.why[0] = '\0';
  FT__LOG("%s (%s at process start)", t->base.why[0] ? t->base.why : t->base.path,
          t->preloaded ? "preloaded" : "not loaded");
  *out = &t->base.tracer;
  return FT_OK;
}
