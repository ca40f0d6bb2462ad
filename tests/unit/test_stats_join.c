/* The stats reader's keyed tables (External id join, devices): crafted ids cost what sequential ones cost, by probe
 * count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_internal.h"

/* The finalizer the join used before (invertible, unseeded), and its inverse:
 * ids made from the inverse all land in one slot of any table up to 2^20. */
static uint64_t old_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}
static uint64_t old_unmix(uint64_t x) {
  uint64_t c = 0xff51afd7ed558ccdull, inv = c; /* Newton's iteration for c^-1 mod 2^64 */
  for (int i = 0; i < 6; i++) inv *= 2 - c * inv;
  x ^= x >> 33; /* its own inverse: 33 + 33 > 64 */
  x *= inv;
  x ^= x >> 33;
  return x;
}

enum { N = 160000 };

/* n ids that the old finalizer sent to one slot, each below 2^63 (a JSON
 * External id the reader takes). */
static void crafted(uint64_t *ids, size_t n) {
  for (uint64_t i = 1, k = 0; k < n; i++) {
    uint64_t id = old_unmix(i << 20);
    if (id >> 63) continue;
    assert_int_equal(old_mix(id) & 0xFFFFF, 0);
    ids[k++] = id;
  }
}

/* Probes per insert of ids into a fresh table. */
static double probes_per_insert(const uint64_t *ids, size_t n) {
  ft_stat_join j = {0};
  for (size_t i = 0; i < n; i++) {
    uint64_t *v = ft__join_upsert(&j, ids[i]);
    assert_non_null(v);
    assert_int_equal(*v, 0); /* distinct ids: each is new */
    *v = i + 1;
  }
  for (size_t i = 0; i < n; i += 997) assert_int_equal(*ft__join_find(&j, ids[i]), i + 1);
  assert_int_equal(j.len, n);
  double p = (double)j.probes / (double)n;
  ft__join_free(&j);
  return p;
}

static void test_crafted_ids_cost_what_sequential_ones_cost(void **state) {
  (void)state;
  ft__hash_key_init();
  uint64_t *ids = malloc(N * sizeof *ids), *seq = malloc(N * sizeof *seq);
  crafted(ids, N);
  for (size_t i = 0; i < N; i++) seq[i] = i + 1;
  double c = probes_per_insert(ids, N), s = probes_per_insert(seq, N);
  print_message("probes per insert: crafted %.2f, sequential %.2f (the old hash: about %d for the crafted)\n", c, s,
                N / 2);
  /* at most 3/4 full, linear probing with a hash the ids cannot steer: a few
   * probes each; one slot for all, as before, would be N / 2 */
  assert_true(c < 8 && s < 8);
  assert_true(c < 1.5 * s && s < 1.5 * c);
  free(ids);
  free(seq);
}

/* The same through the reader: ops and kernels sharing crafted External ids. */
static double reader_probes(const uint64_t *ids, size_t n, ft_stats *st) {
  size_t cap = n * 320 + 64, len = 0; /* an id pair takes at most 300 bytes */
  char *doc = malloc(cap);
  len += (size_t)snprintf(doc + len, cap - len, "{\"traceEvents\":[");
  for (size_t i = 0; i < n; i++)
    len +=
        (size_t)snprintf(doc + len, cap - len,
                         "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"ts\":%zu,\"dur\":5,\"args\":{\"External "
                         "id\":%llu}},{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":%zu,\"dur\":2,\"pid\":0,"
                         "\"args\":{\"External id\":%llu}}",
                         i ? "," : "", 10 * i, (unsigned long long)ids[i], 10 * i + 1, (unsigned long long)ids[i]);
  len += (size_t)snprintf(doc + len, cap - len, "]}");
  char err[256];
  assert_int_equal(ft_stats_init(st), FT_OK);
  assert_int_equal(ft_stats_read_mem(st, doc, len, err, sizeof err), FT_OK);
  ft_stats_finish(st);
  free(doc);
  return (double)st->ext_op.probes / (double)(2 * n); /* two lookups an id: its op's, its kernel's */
}

static void test_reader_join_is_not_steered(void **state) {
  (void)state;
  size_t n = 40000;
  uint64_t *ids = malloc(n * sizeof *ids), *seq = malloc(n * sizeof *seq);
  crafted(ids, n);
  for (size_t i = 0; i < n; i++) seq[i] = i + 1;
  ft_stats a, b;
  double c = reader_probes(ids, n, &a), s = reader_probes(seq, n, &b);
  print_message("reader: probes per lookup: crafted %.2f, sequential %.2f\n", c, s);
  assert_true(c < 8 && c < 1.5 * s);
  /* and every kernel's time went to its op */
  const ft_stat_row *op = ft__vec_at(&a.rows[FT_STAT_OPS], 0);
  assert_int_equal(op->self_ns, 2000 * n);
  assert_int_equal(a.attributed_ns, a.device_ns);
  ft_stats_free(&a);
  ft_stats_free(&b);
  free(ids);
  free(seq);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crafted_ids_cost_what_sequential_ones_cost),
      cmocka_unit_test(test_reader_join_is_not_steered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
