/* Where a trace's bytes go: a temporary file renamed over a regular file, or written through to a FIFO or character device. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_out.h"

/* Rename is what makes a regular file appear whole or not at all, but renaming
 * over a device node, a FIFO or a symlink replaces it with a regular file (as root,
 * /dev/null). So: regular files and new names get the rename; FIFOs and character
 * devices are opened and written in place; a symlink is followed to its target
 * and the link kept; anything else is refused. */

static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file, FIFO or character device";
}

static ft_status fail(char *err, size_t errlen, const char *path, const char *what, int e) {
  if (e)
    snprintf(err, errlen, "cannot %s trace file '%s': %s", what, path, strerror(e));
  else
    snprintf(err, errlen, "cannot write trace file '%s': %s", path, what);
  return FT_EIO;
}

/* Opens a FIFO or character device for writing in place. A FIFO nobody reads is
 * an error now, not a hang. */
static ft_status open_through(ft__trace_file *f, const char *path, char *err, size_t errlen) {
  int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail(err, errlen, path, errno == ENXIO ? "open (a FIFO with no reader)" : "open", errno);
  struct stat st;
  if (fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
    close(fd); /* replaced between the check and the open: write nothing */
    return fail(err, errlen, path, "it changed while being opened", 0);
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
    int e = errno;
    close(fd);
    return fail(err, errlen, path, "open", e);
  }
  f->fd = fd;
  f->fifo = S_ISFIFO(st.st_mode);
  return FT_OK;
}

/* A temporary file beside target, to be renamed over it. */
static ft_status open_tmp(ft__trace_file *f, const char *target, mode_t mode, char *err, size_t errlen) {
  size_t n = strlen(target) + 32;
  f->tmp = malloc(n);
  f->target = strdup(target);
  if (!f->tmp || !f->target) return FT_ENOMEM;
  for (int attempt = 0; attempt < 100 && f->fd < 0; attempt++) {
    snprintf(f->tmp, n, "%s.tmp.%ld.%d", target, (long)getpid(), attempt);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f->fd < 0 && errno != EEXIST) break;
  }
  if (f->fd < 0) {
    int e = errno;
    free(f->tmp);
    f->tmp = NULL; /* nothing to remove */
    return fail(err, errlen, target, "create", e);
  }
  if (mode) (void)fchmod(f->fd, mode & 0777); /* an existing file keeps its permissions */
  return FT_OK;
}

static ft_status open_file(ft__trace_file *f, const char *path, char *err, size_t errlen) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno != ENOENT) return fail(err, errlen, path, "create", errno);
    return open_tmp(f, path, 0, err, errlen);
  }
  if (S_ISLNK(st.st_mode)) {
    if (stat(path, &st) != 0)
      return fail(err, errlen, path,
                  errno == ENOENT ? "it is a symbolic link to a missing file (the link is left as it is)"
                                  : "it is a symbolic link that cannot be followed",
                  0);
    if (S_ISREG(st.st_mode)) {
      char *target = realpath(path, NULL);
      if (!target) return fail(err, errlen, path, "resolve the symbolic link", errno);
      ft_status s = open_tmp(f, target, st.st_mode, err, errlen);
      free(target);
      return s;
    }
  }
  if (S_ISREG(st.st_mode)) return open_tmp(f, path, st.st_mode, err, errlen);
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return open_through(f, path, err, errlen);
  return fail(err, errlen, path, kind_of(st.st_mode), 0);
}

ft_status ft__trace_file_open(ft__trace_file *f, const char *path, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  ft_status s = open_file(f, path, err, errlen);
  if (s) ft__trace_file_discard(f);
  return s;
}

/* A FIFO whose reader went away raises SIGPIPE, which would kill the host
 * program: the signal is blocked around the write, and one it raised consumed,
 * so the write fails with EPIPE instead. */
int ft__trace_file_write(ft__trace_file *f, const void *p, size_t n) {
  sigset_t pipe_set, old, pending;
  bool guard = f->fifo;
  bool was_pending = false;
  if (guard) {
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  }
  int err = 0;
  for (const char *c = p; n;) {
    ssize_t w = write(f->fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    c += w;
    n -= (size_t)w;
  }
  if (guard) {
    if (err == EPIPE && !was_pending) {
      struct timespec zero = {0, 0};
      while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  return err;
}

static void *close_fd(void *arg) {
  close((int)(intptr_t)arg);
  return NULL;
}

/* Replacing a file frees its page cache when its last reference goes, in rename:
 * for a trace that costs about as long as writing it. A reference held across the
 * rename is closed on a short-lived thread instead (signals blocked; inline when
 * no thread can be made). */
static void close_later(int fd) {
  pthread_attr_t a;
  pthread_t t;
  bool started = false;
  if (pthread_attr_init(&a) == 0) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    started = pthread_create(&t, &a, close_fd, (void *)(intptr_t)fd) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
  }
  if (!started) close(fd);
}

enum { CLOSE_LATER_MIN = 4 << 20 }; /* smaller files free fast enough inline */

ft_status ft__trace_file_commit(ft__trace_file *f, const char *path, char *err, size_t errlen) {
  int fd = f->fd;
  f->fd = -1;
  if (fd >= 0 && close(fd) != 0) return fail(err, errlen, path, "close", errno);
  if (!f->tmp) return FT_OK; /* written through */
  /* Rename only over a regular file or nothing: a special file that appeared at
   * the target since the open stays. */
  struct stat st;
  bool exists = lstat(f->target, &st) == 0;
  if (exists && !S_ISREG(st.st_mode))
    return fail(err, errlen, path, "the target stopped being a regular file while the trace was written", 0);
  int old = exists && st.st_size >= CLOSE_LATER_MIN ? open(f->target, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
  if (rename(f->tmp, f->target) != 0) {
    int e = errno;
    if (old >= 0) close(old);
    return fail(err, errlen, path, "rename into place", e);
  }
  if (old >= 0) close_later(old);
  free(f->tmp);
  f->tmp = NULL; /* renamed: nothing to remove */
  return FT_OK;
}

void ft__trace_file_discard(ft__trace_file *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  if (f->tmp) unlink(f->tmp);
  free(f->tmp);
  free(f->target);
  f->tmp = f->target = NULL;
}
