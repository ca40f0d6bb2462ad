/* A stand-in libcuda.so.1 (soname and all) for `record --capture-range` under preload:
 * the driver entry points the CUDA runtime looks up the way it does on the H200
 * (dlsym cuGetProcAddress_v2, ask it for cuGetProcAddress, ask that for the rest),
 * and cuProfilerStart/Stop, which make the fake CUPTI's profiler-API callbacks as
 * the real driver makes CUPTI's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static void profiler_api(int start) {
  const char *lib = getenv("FLAGOS_TRACER_LIBRARY");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
  void (*fn)(int) = h ? (void (*)(int))dlsym(h, "fake_cupti_profiler_api") : NULL;
  if (fn) fn(start);
  if (h) dlclose(h);
}

EXPORT int cuProfilerStart(void) {
  profiler_api(1);
  return 0;
}

EXPORT int cuProfilerStop(void) {
  profiler_api(0);
  return 0;
}

static int lookup(const char *symbol, void **pfn);

/* what cuGetProcAddress("cuGetProcAddress") hands out: another function than the
 * exported one, as the real driver's is */
static int gpa_inner(const char *symbol, void **pfn, int version, uint64_t flags, int *status) {
  (void)version, (void)flags;
  if (status) *status = 0;
  return lookup(symbol, pfn);
}

static int lookup(const char *symbol, void **pfn) {
  if (!symbol || !pfn) return 1; /* CUDA_ERROR_INVALID_VALUE */
  if (!strcmp(symbol, "cuProfilerStart")) *pfn = (void *)cuProfilerStart;
  else if (!strcmp(symbol, "cuProfilerStop")) *pfn = (void *)cuProfilerStop;
  else if (!strcmp(symbol, "cuGetProcAddress")) *pfn = (void *)gpa_inner;
  else return 500; /* CUDA_ERROR_NOT_FOUND */
  return 0;
}

EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status) {
  (void)version, (void)flags;
  if (status) *status = 0;
  return lookup(symbol, pfn);
}

EXPORT int cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags) {
  (void)version, (void)flags;
  return lookup(symbol, pfn);
}
