/* The trace's output sink: where the bytes go (out_file.c) and the JSON writer
 * with its inline fast path (json.c). */
#ifndef FLAGTRACE_CORE_JSON_OUT_H
#define FLAGTRACE_CORE_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flagtrace/flagtrace.h"
#include "out_file.h" /* the output file: every file flagtrace writes */

/* ---- JSON output (json.c) ---- */

typedef struct ft__out ft__out;
/* Opens a writer on path (gzip when it ends in ".gz"), writing to a temporary file
 * in the same directory. errbuf receives a message on failure. */
ft_status ft__out_open(ft__out **out, const char *path, char *errbuf, size_t errlen);
/* Opens a writer into a caller-owned memory buffer (tests, fuzzing, benches). */
ft_status ft__out_open_mem(ft__out **out, bool gzip);
/* Opens a writer that only counts bytes (benchmarks: the writer's own cost). */
ft_status ft__out_open_null(ft__out **out, bool gzip);
/* Opens a writer into one growing buffer, written nowhere: a trace's range
 * rendered on a worker thread, then handed whole to the real writer. */
ft_status ft__out_open_grow(ft__out **out);
/* A growing writer's bytes since the last rewind, and its first error (0, or
 * ENOMEM when the buffer could not grow: the bytes are then incomplete). */
const char *ft__out_grown(ft__out *o, size_t *len, int *err);
/* Empties a growing writer, keeping its buffer (and any error). */
void ft__out_rewind(ft__out *o);
/* Worker threads the writer's own pipeline may run (deflate workers, or the one
 * writing a plain file): they share the CPUs with the rendering. */
int ft__out_sink_threads(const ft__out *o);
/* Flushes, renames the temporary file into place, frees. On any earlier error the
 * temporary file is removed and the error returned. */
ft_status ft__out_close(ft__out *o, char *errbuf, size_t errlen);
/* Discards a writer (removes the temporary file). */
void ft__out_abort(ft__out *o);
/* For memory writers: the bytes written so far (not NUL-terminated), valid until
 * close/abort; finishes a gzip stream. Null writers return NULL and the count. */
const char *ft__out_mem(ft__out *o, size_t *len);

/* The buffer at the start of every ft__out, so small writes inline to a memcpy. */
typedef struct ft__out_head {
  char *buf;
  size_t used, cap;
} ft__out_head;
void ft__out_write_slow(ft__out *o, const char *s, size_t n);
static inline void ft__out_write(ft__out *o, const char *s, size_t n) {
  ft__out_head *h = (ft__out_head *)o;
  if (n <= h->cap - h->used) {
    memcpy(h->buf + h->used, s, n);
    h->used += n;
  } else {
    ft__out_write_slow(o, s, n);
  }
}
void ft__out_str(ft__out *o, const char *s); /* raw, no escaping */
/* A string literal, its length known at compile time. */
#define FT__OUT_LIT(o, lit) ft__out_write((o), "" lit, sizeof(lit) - 1)
void ft__out_u64(ft__out *o, uint64_t v);
void ft__out_i64(ft__out *o, int64_t v);
/* ns as microseconds with exactly three decimals. */
void ft__out_us3(ft__out *o, uint64_t ns);
/* s as a JSON string literal (with quotes), fully escaped; invalid UTF-8 bytes
 * become U+FFFD so the output is always valid JSON. */
void ft__out_json_string(ft__out *o, const char *s, size_t n);
/* The one escaping function: writes s as a quoted JSON string into dst, which must
 * hold 6 * n + 2 bytes; returns the bytes written. */
size_t ft__json_escape(char *dst, const char *s, size_t n);
/* Long strings are escaped in pieces of at most FT__JSON_PIECE bytes: the next piece of
 * s[0..n) (never splitting a UTF-8 sequence) escaped into dst (6 * FT__JSON_PIECE + 2
 * bytes), its opening quote only when first, its closing one only when it ends s; *taken:
 * the bytes of s it used. Returns the bytes written. */
enum { FT__JSON_PIECE = 4096 };
size_t ft__json_escape_piece(char *dst, const char *s, size_t n, bool first, size_t *taken);
/* A metadata value: raw if ft__json_is_literal, else a JSON string. */
void ft__out_json_value(ft__out *o, const char *s, size_t n);

/* True when s is provably a JSON literal: a number per RFC 8259, true, false, null,
 * or "[" number ("," number)* "]" with optional spaces. */
bool ft__json_is_literal(const char *s, size_t n);

/* Code point cp (at most 0x10FFFF) as UTF-8 into o (room for 4 bytes); returns the
 * bytes written. Surrogates are encoded as they come: callers that want U+FFFD
 * for them (NVTX's wide strings) replace them first. */
static inline size_t ft__utf8_put(uint32_t cp, unsigned char *o) {
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | cp >> 6);
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18);
  o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

#endif
