/* dlopen binding of libcupti (and the few libcuda queries) from one X-macro list. */
#ifndef FLAGTRACE_CUPTI_SHIM_H
#define FLAGTRACE_CUPTI_SHIM_H

/* Only the CUPTI tracer's files include this file: CUPTI types stop here. */
#include <cuda.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_result.h>
#include <cupti_version.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "flagtrace/flagtrace.h"
#include "../core/tracer_support.h"

/* Every CUPTI function the tracer calls: X(return type, name, (parameters),
 * (arguments)). The pointer table, the dlsym loop and the type check against
 * the vendor's own prototype are all generated from this one list. */
#define FT_CUPTI_FUNCS(X)                                                                                              \
  X(CUptiResult, cuptiGetVersion, (uint32_t * version), (version))                                                     \
  X(CUptiResult, cuptiGetResultString, (CUptiResult result, const char **str), (result, str))                          \
  X(CUptiResult, cuptiActivityRegisterCallbacks,                                                                       \
    (CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed), (requested, completed)) \
  X(CUptiResult, cuptiActivityEnable, (CUpti_ActivityKind kind), (kind))                                               \
  X(CUptiResult, cuptiActivityDisable, (CUpti_ActivityKind kind), (kind))                                              \
  X(CUptiResult, cuptiActivityFlushAll, (uint32_t flag), (flag))                                                       \
  X(CUptiResult, cuptiActivityGetNextRecord, (uint8_t * buffer, size_t valid_size, CUpti_Activity * *record),          \
    (buffer, valid_size, record))                                                                                      \
  X(CUptiResult, cuptiActivityGetNumDroppedRecords, (CUcontext context, uint32_t stream_id, size_t * dropped),         \
    (context, stream_id, dropped))                                                                                     \
  X(CUptiResult, cuptiActivityPushExternalCorrelationId, (CUpti_ExternalCorrelationKind kind, uint64_t id),            \
    (kind, id))                                                                                                        \
  X(CUptiResult, cuptiActivityPopExternalCorrelationId, (CUpti_ExternalCorrelationKind kind, uint64_t * last_id),      \
    (kind, last_id))                                                                                                   \
  X(CUptiResult, cuptiGetTimestamp, (uint64_t * timestamp), (timestamp))                                               \
  X(CUptiResult, cuptiActivitySetAttribute, (CUpti_ActivityAttribute attr, size_t * value_size, void *value),          \
    (attr, value_size, value))                                                                                         \
  X(CUptiResult, cuptiSubscribe, (CUpti_SubscriberHandle * subscriber, CUpti_CallbackFunc callback, void *userdata),   \
    (subscriber, callback, userdata))                                                                                  \
  X(CUptiResult, cuptiEnableCallback,                                                                                  \
    (uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain, CUpti_CallbackId cbid),          \
    (enable, subscriber, domain, cbid))

/* Optional (the per-API switches: CUPTI 12.5 and later; the clock: 11.6; cuptiFinalize,
 * used only by record --on-demand between captures; the rest by memory capture from
 * callbacks, cupti_memory.c): NULL when the library lacks them, checked before use. */
#define FT_CUPTI_OPTIONAL_FUNCS(X)                                                                            \
  X(CUptiResult, cuptiActivityEnableRuntimeApi, (CUpti_CallbackId cbid, uint8_t enable), (cbid, enable))      \
  X(CUptiResult, cuptiActivityEnableDriverApi, (CUpti_CallbackId cbid, uint8_t enable), (cbid, enable))       \
  X(CUptiResult, cuptiActivityRegisterTimestampCallback, (CUpti_TimestampCallbackFunc clock), (clock))        \
  X(CUptiResult, cuptiFinalize, (void), ())                                                                   \
  X(CUptiResult, cuptiUnsubscribe, (CUpti_SubscriberHandle subscriber), (subscriber))                         \
  X(CUptiResult, cuptiGetDeviceId, (CUcontext context, uint32_t * device), (context, device))                 \
  X(CUptiResult, cuptiGetStreamIdEx, (CUcontext context, CUstream stream, uint8_t per_thread, uint32_t * id), \
    (context, stream, per_thread, id))

/* libcuda, for device properties (occupancy) and the device count. Optional:
 * looked up only in a libcuda the process already loaded, never loaded by us. */
#define FT_CUDA_FUNCS(X)                                                                                               \
  X(CUresult, cuDeviceGetCount, (int *count), (count))                                                                 \
  X(CUresult, cuDeviceGet, (CUdevice * device, int ordinal), (device, ordinal))                                        \
  X(CUresult, cuDeviceGetAttribute, (int *value, CUdevice_attribute attrib, CUdevice device), (value, attrib, device)) \
  X(CUresult, cuDeviceGetName, (char *name, int len, CUdevice device), (name, len, device))                            \
  X(CUresult, cuDeviceTotalMem_v2, (size_t * bytes, CUdevice device), (bytes, device))

/* libcuda's stream-ordered pools, for memory capture from callbacks (cupti_memory.c):
 * a device's current pool and a pool's reserved bytes. Optional, from the same libcuda. */
#define FT_CUDA_POOL_FUNCS(X)                                                             \
  X(CUresult, cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice device), (pool, device)) \
  X(CUresult, cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value), (pool, attr, value))

#define FT__SHIM_PFN(ret, name, params, args) typedef ret(*ft__pfn_##name) params;
FT_CUPTI_FUNCS(FT__SHIM_PFN)
FT_CUPTI_OPTIONAL_FUNCS(FT__SHIM_PFN)
FT_CUDA_FUNCS(FT__SHIM_PFN)
FT_CUDA_POOL_FUNCS(FT__SHIM_PFN)
#undef FT__SHIM_PFN

/* The list's signatures must be the vendor header's: a drifted entry fails to build. */
#define FT__SHIM_CHECK(ret, name, params, args)                                   \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ft__pfn_##name), \
                 #name " in the X-macro list does not match the vendor header");
FT_CUPTI_FUNCS(FT__SHIM_CHECK)
FT_CUPTI_OPTIONAL_FUNCS(FT__SHIM_CHECK)
FT_CUDA_FUNCS(FT__SHIM_CHECK)
FT_CUDA_POOL_FUNCS(FT__SHIM_CHECK)
#undef FT__SHIM_CHECK

typedef struct ft__cupti_api {
  void *handle;
#define FT__SHIM_FIELD(ret, name, params, args) ft__pfn_##name name;
  FT_CUPTI_FUNCS(FT__SHIM_FIELD)
  FT_CUPTI_OPTIONAL_FUNCS(FT__SHIM_FIELD)
#undef FT__SHIM_FIELD
} ft__cupti_api;

typedef struct ft__cuda_api {
  void *handle;
#define FT__SHIM_FIELD(ret, name, params, args) ft__pfn_##name name;
  FT_CUDA_FUNCS(FT__SHIM_FIELD)
#undef FT__SHIM_FIELD
} ft__cuda_api;

/* Resolves every listed symbol from handle into api; on a missing symbol writes
 * its name and dlerror() into why and returns 0. */
#define FT__SHIM_LOADER(fname, type, list)                                      \
  static inline int fname(type *api, void *handle, char *why, size_t why_len) { \
    api->handle = handle;                                                       \
    list(FT__SHIM_SYM) return 1;                                                \
  }
#define FT__SHIM_SYM(ret, name, params, args) FT__SHIM_RESOLVE(name, 1)
FT__SHIM_LOADER(ft__cuda_load_symbols, ft__cuda_api, FT_CUDA_FUNCS)
#undef FT__SHIM_SYM

/* MetaX's MCPTI exports the same functions as mcpti*. Of those, only what an
 * activity trace cannot do without is required there (vendor-apis.md lists no
 * more); the rest degrade one feature each when absent. */
#ifdef FT_MCPTI
#define FT_CUPTI_PREFIX "mcpti"
static inline int ft__cupti_required(const char *name) {
  static const char *const need[] = {"cuptiActivityRegisterCallbacks", "cuptiActivityEnable", "cuptiActivityDisable",
                                     "cuptiActivityFlushAll", "cuptiActivityGetNumDroppedRecords"};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if (!strcmp(name, need[i])) return 1;
  return 0;
}
#else
#define FT_CUPTI_PREFIX "cupti"
static inline int ft__cupti_required(const char *name) { return name != NULL; }
#endif
/* "cupti" + the rest of the name, with the vendor's prefix instead */
#define FT__SHIM_VENDOR_SYM(name, required)                                  \
  {                                                                          \
    char sym_[96];                                                           \
    snprintf(sym_, sizeof sym_, "%s%s", FT_CUPTI_PREFIX, &#name[5]);         \
    FT__SHIM_RESOLVE_AS(name, sym_, (required) && ft__cupti_required(#name)) \
  }
#define FT__SHIM_SYM(ret, name, params, args) FT__SHIM_VENDOR_SYM(name, 1)
#define FT__SHIM_OPT(ret, name, params, args) FT__SHIM_VENDOR_SYM(name, 0)
#define FT__CUPTI_ALL(X) FT_CUPTI_FUNCS(X) FT_CUPTI_OPTIONAL_FUNCS(FT__SHIM_OPT)
FT__SHIM_LOADER(ft__cupti_load_symbols, ft__cupti_api, FT__CUPTI_ALL)
#undef FT__CUPTI_ALL
#undef FT__SHIM_OPT
#undef FT__SHIM_SYM
#undef FT__SHIM_LOADER

/* ft__<cupti function>(api, err, errlen, args...): calls through the table and
 * turns the CUptiResult into an ft_status, keeping CUPTI's own message in err. */
#define FT__SHIM_PREPEND(...) (const ft__cupti_api *api, char *err, size_t errlen, __VA_ARGS__)
#define FT__SHIM_WRAP(ret, name, params, args)                                                                \
  static inline ft_status ft__##name FT__SHIM_PREPEND params {                                                \
    if (!api->name) { /* optional in this vendor's library (MCPTI) */                                         \
      snprintf(err, errlen, "%s%s: not in this library", FT_CUPTI_PREFIX, &#name[5]);                         \
      return FT_EUNAVAILABLE;                                                                                 \
    }                                                                                                         \
    CUptiResult r = api->name args;                                                                           \
    if (r == CUPTI_SUCCESS) return FT_OK;                                                                     \
    const char *msg = NULL;                                                                                   \
    if (!api->cuptiGetResultString || api->cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || !msg) msg = "?"; \
    snprintf(err, errlen, "%s%s: %s (result %d)", FT_CUPTI_PREFIX, &#name[5], msg, (int)r);                   \
    return FT_EVENDOR;                                                                                        \
  }
FT_CUPTI_FUNCS(FT__SHIM_WRAP)
#undef FT__SHIM_WRAP
#undef FT__SHIM_PREPEND

#endif
