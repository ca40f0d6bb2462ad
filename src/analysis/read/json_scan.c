/* A strict RFC 8259 streaming SAX parser over chunks: string bodies found 8 bytes at a time, a token cut by a chunk's
 * end carried over. */
#include "json_scan.h"
#include "json_out.h" /* ft__utf8_put */

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* What the next token may be. S_VALUE and S_ARRAY_FIRST come first: "a value is
 * allowed" is state <= S_ARRAY_FIRST. */
enum { S_VALUE, S_ARRAY_FIRST, S_MAP_FIRST, S_KEY, S_COLON, S_AFTER, S_DONE };
/* A token routine's outcome; *used is the token's length (T_OK) or the offending
 * byte's index (T_ERR). */
enum { T_OK, T_MORE, T_ERR, T_STOP };

/* The token scanners, inlined into the state machine even where used twice. */
#define HOT static inline __attribute__((always_inline))

static const char TRUNCATED[] = "truncated JSON (the document ends early)";
static const char NOMEM[] = "out of memory";

void ft__json_init(ft__json *j, const ft__json_callbacks *cb, void *ctx) {
  memset(j, 0, offsetof(ft__json, stack)); /* the stack is written before it is read */
  j->cb = cb;
  j->ctx = ctx;
  j->state = S_VALUE;
  j->keep = j->key_keep = SIZE_MAX;
}

void ft__json_free(ft__json *j) {
  free(j->carry);
  free(j->ubuf);
  j->carry = j->ubuf = NULL;
}

static bool grow(unsigned char **buf, size_t *cap, size_t need) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  unsigned char *p = realloc(*buf, c);
  if (!p) return false;
  *buf = p;
  *cap = c;
  return true;
}

/* The first '"', '\\' or control byte in [q, end), or end. Eight bytes at a
 * time: in (w - 0x01..) & ~w & 0x80.. the lowest set bit marks exactly the first
 * zero byte (a borrow only sets bits above a true one), and likewise for "below
 * 0x20"; names and keys are short, so this beats a memchr call per string. */
static inline const unsigned char *find_special(const unsigned char *q, const unsigned char *end) {
#ifdef __SSE2__ /* every x86-64: 16 bytes at a time, a control byte being v == min(v, 0x1f) */
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
  for (; end - q >= 16; q += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                             _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));
    int bits = _mm_movemask_epi8(m);
    if (bits) return q + __builtin_ctz((unsigned)bits);
  }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  for (; end - q >= 8; q += 8) {
    uint64_t w, x, y;
    memcpy(&w, q, 8);
    x = w ^ (ones * '"');
    y = w ^ (ones * '\\');
    uint64_t m = (((x - ones) & ~x) | ((y - ones) & ~y) | ((w - ones * 0x20) & ~w)) & high;
    if (m) return q + (__builtin_ctzll(m) >> 3);
  }
#endif
  for (; q < end; q++)
    if (*q == '"' || *q == '\\' || *q < 0x20) return q;
  return end;
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c |= 0x20;
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The 4 hex digits at q: T_OK with *cp, T_MORE when cut, T_ERR with *bad the
 * first non-hex digit's index. */
static int hex4(const unsigned char *q, const unsigned char *end, unsigned *cp, size_t *bad) {
  unsigned v = 0;
  for (size_t i = 0; i < 4; i++) {
    if (q + i == end) return T_MORE;
    int h = hexval(q[i]);
    if (h < 0) {
      *bad = i;
      return T_ERR;
    }
    v = v << 4 | (unsigned)h;
  }
  *cp = v;
  return T_OK;
}

/* Appends m unescaped bytes to the string being read: its first keep bytes go to
 * ubuf (len of them so far), the rest are only counted (j->dropped). */
static bool str_put(ft__json *j, size_t *len, size_t keep, const unsigned char *s, size_t m) {
  size_t room = *len < keep ? keep - *len : 0, take = m < room ? m : room;
  if (take) {
    if (!grow(&j->ubuf, &j->ucap, *len + take)) return false;
    memcpy(j->ubuf + *len, s, take);
    *len += take;
  }
  j->dropped += m - take;
  return true;
}

/* n less a UTF-8 sequence that a cut at n leaves incomplete: a cut name stays
 * valid UTF-8 when it was. A function of the kept bytes alone, so that however
 * the text was chunked the same bytes are handed over. */
static size_t utf8_trim(const unsigned char *s, size_t n) {
  for (size_t k = 1; k <= 3 && k <= n; k++) {
    unsigned char c = s[n - k];
    if ((c & 0xC0) == 0x80) continue;
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > k ? n - k : n;
  }
  return n;
}

/* A string's first keep bytes for its callback (s, *n), with j->cut. Off the
 * hot path: inlined into the scanners it made them slower (P5). */
__attribute__((noinline, cold)) static void str_cut_cold(ft__json *j, const unsigned char *s, size_t len,
                                                         size_t dropped, size_t *n) {
  *n = utf8_trim(s, len);
  j->cut = dropped + (len - *n);
}
static inline void str_cut(ft__json *j, const unsigned char *s, size_t len, size_t dropped, size_t *n) {
  if (__builtin_expect(!dropped, 1)) {
    *n = len;
    j->cut = 0;
    return;
  }
  str_cut_cold(j, s, len, dropped, n);
}

/* The rest of a string from its first escape or control byte q (p: its opening
 * quote), unescaped into j->ubuf (its first keep bytes; j->dropped counts the
 * rest). \uXXXX as yajl 2.1 decodes it, but for lone surrogates: a pair is one
 * 4-byte character, a lone surrogate is U+FFFD (yajl: "?" for a high one, the 3
 * bytes of a low one), and a high surrogate followed by another \u escape that
 * is not a low surrogate is U+FFFD and that escape on its own (yajl folds both
 * into an unrelated 4-byte character).
 * The bytes from p + 1 to seg are already in ubuf[0, len). Cut by end, it notes
 * where to go on (j->sfrom, j->sulen), so that a string longer than a chunk is
 * scanned once however many chunks it spans. */
static int string_rest(ft__json *j, const unsigned char *p, const unsigned char *seg, const unsigned char *q,
                       const unsigned char *end, size_t len, size_t keep, const unsigned char **s, size_t *n,
                       size_t *used, const char **msg) {
  for (;;) {
    if (!str_put(j, &len, keep, seg, (size_t)(q - seg))) {
      *used = 0;
      *msg = NOMEM;
      return T_ERR;
    }
    seg = q;
    if (q == end || (*q == '\\' && end - q < 2)) goto more;
    if (*q == '"') {
      *s = j->ubuf ? j->ubuf : (const unsigned char *)"";
      str_cut(j, *s, len, j->dropped, n);
      *used = (size_t)(q + 1 - p);
      return T_OK;
    }
    if (*q != '\\') {
      *used = (size_t)(q - p);
      *msg = "control character in a string (it must be escaped)";
      return T_ERR;
    }
    unsigned char c[4];
    size_t esc = 2, k = 1;
    switch (q[1]) {
    case '"': c[0] = '"'; break;
    case '\\': c[0] = '\\'; break;
    case '/': c[0] = '/'; break;
    case 'b': c[0] = '\b'; break;
    case 'f': c[0] = '\f'; break;
    case 'n': c[0] = '\n'; break;
    case 'r': c[0] = '\r'; break;
    case 't': c[0] = '\t'; break;
    case 'u': {
      unsigned cp, lo;
      size_t bad;
      int r = hex4(q + 2, end, &cp, &bad);
      if (r == T_ERR) {
        *used = (size_t)(q + 2 + bad - p);
        *msg = "invalid \\u escape (4 hex digits expected)";
        return r;
      }
      if (r) goto more;
      esc = 6;
      if ((cp & 0xFC00) == 0xD800) {
        if (end - q < 7 || (q[6] == '\\' && end - q < 8)) goto more; /* "\u" may follow */
        if (q[6] == '\\' && q[7] == 'u') {
          r = hex4(q + 8, end, &lo, &bad);
          if (r == T_ERR) {
            *used = (size_t)(q + 8 + bad - p);
            *msg = "invalid \\u escape (4 hex digits expected)";
            return r;
          }
          if (r) goto more;
          if ((lo & 0xFC00) == 0xDC00) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            esc = 12;
          } else {
            cp = 0xFFFD;
          }
        } else {
          cp = 0xFFFD;
        }
      } else if ((cp & 0xFC00) == 0xDC00 || (cp == 0 && j->nul_fffd)) {
        cp = 0xFFFD;
      }
      k = ft__utf8_put(cp, c);
      break;
    }
    default:
      *used = (size_t)(q + 1 - p);
      *msg = "invalid escape in a string";
      return T_ERR;
    }
    if (!str_put(j, &len, keep, c, k)) {
      *used = 0;
      *msg = NOMEM;
      return T_ERR;
    }
    seg = q + esc;
    q = find_special(seg, end);
  }
more:
  j->sfrom = (size_t)(seg - p);
  j->sulen = len;
  return T_MORE;
}

static inline bool digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Past the digits at q: 8 bytes at a time (timestamps have 13 to 16). A byte is
 * a digit when its high nibble is 3 and its low nibble plus 6 stays below 16;
 * (x & 0x7f) + 0x7f then sets a byte's top bit when it is not zero, with no
 * carry into the next byte. */
static inline const unsigned char *skip_digits(const unsigned char *q, const unsigned char *end) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t hi = 0xF0F0F0F0F0F0F0F0ull, lo = 0x0F0F0F0F0F0F0F0Full, low7 = 0x7F7F7F7F7F7F7F7Full;
  for (; end - q >= 8; q += 8) {
    uint64_t w;
    memcpy(&w, q, 8);
    uint64_t x = ((w & hi) ^ 0x3030303030303030ull) | (((w & lo) + 0x0606060606060606ull) & hi);
    x = (x | ((x & low7) + low7)) & ~low7;
    if (x) return q + (__builtin_ctzll(x) >> 3);
  }
#endif
  while (q < end && digit(*q)) q++;
  return q;
}

/* A number's text at p against RFC 8259's grammar. Cut by the chunk's end it
 * may go on (T_MORE) unless final. After it, any byte: "01" is the number 0 and
 * then a misplaced 1, which the state machine refuses. */
HOT int number_tok(const unsigned char *p, const unsigned char *end, bool final, size_t *used, const char **msg) {
  const unsigned char *q = p;
  if (*q == '-' && ++q == end) return T_MORE;
  if (*q == '0') {
    q++;
  } else if (digit(*q)) {
    q = skip_digits(q + 1, end);
  } else {
    goto bad;
  }
  if (q < end && *q == '.') {
    if (++q == end) return T_MORE;
    if (!digit(*q)) goto bad;
    q = skip_digits(q + 1, end);
  }
  if (q < end && (*q | 0x20) == 'e') {
    if (++q == end) return T_MORE;
    if ((*q == '+' || *q == '-') && ++q == end) return T_MORE;
    if (!digit(*q)) goto bad;
    q = skip_digits(q + 1, end);
  }
  if (q == end && !final) return T_MORE;
  *used = (size_t)(q - p);
  return T_OK;
bad:
  *used = (size_t)(q - p);
  *msg = "invalid number (a digit expected)";
  return T_ERR;
}

static inline int literal(const unsigned char *p, const unsigned char *end, const char *word, size_t n, size_t *used,
                          const char **msg) {
  if ((size_t)(end - p) >= n && !memcmp(p, word, n)) {
    *used = n;
    return T_OK;
  }
  for (size_t i = 0; i < n; i++) {
    if (p + i == end) return T_MORE;
    if (p[i] != (unsigned char)word[i]) {
      *used = i;
      *msg = "invalid literal (true, false or null expected)";
      return T_ERR;
    }
  }
  return T_OK; /* not reached: the memcmp above matched */
}

/* The string at p (*p == '"'): *s, *n its bytes, *used its length with the
 * quotes. Scanning starts at p + from, ulen bytes of it unescaped in ubuf (NOESC:
 * no escape so far): 1 and NOESC, or where a cut scan stopped. */
#define NOESC SIZE_MAX
HOT int string_tok(ft__json *j, const unsigned char *p, const unsigned char *end, size_t from, size_t ulen, size_t keep,
                   const unsigned char **s, size_t *n, size_t *used, const char **msg) {
  const unsigned char *q = find_special(p + from, end);
  if (ulen != NOESC) return string_rest(j, p, p + from, q, end, ulen, keep, s, n, used, msg);
  if (q < end && *q == '"') { /* no escape: the chunk's own bytes */
    size_t len = (size_t)(q - p - 1);
    *s = p + 1;
    *used = len + 2;
    if (__builtin_expect(len <= keep, 1)) {
      *n = len;
      j->cut = 0;
    } else if (!keep) { /* a value the caller does not read: nothing of it */
      *n = 0;
      j->cut = len;
    } else {
      str_cut_cold(j, p + 1, keep, len - keep, n);
    }
    return T_OK;
  }
  if (q == end) {
    j->sfrom = (size_t)(q - p);
    j->sulen = NOESC;
    return T_MORE;
  }
  j->dropped = 0;
  return string_rest(j, p, p + 1, q, end, 0, keep, s, n, used, msg);
}

/* A number's text for its callback: its first keep bytes (dropped: those left out already). */
static inline size_t number_cut(ft__json *j, size_t len, size_t dropped) {
  size_t keep = j->keep, n = len < keep ? len : keep;
  j->cut = len - n + dropped;
  return n;
}

/* One scalar token at p (a string, number or literal that the state allows),
 * its callback and the next state. */
static int scalar(ft__json *j, unsigned *state, unsigned depth, const unsigned char *p, const unsigned char *end,
                  bool final, bool resumed, size_t *used, const char **msg) {
  const ft__json_callbacks *cb = j->cb;
  int r;
  switch (*p) {
  case '"': {
    const unsigned char *s;
    size_t n;
    bool key = *state == S_KEY || *state == S_MAP_FIRST;
    if (!resumed) j->dropped = 0;
    if ((r = string_tok(j, p, end, resumed ? j->sfrom : 1, resumed ? j->sulen : NOESC, key ? j->key_keep : j->keep, &s,
                        &n, used, msg)))
      return r;
    if (key) {
      if (cb->map_key && !cb->map_key(j->ctx, s, n)) return T_STOP;
      *state = S_COLON;
      return T_OK;
    }
    if (cb->string && !cb->string(j->ctx, s, n)) return T_STOP;
    break;
  }
  case 't':
  case 'f':
    if ((r = *p == 't' ? literal(p, end, "true", 4, used, msg) : literal(p, end, "false", 5, used, msg))) return r;
    if (cb->boolean && !cb->boolean(j->ctx, *p == 't')) return T_STOP;
    break;
  case 'n':
    if ((r = literal(p, end, "null", 4, used, msg))) return r;
    if (cb->null && !cb->null(j->ctx)) return T_STOP;
    break;
  default:
    if ((r = number_tok(p, end, final, used, msg))) return r;
    if (cb->number && !cb->number(j->ctx, (const char *)p, number_cut(j, *used, resumed ? j->dropped : 0)))
      return T_STOP;
    break;
  }
  *state = depth ? S_AFTER : S_DONE;
  return T_OK;
}

static const char *unexpected(unsigned state, bool in_map) {
  switch (state) {
  case S_VALUE: return "expected a value";
  case S_ARRAY_FIRST: return "expected a value or ']'";
  case S_MAP_FIRST: return "expected a string key or '}'";
  case S_KEY: return "expected a string key";
  case S_COLON: return "expected ':' after a key";
  case S_AFTER: return in_map ? "expected ',' or '}'" : "expected ',' or ']'";
  default: return "trailing garbage after the JSON value";
  }
}

static ft__json_status fail(ft__json *j, ft__json_status st, uint64_t at, const char *msg) {
  j->status = st;
  j->err_at = at;
  j->err_msg = st == FT__JSON_STOPPED ? "stopped by a callback" : msg;
  return st;
}

/* (json_scan.h) */
const bool ft__json_ws[256] = {[' '] = true, ['\n'] = true, ['\r'] = true, ['\t'] = true};
#define SKIP_WS                           \
  while (p < end && ft__json_ws[*p]) p++; \
  if (p == end) goto out

/* Tokens of buf from p on; a token cut by end goes to the carry. One block per
 * state, each testing first what usually comes there (a key after '{' or ',',
 * ':' after a key, ',' after a value): fewer mispredicted jumps than one switch
 * over every byte. */
static ft__json_status run(ft__json *j, const unsigned char *buf, const unsigned char *p, const unsigned char *end) {
  const ft__json_callbacks *cb = j->cb;
  void *ctx = j->ctx;
  unsigned state = j->state, depth = j->depth;
  const char *msg = NULL;
  size_t used = 0;
  int r;
  switch (state) {
  case S_VALUE:
  case S_ARRAY_FIRST: goto value;
  case S_MAP_FIRST:
  case S_KEY: goto key;
  case S_COLON: goto colon;
  case S_AFTER: goto after;
  default: goto done;
  }
value: /* S_VALUE or S_ARRAY_FIRST */
  SKIP_WS;
  switch (*p) {
  case '{':
  case '[':
    if (depth == FT__JSON_MAX_DEPTH) {
      msg = "nesting deeper than 10000 levels";
      goto error;
    }
    j->stack[depth++] = *p == '{';
    if (*p++ == '{') {
      if (cb->start_map && !cb->start_map(ctx)) goto stop_back;
      state = S_MAP_FIRST;
      goto key;
    }
    if (cb->start_array && !cb->start_array(ctx)) goto stop_back;
    state = S_ARRAY_FIRST;
    goto value;
  case ']':
    if (state != S_ARRAY_FIRST) goto unexpected;
    goto close;
  case '"': { /* strings and numbers here, not through scalar(): one dispatch on *p, not two */
    const unsigned char *s;
    size_t n;
    if ((r = string_tok(j, p, end, 1, NOESC, j->keep, &s, &n, &used, &msg))) goto token_out;
    if (cb->string && !cb->string(ctx, s, n)) goto stop;
    p += used;
    goto next;
  }
  case '-':
  case '0':
  case '1':
  case '2':
  case '3':
  case '4':
  case '5':
  case '6':
  case '7':
  case '8':
  case '9':
    if ((r = number_tok(p, end, false, &used, &msg))) goto token_out;
    if (cb->number && !cb->number(ctx, (const char *)p, number_cut(j, used, 0))) goto stop;
    p += used;
    goto next;
  case 't':
  case 'f':
  case 'n':
    if ((r = scalar(j, &state, depth, p, end, false, false, &used, &msg))) goto token_out;
    p += used;
    goto next;
  default: goto unexpected;
  }
key: /* S_MAP_FIRST or S_KEY */
  SKIP_WS;
  if (*p == '"') {
    const unsigned char *s;
    size_t n;
    if ((r = string_tok(j, p, end, 1, NOESC, j->key_keep, &s, &n, &used, &msg))) goto token_out;
    if (cb->map_key && !cb->map_key(ctx, s, n)) goto stop;
    p += used;
    state = S_COLON;
    goto colon;
  }
  if (*p == '}' && state == S_MAP_FIRST) goto close;
  goto unexpected;
colon:
  SKIP_WS;
  if (*p != ':') goto unexpected;
  p++;
  state = S_VALUE;
  goto value;
after: /* S_AFTER: inside a container */
  SKIP_WS;
  if (*p == ',') {
    p++;
    if (j->stack[depth - 1]) {
      state = S_KEY;
      goto key;
    }
    state = S_VALUE;
    goto value;
  }
  if (*p != (j->stack[depth - 1] ? '}' : ']')) goto unexpected;
close: /* *p closes the innermost container */
  depth--;
  if (*p == '}' ? cb->end_map && !cb->end_map(ctx) : cb->end_array && !cb->end_array(ctx)) goto stop;
  p++;
next: /* a value is complete */
  if (depth) {
    state = S_AFTER;
    goto after;
  }
  state = S_DONE;
done:
  SKIP_WS;
  goto unexpected;
out:
  j->state = state;
  j->depth = depth;
  return FT__JSON_OK;
token_out:
  if (r == T_MORE) { /* cut by the chunk's end: finished from the next one */
    size_t from = 0;
    j->tok_at = j->base + (uint64_t)(p - buf);
    if (*p == '"') { /* its bytes so far go to ubuf; the carry keeps its quote and a cut escape */
      from = j->sfrom - 1;
      if (j->sulen == NOESC) {
        size_t len = 0;
        j->dropped = 0;
        if (!str_put(j, &len, state == S_KEY || state == S_MAP_FIRST ? j->key_keep : j->keep, p + 1, from)) {
          used = 0;
          msg = NOMEM;
          goto error_in;
        }
        j->sulen = len;
      }
      j->sfrom = 1;
    } else {
      j->dropped = 0;
    }
    size_t len = (size_t)(end - p) - from;
    if (!grow(&j->carry, &j->carry_cap, len)) {
      used = 0;
      msg = NOMEM;
      goto error_in;
    }
    j->carry[0] = *p;
    memcpy(j->carry + 1, p + 1 + from, len - 1);
    j->carry_len = len;
    j->carry_at = j->tok_at + from;
    p = end;
    goto out;
  }
  if (r == T_STOP) goto stop;
  goto error_in;
unexpected:
  msg = unexpected(state, depth && j->stack[depth - 1]);
error:
  used = 0;
error_in:
  return fail(j, FT__JSON_ERROR, j->base + (uint64_t)(p - buf) + used, msg);
stop_back: /* p is past the '{' or '[' */
  p--;
stop:
  return fail(j, FT__JSON_STOPPED, j->base + (uint64_t)(p - buf), NULL);
}
#undef SKIP_WS

/* A carried token still cut at a chunk's end, made small: a string's scanned
 * bytes are in ubuf, so the carry keeps its quote and what follows where its scan
 * stopped (an escape cut short); a number longer than keep loses the digits of
 * its last run past its first keep bytes and the run's first digit, all but the
 * last (the grammar sees the same token; the callback gets the first keep bytes). */
static void compact(ft__json *j) {
  unsigned char *c = j->carry;
  size_t n = j->carry_len;
  if (c[0] == '"') {
    size_t from = j->sfrom;
    memmove(c + 1, c + from, n - from);
    j->carry_len = 1 + n - from;
    j->carry_at += from - 1;
    j->sfrom = 1;
    return;
  }
  if (n <= j->keep || !(c[0] == '-' || digit(c[0]))) return;
  size_t run = n;
  while (run > 0 && digit(c[run - 1])) run--;
  size_t from = run + 1 > j->keep ? run + 1 : j->keep;
  if (from + 1 >= n) return;
  c[from] = c[n - 1];
  j->carry_len = from + 1;
  j->dropped += n - 1 - from;
  j->carry_at += n - 1 - from; /* an error is at or after the last digit: offsets stay right */
}

/* Completes the carried token with buf's first bytes, appended in doubling
 * steps (most tokens end within a few bytes). A string's scan goes on where it
 * stopped, and a number is looked at again only once a byte that can end it has
 * come: a token of any length costs linear time. *taken: buf's bytes used. */
static ft__json_status resume(ft__json *j, const unsigned char *buf, size_t n, bool final, size_t *taken) {
  size_t old = j->carry_len, off = 0, step = 64;
  for (;;) {
    size_t add = n - off < step ? n - off : step;
    if (!grow(&j->carry, &j->carry_cap, j->carry_len + add)) return fail(j, FT__JSON_ERROR, j->carry_at, NOMEM);
    if (add) memcpy(j->carry + j->carry_len, buf + off, add);
    j->carry_len += add;
    off += add;
    bool last = final && off == n;
    size_t had = j->carry_len - add;
    if (!last && had && digit(j->carry[had - 1]) && (j->carry[0] == '-' || digit(j->carry[0])) &&
        !(had - (j->carry[0] == '-') == 1 && j->carry[had - 1] == '0')) {
      /* a number in a run of digits (not a leading 0) goes on through more digits */
      size_t k = off - add;
      while (k < off && digit(buf[k])) k++;
      if (k == off) goto more;
    }
    unsigned state = j->state;
    size_t used = 0;
    const char *msg = NULL;
    int r = scalar(j, &state, j->depth, j->carry, j->carry + j->carry_len, last, true, &used, &msg);
    if (r == T_OK) {
      j->state = state;
      j->carry_len = 0;
      *taken = used - old;
      return FT__JSON_OK;
    }
    if (r == T_STOP) return fail(j, FT__JSON_STOPPED, j->tok_at, NULL);
    if (r == T_ERR) return fail(j, FT__JSON_ERROR, j->carry_at + used, msg);
  more:
    if (off == n) {
      *taken = n;
      if (final) return fail(j, FT__JSON_ERROR, j->base + n, TRUNCATED);
      compact(j);
      return FT__JSON_OK;
    }
    step *= 2;
  }
}

ft__json_status ft__json_feed(ft__json *j, const unsigned char *buf, size_t n) {
  if (j->status) return j->status;
  size_t taken = 0;
  if (j->carry_len && resume(j, buf, n, false, &taken)) return j->status;
  ft__json_status st = taken < n ? run(j, buf, buf + taken, buf + n) : FT__JSON_OK;
  j->base += n;
  return st;
}

ft__json_status ft__json_finish(ft__json *j) {
  if (j->status) return j->status;
  size_t taken;
  if (j->carry_len && resume(j, NULL, 0, true, &taken)) return j->status;
  if (j->state != S_DONE) return fail(j, FT__JSON_ERROR, j->base, TRUNCATED);
  return FT__JSON_OK;
}

/* (json_scan.h) Depth 2 is an array member of the top-level map; depth 1 the top array. */
void ft__json_set_between(ft__json *j, unsigned depth, uint64_t at) {
  j->base = at;
  j->state = S_AFTER;
  j->depth = depth;
  j->status = FT__JSON_OK;
  j->err_msg = NULL;
  j->err_at = 0;
  j->carry_len = 0;
  j->sfrom = j->sulen = j->dropped = j->cut = 0;
  j->stack[0] = depth == 2;
  j->stack[1] = 0;
}

bool ft__json_is_between(const ft__json *j, unsigned depth) {
  return j->status == FT__JSON_OK && j->state == S_AFTER && j->depth == depth && !j->carry_len &&
         j->stack[0] == (depth == 2) && (depth == 1 || j->stack[1] == 0);
}
