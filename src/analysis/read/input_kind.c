/* What an input that is not a trace looks like (SQLite, an nsys report, protobuf, text...), from its first bytes. */
#include "input_kind.h"

#include <stdio.h>
#include <string.h>

static bool starts(const unsigned char *b, size_t n, const char *magic, size_t m) {
  return n >= m && !memcmp(b, magic, m);
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && !strcmp(s + n - m, tail);
}

/* Bytes no text has: controls other than tab, newline, carriage return, form feed. */
static bool binary(const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' && b[i] != '\f') || b[i] == 0x7f) return true;
  return false;
}

/* The first line of text, at most 40 bytes, quotes and backslashes as ' and /. */
static void first_line(const unsigned char *b, size_t n, char *out, size_t len) {
  size_t i = 0, k = 0;
  while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
  for (; i < n && b[i] != '\n' && b[i] != '\r' && k < 40 && k + 1 < len; i++)
    out[k++] = b[i] == '"' ? '\'' : b[i] == '\\' ? '/' : (char)b[i];
  out[k] = 0;
}

/* What b[0, n) holds, as a noun phrase, into out; false when it may be JSON ({ or [ first). */
static bool kind(const unsigned char *b, size_t n, char *out, size_t len) {
  size_t i = 0;
  while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
  if (i < n && (b[i] == '{' || b[i] == '[')) return false;
  const char *k = NULL;
  if (!n) k = "an empty file";
  else if (i == n) k = "only whitespace";
  else if (starts(b, n, "SQLite format 3", 16)) k = "an SQLite database (nsys export --type sqlite?)";
  else if (starts(b, n, "PK\3\4", 4)) k = "a zip archive";
  else if (starts(b, n,
                  "\x7f"
                  "ELF",
                  4))
    k = "an executable or shared library (ELF)";
  else if (starts(b, n, "\x28\xb5\x2f\xfd", 4)) k = "zstd data (decompress it first: zstd -d)";
  else if (starts(b, n, "BZh", 3)) k = "bzip2 data (decompress it first: bunzip2)";
  else if (starts(b, n,
                  "\xfd"
                  "7zXZ",
                  6))
    k = "xz data (decompress it first: unxz)";
  else if (binary(b, n)) /* a protobuf message starts with a field's tag: number 1-15, wire type 0-2 */
    k = b[0] >= 0x08 && b[0] < 0x80 && (b[0] & 7) <= 2 ? "binary data, protobuf by its look (a Perfetto trace?)"
                                                       : "binary data";
  else if (b[i] == '<') k = "HTML or XML (a report? flagtrace report writes HTML, it reads JSON)";
  if (k) {
    snprintf(out, len, "%s", k);
    return true;
  }
  char line[48];
  first_line(b, n, line, sizeof line);
  snprintf(out, len, "text, not JSON (it begins \"%s\")", line);
  return true;
}

bool ft__input_kind(const unsigned char *raw, size_t n, bool gz, const unsigned char *text, size_t n_text,
                    const char *path, char *out, size_t len) {
  static const char todo[] =
      "flagtrace reads Chrome JSON traces (.json, .json.gz), as flagtrace record, "
      "torch.profiler and kineto write them";
  char what[160];
  if (gz) {
    if (!kind(text, n_text, what, sizeof what)) return false;
    snprintf(out, len, "gzip data holding %s, not a trace: %s", what, todo);
    return true;
  }
  bool nsys = path && (ends_with(path, ".nsys-rep") || ends_with(path, ".qdrep"));
  if (!kind(raw, n, what, sizeof what)) return false;
  if (nsys && n && strncmp(what, "text", 4)) /* its bytes have no published signature: the name, and binary */
    snprintf(what, sizeof what, "an Nsight Systems report (nsys's own format; record with flagtrace record)");
  else if (!n) /* a trace cut to nothing: its writer still running, or stopped before writing */
    snprintf(what, sizeof what, path ? "an empty file (was its writer still running, or stopped?)" : "empty input");
  snprintf(out, len, "%s, not a trace: %s", what, todo);
  return true;
}
