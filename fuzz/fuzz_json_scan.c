/* libFuzzer harness for the stats reader's JSON parser (src/analysis/read/json_scan.c): the
 * same events as yajl on any bytes, whole and in chunks (tests/unit/json_diff.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "json_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size) return 0;
  /* the first byte picks our parser's chunk size (1 to 32), the rest is the document */
  char why[512];
  if (ft_json_diff(data + 1, size - 1, 1 + data[0] % 32, why, sizeof why)) {
    fprintf(stderr, "fuzz_json_scan: %s\n", why);
    abort();
  }
  return 0;
}
