/* Unit tests: interning, chunked arrays, the u64 map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static void test_intern_dedups(void **state) {
  (void)state;
  ft__strtab in;
  ft__intern_init(&in);
  uint32_t a, b, c, d;
  assert_int_equal(ft__intern(&in, "kernel", 6, &a), FT_OK);
  assert_int_equal(ft__intern(&in, "memcpy", 6, &b), FT_OK);
  assert_int_equal(ft__intern(&in, "kernel", 6, &c), FT_OK);
  assert_int_equal(ft__intern(&in, "kern", 4, &d), FT_OK);
  assert_int_equal(a, c);
  assert_int_not_equal(a, b);
  assert_int_not_equal(a, d);
  assert_string_equal(ft__intern_str(&in, d), "kern");
  /* many distinct strings survive rehashing and stay findable */
  char buf[32];
  for (int i = 0; i < 20000; i++) {
    snprintf(buf, sizeof buf, "name-%d", i);
    uint32_t id;
    assert_int_equal(ft__intern(&in, buf, strlen(buf), &id), FT_OK);
    assert_int_equal(id, (uint32_t)i + 3);
  }
  for (int i = 0; i < 20000; i += 997) {
    snprintf(buf, sizeof buf, "name-%d", i);
    uint32_t id;
    assert_int_equal(ft__intern(&in, buf, strlen(buf), &id), FT_OK);
    assert_int_equal(id, (uint32_t)i + 3);
    assert_string_equal(ft__intern_str(&in, id), buf);
  }
  assert_int_equal(in.n, 20003);
  ft__intern_free(&in);
}

static void test_vec_stable_and_zeroed(void **state) {
  (void)state;
  ft__vec v;
  ft__vec_init(&v, sizeof(uint64_t), 4); /* 16 per chunk */
  uint64_t *first = ft__vec_push(&v);
  *first = 42;
  for (uint64_t i = 1; i < 1000; i++) {
    uint64_t *p = ft__vec_push(&v);
    assert_int_equal(*p, 0);
    *p = i * 3;
  }
  assert_ptr_equal(ft__vec_at(&v, 0), first); /* never moved */
  assert_int_equal(*first, 42);
  assert_int_equal(*(uint64_t *)ft__vec_at(&v, 999), 2997);
  assert_int_equal(v.len, 1000);
  ft__vec_free(&v);
}

/* Chunks grow from 4 elements to 1 << shift (docs/guarantees.md: a small table costs
 * what it holds): every index maps to its own slot, none moves, and a vec of 3
 * elements holds 4, not a whole chunk. */
static void test_vec_small_first(void **state) {
  (void)state;
  for (unsigned shift = 0; shift <= 12; shift++) {
    ft__vec v;
    ft__vec_init(&v, sizeof(uint32_t), shift);
    for (uint32_t i = 0; i < 3; i++) *(uint32_t *)ft__vec_push(&v) = i;
    assert_int_equal(v.cap, shift == 0 ? 3 : 4);
    uint32_t *kept[20000];
    kept[0] = ft__vec_at(&v, 0), kept[1] = ft__vec_at(&v, 1), kept[2] = ft__vec_at(&v, 2);
    for (uint32_t i = 3; i < 20000; i++) {
      kept[i] = ft__vec_push(&v);
      assert_int_equal(*kept[i], 0);
      *kept[i] = i;
    }
    for (uint32_t i = 0; i < 20000; i++) {
      assert_ptr_equal(ft__vec_at(&v, i), kept[i]);
      assert_int_equal(*kept[i], i);
    }
    assert_int_equal(v.len, 20000);
    ft__vec_free(&v);
  }
}

static void test_map(void **state) {
  (void)state;
  ft__map m;
  assert_int_equal(ft__map_init(&m, 2), FT_OK);
  assert_null(ft__map_find(&m, 0));
  for (uint64_t k = 0; k < 5000; k++) *ft__map_upsert(&m, k * 7919) = k + 1;
  assert_int_equal(m.len, 5000);
  for (uint64_t k = 0; k < 5000; k++) {
    uint64_t *v = ft__map_find(&m, k * 7919);
    assert_non_null(v);
    assert_int_equal(*v, k + 1);
  }
  assert_null(ft__map_find(&m, 1));
  ft__map_free(&m);
}

static void test_arena_large_blocks(void **state) {
  (void)state;
  ft__arena a;
  ft__arena_init(&a);
  char *small = ft__arena_alloc(&a, 10);
  char *big = ft__arena_alloc(&a, 200000);
  char *small2 = ft__arena_alloc(&a, 10);
  assert_non_null(small);
  assert_non_null(big);
  memset(big, 7, 200000);
  /* the small allocations share the first chunk: the big block went behind it */
  assert_ptr_equal(small2, small + 16);
  ft__arena_free(&a);
}

/* A list of metadata seen before is stored once; any difference (a value, the
 * order, the length) gets its own, and every event reads back its own list. */
static void test_metadata_lists_shared(void **state) {
  (void)state;
  ft__store st;
  ft__store_init(&st);
  ft_kv a[] = {{"grid", "[1, 1, 1]"}, {"block", "[64, 1, 1]"}};
  ft_kv b[] = {{"grid", "[1, 1, 1]"}, {"block", "[65, 1, 1]"}};
  ft_kv c[] = {{"block", "[64, 1, 1]"}, {"grid", "[1, 1, 1]"}};
  ft_device_event ev = {.kind = FT_EVENT_KERNEL, .name = "k", .metadata = a, .n_metadata = 2};
  assert_int_equal(ft__store_add_device(&st, &ev), FT_OK);
  assert_int_equal(ft__store_add_device(&st, &ev), FT_OK);
  assert_int_equal(st.kvs.len, 2);
  ev.metadata = b;
  assert_int_equal(ft__store_add_device(&st, &ev), FT_OK);
  ev.metadata = c;
  assert_int_equal(ft__store_add_device(&st, &ev), FT_OK);
  ev.n_metadata = 1; /* a prefix of a */
  ev.metadata = a;
  assert_int_equal(ft__store_add_device(&st, &ev), FT_OK);
  assert_int_equal(st.kvs.len, 7);
  const char *want[5][2] = {{"[1, 1, 1]", "[64, 1, 1]"},
                            {"[1, 1, 1]", "[64, 1, 1]"},
                            {"[1, 1, 1]", "[65, 1, 1]"},
                            {"[64, 1, 1]", "[1, 1, 1]"},
                            {"[1, 1, 1]", NULL}};
  for (size_t i = 0; i < 5; i++) {
    const ft__event *e = ft__vec_at(&st.events, i);
    assert_int_equal(e->meta_count, want[i][1] ? 2 : 1);
    for (size_t k = 0; k < e->meta_count; k++) {
      const ft__kvid *kv = ft__vec_at(&st.kvs, e->meta_first + k);
      assert_string_equal(ft__intern_str(&st.values, kv->value), want[i][k]);
    }
  }
  ft__store_free(&st);
}

/* A tracer refills one buffer per record: the list is compared by its text, never
 * by where it lies; API calls and device events interleave without mixing lists. */
static void test_metadata_buffer_reused(void **state) {
  (void)state;
  ft__store st;
  ft__store_init(&st);
  char grid[16] = "[1, 1, 1]";
  ft_kv k[] = {{"grid", grid}};
  ft_kv api[] = {{"cbid", "211"}};
  ft_device_event kev = {.kind = FT_EVENT_KERNEL, .name = "k", .metadata = k, .n_metadata = 1};
  ft_device_event aev = {.kind = FT_EVENT_RUNTIME, .name = "cudaLaunchKernel", .metadata = api, .n_metadata = 1};
  assert_int_equal(ft__store_add_device(&st, &kev), FT_OK); /* [1, 1, 1] */
  assert_int_equal(ft__store_add_device(&st, &aev), FT_OK);
  strcpy(grid, "[2, 1, 1]");
  assert_int_equal(ft__store_add_device(&st, &kev), FT_OK); /* same place, new text */
  assert_int_equal(ft__store_add_device(&st, &aev), FT_OK);
  assert_int_equal(ft__store_add_device(&st, &kev), FT_OK); /* [2, 1, 1] again */
  strcpy(grid, "[1, 1, 1]");
  assert_int_equal(ft__store_add_device(&st, &kev), FT_OK); /* the first list again */
  assert_int_equal(st.kvs.len, 3);
  const char *want[] = {"[1, 1, 1]", "211", "[2, 1, 1]", "211", "[2, 1, 1]", "[1, 1, 1]"};
  for (size_t i = 0; i < 6; i++) {
    const ft__event *e = ft__vec_at(&st.events, i);
    assert_int_equal(e->meta_count, 1);
    const ft__kvid *kv = ft__vec_at(&st.kvs, e->meta_first);
    assert_string_equal(ft__intern_str(&st.values, kv->value), want[i]);
  }
  ft__store_free(&st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_intern_dedups),          cmocka_unit_test(test_vec_stable_and_zeroed),
      cmocka_unit_test(test_vec_small_first),        cmocka_unit_test(test_map),
      cmocka_unit_test(test_arena_large_blocks),     cmocka_unit_test(test_metadata_lists_shared),
      cmocka_unit_test(test_metadata_buffer_reused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
