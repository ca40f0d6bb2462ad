/* A stand-in accelerator runtime for `record --inject=preload`: one library, linked
 * under each vendor's runtime name by the test, whose launches drive the fake
 * activity library FLAGOS_TRACER_LIBRARY names (fake CUPTI, MSPTI, MUPTI, roctracer, TOPSPTI). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include "fake_cupti.h"
#include "fake_mspti.h"
#include "fake_mupti.h"
#include "fake_roctracer.h"
#include "fake_topspti.h"

#define EXPORT __attribute__((visibility("default")))

enum { RT_KERNEL, RT_MEMCPY, RT_MEMSET };

/* Each fake's launch call, for one kernel, one host-to-device copy, one memset. */
static int cupti_launch(void *fn, int kind, const char *name) {
  /* CUPTI's enum values: memcpy kind HTOD 1, memory kinds PAGEABLE 1, DEVICE 3 */
  fake_launch l = {.kind = kind == RT_KERNEL   ? FAKE_KERNEL
                           : kind == RT_MEMCPY ? FAKE_MEMCPY
                                               : FAKE_MEMSET,
                   .name = name,
                   .grid = {8, 1, 1},
                   .block = {128, 1, 1},
                   .regs = 16,
                   .copy_kind = 1,
                   .src_kind = 1,
                   .dst_kind = 3,
                   .memory_kind = 3,
                   .bytes = 4096,
                   .dur_ns = 2000};
  ((fake_cupti_launch_fn)fn)(&l);
  return 0;
}

static int mspti_launch(void *fn, int kind, const char *name) {
  static const char *const apis[] = {"aclrtLaunchKernel", "aclrtMemcpyAsync", "aclrtMemsetAsync"};
  fake_ms_launch l = {.kind = kind == RT_KERNEL   ? FAKE_MS_KERNEL
                              : kind == RT_MEMCPY ? FAKE_MS_MEMCPY
                                                  : FAKE_MS_MEMSET,
                      .name = name,
                      .apis = {apis[kind]},
                      .stream = 1,
                      .bytes = 4096,
                      .dur_ns = 2000};
  ((fake_ms_launch_fn)fn)(&l);
  return 0;
}

static int mupti_launch(void *fn, int kind, const char *name) {
  fake_mu_launch l = {.kind = kind == RT_KERNEL   ? FAKE_MU_KERNEL
                              : kind == RT_MEMCPY ? FAKE_MU_MEMCPY
                                                  : FAKE_MU_MEMSET,
                      .name = name,
                      .dur_ns = 2000};
  ((fake_mu_launch_fn)fn)(&l);
  return 0;
}

static int roctracer_launch(void *fn, int kind, const char *name) {
  static const uint32_t codes[] = {FAKE_ROC_KERNEL, FAKE_ROC_H2D, FAKE_ROC_FILL};
  fake_roc_launch l = {.kind = codes[kind], .kernel = name, .bytes = 4096, .dur_ns = 2000};
  ((fake_roc_launch_fn)fn)(&l);
  return 0;
}

static int topspti_launch(void *fn, int kind, const char *name) {
  fake_tp_launch l = {.kind = kind == RT_KERNEL   ? FAKE_TP_KERNEL
                              : kind == RT_MEMCPY ? FAKE_TP_MEMCPY
                                                  : FAKE_TP_MEMSET,
                      .name = name,
                      .grid = {1, 1, 1},
                      .block = {32, 1, 1},
                      .bytes = 4096,
                      .dur_ns = 2000};
  ((fake_tp_launch_fn)fn)(&l);
  return 0;
}

static const struct {
  const char *symbol;
  int (*launch)(void *fn, int kind, const char *name);
} fakes[] = {
    {"fake_cupti_launch", cupti_launch},     {"fake_mspti_launch", mspti_launch},
    {"fake_mupti_launch", mupti_launch},     {"fake_roctracer_launch", roctracer_launch},
    {"fake_topspti_launch", topspti_launch},
};

/* kind: 0 kernel, 1 memcpy, 2 memset. Returns -1 when the activity library was
 * not loaded (nothing armed the tracer): then nothing is recorded, as on a device. */
EXPORT int fake_rt_launch(int kind, const char *name) {
  const char *lib = getenv("FLAGOS_TRACER_LIBRARY");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (!h || kind < RT_KERNEL || kind > RT_MEMSET) return -1;
  int rc = -1;
  for (size_t i = 0; i < sizeof fakes / sizeof fakes[0] && rc; i++) {
    void *fn = dlsym(h, fakes[i].symbol);
    if (fn) rc = fakes[i].launch(fn, kind, name);
  }
  dlclose(h);
  return rc;
}

/* One allocation (free = 0) or free (free = 1) at address on device, through the
 * fakes that have memory records (MSPTI's records, roctracer's HIP API callbacks).
 * Returns -1 when the activity library was not loaded or has none. */
EXPORT int fake_rt_memory(int free, uint64_t address, uint64_t bytes, int device) {
  const char *lib = getenv("FLAGOS_TRACER_LIBRARY");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (!h) return -1;
  int rc = -1;
  fake_ms_memory_fn ms = (fake_ms_memory_fn)dlsym(h, "fake_mspti_memory");
  fake_roc_memory_fn roc = (fake_roc_memory_fn)dlsym(h, "fake_roctracer_memory");
  fake_roc_set_device_fn roc_device = (fake_roc_set_device_fn)dlsym(h, "fake_roctracer_set_device");
  if (ms) {
    fake_ms_memory m = {.release = free,
                        .memory_kind = 1,
                        .address = address,
                        .bytes = bytes,
                        .device = (uint32_t)device,
                        .stream = UINT32_MAX,
                        .api = free ? "aclrtFree" : "aclrtMalloc"};
    ms(&m);
    rc = 0;
  } else if (roc && roc_device) {
    roc_device(device);
    roc(&(fake_roc_memory){.call = free ? "hipFree" : "hipMalloc", .address = address, .bytes = bytes});
    rc = 0;
  }
  dlclose(h);
  return rc;
}

/* HIP's hipGetDevice, as the HIP runtime this library stands in for exports it: the
 * fake roctracer's (the tracer finds it here, in a runtime loaded RTLD_LOCAL). */
EXPORT int hipGetDevice(int *device) {
  const char *lib = getenv("FLAGOS_TRACER_LIBRARY");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
  int (*f)(int *) = h ? (int (*)(int *))dlsym(h, "hipGetDevice") : NULL;
  int rc = f ? f(device) : 1;
  if (h) dlclose(h);
  return rc;
}
