/* zlib's deflate as a block backend: always there, the fallback when ISA-L is not. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "deflate.h"

static void *zlib_new(void) {
  z_stream *z = calloc(1, sizeof *z);
  /* level 1: traces are repetitive JSON, so speed costs little ratio; raw deflate
   * (negative window bits): the pipeline writes the gzip framing */
  if (z && deflateInit2(z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    free(z);
    return NULL;
  }
  return z;
}

static void zlib_free(void *st) {
  if (!st) return;
  deflateEnd(st);
  free(st);
}

static size_t zlib_compress(void *st, const void *in, size_t n, bool final, void *out, size_t cap) {
  z_stream *z = st;
  if (deflateReset(z) != Z_OK) return 0;
  z->next_in = (Bytef *)(uintptr_t)in;
  z->avail_in = (uInt)n;
  z->next_out = out;
  z->avail_out = (uInt)cap;
  int r = deflate(z, final ? Z_FINISH : Z_SYNC_FLUSH);
  /* all input taken and, for the last block, the stream ended: else the output
   * did not fit, which the caller's bound rules out */
  if (z->avail_in || (final ? r != Z_STREAM_END : r != Z_OK || !z->avail_out)) return 0;
  return cap - z->avail_out;
}

static uint32_t zlib_crc(uint32_t crc, const void *p, size_t n) { return (uint32_t)crc32(crc, p, (uInt)n); }

const ft__deflate_ops ft__deflate_zlib = {"zlib", zlib_new, zlib_free, zlib_compress, zlib_crc};
