/* Trace arguments of stats: a directory stands for the traces directly in it (HTA's trace_dir). */
#ifndef FLAGTRACE_CLI_TRACE_DIR_H
#define FLAGTRACE_CLI_TRACE_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "flagtrace/flagtrace.h"

typedef struct ft_trace_args {
  const char **paths; /* the arguments, each directory replaced by its traces */
  size_t n;
  char **owned; /* the paths made here */
  size_t n_owned;
  char **skipped; /* "path: what it looks like" of each file of a directory that is not a trace */
  size_t n_skipped;
} ft_trace_args;

/* Each directory of args becomes its .json and .json.gz files (kineto's
 * .pt.trace.json[.gz] among them), regular files directly in it, sorted by name,
 * less those that are not traces by their first bytes (SQLite, text, ...) or their
 * top-level keys (JSON without "traceEvents"): those are kept in skipped, for a
 * note (unless !sniff: --merge's partial summaries are JSON without "traceEvents").
 * Anything else is kept as given ("-" too). FT_ENOTFOUND (a directory without a
 * trace, or one that cannot be listed) with err one line naming it; FT_ENOMEM. */
ft_status ft_trace_args_expand(ft_trace_args *a, const char *const *args, size_t n, bool sniff, char *err,
                               size_t errlen);
/* One line a skipped file: "PREFIXnote: skipped PATH: what it looks like". */
void ft_trace_args_notes(FILE *f, const ft_trace_args *a, const char *prefix);
void ft_trace_args_free(ft_trace_args *a);

#endif
