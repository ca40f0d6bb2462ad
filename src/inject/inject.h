/* Shared by the injection library's files: the process's one session, output names. */
#ifndef FLAGTRACE_INJECT_H
#define FLAGTRACE_INJECT_H

#include <stddef.h>

#include "flagtrace/flagtrace.h"

/* The process's session, created and started on first use (from cuInit or the
 * first NVTX call, whichever comes first); NULL if it could not be created. */
ft_session *ft__inject_session(void);

/* Expands %p (pid), %h (host), %r (RANK, else LOCAL_RANK, else "norank") and %% in
 * pattern into out; returns the length written. */
size_t ft__inject_expand(const char *pattern, char *out, size_t len);

#endif
