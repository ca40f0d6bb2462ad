/* Control characters shown as visible escapes, so a name can neither drive a terminal nor break a one-line message. */
#include <stdio.h>
#include <string.h>

#include "out_file.h"

/* Length of the valid UTF-8 sequence at s (2-4), or 0 when s does not start one
 * (a lone continuation byte, an overlong form, a surrogate, past U+10FFFF, cut). */
static size_t utf8_len(const unsigned char *s) {
  unsigned char b = s[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
  if (b >= 0xC2 && b <= 0xDF) n = 2;
  else if (b >= 0xE0 && b <= 0xEF) n = 3;
  else if (b >= 0xF0 && b <= 0xF4) n = 4;
  else return 0;
  if (b == 0xE0) lo = 0xA0;      /* overlong */
  else if (b == 0xED) hi = 0x9F; /* surrogates */
  else if (b == 0xF0) lo = 0x90; /* overlong */
  else if (b == 0xF4) hi = 0x8F; /* past U+10FFFF */
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0; /* the NUL ends the check too */
  return n;
}

/* The escape for the character at s, into esc; its length in *n (bytes of s). 0: none needed. */
static size_t escape_at(const unsigned char *s, size_t *n, char esc[8]) {
  unsigned char b = s[0];
  *n = 1;
  if (b == '\n') return memcpy(esc, "\\n", 2), 2;
  if (b == '\r') return memcpy(esc, "\\r", 2), 2;
  if (b == '\t') return memcpy(esc, "\\t", 2), 2;
  if (b < 0x20 || b == 0x7F) return (size_t)snprintf(esc, 8, "\\x%02x", b);
  if (b < 0x80) return 0;
  size_t len = utf8_len(s);
  if (!len) return (size_t)snprintf(esc, 8, "\\x%02x", b);
  *n = len;
  if (b == 0xC2 && s[1] <= 0x9F) return (size_t)snprintf(esc, 8, "\\u%04x", s[1]); /* C1: CSI is U+009B */
  return 0;
}

size_t ft__visible(char *dst, size_t cap, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t total = 0, used = 0;
  bool full = cap == 0;
  while (*p) {
    char esc[8];
    size_t n, e = escape_at(p, &n, esc);
    const char *piece = e ? esc : (const char *)p;
    size_t len = e ? e : n;
    if (!full && used + len < cap) {
      memcpy(dst + used, piece, len);
      used += len;
    } else {
      full = true; /* nothing after a piece that did not fit: no cut escape, no gap */
    }
    total += len;
    p += n;
  }
  if (cap) dst[used] = '\0';
  return total;
}

bool ft__visible_changes(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    char esc[8];
    size_t n;
    if (escape_at(p, &n, esc)) return true;
    p += n;
  }
  return false;
}
