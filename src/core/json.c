/* JSON text output: the one escaping function, the literal rule, numbers, and a
 * buffered sink to a temporary file (plain or gzip) or to memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deflate.h"
#include "internal.h"

enum { OUT_BUF = 256 * 1024 };

struct ft__out {
  ft__out_head head; /* buf/used/cap: the inline fast path in internal.h: buf, or
                        the pipeline's block being filled */
  char *buf;         /* OUT_BUF bytes, for writers without a pipeline */
  int fd;            /* -1 for memory writers */
  ft__ofile file;
  bool discard;   /* count bytes only (benchmarks) */
  bool grow;      /* one growing buffer (buf): a range rendered apart */
  ft__gz *blocks; /* gzip, or a plain file: the block pipeline (deflate.c), NULL
                     once finished */
  char *path;     /* the name given, for messages */
  char *mem;      /* memory writer storage */
  size_t mem_len, mem_cap;
  int err; /* first errno, 0 = fine */
  const char *err_what;
};

/* Appends to a memory writer's storage: 0 or ENOMEM. */
static int mem_append(ft__out *o, const void *p, size_t n) {
  if (o->mem_len + n > o->mem_cap) {
    size_t cap = o->mem_cap ? o->mem_cap : 4096;
    while (cap < o->mem_len + n) cap *= 2;
    char *m = realloc(o->mem, cap);
    if (!m) return ENOMEM;
    o->mem = m;
    o->mem_cap = cap;
  }
  memcpy(o->mem + o->mem_len, p, n);
  o->mem_len += n;
  return 0;
}

/* The bytes' destination; touches nothing the writing thread reads, so the block
 * pipeline may call it from a worker. Returns 0 or an errno value. */
static int sink_bytes(void *ctx, const void *p, size_t n) {
  ft__out *o = ctx;
  if (o->discard) {
    o->mem_len += n;
    return 0;
  }
  return o->fd < 0 ? mem_append(o, p, n) : ft__ofile_write(&o->file, p, n);
}

static void note_err(ft__out *o, int e) {
  if (e && !o->err) {
    o->err = e;
    o->err_what = e == EIO ? "compress" : e == ENOMEM ? "allocate" : "write";
  }
}

static void sink_raw(ft__out *o, const void *p, size_t n) {
  if (!o->err) note_err(o, sink_bytes(o, p, n));
}

/* Hands the buffer on: to the sink, or as a gzip block (the next block becomes
 * the buffer). */
static void flush_buf(ft__out *o) {
  if (!o->head.used) return;
  if (o->blocks) {
    note_err(o, ft__gz_push(o->blocks, o->head.used));
    o->head.buf = ft__gz_buf(o->blocks, &o->head.cap);
  } else {
    sink_raw(o, o->head.buf, o->head.used);
  }
  o->head.used = 0;
}

/* A growing writer's buffer made to hold need bytes; false (the error noted)
 * when memory ran short. */
static bool grow_to(ft__out *o, size_t need) {
  if (need <= o->head.cap) return true;
  size_t cap = o->head.cap;
  while (cap < need) cap *= 2;
  char *b = realloc(o->buf, cap);
  if (!b) {
    note_err(o, ENOMEM);
    return false;
  }
  o->buf = o->head.buf = b;
  o->head.cap = cap;
  return true;
}

void ft__out_write_slow(ft__out *o, const char *s, size_t n) {
  if (!o->head.buf) return; /* written after the end: dropped */
  if (o->grow) {
    if (!grow_to(o, o->head.used + n)) return; /* dropped: the error fails the trace */
    memcpy(o->head.buf + o->head.used, s, n);
    o->head.used += n;
    return;
  }
  if (!o->blocks && n > o->head.cap) {
    flush_buf(o);
    sink_raw(o, s, n);
    return;
  }
  while (n) { /* fill the buffer, hand it on, repeat */
    size_t room = o->head.cap - o->head.used;
    if (!room) {
      flush_buf(o);
      room = o->head.cap;
    }
    size_t take = n < room ? n : room;
    memcpy(o->head.buf + o->head.used, s, take);
    o->head.used += take;
    s += take;
    n -= take;
  }
}

void ft__out_str(ft__out *o, const char *s) { ft__out_write(o, s, strlen(s)); }

/* Two digits per division: timestamps have 11 to 14 digits, written twice per slice. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static size_t u64_text(uint64_t v, char *end) {
  char *p = end;
  while (v >= 100) {
    p -= 2;
    memcpy(p, digit_pairs + 2 * (v % 100), 2);
    v /= 100;
  }
  if (v >= 10) {
    p -= 2;
    memcpy(p, digit_pairs + 2 * v, 2);
  } else {
    *--p = (char)('0' + v);
  }
  return (size_t)(end - p);
}

void ft__out_u64(ft__out *o, uint64_t v) {
  char b[24];
  size_t n = u64_text(v, b + sizeof b);
  ft__out_write(o, b + sizeof b - n, n);
}

void ft__out_i64(ft__out *o, int64_t v) {
  if (v < 0) {
    ft__out_write(o, "-", 1);
    ft__out_u64(o, (uint64_t)0 - (uint64_t)v);
  } else {
    ft__out_u64(o, (uint64_t)v);
  }
}

void ft__out_us3(ft__out *o, uint64_t ns) {
  char b[32];
  char *end = b + sizeof b;
  uint64_t frac = ns % 1000;
  memcpy(end - 2, digit_pairs + 2 * (frac % 100), 2);
  end[-3] = (char)('0' + frac / 100);
  end[-4] = '.';
  size_t n = u64_text(ns / 1000, end - 4);
  ft__out_write(o, end - 4 - n, n + 4);
}

/* Length of a well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0 if the bytes there are not one. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c >= 0xC2 && c <= 0xDF) return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0;  /* overlong */
    if (c == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
    if (c == 0xF0 && s[1] < 0x90) return 0;  /* overlong */
    if (c == 0xF4 && s[1] >= 0x90) return 0; /* > U+10FFFF */
    return 4;
  }
  return 0;
}

size_t ft__json_escape(char *dst, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  char *d = dst;
  *d++ = '"';
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *d++ = (char)c;
      i++;
      continue;
    }
    if (c >= 0x80) {
      size_t k = utf8_seq(s + i, n - i);
      if (k) {
        memcpy(d, s + i, k);
        d += k;
        i += k;
        continue;
      }
    }
    *d++ = '\\';
    switch (c) {
    case '"': *d++ = '"'; break;
    case '\\': *d++ = '\\'; break;
    case '\n': *d++ = 'n'; break;
    case '\r': *d++ = 'r'; break;
    case '\t': *d++ = 't'; break;
    case '\b': *d++ = 'b'; break;
    case '\f': *d++ = 'f'; break;
    default:
      if (c < 0x20) {
        memcpy(d, "u00", 3);
        d[3] = hex[c >> 4];
        d[4] = hex[c & 15];
      } else {
        memcpy(d, "ufffd", 5); /* an invalid UTF-8 byte: U+FFFD keeps the JSON valid */
      }
      d += 5;
    }
    i++;
  }
  *d++ = '"';
  return (size_t)(d - dst);
}

size_t ft__json_escape_piece(char *dst, const char *str, size_t n, bool first, size_t *taken) {
  /* Pieces are cut before a UTF-8 lead byte so no sequence is split. Each piece is one
   * JSON string body, so the quotes written by ft__json_escape are dropped between pieces. */
  size_t take = n;
  if (take > FT__JSON_PIECE) {
    take = FT__JSON_PIECE;
    for (int back = 0; back < 3 && ((unsigned char)str[take] & 0xC0) == 0x80; back++) take--;
  }
  size_t w = ft__json_escape(dst, str, take);
  /* drop the opening quote of continuation pieces and the closing one of all but the last */
  size_t skip = first ? 0 : 1;
  size_t keep = w - skip - (take == n ? 0 : 1);
  if (skip) memmove(dst, dst + 1, keep);
  *taken = take;
  return keep;
}

void ft__out_json_string(ft__out *o, const char *str, size_t n) {
  /* Escape straight into the output buffer, a piece at a time. */
  const size_t worst = 6 * FT__JSON_PIECE + 2;
  bool first = true;
  if (!o->head.buf) return; /* written after the end: dropped */
  do {
    if (o->head.cap - o->head.used < worst) {
      if (!o->grow) flush_buf(o);
      else if (!grow_to(o, o->head.used + worst))
        o->head.used = 0; /* out of memory: the error fails the trace, keep in bounds */
    }
    size_t take;
    o->head.used += ft__json_escape_piece(o->head.buf + o->head.used, str, n, first, &take);
    str += take;
    n -= take;
    first = false;
  } while (n);
}

/* Length of an RFC 8259 number at s[0..n), or 0 if there is none. */
static size_t json_number(const char *s, size_t n) {
  size_t i = 0;
  if (i < n && s[i] == '-') i++;
  if (i >= n) return 0;
  if (s[i] == '0') {
    i++;
  } else if (s[i] >= '1' && s[i] <= '9') {
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  } else {
    return 0;
  }
  if (i < n && s[i] == '.') {
    i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return 0; /* "1." */
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return 0; /* "1e" */
  }
  return i;
}

bool ft__json_is_literal(const char *s, size_t n) {
  if (n == 0) return false;
  if ((n == 4 && (!memcmp(s, "true", 4) || !memcmp(s, "null", 4))) || (n == 5 && !memcmp(s, "false", 5))) return true;
  if (s[0] != '[') return json_number(s, n) == n;
  /* A list we built: "[" number ("," number)* "]", spaces allowed after commas. */
  size_t i = 1;
  for (;;) {
    while (i < n && s[i] == ' ') i++;
    size_t k = json_number(s + i, n - i);
    if (!k) return false;
    i += k;
    while (i < n && s[i] == ' ') i++;
    if (i < n && s[i] == ',') {
      i++;
      continue;
    }
    return i + 1 == n && s[i] == ']';
  }
}

void ft__out_json_value(ft__out *o, const char *s, size_t n) {
  if (ft__json_is_literal(s, n)) ft__out_write(o, s, n);
  else ft__out_json_string(o, s, n);
}

size_t ft__fmt_double(double v, char *buf) {
  if (!isfinite(v)) return (size_t)snprintf(buf, 32, "%s", isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity");
  if (v == 0) return (size_t)snprintf(buf, 32, signbit(v) ? "-0" : "0");
  /* Shortest precision that round-trips, laid out as kineto's fmt "{}" does. */
  char tmp[40];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    if (strtod(tmp, NULL) == v) break;
  }
  char *e = strchr(tmp, 'e');
  int exp10 = atoi(e + 1); /* NOLINT(cert-err34-c): our own %g output, always a number */
  if (exp10 >= -4 && exp10 < 16) {
    int decimals = prec - 1 - exp10;
    if (decimals < 0) decimals = 0;
    return (size_t)snprintf(buf, 32, "%.*f", decimals, v);
  }
  /* mantissa digits from tmp, exponent with at least two digits like repr */
  size_t mlen = (size_t)(e - tmp);
  memcpy(buf, tmp, mlen);
  return mlen + (size_t)snprintf(buf + mlen, 32 - mlen, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
}

static ft__out *out_new(void) {
  ft__out *o = calloc(1, sizeof *o);
  if (o) o->fd = -1;
  return o;
}

static ft_status gz_init(ft__out *o, const ft__deflate_ops *ops, int threads) {
  ft_status st = ft__gz_open(&o->blocks, ops, threads, sink_bytes, o);
  if (st) return st;
  o->head.buf = ft__gz_buf(o->blocks, &o->head.cap);
  return FT_OK;
}

ft_status ft__out_open_gz(ft__out **out, const ft__deflate_ops *ops, int threads, bool discard) {
  ft__out *o = out_new();
  if (!o) return FT_ENOMEM;
  o->discard = discard;
  /* malloc, not calloc: only the pages written are touched (tiny traces, fuzzing) */
  o->buf = ops ? NULL : malloc(OUT_BUF);
  o->head.buf = o->buf;
  o->head.cap = o->buf ? OUT_BUF : 0;
  if (ops ? gz_init(o, ops, threads) != FT_OK : !o->buf) {
    free(o);
    return FT_ENOMEM;
  }
  *out = o;
  return FT_OK;
}

ft_status ft__out_open_mem(ft__out **out, bool gzip) {
  return ft__out_open_gz(out, gzip ? ft__deflate_default() : NULL, -1, false);
}

ft_status ft__out_open_null(ft__out **out, bool gzip) {
  return ft__out_open_gz(out, gzip ? ft__deflate_default() : NULL, -1, true);
}

ft_status ft__out_open_grow(ft__out **out) {
  enum { GROW_FIRST = 64 * 1024 }; /* at least one escaped string piece's worst case */
  ft__out *o = out_new();
  if (!o) return FT_ENOMEM;
  o->grow = true;
  o->buf = o->head.buf = malloc(GROW_FIRST);
  o->head.cap = GROW_FIRST;
  if (!o->buf) {
    free(o);
    return FT_ENOMEM;
  }
  *out = o;
  return FT_OK;
}

const char *ft__out_grown(ft__out *o, size_t *len, int *err) {
  *len = o->head.used;
  *err = o->err;
  return o->head.buf;
}

void ft__out_rewind(ft__out *o) { o->head.used = 0; }

int ft__out_sink_threads(const ft__out *o) { return o->blocks ? ft__gz_planned_workers(o->blocks) : 0; }

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

ft_status ft__out_open(ft__out **out, const char *path, char *errbuf, size_t errlen) {
  ft__out *o = out_new();
  if (!o) return FT_ENOMEM;
  o->path = strdup(path);
  if (!o->path) {
    ft__out_abort(o);
    return FT_ENOMEM;
  }
  ft_status st = ft__ofile_open(&o->file, path, "trace file ", errbuf, errlen);
  if (st) {
    ft__out_abort(o);
    return st;
  }
  o->fd = o->file.fd;
  /* a file's writes, compressed or not, overlap the rendering on a worker */
  if (gz_init(o, ends_with(path, ".gz") ? ft__deflate_default() : NULL, -1)) {
    ft__out_abort(o);
    return FT_ENOMEM;
  }
  *out = o;
  return FT_OK;
}

/* Writes what is buffered; ends a gzip stream. */
static void finish(ft__out *o) {
  if (o->blocks) {
    note_err(o, ft__gz_finish(o->blocks, o->head.used));
    ft__gz_free(o->blocks);
    o->blocks = NULL;
    o->head.buf = NULL; /* the stream is ended: later writes are dropped */
    o->head.cap = 0;
    o->head.used = 0;
  } else {
    flush_buf(o);
  }
}

const char *ft__out_mem(ft__out *o, size_t *len) {
  finish(o);
  *len = o->mem_len;
  return o->mem;
}

void ft__out_abort(ft__out *o) {
  if (!o) return;
  ft__gz_free(o->blocks);
  if (o->fd >= 0) ft__ofile_discard(&o->file);
  free(o->path);
  free(o->mem);
  free(o->buf);
  free(o);
}

ft_status ft__out_close(ft__out *o, char *errbuf, size_t errlen) {
  finish(o);
  ft_status st = FT_OK;
  if (o->fd >= 0 && !o->err) st = ft__ofile_commit(&o->file, errbuf, errlen);
  if (o->err) {
    snprintf(errbuf, errlen, "cannot %s trace file '%s': %s", o->err_what,
             o->fd >= 0 && o->file.shown ? o->file.shown : "(memory)", strerror(o->err));
    st = o->err == ENOMEM ? FT_ENOMEM : FT_EIO;
  }
  ft__out_abort(o);
  return st;
}

/* The exported twins check their pointers: 0 (never a valid length) for NULL. */
size_t ft_json_escape(char *dst, const char *s, size_t n) {
  return dst && (s || !n) ? ft__json_escape(dst, s ? s : "", n) : 0;
}
int ft_json_is_literal(const char *s, size_t n) { return s ? ft__json_is_literal(s, n) : 0; }
