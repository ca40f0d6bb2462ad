/* flagtrace public C API: profiling sessions, CPU ranges, trace writing, errors. */
#ifndef FLAGTRACE_FLAGTRACE_H
#define FLAGTRACE_FLAGTRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FT_BUILDING_LIBRARY)
#define FT_EXPORT __attribute__((visibility("default")))
#else
#define FT_EXPORT
#endif

#include "flagtrace/version.h" /* FT_VERSION_STRING, generated from CMakeLists.txt */

/* Every status flagtrace returns. 0 is success; errors are negative. The list is
 * an X-macro so the enum and ft_strerror() can never disagree. */
#define FT_STATUS_LIST(X)                                                      \
  X(FT_OK, 0, "success")                                                       \
  X(FT_EINVAL, -1, "invalid argument")                                         \
  X(FT_ENOMEM, -2, "out of memory")                                            \
  X(FT_EIO, -3, "I/O error")                                                   \
  X(FT_ESTATE, -4, "operation not valid in the session's current state")       \
  X(FT_EBUSY, -5, "another profiling session owns the device tracer")          \
  X(FT_EUNAVAILABLE, -6, "device tracer unavailable")                          \
  X(FT_EVENDOR, -7, "vendor activity API error")                               \
  X(FT_ELAYOUT, -8, "vendor record layout does not match the compiled layout") \
  X(FT_ERANGE, -9, "value out of range")                                       \
  X(FT_EPARSE, -10, "malformed input")                                         \
  X(FT_ENOTFOUND, -11, "not found")

typedef enum ft_status {
#define FT__STATUS_ENUM(name, value, text) name = value,
  FT_STATUS_LIST(FT__STATUS_ENUM)
#undef FT__STATUS_ENUM
} ft_status;

/* A static English description of status; never NULL (unknown values get a
 * generic text). Thread-safe. */
FT_EXPORT const char *ft_strerror(ft_status status);

/* The library's version, e.g. "0.1.0". Static storage. */
FT_EXPORT const char *ft_version(void);

/* One profiling session. Opaque; create with ft_session_create, release with
 * ft_session_destroy. At most one session may be started at a time in a process
 * (vendor activity APIs are process-global); a second start returns FT_EBUSY. */
typedef struct ft_session ft_session;

/* What a session records from the device tracer (CPU ranges are always recorded). */
enum {
  FT_ACTIVITY_KERNEL = 1 << 0,
  FT_ACTIVITY_MEMCPY = 1 << 1,
  FT_ACTIVITY_MEMSET = 1 << 2,
  FT_ACTIVITY_RUNTIME = 1 << 3,
  FT_ACTIVITY_DRIVER = 1 << 4,
  /* synchronization waits (cuda_sync rows): recorded only when asked, as torch-cuda's
   * enable_cuda_sync_events (the vendor instruments every sync call) */
  FT_ACTIVITY_SYNC = 1 << 5,
  /* device memory allocations, frees and pool reservations (bit 7: FT_EVENT_MEMORY;
   * bit 6 is an exported-only kind and never a flag) */
  FT_ACTIVITY_MEMORY = 1 << 7,
  FT_ACTIVITY_ALL = ((1 << 6) - 1) | (1 << 7),
  FT_ACTIVITY_DEFAULT = FT_ACTIVITY_ALL & ~FT_ACTIVITY_SYNC,
};

typedef struct ft_session_options {
  /* Distributed rank and world size for the trace's distributedInfo; -1 means
   * unknown (then RANK/WORLD_SIZE from the environment are used). A trace whose
   * rank is unknown has no distributedInfo; world_size is written when known. */
  int rank;
  int world_size;
  /* Process name shown on the CPU row; NULL uses the program name. */
  const char *process_name;
  /* FT_ACTIVITY_* flags (ft_session_options_init sets FT_ACTIVITY_DEFAULT: all
   * but SYNC; 0 records CPU ranges only). */
  unsigned activities;
} ft_session_options;

/* Fills opts with defaults (rank and world_size -1, process_name NULL,
 * FT_ACTIVITY_DEFAULT). */
FT_EXPORT void ft_session_options_init(ft_session_options *opts);

/* Creates a session and binds this build's device tracer (it is not armed until
 * ft_session_start). FT_EINVAL for an unknown FT_ACTIVITY_* bit, a rank below -1, a
 * world_size of 0 or below -1, or a rank not below a known world_size. A tracer that is unavailable (no library, no
 * device) is not an error: CPU ranges still record and the trace says why no device activity was collected (see
 * ft_session_device_status). opts may be NULL. On success *out is yours; release it with ft_session_destroy. */
FT_EXPORT ft_status ft_session_create(ft_session **out, const ft_session_options *opts);

/* Releases the session; stops it first if it is running. NULL is ignored.
 * Must not race with any other call on the same session. Ranges and correlation
 * ids left pushed on any thread die with it: no later session (even one at the
 * same address) pops them, and they take none of its nesting depth. */
FT_EXPORT void ft_session_destroy(ft_session *session);

/* Opens the capture window and arms the device tracer. Returns FT_ESTATE if the
 * session was already started, FT_EBUSY if another session holds the tracer (but
 * see attaching below).
 * Attaching: when the running session was started by `flagtrace record`'s injection
 * (which records the whole process), a session started meanwhile attaches to it
 * instead: its device events are the running session's that lie inside its own
 * window, read at its stop, and its ids are attributed by its own pushes. One
 * attached session at a time; the running session's trace is unchanged. This needs
 * a tracer that can flush while armed and stamps calls on the core's clock (CUDA);
 * otherwise the second session runs CPU-only and ft_session_device_status says why.
 * A tracer that fails to arm leaves the session running CPU-only and returns FT_OK;
 * ft_session_device_status then reports the vendor's error. */
FT_EXPORT ft_status ft_session_start(ft_session *session);

/* Closes the capture window, flushes and disarms the device tracer and collects
 * its records. After stop, ranges can no longer be pushed and the session can be
 * written any number of times. FT_ESTATE if not running. */
FT_EXPORT ft_status ft_session_stop(ft_session *session);

/* Stops (collecting 0) or resumes (non-zero) device collection inside the running
 * session, as torch.profiler's toggle_collection_dynamic: the API calls made while
 * stopped, the device work they launched, and device work that starts then without a
 * recorded launch are left out at stop, as if the tracer had been disarmed meanwhile
 * (the vendor keeps recording, so a session attached to a whole-run one loses
 * nothing there). CPU ranges are still recorded. Repeating the current state does
 * nothing. FT_ESTATE unless the session runs; FT_ENOMEM. */
FT_EXPORT ft_status ft_session_set_collecting(ft_session *session, int collecting);

/* Opens a named CPU range on the calling thread and pushes a fresh external
 * correlation id to the device tracer, so device work launched inside the range is
 * attributed to it. name is copied. If external_id is non-NULL it receives the
 * range's id (ids are unique within the session; 0 is never handed out here but is
 * a valid id in the contract). Thread-safe across threads; ranges nest per thread.
 * FT_ESTATE if the session is not running, FT_ERANGE past 256 nested ranges. */
FT_EXPORT ft_status ft_range_push(ft_session *session, const char *name, uint64_t *external_id);

/* Closes the calling thread's innermost range of this session and pops its
 * correlation id. FT_ESTATE if the thread has no open range in this session. A
 * range still open when its session stopped is popped with FT_ESTATE (not
 * recorded); one of another session, left open on this thread, is dropped when
 * this session pushes a range here (it could never be recorded). */
FT_EXPORT ft_status ft_range_pop(ft_session *session);

/* Pushes a framework op id (e.g. torch's) as the calling thread's external
 * correlation id without recording a range: device work launched until the
 * matching pop is attributed to it. For framework adaptors that record their own
 * CPU ops (the kineto adaptor). Thread-safe; pushes nest per thread. As with
 * ranges: push is FT_ESTATE unless the session runs; pop is FT_ESTATE when the
 * calling thread has no push of this session left (before start, more pops than
 * pushes, pushes of an earlier session); a pop after the session stopped still
 * unwinds the vendor's stack. */
FT_EXPORT ft_status ft_correlation_push(ft_session *session, uint64_t external_id);
FT_EXPORT ft_status ft_correlation_pop(ft_session *session);

/* Marks a framework's user range (torch's record_function: its id, as the framework
 * writes it) as open on the calling thread, without recording a CPU slice (the
 * framework writes its own) and without touching the vendor's correlation (the op
 * ids keep the attribution). At export each range is projected onto the GPU rows
 * as kineto does (gpu_user_annotation): the device work whose launching API call
 * ran on this thread while the range was the innermost open user range, one span
 * per (device, stream). Vendor-neutral: it needs only the calls' threads and times.
 * name may be NULL (the adaptor then names the projection itself). Pushes nest per
 * thread; calls outside a running session are ignored (FT_OK). */
FT_EXPORT ft_status ft_user_range_push(ft_session *session, uint64_t id, const char *name);
FT_EXPORT ft_status ft_user_range_pop(ft_session *session);

/* Writes the stopped session as a Chrome trace (kineto layout). A path ending in
 * ".gz" is gzip-compressed. A new file or a regular file is written under a
 * temporary name in the same directory and renamed over it (a new file gets 0666
 * less the umask, a replaced one keeps its permissions; one the caller may not
 * write is FT_EIO), so no reader ever sees a partial trace. Special files are never
 * replaced: a FIFO or character device (/dev/null, a pipe) is written through in
 * place, without that atomicity (a FIFO nobody reads is FT_EIO at once, a reader
 * that goes away FT_EIO with EPIPE, never SIGPIPE); /dev/stdout, /dev/stderr and
 * /dev/fd/N are that descriptor, written at its offset; a symlink is followed and
 * its target written, the link kept (a dangling one is FT_EIO); a directory, block
 * device or socket is FT_EIO. An existing file is replaced (the check for one is
 * the caller's: record's --force-overwrite). The error text is one line, control
 * characters in the path escaped. Events that do not
 * lie wholly inside the capture window are left out and counted in the trace's
 * "flagtrace" metadata. FT_ESTATE unless the session was stopped; FT_EIO with
 * ft_session_last_error() naming the path and the system error otherwise. */
FT_EXPORT ft_status ft_session_write(ft_session *session, const char *path);

/* Device time attributed to the range whose external id is external_id: the sum of
 * (end - start) over exported device events (kernel, memcpy, memset) carrying that
 * external id. Valid after stop. count (nullable) receives how many events. */
FT_EXPORT ft_status ft_session_device_time(ft_session *session, uint64_t external_id, uint64_t *ns, uint64_t *count);

typedef struct ft_session_counts {
  uint64_t cpu_ranges;       /* closed CPU ranges recorded */
  uint64_t device_events;    /* kernel + memcpy + memset + runtime (+ sync, memory) events received */
  uint64_t window_discarded; /* events outside the capture window, left out on write */
  uint64_t dropped_records;  /* records the vendor reported dropped */
  uint64_t flows;            /* device events linked to their launch (flow ends) in the export */
  /* when another client of the vendor's activity API took it over (UNIX-epoch ns; 0:
   * never): device activity after it is missing (ft_session_device_lost says why) */
  uint64_t device_lost_ns;
} ft_session_counts;

/* Counts for the stopped session (window_discarded and flows reflect the export
 * rules). Valid after stop. */
FT_EXPORT ft_status ft_session_counts_get(ft_session *session, ft_session_counts *out);

/* Whether (non-zero) another client of the vendor's activity API took it over during
 * the session: then *at_ns (nullable) gets when, and *why (nullable) a one-line
 * account of who and what was lost, owned by the session. 0 when nothing was lost
 * that way. Valid after stop. */
FT_EXPORT int ft_session_device_lost(const ft_session *session, uint64_t *at_ns, const char **why);

/* Whether device activity is being collected, and if not, why. Returns FT_OK when
 * the tracer is armed or available; otherwise its status, with *why (nullable) set
 * to a one-line reason owned by the session. */
FT_EXPORT ft_status ft_session_device_status(const ft_session *session, const char **why);

/* The message of the calling thread's last failed call on this session (with the
 * vendor's text or the path and errno where there was one); "" when the thread has
 * had none, or failed on another session since. The text is per thread (thread-local,
 * no lock): threads failing at once never see each other's message. Valid until
 * the calling thread's next failing call. */
FT_EXPORT const char *ft_session_last_error(const ft_session *session);

/* ---- helpers for adaptors that emit JSON through another writer ---- */

/* Writes s[0..n) as a quoted JSON string into dst (which holds 6 * n + 2 bytes):
 * every control byte escaped, invalid UTF-8 as U+FFFD. Returns the bytes written
 * (at least 2), or 0 for a NULL dst, or a NULL s with n > 0. The trace writer's
 * own escaping. */
FT_EXPORT size_t ft_json_escape(char *dst, const char *s, size_t n);

/* Non-zero when s[0..n) may be emitted raw as a JSON value (a number, true,
 * false, null, or a bracketed list of numbers); such text is never quoted. 0 for
 * a NULL s. */
FT_EXPORT int ft_json_is_literal(const char *s, size_t n);

/* Non-zero when FLAGOS_TRACE asks for diagnostics. */
FT_EXPORT int ft_diagnostics_enabled(void);

#ifdef __cplusplus
}
#endif

#endif
