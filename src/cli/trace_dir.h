/* Trace arguments of stats: a directory stands for the traces directly in it (HTA's trace_dir). */
#ifndef FLAGTRACE_CLI_TRACE_DIR_H
#define FLAGTRACE_CLI_TRACE_DIR_H

#include <stddef.h>

#include "flagtrace/flagtrace.h"

typedef struct ft_trace_args {
  const char **paths; /* the arguments, each directory replaced by its traces */
  size_t n;
  char **owned; /* the paths made here */
  size_t n_owned;
} ft_trace_args;

/* Each directory of args becomes its .json and .json.gz files (kineto's
 * .pt.trace.json[.gz] among them), regular files directly in it, sorted by name;
 * anything else is kept as given ("-" too). FT_ENOTFOUND (a directory without
 * one, or one that cannot be listed) with err one line naming it; FT_ENOMEM. */
ft_status ft_trace_args_expand(ft_trace_args *a, const char *const *args, size_t n, char *err, size_t errlen);
void ft_trace_args_free(ft_trace_args *a);

#endif
