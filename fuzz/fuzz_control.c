/* libFuzzer harness for the on-demand control socket's request parser: arbitrary bytes
 * are a request or a one-line refusal, never a crash or a read past the input; a
 * request parsed, formatted again, parses to the same request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size ? size : 1); /* exactly size bytes: ASan sees any read past them */
  if (!copy) return 0;
  memcpy(copy, data, size);
  ft__ctl_req r, again;
  char why[256] = "", line[FT__CTL_MAX_REQUEST];
  if (!ft__ctl_parse(copy, size, &r, why, sizeof why)) {
    if (!why[0] || strchr(why, '\n')) abort();
  } else {
    size_t n = ft__ctl_format(&r, line, sizeof line);
    /* a request that fits the limit formats within it too (the same tokens, canonical) */
    if (n &&
        (!ft__ctl_parse(line, n, &again, why, sizeof why) || again.cmd != r.cmd || again.duration_ms != r.duration_ms ||
         again.steps != r.steps || strcmp(again.range, r.range) || strcmp(again.out, r.out)))
      abort();
  }
  free(copy);
  return 0;
}
