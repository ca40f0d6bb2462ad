/* record --on-demand: a control thread, blocked in accept() on this process's Unix
 * socket until `flagtrace capture` asks, arms the session for a window (a duration or
 * a number of NVTX step ranges), writes that capture's trace and waits again. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "inject.h"
#include "internal.h"
#include "rank.h"

static int listen_fd = -1;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static pid_t server_pid;
/* The connection of the running capture: whoever takes it (the control thread at the
 * capture's end, or the exiting process) answers it. */
static atomic_int client_fd = -1;
static atomic_bool writing; /* the control thread writes a capture: exit waits for it */

/* A capture by steps: the NVTX thread that begins a step range arms and stops the
 * session itself, so the window holds whole steps. */
enum { STEPS_OFF, STEPS_WAIT, STEPS_COUNT, STEPS_DONE };
static atomic_int step_state;
static pthread_mutex_t step_mu = PTHREAD_MUTEX_INITIALIZER;
static char step_name[256];
static size_t step_len;
static uint32_t step_target, step_seen;
static unsigned step_no;
static ft_session *step_stopped;
static char step_why[256];
/* the kineto adaptor's watch of torch's ranges (a torch process), else NULL */
static _Atomic(int (*)(ft__range_fn)) torch_watch;
static int torch_range(const char *name, int begin);

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One line to the client; never SIGPIPE (a client gone is not the program's death). */
static void reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int fd, const char *fmt, ...) {
  char line[5000];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
  line[len++] = '\n';
  if (send(fd, line, len, MSG_NOSIGNAL) < 0) { /* the client went away: nothing to tell */
  }
}

/* Reads one request line (bounded by FT__CTL_MAX_REQUEST, and by the socket's 2 s
 * receive timeout). Returns its length, or -1 with why. */
static ssize_t read_request(int fd, char *buf, size_t cap, char *why, size_t wlen) {
  size_t n = 0;
  while (n < cap) {
    ssize_t r = recv(fd, buf + n, cap - n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      snprintf(why, wlen, r == 0 ? "the request ended without a newline" : "no complete request within 2 s");
      return -1;
    }
    char *nl = memchr(buf + n, '\n', (size_t)r);
    n += (size_t)r;
    if (nl) return nl - buf + 1;
  }
  snprintf(why, wlen, "request longer than %d bytes", FT__CTL_MAX_REQUEST);
  return -1;
}

/* Text safe on one line of the reply (a command name: no spaces, no controls). */
static void plain(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s <= ' ' || *s == 0x7f) *s = '?';
}

static void info(int fd, bool armed) {
  char comm[64] = "?", job[32] = "-";
  FILE *f = fopen("/proc/self/comm", "r");
  if (f) {
    if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
  }
  plain(comm);
  const char *j = getenv("FLAGTRACE_JOB");
  if (j && *j && strspn(j, "0123456789") == strlen(j) && strlen(j) < sizeof job) snprintf(job, sizeof job, "%s", j);
  const char *rank = ft__env_rank_text();
  reply(fd, "ok pid=%ld job=%s rank=%s state=%s comm=%s", (long)getpid(), job, rank ? rank : "-",
        armed ? "capturing" : "waiting", comm);
}

static void serve(int fd, bool busy);

/* Waits until deadline (ms, monotonic; 0: none) or until done() says so, answering
 * other connections meanwhile (busy). Returns false when the client went away. */
static bool wait_window(int fd, uint64_t deadline, bool (*done)(void)) {
  for (;;) {
    if (done && done()) return true;
    uint64_t now = mono_ms();
    if (deadline && now >= deadline) return true;
    int timeout = done ? 20 : (int)(deadline - now > 1000 ? 1000 : deadline - now);
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = listen_fd, .events = POLLIN}};
    int r = poll(p, 2, timeout);
    if (r < 0 && errno != EINTR) return true;
    if (r <= 0) continue;
    if (p[0].revents) { /* the client sent more, or hung up (Ctrl-C): the window ends */
      char c;
      if (recv(fd, &c, 1, MSG_DONTWAIT) <= 0) return false;
    }
    if (p[1].revents & POLLIN) {
      int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (c >= 0) serve(c, true);
    }
  }
}

static bool steps_done(void) { return atomic_load(&step_state) == STEPS_DONE; }

/* Stops the running capture for this thread to write: `writing` is set first, so an
 * exit that finds nothing to stop waits for the trace (never a half-written one). */
static ft_session *stop_to_write(unsigned *no) {
  atomic_store(&writing, true);
  ft_session *s = ft__od_stop(no);
  if (!s) atomic_store(&writing, false);
  return s;
}

/* The stopped capture s written, its line to the client (if it is still ours). */
static void finish_capture(int fd, ft_session *s, unsigned no, const char *pattern) {
  char line[4800];
  bool ok = ft__od_write(s, no, pattern, "", line, sizeof line);
  if (atomic_compare_exchange_strong(&client_fd, &fd, -1))
    reply(fd, "%s capture %u: %s", ok ? "ok" : "error", no, line);
  atomic_store(&writing, false);
}

/* The exiting process took the running capture (at exit, or a signal's): it writes
 * the trace and answers the client; this thread waits for the end with it. */
static _Noreturn void exited(void) {
  for (;;) pause();
}

static void capture(int fd, const ft__ctl_req *req) {
  const char *pattern = req->out[0] ? req->out : NULL;
  unsigned no = 0;
  char why[600];
  atomic_store(&client_fd, fd);
  if (req->steps) {
    int (*watch)(ft__range_fn) = atomic_load(&torch_watch);
#ifndef FT_HAVE_NVTX
    if (!watch) {
      atomic_store(&client_fd, -1);
      reply(fd,
            "error counting steps needs NVTX ranges, which this accelerator's build does not take, or torch's "
            "ranges (ProfilerStep#), and this process has not loaded torch; use a duration");
      return;
    }
#endif
    pthread_mutex_lock(&step_mu);
    snprintf(step_name, sizeof step_name, "%s", req->range);
    step_len = strlen(step_name);
    step_target = req->steps;
    step_seen = 0;
    step_stopped = NULL;
    step_why[0] = '\0';
    atomic_store(&step_state, STEPS_WAIT);
    pthread_mutex_unlock(&step_mu);
    /* torch's ranges are watched only now: until asked, its record_function pays nothing */
    if (watch && watch(torch_range)) ft__warn("capture by steps: torch refused a RecordFunction callback; NVTX only");
    bool stayed = wait_window(fd, 0, steps_done);
    if (watch) watch(NULL);
    pthread_mutex_lock(&step_mu);
    int st = atomic_exchange(&step_state, STEPS_OFF);
    ft_session *s = step_stopped;
    no = step_no;
    if (st == STEPS_COUNT) s = stop_to_write(&no); /* the client gave up mid-window: what was caught */
    snprintf(why, sizeof why, "%s", step_why);
    pthread_mutex_unlock(&step_mu);
    if (s) finish_capture(fd, s, no, pattern);
    else if (st == STEPS_COUNT || (st == STEPS_DONE && !why[0])) exited(); /* the exit took it */
    else if (atomic_compare_exchange_strong(&client_fd, &fd, -1))          /* also to a client that stopped waiting */
      reply(fd, "error %s", why[0] ? why : stayed ? "no step range began" : "no step range began before the timeout");
    return;
  }
  if (!ft__od_arm(&no, why, sizeof why)) {
    atomic_store(&client_fd, -1);
    reply(fd, "error %s", why);
    return;
  }
  reply(fd, "armed capture %u", no);
  wait_window(fd, mono_ms() + req->duration_ms, NULL);
  ft_session *s = stop_to_write(&no);
  if (!s) exited();
  finish_capture(fd, s, no, pattern);
}

/* One connection: its peer checked, one request read and answered. busy: a capture
 * runs (this is its window's wait), so another capture is refused. */
static void serve(int fd, bool busy) {
  struct ucred cred;
  socklen_t cl = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != getuid()) {
    ft__warn("control socket: refused a connection from uid %ld (only uid %ld may capture this process)",
             getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 ? (long)cred.uid : -1L, (long)getuid());
    close(fd);
    return;
  }
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  static char buf[2][FT__CTL_MAX_REQUEST]; /* one per nesting level: a busy answer inside a capture */
  char why[256];
  ft__ctl_req *req = calloc(1, sizeof *req);
  ssize_t n = req ? read_request(fd, buf[busy], sizeof buf[busy], why, sizeof why) : -1;
  if (!req) snprintf(why, sizeof why, "out of memory");
  if (n >= 0 && !ft__ctl_parse(buf[busy], (size_t)n, req, why, sizeof why)) n = -1;
  if (n < 0) {
    ft__warn("control socket: refused a request: %s", why);
    reply(fd, "error refused: %s", why);
  } else if (req->cmd == FT__CTL_INFO) {
    info(fd, busy);
  } else if (busy) {
    reply(fd, "error busy: a capture of this process is running");
  } else {
    capture(fd, req);
  }
  free(req);
  close(fd);
}

static void *control_thread(void *arg) {
  (void)arg;
  for (;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) serve(fd, false);
    else if (errno == EBADF || errno == EINVAL) return NULL;
    else if (errno != EINTR && errno != ECONNABORTED) sleep(1); /* out of descriptors: not a busy loop */
  }
}

void ft__od_serve(void) {
  char dir[4096], why[4200];
  if (!ft__ctl_dir(dir, sizeof dir, true, why, sizeof why)) {
    ft__warn("on-demand capture is not possible in this process: %s", why);
    return;
  }
  /* bound and listening under a name no client lists, then renamed into place: a
   * client finding the socket between bind() and listen() would take it for a dead
   * process's and remove it */
  char tmp[sizeof sock_path];
  if ((size_t)snprintf(sock_path, sizeof sock_path, "%s/%ld.sock", dir, (long)getpid()) >= sizeof sock_path ||
      (size_t)snprintf(tmp, sizeof tmp, "%s.new", sock_path) >= sizeof tmp) {
    ft__warn("on-demand capture is not possible in this process: the socket path under %s is too long", dir);
    sock_path[0] = '\0';
    return;
  }
  /* a socket of an ended process with our pid (pids come back) */
  if (ft__ctl_socket_ours(sock_path)) unlink(sock_path);
  if (ft__ctl_socket_ours(tmp)) unlink(tmp);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, tmp, strlen(tmp) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  /* 0600 once bound (never umask: it is the whole process's, other threads create
   * files meanwhile); until then the 0700 directory keeps others out */
  bool bound = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  bool ok = bound && chmod(tmp, 0600) == 0 && listen(fd, 16) == 0;
  if (ok && access(sock_path, F_OK) == 0) /* not ours (or rename would replace it): as bind would refuse */
    ok = false, errno = EADDRINUSE;
  if (!ok || rename(tmp, sock_path) != 0) {
    ft__warn("on-demand capture is not possible in this process: %s: %s", sock_path, strerror(errno));
    if (bound) unlink(tmp);
    if (fd >= 0) close(fd);
    sock_path[0] = '\0';
    return;
  }
  listen_fd = fd;
  server_pid = getpid();
  pthread_t th;
  sigset_t all, prev;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &prev); /* the program's signals are not this thread's */
  int err = pthread_create(&th, NULL, control_thread, NULL);
  pthread_sigmask(SIG_SETMASK, &prev, NULL);
  if (err) {
    ft__warn("on-demand capture is not possible in this process: no control thread: %s", strerror(err));
    close(fd);
    unlink(sock_path);
    listen_fd = -1;
    return;
  }
  pthread_detach(th);
  fprintf(stderr, "flagtrace: pid %ld waits for `flagtrace capture` (on demand, nothing recorded until then)\n",
          (long)getpid());
}

void ft__od_exiting(unsigned no, const char *line) {
  if (listen_fd < 0 || getpid() != server_pid) return;
  /* a capture being written by the control thread: let it finish and answer (bounded) */
  struct timespec ms10 = {0, 10000000};
  for (int i = 0; i < 3000 && atomic_load(&writing); i++) nanosleep(&ms10, NULL);
  int fd = atomic_load(&client_fd);
  if (line[0] && fd >= 0 && atomic_compare_exchange_strong(&client_fd, &fd, -1))
    reply(fd, "%s capture %u: %s", strstr(line, "wrote ") ? "ok" : "error", no, line);
  unlink(sock_path);
}

void ft__od_torch_watch(int (*watch)(ft__range_fn f)) { atomic_store(&torch_watch, watch); }

/* One of torch's user-scope ranges begins (begin 1) or ends (0) on this thread: it
 * may open or close the window, and a step range is recorded as an NVTX one would be
 * (1: pushed, to be popped at its end). */
static int torch_range(const char *name, int begin) {
  ft_session *s;
  if (!begin) {
    if ((s = ft__inject_session())) ft_range_pop(s);
    return 0;
  }
  ft__od_range_begins(name);
  if (strncmp(name, step_name, step_len)) return 0; /* step_name is fixed while the watch runs */
  s = ft__inject_session();
  return s && ft_range_push(s, name, NULL) == FT_OK;
}

void ft__od_range_begins(const char *name) {
  int st = atomic_load_explicit(&step_state, memory_order_relaxed);
  if (st != STEPS_WAIT && st != STEPS_COUNT) return;
  pthread_mutex_lock(&step_mu);
  st = atomic_load(&step_state);
  if ((st == STEPS_WAIT || st == STEPS_COUNT) && !strncmp(name, step_name, step_len)) {
    if (st == STEPS_WAIT) {
      if (ft__od_arm(&step_no, step_why, sizeof step_why)) {
        atomic_store(&step_state, STEPS_COUNT);
        int fd = atomic_load(&client_fd);
        if (fd >= 0) reply(fd, "armed capture %u", step_no);
      } else {
        atomic_store(&step_state, STEPS_DONE);
      }
    } else if (++step_seen >= step_target) {
      step_stopped = stop_to_write(&step_no);
      atomic_store(&step_state, STEPS_DONE);
    }
  }
  pthread_mutex_unlock(&step_mu);
}
