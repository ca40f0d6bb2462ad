/* libflagtrace_cuda_shim.so: what a process under `record --capture-range=cudaProfilerApi`
 * (preload) is handed when it dlopens libcuda, so that cuProfilerStart/Stop reach the
 * session without CUPTI: any CUPTI call made while waiting for the range costs every
 * launch ~3 % (bench/run.py's lockstep P1 on the H200, docs/measurements.md).
 *
 * The shim's DT_NEEDED is libcuda.so.1, so dlsym on its handle finds every driver
 * symbol in libcuda, except the four defined here. The runtime (static or shared)
 * dlsyms cuGetProcAddress_v2 and asks it for cuGetProcAddress, then asks that for
 * every entry point (measured on the H200, CUDA 13): each cuGetProcAddress handed
 * out is wrapped, and each wrapper swaps the profiler calls' pointers for ours.
 * Only C types here: no driver header is needed for five pointers and an int. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIM_EXPORT __attribute__((visibility("default")))

typedef int (*gpa_fn)(const char *symbol, void **pfn, int version, uint64_t flags, void *status);
typedef int (*call_fn)(void);

static void *cuda; /* the libcuda handle the process asked for */
static void (*_Atomic on_range)(int start);
static _Atomic(call_fn) real_start, real_stop;
static bool verbose;

/* cuGetProcAddress comes in several ABI versions (v1 takes 4 arguments, v2 5); every
 * pointer handed out gets a wrapper of its own that passes all five registers on,
 * which a 4-argument callee ignores (SysV x86-64 and AAPCS64 pass them in registers). */
enum { SLOTS = 6 };
static _Atomic(gpa_fn) real_gpa[SLOTS];

static void *wrap_gpa(void *real);

static void note(const char *what, const char *name) {
  if (verbose) fprintf(stderr, "flagtrace: [shim] %s %s\n", what, name);
}

static call_fn lookup(_Atomic(call_fn) *slot, const char *name) {
  call_fn f = atomic_load(slot);
  if (!f && cuda) {
    f = (call_fn)dlsym(cuda, name);
    atomic_store(slot, f);
  }
  return f;
}

SHIM_EXPORT int cuProfilerStart(void) {
  call_fn f = lookup(&real_start, "cuProfilerStart");
  int r = f ? f() : 999; /* CUDA_ERROR_UNKNOWN */
  void (*cb)(int) = atomic_load(&on_range);
  if (!r && cb) cb(1); /* the range opens when the start call returns */
  return r;
}

SHIM_EXPORT int cuProfilerStop(void) {
  void (*cb)(int) = atomic_load(&on_range);
  if (cb) cb(0); /* ... and closes when the stop call begins */
  call_fn f = lookup(&real_stop, "cuProfilerStop");
  return f ? f() : 999;
}

/* What a cuGetProcAddress answered: our profiler calls and wrapped lookups instead. */
static void filter(const char *symbol, void **pfn) {
  if (!symbol || !pfn || !*pfn) return;
  if (!strcmp(symbol, "cuProfilerStart")) {
    atomic_store(&real_start, (call_fn)*pfn);
    *pfn = (void *)cuProfilerStart;
    note("wrapped", symbol);
  } else if (!strcmp(symbol, "cuProfilerStop")) {
    atomic_store(&real_stop, (call_fn)*pfn);
    *pfn = (void *)cuProfilerStop;
    note("wrapped", symbol);
  } else if (!strncmp(symbol, "cuGetProcAddress", 16)) {
    *pfn = wrap_gpa(*pfn);
  }
}

#define GPA_SLOT(i)                                                                                   \
  static int gpa_slot##i(const char *symbol, void **pfn, int version, uint64_t flags, void *status) { \
    int r = atomic_load(&real_gpa[i])(symbol, pfn, version, flags, status);                           \
    if (!r) filter(symbol, pfn);                                                                      \
    return r;                                                                                         \
  }
GPA_SLOT(0)
GPA_SLOT(1)
GPA_SLOT(2)
GPA_SLOT(3)
GPA_SLOT(4)
GPA_SLOT(5)
static const gpa_fn slot_fns[SLOTS] = {gpa_slot0, gpa_slot1, gpa_slot2, gpa_slot3, gpa_slot4, gpa_slot5};

/* The wrapper for a real cuGetProcAddress (the same one each time it is handed out);
 * the real pointer itself when the slots are full: lookups through it are not seen. */
static void *wrap_gpa(void *real) {
  for (int i = 0; i < SLOTS; i++) {
    if ((void *)slot_fns[i] == real) return real; /* already ours */
    gpa_fn cur = atomic_load(&real_gpa[i]);
    if (!cur) {
      gpa_fn expected = NULL;
      if (atomic_compare_exchange_strong(&real_gpa[i], &expected, (gpa_fn)real)) return (void *)slot_fns[i];
      cur = expected;
    }
    if ((void *)cur == real) return (void *)slot_fns[i];
  }
  note("no slot left for a cuGetProcAddress;", "its lookups pass unwrapped");
  return real;
}

static int forward_gpa(const char *name, const char *symbol, void **pfn, int version, uint64_t flags, void *status) {
  gpa_fn real = cuda ? (gpa_fn)dlsym(cuda, name) : NULL;
  if (!real) return 500; /* CUDA_ERROR_NOT_FOUND */
  return ((gpa_fn)wrap_gpa((void *)real))(symbol, pfn, version, flags, status);
}

SHIM_EXPORT int cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags) {
  return forward_gpa("cuGetProcAddress", symbol, pfn, version, flags, NULL);
}

SHIM_EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, void *status) {
  return forward_gpa("cuGetProcAddress_v2", symbol, pfn, version, flags, status);
}

/* Called by the preload library once, before the shim's handle is returned: the real
 * libcuda's handle and the session's range callback (NULL: only forward). */
SHIM_EXPORT void flagtrace_shim_setup(void *cuda_handle, void (*range)(int start)) {
  const char *v = getenv("FLAGOS_TRACE");
  verbose = v && *v && strcmp(v, "0");
  cuda = cuda_handle;
  atomic_store(&on_range, range);
}
