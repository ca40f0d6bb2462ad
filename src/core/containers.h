/* The core's containers: arena, string interning, chunked vectors, the u64 map. */
#ifndef FLAGTRACE_CORE_CONTAINERS_H
#define FLAGTRACE_CORE_CONTAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flagtrace/flagtrace.h"

/* ---- memory (store.c) ---- */

/* Bump allocator in 64 KiB chunks: events never malloc one by one. */
typedef struct ft__arena_chunk ft__arena_chunk;
typedef struct ft__arena {
  ft__arena_chunk *head;
  size_t bytes; /* total bytes handed out, for accounting */
} ft__arena;

void ft__arena_init(ft__arena *a);
void *ft__arena_alloc(ft__arena *a, size_t size);
void ft__arena_free(ft__arena *a);

/* String interning: equal strings get equal ids; text lives in the arena. */
typedef struct ft__strtab {
  ft__arena arena;
  const char **strs;
  uint32_t *lens;
  uint32_t n, cap;
  uint32_t *table; /* id + 1, 0 = empty */
  uint32_t tcap;   /* power of two */
} ft__strtab;

void ft__intern_init(ft__strtab *in);
void ft__intern_free(ft__strtab *in);
ft_status ft__intern(ft__strtab *in, const char *s, size_t len, uint32_t *id);
static inline const char *ft__intern_str(const ft__strtab *in, uint32_t id) { return in->strs[id]; }
static inline uint32_t ft__intern_len(const ft__strtab *in, uint32_t id) { return in->lens[id]; }

/* A growable array stored in chunks: appending never moves elements and never
 * mallocs per element. The first chunks grow geometrically (FT__VEC_FIRST
 * elements, then as many again, doubling up to 1 << shift, then that size), so a
 * small array costs what it holds, not a whole chunk: many small per-file tables
 * (a job of 10 000 ranks) stay small. */
#define FT__VEC_FIRST_SHIFT 2u
typedef struct ft__vec {
  char **chunks;
  size_t n_chunks, cap_chunks;
  size_t len, cap; /* cap: elements the chunks hold */
  size_t elem;
  unsigned shift; /* elements per chunk once grown = 1 << shift */
  unsigned first; /* the first chunk's shift: min(FT__VEC_FIRST_SHIFT, shift) */
} ft__vec;

void ft__vec_init(ft__vec *v, size_t elem, unsigned shift);
void ft__vec_free(ft__vec *v);
void *ft__vec_push(ft__vec *v); /* zeroed slot, or NULL on ENOMEM */
/* fn(ctx, element) on each element in order, each chunk freed once read (moving a vec's
 * elements elsewhere never holds both whole); v is left empty. False when fn was. */
bool ft__vec_drain(ft__vec *v, bool (*fn)(void *ctx, const void *elem), void *ctx);
static inline void *ft__vec_at(const ft__vec *v, size_t i) {
  size_t c, off;
  if (i >> v->shift) { /* full chunks: those below 1 << shift hold 1 << shift elements in all */
    c = v->shift - v->first + (i >> v->shift);
    off = i & (((size_t)1 << v->shift) - 1);
  } else if (!(i >> v->first)) {
    c = 0, off = i;
  } else { /* chunk k >= 1 holds [1 << (first + k - 1), 1 << (first + k)) */
    unsigned hb = 63u - (unsigned)__builtin_clzll((unsigned long long)i);
    c = hb - v->first + 1, off = i - ((size_t)1 << hb);
  }
  return v->chunks[c] + off * v->elem;
}

/* Open-addressing map from uint64 to uint64. */
typedef struct ft__map {
  uint64_t *keys;
  uint64_t *vals;
  uint8_t *used;
  size_t cap, len; /* cap is a power of two */
} ft__map;

ft_status ft__map_init(ft__map *m, size_t expected);
void ft__map_free(ft__map *m);
/* Returns a pointer to the value for key, inserting 0 if absent; NULL on ENOMEM. */
uint64_t *ft__map_upsert(ft__map *m, uint64_t key);
uint64_t *ft__map_find(const ft__map *m, uint64_t key);

#endif
