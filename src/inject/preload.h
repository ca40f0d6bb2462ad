/* What the preload library's files share (preload.c, cupti_guard.c): libc only. */
#ifndef FLAGTRACE_PRELOAD_H
#define FLAGTRACE_PRELOAD_H

#include <stdbool.h>

/* The loader's own dlopen (never the interposed one). */
void *ft__preload_real_dlopen(const char *file, int mode);
/* True when path names one of flagtrace's own libraries: their vendor calls are not
 * another client's. */
bool ft__preload_is_ours(const char *path);
/* A symbol of the injection library, once it is loaded (NULL before, or without one). */
void *ft__preload_inject_symbol(const char *name);

#endif
