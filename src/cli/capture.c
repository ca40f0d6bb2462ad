/* flagtrace capture: arms the processes of `record --on-demand` for one window through
 * their control sockets, all at once, and reports each one's trace. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "control.h"
#include "out_file.h" /* ft__visible */

static const char usage[] =
    "usage: flagtrace capture (--pid PID[,PID...] | --job JOB | --all) (--duration TIME | --steps N)\n"
    "                         [--step-range NAME] [-o PATTERN] [--timeout TIME]\n"
    "       flagtrace capture --list\n"
    "\n"
    "Captures the running processes of `flagtrace record --on-demand` for one window:\n"
    "each is armed at once (every rank of a job together), records the window's device\n"
    "activity, writes its own trace (record's -o with %n, the capture number: the\n"
    "first capture of a process is 1) and waits again, costing nothing until the next\n"
    "capture. One line per process says what it wrote, on stdout, or why not, on stderr.\n"
    "Processes are reached through their Unix sockets in a private directory of this\n"
    "user (FLAGTRACE_CONTROL_DIR, else $XDG_RUNTIME_DIR/flagtrace, else\n"
    "/tmp/flagtrace-UID; 0700); nothing listens on the network.\n"
    "\n"
    "options:\n"
    "      --pid LIST         the processes to capture, by pid (comma-separated)\n"
    "      --job JOB          every process of one record run (JOB: its pid, as\n"
    "                         --list shows)\n"
    "      --all              every process of this user that can be captured\n"
    "      --duration TIME    the window's length: 500ms, 5s, 2m (a bare number is\n"
    "                         seconds)\n"
    "      --steps N          the window holds N steps: it opens when a step range\n"
    "                         begins and closes when the N-th after it begins\n"
    "      --step-range NAME  the range that begins each step, matched as a prefix: an\n"
    "                         NVTX range, or in a torch process a record_function\n"
    "                         (default ProfilerStep#: torch.profiler's prof.step())\n"
    "  -o, --output PATTERN   this capture's trace files instead of record's -o: %p\n"
    "                         pid, %h host, %r rank, %n capture number (needed), %%\n"
    "      --timeout TIME     with --steps, end the window after TIME even if the steps\n"
    "                         have not come (default 5m); the steps caught are written\n"
    "      --list             show the processes that can be captured\n"
    "  -h, --help             show this help\n"
    "\n"
    "A process busy with another capture, or gone (its stale socket is removed), is\n"
    "one line; the others are still captured. With --steps and --job or --all, a\n"
    "process that begins no step while the others write theirs (torchrun's launcher)\n"
    "is left out 1 s after they did, in one line. Ctrl-C ends the window early: each\n"
    "process writes what it caught. Traces go only to regular files the process does\n"
    "not hold open (never /proc/self/fd/N, a device or a FIFO).\n"
    "\n"
    "exit status: 0 when every process wrote its trace (with --all or --job, one found\n"
    "gone or left out is said but not a failure), 1 otherwise, 2 for a usage error.\n"
    "\n"
    "example: flagtrace record --on-demand -- torchrun --nproc-per-node 2 train.py &\n"
    "         flagtrace capture --all --duration 3s\n";

enum { MAX_TARGETS = 1024 };

typedef struct target {
  long pid;
  int fd;
  char line[FT__CTL_MAX_REQUEST]; /* what the process answered so far */
  size_t len;
  bool done, ok;
  bool armed;    /* its window opened */
  bool left_out; /* a steps capture ended it: it began no step while the others took theirs */
} target;

/* A steps capture of --job or --all ends a process that began no step this long after
 * every other process wrote its steps: a process of the job that never steps (torchrun's
 * launcher) must not hold the capture until --timeout, nor the job's next capture. */
enum { IDLE_GRACE_MS = 1000 };

static volatile sig_atomic_t interrupted;
static void on_int(int sig) {
  (void)sig;
  interrupted = 1;
}

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "500ms", "5s", "2m", "3" (seconds) into ms; false when malformed or zero. */
static bool parse_time(const char *s, uint64_t *ms) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  double scale = !strcmp(end, "ms") ? 1 : (!*end || !strcmp(end, "s")) ? 1000 : !strcmp(end, "m") ? 60000 : 0;
  if (errno || end == s || !scale || !(v > 0) || v * scale > 86400e3) return false;
  *ms = (uint64_t)(v * scale + 0.5);
  return *ms > 0;
}

/* Connects to pid's socket in dir, the peer checked. Returns the fd, or -1 with why;
 * *gone when the process has ended (its socket then removed). */
static int connect_pid(const char *dir, long pid, bool *gone, char *why, size_t wlen) {
  char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
  *gone = false;
  snprintf(path, sizeof path, "%s/%ld.sock", dir, pid);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) {
    snprintf(why, wlen, "its socket path is too long");
    return -1;
  }
  if (access(path, F_OK) != 0) {
    snprintf(why, wlen, "no such process of `record --on-demand` (no %s)", path);
    return -1;
  }
  if (!ft__ctl_socket_ours(path)) {
    snprintf(why, wlen, "%s is not a socket of this user: not used", path);
    return -1;
  }
  memcpy(a.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    if (e == ECONNREFUSED || e == ENOENT) {
      *gone = true;
      snprintf(why, wlen, "gone (the process has ended; its stale socket was removed)");
      unlink(path);
    } else {
      snprintf(why, wlen, e == EAGAIN ? "busy (its control socket's queue is full)" : "cannot connect: %s",
               strerror(e));
    }
    return -1;
  }
  struct ucred cred;
  socklen_t cl = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != getuid() || cred.pid != pid) {
    snprintf(why, wlen, "its socket is served by another process (uid %ld, pid %ld): not used", (long)cred.uid,
             (long)cred.pid);
    close(fd);
    return -1;
  }
  return fd;
}

/* Every pid with a socket in dir, ascending. */
static size_t list_pids(const char *dir, long *pids, size_t max) {
  DIR *d = opendir(dir);
  size_t n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) && n < max) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (pid > 0 && end != e->d_name && !strcmp(end, ".sock")) pids[n++] = pid;
  }
  if (d) closedir(d);
  for (size_t i = 1; i < n; i++) /* insertion sort: a handful of processes */
    for (size_t j = i; j > 0 && pids[j - 1] > pids[j]; j--) {
      long t = pids[j];
      pids[j] = pids[j - 1], pids[j - 1] = t;
    }
  return n;
}

static bool send_all(int fd, const char *buf, size_t n) {
  while (n) {
    ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      poll(&p, 1, 1000);
      continue;
    }
    if (w <= 0) return false;
    buf += w, n -= (size_t)w;
  }
  return true;
}

/* Reads what has arrived into t; returns the first complete line's length, 0 when
 * none yet, -1 at the end of the stream. */
static ssize_t take_line(target *t) {
  ssize_t r = recv(t->fd, t->line + t->len, sizeof t->line - 1 - t->len, MSG_DONTWAIT);
  if (r > 0) t->len += (size_t)r;
  t->line[t->len] = '\0';
  char *nl = strchr(t->line, '\n');
  if (nl) return nl - t->line + 1;
  if (r == 0 || t->len == sizeof t->line - 1 || (r < 0 && errno != EAGAIN && errno != EINTR)) return -1;
  return 0;
}

/* The processes that began no step while every other one wrote its steps (leave_idle:
 * --job or --all by steps) are ended after IDLE_GRACE_MS; their window closes empty. */
static void end_idle(target *ts, size_t n, uint64_t now, uint64_t *idle_since) {
  size_t wrote = 0, stepping = 0, idle = 0;
  for (size_t i = 0; i < n; i++) {
    wrote += ts[i].armed && ts[i].done && ts[i].ok;
    stepping += ts[i].armed && !ts[i].done;
    idle += !ts[i].armed && !ts[i].done && !ts[i].left_out;
  }
  if (!wrote || stepping || !idle) {
    *idle_since = 0;
    return;
  }
  if (!*idle_since) *idle_since = now;
  if (now - *idle_since < IDLE_GRACE_MS) return;
  for (size_t i = 0; i < n; i++)
    if (!ts[i].armed && !ts[i].done && !ts[i].left_out) {
      ts[i].left_out = true;
      shutdown(ts[i].fd, SHUT_WR);
    }
}

/* One line of a process's answer on stdout, escaped: it holds a path, from a socket. */
static void say(long pid, const char *text) {
  char shown[3 * FT__CTL_MAX_REQUEST];
  ft__visible(shown, sizeof shown, text);
  printf("pid %ld: %s\n", pid, shown);
}

/* Sends req to every target and waits for each one's last line (until deadline_ms,
 * monotonic; steps: a half-close at stop_ms ends the window, the reply still
 * awaited). Prints one line per process. Returns how many wrote; *left how many
 * were left out (leave_idle). */
static size_t exchange(target *ts, size_t n, const char *req, uint64_t stop_ms, uint64_t deadline_ms, bool info,
                       bool leave_idle, size_t *left) {
  uint64_t idle_since = 0;
  for (size_t i = 0; i < n; i++)
    if (!send_all(ts[i].fd, req, strlen(req))) {
      ts[i].done = true;
      if (!info) ft_cli_error("capture", "pid %ld: the request could not be sent: %s", ts[i].pid, strerror(errno));
    }
  bool stopped = false;
  size_t ok = 0;
  for (;;) {
    struct pollfd p[MAX_TARGETS];
    size_t live = 0;
    for (size_t i = 0; i < n; i++)
      p[i] = (struct pollfd){.fd = ts[i].done ? -1 : ts[i].fd, .events = POLLIN}, live += !ts[i].done;
    uint64_t now = mono_ms();
    if (!live || now >= deadline_ms) break;
    if (leave_idle && !stopped) end_idle(ts, n, now, &idle_since);
    if ((interrupted || (stop_ms && now >= stop_ms)) && !stopped) { /* the window ends: each writes what it has */
      for (size_t i = 0; i < n; i++)
        if (!ts[i].done) shutdown(ts[i].fd, SHUT_WR);
      stopped = true;
    }
    uint64_t wait = deadline_ms - now;
    if (stop_ms && !stopped && stop_ms - now < wait) wait = stop_ms - now;
    int r = poll(p, n, wait > 500 ? 500 : (int)wait);
    if (r <= 0) continue;
    for (size_t i = 0; i < n; i++) {
      target *t = &ts[i];
      if (t->done || !p[i].revents) continue;
      ssize_t len;
      while ((len = take_line(t)) > 0) {
        t->line[len - 1] = '\0';
        if (!strncmp(t->line, "armed ", 6)) { /* the window opened; the last line follows */
          t->armed = true;
          memmove(t->line, t->line + len, t->len - (size_t)len + 1);
          t->len -= (size_t)len;
          continue;
        }
        t->done = true;
        t->ok = !strncmp(t->line, "ok ", 3);
        if (info) break;
        if (t->ok) say(t->pid, t->line + 3);
        else if (t->left_out && left) {
          ++*left;
          ft_cli_error("capture",
                       "pid %ld: left out: it began no step while the others wrote theirs (a process without "
                       "steps, as torchrun's launcher; its capture closed empty)",
                       t->pid);
        } else ft_cli_error("capture", "pid %ld: %s", t->pid, !strncmp(t->line, "error ", 6) ? t->line + 6 : t->line);
        break;
      }
      if (len < 0 && !t->done) {
        t->done = true;
        if (!info) ft_cli_error("capture", "pid %ld: the process ended during the capture (no trace)", t->pid);
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (!ts[i].done && !info) ft_cli_error("capture", "pid %ld: no answer in time", ts[i].pid);
    ok += ts[i].ok;
  }
  return ok;
}

/* The value of key= in an info line ("" when absent). */
static void field(const char *line, const char *key, char *out, size_t len) {
  out[0] = '\0';
  size_t k = strlen(key);
  for (const char *p = line; (p = strstr(p, key)); p += k)
    if ((p == line || p[-1] == ' ') && p[k] == '=') {
      snprintf(out, len, "%.*s", (int)strcspn(p + k + 1, " "), p + k + 1);
      return;
    }
}

/* Connects to each pid (gone or refused ones said, skipped; *gone_n counts the gone). */
static size_t connect_all(const char *dir, const long *pids, size_t n, target *ts, size_t *gone_n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    char why[PATH_MAX + 200];
    bool gone;
    int fd = connect_pid(dir, pids[i], &gone, why, sizeof why);
    if (fd < 0) {
      ft_cli_error("capture", "pid %ld: %s", pids[i], why);
      if (gone && gone_n) ++*gone_n;
      continue;
    }
    ts[m] = (target){.pid = pids[i], .fd = fd};
    m++;
  }
  return m;
}

static void close_all(target *ts, size_t n) {
  for (size_t i = 0; i < n; i++) close(ts[i].fd);
}

/* The output pattern made absolute (the processes have their own directories). */
static bool absolute_pattern(const char *o, char *out, size_t len) {
  bool has_n;
  const char *bad = ft__ctl_bad_escape(o, &has_n), *brk = strpbrk(o, "\r\n");
  if (brk && (!bad || brk < bad)) /* whichever comes first is said */
    return ft_cli_usage_error("capture", "the output name may not contain a line break"), false;
  if (bad)
    return ft_cli_usage_error("capture", "unknown escape in output name '%s' (valid: %%p %%h %%r %%n %%%%)", o), false;
  if (!has_n) return ft_cli_usage_error("capture", "the output name needs %%n (the capture number)"), false;
  char cwd[PATH_MAX];
  if (o[0] != '/' && !getcwd(cwd, sizeof cwd))
    return ft_cli_usage_error("capture", "cannot read the current directory"), false;
  int n = o[0] == '/' ? snprintf(out, len, "%s", o) : snprintf(out, len, "%s/%s", cwd, o);
  if (n < 0 || (size_t)n >= len) return ft_cli_usage_error("capture", "output name '%s' is too long", o), false;
  return true;
}

int ft_cli_capture(int argc, char **argv) {
  const char *pid_arg = NULL, *job = NULL, *duration = NULL, *steps_arg = NULL, *range = NULL, *output = NULL;
  const char *timeout_arg = NULL, *all = ft_cli_off, *list = ft_cli_off;
  const ft_cli_option opts[] = {{0, "pid", &pid_arg},     {0, "job", &job},
                                {0, "all", &all},         {0, "duration", &duration},
                                {0, "steps", &steps_arg}, {0, "step-range", &range},
                                {'o', "output", &output}, {0, "timeout", &timeout_arg},
                                {0, "list", &list},       {0}};
  int i = ft_cli_parse("capture", argc, argv, opts, usage);
  if (i == FT_CLI_HELP) return 0;
  if (i == FT_CLI_ERROR) return FT_CLI_USAGE;
  if (i < argc) return ft_cli_usage_error("capture", "unexpected argument '%s'", argv[i]);
  bool listing = list == ft_cli_on;
  int chosen = (pid_arg != NULL) + (job != NULL) + (all == ft_cli_on);
  if (listing && (chosen || duration || steps_arg || output))
    return ft_cli_usage_error("capture", "--list takes no other option");
  if (!listing && chosen != 1) return ft_cli_usage_error("capture", "give one of --pid, --job and --all");
  if (!listing && !duration == !steps_arg) return ft_cli_usage_error("capture", "give one of --duration and --steps");
  ft__ctl_req req = {.cmd = listing ? FT__CTL_INFO : FT__CTL_CAPTURE};
  uint64_t timeout_ms = 300000;
  if (duration && !parse_time(duration, &req.duration_ms))
    return ft_cli_usage_error("capture", "--duration takes a time such as 500ms, 5s or 2m (at most a day), not '%s'",
                              duration);
  if (timeout_arg && (!steps_arg || !parse_time(timeout_arg, &timeout_ms)))
    return ft_cli_usage_error(
        "capture",
        steps_arg ? "--timeout takes a time such as 30s or 5m, not '%s'" : "--timeout goes with --steps ('%s')",
        timeout_arg);
  if (steps_arg) {
    char *end;
    errno = 0;
    long v = strtol(steps_arg, &end, 10);
    if (errno || *end || end == steps_arg || v < 1 || v > 1000000)
      return ft_cli_usage_error("capture", "--steps takes a count from 1 to 1000000, not '%s'", steps_arg);
    req.steps = (uint32_t)v;
    if (!range) range = "ProfilerStep#";
    if (!*range || strlen(range) >= sizeof req.range)
      return ft_cli_usage_error("capture", "--step-range takes a name of 1 to %zu bytes", sizeof req.range - 1);
    snprintf(req.range, sizeof req.range, "%s", range);
  } else if (range) {
    return ft_cli_usage_error("capture", "--step-range goes with --steps");
  }
  if (output && !absolute_pattern(output, req.out, sizeof req.out)) return FT_CLI_USAGE;

  char dir[PATH_MAX], why[PATH_MAX + 200];
  if (!ft__ctl_dir(dir, sizeof dir, false, why, sizeof why)) {
    if (errno == ENOENT && !listing) ft_cli_error("capture", "no process to capture: %s", why);
    else if (errno == ENOENT) printf("no process of `flagtrace record --on-demand` to capture\n");
    else ft_cli_error("capture", "%s", why);
    return listing && errno == ENOENT ? 0 : 1;
  }
  static long pids[MAX_TARGETS];
  size_t n = 0;
  if (pid_arg) {
    char *copy = strdup(pid_arg), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
      char *end;
      long pid = strtol(tok, &end, 10);
      if (*end || pid <= 0 || n == MAX_TARGETS) {
        free(copy);
        return ft_cli_usage_error("capture", "--pid takes process ids separated by commas, not '%s'", pid_arg);
      }
      bool seen = false; /* --pid P,P: one connection each (a second would be "busy") */
      for (size_t k = 0; k < n && !seen; k++) seen = pids[k] == pid;
      if (!seen) pids[n++] = pid;
    }
    free(copy);
    if (!n) return ft_cli_usage_error("capture", "--pid takes process ids separated by commas, not '%s'", pid_arg);
  } else {
    n = list_pids(dir, pids, MAX_TARGETS);
  }
  static target ts[MAX_TARGETS];
  char line[FT__CTL_MAX_REQUEST];
  /* --list and --job read each process's description first */
  if (listing || job) {
    ft__ctl_req q = {.cmd = FT__CTL_INFO};
    size_t m = connect_all(dir, pids, n, ts, NULL);
    ft__ctl_format(&q, line, sizeof line);
    exchange(ts, m, line, 0, mono_ms() + 3000, true, false, NULL);
    close_all(ts, m);
    if (listing) {
      printf("%-8s %-8s %-6s %-10s %s\n", "PID", "JOB", "RANK", "STATE", "COMMAND");
      for (size_t k = 0; k < m; k++) {
        /* the fields come from a socket: shown escaped, as every name is */
        char f[4][64], shown[4][4 * 64];
        static const char *const keys[4] = {"job", "rank", "state", "comm"};
        for (int q = 0; q < 4; q++) {
          field(ts[k].line, keys[q], f[q], sizeof f[q]);
          ft__visible(shown[q], sizeof shown[q], f[q]);
        }
        if (ts[k].ok) printf("%-8ld %-8s %-6s %-10s %s\n", ts[k].pid, shown[0], shown[1], shown[2], shown[3]);
        else ft_cli_error("capture", "pid %ld: %s", ts[k].pid, ts[k].done ? ts[k].line : "no answer in 3 s");
      }
      if (!m) printf("no process of `flagtrace record --on-demand` to capture\n");
      return 0;
    }
    size_t kept = 0;
    for (size_t k = 0; k < m; k++) {
      char jb[32];
      field(ts[k].line, "job", jb, sizeof jb);
      if (ts[k].ok && !strcmp(jb, job)) pids[kept++] = ts[k].pid;
    }
    n = kept;
  }
  if (!n) {
    ft_cli_error("capture", "no process to capture%s%s", job ? " in job " : "", job ? job : "");
    return 1;
  }
  size_t gone = 0;
  size_t m = connect_all(dir, pids, n, ts, &gone);
  if (!ft__ctl_format(&req, line, sizeof line)) return ft_cli_usage_error("capture", "the request is too long");
  struct sigaction sa = {.sa_handler = on_int}, old_int, old_term;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  uint64_t now = mono_ms();
  /* writing a trace after the window: a minute is ample (P4: millions of events a second) */
  uint64_t stop = req.steps ? now + timeout_ms : 0;
  uint64_t deadline = (req.steps ? stop : now + req.duration_ms) + 60000;
  size_t left = 0;
  size_t ok = exchange(ts, m, line, stop, deadline, false, req.steps && !pid_arg, &left);
  close_all(ts, m);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  /* a process gone since --all or --job found it is said, not a failure: a pid asked
   * for is; so is one left out of a steps capture as stepless */
  return ok && ok + left == n - (pid_arg ? 0 : gone) ? 0 : 1;
}
