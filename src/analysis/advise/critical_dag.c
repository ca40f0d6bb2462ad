/* The critical path's generic parts: a sort of nearly sorted keys, and networkx's dag_longest_path over a graph's
 * edges bucketed by tail (no sort). */
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"

static int cmp_tkey(const void *x, const void *y) { return ft__tkey_lt(x, y) ? -1 : ft__tkey_lt(y, x) ? 1 : 0; }

/* (advise_internal.h) */
void ft__sort_nearly(ft__tkey *k, size_t n) {
  size_t budget = 8 * n + 64;
  for (size_t i = 1; i < n; i++) {
    ft__tkey x = k[i];
    size_t j = i;
    while (j && ft__tkey_lt(&x, &k[j - 1])) {
      k[j] = k[j - 1];
      j--;
      if (!--budget) { /* far from sorted: k is still a permutation */
        k[j] = x;
        qsort(k, n, sizeof *k, cmp_tkey);
        return;
      }
    }
    k[j] = x;
  }
}

#define ROOM(d, field, need) ft__advise_grow((void **)&(d)->field, &(d)->cap_##field, (need) + 1, sizeof *(d)->field)

/* Of a tail's edges (out_v/out_w [a, b), in the order they were added), the last to
 * each head, moved to [o, ...); returns the new end. */
typedef struct vseq {
  uint32_t v, seq;
} vseq;
static int cmp_vseq(const void *x, const void *y) {
  const vseq *a = x, *b = y;
  if (a->v != b->v) return a->v < b->v ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}
static size_t dedup_bucket(ft__dag *d, size_t a, size_t b, size_t o, bool *oom) {
  uint32_t *v = d->out_v;
  int64_t *w = d->out_w;
  if (b - a <= 16) { /* a node has few edges out: a pairwise look is cheapest */
    for (size_t j = a; j < b; j++) {
      bool later = false;
      for (size_t k = j + 1; k < b && !later; k++) later = v[k] == v[j];
      if (!later) v[o] = v[j], w[o++] = w[j];
    }
    return o;
  }
  vseq *t = malloc((b - a) * sizeof *t);
  int64_t *tw = malloc((b - a) * sizeof *tw);
  if (!t || !tw) {
    free(t);
    free(tw);
    *oom = true;
    return o;
  }
  for (size_t j = a; j < b; j++) t[j - a] = (vseq){v[j], (uint32_t)(j - a)}, tw[j - a] = w[j];
  qsort(t, b - a, sizeof *t, cmp_vseq);
  for (size_t j = 0; j < b - a; j++)
    if (j + 1 == b - a || t[j + 1].v != t[j].v) v[o] = t[j].v, w[o++] = tw[t[j].seq];
  free(t);
  free(tw);
  return o;
}

/* (advise_internal.h) */
uint64_t ft__dag_longest(ft__dag *d, const ft__dag_edge *e, size_t ne, size_t nn, bool *oom) {
  if (!ROOM(d, first, nn + 1) || !ROOM(d, indeg, nn) || !ROOM(d, order, nn) || !ROOM(d, dist, nn) ||
      !ROOM(d, out_v, ne) || !ROOM(d, out_w, ne)) {
    *oom = true;
    return 0;
  }
  size_t *first = d->first;
  uint32_t *indeg = d->indeg, *order = d->order;
  int64_t *dist = d->dist;
  /* a stable counting sort by tail: first[u + 1] counts u's edges, then is u's next place, then its end */
  memset(first, 0, (nn + 2) * sizeof *first);
  for (size_t i = 0; i < ne; i++) first[e[i].u + 2]++;
  for (size_t i = 0; i < nn; i++) first[i + 2] += first[i + 1];
  for (size_t i = 0; i < ne; i++) {
    size_t k = first[e[i].u + 1]++;
    d->out_v[k] = e[i].v;
    d->out_w[k] = e[i].w;
  }
  size_t o = 0;
  for (size_t u = 0; u < nn; u++) { /* [first[u], first[u + 1]): u's edges; then those kept */
    size_t a = first[u], b = first[u + 1];
    first[u] = o;
    o = dedup_bucket(d, a, b, o, oom);
  }
  first[nn] = o;
  if (*oom) return 0;
  memset(indeg, 0, nn * sizeof *indeg);
  memset(dist, 0, nn * sizeof *dist);
  for (size_t i = 0; i < o; i++) indeg[d->out_v[i]]++;
  uint64_t best = 0;
  size_t head = 0, tail = 0;
  for (uint32_t i = 0; i < nn; i++)
    if (!indeg[i]) order[tail++] = i;
  while (head < tail) {
    uint32_t u = order[head++];
    if (dist[u] < 0) dist[u] = 0;
    if ((uint64_t)dist[u] > best) best = (uint64_t)dist[u];
    for (size_t j = first[u]; j < first[u + 1]; j++) {
      uint32_t v = d->out_v[j];
      int64_t l = dist[u] + d->out_w[j];
      if (l > dist[v]) dist[v] = l;
      if (!--indeg[v]) order[tail++] = v;
    }
  }
  return tail == nn ? best : 0; /* a cycle: HTA's validation fails too */
}

/* (advise_internal.h) */
void ft__dag_free(ft__dag *d) {
  free(d->first);
  free(d->indeg);
  free(d->order);
  free(d->dist);
  free(d->out_v);
  free(d->out_w);
  memset(d, 0, sizeof *d);
}
