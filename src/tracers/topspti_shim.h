/* dlopen binding of Enflame's libtopspti from one X-macro list, with our own
 * declarations of its types and records: no public TOPSPTI header exists.
 *
 * What public code shows (field names, functions, signatures):
 *  - Enflame's kineto fork for torch_gcu, sunnygui-L/torch-gcu,
 *    torch_gcu/csrc/libkineto_gcu/src/{TopsptiActivityApi,TopsptiActivity,
 *    TopsptiActivityProfiler,TopsptiCallbackApi,DeviceProperties}.cpp: records are
 *    read with topsptiActivityGetNextRecord(buffer, validSize, &record) until
 *    TOPSPTI_ERROR_MAX_LIMIT_REACHED; buffer completion is (buffer, size, validSize);
 *    external-correlation push/pop is commented out (no such API);
 *    topsptiSubscribe(&subscriber, callback, userdata), topsptiEnableDomain(1, sub,
 *    domain), topsptiGetVersion(uint32_t *).
 *  - FlagPrism's Enflame profiler (ChijinZ/FlagPrism and Jacob-yen/FlagPrism,
 *    Profiler/csrc/lib/Profiler/Vendor/EnflameProfiler.cpp, built against the real
 *    headers): every field declared below, the callback data's callbackSite and
 *    correlationId read at TOPSPTI_API_ENTER, and
 *    topsptiActivityGetNumDroppedRecords(size_t *) with ONE argument (the kineto
 *    fork's commented-out call copies CUPTI's three; we follow the compiled one).
 *    Its Enflame notes report API version 4 from topsptiGetVersion (TOPS runtime
 *    1.9.29), API records' thread ids being pthread ids by default, kernel
 *    `completed` = 0 meaning unknown, and no driver activity on that SDK.
 *  - flagos-ai/Torch-FL csrc/profiler/gcu_topspti_device_tracer.cc and
 *    topspti_shim.h: the same API-enter recovery of the framework id, the library
 *    at /opt/tops/extras/TOPSPTI/lib64/libtopspti.so, result 0 = success, flush
 *    flag 1 = forced.
 *
 * ASSUMED, not seen anywhere: the field ORDER and the numeric enum values. Both are
 * CUPTI's for the equivalent records (Kernel4's prefix, Memcpy, Memset2, API,
 * CUpti_CallbackData), because TOPSPTI mirrors CUPTI's names throughout. Fields
 * CUPTI has in those positions that no TOPSPTI consumer reads (registers, shared
 * memory: only commented-out code mentions them) are declared unnamed and never
 * read. Verified only by decoding records our fake library lays out the same way. */
#ifndef FLAGTRACE_TOPSPTI_SHIM_H
#define FLAGTRACE_TOPSPTI_SHIM_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

#include "flagtrace/flagtrace.h"
#include "../core/tracer_support.h"

/* the topsptiGetVersion value the layouts below were written for */
enum { FT_TOPSPTI_LAYOUT_VERSION = 4 };

typedef int TopsptiResult;
enum { TOPSPTI_SUCCESS = 0, TOPSPTI_ERROR_MAX_LIMIT_REACHED = 12 /* ASSUMED (CUPTI's) */ };
/* ASSUMED (CUPTI's values) */
enum {
  TOPSPTI_ACTIVITY_KIND_MEMCPY = 1,
  TOPSPTI_ACTIVITY_KIND_MEMSET = 2,
  TOPSPTI_ACTIVITY_KIND_KERNEL = 3,
  TOPSPTI_ACTIVITY_KIND_DRIVER = 4,
  TOPSPTI_ACTIVITY_KIND_RUNTIME = 5,
};
enum { TOPSPTI_CB_DOMAIN_DRIVER_API = 1, TOPSPTI_CB_DOMAIN_RUNTIME_API = 2 }; /* ASSUMED */
enum { TOPSPTI_API_ENTER = 0, TOPSPTI_API_EXIT = 1 };                         /* ASSUMED */
enum { TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 };

typedef struct Topspti_Activity {
  uint32_t kind;
} Topspti_Activity;

typedef struct Topspti_ActivityKernel {
  uint32_t kind;
  uint8_t unread_cache_config[2]; /* CUPTI: cacheConfig, sharedMemoryConfig */
  uint16_t unread_registers;      /* CUPTI: registersPerThread */
  uint32_t unread_partitioned[2]; /* CUPTI: partitionedGlobalCache{Requested,Executed} */
  uint64_t start, end;
  uint64_t completed; /* 0 = unknown (FlagPrism's notes); not used */
  uint32_t deviceId, contextId, streamId;
  int32_t gridX, gridY, gridZ, blockX, blockY, blockZ;
  int32_t unread_shared_memory[2]; /* CUPTI: static/dynamicSharedMemory */
  uint32_t unread_local_memory[2]; /* CUPTI: localMemoryPerThread, localMemoryTotal */
  uint32_t correlationId;
  int64_t gridId;
  const char *name;
} Topspti_ActivityKernel;

typedef struct Topspti_ActivityMemcpy {
  uint32_t kind;
  uint8_t copyKind, srcKind, dstKind, flags;
  uint64_t bytes, start, end;
  uint32_t deviceId, contextId, streamId, correlationId;
} Topspti_ActivityMemcpy;

typedef struct Topspti_ActivityMemset {
  uint32_t kind;
  uint32_t value;
  uint64_t bytes, start, end;
  uint32_t deviceId, contextId, streamId, correlationId;
  uint16_t flags, memoryKind;
} Topspti_ActivityMemset;

typedef struct Topspti_ActivityAPI {
  uint32_t kind;
  uint32_t cbid;
  uint64_t start, end;
  uint32_t processId, threadId, correlationId, returnValue;
} Topspti_ActivityAPI;

typedef struct Topspti_CallbackData {
  int callbackSite;
  const char *functionName;
  const void *functionParams;
  void *functionReturnValue;
  const char *symbolName;
  void *context;
  uint32_t contextUid;
  uint64_t *correlationData;
  uint32_t correlationId;
} Topspti_CallbackData;

typedef void *Topspti_SubscriberHandle;
typedef void (*Topspti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*Topspti_BuffersCallbackCompleteFunc)(uint8_t *buffer, size_t size, size_t valid_size);
typedef void (*Topspti_CallbackFunc)(void *userdata, int domain, uint32_t cbid, const void *data);

/* X(return type, name, (parameters), (arguments), required) */
#define FT_TOPSPTI_FUNCS(X)                                                                                         \
  X(TopsptiResult, topsptiActivityRegisterCallbacks,                                                                \
    (Topspti_BuffersCallbackRequestFunc requested, Topspti_BuffersCallbackCompleteFunc completed),                  \
    (requested, completed), 1)                                                                                      \
  X(TopsptiResult, topsptiActivityEnable, (int kind), (kind), 1)                                                    \
  X(TopsptiResult, topsptiActivityDisable, (int kind), (kind), 1)                                                   \
  X(TopsptiResult, topsptiActivityFlushAll, (uint32_t flag), (flag), 1)                                             \
  X(TopsptiResult, topsptiActivityGetNextRecord, (uint8_t * buffer, size_t valid_size, Topspti_Activity * *record), \
    (buffer, valid_size, record), 1)                                                                                \
  X(TopsptiResult, topsptiActivityGetNumDroppedRecords, (size_t * dropped), (dropped), 1)                           \
  X(TopsptiResult, topsptiGetTimestamp, (uint64_t * timestamp), (timestamp), 1)                                     \
  X(TopsptiResult, topsptiSubscribe,                                                                                \
    (Topspti_SubscriberHandle * subscriber, Topspti_CallbackFunc callback, void *userdata),                         \
    (subscriber, callback, userdata), 1)                                                                            \
  X(TopsptiResult, topsptiUnsubscribe, (Topspti_SubscriberHandle subscriber), (subscriber), 1)                      \
  X(TopsptiResult, topsptiEnableDomain, (uint32_t enable, Topspti_SubscriberHandle subscriber, int domain),         \
    (enable, subscriber, domain), 1)                                                                                \
  X(TopsptiResult, topsptiGetVersion, (uint32_t * version), (version), 0)                                           \
  X(TopsptiResult, topsptiGetCallbackName, (int domain, uint32_t cbid, const char **name), (domain, cbid, name), 0)

#define FT__TOPSPTI_PFN(ret, name, params, args, req) typedef ret(*ft__pfn_##name) params;
FT_TOPSPTI_FUNCS(FT__TOPSPTI_PFN)
#undef FT__TOPSPTI_PFN

typedef struct ft__topspti_api {
  void *handle;
#define FT__TOPSPTI_FIELD(ret, name, params, args, req) ft__pfn_##name name;
  FT_TOPSPTI_FUNCS(FT__TOPSPTI_FIELD)
#undef FT__TOPSPTI_FIELD
} ft__topspti_api;

static inline int ft__topspti_load_symbols(ft__topspti_api *api, void *handle, char *why, size_t why_len) {
  api->handle = handle;
#define FT__TOPSPTI_SYM(ret, name, params, args, req) FT__SHIM_RESOLVE(name, req)
  FT_TOPSPTI_FUNCS(FT__TOPSPTI_SYM)
#undef FT__TOPSPTI_SYM
  return 1;
}

#define FT__TOPSPTI_PREPEND(...) (const ft__topspti_api *api, char *err, size_t errlen, __VA_ARGS__)
#define FT__TOPSPTI_WRAP(ret, name, params, args, req)            \
  static inline ft_status ft__##name FT__TOPSPTI_PREPEND params { \
    if (!api->name) {                                             \
      snprintf(err, errlen, "%s: not in this TOPSPTI", #name);    \
      return FT_EUNAVAILABLE;                                     \
    }                                                             \
    TopsptiResult r = api->name args;                             \
    if (r == TOPSPTI_SUCCESS) return FT_OK;                       \
    snprintf(err, errlen, "%s: TopsptiResult %d", #name, r);      \
    return FT_EVENDOR;                                            \
  }
FT_TOPSPTI_FUNCS(FT__TOPSPTI_WRAP)
#undef FT__TOPSPTI_WRAP
#undef FT__TOPSPTI_PREPEND

#endif
