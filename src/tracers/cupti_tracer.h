/* What the CUPTI tracer's three files share: cupti_tracer.c (arming, ops),
 * cupti_decode.c (API names, record decoding) and cupti_device.c (device queries).
 * Only they (and their fake-library tests) include it. */
#ifndef FLAGTRACE_CUPTI_TRACER_H
#define FLAGTRACE_CUPTI_TRACER_H

#ifdef FT_MCPTI
#define FT__TRACER_NAME "mcpti"
#else
#define FT__TRACER_NAME "cupti"
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cupti_occupancy.h"
#include "cupti_shim.h"
#include "flagtrace/device_tracer.h"
#include "tracer_support.h"

/* Our pushes use their own external-correlation kind so that they never mix with
 * kineto's (CUSTOM0 for ops, CUSTOM1 for user annotations). */
#define FT_EXT_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2

/* Where a completed buffer goes, chosen here once. CUPTI's are decoded as they
 * complete, a few at a time (hold_first). MCPTI's are held until stop and decoded
 * there: its clock is mapped from the start and stop samples, and its API-name lookup
 * can deadlock inside the buffer callback (design.md §9). */
#ifdef FT_MCPTI
enum { HOLD_UNTIL_STOP = 1 };
#else
enum { HOLD_UNTIL_STOP = 0 };
#endif

enum {
  /* 2 MiB (kineto hands out 4): CUPTI 13 keeps 3 buffers in flight whatever their
   * size, and each stays resident. On the H200, 1.05 M events from the armed session
   * grew the peak by 69.2 / 72.6 / 79.4 MB with 1 / 2 / 4 MiB buffers (P6), and the
   * launch loop was no slower at 2 MiB (docs/measurements.md). The pool hands CUPTI a
   * buffer whenever it asks, so smaller buffers mean more completions, not drops. */
  DEFAULT_BUF_SIZE = 2 * 1024 * 1024,
  /* A start's first 3 buffers (CUPTI 13 keeps 3 in flight) are 4 MiB, kineto's size:
   * a profile whose records fit in them completes none inside its region, as under
   * kineto. On the H200 a 10 000-op torch profile's kernel records (216 B each) fill
   * 2.16 MB; P3 in-loop read 0.990-0.992 in three whole runs with 2 MiB buffers
   * and 1 held, 0.973 [0.965, 0.986] with 4 MiB on the same machine. A longer capture
   * outgrows them and gives them back (ft__pool_first), so its memory is the 2 MiB
   * buffers' (P6). FLAGTRACE_CUPTI_FIRST_BUFFER_BYTES=0 turns them off. */
  FIRST_BUFFERS = 3,
  DEFAULT_FIRST_SIZE = 4 * 1024 * 1024,
  POOL_INITIAL = 8,
  /* 1 held buffer: a profile whose records fit in two buffers is decoded after its
   * region, as with one 4 MiB buffer; P6 pays 2 MiB for it */
  DEFAULT_HELD = 1,
  MAX_HELD = 8, /* FLAGTRACE_CUPTI_HELD_BUFFERS at most */
  MAX_DEVICES = 64,
  /* memory pools whose reserved level is followed (cupti_decode.c); more are decoded
   * without it (their records' own sizes, no level) */
  MAX_POOLS = 256,
};

/* A stream-ordered memory pool's reserved bytes as last reported to the sink: each of
 * its records (pool operations, and allocations and frees from it) gives its size, and
 * a change becomes a reserve or unreserve event (cupti_decode.c, docs/memory.md). */
typedef struct ft__cupti_pool {
  uint64_t address;
  uint32_t device;
  uint64_t level;
  /* from callbacks (cupti_memory.c): the first allocation from it since its level was
   * last read (0: none), and its correlation id, where growth found later is placed;
   * grew_by is read without mem_mu by the allocations after that first one */
  _Atomic uint64_t grew_by;
  uint32_t grew_corr, grew_stream;
} ft__cupti_pool;

typedef struct cupti_tracer {
  ft__tracer_base base; /* first: loaded, path, why, err, sink, armed, kinds, dropped */
  ft__cupti_api api;
  uint32_t version;
  ft__cuda_api cuda;
  int cuda_state; /* 0 not tried, 1 bound, -1 absent */
  ft__occ_device devs[MAX_DEVICES];
  struct mdbuf *props[MAX_DEVICES];   /* deviceProperties, filled at the first ask */
  signed char dev_state[MAX_DEVICES]; /* 0 unknown, 1 known, -1 unavailable */
  bool all_apis;                      /* FLAGTRACE_CUPTI_ALL_APIS: no API row left out */
  bool range_only;                    /* watching cudaProfilerStart: kinds enabled there, not at start */
  atomic_bool range_enabled;          /* the first cudaProfilerStart enabled them */
  int64_t clock_offset;               /* subtracted from CUPTI timestamps */
  bool timed;                         /* CUPTI stamps with our clock: attribution by time, no external correlation */
  uint64_t dropped_untimed; /* records without usable timing (start = end = 0, or implausible): counted as dropped */
  /* The last kernel's metadata, by what it is computed from: a program repeats few
   * launch configurations, so its nine formatted numbers are made once per change,
   * not per kernel (one decoder at a time: decode_mu, or the stop for MCPTI). */
  struct kernel_md {
    bool valid;
    struct kernel_md_key {
      uint64_t queued;
      uint32_t context, device, regs;
      int32_t static_smem, dynamic_smem, grid[3], block[3];
    } key;
    struct mdbuf *m;
  } last_kernel;
  /* MCPTI (HOLD_UNTIL_STOP): its own clock, sampled against CLOCK_REALTIME at start
   * and stop; its API-name lookup; the completed buffers, decoded at stop */
  ft__clock_map clock;
  bool have_clock;
  CUptiResult (*get_api_name)(CUpti_ActivityKind kind, uint32_t id, const char **name);
  ft__held held; /* under decode_mu */
  /* CUPTI: completed buffers wait, up to this many, and are decoded together when
   * one more completes, or at stop (FLAGTRACE_CUPTI_HELD_BUFFERS) */
  size_t hold_first;
  uint64_t resyncs, skipped_bytes; /* malformed stretches the walker stepped over */
  /* another CUPTI client took the activity API (cu_relinquish): CUPTI is not
   * touched again; last_completion_ns says when our buffers last came home */
  atomic_bool relinquished;
  _Atomic uint64_t last_completion_ns;
  size_t lent_at_start; /* buffers already missing at start (an earlier takeover's) */
  /* CUPTI's context ids -> device, learned from kernels and copies: a sync record
   * names only its context (kineto's contextIdtoDeviceId) */
  uint32_t ctx_ids[MAX_DEVICES], ctx_devices[MAX_DEVICES];
  size_t n_ctx;
  /* device memory (FT_EVENT_MEMORY): the pools followed (under decode_mu when from
   * records, mem_mu when from callbacks); records that name no operation, counted as
   * dropped at stop */
  ft__cupti_pool pools[MAX_POOLS];
  _Atomic size_t n_pools;
  uint64_t memory_invalid;
  bool mem_callbacks; /* this session's memory comes from callbacks (cupti_memory.c), not records */
  pthread_mutex_t decode_mu, mem_mu;
} cupti_tracer;

/* A small formatting arena for one event's metadata values. */
struct mdbuf {
  ft_kv kv[16];
  size_t n;
  char text[512];
  size_t used;
};
typedef struct mdbuf mdbuf;

static inline void md_add(mdbuf *m, const char *key, const char *fmt, ...) FT__PRINTF(3, 4);
static inline void md_add(mdbuf *m, const char *key, const char *fmt, ...) {
  if (m->n >= sizeof m->kv / sizeof m->kv[0] || m->used >= sizeof m->text) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(m->text + m->used, sizeof m->text - m->used, fmt, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= sizeof m->text - m->used) return;
  m->kv[m->n].key = key;
  m->kv[m->n++].value = m->text + m->used;
  m->used += (size_t)w + 1;
}

/* An unsigned value: the per-record numbers (API ids, contexts, sizes) without
 * vsnprintf, which cost more than the rest of decoding such a record. */
static inline void md_add_u64(mdbuf *m, const char *key, uint64_t v) {
  char digits[20];
  size_t n = 0;
  do digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  if (m->n >= sizeof m->kv / sizeof m->kv[0] || sizeof m->text - m->used < n + 1) return;
  char *out = m->text + m->used;
  for (size_t i = 0; i < n; i++) out[i] = digits[n - 1 - i];
  out[n] = '\0';
  m->kv[m->n].key = key;
  m->kv[m->n++].value = out;
  m->used += n + 1;
}

/* cupti_decode.c: the runtime/driver name of a CUPTI callback id (a generic label
 * when the table lacks it); every record of a completed buffer to the sink. */
const char *ft__cupti_api_name(bool driver, uint32_t cbid);
void ft__cupti_decode_buffer(cupti_tracer *t, uint8_t *buf, size_t valid);

/* cupti_device.c: a device's occupancy inputs (NULL when unknown); whether an API
 * record is one of our own device queries; the ops' device count and kineto's
 * deviceProperties. */
const ft__occ_device *ft__cupti_device_props(cupti_tracer *t, uint32_t id);
bool ft__cupti_is_own_query(uint32_t cbid, uint32_t cupti_tid, uint64_t start, uint64_t end);
int ft__cupti_device_count(const ft_tracer *base);
size_t ft__cupti_device_properties(ft_tracer *base, int id, const ft_kv **out);

/* cupti_tracer.c: whether an API row is left out; cudaProfilerStart/Stop seen by the
 * callback subscriber (cupti_memory.c, which owns it). */
bool ft__cupti_api_left_out(const cupti_tracer *t, bool driver, uint32_t cbid);
void ft__cupti_profiler_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *cb);

/* cupti_memory.c: device memory events and the pools' levels (both capture paths);
 * CUPTI's one callback subscriber, shared by memory capture and cudaProfilerStart
 * watching; memory capture from callbacks armed (false: not possible, err says why;
 * the caller records memory from activity records instead) and disarmed. */
void ft__cupti_emit_memory(cupti_tracer *t, uint64_t at, uint32_t corr, uint32_t device, uint32_t stream, uint32_t tid,
                           const ft_memory_info *m);
ft__cupti_pool *ft__cupti_pool_slot(cupti_tracer *t, uint32_t device, uint64_t address, bool add);
void ft__cupti_pool_to(cupti_tracer *t, ft__cupti_pool *p, uint64_t size, uint64_t at, uint32_t corr, uint32_t stream,
                       ft_memory_kind kind, ft_memory_op op_if_equal);
ft_status ft__cupti_subscriber(cupti_tracer *t, CUpti_SubscriberHandle *out);
void ft__cupti_unsubscribe(cupti_tracer *t);
bool ft__cupti_memory_arm(cupti_tracer *t);
void ft__cupti_memory_disarm(cupti_tracer *t);
/* Memory events taken from callbacks so far, handed to the session (an attached session's flush). */
void ft__cupti_memory_flush(cupti_tracer *t);

/* cupti_mem_calls.c: what an allocation, free, pool, synchronization or stream call
 * does to memory, from its CUPTI callback parameters (read at its exit; at its entry
 * only its kind and pool mean anything); the calls followed, per domain. */
enum ft__mem_role {
  FT__MEM_NONE,
  FT__MEM_ALLOC,
  FT__MEM_FREE,
  FT__MEM_POOL_NEW,
  FT__MEM_POOL_TRIM,
  FT__MEM_POOL_GONE,
  FT__MEM_POOL_SET,
  FT__MEM_SYNC,
  FT__MEM_STREAM_GONE
};

typedef struct ft__mem_call {
  enum ft__mem_role role;
  ft_memory_kind kind;
  bool pooled;       /* a stream-ordered allocation: from pool, else the device's current one */
  bool has_stream;   /* the call names a stream */
  bool per_thread;   /* a _ptsz form: a null stream is the per-thread one */
  uint64_t ptr;      /* the allocation's, or the freed address */
  uint64_t bytes;    /* an allocation's */
  CUmemoryPool pool; /* the pool named, or created */
  CUstream stream;
  int device;      /* cudaDeviceSetMemPool's, a pool's creation, cuMemCreate's: its device; else -1 */
  bool own_device; /* an allocation whose device is its own (cuMemCreate's), not its context's */
} ft__mem_call;
bool ft__cupti_read_runtime(CUpti_CallbackId id, const void *params, ft__mem_call *c);
bool ft__cupti_read_driver(CUpti_CallbackId id, const void *params, ft__mem_call *c);
bool ft__cupti_entry_call(bool driver, CUpti_CallbackId id);
/* CUPTI took a timestamp through our clock on this thread (cupti_memory.c keeps it while
 * memory comes from callbacks). */
void ft__cupti_clock_taken(uint64_t ns);
extern const CUpti_CallbackId ft__cupti_runtime_calls[], ft__cupti_driver_calls[];
extern const size_t ft__cupti_n_runtime_calls, ft__cupti_n_driver_calls;

#endif
