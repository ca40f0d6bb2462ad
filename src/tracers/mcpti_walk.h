/* MetaX MCPTI's activity-buffer walker: a pure function of the buffer's bytes. */
#ifndef FLAGTRACE_MCPTI_WALK_H
#define FLAGTRACE_MCPTI_WALK_H

#include <stddef.h>
#include <stdint.h>

/* The size of a well-formed MCPTI record at p (avail bytes readable), or 0 when the
 * candidate is malformed. */
size_t ft__mc_record_size(const uint8_t *p, size_t avail);

/* Walks an MCPTI buffer record by record at the library's sizes, resynchronizing
 * past malformed stretches (counted in *resyncs and *skipped_bytes); each
 * well-formed record goes to visit with its size. */
void ft__mc_walk(const uint8_t *buf, size_t valid, void (*visit)(void *ctx, const uint8_t *rec, size_t size), void *ctx,
                 uint64_t *resyncs, uint64_t *skipped_bytes);

#endif
