/* Stands in for an accelerator program under `record --inject=preload`: loads the
 * (fake) runtime FAKE_RUNTIME names, launches a kernel, a copy and a memset, then
 * ends as its mode says. Every vendor build runs the same driver. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int work(void) {
  const char *rt = getenv("FAKE_RUNTIME");
  void *h = rt ? dlopen(rt, RTLD_NOW | RTLD_LOCAL) : NULL;
  int (*launch)(int, const char *) = h ? (int (*)(int, const char *))dlsym(h, "fake_rt_launch") : NULL;
  if (!launch) {
    fprintf(stderr, "preload_driver: FAKE_RUNTIME=%s: %s\n", rt ? rt : "(unset)", rt ? dlerror() : "not set");
    return 3;
  }
  if (launch(0, "fake_kernel") || launch(1, NULL) || launch(2, NULL))
    fprintf(stderr, "preload_driver: the activity library was not loaded (tracer not armed)\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "exit";
  if (!strcmp(mode, "none")) { /* never loads the runtime: must cost and write nothing */
    printf("preload_driver: none done\n");
    return 0;
  }
  if (!strcmp(mode, "spawn")) { /* a child that execs inherits the preload: two traces */
    pid_t p = fork();
    if (p == 0) {
      execl("/proc/self/exe", argv[0], "exit", (char *)NULL);
      _exit(127);
    }
    int rc = work(), st = 0;
    waitpid(p, &st, 0);
    printf("preload_driver: pids %ld %ld\n", (long)getpid(), (long)p);
    return rc ? rc : WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  int rc = work();
  if (rc) return rc;
  if (!strcmp(mode, "wait")) { /* SIGTERM arrives from outside, mid-run */
    printf("preload_driver: ready\n");
    fflush(stdout);
    for (int i = 0; i < 300; i++) usleep(100000);
    return 4;
  }
  if (!strcmp(mode, "fork")) { /* a fork without exec must not write the parent's trace */
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
  }
  printf("preload_driver: %s done\n", mode);
  return !strcmp(mode, "status") ? 3 : 0;
}
