/* What an input that is not a trace looks like, from its first bytes: for the reader's one-line error. */
#ifndef FLAGTRACE_INPUT_KIND_H
#define FLAGTRACE_INPUT_KIND_H

#include <stdbool.h>
#include <stddef.h>

enum { FT__INPUT_HEAD = 64 }; /* bytes looked at: the file's first, and when gzip, its text's */

/* The file's first n raw bytes (n < FT__INPUT_HEAD: the whole file) and, when they are
 * gzip, its text's first n_text; path (NULL: none) for a name the bytes cannot tell
 * (.nsys-rep). When they are not the start of a JSON trace ({ or [ after whitespace),
 * writes "what it looks like, not a trace: what to do" into out and returns true. */
bool ft__input_kind(const unsigned char *raw, size_t n, bool gz, const unsigned char *text, size_t n_text,
                    const char *path, char *out, size_t len);

#endif
