/* A strict RFC 8259 streaming SAX parser over chunks, for the stats reader (yajl-like callbacks, no allocation per
 * token). */
#ifndef FT_JSON_SCAN_H
#define FT_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deeper nesting is refused: the stack below is fixed (a byte a level), so a
 * hostile "[[[[..." costs neither stack frames nor unbounded memory. */
#define FT__JSON_MAX_DEPTH 10000

/* Each returns nonzero to go on, 0 to stop the parse (ft__json_feed then returns
 * FT__JSON_STOPPED and err_at is the offset of the token's first byte). A NULL
 * member is skipped. Strings are unescaped; they point into the fed chunk when
 * they hold no escape (no copy), else into the parser's buffer; either is valid
 * only during the call. Numbers are their raw text, checked against the JSON
 * grammar. Bytes are not checked to be UTF-8 (names are re-escaped on output);
 * a lone surrogate escape decodes to U+FFFD.
 * Strings and numbers longer than keep (key_keep for keys) are handed over cut
 * to their first keep bytes (a string's unescaped ones, less a UTF-8 sequence
 * the cut splits) with cut set to the bytes left out; what is left out is
 * scanned, checked and dropped, never held. */
/* JSON's four whitespace bytes (yajl also takes \v and \f; RFC 8259 does not) */
extern const bool ft__json_ws[256];

typedef struct ft__json_callbacks {
  int (*null)(void *ctx);
  int (*boolean)(void *ctx, int value);
  int (*number)(void *ctx, const char *text, size_t len);
  int (*string)(void *ctx, const unsigned char *s, size_t len);
  int (*start_map)(void *ctx);
  int (*map_key)(void *ctx, const unsigned char *s, size_t len);
  int (*end_map)(void *ctx);
  int (*start_array)(void *ctx);
  int (*end_array)(void *ctx);
} ft__json_callbacks;

typedef enum ft__json_status {
  FT__JSON_OK = 0,
  FT__JSON_ERROR,   /* not JSON, or out of memory: err_msg, err_at */
  FT__JSON_STOPPED, /* a callback returned 0: err_at is its token's first byte */
} ft__json_status;

typedef struct ft__json {
  const ft__json_callbacks *cb;
  void *ctx;
  uint64_t base; /* offset of the next chunk's first byte in the whole text */
  unsigned state, depth;
  ft__json_status status; /* sticky: a stopped or failed parse stays so */
  const char *err_msg;    /* static text */
  uint64_t err_at;        /* offset of the offending byte (the end of input when it ended early) */
  /* set by the caller, read before each token (ft__json_init: SIZE_MAX, false) */
  size_t keep, key_keep; /* bytes of a string or number value (of a key) handed over; the rest is dropped */
  bool nul_fffd;         /* \u0000 decodes to U+FFFD (for readers of C strings) */
  size_t cut;            /* for the callback: bytes of its token left out (0: whole) */
  /* a token cut by a chunk's end, completed from the next chunk(s). A string's
   * carry is its quote and at most an escape's bytes (the rest is in ubuf); a
   * number's keeps its first keep bytes, dropping the digits past them. */
  unsigned char *carry;
  size_t carry_len, carry_cap;
  uint64_t carry_at, tok_at; /* offsets of carry[0] and of the token's first byte */
  size_t sfrom, sulen;       /* a carried string: where its scan goes on, its bytes so far in ubuf */
  size_t dropped;            /* bytes of the carried token dropped so far (past keep) */
  /* unescaped strings */
  unsigned char *ubuf;
  size_t ucap;
  unsigned char stack[FT__JSON_MAX_DEPTH]; /* 1: map, 0: array */
} ft__json;

void ft__json_init(ft__json *j, const ft__json_callbacks *cb, void *ctx);
void ft__json_free(ft__json *j);
/* Parses the next n bytes of the text (n > 0). */
ft__json_status ft__json_feed(ft__json *j, const unsigned char *buf, size_t n);
/* The end of the text: a cut token or an open value is an error ("truncated
 * JSON", err_at at the end); so is a text with no value at all. */
ft__json_status ft__json_finish(ft__json *j);

/* For a parse split between threads (stats_input.c): "between two elements of
 * the array at depth (1: the top value; 2: a member of the top object)", the
 * state after an element's last byte, at offset at of the whole text. Set puts
 * j there (its buffers kept, any earlier error cleared); is tells whether j is
 * there now, the array's enclosing containers included. */
void ft__json_set_between(ft__json *j, unsigned depth, uint64_t at);
bool ft__json_is_between(const ft__json *j, unsigned depth);

#endif
