/* diff's pairing: rows of the two sides matched by a text key (name, or name and a second text). */
#ifndef FLAGTRACE_ANALYSIS_DIFF_PAIR_H
#define FLAGTRACE_ANALYSIS_DIFF_PAIR_H

#include "stats.h"

typedef struct ft__pair {
  const ft_stat_row *r[2]; /* A's and B's row, NULL on the side without one */
  uint32_t key;            /* its key in the pairing's names */
  double v[2];             /* the sort's value per side (device time, bytes...), scaled */
} ft__pair;

/* Memory grows with the distinct keys of both sides. */
typedef struct ft__pairing {
  ft__strtab keys;
  ft__map index; /* key id -> index + 1 */
  ft__pair *p;
  size_t n, cap;
} ft__pairing;

bool ft__pairing_init(ft__pairing *pg);
void ft__pairing_free(ft__pairing *pg);
/* The pair of key k1 (and k2 when not NULL: "k1\x1fk2"), made when new; NULL without memory. */
ft__pair *ft__pairing_get(ft__pairing *pg, const char *k1, size_t l1, const char *k2, size_t l2);
/* The pair of a key, or NULL when no side has it. */
ft__pair *ft__pairing_find(ft__pairing *pg, const char *k1, size_t l1, const char *k2, size_t l2);

#endif
