/* Stands in for a CUDA program under `flagtrace record`, with the fake libcupti: does
 * what the CUDA driver and NVTX would do with CUDA_INJECTION64_PATH and
 * NVTX_INJECTION64_PATH, then "launches" work through the fake. */
#define _GNU_SOURCE
#define NVTX_NO_IMPL
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_cupti.h"
#include "fake_memory_script.h"

static NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE], core2[NVTX_CBID_CORE2_SIZE];
static NvtxFunctionPointer *core_t[NVTX_CBID_CORE_SIZE], *core2_t[NVTX_CBID_CORE2_SIZE];

static int NVTX_API get_module(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned int *size) {
  if (m == NVTX_CB_MODULE_CORE) {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; i++) core_t[i] = &core[i];
    *out = core_t;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (m == NVTX_CB_MODULE_CORE2) {
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; i++) core2_t[i] = &core2[i];
    *out = core2_t;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}
static const NvtxExportTableCallbacks callbacks = {sizeof callbacks, get_module};
static const void *NVTX_API get_export_table(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &callbacks : NULL; }

static void *lib(const char *env) {
  const char *p = getenv(env);
  void *h = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) {
    fprintf(stderr, "inject_driver: %s: %s\n", env, p ? dlerror() : "not set");
    exit(3);
  }
  return h;
}

static void settle(void) {
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "exit";
  void *inject = lib("CUDA_INJECTION64_PATH"), *fake = lib("FLAGOS_TRACER_LIBRARY");
  fake_cupti_launch_fn launch = (fake_cupti_launch_fn)dlsym(fake, "fake_cupti_launch");
  void (*profiler_api)(int) = (void (*)(int))dlsym(fake, "fake_cupti_profiler_api");
  int (*init)(void) = (int (*)(void))dlsym(inject, "InitializeInjection");
  int (*init_nvtx)(NvtxGetExportTableFunc_t) =
      (int (*)(NvtxGetExportTableFunc_t))dlsym(inject, "InitializeInjectionNvtx2");
  if (!launch || !init || !init_nvtx) return 3;
  /* NVTX may come first (its first call precedes cuInit); then cuInit */
  if (getenv("NVTX_INJECTION64_PATH") && !init_nvtx(get_export_table)) return 4;
  if (!init()) return 5;

  fake_launch k = {.kind = FAKE_KERNEL,
                   .name = "_Z5saxpyfPKfPfi",
                   .grid = {4096, 1, 1},
                   .block = {256, 1, 1},
                   .regs = 16,
                   .dur_ns = 2000};
  if (!strcmp(mode, "wide")) { /* nvtxRangePushW: wide strings become UTF-8, surrogates U+FFFD */
    static const wchar_t name[] = {L'w', 0xE9, 0x20AC, 0x1F600, 0xD800, 0};
    ((nvtxRangePushW_impl_fntype)core[NVTX_CBID_CORE_RangePushW])(name);
    k.name = "in_wide";
    launch(&k);
    ((nvtxRangePop_impl_fntype)core[NVTX_CBID_CORE_RangePop])();
    settle();
    return 0;
  }
  if (!strcmp(mode, "memory")) { /* the memory script (fake_memory_script.h), inside one NVTX range */
    ((nvtxRangePushA_impl_fntype)core[NVTX_CBID_CORE_RangePushA])("allocating");
    fake_memory_script(launch);
    ((nvtxRangePop_impl_fntype)core[NVTX_CBID_CORE_RangePop])();
    settle();
    printf("inject_driver: memory done\n");
    return 0;
  }
  if (!strcmp(mode, "range")) {
    k.name = "before_range";
    launch(&k);
    profiler_api(1);
    k.name = "inside_range";
    launch(&k);
    settle();
    profiler_api(0);
    k.name = "after_range";
    launch(&k);
    settle();
    return 0;
  }
  if (core[NVTX_CBID_CORE_RangePushA]) {
    ((nvtxRangePushA_impl_fntype)core[NVTX_CBID_CORE_RangePushA])("outer");
    ((nvtxRangePushA_impl_fntype)core[NVTX_CBID_CORE_RangePushA])("inner");
  }
  launch(&k);
  if (core[NVTX_CBID_CORE_RangePop]) {
    int level = ((nvtxRangePop_impl_fntype)core[NVTX_CBID_CORE_RangePop])();
    if (level != 1) fprintf(stderr, "inject_driver: pop returned level %d, expected 1\n", level);
    ((nvtxMarkA_impl_fntype)core[NVTX_CBID_CORE_MarkA])("mark");
    nvtxDomainHandle_t d = ((nvtxDomainCreateA_impl_fntype)core2[NVTX_CBID_CORE2_DomainCreateA])("dom");
    nvtxStringHandle_t s =
        ((nvtxDomainRegisterStringA_impl_fntype)core2[NVTX_CBID_CORE2_DomainRegisterStringA])(d, "registered");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    nvtxRangeId_t id = ((nvtxDomainRangeStartEx_impl_fntype)core2[NVTX_CBID_CORE2_DomainRangeStartEx])(d, &a);
    k.name = "in_outer";
    launch(&k);
    ((nvtxDomainRangeEnd_impl_fntype)core2[NVTX_CBID_CORE2_DomainRangeEnd])(d, id);
    ((nvtxRangePop_impl_fntype)core[NVTX_CBID_CORE_RangePop])();
  }
  settle();
  if (!strcmp(mode, "many")) { /* a trace too big for a tiny disk */
    k.name = "many";
    for (int i = 0; i < 2000; i++) launch(&k);
    settle();
  }
  if (!strcmp(mode, "sigterm")) raise(SIGTERM); /* default disposition: the trace must still be written */
  if (!strcmp(mode, "sigint")) raise(SIGINT);
  if (!strcmp(mode, "segv")) raise(SIGSEGV); /* a crash: no trace, and never a partial one */
  if (!strcmp(mode, "fork")) {
    pid_t p = fork();
    if (p == 0) exit(0); /* a fork without exec must not write the parent's trace */
    waitpid(p, NULL, 0);
  }
  printf("inject_driver: %s done\n", mode);
  return 0;
}
