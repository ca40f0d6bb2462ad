/* dlopen binding of Moore Threads' libmupti from one X-macro list, with our own
 * declarations of its types and records (no header here). MUPTI is a CUPTI clone:
 * the kind values and record layouts below are CUPTI's (Kernel6, Memcpy4, Memset3,
 * API, ExternalCorrelation) under MUPTI's names; exact offsets are unverified on
 * MUSA hardware, which is why the README calls this path CI-decode only. */
#ifndef FLAGTRACE_MUPTI_SHIM_H
#define FLAGTRACE_MUPTI_SHIM_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

#include "flagtrace/flagtrace.h"
#include "../core/tracer_support.h"

typedef int MUptiResult;
enum { MUPTI_SUCCESS = 0, MUPTI_ERROR_MAX_LIMIT_REACHED = 12 };
enum {
  MUPTI_ACTIVITY_KIND_MEMCPY = 1,
  MUPTI_ACTIVITY_KIND_MEMSET = 2,
  MUPTI_ACTIVITY_KIND_KERNEL = 3,
  MUPTI_ACTIVITY_KIND_DRIVER = 4,
  MUPTI_ACTIVITY_KIND_RUNTIME = 5,
  MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,
  MUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION = 39,
};
enum { MUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 = 3 };
enum { MUPTI_CB_DOMAIN_DRIVER_API = 1, MUPTI_CB_DOMAIN_RUNTIME_API = 2 };
enum { MUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 };

typedef struct MUpti_Activity {
  uint32_t kind;
} MUpti_Activity;

typedef struct MUpti_ActivityKernel6 {
  uint32_t kind;
  uint8_t cacheConfig;
  uint8_t sharedMemoryConfig;
  uint16_t registersPerThread;
  uint32_t partitionedGlobalCacheRequested;
  uint32_t partitionedGlobalCacheExecuted;
  uint64_t start, end, completed;
  uint32_t deviceId, contextId, streamId;
  int32_t gridX, gridY, gridZ, blockX, blockY, blockZ;
  int32_t staticSharedMemory, dynamicSharedMemory;
  uint32_t localMemoryPerThread, localMemoryTotal;
  uint32_t correlationId;
  int64_t gridId;
  const char *name;
  void *reserved0;
  uint64_t queued, submitted;
  uint8_t launchType, isSharedMemoryCarveoutRequested, sharedMemoryCarveoutRequested, padding;
  uint32_t sharedMemoryExecuted;
  uint64_t graphNodeId;
  uint32_t shmemLimitConfig;
  uint32_t graphId;
  void *pAccessPolicyWindow;
} MUpti_ActivityKernel6;

typedef struct MUpti_ActivityMemcpy4 {
  uint32_t kind;
  uint8_t copyKind, srcKind, dstKind, flags;
  uint64_t bytes, start, end;
  uint32_t deviceId, contextId, streamId, correlationId, runtimeCorrelationId, pad;
  void *reserved0;
  uint64_t graphNodeId;
  uint32_t graphId, padding;
} MUpti_ActivityMemcpy4;

typedef struct MUpti_ActivityMemset3 {
  uint32_t kind;
  uint32_t value;
  uint64_t bytes, start, end;
  uint32_t deviceId, contextId, streamId, correlationId;
  uint16_t flags, memoryKind;
  uint32_t pad;
  void *reserved0;
  uint64_t graphNodeId;
  uint32_t graphId, padding;
} MUpti_ActivityMemset3;

typedef struct MUpti_ActivityAPI {
  uint32_t kind;
  uint32_t cbid;
  uint64_t start, end;
  uint32_t processId, threadId, correlationId, returnValue;
} MUpti_ActivityAPI;

typedef struct MUpti_ActivityExternalCorrelation {
  uint32_t kind;
  uint32_t externalKind;
  uint64_t externalId;
  uint32_t correlationId, reserved;
} MUpti_ActivityExternalCorrelation;

typedef void (*MUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*MUpti_BuffersCallbackCompleteFunc)(void *context, uint32_t stream_id, uint8_t *buffer, size_t size,
                                                  size_t valid_size);

/* X(return type, name, (parameters), (arguments), required) */
#define FT_MUPTI_FUNCS(X)                                                                                              \
  X(MUptiResult, muptiActivityRegisterCallbacks,                                                                       \
    (MUpti_BuffersCallbackRequestFunc requested, MUpti_BuffersCallbackCompleteFunc completed), (requested, completed), \
    1)                                                                                                                 \
  X(MUptiResult, muptiActivityEnable, (int kind), (kind), 1)                                                           \
  X(MUptiResult, muptiActivityDisable, (int kind), (kind), 1)                                                          \
  X(MUptiResult, muptiActivityFlushAll, (uint32_t flag), (flag), 1)                                                    \
  X(MUptiResult, muptiActivityGetNextRecord, (uint8_t * buffer, size_t valid_size, MUpti_Activity * *record),          \
    (buffer, valid_size, record), 1)                                                                                   \
  X(MUptiResult, muptiActivityGetNumDroppedRecords, (void *context, uint32_t stream_id, size_t *dropped),              \
    (context, stream_id, dropped), 1)                                                                                  \
  X(MUptiResult, muptiActivityPushExternalCorrelationId, (int kind, uint64_t id), (kind, id), 1)                       \
  X(MUptiResult, muptiActivityPopExternalCorrelationId, (int kind, uint64_t *last_id), (kind, last_id), 1)             \
  X(MUptiResult, muptiGetTimestamp, (uint64_t * timestamp), (timestamp), 1)                                            \
  X(MUptiResult, muptiGetCallbackName, (int domain, uint32_t cbid, const char **name), (domain, cbid, name), 0)

#define FT__MUPTI_PFN(ret, name, params, args, req) typedef ret(*ft__pfn_##name) params;
FT_MUPTI_FUNCS(FT__MUPTI_PFN)
#undef FT__MUPTI_PFN

typedef struct ft__mupti_api {
  void *handle;
#define FT__MUPTI_FIELD(ret, name, params, args, req) ft__pfn_##name name;
  FT_MUPTI_FUNCS(FT__MUPTI_FIELD)
#undef FT__MUPTI_FIELD
} ft__mupti_api;

static inline int ft__mupti_load_symbols(ft__mupti_api *api, void *handle, char *why, size_t why_len) {
  api->handle = handle;
#define FT__MUPTI_SYM(ret, name, params, args, req) FT__SHIM_RESOLVE(name, req)
  FT_MUPTI_FUNCS(FT__MUPTI_SYM)
#undef FT__MUPTI_SYM
  return 1;
}

#define FT__MUPTI_PREPEND(...) (const ft__mupti_api *api, char *err, size_t errlen, __VA_ARGS__)
#define FT__MUPTI_WRAP(ret, name, params, args, req)            \
  static inline ft_status ft__##name FT__MUPTI_PREPEND params { \
    if (!api->name) {                                           \
      snprintf(err, errlen, "%s: not in this MUPTI", #name);    \
      return FT_EUNAVAILABLE;                                   \
    }                                                           \
    MUptiResult r = api->name args;                             \
    if (r == MUPTI_SUCCESS) return FT_OK;                       \
    snprintf(err, errlen, "%s: MUptiResult %d", #name, r);      \
    return FT_EVENDOR;                                          \
  }
FT_MUPTI_FUNCS(FT__MUPTI_WRAP)
#undef FT__MUPTI_WRAP
#undef FT__MUPTI_PREPEND

#endif
