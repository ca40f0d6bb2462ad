/* Unit tests: the tracer base every vendor file embeds (claim, common ops, emit, held buffers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "tracer_support.h"

static const ft_tracer_ops ops = {.name = "basetest"};

typedef struct counted {
  int events, externals;
  ft_status answer; /* what the sink returns */
  const char *last_md_key;
  uint32_t last_corr;
  uint64_t last_ext;
} counted;

static ft_status on_event(void *ctx, const ft_device_event *ev) {
  counted *c = ctx;
  c->events++;
  c->last_md_key = ev->n_metadata ? ev->metadata[0].key : NULL;
  return c->answer;
}
static ft_status on_external(void *ctx, uint32_t corr, uint64_t ext) {
  counted *c = ctx;
  c->externals++;
  c->last_corr = corr;
  c->last_ext = ext;
  return c->answer;
}

static void test_one_armed_tracer_at_a_time(void **state) {
  (void)state;
  ft__tracer_base a = {.tracer.ops = &ops}, b = {.tracer.ops = &ops};
  counted c = {0};
  ft_event_sink sink = {.event = on_event, .external_id = on_external, .ctx = &c};
  assert_int_equal(ft__tracer_claim(&a, &sink, 3), FT_EUNAVAILABLE); /* not loaded */
  assert_null(ft__tracer_active());
  a.loaded = b.loaded = true;
  atomic_store(&a.dropped, 7);
  assert_int_equal(ft__tracer_claim(&a, &sink, 3), FT_OK);
  assert_ptr_equal(ft__tracer_active(), &a);
  assert_ptr_equal(a.sink, &sink);
  assert_int_equal(a.kinds, 3);
  assert_int_equal(ft__tracer_dropped(&a.tracer), 0); /* zeroed at each claim */
  assert_int_equal(ft__tracer_claim(&b, &sink, 1), FT_EBUSY);
  assert_string_equal(ft__tracer_last_error(&b.tracer), "another tracer instance is armed");
  assert_ptr_equal(ft__tracer_active(), &a);
  ft__tracer_release(&b); /* not the armed one: changes nothing */
  assert_ptr_equal(ft__tracer_active(), &a);
  a.armed = true;
  ft__tracer_release(&a);
  assert_false(a.armed);
  assert_null(ft__tracer_active());
  assert_int_equal(ft__tracer_claim(&b, &sink, 1), FT_OK);
  ft__tracer_release(&b);
}

static void test_available_says_why(void **state) {
  (void)state;
  ft__tracer_base t = {.tracer.ops = &ops};
  strcpy(t.why, "libx not found");
  const char *why = NULL;
  assert_false(ft__tracer_available(&t.tracer, &why));
  assert_string_equal(why, "libx not found");
  assert_false(ft__tracer_available(&t.tracer, NULL));
  t.loaded = true;
  why = NULL;
  assert_true(ft__tracer_available(&t.tracer, &why));
  assert_null(why);
}

static void test_emit_and_external_reach_the_sink(void **state) {
  (void)state;
  counted c = {0};
  ft_event_sink sink = {.event = on_event, .external_id = on_external, .ctx = &c};
  ft__tracer_base t = {.tracer.ops = &ops, .sink = &sink};
  ft_kv md[1] = {{"grid", "[1, 1, 1]"}};
  ft_device_event ev = {.kind = FT_EVENT_KERNEL, .name = "k"};
  ft__tracer_emit(&t, &ev, md, 1);
  assert_int_equal(c.events, 1);
  assert_string_equal(c.last_md_key, "grid");
  ft__tracer_external(&t, 42, 0); /* 0 is a valid external id */
  assert_int_equal(c.externals, 1);
  assert_int_equal(c.last_corr, 42);
  assert_int_equal(c.last_ext, 0);
  c.answer = FT_ENOMEM; /* lost for memory: warned, never fatal */
  ft__tracer_emit(&t, &ev, NULL, 0);
  ft__tracer_external(&t, 43, 1);
  assert_int_equal(c.events, 2);
  assert_int_equal(c.externals, 2);
}

static void test_held_keep_holds_only_real_buffers(void **state) {
  (void)state;
  assert_int_equal(ft__pool_reserve(2, 4096), 1);
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  ft__held h = {0};
  size_t size;
  uint8_t *b1 = ft__pool_get(&size), *b2 = ft__pool_get(&size);
  ft__held_keep(&h, &mu, b1, 100, "basetest");
  ft__held_keep(&h, &mu, b2, 0, "basetest"); /* empty: straight back to the pool */
  ft__held_keep(&h, &mu, NULL, 0, "basetest");
  assert_int_equal(h.n, 1);
  assert_ptr_equal(h.items[0].buf, b1);
  assert_int_equal(h.items[0].valid, 100);
  ft__held_free(&h);
}

/* First buffers only when larger than the pool's; the request past them marks the
 * start outgrown, and the first ones then go back to the system as they come home. */
static void test_first_buffers(void **state) {
  (void)state;
  assert_int_equal(ft__pool_reserve(2, 8192), 1);
  size_t size, home, lent;
  bool outgrown;
  ft__pool_first(2, 4096); /* not larger than the pool's: off */
  uint8_t *b = ft__pool_get(&size);
  assert_int_equal(size, 8192);
  ft__pool_put(b);
  ft__pool_first(2, 16384);
  uint8_t *f1 = ft__pool_get(&size);
  assert_int_equal(size, 16384);
  uint8_t *f2 = ft__pool_get(&size);
  assert_int_equal(size, 16384);
  memset(f1, 1, 16384); /* writable, whole */
  memset(f2, 2, 16384);
  ft__pool_first_count(&home, &lent, &outgrown);
  assert_int_equal(lent, 2);
  assert_false(outgrown);
  b = ft__pool_get(&size);
  assert_int_equal(size, 8192);
  ft__pool_first_count(&home, &lent, &outgrown);
  assert_true(outgrown);
  ft__pool_put(f1);
  ft__pool_put(f2);
  ft__pool_put(b);
  ft__pool_first_count(&home, &lent, &outgrown);
  assert_int_equal(home + lent, 0);
  /* not outgrown: home, and the next start gets the same one back */
  ft__pool_first(1, 16384);
  f1 = ft__pool_get(&size);
  ft__pool_put(f1);
  ft__pool_first(1, 16384);
  assert_ptr_equal(ft__pool_get(&size), f1);
  ft__pool_put(f1);
  ft__pool_first(0, 16384); /* off: the ones home go */
  ft__pool_first_count(&home, &lent, &outgrown);
  assert_int_equal(home + lent, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_armed_tracer_at_a_time),
      cmocka_unit_test(test_available_says_why),
      cmocka_unit_test(test_emit_and_external_reach_the_sink),
      cmocka_unit_test(test_held_keep_holds_only_real_buffers),
      cmocka_unit_test(test_first_buffers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
