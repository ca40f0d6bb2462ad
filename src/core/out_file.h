/* Every file flagtrace writes (traces, stats -o, report -o): one policy for where the bytes go. */
#ifndef FLAGTRACE_CORE_OUT_FILE_H
#define FLAGTRACE_CORE_OUT_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "flagtrace/flagtrace.h"

/* The policy (docs/guarantees.md, "What is guaranteed when things go wrong"):
 * - A new name, or an existing regular file, is written under a temporary name
 *   beside it and renamed over it at commit: readers see the old file or the whole
 *   new one, never half. A new file gets 0666 less the umask; a replaced one keeps
 *   its permission bits (and its owner and group where the system allows). A file
 *   the caller may not write (0444 for anyone but root) is refused, as `>` would
 *   refuse it, although the rename could replace it.
 * - A symlink is followed: its target is written, the link kept. A dangling one is
 *   refused (which file it should create is a guess).
 * - A character device (/dev/null, a tty) or a FIFO is written through in place,
 *   never replaced; a FIFO nobody reads is refused at once (no hang), a reader that
 *   goes away is EPIPE, never SIGPIPE. /dev/stdout, /dev/stderr, /dev/fd/N and
 *   /proc/self/fd/N are that descriptor itself, written at its offset (a regular
 *   file there is appended to, not replaced; a socket works too).
 * - Directories, sockets and block devices are refused.
 * - A set of files (ft__ofile_commit_set) is renamed into place only when every
 *   one of them was written and closed: a failure leaves none of them.
 * Messages are one line, the path's control characters escaped (ft__visible). */

typedef struct ft__ofile {
  int fd;
  char *target;     /* what the temporary file is renamed to (a symlink resolved) */
  char *tmp;        /* NULL when written through */
  char *shown;      /* the path as given, escaped, for messages */
  const char *noun; /* "trace file ", or "" */
  bool fifo;        /* SIGPIPE is held off while writing */
} ft__ofile;

/* A temporary name is the target's with ".tmp.PID.N" appended (N below 100): at most
 * this many bytes more, Linux's largest pid being 4194304. record checks a name
 * against it before the run. */
#define FT__OFILE_TMP_SUFFIX_MAX (sizeof ".tmp.4194304.99" - 1)

/* What writing path would do, found without opening it (a FIFO is not tested for a
 * reader: opening it would hand that reader an end of file). FT_OK, with *replaces
 * true when an existing regular file would be replaced; FT_EIO with err naming the
 * path and the reason when it would be refused. noun: "trace file " or "". */
ft_status ft__ofile_check(const char *path, const char *noun, bool *replaces, char *err, size_t errlen);

/* True when path is written through in place (a character device, a FIFO, a
 * descriptor's name) rather than under a temporary name. */
bool ft__ofile_is_stream(const char *path);

/* Opens path's destination; on failure nothing is left behind and err says why. */
ft_status ft__ofile_open(ft__ofile *f, const char *path, const char *noun, char *err, size_t errlen);
/* Writes all of p; 0 or the errno of the failure (EPIPE, never SIGPIPE). */
int ft__ofile_write(ft__ofile *f, const void *p, size_t n);
/* Closes, and renames the temporary file into place. */
ft_status ft__ofile_commit(ft__ofile *f, char *err, size_t errlen);
/* Commits n files as one: each is closed, then all are renamed only if every close
 * succeeded and every target is still a regular file or absent; otherwise every
 * temporary file is removed and err names the first failure. */
ft_status ft__ofile_commit_set(ft__ofile *const *fs, size_t n, char *err, size_t errlen);
/* Closes and removes the temporary file, if any; frees. Safe after commit, and on a
 * zeroed struct with fd -1. */
void ft__ofile_discard(ft__ofile *f);

/* ---- visible text (visible.c) ---- */

/* Writes s into dst (cap bytes, always NUL-terminated when cap > 0) with every
 * control character shown as an escape: \n \r \t, \xNN for the other C0 bytes,
 * DEL and bytes that are not UTF-8, \u0080-\u009f for C1 controls. Printable UTF-8
 * passes unchanged. Never cuts an escape or a character in two. Returns the length
 * the whole escaped text needs (without the NUL), as snprintf does. */
size_t ft__visible(char *dst, size_t cap, const char *s);
/* True when ft__visible would change s. */
bool ft__visible_changes(const char *s);

#endif
