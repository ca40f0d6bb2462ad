/* Shared by the injection library's files (and record): the session, output names, runtimes. */
#ifndef FLAGTRACE_INJECT_H
#define FLAGTRACE_INJECT_H

#include <stdbool.h>
#include <stddef.h>

#include "flagtrace/flagtrace.h"

/* The process's session, created and started on first use (from cuInit, the
 * first NVTX call, or the preload library seeing the vendor runtime load,
 * whichever comes first); NULL if it could not be created. */
ft_session *ft__inject_session(void);

/* Creates the session (ft__inject_session) and says in one line when it could
 * not, or when it has no device activity. Returns false when there is no session. */
bool ft__inject_begin(void);

/* Expands %p (pid), %h (host), %r (RANK, else LOCAL_RANK, else "norank") and %% in
 * pattern into out; returns the length written. */
size_t ft__inject_expand(const char *pattern, char *out, size_t len);

/* The same, with %n the capture number no (record --on-demand; 0: %n kept as is). */
size_t ft__inject_expand_n(const char *pattern, unsigned no, char *out, size_t len);

/* ---- record --on-demand (inject.c: the sessions; on_demand.c: the control thread) ---- */

/* Starts the waiting session as capture *no; false with why when it cannot. */
bool ft__od_arm(unsigned *no, char *why, size_t len);
/* Stops the running capture and puts a fresh session in its place; returns the
 * stopped one (and its number), or NULL when none ran. */
ft_session *ft__od_stop(unsigned *no);
/* Writes a stopped capture (pattern NULL or "": record's -o) and reports it; line
 * gets the report's line, prefix first. */
bool ft__od_write(ft_session *s, unsigned no, const char *pattern, const char *prefix, char *line, size_t len);
/* Starts the control thread and its socket (once per process). */
void ft__od_serve(void);
/* At exit: capture no's line (may be "") goes to a client waiting on a capture; the socket goes. */
void ft__od_exiting(unsigned no, const char *line);
/* An NVTX range named name begins on the calling thread (a capture by steps). */
void ft__od_range_begins(const char *name);
/* torch's step ranges: the kineto adaptor's watch of its user-scope RecordFunctions
 * (watch(f) hands each to f while a capture by steps runs, watch(NULL) stops; 0 when
 * done), set once the adaptor is loaded into a torch process. */
typedef int (*ft__range_fn)(const char *name, int begin);
void ft__od_torch_watch(int (*watch)(ft__range_fn f));

/* The runtime libraries whose loading arms the preload library. */
#define FT__MAX_RUNTIME_NAMES 4
typedef struct ft__runtime_set {
  const char *accelerator;                  /* FLAGOS_ACCELERATOR */
  const char *names[FT__MAX_RUNTIME_NAMES]; /* file names, NULL-terminated when shorter */
} ft__runtime_set;

/* The set for an accelerator, or NULL when it has none (cpu). */
const ft__runtime_set *ft__runtime_set_for(const char *accelerator);
/* True when path's file name is one of set's names, exactly or followed by '.'. */
bool ft__runtime_matches(const ft__runtime_set *set, const char *path);
/* "libA.so or libB.so" into out; returns its length. */
size_t ft__runtime_list(const ft__runtime_set *set, char *out, size_t len);

#endif
