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
#include <zlib.h>

#include "input_kind.h" /* what a file that is not a trace looks like */
#include "json_scan.h"
#include "out_file.h" /* ft__visible */

/* The top-level keys of a JSON object, until "traceEvents" (a trace) or its end (not one). */
typedef struct keys {
  unsigned depth;
  bool trace, ended;
  char first[3][24]; /* the first keys, for the note */
  size_t n_first;
} keys;

static int k_start_map(void *p) {
  ((keys *)p)->depth++;
  return 1;
}
static int k_end_map(void *p) {
  keys *k = p;
  k->ended = --k->depth == 0;
  return !k->ended;
}
static int k_start_array(void *p) {
  keys *k = p;
  k->trace = k->depth == 0; /* the JSON Array Format: a trace */
  k->depth++;
  return !k->trace;
}
static int k_end_array(void *p) {
  ((keys *)p)->depth--;
  return 1;
}
static int k_key(void *p, const unsigned char *s, size_t len) {
  keys *k = p;
  if (k->depth != 1) return 1;
  k->trace = len == 11 && !memcmp(s, "traceEvents", 11);
  if (k->n_first < 3) snprintf(k->first[k->n_first++], sizeof k->first[0], "%.*s", (int)len, (const char *)s);
  return !k->trace;
}

/* Whether path, a file found in a directory, is a trace, or may be one (the read decides:
 * a parse error, or 4 MB of text without the top-level keys settled); else false with
 * what it looks like in what. The first bytes, then for JSON its top-level keys. */
static bool maybe_trace(const char *path, char *what, size_t len) {
  unsigned char raw[FT__INPUT_HEAD], text[1 << 16];
  FILE *f = fopen(path, "rb");
  if (!f) return true; /* the read says why */
  size_t n = fread(raw, 1, sizeof raw, f);
  fclose(f);
  gzFile z = gzopen(path, "rb"); /* gzip or not: gzread gives the text */
  if (!z) return true;
  int got = gzread(z, text, sizeof text);
  bool gz = n >= 2 && raw[0] == 0x1f && raw[1] == 0x8b;
  if (got < 0 ||
      ft__input_kind(raw, n, gz, text, got < FT__INPUT_HEAD ? (size_t)got : FT__INPUT_HEAD, path, what, len)) {
    gzclose(z);
    char *todo = strstr(what, ": flagtrace reads"); /* the note says what it is; the docs what is read */
    if (todo) *todo = 0;
    return got < 0; /* corrupt gzip: the read says so */
  }
  static const ft__json_callbacks cb = {.start_map = k_start_map,
                                        .end_map = k_end_map,
                                        .start_array = k_start_array,
                                        .end_array = k_end_array,
                                        .map_key = k_key};
  keys k = {0};
  ft__json *j = malloc(sizeof *j);
  if (!j) return gzclose(z), true;
  ft__json_init(j, &cb, &k);
  j->keep = 0, j->key_keep = 23;
  ft__json_status st = FT__JSON_OK;
  for (size_t total = 0; got > 0 && st == FT__JSON_OK && total < (4u << 20); got = gzread(z, text, sizeof text)) {
    st = ft__json_feed(j, text, (size_t)got);
    total += (size_t)got;
  }
  ft__json_free(j);
  free(j);
  gzclose(z);
  if (!k.ended || k.trace) return true;
  int w = snprintf(what, len, "JSON, not a trace: an object without \"traceEvents\"%s", k.n_first ? " (keys " : "");
  for (size_t i = 0; i < k.n_first && w > 0 && (size_t)w < len; i++)
    w += snprintf(what + w, len - (size_t)w, "%s\"%s\"%s", i ? ", " : "", k.first[i], i + 1 == k.n_first ? ")" : "");
  return false;
}

/* "path: what" kept for the note; false for want of memory. */
static bool note_skip(ft_trace_args *a, const char *path, const char *what) {
  char **p = realloc(a->skipped, (a->n_skipped + 1) * sizeof *p);
  if (!p) return false;
  a->skipped = p;
  return asprintf(&a->skipped[a->n_skipped], "%s: %s", path, what) >= 0 && ++a->n_skipped;
}

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
static ft_status add_dir(ft_trace_args *a, size_t *cap, const char *dir, bool sniff, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, errlen, "%s: cannot list the directory: %s", dir, strerror(errno));
    return FT_ENOTFOUND;
  }
  size_t first = a->n_owned, skipped = a->n_skipped;
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
    char what[512];
    if (stat(path, &st) || !S_ISREG(st.st_mode)) {
      free(path);
      continue;
    }
    if (sniff && !maybe_trace(path, what, sizeof what)) { /* named in a note, the others read */
      s = note_skip(a, path, what) ? FT_OK : FT_ENOMEM;
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
  if (a->n_skipped > skipped) /* none: skipped may be NULL, which qsort may not be handed */
    qsort(a->skipped + skipped, a->n_skipped - skipped, sizeof *a->skipped, by_name);
  if (a->n_owned == first && a->n_skipped > skipped) {
    snprintf(err, errlen, "%s: no trace in the directory, %zu file%s not one (%s)", dir, a->n_skipped - skipped,
             a->n_skipped - skipped == 1 ? "" : "s", a->skipped[skipped]);
    return FT_ENOTFOUND;
  }
  if (a->n_owned == first) {
    snprintf(err, errlen, "%s: no trace in the directory (.json or .json.gz files)", dir);
    return FT_ENOTFOUND;
  }
  if (a->n_owned > first) qsort(a->owned + first, a->n_owned - first, sizeof *a->owned, by_name);
  for (size_t i = first; i < a->n_owned; i++) a->paths[a->n++] = a->owned[i]; /* grown for them */
  return FT_OK;
}

ft_status ft_trace_args_expand(ft_trace_args *a, const char *const *args, size_t n, bool sniff, char *err,
                               size_t errlen) {
  memset(a, 0, sizeof *a);
  size_t cap = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (strcmp(args[i], "-") && !stat(args[i], &st) && S_ISDIR(st.st_mode)) {
      ft_status s = add_dir(a, &cap, args[i], sniff, err, errlen);
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

void ft_trace_args_notes(FILE *f, const ft_trace_args *a, const char *prefix) {
  for (size_t i = 0; i < a->n_skipped; i++) {
    char shown[2048];
    ft__visible(shown, sizeof shown, a->skipped[i]);
    fprintf(f, "%snote: skipped %s\n", prefix, shown);
  }
}

void ft_trace_args_free(ft_trace_args *a) {
  for (size_t i = 0; i < a->n_skipped; i++) free(a->skipped[i]);
  free(a->skipped);
  for (size_t i = 0; i < a->n_owned; i++) free(a->owned[i]);
  free(a->owned);
  free(a->paths);
  memset(a, 0, sizeof *a);
}
