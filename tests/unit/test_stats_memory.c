/* The device-memory accumulator (stats_memory.c, issue 51): exact peaks and live bytes, the live-address bound,
 * deletions from its table, hostile values counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stats_memory.h"

static ft__ev mev(int64_t ts, uint64_t addr, int64_t bytes, int32_t dev) {
  ft__ev e;
  memset(&e, 0, sizeof e);
  e.sec = FT__SEC_MEMORY;
  e.ts = ts;
  e.mem_addr = addr;
  e.mem_bytes = bytes;
  e.mem_device = dev;
  e.mem_device_type = 1;
  e.mem_total_alloc = e.mem_total_res = -1;
  return e;
}

static void finish(ft__memacc *a, ft_stat_mem *out) {
  ft__strtab names;
  ft__intern_init(&names);
  assert_true(ft__memacc_finish(a, &names, out));
  ft__intern_free(&names);
}

/* Past the live limit (FT_MEM_MAX_LIVE; 1000 here) an allocation is counted, not tracked; totals stay exact. */
static void test_live_bound(void **state) {
  (void)state;
  enum { LIMIT = 1000 };
  ft__memacc *a = ft__memacc_new();
  assert_non_null(a);
  ft__memacc_set_live_limit(a, LIMIT);
  for (uint64_t i = 0; i < LIMIT + 5; i++) {
    ft__ev e = mev((int64_t)i, 0x1000 + 16 * i, (int64_t)(i % 100) + 1, 0);
    assert_true(ft__memacc_event(a, &e));
  }
  ft__ev f = mev(1 << 30, 0x1000 + 16ull * (LIMIT + 2), -3, 0); /* untracked: unmatched */
  assert_true(ft__memacc_event(a, &f));
  ft_stat_mem m;
  finish(a, &m);
  assert_int_equal(m.over_bound, 5);
  assert_int_equal(m.unmatched, 1);
  assert_int_equal(m.n_devs, 1);
  assert_int_equal(m.devs[0].alloc_sizes.n, LIMIT + 5);
  assert_int_equal(m.devs[0].live_n, LIMIT);
  assert_int_equal(m.devs[0].n_live, FT_MEM_KEEP_LIVE < LIMIT ? FT_MEM_KEEP_LIVE : LIMIT);
  assert_int_equal(m.devs[0].live[0].bytes, 100);
  ft_stat_mem_free(&m);
  ft__memacc_free(a);
}

/* Events given out of time order (torch writes them by its own index): applied by time, a free meets the
 * allocation before it; ties keep the order given. */
static void test_time_order(void **state) {
  (void)state;
  ft__memacc *a = ft__memacc_new();
  const struct {
    int64_t ts, bytes, total;
  } ev[] = {{300, 64, 64}, {100, 64, 64}, {200, -64, 0}, {50, -64, 0}, {300, -64, 0}, {400, 8, 8}};
  for (size_t i = 0; i < sizeof ev / sizeof *ev; i++) { /* one address: 50 free (none), 100 alloc, 200 free, ... */
    ft__ev e = mev(ev[i].ts, 0xA0, ev[i].bytes, 0);
    e.mem_total_alloc = ev[i].total;
    assert_true(ft__memacc_event(a, &e));
  }
  ft_stat_mem m;
  finish(a, &m);
  assert_int_equal(m.unmatched, 1);      /* the free at 50 */
  assert_int_equal(m.devs[0].live_n, 1); /* 400's 8 bytes; 300's 64 freed at 300 (after it: given later) */
  assert_int_equal(m.devs[0].live_bytes, 8);
  assert_int_equal(m.devs[0].peak_alloc.bytes, 64);
  assert_int_equal(m.devs[0].peak_alloc.ts, 100); /* first reached by time, though given second */
  assert_int_equal(m.devs[0].end_alloc, 8);
  ft_stat_mem_free(&m);
  ft__memacc_free(a);
}

/* Frees in a shuffled order leave exactly the others live (the table's backward-shift deletion),
 * the running peak is the largest running sum, two devices apart. */
static void test_frees_and_peaks(void **state) {
  (void)state;
  enum { N = 20000 };
  ft__memacc *a = ft__memacc_new();
  int64_t total = 0, peak = 0, left = 0;
  for (int i = 0; i < N; i++) {
    ft__ev e = mev(i, 0x10000ull * (uint64_t)(i + 1), i + 1, 3);
    assert_true(ft__memacc_event(a, &e));
    total += i + 1;
    peak = total > peak ? total : peak;
  }
  int *order = malloc(N * sizeof *order);
  for (int i = 0; i < N; i++) order[i] = i;
  srand(51);
  for (int i = N - 1; i > 0; i--) {
    int j = rand() % (i + 1), t = order[i];
    order[i] = order[j], order[j] = t;
  }
  for (int k = 0; k < N; k++) {
    int i = order[k];
    if (i % 3 == 0) {
      left += i + 1;
      continue;
    }
    ft__ev e = mev(N + k, 0x10000ull * (uint64_t)(i + 1), -(i + 1), 3);
    assert_true(ft__memacc_event(a, &e));
  }
  ft__ev other = mev(5, 0x10000, 7, 4); /* another device, the same address */
  assert_true(ft__memacc_event(a, &other));
  free(order);
  ft_stat_mem m;
  finish(a, &m);
  assert_int_equal(m.n_devs, 2);
  assert_int_equal(m.unmatched, 0);
  const ft_stat_mem_dev *d = &m.devs[0];
  assert_int_equal(d->device, 3);
  assert_int_equal(d->peak_alloc.bytes, peak);
  assert_int_equal(d->peak_alloc.ts, N - 1);
  assert_int_equal(d->live_bytes, left);
  assert_int_equal(d->live_n, (N + 2) / 3);
  assert_int_equal(d->end_alloc, left);
  assert_int_equal(d->live[0].bytes, N - 1); /* i = N - 2 is a multiple of 3: kept */
  for (size_t k = 1; k < d->n_live; k++) assert_true(d->live[k].bytes < d->live[k - 1].bytes);
  assert_int_equal(m.devs[1].device, 4);
  assert_int_equal(m.devs[1].live_n, 1);
  ft_stat_mem_free(&m);
  ft__memacc_free(a);
}

/* An alloc of negative bytes, a free of positive, INT64_MIN: skipped and counted; devices past the cap too. */
static void test_hostile(void **state) {
  (void)state;
  ft__memacc *a = ft__memacc_new();
  ft__ev e = mev(1, 1, -5, 0);
  e.mem_op = FT__MOP_ALLOC;
  assert_true(ft__memacc_event(a, &e));
  e = mev(2, 1, 5, 0);
  e.mem_op = FT__MOP_FREE;
  assert_true(ft__memacc_event(a, &e));
  e = mev(3, 1, INT64_MIN, 0);
  assert_true(ft__memacc_event(a, &e));
  for (int d = 0; d < FT_STATS_MAX_DEVICES + 3; d++) {
    e = mev(4, 1, INT64_MAX, d); /* saturating sums: no overflow */
    assert_true(ft__memacc_event(a, &e));
    assert_true(ft__memacc_event(a, &e));
  }
  ft_stat_mem m;
  finish(a, &m);
  assert_int_equal(m.bad_sign, 3);
  assert_int_equal(m.over_devices, 6);
  assert_int_equal(m.n_devs, FT_STATS_MAX_DEVICES);
  assert_int_equal(m.devs[0].peak_alloc.bytes, INT64_MAX);
  assert_int_equal(m.devs[0].end_alloc, INT64_MAX);
  ft_stat_mem_free(&m);
  ft__memacc_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_live_bound),
      cmocka_unit_test(test_time_order),
      cmocka_unit_test(test_frees_and_peaks),
      cmocka_unit_test(test_hostile),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
