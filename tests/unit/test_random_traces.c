/* Randomized test: traces from random names, metadata and ids always parse as JSON,
 * keep every flow paired, and render the same bytes on several threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "test_support.h"

static uint64_t rng_state;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* A random C string biased towards JSON-hostile bytes. */
static void random_text(char *buf, size_t cap) {
  static const char *const pieces[] = {
      "\"",   "\\", "\n", "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82", "\xed\xa0\x80", "\xf0\x9f\x98\x80",
      "\xff", "1",  "e",  "-",    "[",    "]",    ",",        "N/A",      "null",         "8e-05",
      "1.",   "{",  "}"};
  size_t n = rnd() % 24, used = 0;
  for (size_t i = 0; i < n; i++) {
    const char *p;
    char one[2] = {0};
    if (rnd() % 3 == 0) {
      p = pieces[rnd() % (sizeof pieces / sizeof *pieces)];
    } else {
      one[0] = (char)(1 + rnd() % 255); /* any byte but NUL */
      p = one;
    }
    size_t l = strlen(p);
    if (used + l + 1 > cap) break;
    memcpy(buf + used, p, l);
    used += l;
  }
  buf[used] = '\0';
}

static size_t count_ph(yajl_val ev, const char *ph) {
  size_t n = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val p = ft_test_get(ev->u.array.values[i], "ph");
    if (p && YAJL_IS_STRING(p) && !strcmp(p->u.string, ph)) n++;
  }
  return n;
}

static void test_random_traces_are_json(void **state) {
  (void)state;
  rng_state = 0x9e3779b97f4a7c15ull;
  char names[8][128], keys[4][64], vals[4][64];
  for (int iter = 0; iter < 400; iter++) {
    ft_session *s;
    assert_int_equal(ft_session_create(&s, NULL), FT_OK);
    assert_int_equal(ft_session_start(s), FT_OK);
    assert_int_equal(ft_session_stop(s), FT_OK);
    ft__session_set_window(s, 1000, 1000 + rnd() % 5000);
    for (int i = 0; i < 8; i++) random_text(names[i], sizeof names[i]);
    int n_events = (int)(rnd() % 200);
    for (int i = 0; i < n_events; i++) {
      ft_kv md[4];
      size_t nmd = rnd() % 5;
      for (size_t k = 0; k < nmd && k < 4; k++) {
        random_text(keys[k], sizeof keys[k]);
        random_text(vals[k], sizeof vals[k]);
        md[k].key = keys[k];
        md[k].value = vals[k];
      }
      uint64_t start = rnd() % 7000;
      ft_device_event ev = {.kind = (ft_event_kind)(rnd() % 4),
                            .start_ns = start,
                            .end_ns = start + rnd() % 500,
                            .correlation_id = (uint32_t)(rnd() % 20),
                            .has_external_id = rnd() % 2,
                            .external_id = rnd() % 3,
                            .device = (uint32_t)(rnd() % 2),
                            .stream = (uint32_t)(rnd() % 3),
                            .thread_id = (uint32_t)(rnd() % 4),
                            .name = names[rnd() % 8],
                            .metadata = md,
                            .n_metadata = nmd > 4 ? 4 : nmd};
      assert_int_equal(ft__session_inject(s, &ev), FT_OK);
    }
    bool gz = iter % 4 == 0;
    ft__out *o;
    assert_int_equal(ft__out_open_mem(&o, gz), FT_OK);
    ft__export_stats stats;
    assert_int_equal(ft__write_trace(s, o, &stats), FT_OK);
    size_t len;
    const char *m = ft__out_mem(o, &len);
    char *plain = NULL;
    if (gz) {
      plain = ft_test_gunzip(m, len, &len);
      assert_non_null(plain);
      m = plain;
    }
    char err[512];
    yajl_val doc = ft_test_parse_json(m, len, err, sizeof err);
    if (!doc) fail_msg("iteration %d: not JSON: %s", iter, err);
    yajl_val ev = ft_test_get(doc, "traceEvents");
    assert_int_equal(count_ph(ev, "s"), stats.flow_starts);
    assert_int_equal(count_ph(ev, "f"), stats.flows);
    assert_int_equal(count_ph(ev, "X"), stats.exported);
    assert_int_equal(stats.exported + stats.window_discarded, (uint64_t)n_events);
    yajl_tree_free(doc);
    /* the same bytes with the body cut into random chunks on random workers */
    int workers = 1 + (int)(rnd() % 4);
    ft__render_split(workers, 1 + rnd() % 16);
    ft__out *po;
    assert_int_equal(ft__out_open_mem(&po, gz), FT_OK);
    assert_int_equal(ft__write_trace(s, po, NULL), FT_OK);
    ft__render_split(-1, 0);
    size_t plen;
    const char *pm = ft__out_mem(po, &plen);
    char *pplain = gz ? ft_test_gunzip(pm, plen, &plen) : NULL;
    if (gz) pm = pplain;
    if (plen != len || memcmp(pm, m, len)) fail_msg("iteration %d: %d workers: not the serial bytes", iter, workers);
    free(pplain);
    ft__out_abort(po);
    free(plain);
    ft__out_abort(o);
    ft_session_destroy(s);
  }
}

int main(void) {
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent/libcupti.so", 1);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_traces_are_json)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
