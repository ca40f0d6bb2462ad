/* Stands in for an accelerator program under `record --inject=preload`: loads the
 * (fake) runtime FAKE_RUNTIME names, launches a kernel, a copy and a memset, then
 * ends as its mode says. Every vendor build runs the same driver. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef FT_DRIVER_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

typedef int (*launch_fn)(int, const char *);

static launch_fn load_runtime(void) {
  const char *rt = getenv("FAKE_RUNTIME");
  void *h = rt ? dlopen(rt, RTLD_NOW | RTLD_LOCAL) : NULL;
  launch_fn launch = h ? (launch_fn)dlsym(h, "fake_rt_launch") : NULL;
  if (!launch)
    fprintf(stderr, "preload_driver: FAKE_RUNTIME=%s: %s\n", rt ? rt : "(unset)", rt ? dlerror() : "not set");
  return launch;
}

/* cudaProfilerStart/Stop as the CUDA runtime reaches the driver (measured on the H200,
 * static and shared cudart alike): dlopen libcuda.so.1 (FAKE_LIBCUDA), dlsym
 * cuGetProcAddress_v2, ask it for cuGetProcAddress and that one for the calls. With
 * "range" the start and stop bracket one kernel; "range_none" never starts. */
static int range(launch_fn launch, bool start) {
  typedef int (*gpa_fn)(const char *, void **, int, unsigned long long, int *);
  const char *drv = getenv("FAKE_LIBCUDA");
  void *h = drv ? dlopen(drv, RTLD_NOW | RTLD_LOCAL) : NULL;
  gpa_fn gpa2 = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL, gpa = NULL;
  int st = 0, (*on)(void) = NULL, (*off)(void) = NULL;
  if (!gpa2 || gpa2("cuGetProcAddress", (void **)&gpa, 12000, 0, &st) ||
      gpa("cuProfilerStart", (void **)&on, 4000, 0, &st) || gpa("cuProfilerStop", (void **)&off, 4000, 0, &st)) {
    fprintf(stderr, "preload_driver: FAKE_LIBCUDA=%s: no profiler calls (%s)\n", drv ? drv : "(unset)", dlerror());
    return 3;
  }
  launch(0, "before_range");
  if (start && on()) return 5;
  launch(0, "inside_range");
  if (start && off()) return 5;
  launch(0, "after_range");
  return 0;
}

static int work(void) {
  launch_fn launch = load_runtime();
  if (!launch) return 3;
  if (launch(0, "fake_kernel") || launch(1, NULL) || launch(2, NULL))
    fprintf(stderr, "preload_driver: the activity library was not loaded (tracer not armed)\n");
  return 0;
}

static unsigned long long realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Kernel names the activity records point to, reachable to the end (no leak reported). */
static char **names;
static size_t n_names, cap_names;
static char *keep(const char *name) {
  if (n_names == cap_names) {
    char **n = realloc(names, (cap_names ? cap_names * 2 : 1024) * sizeof *n);
    if (!n) return NULL;
    names = n, cap_names = cap_names ? cap_names * 2 : 1024;
  }
  return names[n_names++] = strdup(name);
}

/* "loop SECONDS LOG [STEP]": a long-running program for record --on-demand, a kernel
 * k<N> every 2 ms, each launch's CLOCK_REALTIME before and after in LOG ("N lo hi");
 * with STEP (CUDA builds), every 5 kernels begin an NVTX range named STEP<i>. */
static int loop(int argc, char **argv) {
  launch_fn launch = load_runtime();
  if (!launch) return 3;
  double secs = argc > 2 ? atof(argv[2]) : 10;
  FILE *log = argc > 3 ? fopen(argv[3], "w") : NULL;
  if (log) setvbuf(log, NULL, _IOLBF, 0); /* read while the loop runs */
  const char *step = argc > 4 ? argv[4] : NULL;
  printf("preload_driver: ready\n");
  fflush(stdout);
  unsigned long long end = realtime_ns() + (unsigned long long)(secs * 1e9);
  for (long n = 0; realtime_ns() < end; n++) {
    char name[32];
#ifdef FT_DRIVER_NVTX
    if (step && n % 5 == 0) {
      if (n) nvtxRangePop();
      snprintf(name, sizeof name, "%s%ld", step, n / 5);
      nvtxRangePushA(name); /* copied by the injection */
    }
#else
    (void)step;
#endif
    snprintf(name, sizeof name, "k%ld", n);
    char *kept = keep(name); /* the activity record keeps the pointer, as CUPTI's own names */
    unsigned long long lo = realtime_ns();
    launch(0, kept ? kept : "k");
    unsigned long long hi = realtime_ns();
    if (log) fprintf(log, "%ld %llu %llu\n", n, lo, hi);
    usleep(2000);
  }
  if (log) fclose(log);
  printf("preload_driver: loop done\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "exit";
  if (!strcmp(mode, "none")) { /* never loads the runtime: must cost and write nothing */
    printf("preload_driver: none done\n");
    return 0;
  }
  if (!strcmp(mode, "loop")) return loop(argc, argv);
  if (!strcmp(mode, "range") || !strcmp(mode, "range_none")) {
    launch_fn launch = load_runtime();
    int rc = launch ? range(launch, !strcmp(mode, "range")) : 3;
    if (!rc) printf("preload_driver: %s done\n", mode);
    return rc;
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
