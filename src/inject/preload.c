/* libflagtrace_preload.so, what `record --inject=preload` puts in LD_PRELOAD: loads the
 * injection library only once the process loads its accelerator's runtime library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "preload.h"

#define INJECT_EXPORT __attribute__((visibility("default")))

#ifndef FT_ACCELERATOR_NAME
#error "preload.c needs FT_ACCELERATOR_NAME"
#endif

typedef void *(*dlopen_fn)(const char *, int);

/* This library is all a process that never uses the device pays for: libc only,
 * a getenv and one link-map walk at start, a counter check per dlopen. The
 * injection library (the session, zlib, libstdc++, the tracer) loads at arming. */
static const ft__runtime_set *runtimes;    /* non-NULL only under record, arming here */
static const ft__runtime_set *device_libs; /* the accelerator's runtimes, under record (either injection) */
static const char *inject_path;            /* FLAGTRACE_PRELOAD: libflagtrace_inject.so */
/* FLAGTRACE_PRELOAD_GUARD (record --inject=cuda): the injection library the CUDA
 * driver loads; this library then arms nothing itself, but still hands torch's
 * profiler to it and guards CUPTI against other clients */
static const char *guard_path;
/* torch: once its libtorch_cpu is loaded beside the runtime, its torch.profiler gets
 * device activity from the injection library (FlagtraceTorchLoaded) */
static const ft__runtime_set torch_libs = {"torch", {"libtorch_cpu.so"}};
static atomic_bool torch_done;
/* CUDA builds: a dlopen of libcupti by another library gets the guard shim (its
 * dependencies: this library's guarded functions first, then libcupti) */
static const ft__runtime_set cupti_libs = {"cupti", {"libcupti.so"}};
static const char *cupti_shim_path;
static atomic_bool armed;                    /* the session was begun (or given up on) */
static _Atomic unsigned long long seen_adds; /* dlpi_adds at the last link-map scan */
static _Atomic(dlopen_fn) real_dlopen_ptr;
static void *inject_handle; /* the injection library, once armed */

/* --capture-range on CUDA: record names a shim (FLAGTRACE_PRELOAD_SHIM) that every
 * dlopen of the driver library gets instead of it, and whose cuProfilerStart/Stop call
 * the session (src/tracers/cuda_range_shim.c): no CUPTI until the range starts. */
static const ft__runtime_set shimmed = {"cuda", {"libcuda.so"}};
static const char *shim_path;
static atomic_bool range_from_loader; /* decided at the constructor, told to the session */
static void *shim_handle;
static pthread_mutex_t shim_mu = PTHREAD_MUTEX_INITIALIZER;

static dlopen_fn real_dlopen(void) {
  dlopen_fn f = atomic_load_explicit(&real_dlopen_ptr, memory_order_acquire);
  if (!f) { /* the same answer in any thread, so a race only repeats the lookup */
    f = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    atomic_store_explicit(&real_dlopen_ptr, f, memory_order_release);
  }
  return f;
}

struct scan {
  const char *runtime; /* a runtime library of this accelerator */
  bool torch;          /* libtorch_cpu */
};

static int find_runtime(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct scan *found = data;
  atomic_store_explicit(&seen_adds, info->dlpi_adds, memory_order_relaxed);
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  if (!found->runtime && ft__runtime_matches(device_libs, info->dlpi_name)) found->runtime = info->dlpi_name;
  if (ft__runtime_matches(&torch_libs, info->dlpi_name)) found->torch = true;
  return 0;
}

/* Whether the link map may still hold something to act on. */
static bool watching(void) { return device_libs && ((runtimes && !atomic_load(&armed)) || !atomic_load(&torch_done)); }

/* torch's profiler gets the injection library's session (FlagtraceTorchLoaded). */
static void torch_loaded(void) {
  bool expected = false;
  if (!atomic_compare_exchange_strong(&torch_done, &expected, true)) return;
  void *h = inject_handle;
  if (!h && guard_path) h = inject_handle = real_dlopen()(guard_path, RTLD_NOW | RTLD_LOCAL);
  void (*loaded)(void) = h ? (void (*)(void))dlsym(h, "FlagtraceTorchLoaded") : NULL;
  if (loaded) loaded();
}

static void arm(const char *found);

/* Scans the link map (only when objects were added since the last scan): begins the
 * session the first time a runtime library is in it (not in guard mode: the driver
 * does), and hands torch's profiler to it once libtorch is there beside a runtime (a
 * process that uses the device; a CPU-only torch gets nothing). */
static void check_link_map(void) {
  if (!watching()) return;
  struct scan found = {NULL, false};
  dl_iterate_phdr(find_runtime, &found);
  if (found.runtime && runtimes && !atomic_load(&armed)) arm(found.runtime);
  if (found.torch && found.runtime && !atomic_load(&torch_done)) torch_loaded();
}

static void arm(const char *found) {
  bool expected = false;
  if (!atomic_compare_exchange_strong(&armed, &expected, true)) return;
  /* the entry the CUDA driver calls: one session machinery for both injections */
  void *h = real_dlopen()(inject_path, RTLD_NOW | RTLD_LOCAL);
  inject_handle = h;
  int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
  if (!init) {
    const char *e = dlerror();
    fprintf(stderr, "flagtrace: %s was loaded, but %s could not be: %s; this process is not traced\n", found,
            inject_path, e ? e : "no InitializeInjection");
    return;
  }
  init();
}

/* dl_iterate_phdr's counter of loaded objects: an unchanged count means nothing
 * new can have been loaded, so a dlopen of an already-loaded library costs one
 * callback instead of a walk of every name. */
static int read_adds(struct dl_phdr_info *info, size_t size, void *out) {
  (void)size;
  *(unsigned long long *)out = info->dlpi_adds;
  return 1;
}

/* The loader resolves a bare name against the *calling* object's DT_RPATH/RUNPATH,
 * and through this wrapper the caller is us (no RUNPATH). Where that lookup fails,
 * retry in the search path the real caller would have had. */
static void *open_for_caller(const char *file, int mode, const void *caller) {
  Dl_info info;
  struct link_map *lm = NULL;
  if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return NULL;
  Dl_serinfo size;
  if (dlinfo(lm, RTLD_DI_SERINFOSIZE, &size)) return NULL;
  Dl_serinfo *si = malloc(size.dls_size);
  if (!si) return NULL;
  void *h = NULL;
  si->dls_size = size.dls_size;
  si->dls_cnt = size.dls_cnt;
  if (!dlinfo(lm, RTLD_DI_SERINFOSIZE, si) && !dlinfo(lm, RTLD_DI_SERINFO, si)) {
    char path[4096];
    for (unsigned i = 0; i < si->dls_cnt && !h; i++) {
      if (snprintf(path, sizeof path, "%s/%s", si->dls_serpath[i].dls_name, file) >= (int)sizeof path) continue;
      h = real_dlopen()(path, mode);
    }
  }
  free(si);
  return h;
}

static int find_shimmed(struct dl_phdr_info *info, size_t size, void *found) {
  (void)size;
  return *(bool *)found = info->dlpi_name && ft__runtime_matches(&shimmed, info->dlpi_name);
}

/* The shim's handle for a dlopen of the driver library (cuda: its handle), or NULL:
 * then the session is told to watch through CUPTI instead, and cuda is returned. */
static void *shim_for(void *cuda) {
  pthread_mutex_lock(&shim_mu);
  void *s = NULL;
  if (atomic_load(&range_from_loader)) {
    /* never unloaded: the runtime keeps the pointers it was given */
    s = real_dlopen()(shim_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    void (*setup)(void *, void (*)(int)) = s ? (void (*)(void *, void (*)(int)))dlsym(s, "flagtrace_shim_setup") : NULL;
    char why[512] = "no flagtrace_shim_setup";
    const char *e = setup ? NULL : dlerror(); /* before the next dl call replaces it */
    if (e) snprintf(why, sizeof why, "%s", e);
    void (*range)(int) = inject_handle ? (void (*)(int))dlsym(inject_handle, "FlagtraceProfilerRange") : NULL;
    if (!setup) {
      fprintf(stderr, "flagtrace: %s could not be loaded (%s); the capture range is watched through CUPTI\n", shim_path,
              why);
      atomic_store(&range_from_loader, false);
      s = NULL;
      if (range) range(-1);
    } else if (!shim_handle) {
      setup(cuda, range);
      shim_handle = s;
    }
  }
  pthread_mutex_unlock(&shim_mu);
  return s;
}

/* Interposes the loader's dlopen in a preloaded process: a vendor runtime is
 * usually dlopened (a Python extension's dependency), not linked by the program. */
INJECT_EXPORT void *dlopen(const char *file, int mode) {
  dlopen_fn real = real_dlopen();
  if (!real) return NULL;
  void *h = real(file, mode);
  if (!h && file && !strchr(file, '/')) {
    h = open_for_caller(file, mode, __builtin_return_address(0));
    if (!h) h = real(file, mode); /* the loader's own error for dlerror() */
  }
  if (h && watching()) {
    unsigned long long adds = 0;
    dl_iterate_phdr(read_adds, &adds);
    if (adds != atomic_load_explicit(&seen_adds, memory_order_relaxed)) check_link_map();
  }
  /* another library's libcupti: through the guard shim, so its takeover is seen */
  if (h && cupti_shim_path && file && ft__runtime_matches(&cupti_libs, file)) {
    Dl_info info;
    void *caller = __builtin_return_address(0);
    if (!(dladdr(caller, &info) && info.dli_fname && ft__preload_is_ours(info.dli_fname))) {
      void *g = real(cupti_shim_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (g) return g;
    }
  }
  if (h && file && atomic_load(&range_from_loader) && ft__runtime_matches(&shimmed, file)) {
    void *s = shim_for(h);
    if (s) return s;
  }
  return h;
}

void *ft__preload_real_dlopen(const char *file, int mode) {
  dlopen_fn f = real_dlopen();
  return f ? f(file, mode) : NULL;
}

bool ft__preload_is_ours(const char *path) {
  const char *base = strrchr(path, '/');
  return !strncmp(base ? base + 1 : path, "libflagtrace", 12);
}

void *ft__preload_inject_symbol(const char *name) {
  void *h = inject_handle;
  if (!h && guard_path) h = real_dlopen()(guard_path, RTLD_NOW | RTLD_NOLOAD); /* loaded by the driver, or not yet */
  return h ? dlsym(h, name) : NULL;
}

/* record sets FLAGTRACE_PRELOAD to the injection library's path (or, with
 * --inject=cuda, FLAGTRACE_PRELOAD_GUARD); without either (the library preloaded by
 * hand) this does nothing and dlopen only forwards. */
__attribute__((constructor)) static void preload_init(void) {
  const char *shim = getenv("FLAGTRACE_CUPTI_GUARD");
  if (shim && shim[0] == '/') cupti_shim_path = shim;
  guard_path = getenv("FLAGTRACE_PRELOAD_GUARD");
  if (guard_path && guard_path[0] != '/') guard_path = NULL;
  inject_path = getenv("FLAGTRACE_PRELOAD");
  if (!inject_path || inject_path[0] != '/') {
    inject_path = NULL;
    if (!guard_path) {
      cupti_shim_path = NULL; /* not under record: nothing to guard */
      return;
    }
    device_libs = ft__runtime_set_for(FT_ACCELERATOR_NAME);
    check_link_map(); /* a program linked against torch and the runtime */
    return;
  }
  guard_path = NULL;
  runtimes = device_libs = ft__runtime_set_for(FT_ACCELERATOR_NAME);
  shim_path = getenv("FLAGTRACE_PRELOAD_SHIM");
  if (shim_path && shim_path[0] == '/') {
    /* A program linked against the driver may call cuProfilerStart itself, which no
     * shim handed to dlopen would see: that one keeps CUPTI's watch. */
    bool linked = false;
    dl_iterate_phdr(find_shimmed, &linked);
    atomic_store(&range_from_loader, !linked);
  }
  /* for the session (inject.c); set here, before any thread, and in every process */
  setenv("FLAGTRACE_RANGE_FROM_LOADER", atomic_load(&range_from_loader) ? "1" : "0", 1);
  check_link_map();
}
