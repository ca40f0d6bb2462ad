/* On-demand capture's control channel: the private socket directory and the request
 * line (FTCTL/1 CMD key=value...; text values hex-encoded, so a name with spaces or
 * line breaks travels as plain ASCII). Shared by the injection library and the CLI. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"

/* A socket path holds at most sun_path bytes: the longest pid (4194304) named,
 * ".sock.new" included, or no process could ever be captured through dir. */
static bool too_long(const char *dir, char *why, size_t wlen) {
  size_t most = sizeof(((struct sockaddr_un *)0)->sun_path) - sizeof "/4194304.sock.new";
  if (strlen(dir) <= most) return false;
  snprintf(why, wlen,
           "the control directory %s is too long for a socket path (%zu bytes; at most %zu): set "
           "FLAGTRACE_CONTROL_DIR to a shorter one",
           dir, strlen(dir), most);
  errno = ENAMETOOLONG;
  return true;
}

bool ft__ctl_dir(char *out, size_t len, bool create, char *why, size_t wlen) {
  const char *env = getenv("FLAGTRACE_CONTROL_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
  int n;
  if (env && *env) n = snprintf(out, len, "%s", env);
  else if (xdg && xdg[0] == '/') n = snprintf(out, len, "%s/flagtrace", xdg);
  else n = snprintf(out, len, "/tmp/flagtrace-%lu", (unsigned long)getuid());
  if (n < 0 || (size_t)n >= len) {
    snprintf(why, wlen, "the control directory's name is too long");
    return false;
  }
  if (too_long(out, why, wlen)) return false;
  if (create && mkdir(out, 0700) != 0 && errno != EEXIST) {
    snprintf(why, wlen, "cannot create the control directory %s: %s", out, strerror(errno));
    return false;
  }
  struct stat st;
  if (lstat(out, &st) != 0) {
    int e = errno; /* the caller tells "none yet" (ENOENT) from the rest */
    snprintf(why, wlen, "no control directory %s: %s", out, strerror(e));
    errno = e;
    return false;
  }
  /* a link is followed when it is this user's (or root's: /var/run) and its target
   * passes the checks below; the sockets then live under the target's own name */
  char real[PATH_MAX];
  if (S_ISLNK(st.st_mode)) {
    bool followed = false;
    if (st.st_uid != getuid() && st.st_uid != 0)
      snprintf(why, wlen, "the control directory %s is a symbolic link of uid %lu, not of this user (uid %lu)", out,
               (unsigned long)st.st_uid, (unsigned long)getuid());
    else if (!realpath(out, real) || stat(real, &st) != 0)
      snprintf(why, wlen, "the control directory %s is a symbolic link to nothing usable: %s", out, strerror(errno));
    else if (strlen(real) >= len) snprintf(why, wlen, "the control directory's name is too long");
    else followed = true;
    if (!followed) {
      errno = EACCES;
      return false;
    }
    snprintf(out, len, "%s", real);
    if (too_long(out, why, wlen)) return false; /* the target's name is the sockets' now */
  }
  /* someone else's directory (made first in /tmp) could hand us their sockets, or
   * see ours: never used, whatever it holds */
  if (!S_ISDIR(st.st_mode)) snprintf(why, wlen, "the control directory %s is not a directory", out);
  else if (st.st_uid != getuid())
    snprintf(why, wlen, "the control directory %s belongs to uid %lu, not to this user (uid %lu)", out,
             (unsigned long)st.st_uid, (unsigned long)getuid());
  else if (st.st_mode & 077)
    snprintf(why, wlen, "the control directory %s is open to others (mode %03o; it must be 0700)", out,
             (unsigned)(st.st_mode & 0777));
  else return true;
  errno = EACCES;
  return false;
}

bool ft__ctl_socket_ours(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == getuid();
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Decodes n hex digits of s into out (cap bytes, NUL-terminated). A NUL byte in the
 * text is refused: it would cut a path short. */
static bool unhex(const char *s, size_t n, char *out, size_t cap) {
  if (n % 2 || n / 2 >= cap) return false;
  for (size_t i = 0; i < n; i += 2) {
    int hi = hexval(s[i]), lo = hexval(s[i + 1]);
    if (hi < 0 || lo < 0 || (hi | lo) == 0) return false;
    out[i / 2] = (char)(hi << 4 | lo);
  }
  out[n / 2] = '\0';
  return true;
}

static bool number(const char *s, size_t n, uint64_t max, uint64_t *out) {
  if (!n || n > 20) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9' || v > (max - (uint64_t)(s[i] - '0')) / 10) return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return true;
}

/* The longest window one request may ask for: a day. */
#define MAX_MS (24ull * 3600 * 1000)

bool ft__ctl_parse(const char *line, size_t n, ft__ctl_req *out, char *why, size_t wlen) {
  memset(out, 0, sizeof *out);
  if (n && line[n - 1] == '\n') n--;
  if (n >= FT__CTL_MAX_REQUEST) {
    snprintf(why, wlen, "request longer than %d bytes", FT__CTL_MAX_REQUEST);
    return false;
  }
  size_t vlen = strlen(FT__CTL_VERSION);
  if (n < vlen || memcmp(line, FT__CTL_VERSION, vlen) || (n > vlen && line[vlen] != ' ')) {
    snprintf(why, wlen, "not a %s request", FT__CTL_VERSION);
    return false;
  }
  bool have_range = false;
  for (size_t i = vlen; i < n;) {
    while (i < n && line[i] == ' ') i++;
    size_t start = i;
    while (i < n && line[i] != ' ') i++;
    if (i == start) break;
    const char *tok = line + start;
    size_t tn = i - start;
    const char *eq = memchr(tok, '=', tn);
    if (!out->cmd) {
      if (tn == 4 && !memcmp(tok, "info", 4)) out->cmd = FT__CTL_INFO;
      else if (tn == 7 && !memcmp(tok, "capture", 7)) out->cmd = FT__CTL_CAPTURE;
      else {
        snprintf(why, wlen, "unknown command");
        return false;
      }
      continue;
    }
    if (!eq || out->cmd != FT__CTL_CAPTURE) {
      snprintf(why, wlen, "unexpected argument");
      return false;
    }
    size_t kn = (size_t)(eq - tok), an = tn - kn - 1;
    const char *val = eq + 1;
    uint64_t v;
    bool ok;
    if (kn == 2 && !memcmp(tok, "ms", 2))
      ok = !out->duration_ms && number(val, an, MAX_MS, &v) && v && (out->duration_ms = v);
    else if (kn == 5 && !memcmp(tok, "steps", 5))
      ok = !out->steps && number(val, an, 1000000, &v) && v && (out->steps = (uint32_t)v);
    else if (kn == 5 && !memcmp(tok, "range", 5))
      ok = !have_range && (have_range = unhex(val, an, out->range, sizeof out->range));
    else if (kn == 3 && !memcmp(tok, "out", 3)) ok = !out->out[0] && unhex(val, an, out->out, sizeof out->out);
    else ok = false;
    if (!ok) { /* the key named only when it is a plain word: the reason is one line of text */
      bool word = kn && kn <= 16;
      for (size_t k = 0; k < kn && word; k++) word = tok[k] >= 'a' && tok[k] <= 'z';
      if (word) snprintf(why, wlen, "bad or repeated argument '%.*s'", (int)kn, tok);
      else snprintf(why, wlen, "bad argument");
      return false;
    }
  }
  if (!out->cmd) {
    snprintf(why, wlen, "no command");
    return false;
  }
  if (out->cmd == FT__CTL_CAPTURE && !out->duration_ms == !out->steps) {
    snprintf(why, wlen, "a capture takes either ms= or steps=");
    return false;
  }
  if (out->cmd == FT__CTL_CAPTURE && !out->steps && have_range) {
    snprintf(why, wlen, "range= goes with steps=");
    return false;
  }
  if (out->cmd == FT__CTL_CAPTURE && out->steps && !out->range[0]) {
    snprintf(why, wlen, "a capture by steps needs range=");
    return false;
  }
  return !out->out[0] || ft__ctl_pattern_ok(out->out, why, wlen);
}

const char *ft__ctl_bad_escape(const char *pattern, bool *has_n) {
  *has_n = false;
  for (const char *p = pattern; *p; p++) {
    if (*p != '%') continue;
    if (!p[1] || !strchr("phrn%", p[1])) return p;
    *has_n |= *++p == 'n'; /* %%n is a literal n */
  }
  return NULL;
}

bool ft__ctl_pattern_ok(const char *pattern, char *why, size_t wlen) {
  bool has_n;
  if (ft__ctl_bad_escape(pattern, &has_n)) {
    snprintf(why, wlen, "out= has an unknown escape (valid: %%p %%h %%r %%n %%%%)");
    return false;
  }
  if (pattern[0] != '/') snprintf(why, wlen, "out= is not an absolute path (the client sends it resolved)");
  else if (!has_n) snprintf(why, wlen, "out= needs %%n (the capture number)");
  else return true;
  return false;
}

static size_t put_hex(char *out, size_t len, size_t o, const char *key, const char *s) {
  static const char digits[] = "0123456789abcdef";
  size_t need = strlen(key) + 2 + 2 * strlen(s);
  if (o + need >= len) return 0;
  o += (size_t)sprintf(out + o, " %s=", key);
  for (; *s; s++) {
    out[o++] = digits[(unsigned char)*s >> 4];
    out[o++] = digits[(unsigned char)*s & 15];
  }
  out[o] = '\0';
  return o;
}

size_t ft__ctl_format(const ft__ctl_req *req, char *out, size_t len) {
  if (len > FT__CTL_MAX_REQUEST) len = FT__CTL_MAX_REQUEST;
  int n = snprintf(out, len, "%s %s", FT__CTL_VERSION, req->cmd == FT__CTL_INFO ? "info" : "capture");
  if (n < 0 || (size_t)n >= len) return 0;
  size_t o = (size_t)n;
  if (req->cmd == FT__CTL_CAPTURE) {
    n = req->steps ? snprintf(out + o, len - o, " steps=%u", (unsigned)req->steps)
                   : snprintf(out + o, len - o, " ms=%llu", (unsigned long long)req->duration_ms);
    if (n < 0 || o + (size_t)n >= len) return 0;
    o += (size_t)n;
    if (req->steps && !(o = put_hex(out, len, o, "range", req->range))) return 0;
    if (req->out[0] && !(o = put_hex(out, len, o, "out", req->out))) return 0;
  }
  if (o + 2 > len) return 0;
  out[o++] = '\n';
  out[o] = '\0';
  return o;
}
