/* Trace arguments of stats: a directory stands for the traces directly in it (HTA's trace_dir). */
#define _GNU_SOURCE
#include "trace_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n > m && !strcmp(s + n - m, tail);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Room for need entries in both arrays. */
static bool grow(ft_trace_args *a, size_t *cap, size_t need) {
  if (need <= *cap) return true;
  size_t c = *cap ? 2 * *cap : 16;
  if (c < need) c = need;
  const char **p = realloc(a->paths, c * sizeof *p);
  if (p) a->paths = p;
  char **q = p ? realloc(a->owned, c * sizeof *q) : NULL;
  if (q) a->owned = q;
  if (!q) return false;
  *cap = c;
  return true;
}

/* The traces in dir, sorted, appended to a's paths (and owned). */
static ft_status add_dir(ft_trace_args *a, size_t *cap, const char *dir, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, errlen, "%s: cannot list the directory: %s", dir, strerror(errno));
    return FT_ENOTFOUND;
  }
  size_t first = a->n_owned;
  ft_status s = FT_OK;
  for (struct dirent *e; !s && (e = readdir(d));) {
    if (!ends_with(e->d_name, ".json") && !ends_with(e->d_name, ".json.gz")) continue;
    char *path;
    const char *sep = ends_with(dir, "/") ? "" : "/";
    if (asprintf(&path, "%s%s%s", dir, sep, e->d_name) < 0) {
      s = FT_ENOMEM;
      break;
    }
    struct stat st; /* a file, or a link to one: not a directory named x.json */
    if (stat(path, &st) || !S_ISREG(st.st_mode)) {
      free(path);
      continue;
    }
    size_t pending = a->n_owned - first + 1; /* paths takes them all after the sort */
    if (!grow(a, cap, (a->n > a->n_owned ? a->n : a->n_owned) + pending)) {
      free(path);
      s = FT_ENOMEM;
    } else {
      a->owned[a->n_owned++] = path;
    }
  }
  closedir(d);
  if (s) return s;
  if (a->n_owned == first) {
    snprintf(err, errlen, "%s: no trace in the directory (.json or .json.gz files)", dir);
    return FT_ENOTFOUND;
  }
  qsort(a->owned + first, a->n_owned - first, sizeof *a->owned, by_name);
  for (size_t i = first; i < a->n_owned; i++) a->paths[a->n++] = a->owned[i]; /* grown for them */
  return FT_OK;
}

ft_status ft_trace_args_expand(ft_trace_args *a, const char *const *args, size_t n, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  size_t cap = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (strcmp(args[i], "-") && !stat(args[i], &st) && S_ISDIR(st.st_mode)) {
      ft_status s = add_dir(a, &cap, args[i], err, errlen);
      if (s == FT_ENOMEM) snprintf(err, errlen, "out of memory");
      if (s) return s;
    } else if (!grow(a, &cap, (a->n > a->n_owned ? a->n : a->n_owned) + 1)) {
      snprintf(err, errlen, "out of memory");
      return FT_ENOMEM;
    } else {
      a->paths[a->n++] = args[i];
    }
  }
  return FT_OK;
}

void ft_trace_args_free(ft_trace_args *a) {
  for (size_t i = 0; i < a->n_owned; i++) free(a->owned[i]);
  free(a->owned);
  free(a->paths);
  memset(a, 0, sizeof *a);
}
