/* dlopen binding of roctracer (AMD ROCm / Hygon DCU) from one X-macro list, with our
 * own declarations of the types and the 64-byte activity record (public, MIT-licensed
 * roctracer facts in ../shared/notes/vendor-apis.md; no header here). */
#ifndef FLAGTRACE_ROCTRACER_SHIM_H
#define FLAGTRACE_ROCTRACER_SHIM_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

#include "flagtrace/flagtrace.h"
#include "../core/tracer_support.h"

typedef int roctracer_status_t; /* 0 = ROCTRACER_STATUS_SUCCESS */
enum { ROCTRACER_STATUS_SUCCESS = 0 };
enum { ACTIVITY_DOMAIN_HIP_OPS = 2, ACTIVITY_DOMAIN_HIP_API = 3, ACTIVITY_DOMAIN_EXT_API = 5 };
enum { HIP_OP_DISPATCH = 0, HIP_OP_COPY = 1, HIP_OP_BARRIER = 2 };
enum {
  HIP_KIND_KERNEL = 0x11F0,
  HIP_KIND_D2H = 0x11F3,
  HIP_KIND_H2D = 0x11F4,
  HIP_KIND_D2D = 0x11F5,
  HIP_KIND_COPY_2D_FIRST = 0x1201,
  HIP_KIND_COPY_2D_LAST = 0x1203,
  HIP_KIND_FILL = 0x1207,
};

/* activity_record_t: natural alignment, 64 bytes */
typedef struct roctracer_record {
  uint32_t domain; /* @0 */
  uint32_t kind;   /* @4 */
  uint32_t op;     /* @8 */
  uint32_t pad;
  uint64_t correlation_id; /* @16 */
  uint64_t begin_ns;       /* @24 */
  uint64_t end_ns;         /* @32 */
  union {                  /* @40 */
    struct {
      int32_t device_id;
      uint32_t pad2;
      uint64_t queue_id; /* @48 */
    } device;
    struct {
      uint32_t pid, tid;
    } host;
    uint64_t external_id;
  } u;
  union { /* @56 */
    uint64_t bytes;
    const char *kernel_name;
    const char *message;
  } v;
} roctracer_record;
_Static_assert(sizeof(roctracer_record) == 64, "roctracer activity records are 64 bytes");

typedef struct roctracer_pool roctracer_pool_t;
typedef void (*roctracer_buffer_callback_t)(const char *begin, const char *end, void *arg);
typedef void (*roctracer_allocator_t)(char **ptr, size_t size, void *arg);
typedef struct roctracer_properties {
  uint32_t mode;
  size_t buffer_size;
  roctracer_allocator_t alloc_fun;
  void *alloc_arg;
  roctracer_buffer_callback_t buffer_callback_fun;
  void *buffer_callback_arg;
} roctracer_properties_t;

/* X(return type, name, (parameters), (arguments)) */
#define FT_ROCTRACER_FUNCS(X)                                                                                          \
  X(roctracer_status_t, roctracer_open_pool_expl, (const roctracer_properties_t *properties, roctracer_pool_t **pool), \
    (properties, pool))                                                                                                \
  X(roctracer_status_t, roctracer_close_pool_expl, (roctracer_pool_t * pool), (pool))                                  \
  X(roctracer_status_t, roctracer_enable_domain_activity_expl, (uint32_t domain, roctracer_pool_t * pool),             \
    (domain, pool))                                                                                                    \
  X(roctracer_status_t, roctracer_disable_domain_activity, (uint32_t domain), (domain))                                \
  X(roctracer_status_t, roctracer_flush_activity_expl, (roctracer_pool_t * pool), (pool))                              \
  X(roctracer_status_t, roctracer_next_record, (const roctracer_record *record, const roctracer_record **next),        \
    (record, next))                                                                                                    \
  X(roctracer_status_t, roctracer_get_timestamp, (uint64_t * timestamp), (timestamp))                                  \
  X(const char *, roctracer_op_string, (uint32_t domain, uint32_t op, uint32_t kind), (domain, op, kind))              \
  X(roctracer_status_t, roctracer_activity_push_external_correlation_id, (uint64_t id), (id))                          \
  X(roctracer_status_t, roctracer_activity_pop_external_correlation_id, (uint64_t * last_id), (last_id))               \
  X(const char *, roctracer_error_string, (void), ())

#define FT__ROC_PFN(ret, name, params, args) typedef ret(*ft__pfn_##name) params;
FT_ROCTRACER_FUNCS(FT__ROC_PFN)
#undef FT__ROC_PFN

typedef struct ft__roctracer_api {
  void *handle;
#define FT__ROC_FIELD(ret, name, params, args) ft__pfn_##name name;
  FT_ROCTRACER_FUNCS(FT__ROC_FIELD)
#undef FT__ROC_FIELD
} ft__roctracer_api;

static inline int ft__roctracer_load_symbols(ft__roctracer_api *api, void *handle, char *why, size_t why_len) {
  api->handle = handle;
#define FT__ROC_SYM(ret, name, params, args) FT__SHIM_RESOLVE(name, 1)
  FT_ROCTRACER_FUNCS(FT__ROC_SYM)
#undef FT__ROC_SYM
  return 1;
}

/* ft__<roctracer function>(api, err, errlen, args...): for the status-returning
 * calls; roctracer's own message (roctracer_error_string) kept in err. */
#define FT__ROC_CALL(api, err, errlen, call) \
  ((call) == ROCTRACER_STATUS_SUCCESS        \
       ? FT_OK                               \
       : (snprintf((err), (errlen), "%s: %s", #call, (api)->roctracer_error_string()), FT_EVENDOR))

#endif
