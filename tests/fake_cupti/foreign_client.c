/* A program that is itself a CUPTI client (as JAX's profiler is) while `flagtrace
 * record` records it, with the fake libcupti: it does what the CUDA driver does with
 * CUDA_INJECTION64_PATH, launches, then takes CUPTI over mid-run (dlopen of libcupti
 * by path, or linked against it: FOREIGN_LINKED), with its own buffer callbacks, a
 * subscription and its kinds; launches again, flushes, and frees every buffer it is
 * handed, as JAX does: one of flagtrace's would make glibc abort ("free(): invalid
 * pointer"), so this aborts too. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include "fake_cupti.h"

static uint8_t *mine[256];
static size_t n_mine, records, buffers;

static void CUPTIAPI requested(uint8_t **b, size_t *size, size_t *max) {
  *b = aligned_alloc(8, 1 << 16);
  *size = 1 << 16;
  *max = 0;
  if (n_mine < 256) mine[n_mine++] = *b;
}

static CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);

static void CUPTIAPI completed(CUcontext c, uint32_t stream, uint8_t *b, size_t size, size_t valid) {
  (void)c, (void)stream, (void)size;
  bool own = false;
  for (size_t i = 0; i < n_mine; i++) own |= mine[i] == b;
  if (!own) {
    fprintf(stderr, "foreign_client: handed a buffer it never allocated: free(): invalid pointer\n");
    abort();
  }
  CUpti_Activity *r = NULL;
  while (next_record(b, valid, &r) == CUPTI_SUCCESS) records++;
  buffers++;
  free(b);
}

static void CUPTIAPI on_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data) {
  (void)u, (void)d, (void)id, (void)data;
}

static void settle(void) {
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
}

#ifdef FOREIGN_LINKED
uint32_t fake_cupti_launch(const fake_launch *l); /* the fake's own entry, linked */
/* linked: these resolve in the global scope, where the preload library comes first */
#define CALL(name) name
#else
static void *cupti;
#define CALL(name) ((__typeof__(&name))dlsym(cupti, #name))
#endif

int main(void) {
  const char *ip = getenv("CUDA_INJECTION64_PATH"), *fp = getenv("FLAGOS_TRACER_LIBRARY");
  void *inject = ip ? dlopen(ip, RTLD_NOW | RTLD_LOCAL) : NULL;
  int (*init)(void) = inject ? (int (*)(void))dlsym(inject, "InitializeInjection") : NULL;
  if (init) init(); /* the driver's part (absent when run without record) */
#ifndef FOREIGN_LINKED
  cupti = fp ? dlopen(fp, RTLD_NOW | RTLD_LOCAL) : NULL; /* by path, as XLA's loader does */
  if (!cupti) {
    fprintf(stderr, "foreign_client: %s\n", dlerror());
    return 3;
  }
  fake_cupti_launch_fn launch = (fake_cupti_launch_fn)dlsym(cupti, "fake_cupti_launch");
#else
  (void)fp;
  fake_cupti_launch_fn launch = fake_cupti_launch;
#endif
  next_record = CALL(cuptiActivityGetNextRecord);
  fake_launch k = {
      .kind = FAKE_KERNEL, .name = "before_takeover", .grid = {1, 1, 1}, .block = {32, 1, 1}, .dur_ns = 1000};
  launch(&k);
  settle();
  CUpti_SubscriberHandle sub;
  CUptiResult sr = CALL(cuptiSubscribe)(&sub, on_callback, NULL);
  if (CALL(cuptiActivityRegisterCallbacks)(requested, completed) != CUPTI_SUCCESS) return 4;
  if (CALL(cuptiActivityEnable)(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return 5;
  k.name = "after_takeover";
  for (int i = 0; i < 3; i++) launch(&k);
  settle();
  CALL(cuptiActivityFlushAll)(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  CALL(cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  printf("foreign_client: subscribe %s; %zu records in %zu buffers of its own\n",
         sr == CUPTI_SUCCESS ? "ok" : "refused", records, buffers);
  return 0;
}
