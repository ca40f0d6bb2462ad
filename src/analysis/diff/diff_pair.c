/* diff's pairing: the rows of two sides matched by a text key in one table of their own. */
#include <stdlib.h>
#include <string.h>

#include "diff_pair.h"

bool ft__pairing_init(ft__pairing *pg) {
  memset(pg, 0, sizeof *pg);
  ft__intern_init(&pg->keys);
  return !ft__map_init(&pg->index, 64);
}

void ft__pairing_free(ft__pairing *pg) {
  ft__intern_free(&pg->keys);
  ft__map_free(&pg->index);
  free(pg->p);
  memset(pg, 0, sizeof *pg);
}

/* The key's id in pg->keys (interned: a lookup adds the text, not a pair). */
static bool key_id(ft__pairing *pg, const char *k1, size_t l1, const char *k2, size_t l2, uint32_t *id) {
  if (!k2) return !ft__intern(&pg->keys, k1, l1, id);
  char small[512], *buf = l1 + l2 + 1 <= sizeof small ? small : malloc(l1 + l2 + 1);
  if (!buf) return false;
  memcpy(buf, k1, l1);
  buf[l1] = '\x1f'; /* no name holds it: the two texts cannot run together */
  memcpy(buf + l1 + 1, k2, l2);
  bool ok = !ft__intern(&pg->keys, buf, l1 + l2 + 1, id);
  if (buf != small) free(buf);
  return ok;
}

ft__pair *ft__pairing_get(ft__pairing *pg, const char *k1, size_t l1, const char *k2, size_t l2) {
  uint32_t id;
  if (!key_id(pg, k1, l1, k2, l2, &id)) return NULL;
  uint64_t *slot = ft__map_upsert(&pg->index, id);
  if (!slot) return NULL;
  if (!*slot) {
    if (pg->n == pg->cap) {
      size_t cap = pg->cap ? 2 * pg->cap : 64;
      ft__pair *p = realloc(pg->p, cap * sizeof *p);
      if (!p) return NULL;
      pg->p = p;
      pg->cap = cap;
    }
    pg->p[pg->n] = (ft__pair){{NULL, NULL}, id, {0, 0}};
    *slot = ++pg->n;
  }
  return &pg->p[*slot - 1];
}

ft__pair *ft__pairing_find(ft__pairing *pg, const char *k1, size_t l1, const char *k2, size_t l2) {
  uint32_t id;
  if (!key_id(pg, k1, l1, k2, l2, &id)) return NULL;
  uint64_t *slot = ft__map_find(&pg->index, id);
  return slot && *slot ? &pg->p[*slot - 1] : NULL;
}
