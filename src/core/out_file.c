/* Where every file flagtrace writes goes: a temporary file renamed over a regular file, or written through to a FIFO,
 * device or descriptor. */
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

#include "out_file.h"

/* Rename is what makes a regular file appear whole or not at all, but renaming
 * over a device node, a FIFO or a symlink replaces it with a regular file (as root,
 * /dev/null). So: regular files and new names get the rename; FIFOs and character
 * devices are opened and written in place; a symlink is followed to its target
 * and the link kept; anything else is refused. The policy in full: out_file.h. */

static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file, FIFO or character device";
}

/* "cannot VERB NOUN'PATH': WHY", shown being the path already escaped. */
static ft_status fail_shown(char *err, size_t errlen, const char *noun, const char *shown, const char *verb,
                            const char *why) {
  if (errlen) snprintf(err, errlen, "cannot %s %s'%s': %s", verb, noun, shown, why);
  return FT_EIO;
}

static ft_status fail(char *err, size_t errlen, const char *noun, const char *path, const char *verb, const char *why) {
  char shown[PATH_MAX];
  ft__visible(shown, sizeof shown, path);
  return fail_shown(err, errlen, noun, shown, verb, why);
}

/* The descriptor a name stands for: /dev/stdout, /dev/stderr, /dev/fd/N,
 * /proc/self/fd/N; else -1. Opening those names instead would truncate a regular
 * file behind the descriptor, or fail for a socket. */
static int fd_name(const char *path) {
  if (!strcmp(path, "/dev/stdout")) return STDOUT_FILENO;
  if (!strcmp(path, "/dev/stderr")) return STDERR_FILENO;
  const char *rest = !strncmp(path, "/dev/fd/", 8) ? path + 8 : !strncmp(path, "/proc/self/fd/", 14) ? path + 14 : NULL;
  if (!rest || !*rest) return -1;
  long v = 0;
  for (const char *c = rest; *c; c++) {
    if (*c < '0' || *c > '9' || (v = v * 10 + (*c - '0')) > INT_MAX) return -1;
  }
  return (int)v;
}

/* How a path is written, found before anything is opened. */
enum { W_NEW, W_REPLACE, W_THROUGH, W_FD };
typedef struct where {
  int how;
  int fd;       /* W_FD */
  char *target; /* W_NEW, W_REPLACE: the file the temporary one is renamed to */
  struct stat st;
} where;

/* The temporary file goes beside target: its directory must take a new file. */
static ft_status dir_takes_files(const char *target, const char *noun, const char *path, char *err, size_t errlen) {
  const char *slash = strrchr(target, '/');
  char dir[PATH_MAX];
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == target) snprintf(dir, sizeof dir, "/");
  else if ((size_t)(slash - target) >= sizeof dir)
    return fail(err, errlen, noun, path, "create", strerror(ENAMETOOLONG));
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - target), target);
  if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
    return fail(err, errlen, noun, path, "create", strerror(errno));
  return FT_OK;
}

static ft_status locate(const char *path, const char *noun, where *w, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  w->fd = -1;
  if (!*path) return fail(err, errlen, noun, path, "write", "the name is empty");
  int fd = fd_name(path);
  if (fd >= 0) {
    if (fstat(fd, &w->st) != 0) return fail(err, errlen, noun, path, "write", strerror(errno));
    if (S_ISDIR(w->st.st_mode)) return fail(err, errlen, noun, path, "write", kind_of(w->st.st_mode));
    w->how = W_FD;
    w->fd = fd;
    return FT_OK;
  }
  struct stat *st = &w->st;
  bool link = false, exists = lstat(path, st) == 0;
  if (!exists) {
    if (errno != ENOENT) return fail(err, errlen, noun, path, "write", strerror(errno));
    w->how = W_NEW;
  } else if (S_ISLNK(st->st_mode)) {
    link = true;
    if (stat(path, st) != 0)
      return fail(err, errlen, noun, path, "write",
                  errno == ENOENT ? "it is a symbolic link to a missing file (the link is left as it is)"
                                  : "it is a symbolic link that cannot be followed");
  }
  if (exists) {
    if (S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode)) {
      w->how = W_THROUGH;
      return FT_OK;
    }
    if (!S_ISREG(st->st_mode)) return fail(err, errlen, noun, path, "write", kind_of(st->st_mode));
    w->how = W_REPLACE;
  }
  w->target = link ? realpath(path, NULL) : strdup(path);
  if (!w->target) return link ? fail(err, errlen, noun, path, "resolve the symbolic link", strerror(errno)) : FT_ENOMEM;
  ft_status s = dir_takes_files(w->target, noun, path, err, errlen);
  /* the rename could replace a file its owner made read-only; `>` would refuse it, so do we */
  if (!s && w->how == W_REPLACE && faccessat(AT_FDCWD, w->target, W_OK, AT_EACCESS) != 0)
    s = fail(err, errlen, noun, path, "replace",
             errno == EACCES && !(st->st_mode & 0222) ? "it is read-only" : strerror(errno));
  if (s) {
    free(w->target);
    w->target = NULL;
  }
  return s;
}

ft_status ft__ofile_check(const char *path, const char *noun, bool *replaces, char *err, size_t errlen) {
  where w;
  ft_status s = locate(path, noun, &w, err, errlen);
  *replaces = !s && w.how == W_REPLACE;
  free(w.target);
  return s;
}

bool ft__ofile_is_stream(const char *path) {
  struct stat st;
  return fd_name(path) >= 0 || (stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)));
}

/* Opens a FIFO or character device for writing in place. A FIFO nobody reads is
 * an error now, not a hang. */
static ft_status open_through(ft__ofile *f, const char *path, char *err, size_t errlen) {
  int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail_shown(err, errlen, f->noun, f->shown, "open",
                      errno == ENXIO ? "a FIFO with no reader" : strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
    close(fd); /* replaced between the check and the open: write nothing */
    return fail_shown(err, errlen, f->noun, f->shown, "write", "it changed while being opened");
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
    int e = errno;
    close(fd);
    return fail_shown(err, errlen, f->noun, f->shown, "open", strerror(e));
  }
  f->fd = fd;
  f->fifo = S_ISFIFO(st.st_mode);
  return FT_OK;
}

/* A temporary file beside the target, to be renamed over it; old: the file it
 * replaces (its permissions, owner and group are kept), or NULL. */
static ft_status open_tmp(ft__ofile *f, const struct stat *old, char *err, size_t errlen) {
  size_t n = strlen(f->target) + 32;
  f->tmp = malloc(n);
  if (!f->tmp) return FT_ENOMEM;
  for (int attempt = 0; attempt < 100 && f->fd < 0; attempt++) {
    snprintf(f->tmp, n, "%s.tmp.%ld.%d", f->target, (long)getpid(), attempt);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* the umask applies */
    if (f->fd < 0 && errno != EEXIST) break;
  }
  if (f->fd < 0) {
    int e = errno;
    free(f->tmp);
    f->tmp = NULL; /* nothing to remove */
    return fail_shown(err, errlen, f->noun, f->shown, "create", strerror(e));
  }
  if (old) {
    /* best effort: only root may give a file away; chown first, as it clears set-id bits */
    if (fchown(f->fd, old->st_uid, old->st_gid) != 0 && fchown(f->fd, (uid_t)-1, old->st_gid) != 0) {
    }
    (void)fchmod(f->fd, old->st_mode & 0777);
  }
  return FT_OK;
}

ft_status ft__ofile_open(ft__ofile *f, const char *path, const char *noun, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->noun = noun;
  size_t n = ft__visible(NULL, 0, path);
  if (!(f->shown = malloc(n + 1))) {
    if (errlen) snprintf(err, errlen, "out of memory");
    return FT_ENOMEM;
  }
  ft__visible(f->shown, n + 1, path);
  where w;
  ft_status s = locate(path, noun, &w, err, errlen);
  f->target = w.target; /* owned by f from here */
  if (!s) {
    switch (w.how) {
    case W_FD:
      if ((f->fd = fcntl(w.fd, F_DUPFD_CLOEXEC, 3)) < 0)
        s = fail_shown(err, errlen, noun, f->shown, "write", strerror(errno));
      f->fifo = S_ISFIFO(w.st.st_mode) || S_ISSOCK(w.st.st_mode); /* a pipe or socket reader may go */
      break;
    case W_THROUGH: s = open_through(f, path, err, errlen); break;
    default: s = open_tmp(f, w.how == W_REPLACE ? &w.st : NULL, err, errlen); break;
    }
  }
  if (s) ft__ofile_discard(f);
  return s;
}

/* A FIFO whose reader went away raises SIGPIPE, which would kill the host
 * program: the signal is blocked around the write, and one it raised consumed,
 * so the write fails with EPIPE instead. */
int ft__ofile_write(ft__ofile *f, const void *p, size_t n) {
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

static void remove_tmp(ft__ofile *f) {
  if (f->tmp) unlink(f->tmp);
  free(f->tmp);
  f->tmp = NULL;
}

ft_status ft__ofile_commit_set(ft__ofile *const *fs, size_t n, char *err, size_t errlen) {
  ft_status s = FT_OK;
  for (size_t i = 0; i < n; i++) { /* every file closed (NFS reports a full disk here) */
    ft__ofile *f = fs[i];
    if (f->fd >= 0 && close(f->fd) != 0 && !s) s = fail_shown(err, errlen, f->noun, f->shown, "write", strerror(errno));
    f->fd = -1;
  }
  /* Rename only over a regular file or nothing: a special file that appeared at a
   * target since the open stays. */
  for (size_t i = 0; i < n && !s; i++) {
    struct stat st;
    if (fs[i]->tmp && lstat(fs[i]->target, &st) == 0 && !S_ISREG(st.st_mode))
      s = fail_shown(err, errlen, fs[i]->noun, fs[i]->shown, "write",
                     "it stopped being a regular file while it was written");
  }
  for (size_t i = 0; i < n && !s; i++) {
    ft__ofile *f = fs[i];
    if (!f->tmp) continue; /* written through */
    struct stat st;
    int old = lstat(f->target, &st) == 0 && st.st_size >= CLOSE_LATER_MIN
                  ? open(f->target, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                  : -1;
    if (rename(f->tmp, f->target) != 0) {
      /* Only a directory changed under us gets here; the files renamed before stay. */
      s = fail_shown(err, errlen, f->noun, f->shown, "rename into place", strerror(errno));
      if (old >= 0) close(old);
      break;
    }
    if (old >= 0) close_later(old);
    free(f->tmp);
    f->tmp = NULL; /* renamed: nothing to remove */
  }
  if (s)
    for (size_t i = 0; i < n; i++) remove_tmp(fs[i]);
  return s;
}

ft_status ft__ofile_commit(ft__ofile *f, char *err, size_t errlen) { return ft__ofile_commit_set(&f, 1, err, errlen); }

void ft__ofile_discard(ft__ofile *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  remove_tmp(f);
  free(f->target);
  free(f->shown);
  f->target = f->shown = NULL;
}
