/* The preload library's guard of CUPTI's activity API: another client's call that would
 * take it over (registering its own buffer callbacks, subscribing to callbacks, ...) first
 * lets flagtrace's tracer step aside, so none of our buffers reaches that client, which
 * frees them, and CUPTI's one callback subscriber slot is free for it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "preload.h"

#define INJECT_EXPORT __attribute__((visibility("default")))

/* No CUPTI header here (the preload library is libc only): CUptiResult and the kinds
 * are ints, the rest pointers. CUPTI_ERROR_UNKNOWN when the real one is missing. */
enum { GUARD_ERROR_UNKNOWN = 999 };

/* A client's CUPTI call reaches the guard either through symbol interposition (a
 * library linked against libcupti: these functions are in the global scope first)
 * or through dlsym on the handle the preload's dlopen handed it for libcupti (the
 * guard shim, whose dependencies are this library, then libcupti). Either way the
 * real function is libcupti's own. */
static int find_cupti(struct dl_phdr_info *info, size_t size, void *out) {
  (void)size;
  const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
  base = base ? base + 1 : info->dlpi_name;
  if (!base || strncmp(base, "libcupti.so", 11)) return 0;
  snprintf(out, 4096, "%s", info->dlpi_name);
  return 1;
}

static void *real_cupti(const char *name) {
  static _Atomic(void *) handle;
  void *h = atomic_load(&handle);
  if (!h) {
    char path[4096] = "";
    dl_iterate_phdr(find_cupti, path);
    h = path[0] ? ft__preload_real_dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (h) atomic_store(&handle, h);
  }
  return h ? dlsym(h, name) : NULL;
}

/* Tells the injection library that a client other than flagtrace makes a call that
 * takes the API over (the library steps its tracer aside at the first). */
static void foreign(const char *fn, const void *caller) {
  Dl_info info;
  const char *who = dladdr(caller, &info) && info.dli_fname ? info.dli_fname : "an unknown library";
  if (ft__preload_is_ours(who)) return;
  void (*notify)(const char *) = (void (*)(const char *))ft__preload_inject_symbol("FlagtraceForeignClient");
  if (!notify) return;
  char line[4200];
  snprintf(line, sizeof line, "another CUPTI client (%s, calling %s)", who, fn);
  notify(line);
}

#define FT_GUARDED_CUPTI(X)                                                                     \
  X(cuptiActivityRegisterCallbacks, (void *requested, void *completed), (requested, completed)) \
  X(cuptiActivityEnable, (int kind), (kind))                                                    \
  X(cuptiActivityEnableContext, (void *context, int kind), (context, kind))                     \
  X(cuptiActivityDisable, (int kind), (kind))                                                   \
  X(cuptiActivityDisableContext, (void *context, int kind), (context, kind))                    \
  X(cuptiActivityRegisterTimestampCallback, (void *clock), (clock))                             \
  X(cuptiFinalize, (void), ())

#define FT__GUARD(name, params, args)                     \
  INJECT_EXPORT int name params {                         \
    foreign(#name, __builtin_return_address(0));          \
    int(*real) params = (int(*) params)real_cupti(#name); \
    return real ? real args : GUARD_ERROR_UNKNOWN;        \
  }
FT_GUARDED_CUPTI(FT__GUARD)
#undef FT__GUARD

/* CUPTI's one callback subscriber slot, which the tracer may hold (memory from callbacks,
 * --capture-range's watch): another client's subscription is made first, and only when
 * the slot is taken does the tracer step aside (it unsubscribes) before it is made again.
 * JAX's profiler subscribes. */
enum { GUARD_MULTIPLE_SUBSCRIBERS = 39 }; /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
INJECT_EXPORT int cuptiSubscribe(void *subscriber, void *callback, void *userdata) {
  int (*real)(void *, void *, void *) = (int (*)(void *, void *, void *))real_cupti("cuptiSubscribe");
  if (!real) return GUARD_ERROR_UNKNOWN;
  int r = real(subscriber, callback, userdata);
  if (r != GUARD_MULTIPLE_SUBSCRIBERS) return r;
  foreign("cuptiSubscribe", __builtin_return_address(0));
  return real(subscriber, callback, userdata);
}
