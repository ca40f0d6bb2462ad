/* The differential check of src/analysis/read/json_scan.c against yajl (see json_diff.h). */
#include "json_diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

/* n less a UTF-8 sequence a cut at n leaves incomplete (json_scan.h's rule,
 * written again here from the rule, not shared). */
static size_t trim_utf8(const unsigned char *s, size_t n) {
  size_t k = 0;
  while (k < 3 && k < n && (s[n - 1 - k] & 0xC0) == 0x80) k++;
  if (k == n) return n;
  unsigned char c = s[n - 1 - k];
  size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return (c & 0xC0) == 0x80 || need <= k + 1 ? n : n - 1 - k;
}

static void put(ft_json_log *l, char kind, const void *s, size_t n, bool text) {
  size_t cut = 0;
  if (text && l->keep) {
    if (l->ours) {
      cut = l->ours->cut;
    } else {
      size_t keep = kind == 'k' ? l->key_keep : l->keep;
      if (n > keep) {
        size_t m = kind == 'n' ? keep : trim_utf8(s, keep);
        cut = n - m;
        n = m;
      }
    }
  }
  size_t need = l->len + 1 + (text ? 16 + n : 0);
  if (need > l->cap) {
    size_t cap = l->cap ? l->cap : 1024;
    while (cap < need) cap *= 2;
    unsigned char *b = realloc(l->b, cap);
    if (!b) abort(); /* a test's allocation */
    l->b = b;
    l->cap = cap;
  }
  l->b[l->len++] = (unsigned char)kind;
  if (!text || l->kinds_only) return;
  size_t at = l->len + 8, w = 0;
  const unsigned char *u = s;
  for (size_t i = 0; i < n; i++) {
    if (l->fold && i + 2 < n &&
        ((u[i] == 0xEF && u[i + 1] == 0xBF && u[i + 2] == 0xBD) ||
         (u[i] == 0xED && u[i + 1] >= 0xA0 && u[i + 1] <= 0xBF && (u[i + 2] & 0xC0) == 0x80))) {
      l->b[at + w++] = '?';
      i += 2;
    } else {
      l->b[at + w++] = u[i];
    }
  }
  uint64_t len = w;
  memcpy(l->b + l->len, &len, 8);
  l->len = at + w;
  if (l->keep) {
    uint64_t c = cut;
    memcpy(l->b + l->len, &c, 8);
    l->len += 8;
  }
}

static int on_null(void *c) { return put(c, 'z', NULL, 0, false), 1; }
static int on_bool(void *c, int v) { return put(c, v ? 't' : 'f', NULL, 0, false), 1; }
static int on_number(void *c, const char *s, size_t n) { return put(c, 'n', s, n, true), 1; }
static int on_string(void *c, const unsigned char *s, size_t n) { return put(c, 's', s, n, true), 1; }
static int on_key(void *c, const unsigned char *s, size_t n) { return put(c, 'k', s, n, true), 1; }
static int on_start_map(void *c) { return put(c, '{', NULL, 0, false), 1; }
static int on_end_map(void *c) { return put(c, '}', NULL, 0, false), 1; }
static int on_start_array(void *c) { return put(c, '[', NULL, 0, false), 1; }
static int on_end_array(void *c) { return put(c, ']', NULL, 0, false), 1; }

const ft__json_callbacks ft_json_log_callbacks = {on_null, on_bool,    on_number,      on_string,   on_start_map,
                                                  on_key,  on_end_map, on_start_array, on_end_array};

static const yajl_callbacks yajl_log = {
    .yajl_null = on_null,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end_map,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end_array,
};

void ft_json_log_free(ft_json_log *log) {
  free(log->b);
  log->b = NULL;
  log->len = log->cap = 0;
}

ft__json_status ft_json_log_ours(ft__json *j, ft_json_log *log, const unsigned char *doc, size_t n, size_t chunk) {
  log->len = 0;
  ft__json_init(j, &ft_json_log_callbacks, log);
  if (log->keep) {
    log->ours = j;
    j->keep = log->keep;
    j->key_keep = log->key_keep;
  }
  ft__json_status st = FT__JSON_OK;
  if (!chunk) chunk = n ? n : 1;
  for (size_t off = 0; !st && off < n; off += chunk)
    st = ft__json_feed(j, doc + off, n - off < chunk ? n - off : chunk);
  if (!st) st = ft__json_finish(j);
  ft__json_free(j);
  return st;
}

/* memcmp, which must not be given an empty log's NULL */
static bool same(const ft_json_log *a, const ft_json_log *b, size_t n) { return !n || !memcmp(a->b, b->b, n); }

static int hex(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c |= 0x20;
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A \u escape of a high surrogate followed by a \u escape that is not a low one
 * (read loosely: an escaped backslash before the "u" only makes a false hit,
 * which makes the check more lenient, never wrong). */
static bool odd_surrogate(const unsigned char *d, size_t n) {
  for (size_t i = 0; i + 12 <= n; i++) {
    if (d[i] != '\\' || d[i + 1] != 'u' || (d[i + 2] | 0x20) != 'd' || hex(d[i + 3]) < 8 || hex(d[i + 3]) > 11)
      continue;
    if (d[i + 6] == '\\' && d[i + 7] == 'u' && !((d[i + 8] | 0x20) == 'd' && hex(d[i + 9]) >= 12)) return true;
  }
  return false;
}

/* A \u escape of a surrogate at all (loosely, as above): where ours and yajl
 * may decode one differently. */
static bool any_surrogate(const unsigned char *d, size_t n) {
  for (size_t i = 0; i + 6 <= n; i++)
    if (d[i] == '\\' && d[i + 1] == 'u' && (d[i + 2] | 0x20) == 'd' && hex(d[i + 3]) >= 8) return true;
  return false;
}

/* Ours with keep limits, whole and in chunks, against each other and against
 * yajl's events cut the same way (theirs: yajl's log of doc when comparable). */
static int diff_cut(ft__json *j, const unsigned char *doc, size_t n, size_t chunk, const ft_json_log *theirs,
                    ft__json_status st, char *why, size_t whylen) {
  ft_json_log a = {.keep = 7, .key_keep = 3}, b = {.keep = 7, .key_keep = 3};
  ft__json_status sa = ft_json_log_ours(j, &a, doc, n, 0);
  const char *msg = j->err_msg;
  unsigned long long at = j->err_at;
  ft__json_status sb = ft_json_log_ours(j, &b, doc, n, chunk);
  int bad = 1;
  if (sa != sb || (sa && (msg != j->err_msg || at != j->err_at)) || a.len != b.len || !same(&a, &b, a.len))
    snprintf(why, whylen, "with keep limits, ours whole (%d, %s at %llu, %zu B) != ours in %zu-byte chunks (%d, %zu B)",
             sa, sa ? msg : "ok", at, a.len, chunk, sb, b.len);
  else if (sa != st) snprintf(why, whylen, "keep limits change the status (%d, without: %d)", sa, st);
  else if (theirs && !sa && (a.len != theirs->len || !same(&a, theirs, a.len)))
    snprintf(why, whylen, "with keep limits, ours (%zu B) != yajl's cut alike (%zu B)", a.len, theirs->len);
  else bad = 0;
  ft_json_log_free(&a);
  ft_json_log_free(&b);
  return bad;
}

int ft_json_diff(const unsigned char *doc, size_t n, size_t chunk, char *why, size_t whylen) {
  static ft__json j; /* 10 kB: not on a fuzzer's stack */
  bool loose = odd_surrogate(doc, n), fold = any_surrogate(doc, n);
  ft_json_log whole = {.kinds_only = loose, .fold = fold}, cut = {.kinds_only = loose, .fold = fold},
              theirs = {.kinds_only = loose, .fold = fold}, theirs_cut = {.keep = 7, .key_keep = 3};
  int bad = 1;
  ft__json_status st = ft_json_log_ours(&j, &whole, doc, n, 0);
  const char *msg = j.err_msg;
  unsigned long long at = j.err_at;
  ft__json_status st2 = ft_json_log_ours(&j, &cut, doc, n, chunk);
  if (st != st2 || (st && (msg != j.err_msg || at != j.err_at)) || whole.len != cut.len ||
      !same(&whole, &cut, whole.len)) {
    snprintf(why, whylen,
             "ours whole (%d, %s at %llu, %zu B of events) != ours in %zu-byte chunks (%d, %s at %llu, %zu B)", st,
             st ? msg : "ok", at, whole.len, chunk, st2, st2 ? j.err_msg : "ok", (unsigned long long)j.err_at, cut.len);
    goto end;
  }
  if (st && msg && !strncmp(msg, "nesting deeper", 14)) { /* yajl has no depth limit */
    bad = 0;
    goto end;
  }
  /* yajl's whitespace includes \v and \f: make them a byte both refuse everywhere */
  unsigned char *copy = malloc(n ? n : 1);
  if (!copy) abort();
  for (size_t i = 0; i < n; i++) copy[i] = doc[i] == '\v' || doc[i] == '\f' ? 0x01 : doc[i];
  yajl_status ys = yajl_status_error;
  for (int pass = 0; pass < 2; pass++) { /* its events, then cut as our keep limits cut */
    yajl_handle h = yajl_alloc(&yajl_log, NULL, pass ? &theirs_cut : &theirs);
    yajl_config(h, yajl_dont_validate_strings, 1);
    yajl_status y = yajl_parse(h, copy, n);
    if (y == yajl_status_ok) y = yajl_complete_parse(h);
    yajl_free(h);
    if (!pass) ys = y;
  }
  free(copy);
  if (diff_cut(&j, doc, n, chunk, fold || ys != yajl_status_ok ? NULL : &theirs_cut, st, why, whylen)) goto end;
  bool ours_ok = st == FT__JSON_OK, yajl_ok = ys == yajl_status_ok;
  size_t common = whole.len < theirs.len ? whole.len : theirs.len;
  if (!ours_ok && yajl_ok && !strncmp(msg, "trailing garbage", 16) && at < n && doc[at] == '"') {
    /* yajl ignores a string left open after the value (its finish only peeks
     * for a token, and an open string is none yet): ours refuses it */
    ft_json_log rest = {.kinds_only = true};
    ft__json_status rs = ft_json_log_ours(&j, &rest, doc + at, n - at, 0);
    ft_json_log_free(&rest);
    if (rs == FT__JSON_ERROR && j.err_at == n - at && !strncmp(j.err_msg, "truncated", 9)) yajl_ok = false;
  }
  if (ours_ok != yajl_ok) {
    snprintf(why, whylen, "ours %s (%s at %llu), yajl %s", ours_ok ? "accepts" : "refuses", ours_ok ? "ok" : msg, at,
             yajl_ok ? "accepts" : "refuses");
  } else if (ours_ok ? whole.len != theirs.len || !same(&whole, &theirs, whole.len) : !same(&whole, &theirs, common)) {
    size_t i = 0;
    while (i < common && whole.b[i] == theirs.b[i]) i++;
    snprintf(why, whylen, "both %s, events differ at log byte %zu (ours %zu B, yajl %zu B)",
             ours_ok ? "accept" : "refuse", i, whole.len, theirs.len);
  } else {
    bad = 0;
  }
end:
  ft_json_log_free(&theirs_cut);
  ft_json_log_free(&whole);
  ft_json_log_free(&cut);
  ft_json_log_free(&theirs);
  return bad;
}
