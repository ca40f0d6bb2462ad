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

/* One visible line to the client; never SIGPIPE, never blocking (a line fits in any socket
 * buffer, and a client that does not read must not hold this thread). */
static void reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int fd, const char *fmt, ...) {
  char text[5000], line[5000];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  /* a path with a line break or ESC in it: one line of the protocol, escaped as record's stderr shows it */
  size_t len = ft__visible(line, sizeof line - 1, text);
  if (len > sizeof line - 2) len = strlen(line);
  line[len++] = '\n';
  if (send(fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) { /* the client went away: nothing to tell */
  }
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

/* The running capture (this thread's alone). Its window is a deadline of the event
 * loop below, never a wait on a client: no client can stretch or hold it. */
static struct {
  int fd;          /* its client, -1 when none runs */
  bool steps;      /* by steps (the NVTX/torch thread stops it), else by duration */
  uint64_t end_ms; /* a duration's end */
  char pattern[FT__CTL_MAX_TEXT];
  int (*watch)(ft__range_fn);
} cap = {.fd = -1};

/* Starts the capture req asks for; false when it ended at once (answered). */
static bool capture_start(int fd, const ft__ctl_req *req) {
  unsigned no = 0;
  char why[600];
  snprintf(cap.pattern, sizeof cap.pattern, "%s", req->out);
  atomic_store(&client_fd, fd);
  if (req->steps) {
    int (*watch)(ft__range_fn) = atomic_load(&torch_watch);
#ifndef FT_HAVE_NVTX
    if (!watch) {
      atomic_store(&client_fd, -1);
      reply(fd,
            "error counting steps needs NVTX ranges, which this accelerator's build does not take, or torch's "
            "ranges (ProfilerStep#), and this process has not loaded torch; use a duration");
      return false;
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
    cap.fd = fd, cap.steps = true, cap.watch = watch;
    return true;
  }
  if (!ft__od_arm(&no, why, sizeof why)) {
    atomic_store(&client_fd, -1);
    reply(fd, "error %s", why);
    return false;
  }
  reply(fd, "armed capture %u", no);
  /* + 1: mono_ms() floors, so the window never ends before the duration asked (CI saw 0.4999 s) */
  cap.fd = fd, cap.steps = false, cap.end_ms = mono_ms() + req->duration_ms + 1;
  return true;
}

/* Ends the running capture: its window is over (stayed), or its client went away
 * (Ctrl-C: the window ends with what was caught). */
static void capture_end(bool stayed) {
  int fd = cap.fd;
  const char *pattern = cap.pattern[0] ? cap.pattern : NULL;
  unsigned no = 0;
  cap.fd = -1;
  if (!cap.steps) {
    ft_session *s = stop_to_write(&no);
    if (!s) exited();
    finish_capture(fd, s, no, pattern);
    close(fd);
    return;
  }
  char why[600];
  if (cap.watch) cap.watch(NULL);
  pthread_mutex_lock(&step_mu);
  int st = atomic_exchange(&step_state, STEPS_OFF);
  ft_session *s = step_stopped;
  no = step_no;
  if (st == STEPS_COUNT) s = stop_to_write(&no); /* the client gave up mid-window: what was caught */
  snprintf(why, sizeof why, "%s", step_why);
  pthread_mutex_unlock(&step_mu);
  int ours = fd;
  if (s) finish_capture(fd, s, no, pattern);
  else if (st == STEPS_COUNT || (st == STEPS_DONE && !why[0])) exited(); /* the exit took it */
  else if (atomic_compare_exchange_strong(&client_fd, &ours, -1))        /* also to a client that stopped waiting */
    reply(fd, "error %s", why[0] ? why : stayed ? "no step range began" : "no step range began before the timeout");
  close(fd);
}

/* A connection whose request line is still coming: it has until its deadline for
 * the whole line (one slow client, a byte at a time, holds nothing but its slot). */
enum { MAX_PENDING = 16, REQUEST_MS = 2000 };
typedef struct pending {
  int fd;
  uint64_t deadline;
  size_t n;
  char buf[FT__CTL_MAX_REQUEST];
} pending;
static pending pend[MAX_PENDING];

static void refuse(int fd, const char *why) {
  ft__warn("control socket: refused a request: %s", why);
  reply(fd, "error refused: %s", why);
}

/* The request of c is complete (n bytes): answered, or a capture started. */
static void serve(pending *c, size_t n) {
  char why[256];
  ft__ctl_req *req = calloc(1, sizeof *req);
  int fd = c->fd;
  c->fd = -1;
  if (!req) snprintf(why, sizeof why, "out of memory");
  if (!req || !ft__ctl_parse(c->buf, n, req, why, sizeof why)) {
    refuse(fd, why);
  } else if (req->cmd == FT__CTL_INFO) {
    info(fd, cap.fd >= 0);
  } else if (cap.fd >= 0) {
    reply(fd, "error busy: a capture of this process is running");
  } else if (capture_start(fd, req)) {
    fd = -1; /* the capture's now */
  }
  free(req);
  if (fd >= 0) close(fd);
}

/* Reads what c's client sent; serves or refuses it once the line is whole, the
 * stream ended, or its deadline passed (checked after the read: data that came while
 * this thread wrote a trace still counts). */
static void pending_read(pending *c, uint64_t now) {
  for (;;) {
    ssize_t r = recv(c->fd, c->buf + c->n, sizeof c->buf - c->n, MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      char *nl = memchr(c->buf + c->n, '\n', (size_t)r);
      c->n += (size_t)r;
      if (nl) {
        serve(c, (size_t)(nl - c->buf + 1));
        return;
      }
      if (c->n == sizeof c->buf) {
        char why[64];
        snprintf(why, sizeof why, "request longer than %d bytes", FT__CTL_MAX_REQUEST);
        refuse(c->fd, why);
        break;
      }
      continue;
    }
    if (r == 0) refuse(c->fd, "the request ended without a newline");
    else if (errno != EAGAIN && errno != EWOULDBLOCK) refuse(c->fd, "the connection failed before a request");
    else if (now >= c->deadline) refuse(c->fd, "no complete request within 2 s");
    else return;
    break;
  }
  close(c->fd);
  c->fd = -1;
}

/* A new connection: its peer checked, then a pending slot (the listening socket is
 * not polled while every slot is taken). */
static void accept_one(pending *slot, uint64_t now) {
  int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
      poll(NULL, 0, 100); /* out of descriptors: not a busy loop */
    return;
  }
  struct ucred cred;
  socklen_t cl = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != getuid()) {
    ft__warn("control socket: refused a connection from uid %ld (only uid %ld may capture this process)",
             getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 ? (long)cred.uid : -1L, (long)getuid());
    close(fd);
    return;
  }
  *slot = (pending){.fd = fd, .deadline = now + REQUEST_MS};
}

/* The control thread: one poll over the listening socket, the pending requests and
 * the running capture's client, with the window's end and the requests' deadlines as
 * its timeouts. */
static void *control_thread(void *arg) {
  (void)arg;
  for (size_t i = 0; i < MAX_PENDING; i++) pend[i].fd = -1;
  for (;;) {
    struct pollfd p[MAX_PENDING + 2];
    uint64_t now = mono_ms(), wake = now + 1000;
    pending *free_slot = NULL;
    nfds_t np = 0;
    for (size_t i = 0; i < MAX_PENDING; i++) { /* p[i] is pend[i]'s (poll skips fd -1) */
      p[np++] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
      if (pend[i].fd < 0) {
        if (!free_slot) free_slot = &pend[i];
      } else if (pend[i].deadline < wake) {
        wake = pend[i].deadline;
      }
    }
    p[np++] = (struct pollfd){.fd = free_slot ? listen_fd : -1, .events = POLLIN};
    p[np++] = (struct pollfd){.fd = cap.fd, .events = POLLIN};
    if (cap.fd >= 0 && cap.steps && now + 20 < wake) wake = now + 20; /* the stepping thread ends it */
    if (cap.fd >= 0 && !cap.steps && cap.end_ms < wake) wake = cap.end_ms;
    int r = poll(p, np, wake > now ? (int)(wake - now) : 0);
    if (r < 0) { /* the revents are not set */
      if (errno == EBADF || errno == EINVAL) return NULL;
      if (errno != EINTR) poll(NULL, 0, 100);
      continue;
    }
    now = mono_ms();
    if (cap.fd >= 0 && p[MAX_PENDING + 1].revents) { /* the client sent more, or hung up (Ctrl-C) */
      char c;
      ssize_t got = recv(cap.fd, &c, 1, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) capture_end(false);
    }
    if (cap.fd >= 0 && (cap.steps ? steps_done() : now >= cap.end_ms)) capture_end(true);
    now = mono_ms();
    for (size_t i = 0; i < MAX_PENDING; i++)
      if (pend[i].fd >= 0 && (p[i].revents || now >= pend[i].deadline)) pending_read(&pend[i], now);
    if (free_slot && free_slot->fd < 0 && (p[MAX_PENDING].revents & POLLIN)) accept_one(free_slot, now);
    if (p[MAX_PENDING].revents & POLLNVAL) return NULL;
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
