/* A trace's source identity, which a partial names: the digest of its bytes as read, and the merge's check that no
 * trace comes twice (issue 49). */
#define _GNU_SOURCE
#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_internal.h"

/* SipHash-2-4 (keyed_hash.h's round) under a fixed key (the reference one, 00 01 .. 0f): the digest must be
 * the same in every process that writes a partial of the trace, which the per-process
 * keyed_hash.h key is not. It tells accidents apart (a trace given twice, a copy), not
 * a crafted partial: a partial states its digest, whatever the trace held. */
#define K0 0x0706050403020100ull
#define K1 0x0f0e0d0c0b0a0908ull

static void round24(uint64_t v[4], uint64_t m) {
  v[3] ^= m;
  FT__SIPROUND(v[0], v[1], v[2], v[3]);
  FT__SIPROUND(v[0], v[1], v[2], v[3]);
  v[0] ^= m;
}

void ft__digest_init(ft__digest *d) {
  memset(d, 0, sizeof *d);
  d->v[0] = K0 ^ 0x736f6d6570736575ull, d->v[1] = K1 ^ 0x646f72616e646f6dull;
  d->v[2] = K0 ^ 0x6c7967656e657261ull, d->v[3] = K1 ^ 0x7465646279746573ull;
}

void ft__digest_add(ft__digest *d, const void *data, size_t n) {
  const unsigned char *p = data;
  d->len += n;
  while (n && d->n_tail) { /* the bytes left from the last call complete a word first */
    d->tail |= (uint64_t)*p++ << (8 * d->n_tail);
    n--;
    if (++d->n_tail == 8) round24(d->v, d->tail), d->tail = 0, d->n_tail = 0;
  }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t m;
    memcpy(&m, p, 8); /* one load; SipHash's words are little-endian */
    round24(d->v, le64toh(m));
  }
  for (; n; n--) d->tail |= (uint64_t)*p++ << (8 * d->n_tail++);
}

uint64_t ft__digest_end(const ft__digest *d) {
  uint64_t v[4] = {d->v[0], d->v[1], d->v[2], d->v[3]};
  round24(v, d->tail | (uint64_t)(d->len & 0xff) << 56);
  v[2] ^= 0xff;
  for (int i = 0; i < 4; i++) FT__SIPROUND(v[0], v[1], v[2], v[3]);
  return v[0] ^ v[1] ^ v[2] ^ v[3];
}

typedef struct src_ref {
  uint64_t digest, size;
  size_t file, partial;
} src_ref;

static int by_source(const void *a, const void *b) {
  const src_ref *x = a, *y = b;
  if (x->digest != y->digest) return (x->digest > y->digest) - (x->digest < y->digest);
  if (x->size != y->size) return (x->size > y->size) - (x->size < y->size);
  return (x->file > y->file) - (x->file < y->file);
}

ft_status ft__sources_distinct(const ft_stat_job *job, const size_t *partial_of, const char *const *paths, char *err,
                               size_t errlen) {
  src_ref *refs = malloc((job->n_files ? job->n_files : 1) * sizeof *refs);
  if (!refs) return snprintf(err, errlen, "out of memory"), FT_ENOMEM;
  for (size_t f = 0; f < job->n_files; f++)
    refs[f] = (src_ref){job->files[f].source.digest, job->files[f].source.size, f, partial_of[f]};
  /* sorted, so that 10 000 partials' files cost no 10 000^2 compares */
  qsort(refs, job->n_files, sizeof *refs, by_source);
  size_t later = SIZE_MAX, earlier = 0;
  for (size_t i = 0, g = 0; i < job->n_files; i++) {
    if (i && (refs[i].digest != refs[g].digest || refs[i].size != refs[g].size)) g = i; /* a group's first */
    /* copies inside one partial were one stats run's files, which stats takes; across
     * partials, the first repeat in argument order is named, with its first file */
    if (refs[i].partial != refs[g].partial && refs[i].file < later) later = refs[i].file, earlier = refs[g].file;
  }
  free(refs);
  if (later == SIZE_MAX) return FT_OK;
  const ft_stat_file *a = &job->files[earlier], *b = &job->files[later];
  bool same_file = a->source.regular && b->source.regular && a->source.dev == b->source.dev &&
                   a->source.ino == b->source.ino && a->source.mtime_ns == b->source.mtime_ns;
  snprintf(err, errlen,
           "%s: its trace %s is %s %s's %s (%" PRIu64 " bytes, digest %016" PRIx64
           "): merged, its events would be counted twice",
           paths[partial_of[later]], b->path, same_file ? "the same file as" : "a copy of", paths[partial_of[earlier]],
           a->path, b->source.size, b->source.digest);
  return FT_EINVAL;
}
