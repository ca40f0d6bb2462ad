/* A program for `record --inject=preload` that allocates: loads the (fake) runtime
 * FAKE_RUNTIME names, launches one kernel, then allocates 4096 bytes, frees them and
 * allocates 8192 on device 1 (the fakes with memory records: MSPTI, roctracer; a
 * free names its size, as MSPTI's records do, and roctracer's fake ignores it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const char *rt = getenv("FAKE_RUNTIME");
  void *h = rt ? dlopen(rt, RTLD_NOW | RTLD_LOCAL) : NULL;
  int (*launch)(int, const char *) = h ? (int (*)(int, const char *))dlsym(h, "fake_rt_launch") : NULL;
  int (*memory)(int, uint64_t, uint64_t, int) =
      h ? (int (*)(int, uint64_t, uint64_t, int))dlsym(h, "fake_rt_memory") : NULL;
  if (!launch || !memory) {
    fprintf(stderr, "memory_driver: FAKE_RUNTIME=%s: %s\n", rt ? rt : "(unset)", rt ? dlerror() : "not set");
    return 3;
  }
  if (launch(0, "fake_kernel") || memory(0, 0x1000000, 4096, 1) || memory(1, 0x1000000, 4096, 1) ||
      memory(0, 0x2000000, 8192, 1)) {
    fprintf(stderr, "memory_driver: the activity library was not loaded (tracer not armed)\n");
    return 4;
  }
  printf("memory_driver: done\n");
  return 0;
}
