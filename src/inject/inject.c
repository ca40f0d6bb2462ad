/* The injection library `flagtrace record` hands to the CUDA driver (and to NVTX), or
 * preloads (preload.c): profiles an unmodified process and writes its trace at exit
 * or on SIGINT/SIGTERM. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flagtrace/api_table.h"
#include "inject.h"
#include "internal.h"

#define INJECT_EXPORT __attribute__((visibility("default")))

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static ft_session *session;
static pid_t owner_pid;        /* the process that created the session */
static atomic_int finished;    /* the trace was written (or abandoned) */
static bool capture_range;     /* --capture-range=cudaProfilerApi */
static bool deferred;          /* the session starts at cudaProfilerStart (FlagtraceProfilerRange) */
static atomic_int range_state; /* 0 before cudaProfilerStart, 1 inside, 2 after stop */
static uint64_t range_lo, range_hi;
/* record --on-demand: the session starts at each `flagtrace capture` (on_demand.c)
 * and is replaced by a fresh one at each capture's end */
static bool on_demand;
static bool od_armed;          /* a capture runs (under init_mu) */
static unsigned od_captures;   /* captures begun */
static ft_session *od_retired; /* the last capture's session, freed one capture later */
/* another client took the vendor's activity API before our tracer was armed (under
 * init_mu): it is then never armed in this process */
static char foreign_why[512];

/* ---- finishing: at exit, or from the signal thread ---- */

/* One line on stderr, and the same for `record` (FLAGTRACE_REPORT_FILE), which
 * otherwise could not tell "no process initialized CUDA" from "writing failed": a
 * line there starts "+ " for a trace written, "- " for one that was not (record then
 * exits with its own status when the program succeeded). */
static void report(bool written, const char *line) {
  char shown[4800]; /* one line on the terminal, whatever the path holds */
  ft__visible(shown, sizeof shown, line);
  fprintf(stderr, "flagtrace: %s\n", shown);
  const char *rf = getenv("FLAGTRACE_REPORT_FILE");
  if (!rf || !*rf) return;
  int fd = open(rf, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  size_t n = strlen(shown);
  if (write(fd, written ? "+ " : "- ", 2) < 0 || write(fd, shown, n) < 0 || write(fd, "\n", 1) < 0) { /* best effort */
  }
  close(fd);
}

static bool write_trace(ft_session *s, const char *path, const char *prefix, char *line, size_t len);

static void finish(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&finished, &expected, 1)) return;
  /* fork() without exec: the child has a copy of the session but no CUDA and no
   * tracer threads; it must never write the parent's file. */
  if (!session || getpid() != owner_pid) return;
  if (on_demand) { /* a capture running at exit ends there; nothing else is written */
    unsigned no = 0;
    ft_session *s = ft__od_stop(&no);
    char line[4800] = "";
    if (s) ft__od_write(s, no, NULL, "the process exited during the capture; ", line, sizeof line);
    ft__od_exiting(no, line);
    return;
  }
  pthread_mutex_lock(&init_mu);
  if (deferred) { /* no range came: a trace that says so, without arming the tracer now */
    session->device_status = FT_EUNAVAILABLE;
    snprintf(session->device_why, sizeof session->device_why, "no cudaProfilerStart opened the capture range");
    ft_session_start(session);
    deferred = false;
  }
  pthread_mutex_unlock(&init_mu);
  ft_session_stop(session); /* FT_ESTATE if never started: still write what we have */
  if (capture_range) {
    int st = atomic_load(&range_state);
    uint64_t hi = st == 2 ? range_hi : session->window_hi_ns;
    ft__session_set_window(session, st ? range_lo : session->window_hi_ns, st ? hi : session->window_hi_ns);
  }
  const char *pattern = getenv("FLAGTRACE_OUTPUT");
  char path[4096], line[4800];
  ft__inject_expand(pattern && *pattern ? pattern : "flagtrace-%p.json.gz", path, sizeof path);
  write_trace(session, path, "", line, sizeof line);
}

/* Writes s (stopped) to path and says so in one line (report(), and into line):
 * "wrote PATH (N events, M dropped)", or why not. True when written. */
static bool write_trace(ft_session *s, const char *path, const char *prefix, char *line, size_t len) {
  /* record checked a name without %p before the run; this catches a second process
   * writing the same name, and files that appeared meanwhile (nsys's convention) */
  const char *force = getenv("FLAGTRACE_FORCE_OVERWRITE");
  bool replaces = false; /* an existing regular file; a device or FIFO is written through */
  if (!(force && !strcmp(force, "1")) && !ft__ofile_check(path, "", &replaces, NULL, 0) && replaces) {
    snprintf(line, len, "%s%s exists: trace not written (record --force-overwrite replaces it)", prefix, path);
    report(false, line);
    return false;
  }
  ft_status st = ft_session_write(s, path);
  if (st) {
    snprintf(line, len, "%s%s", prefix, ft_session_last_error(s));
    report(false, line);
    return false;
  }
  ft_session_counts c;
  if (ft_session_counts_get(s, &c) == FT_OK) {
    uint64_t lost_at = 0;
    const char *why = "";
    char lost[1024] = "";
    if (ft_session_device_lost(s, &lost_at, &why)) /* never a silent "0 dropped" after a loss */
      snprintf(lost, sizeof lost, "; device activity after %.3f s is missing: %s",
               lost_at > s->window_lo_ns ? (double)(lost_at - s->window_lo_ns) / 1e9 : 0.0, why);
    snprintf(line, len, "%swrote %s (%llu events, %llu dropped%s)", prefix, path,
             (unsigned long long)(c.cpu_ranges + c.device_events - c.window_discarded),
             (unsigned long long)c.dropped_records, lost);
    report(true, line);
  }
  return true;
}

static sem_t signal_sem;
static atomic_int signal_done;
enum { N_WRITE_SIGNALS = 7 }; /* the signals after which the trace is still written */
static const int write_signals[N_WRITE_SIGNALS] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE};
static struct sigaction old_actions[N_WRITE_SIGNALS];

/* Writing a trace takes locks and memory: not something a signal handler may do.
 * The handler wakes this thread and waits (bounded) for it, then lets the signal
 * do what it would have done. */
static void *signal_writer(void *arg) {
  (void)arg;
  while (sem_wait(&signal_sem) != 0 && errno == EINTR) {
  }
  finish();
  atomic_store(&signal_done, 1);
  return NULL;
}

static void on_signal(int sig) {
  sem_post(&signal_sem);
  struct timespec ten_ms = {0, 10000000};
  for (int i = 0; i < 3000 && !atomic_load(&signal_done); i++) nanosleep(&ten_ms, NULL); /* <= 30 s */
  for (int i = 0; i < N_WRITE_SIGNALS; i++)
    if (write_signals[i] == sig) sigaction(sig, &old_actions[i], NULL);
  raise(sig); /* delivered with the original disposition once this handler returns */
}

static void install_signal_handlers(void) {
  if (sem_init(&signal_sem, 0, 0)) return;
  pthread_t th;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer thread takes no signals */
  int err = pthread_create(&th, NULL, signal_writer, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err) return;
  pthread_detach(th);
  /* Only where the signal would simply kill the process: a program with its own
   * handler (Python's KeyboardInterrupt) exits its own way and atexit writes. HUP (a
   * closed terminal or ssh session), the USR and ALRM signals and PIPE (a pipeline's
   * reader gone) end a process just as quietly by default. */
  for (int i = 0; i < N_WRITE_SIGNALS; i++) {
    if (sigaction(write_signals[i], NULL, &old_actions[i]) || old_actions[i].sa_handler != SIG_DFL) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(write_signals[i], &sa, NULL);
  }
}

static void forked_child(void) { session = NULL; }

/* ---- cudaProfilerStart/Stop ---- */

static void on_profiler_api(void *ctx, bool start) {
  (void)ctx;
  int expected = start ? 0 : 1;
  uint64_t now = ft__now_ns();
  if (start && atomic_compare_exchange_strong(&range_state, &expected, 1)) range_lo = now;
  else if (!start && atomic_compare_exchange_strong(&range_state, &expected, 2)) range_hi = now;
}

/* ---- the session ---- */

/* record's --trace list; device memory is not in it: --memory (FLAGOS_TRACE_MEMORY,
 * read by ft_session_create) governs it, on by default */
static unsigned activities_from_env(bool *nvtx) {
  const char *v = getenv("FLAGTRACE_TRACE");
  *nvtx = true;
  if (!v || !*v) return FT_ACTIVITY_DEFAULT;
  unsigned a = FT_ACTIVITY_MEMORY;
  *nvtx = false;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", v);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (!strcmp(tok, "kernel")) a |= FT_ACTIVITY_KERNEL;
    else if (!strcmp(tok, "memcpy")) a |= FT_ACTIVITY_MEMCPY;
    else if (!strcmp(tok, "memset")) a |= FT_ACTIVITY_MEMSET;
    else if (!strcmp(tok, "runtime")) a |= FT_ACTIVITY_RUNTIME;
    else if (!strcmp(tok, "driver")) a |= FT_ACTIVITY_DRIVER;
    else if (!strcmp(tok, "sync")) a |= FT_ACTIVITY_SYNC;
    else if (!strcmp(tok, "nvtx")) *nvtx = true;
  }
  return a;
}

/* Starts the session; with watch, a capture range is watched through the tracer
 * (CUPTI's callbacks). Under init_mu. */
static void start_session(bool watch) {
  if (foreign_why[0]) { /* CPU-only: arming now would take CUPTI back from its owner */
    session->device_status = FT_EUNAVAILABLE;
    snprintf(session->device_why, sizeof session->device_why, "%s", foreign_why);
    capture_range = false;
    ft_session_start(session);
    return;
  }
  if (capture_range && watch) {
    const ft_tracer_ops *ops = session->tracer->ops;
    if (!ops->watch_profiler_api || ops->watch_profiler_api(session->tracer, on_profiler_api, NULL) != FT_OK)
      ft__warn(
          "--capture-range=cudaProfilerApi: the %s tracer cannot watch the profiler API (%s); "
          "recording the whole run",
          ops->name, ops->last_error(session->tracer));
    else ft__log("capture range: waiting for cudaProfilerStart");
  }
  ft_session_start(session);
  if (capture_range && !session->tracer_armed) capture_range = false;
}

/* From the preload library's libcuda shim (src/tracers/cuda_range_shim.c): 1 when
 * cuProfilerStart has returned, 0 when cuProfilerStop begins, -1 when the shim could
 * not be loaded (the range is then watched through the tracer, as without it). */
INJECT_EXPORT void FlagtraceProfilerRange(int what) {
  pthread_mutex_lock(&init_mu);
  bool ours = session && owner_pid == getpid();
  if (ours && deferred && what) {
    if (what < 0) ft__log("capture range: the loader cannot watch it; watching through the tracer");
    start_session(what < 0); /* at the range's start, no watch is needed any more */
    deferred = false;
  }
  pthread_mutex_unlock(&init_mu);
  if (ours && what >= 0) on_profiler_api(NULL, what > 0);
}

/* A session as record's options make it, not started; NULL when it cannot be made. */
static ft_session *new_session(void) {
  bool nvtx;
  ft_session_options o;
  ft_session_options_init(&o);
  o.activities = activities_from_env(&nvtx);
  ft_session *s;
  if (ft_session_create(&s, &o) != FT_OK) return NULL;
  ft__session_accept_attach(s); /* the program's own torch.profiler attaches to it */
  return s;
}

/* ---- record --on-demand: one session per capture (on_demand.c drives these) ---- */

bool ft__od_arm(unsigned *no, char *why, size_t len) {
  pthread_mutex_lock(&init_mu);
  bool ok = false;
  if (!session || owner_pid != getpid() || atomic_load(&finished)) snprintf(why, len, "the process is exiting");
  else if (od_armed) snprintf(why, len, "capture %u is running", od_captures);
  else if (foreign_why[0]) snprintf(why, len, "%s", foreign_why);
  else if (ft_session_start(session) != FT_OK)
    snprintf(why, len, "cannot start a session: %s", ft_session_last_error(session));
  else {
    /* the window opens once the tracer is armed: a launch before that is in no
     * capture, never half-recorded in this one */
    if (session->tracer_armed) ft__session_set_window(session, ft__now_ns(), 0);
    const char *dwhy;
    if (ft_session_device_status(session, &dwhy) != FT_OK) /* still captured: CPU ranges, and the reason */
      ft__warn("capture %u: no device activity: %s", od_captures + 1, dwhy);
    od_armed = ok = true;
    *no = ++od_captures;
  }
  pthread_mutex_unlock(&init_mu);
  return ok;
}

ft_session *ft__od_stop(unsigned *no) {
  pthread_mutex_lock(&init_mu);
  ft_session *s = od_armed ? session : NULL;
  if (s) {
    od_armed = false;
    *no = od_captures;
    ft_session *fresh = atomic_load(&finished) ? NULL : new_session();
    if (fresh) session = fresh;
  }
  pthread_mutex_unlock(&init_mu);
  /* stopped outside the lock (the flush, the attribution): the program's NVTX calls
   * meanwhile reach the fresh session instead of waiting for it */
  if (s) ft_session_stop(s);
  return s;
}

/* Why path may not take a capture's trace, or NULL. A capture is asked over a socket
 * while the program runs: its trace goes only to a regular file created or replaced
 * (record's rules), never through a descriptor, device or FIFO, and never over a file
 * the program has open (`-o '/proc/self/fd/%n'` would write into its stdout, its
 * log, or the control connection). */
static const char *od_path_refused(const char *path) {
  struct stat st, fst;
  if (ft__ofile_is_stream(path)) return "it names a descriptor, a device or a FIFO, not a regular file";
  if (stat(path, &st) != 0) return NULL; /* a new file (or the writer says why not) */
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  DIR *d = opendir("/proc/self/fd");
  const char *why = NULL;
  for (struct dirent *e; d && !why && (e = readdir(d));) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (end != e->d_name && !*end && fd != dirfd(d) && fstat((int)fd, &fst) == 0 && fst.st_dev == st.st_dev &&
        fst.st_ino == st.st_ino)
      why = "it is a file this process has open";
  }
  if (d) closedir(d);
  return why;
}

bool ft__od_write(ft_session *s, unsigned no, const char *pattern, const char *prefix, char *line, size_t len) {
  if (!pattern || !*pattern) pattern = getenv("FLAGTRACE_OUTPUT");
  char path[4096];
  ft__inject_expand_n(pattern && *pattern ? pattern : "flagtrace-%p-%n.json.gz", no, path, sizeof path);
  const char *refused = od_path_refused(path);
  bool ok = false;
  if (refused) {
    snprintf(line, len, "%strace not written to %s: %s", prefix, path, refused);
    report(false, line);
  } else {
    ok = write_trace(s, path, prefix, line, len);
  }
  pthread_mutex_lock(&init_mu);
  /* A thread of the program may still hold the previous capture's session for a
   * moment (between reading the pointer and its call): freed a whole capture later. */
  ft_session *old = od_retired;
  od_retired = s == session ? NULL : s;
  pthread_mutex_unlock(&init_mu);
  if (old && !atomic_load(&finished)) ft_session_destroy(old);
  return ok;
}

/* Set while this thread creates the session: arming CUPTI can initialize CUDA, whose
 * driver then calls InitializeInjection (CUDA_INJECTION64_PATH) on this thread. */
static _Thread_local bool creating;

ft_session *ft__inject_session(void) {
  if (creating) return session; /* re-entered from inside the creation below */
  pthread_mutex_lock(&init_mu);
  if (session && owner_pid == getpid()) goto end;
  creating = true;
  if (!(session = new_session())) goto end;
  owner_pid = getpid();
  const char *cr = getenv("FLAGTRACE_CAPTURE_RANGE"), *fl = getenv("FLAGTRACE_RANGE_FROM_LOADER");
  const char *od = getenv("FLAGTRACE_ON_DEMAND");
  on_demand = od && !strcmp(od, "1");
  capture_range = !on_demand && cr && !strcmp(cr, "cudaProfilerApi");
  /* The preload library hands the program a libcuda shim that reports the range:
   * nothing touches CUPTI before it starts (any CUPTI call costs each launch ~3 %). */
  deferred = capture_range && fl && !strcmp(fl, "1");
  if (on_demand) /* nothing touches the tracer until a capture asks */
    ft__od_serve();
  else if (deferred)
    ft__log("capture range: waiting for cudaProfilerStart through the loader (no CUPTI call before it)");
  else start_session(true);
  atexit(finish);
  install_signal_handlers();
  pthread_atfork(NULL, NULL, forked_child);
end:
  creating = false;
  ft_session *s = session; /* read under the lock: a capture's end replaces it */
  pthread_mutex_unlock(&init_mu);
  return s;
}

bool ft__inject_begin(void) {
  ft_session *s = ft__inject_session();
  if (!s) {
    fprintf(stderr, "flagtrace: could not create a profiling session; this process is not traced\n");
    return false;
  }
  const char *why;
  if (ft_session_device_status(s, &why) != FT_OK) fprintf(stderr, "flagtrace: no device activity: %s\n", why);
  return true;
}

/* Called by the CUDA driver from cuInit when CUDA_INJECTION64_PATH names us. */
INJECT_EXPORT int InitializeInjection(void) { return ft__inject_begin(); }

/* ---- another client of the vendor's activity API (the preload library's guard) ----
 * Called on the other client's thread just before its call that would take the API
 * over reaches the vendor (its buffer callbacks would be handed our buffers). */
INJECT_EXPORT void FlagtraceForeignClient(const char *who) {
  pthread_mutex_lock(&init_mu);
  ft_session *s = session && owner_pid == getpid() ? session : NULL;
  bool first = !foreign_why[0];
  if (first)
    snprintf(foreign_why, sizeof foreign_why, "%s uses the activity API; flagtrace does not take it from it", who);
  if (s && deferred) { /* the range never started: no tracer to step aside, none to arm later */
    ft__log("capture range: %s", foreign_why);
  }
  pthread_mutex_unlock(&init_mu);
  if (s && first) ft__session_relinquish(s, who);
}

/* ---- a torch process: its torch.profiler gets device activity from this session ----
 * The kineto adaptor (libflagtrace_kineto.so, beside this library, or
 * FLAGTRACE_KINETO_LIBRARY) is loaded and registered as kineto's child profiler with
 * this library's core: a profile then attaches to record's session. Called by the
 * preload library once libtorch_cpu is loaded, before anything can profile. */
INJECT_EXPORT void FlagtraceTorchLoaded(void) {
  static atomic_bool done;
  if (atomic_exchange(&done, true) || !ft__inject_begin()) return;
  char path[4096];
  const char *env = getenv("FLAGTRACE_KINETO_LIBRARY");
  if (env && *env) snprintf(path, sizeof path, "%s", env);
  else if (!ft__path_beside_us("libflagtrace_kineto.so", path, sizeof path))
    snprintf(path, sizeof path, "libflagtrace_kineto.so");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  int (*install)(const ft_api *, char *, size_t) =
      h ? (int (*)(const ft_api *, char *, size_t))dlsym(h, "flagtrace_kineto_install") : NULL;
  char msg[512] = "";
  if (!install) {
    const char *e = dlerror();
    snprintf(msg, sizeof msg, "%s", e ? e : "no flagtrace_kineto_install");
  } else if (install(ft_api_get(), msg, sizeof msg) == 0) {
    ft__log("torch: %s registered as kineto's child profiler (its profiles attach to this session)", path);
    /* record --on-demand's captures by steps also count torch's ProfilerStep# ranges */
    ft__od_torch_watch((int (*)(ft__range_fn))dlsym(h, "flagtrace_kineto_watch_steps"));
    return;
  }
  /* a torch.profiler profile would then arm kineto's own CUPTI: the guard steps
   * this session aside, and the exit line says from when device activity is missing */
  fprintf(stderr, "flagtrace: this process's torch.profiler cannot take device activity from flagtrace record (%s)\n",
          msg);
}
