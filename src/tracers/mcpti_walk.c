/* MetaX MCPTI's record walker (cupti_tracer.c built with FT_MCPTI): record sizes,
 * well-formedness, and the resynchronizing walk; fuzzed by fuzz/fuzz_mcpti.c. */
#include <cupti_activity.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcpti_walk.h"

/* MCPTI records: CUPTI's kinds and field prefixes, 8-byte aligned, but full sizes of
 * their own (vendor-apis.md, MACA 3.x); every field decode_record reads lies inside them. */
enum { MC_KERNEL_SIZE = 200, MC_MEMCPY_SIZE = 88, MC_MEMSET_SIZE = 88 };
_Static_assert(offsetof(CUpti_ActivityKernel10, queued) + 8 <= MC_KERNEL_SIZE, "kernel field outside MCPTI's record");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, streamId) + 4 <= MC_MEMCPY_SIZE, "memcpy field outside MCPTI's record");
_Static_assert(offsetof(CUpti_ActivityMemset4, memoryKind) + 2 <= MC_MEMSET_SIZE,
               "memset field outside MCPTI's record");

static bool times_ok(uint64_t start, uint64_t end) {
  /* the no-timing sentinel is a valid record (skipped later); else end >= start and
   * no single activity longer than an hour */
  return (!start && !end) || (end >= start && end - start <= 3600ull * 1000000000ull);
}

static bool dims_ok(int x, int y, int z, int max_x) {
  return x > 0 && x <= max_x && y > 0 && y < 65536 && z > 0 && z < 65536;
}

/* The size of a well-formed MCPTI record of this kind at p (avail bytes readable),
 * or 0 when the candidate is malformed. */
size_t ft__mc_record_size(const uint8_t *p, size_t avail) {
  uint32_t kind;
  memcpy(&kind, p, sizeof kind);
  switch (kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const CUpti_ActivityKernel10 *k = (const void *)p;
    if (avail < MC_KERNEL_SIZE) return 0;
    return k->correlationId && dims_ok(k->gridX, k->gridY, k->gridZ, INT32_MAX) &&
                   dims_ok(k->blockX, k->blockY, k->blockZ, 4096) && times_ok(k->start, k->end)
               ? MC_KERNEL_SIZE
               : 0;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY:
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const CUpti_ActivityMemset4 *m = (const void *)p; /* bytes, start, end, correlation: same offsets in both */
    size_t n = kind == CUPTI_ACTIVITY_KIND_MEMCPY ? MC_MEMCPY_SIZE : MC_MEMSET_SIZE;
    return avail >= n && m->correlationId && times_ok(m->start, m->end) ? n : 0;
  }
  case CUPTI_ACTIVITY_KIND_RUNTIME:
  case CUPTI_ACTIVITY_KIND_DRIVER: {
    const CUpti_ActivityAPI *a = (const void *)p;
    return avail >= sizeof *a && a->correlationId && times_ok(a->start, a->end) ? sizeof *a : 0;
  }
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
    const CUpti_ActivityExternalCorrelation *x = (const void *)p;
    return avail >= sizeof *x && x->correlationId && x->externalKind >= CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN &&
                   x->externalKind <= CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2
               ? sizeof *x
               : 0;
  }
  default: return 0;
  }
}
_Static_assert(offsetof(CUpti_ActivityMemcpy6, bytes) == offsetof(CUpti_ActivityMemset4, bytes) &&
                   offsetof(CUpti_ActivityMemcpy6, start) == offsetof(CUpti_ActivityMemset4, start) &&
                   offsetof(CUpti_ActivityMemcpy6, correlationId) == offsetof(CUpti_ActivityMemset4, correlationId),
               "memcpy and memset prefixes differ");

/* MCPTI 3.8's iterator can return a stale pointer after external-correlation
 * records (design.md §9), so the buffer is walked here: record by record at the
 * library's sizes, and on a malformed candidate 8 bytes on, to the next plausible
 * record (counted). A pure function of the bytes (fuzz/fuzz_mcpti.c): each
 * well-formed record goes to visit with its size. */
void ft__mc_walk(const uint8_t *buf, size_t valid, void (*visit)(void *ctx, const uint8_t *rec, size_t size), void *ctx,
                 uint64_t *resyncs, uint64_t *skipped_bytes) {
  size_t off = 0, lost_from = SIZE_MAX;
  while (off + 8 <= valid) {
    size_t n = ft__mc_record_size(buf + off, valid - off);
    if (!n) {
      if (lost_from == SIZE_MAX) lost_from = off, ++*resyncs;
      off += 8;
      continue;
    }
    if (lost_from != SIZE_MAX) *skipped_bytes += off - lost_from, lost_from = SIZE_MAX;
    visit(ctx, buf + off, n);
    off += (n + 7) & ~(size_t)7;
  }
  if (lost_from != SIZE_MAX) *skipped_bytes += valid - lost_from;
}
