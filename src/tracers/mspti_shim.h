/* dlopen binding of Ascend CANN's libmspti from one X-macro list, with our own
 * declarations of the few MSPTI types and record layouts used (no header here). */
#ifndef FLAGTRACE_MSPTI_SHIM_H
#define FLAGTRACE_MSPTI_SHIM_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flagtrace/flagtrace.h"
#include "../core/tracer_support.h"

/* Public MSPTI facts (../shared/notes/vendor-apis.md). */
typedef int msptiResult; /* 0 = MSPTI_SUCCESS */
enum { MSPTI_SUCCESS = 0, MSPTI_ERROR_MAX_LIMIT_REACHED = 3 };
typedef int msptiActivityKind;
enum {
  MSPTI_ACTIVITY_KIND_MARKER = 1,
  MSPTI_ACTIVITY_KIND_KERNEL = 2,
  MSPTI_ACTIVITY_KIND_API = 3,
  MSPTI_ACTIVITY_KIND_HCCL = 4,
  MSPTI_ACTIVITY_KIND_MEMORY = 5,
  MSPTI_ACTIVITY_KIND_MEMSET = 6,
  MSPTI_ACTIVITY_KIND_MEMCPY = 7,
  MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION = 8,
};
/* msptiActivityMemory's operation and memory kinds (mspti_activity.h, CANN's
 * MindStudio-Profiler-Tools-Interface csrc/include/). */
enum { MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION = 0, MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE = 1 };
enum { MSPTI_ACTIVITY_MEMORY_UNKNOWN = 0, MSPTI_ACTIVITY_MEMORY_DEVICE = 1 };
#define MSPTI_INVALID_STREAM_ID UINT32_MAX
#define MSPTI_INVALID_DEVICE_ID UINT32_MAX
typedef int msptiExternalCorrelationKind;
enum { MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 = 2 };
typedef struct msptiActivity msptiActivity; /* opaque: read by byte offsets below */
typedef void *msptiSubscriberHandle;
typedef void (*msptiCallbackFunc)(void *userdata, int domain, uint32_t cbid, const void *data);
typedef void (*msptiBuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*msptiBuffersCallbackCompleteFunc)(uint8_t *buffer, size_t size, size_t valid_size);

/* Records are packed with 8-byte overall alignment and a 4-byte kind first, so
 * 64-bit fields sit at offset 4: a naturally aligned C struct would read the wrong
 * bytes. Each layout is therefore a list of byte offsets, read with memcpy. */
enum {
  MSPTI_KERNEL_START = 4,
  MSPTI_KERNEL_END = 12,
  MSPTI_KERNEL_DEVICE = 20,
  MSPTI_KERNEL_STREAM = 24,
  MSPTI_KERNEL_CORRELATION = 28,
  MSPTI_KERNEL_TYPE = 36,
  MSPTI_KERNEL_NAME = 44,
  MSPTI_KERNEL_SIZE = 56,

  MSPTI_API_START = 4,
  MSPTI_API_END = 12,
  MSPTI_API_PROCESS = 20,
  MSPTI_API_THREAD = 24,
  MSPTI_API_CORRELATION = 28,
  MSPTI_API_NAME = 36,
  MSPTI_API_SIZE = 48,

  /* memcpy and memset share one layout; offset 4 is copyKind or the fill value */
  MSPTI_MEM_KIND_OR_VALUE = 4,
  MSPTI_MEM_BYTES = 8,
  MSPTI_MEM_START = 16,
  MSPTI_MEM_END = 24,
  MSPTI_MEM_DEVICE = 32,
  MSPTI_MEM_STREAM = 36,
  MSPTI_MEM_CORRELATION = 40,
  MSPTI_MEM_ASYNC = 48,
  MSPTI_MEM_SIZE = 56,

  /* msptiActivityMemory, as mspti_activity.h declares it (packed, 8-aligned):
   * kind, memoryOperationType, memoryKind (4 bytes each), correlationId, start,
   * end, address, bytes (8 each), processId, deviceId, streamId (4 each). MSPTI
   * fills bytes on a release too (from its own address map); streamId is
   * MSPTI_INVALID_STREAM_ID for a synchronous call. */
  MSPTI_MEMORY_OP = 4,
  MSPTI_MEMORY_KIND = 8,
  MSPTI_MEMORY_CORRELATION = 12,
  MSPTI_MEMORY_START = 20,
  MSPTI_MEMORY_END = 28,
  MSPTI_MEMORY_ADDRESS = 36,
  MSPTI_MEMORY_BYTES = 44,
  MSPTI_MEMORY_PROCESS = 52,
  MSPTI_MEMORY_DEVICE = 56,
  MSPTI_MEMORY_STREAM = 60,
  MSPTI_MEMORY_SIZE = 64,

  MSPTI_EXT_KIND = 4,
  MSPTI_EXT_ID = 8,
  MSPTI_EXT_CORRELATION = 16,
  MSPTI_EXT_SIZE = 24,
};

/* The packed size of a record of a kind we decode; 0 for the others. */
static inline size_t ft__mspti_record_size(uint32_t kind) {
  switch (kind) {
  case MSPTI_ACTIVITY_KIND_KERNEL: return MSPTI_KERNEL_SIZE;
  case MSPTI_ACTIVITY_KIND_API: return MSPTI_API_SIZE;
  case MSPTI_ACTIVITY_KIND_MEMCPY:
  case MSPTI_ACTIVITY_KIND_MEMSET: return MSPTI_MEM_SIZE;
  case MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return MSPTI_EXT_SIZE;
  case MSPTI_ACTIVITY_KIND_MEMORY: return MSPTI_MEMORY_SIZE;
  default: return 0;
  }
}

/* X(return type, name, (parameters), (arguments), required). Optional entries
 * (newer CANN releases only) may be missing; required ones make the library unusable. */
#define FT_MSPTI_FUNCS(X)                                                                                              \
  X(msptiResult, msptiSubscribe, (msptiSubscriberHandle * subscriber, msptiCallbackFunc callback, void *userdata),     \
    (subscriber, callback, userdata), 1)                                                                               \
  X(msptiResult, msptiUnsubscribe, (msptiSubscriberHandle subscriber), (subscriber), 1)                                \
  X(msptiResult, msptiActivityRegisterCallbacks,                                                                       \
    (msptiBuffersCallbackRequestFunc requested, msptiBuffersCallbackCompleteFunc completed), (requested, completed),   \
    1)                                                                                                                 \
  X(msptiResult, msptiActivityEnable, (msptiActivityKind kind), (kind), 1)                                             \
  X(msptiResult, msptiActivityDisable, (msptiActivityKind kind), (kind), 1)                                            \
  X(msptiResult, msptiActivityGetNextRecord, (uint8_t * buffer, size_t valid_size, msptiActivity * *record),           \
    (buffer, valid_size, record), 1)                                                                                   \
  X(msptiResult, msptiActivityFlushAll, (uint32_t flag), (flag), 1)                                                    \
  X(msptiResult, msptiActivityPushExternalCorrelationId, (msptiExternalCorrelationKind kind, uint64_t id), (kind, id), \
    1)                                                                                                                 \
  X(msptiResult, msptiActivityPopExternalCorrelationId, (msptiExternalCorrelationKind kind, uint64_t * last_id),       \
    (kind, last_id), 1)                                                                                                \
  X(msptiResult, msptiGetTimestamp, (uint64_t * timestamp), (timestamp), 0)                                            \
  X(msptiResult, msptiActivityGetNumDroppedRecords, (size_t * dropped), (dropped), 0)

#define FT__MSPTI_PFN(ret, name, params, args, req) typedef ret(*ft__pfn_##name) params;
FT_MSPTI_FUNCS(FT__MSPTI_PFN)
#undef FT__MSPTI_PFN

typedef struct ft__mspti_api {
  void *handle;
#define FT__MSPTI_FIELD(ret, name, params, args, req) ft__pfn_##name name;
  FT_MSPTI_FUNCS(FT__MSPTI_FIELD)
#undef FT__MSPTI_FIELD
} ft__mspti_api;

/* Resolves the list from handle; a missing required symbol names itself in why. */
static inline int ft__mspti_load_symbols(ft__mspti_api *api, void *handle, char *why, size_t why_len) {
  api->handle = handle;
#define FT__MSPTI_SYM(ret, name, params, args, req) FT__SHIM_RESOLVE(name, req)
  FT_MSPTI_FUNCS(FT__MSPTI_SYM)
#undef FT__MSPTI_SYM
  return 1;
}

/* ft__<mspti function>(api, err, errlen, args...): the call as an ft_status, with
 * the function's name and MSPTI's result code kept in err. */
#define FT__MSPTI_PREPEND(...) (const ft__mspti_api *api, char *err, size_t errlen, __VA_ARGS__)
#define FT__MSPTI_WRAP(ret, name, params, args, req)            \
  static inline ft_status ft__##name FT__MSPTI_PREPEND params { \
    if (!api->name) {                                           \
      snprintf(err, errlen, "%s: not in this MSPTI", #name);    \
      return FT_EUNAVAILABLE;                                   \
    }                                                           \
    msptiResult r = api->name args;                             \
    if (r == MSPTI_SUCCESS) return FT_OK;                       \
    snprintf(err, errlen, "%s: msptiResult %d", #name, r);      \
    return FT_EVENDOR;                                          \
  }
FT_MSPTI_FUNCS(FT__MSPTI_WRAP)
#undef FT__MSPTI_WRAP
#undef FT__MSPTI_PREPEND

#endif
