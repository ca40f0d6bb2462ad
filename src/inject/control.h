/* On-demand capture's control channel, shared by the injection library (the server)
 * and `flagtrace capture` (the client): the private directory, the line protocol. */
#ifndef FLAGTRACE_CONTROL_H
#define FLAGTRACE_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The protocol's first token; a request with another is refused. */
#define FT__CTL_VERSION "FTCTL/1"
/* A request is one line of at most this many bytes, newline included. */
#define FT__CTL_MAX_REQUEST 8192
/* The longest string value (an output pattern, a range name). */
#define FT__CTL_MAX_TEXT 2048

/* The per-user directory of the control sockets: FLAGTRACE_CONTROL_DIR, else
 * $XDG_RUNTIME_DIR/flagtrace, else /tmp/flagtrace-UID. With create it is made 0700
 * when missing. A symbolic link of this user (or root) is followed: out is then its
 * target. Refused (false, why set) when it is not a directory of ours (another owner,
 * another user's link), when group or others may use it, or when it is too long for
 * a socket path. */
bool ft__ctl_dir(char *out, size_t len, bool create, char *why, size_t wlen);

/* Whether path is a socket owned by this user (lstat: never through a link). */
bool ft__ctl_socket_ours(const char *path);

enum ft__ctl_cmd { FT__CTL_INFO = 1, FT__CTL_CAPTURE };

typedef struct ft__ctl_req {
  int cmd;
  uint64_t duration_ms;       /* capture: the window's length, or 0 with steps */
  uint32_t steps;             /* capture: step ranges to capture, or 0 with a duration */
  char range[256];            /* capture with steps: the NVTX range name (a prefix) */
  char out[FT__CTL_MAX_TEXT]; /* capture: an output pattern, "" for record's */
} ft__ctl_req;

/* Parses one request line (n bytes, no NUL needed, the newline optional). False
 * with a one-line reason for anything malformed. Never reads past n. */
bool ft__ctl_parse(const char *line, size_t n, ft__ctl_req *out, char *why, size_t wlen);

/* The first escape of an output pattern that is not %p %h %r %n %%, or NULL; *has_n
 * tells whether %n is among them. */
const char *ft__ctl_bad_escape(const char *pattern, bool *has_n);

/* Whether an output pattern may be used by a capture: absolute (a relative one is
 * resolved by the client against its own directory), with %n, and no escape but
 * %p %h %r %n %%. False with a one-line reason. */
bool ft__ctl_pattern_ok(const char *pattern, char *why, size_t wlen);

/* The request as one line, newline included; 0 when it does not fit in len. */
size_t ft__ctl_format(const ft__ctl_req *req, char *out, size_t len);

#endif
