/* The vendor contract: event kinds, the device event, and the tracer ops table. */
#ifndef FLAGTRACE_DEVICE_TRACER_H
#define FLAGTRACE_DEVICE_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flagtrace/flagtrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a vendor record becomes. Nothing here names a vendor type: every tracer
 * translates its own records into ft_device_event and nothing above src/tracers/
 * sees more. */
typedef enum ft_event_kind {
  FT_EVENT_KERNEL = 0,
  FT_EVENT_MEMCPY = 1,
  FT_EVENT_MEMSET = 2,
  FT_EVENT_RUNTIME = 3,
  FT_EVENT_DRIVER = 4, /* driver API calls (cuLaunchKernel from Triton, ...) */
  /* A wait the program made the device report (CUPTI's synchronization records:
   * stream, event, context syncs, stream-wait-event): on the device row (device,
   * stream; stream UINT32_MAX when the sync names none), correlation_id the API
   * call's. Never device time: it is on no kernel's clock. */
  FT_EVENT_SYNC = 5,
  /* Exported only (ft_session_foreach_event), never from a tracer: a CPU range
   * projected onto a device row (device, stream, external_id = the range's id). */
  FT_EVENT_GPU_USER_ANNOTATION = 6,
  /* A device memory operation (issue 51): an allocation, a free, or a pool's
   * reservation change, at one instant (start_ns == end_ns), on (device, stream;
   * stream UINT32_MAX when the call names none), correlation_id the runtime call's
   * that made it (0 when the vendor gives none; then thread_id, when non-zero,
   * names the calling thread). The numbers are in ft_device_event.memory. */
  FT_EVENT_MEMORY = 7,
} ft_event_kind;

/* What a memory event did. */
typedef enum ft_memory_op {
  FT_MEMORY_ALLOC = 1,     /* bytes at address became allocated */
  FT_MEMORY_FREE = 2,      /* the allocation at address was released */
  FT_MEMORY_RESERVE = 3,   /* a pool was created or grew: bytes more reserved at pool */
  FT_MEMORY_UNRESERVE = 4, /* a pool was trimmed or destroyed: bytes less reserved at pool */
} ft_memory_op;

/* Where the memory lives, as the vendor names it (the same for every vendor). */
typedef enum ft_memory_kind {
  FT_MEMKIND_UNKNOWN = 0,
  FT_MEMKIND_DEVICE = 1,   /* device memory (cudaMalloc, aclrtMalloc, hipMalloc, ...) */
  FT_MEMKIND_PINNED = 2,   /* page-locked host memory (cudaHostAlloc, ...) */
  FT_MEMKIND_MANAGED = 3,  /* unified / managed memory */
  FT_MEMKIND_PAGEABLE = 4, /* ordinary host memory the vendor reported */
  FT_MEMKIND_OTHER = 5,    /* arrays, device-static, ... */
} ft_memory_kind;

/* The numbers of one FT_EVENT_MEMORY event. The core keeps the running totals
 * (allocated and reserved per device, in timestamp order), so a tracer reports
 * only the operation. */
typedef struct ft_memory_info {
  ft_memory_op op;
  ft_memory_kind memory_kind;
  uint64_t address; /* the allocation's (RESERVE/UNRESERVE: the pool's base) */
  /* ALLOC/RESERVE/UNRESERVE: the bytes of the operation. FREE: the freed
   * allocation's size when the vendor says it, 0 when it does not (the core then
   * finds it by address among the allocations it saw). */
  uint64_t bytes;
  /* The base address of the pool an ALLOC/FREE came from (stream-ordered
   * allocators: cudaMallocAsync, ...), 0 for none: an allocation outside any pool
   * reserves what it allocates. */
  uint64_t pool;
} ft_memory_info;

/* A set of kinds to record: bit (1 << kind), the FT_ACTIVITY_* flags of flagtrace.h. */
#define FT_KIND_BIT(kind) (1u << (kind))

/* One metadata entry, e.g. {"grid", "[8,16,5]"}. Values are text; the trace writer
 * emits a value raw only when it is provably a JSON literal (number, true/false/
 * null, or a bracketed list of numbers) and quotes everything else. */
typedef struct ft_kv {
  const char *key;
  const char *value;
} ft_kv;

/* One device-side (or runtime API) event as a tracer hands it to the core. All
 * pointers are borrowed for the duration of the sink call only: the core copies
 * what it keeps.
 *
 * Two independent ids (design.md §2; confusing them fails silently):
 *  - correlation_id: the vendor's id; pairs a runtime call with the device work it
 *    launched. Drives flow arrows only. 0 = none.
 *  - external_id: the framework's id of the CPU op/range that issued the work.
 *    Drives device-time attribution only. 0 is a valid id, so its presence is the
 *    separate flag has_external_id. */
typedef struct ft_device_event {
  ft_event_kind kind;
  uint64_t start_ns; /* UNIX epoch (CLOCK_REALTIME) nanoseconds */
  uint64_t end_ns;
  uint32_t correlation_id;
  bool has_external_id;
  uint64_t external_id;
  uint32_t device;
  uint32_t stream;    /* device events; 0 for runtime events */
  uint32_t thread_id; /* runtime events: the calling OS thread id */
  const char *name;   /* already demangled; never NULL */
  const ft_kv *metadata;
  size_t n_metadata;
  /* FT_EVENT_MEMORY only (never NULL there); NULL for every other kind. */
  const ft_memory_info *memory;
} ft_device_event;

/* Where a tracer delivers what it decodes. Both functions are thread-safe and may
 * be called from any thread (e.g. the vendor's buffer-completion thread) between
 * start() and the return of stop(); they return non-OK only when out of memory. */
typedef struct ft_event_sink {
  ft_status (*event)(void *ctx, const ft_device_event *event);
  /* Reports that vendor correlation_id was issued inside the framework op
   * external_id. The core resolves these after stop, so an event decoded before
   * its correlation record (buffers complete in any order) is still attributed.
   * An event that carries has_external_id itself keeps its own id. */
  ft_status (*external_id)(void *ctx, uint32_t correlation_id, uint64_t external_id);
  void *ctx;
  /* Optional (NULL: not taken). A vendor call the tracer leaves out of the rows (a
   * filtered API) but that may have launched device work, from a tracer that
   * stamps calls on the core's clock (calls_on_core_clock): the core attributes it
   * by time like an API event, so the device work under correlation_id still gets
   * its op. Times as in ft_device_event; thread_id the calling OS thread. */
  ft_status (*call_span)(void *ctx, uint32_t correlation_id, uint32_t thread_id, uint64_t start_ns, uint64_t end_ns);
  /* Optional (NULL: not taken). The tracer found that device activity from at_ns on
   * is lost for a reason other than dropped records (another client of the vendor's
   * API kept buffers it was lent): why is one line, copied. */
  void (*lost)(void *ctx, uint64_t at_ns, const char *why);
} ft_event_sink;

typedef struct ft_tracer ft_tracer;

/* One tracer backend, one const instance per tracer file. Threading: start, stop,
 * destroy are called by one thread at a time (the session serializes them);
 * push/pop_correlation are called on arbitrary threads concurrently and act on the
 * calling thread's correlation stack. A session calls start, then stop. */
typedef struct ft_tracer_ops {
  const char *name; /* "cupti", "unavailable", ... */
  /* The trace category of runtime events: "cuda_runtime" where torch-cuda users
   * expect it, "privateuse1_runtime" for the other vendors. */
  const char *runtime_category;
  const char *driver_category; /* "cuda_driver" on NVIDIA */
  /* True when the vendor library was bound and can trace. When false, *why gets a
   * one-line reason owned by the tracer. */
  bool (*available)(const ft_tracer *t, const char **why);
  /* Arms the vendor API for the kinds in the FT_KIND_BIT set (nothing may be armed
   * before this: idle cost must be zero) and remembers sink, which must stay valid
   * until stop returns. */
  ft_status (*start)(ft_tracer *t, const ft_event_sink *sink, unsigned kinds);
  /* Flushes (forced), delivers everything still buffered, and disarms. No sink
   * call happens after it returns. */
  ft_status (*stop)(ft_tracer *t);
  ft_status (*push_correlation)(ft_tracer *t, uint64_t external_id);
  ft_status (*pop_correlation)(ft_tracer *t);
  /* Optional (NULL when the vendor's devices are not queried): devices the vendor
   * reports (0 when it cannot tell); read after stop, for deviceProperties. */
  int (*device_count)(const ft_tracer *t);
  /* Optional (NULL when the vendor offers no device queries): the properties of
   * device (0 .. device_count-1) as kineto's deviceProperties names them (name,
   * totalGlobalMem, computeMajor, ..., numSms); only those the vendor offers.
   * Values are text, written raw when provably a JSON literal. Returns how many;
   * *props stays valid until destroy. Called after stop, so that these queries
   * are never recorded as the program's own API calls. */
  size_t (*device_properties)(ft_tracer *t, int device, const ft_kv **props);
  /* Records the vendor reported as dropped since start. */
  uint64_t (*dropped_records)(const ft_tracer *t);
  /* The last vendor error text ("" when none), owned by the tracer. */
  const char *(*last_error)(const ft_tracer *t);
  void (*destroy)(ft_tracer *t);
  /* Optional (NULL when the vendor has no such API): calls on(ctx, true) when the
   * program asks the vendor profiler to start (cudaProfilerStart) and on(ctx,
   * false) when it asks it to stop, on the calling thread. Called before start; a
   * tracer that watches enables its activity at the first start call, not at
   * start(), so that a process waiting for its range pays nothing per launch. */
  ft_status (*watch_profiler_api)(ft_tracer *t, void (*on)(void *ctx, bool start), void *ctx);
  /* Optional (NULL = never): asked right after a successful start. True when every
   * API event and call span of this run was stamped, inside the call and on the
   * calling thread, with CLOCK_REALTIME as the core reads it (the vendor library
   * takes its timestamps from us). The core then never calls push/pop_correlation:
   * it notes each push and pop with the time and attributes every call to the
   * innermost id open around it on its thread (design.md §2), which saves the
   * vendor's per-op push, pop and correlation record. */
  bool (*calls_on_core_clock)(const ft_tracer *t);
  /* Optional (NULL: not offered). While armed: delivers to the sink every record of
   * work that has completed by now, without disarming (a session attached to a
   * running one reads its window from it). */
  ft_status (*flush)(ft_tracer *t);
  /* Optional (NULL: not offered). Another client of the vendor's activity API is
   * about to take it over (it registers its own buffer callbacks): delivers what is
   * buffered, disarms, and never calls the vendor's activity API again in this
   * process (its buffers would reach the other client, which frees them). */
  void (*relinquish)(ft_tracer *t);
} ft_tracer_ops;

/* Every tracer instance begins with this header; vendor state follows it. */
struct ft_tracer {
  const ft_tracer_ops *ops;
};

/* ---- reading a stopped session (framework adaptors) ---- */

enum { FT_FLOW_NONE = 0, FT_FLOW_START = 1, FT_FLOW_END = 2 };

/* One exported device or API event with its flow half, as torch-cuda draws them:
 * the launching API call gets START and every device event of the launch END, all
 * with the vendor correlation id (below 2^32, what kineto's activities hold), so a
 * graph replay's nodes all point at their one launch. No half dangles: a launch
 * gets START only when some device event of it is exported, and the other way round.
 * Pointers are valid during the visitor call only. */
typedef struct ft_export_event {
  ft_device_event event;
  int flow;         /* FT_FLOW_*: START on the launching API call, END on the device event */
  uint64_t flow_id; /* non-zero when flow != FT_FLOW_NONE */
  /* Stable within the session: events with equal name_key have equal names, and
   * events with equal meta_key and n_metadata equal metadata lists (the core stores
   * each once), so an adaptor renders each name and list once, not per event. */
  uint32_t name_key;
  uint32_t meta_key;
} ft_export_event;

/* Receives events; returns non-zero to stop the walk. */
typedef int (*ft_export_visitor)(void *ctx, const ft_export_event *event);

/* Walks the stopped session's device and API events that lie wholly inside
 * [lo_ns, hi_ns] (UNIX-epoch ns; strict containment), in recording order, with the
 * same pairing rules as the trace writer. CPU ranges are not visited. Returns
 * FT_ESTATE unless the session was stopped. *discarded (nullable) receives how many
 * device/API events fell outside the window. FT_EINVAL when lo_ns > hi_ns. */
FT_EXPORT ft_status ft_session_foreach_event(ft_session *session, uint64_t lo_ns, uint64_t hi_ns,
                                             ft_export_visitor visit, void *ctx, uint64_t *discarded);

/* Devices and streams that carry exported device events, for row labels. Fills up
 * to max (device, stream) pairs and returns how many there are. Valid after stop;
 * 0 before, or when max > 0 and devices or streams is NULL. */
FT_EXPORT size_t ft_session_streams(ft_session *session, uint32_t *devices, uint32_t *streams, size_t max);

/* The one factory of this build: exactly one tracer file defines it, selected by
 * FLAGOS_ACCELERATOR at configure time. It never fails for a missing vendor
 * library (that is an unavailable tracer); it fails only for FT_ENOMEM. */
ft_status ft_make_device_tracer(ft_tracer **out);

#ifdef __cplusplus
}
#endif

#endif
