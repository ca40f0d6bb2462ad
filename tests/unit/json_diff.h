/* The differential check of src/analysis/read/json_scan.c against yajl, shared by tests/unit/test_json_diff.c and
 * fuzz/fuzz_json_scan.c. */
#ifndef FT_JSON_DIFF_H
#define FT_JSON_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "json_scan.h"

/* A parse's events as bytes: a kind letter per event, a string's or number's
 * length (8 bytes) and bytes after it. Two parses agree when their logs do. */
typedef struct ft_json_log {
  unsigned char *b;
  size_t len, cap;
  bool kinds_only; /* strings and numbers as their letter only */
  bool fold;       /* U+FFFD and a surrogate's 3 bytes logged as "?" (lone surrogates: ours U+FFFD, yajl's either) */
  /* with keep: each string and number also logs how many bytes were left out:
   * ours (ours set) reads its parser's cut, yajl's are cut here as ours cuts */
  const ft__json *ours;
  size_t keep, key_keep; /* 0: no cut logged */
} ft_json_log;

/* Both parsers' callbacks (yajl's have the same signatures), writing a log. */
extern const ft__json_callbacks ft_json_log_callbacks;

/* Our parse of doc fed in chunks of `chunk` bytes (0: one chunk) into log,
 * which it resets first; the status, with j's error fields left in *j. */
ft__json_status ft_json_log_ours(ft__json *j, ft_json_log *log, const unsigned char *doc, size_t n, size_t chunk);

/* Runs doc through yajl (strings not UTF-8 checked, as the reader had it) and
 * through ours, whole and in chunks of `chunk` bytes. 0 when they agree: the same
 * events and both accept, or both reject after the same events (the longer log
 * may go on: yajl emits a number only after the byte that ends it). Ours whole
 * and chunked must agree exactly, error offset and message included. Known and
 * documented differences are allowed for: yajl takes \v and \f as whitespace,
 * folds a high surrogate and a following non-low \u escape into one character,
 * accepts a string left open after the top-level value ('0"abc'), has no
 * depth limit, and decodes a lone surrogate escape to "?" (high) or its 3 bytes
 * (low) where ours has U+FFFD. With the parser's keep limits (7 bytes of a
 * value, 3 of a key), ours whole and chunked agree exactly, and with yajl's
 * events cut the way json_scan.h says. 1 and a reason in why otherwise. */
int ft_json_diff(const unsigned char *doc, size_t n, size_t chunk, char *why, size_t whylen);

void ft_json_log_free(ft_json_log *log);

#endif
