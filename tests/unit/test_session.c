/* Unit tests: capture window, flows, external-id attribution, trace file writing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "test_support.h"

enum { LO = 1000000, HI = 2000000 };

static ft_session *new_session(void) {
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft__session_set_window(s, LO, HI);
  return s;
}

static void add(ft_session *s, ft_event_kind kind, uint64_t start, uint64_t end, uint32_t corr, bool has_ext,
                uint64_t ext, const char *name) {
  static const ft_kv md[] = {{"grid", "[2, 1, 1]"}, {"note", "N/A"}};
  ft_device_event ev = {.kind = kind,
                        .start_ns = start,
                        .end_ns = end,
                        .correlation_id = corr,
                        .has_external_id = has_ext,
                        .external_id = ext,
                        .device = 0,
                        .stream = 7,
                        .thread_id = 42,
                        .name = name,
                        .metadata = kind == FT_EVENT_KERNEL ? md : NULL,
                        .n_metadata = kind == FT_EVENT_KERNEL ? 2 : 0};
  assert_int_equal(ft__session_inject(s, &ev), FT_OK);
}

static yajl_val events_of(yajl_val doc) {
  yajl_val ev = ft_test_get(doc, "traceEvents");
  assert_true(ev && YAJL_IS_ARRAY(ev));
  return ev;
}

static long long int_of(yajl_val o, const char *key) {
  yajl_val v = ft_test_get(o, key);
  assert_true(v && YAJL_IS_INTEGER(v));
  return YAJL_GET_INTEGER(v);
}

static size_t count_x(yajl_val doc, const char *name) {
  yajl_val ev = events_of(doc);
  size_t n = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    if (!strcmp(ft_test_str(e, "ph"), "X") && !strcmp(ft_test_str(e, "name"), name)) n++;
  }
  return n;
}

/* Every flow id: exactly one s and at least one f (one per device event of the
 * launch, as torch-cuda draws graph replays), each right after a slice on the
 * same pid/tid at the same ts, ids below 2^32. Returns the number of f halves. */
static size_t check_flows(yajl_val doc) {
  yajl_val ev = events_of(doc);
  size_t pairs = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    const char *ph = ft_test_str(e, "ph");
    if (strcmp(ph, "s") && strcmp(ph, "f")) continue;
    long long id = int_of(e, "id");
    assert_true(id > 0 && id < (1ll << 32));
    /* the preceding X (skipping earlier flow halves) is the slice it belongs to */
    size_t j = i;
    while (j > 0 && strcmp(ft_test_str(ev->u.array.values[j - 1], "ph"), "X")) j--;
    assert_true(j > 0);
    yajl_val slice = ev->u.array.values[j - 1];
    assert_int_equal(int_of(slice, "pid"), int_of(e, "pid"));
    assert_int_equal(int_of(slice, "tid"), int_of(e, "tid"));
    assert_true(YAJL_GET_DOUBLE(ft_test_get(slice, "ts")) == YAJL_GET_DOUBLE(ft_test_get(e, "ts")));
    if (!strcmp(ph, "s")) /* a flow starts on an API call: the build's runtime or driver category */
      assert_true(strstr(ft_test_str(slice, "cat"), "_runtime") || strstr(ft_test_str(slice, "cat"), "_driver"));
    if (!strcmp(ph, "f")) assert_string_equal(ft_test_str(e, "bp"), "e");
    size_t s_count = 0, f_count = 0;
    for (size_t k = 0; k < ev->u.array.len; k++) {
      yajl_val o = ev->u.array.values[k];
      const char *p2 = ft_test_str(o, "ph");
      if ((!strcmp(p2, "s") || !strcmp(p2, "f")) && int_of(o, "id") == id) {
        if (!strcmp(p2, "s")) s_count++;
        else f_count++;
      }
    }
    assert_int_equal(s_count, 1);
    assert_true(f_count >= 1);
    if (!strcmp(ph, "f")) pairs++;
  }
  return pairs;
}

typedef struct visited {
  int n, starts, ends, ranges;
  uint64_t start_ids[16], end_ids[16];
} visited;

static int visit(void *ctx, const ft_export_event *x) {
  visited *v = ctx;
  v->n++;
  if (x->flow == FT_FLOW_START) v->start_ids[v->starts++] = x->flow_id;
  if (x->flow == FT_FLOW_END) v->end_ids[v->ends++] = x->flow_id;
  assert_true(x->flow == FT_FLOW_NONE || x->flow_id != 0);
  return 0;
}

static void test_foreach_event_one_flow_per_event(void **state) {
  (void)state;
  ft_session *s = new_session();
  add(s, FT_EVENT_RUNTIME, LO + 10, LO + 20, 40, true, 3, "launch40");
  add(s, FT_EVENT_KERNEL, LO + 30, LO + 40, 40, true, 3, "k40a");
  add(s, FT_EVENT_KERNEL, LO + 50, LO + 60, 40, true, 3, "k40b"); /* same launch: its own end */
  add(s, FT_EVENT_RUNTIME, LO + 70, LO + 80, 41, false, 0, "sync41");
  add(s, FT_EVENT_KERNEL, LO + 90, LO + 95, 42, false, 0, "orphan42");
  add(s, FT_EVENT_KERNEL, HI + 1, HI + 9, 43, false, 0, "late");
  visited v = {0};
  uint64_t outside = 0;
  assert_int_equal(ft_session_foreach_event(s, LO, HI, visit, &v, &outside), FT_OK);
  assert_int_equal(v.n, 5);
  assert_int_equal(outside, 1);
  assert_int_equal(v.starts, 1);
  assert_int_equal(v.ends, 2);
  assert_int_equal(v.start_ids[0], 40);
  assert_int_equal(v.end_ids[0], 40);
  assert_int_equal(v.end_ids[1], 40);
  /* a narrower window: the launch falls out, so the kernel loses its flow */
  memset(&v, 0, sizeof v);
  assert_int_equal(ft_session_foreach_event(s, LO + 25, HI, visit, &v, &outside), FT_OK);
  assert_int_equal(v.starts + v.ends, 0);
  assert_int_equal(outside, 2);
  uint32_t devs[4], streams[4];
  assert_int_equal(ft_session_streams(s, devs, streams, 4), 1);
  assert_int_equal(streams[0], 7);
  ft_session_destroy(s);
}

/* The adaptor renders a name or a metadata list once per key: equal keys must
 * mean equal text, and different text different keys. */
typedef struct keyed {
  int n;
  uint32_t name_key[8], meta_key[8];
  size_t n_meta[8];
  char first_value[8][16];
} keyed;

static int visit_keys(void *ctx, const ft_export_event *x) {
  keyed *k = ctx;
  assert_true(k->n < 8);
  k->name_key[k->n] = x->name_key;
  k->meta_key[k->n] = x->meta_key;
  k->n_meta[k->n] = x->event.n_metadata;
  snprintf(k->first_value[k->n], sizeof k->first_value[0], "%s", x->event.n_metadata ? x->event.metadata[0].value : "");
  k->n++;
  return 0;
}

static void test_foreach_event_keys_name_and_metadata(void **state) {
  (void)state;
  ft_session *s = new_session();
  static const ft_kv a[] = {{"grid", "[1, 1, 1]"}, {"block", "[32, 1, 1]"}};
  static const ft_kv b[] = {{"grid", "[2, 1, 1]"}, {"block", "[32, 1, 1]"}};
  static const ft_kv a1[] = {{"grid", "[1, 1, 1]"}};
  const struct {
    const char *name;
    const ft_kv *md;
    size_t n;
  } ev[] = {{"k1", a, 2}, {"k2", a, 2}, {"k1", b, 2}, {"k1", a, 2}, {"k3", a1, 1}, {"k3", NULL, 0}};
  for (size_t i = 0; i < 6; i++) {
    ft_device_event e = {.kind = FT_EVENT_KERNEL,
                         .start_ns = LO + 10 * i + 1,
                         .end_ns = LO + 10 * i + 5,
                         .correlation_id = (uint32_t)i + 1,
                         .stream = 7,
                         .name = ev[i].name,
                         .metadata = ev[i].md,
                         .n_metadata = ev[i].n};
    assert_int_equal(ft__session_inject(s, &e), FT_OK);
  }
  keyed k = {0};
  assert_int_equal(ft_session_foreach_event(s, LO, HI, visit_keys, &k, NULL), FT_OK);
  assert_int_equal(k.n, 6);
  /* names: k1 k2 k1 k1 k3 k3 */
  assert_int_equal(k.name_key[0], k.name_key[2]);
  assert_int_equal(k.name_key[0], k.name_key[3]);
  assert_int_equal(k.name_key[4], k.name_key[5]);
  assert_int_not_equal(k.name_key[0], k.name_key[1]);
  assert_int_not_equal(k.name_key[0], k.name_key[4]);
  /* lists: a a b a a1 (none) -- (key, count) tells them apart */
  assert_int_equal(k.meta_key[0], k.meta_key[1]);
  assert_int_equal(k.meta_key[0], k.meta_key[3]);
  assert_int_not_equal(k.meta_key[0], k.meta_key[2]);
  assert_string_equal(k.first_value[2], "[2, 1, 1]");
  assert_true(k.meta_key[4] != k.meta_key[0] || k.n_meta[4] != k.n_meta[0]);
  assert_int_equal(k.n_meta[5], 0);
  ft_session_destroy(s);
}

static void test_window_is_strict_containment(void **state) {
  (void)state;
  ft_session *s = new_session();
  add(s, FT_EVENT_KERNEL, LO, HI, 0, false, 0, "exactly_the_window");
  add(s, FT_EVENT_KERNEL, LO - 1, LO + 10, 0, false, 0, "starts_before");
  add(s, FT_EVENT_KERNEL, HI - 10, HI + 1, 0, false, 0, "ends_after");
  add(s, FT_EVENT_KERNEL, LO + 5, LO + 5, 0, false, 0, "zero_length_inside");
  add(s, FT_EVENT_KERNEL, LO + 9, LO + 8, 0, false, 0, "end_before_start");
  add(s, FT_EVENT_RUNTIME, 10, 20, 0, false, 0, "long_before");
  yajl_val doc = ft_test_render(s);
  assert_int_equal(count_x(doc, "exactly_the_window"), 1);
  assert_int_equal(count_x(doc, "zero_length_inside"), 1);
  assert_int_equal(count_x(doc, "starts_before"), 0);
  assert_int_equal(count_x(doc, "ends_after"), 0);
  assert_int_equal(count_x(doc, "end_before_start"), 0);
  assert_int_equal(count_x(doc, "long_before"), 0);
  assert_int_equal(int_of(ft_test_get(doc, "flagtrace"), "window_discarded"), 4);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.window_discarded, 4);
  assert_int_equal(c.device_events, 6);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_flow_edge_cases(void **state) {
  (void)state;
  ft_session *s = new_session();
  /* 10: launch + kernel -> one pair, id 10 */
  add(s, FT_EVENT_RUNTIME, LO + 100, LO + 110, 10, false, 0, "launch10");
  add(s, FT_EVENT_KERNEL, LO + 200, LO + 300, 10, false, 0, "k10");
  /* 11: a runtime call that launched nothing -> no flow */
  add(s, FT_EVENT_RUNTIME, LO + 120, LO + 130, 11, false, 0, "sync11");
  /* 12: a kernel whose launch is missing -> no flow */
  add(s, FT_EVENT_KERNEL, LO + 400, LO + 500, 12, false, 0, "orphan12");
  /* 13: launch outside the window -> kernel gets no flow */
  add(s, FT_EVENT_RUNTIME, LO - 50, LO + 10, 13, false, 0, "early13");
  add(s, FT_EVENT_KERNEL, LO + 600, LO + 700, 13, false, 0, "k13");
  /* 14: kernel outside the window -> launch gets no flow */
  add(s, FT_EVENT_RUNTIME, LO + 800, LO + 810, 14, false, 0, "late14");
  add(s, FT_EVENT_KERNEL, HI - 5, HI + 5, 14, false, 0, "k14");
  /* 15: one launch, two device events (a graph) -> one start, two ends, id 15 */
  add(s, FT_EVENT_KERNEL, LO + 900, LO + 950, 15, false, 0, "g15a"); /* device first in storage */
  add(s, FT_EVENT_RUNTIME, LO + 850, LO + 860, 15, false, 0, "graph15");
  add(s, FT_EVENT_MEMCPY, LO + 960, LO + 990, 15, false, 0, "g15b");
  /* 16: two runtime records with one id (runtime + driver): only the first owns */
  add(s, FT_EVENT_RUNTIME, LO + 1000, LO + 1010, 16, false, 0, "rt16");
  add(s, FT_EVENT_RUNTIME, LO + 1001, LO + 1009, 16, false, 0, "drv16");
  add(s, FT_EVENT_MEMSET, LO + 1100, LO + 1200, 16, false, 0, "ms16");
  /* 17: a driver call first, then the runtime call with the same id: the runtime
   * call owns the flow, the driver call gets none */
  add(s, FT_EVENT_DRIVER, LO + 1500, LO + 1510, 17, false, 0, "drv17");
  add(s, FT_EVENT_RUNTIME, LO + 1499, LO + 1520, 17, false, 0, "rt17");
  add(s, FT_EVENT_KERNEL, LO + 1600, LO + 1700, 17, false, 0, "k17");
  /* 0: no correlation -> never a flow */
  add(s, FT_EVENT_RUNTIME, LO + 1300, LO + 1310, 0, false, 0, "rt0");
  add(s, FT_EVENT_KERNEL, LO + 1400, LO + 1410, 0, false, 0, "k0");
  yajl_val doc = ft_test_render(s);
  assert_int_equal(check_flows(doc), 5);
  ft_session_counts c;
  assert_int_equal(ft_session_counts_get(s, &c), FT_OK);
  assert_int_equal(c.flows, 5);
  /* the ends per id: 10, 15 twice, 16, 17 */
  yajl_val ev = events_of(doc);
  long long want[] = {10, 15, 16, 17};
  size_t want_n[] = {1, 2, 1, 1};
  for (size_t w = 0; w < 4; w++) {
    size_t hits = 0;
    for (size_t i = 0; i < ev->u.array.len; i++) {
      yajl_val e = ev->u.array.values[i];
      if (!strcmp(ft_test_str(e, "ph"), "f") && int_of(e, "id") == want[w]) hits++;
    }
    assert_int_equal(hits, want_n[w]);
  }
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_flow_sparse_ids(void **state) {
  (void)state;
  /* ids spread over the 32-bit range take the map path instead of the dense array */
  ft_session *s = new_session();
  uint32_t ids[] = {7, 1u << 31, 4000000000u, 123456789u};
  for (size_t i = 0; i < 4; i++) {
    add(s, FT_EVENT_RUNTIME, LO + 10 * i, LO + 10 * i + 1, ids[i], false, 0, "launch");
    if (i != 3) add(s, FT_EVENT_KERNEL, LO + 100 + 10 * i, LO + 105 + 10 * i, ids[i], false, 0, "k");
  }
  add(s, FT_EVENT_KERNEL, LO + 500, LO + 501, 99, false, 0, "orphan");
  yajl_val doc = ft_test_render(s);
  assert_int_equal(check_flows(doc), 3);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static yajl_val args_of_first(yajl_val doc, const char *name) {
  yajl_val ev = events_of(doc);
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    if (!strcmp(ft_test_str(e, "ph"), "X") && !strcmp(ft_test_str(e, "name"), name)) return ft_test_get(e, "args");
  }
  fail_msg("no event %s", name);
  return NULL;
}

static void test_external_id_zero_and_attribution(void **state) {
  (void)state;
  ft_session *s = new_session();
  add(s, FT_EVENT_KERNEL, LO + 10, LO + 30, 5, true, 0, "ext0_a");   /* 20 ns to op 0 */
  add(s, FT_EVENT_MEMCPY, LO + 40, LO + 45, 6, true, 0, "ext0_b");   /* 5 ns to op 0 */
  add(s, FT_EVENT_KERNEL, LO + 50, LO + 150, 7, false, 0, "no_ext"); /* attributed to nobody */
  add(s, FT_EVENT_KERNEL, LO + 200, LO + 207, 0, true, 5, "ext5");   /* op 5; vendor id 0 */
  add(s, FT_EVENT_RUNTIME, LO + 1, LO + 2, 5, true, 0, "launch");    /* runtime: never device time */
  yajl_val doc = ft_test_render(s);
  yajl_val a = args_of_first(doc, "ext0_a");
  assert_int_equal(int_of(a, "External id"), 0);
  assert_int_equal(int_of(a, "correlation"), 5);
  assert_int_equal(int_of(a, "device"), 0);
  assert_int_equal(int_of(a, "stream"), 7);
  assert_true(YAJL_IS_ARRAY(ft_test_get(a, "grid")));
  assert_string_equal(ft_test_str(a, "note"), "N/A");
  assert_null(ft_test_get(args_of_first(doc, "no_ext"), "External id"));
  uint64_t ns, n;
  assert_int_equal(ft_session_device_time(s, 0, &ns, &n), FT_OK);
  assert_int_equal(ns, 25);
  assert_int_equal(n, 2);
  /* keyed on the external id: vendor correlation 5 must not pull in ext0_a */
  assert_int_equal(ft_session_device_time(s, 5, &ns, &n), FT_OK);
  assert_int_equal(ns, 7);
  assert_int_equal(n, 1);
  assert_int_equal(ft_session_device_time(s, 7, &ns, &n), FT_OK);
  assert_int_equal(ns, 0);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* Reports in id order share runs (an op's consecutive launches: one entry, P6);
 * a report below the runs (another thread, an id reported again) still wins. */
static void test_external_id_runs(void **state) {
  (void)state;
  ft_session *s = new_session();
  for (uint32_t c = 10; c < 30; c++) assert_int_equal(ft__session_inject_external(s, c, c < 20 ? 7 : 8), FT_OK);
  assert_int_equal(ft__session_inject_external(s, 32, 8), FT_OK); /* a gap: a run of its own */
  assert_int_equal(s->n_corr_runs, 3);
  assert_int_equal(s->n_corr_ext, 0);
  assert_int_equal(ft__session_inject_external(s, 15, 9), FT_OK); /* again, later: wins */
  assert_int_equal(ft__session_inject_external(s, 5, 6), FT_OK);  /* first seen, out of order */
  assert_int_equal(ft__session_inject_external(s, 31, 4), FT_OK); /* inside the gap */
  assert_int_equal(s->n_corr_ext, 3);
  static const struct {
    uint32_t corr;
    long long ext;
  } want[] = {{10, 7}, {14, 7}, {15, 9}, {16, 7}, {19, 7}, {20, 8}, {29, 8}, {5, 6}, {31, 4}, {32, 8}};
  char name[16];
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    snprintf(name, sizeof name, "k%u", want[i].corr);
    add(s, FT_EVENT_KERNEL, LO + 10 * i + 1, LO + 10 * i + 5, want[i].corr, false, 0, name);
  }
  add(s, FT_EVENT_KERNEL, LO + 200, LO + 205, 30, false, 0, "k30"); /* never reported */
  add(s, FT_EVENT_KERNEL, LO + 210, LO + 215, 33, false, 0, "k33"); /* past the last run */
  assert_int_equal(ft__session_inject_external(s, 40, 1), FT_OK);   /* resolves all, as stop does */
  yajl_val doc = ft_test_render(s);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    snprintf(name, sizeof name, "k%u", want[i].corr);
    assert_int_equal(int_of(args_of_first(doc, name), "External id"), want[i].ext);
  }
  assert_null(ft_test_get(args_of_first(doc, "k30"), "External id"));
  assert_null(ft_test_get(args_of_first(doc, "k33"), "External id"));
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_external_ids_resolved_by_correlation(void **state) {
  (void)state;
  /* Buffers complete in any order: a correlation record may come before or after
   * the events it names; an event with its own id keeps it. */
  ft_session *s = new_session();
  assert_int_equal(ft__session_inject_external(s, 21, 0), FT_OK); /* before its events, id 0 */
  add(s, FT_EVENT_KERNEL, LO + 10, LO + 20, 21, false, 0, "k21");
  add(s, FT_EVENT_RUNTIME, LO + 1, LO + 2, 21, false, 0, "rt21");
  add(s, FT_EVENT_KERNEL, LO + 30, LO + 70, 22, false, 0, "k22");
  add(s, FT_EVENT_KERNEL, LO + 80, LO + 90, 23, true, 99, "k23_own");
  assert_int_equal(ft__session_inject_external(s, 22, 8), FT_OK); /* after */
  assert_int_equal(ft__session_inject_external(s, 23, 8), FT_OK); /* must not override 99 */
  yajl_val doc = ft_test_render(s);
  assert_int_equal(int_of(args_of_first(doc, "k21"), "External id"), 0);
  assert_int_equal(int_of(args_of_first(doc, "rt21"), "External id"), 0);
  assert_int_equal(int_of(args_of_first(doc, "k22"), "External id"), 8);
  assert_int_equal(int_of(args_of_first(doc, "k23_own"), "External id"), 99);
  uint64_t ns, n;
  assert_int_equal(ft_session_device_time(s, 8, &ns, &n), FT_OK);
  assert_int_equal(ns, 40);
  assert_int_equal(n, 1);
  assert_int_equal(ft_session_device_time(s, 0, &ns, &n), FT_OK);
  assert_int_equal(ns, 10); /* the runtime event is not device time */
  yajl_tree_free(doc);
  ft_session_destroy(s);

  /* Reports out of id order (threads, buffers) and an id reported twice: the later
   * report wins, whatever the order of the ids around it. */
  s = new_session();
  assert_int_equal(ft__session_inject_external(s, 40, 4), FT_OK);
  assert_int_equal(ft__session_inject_external(s, 35, 1), FT_OK);
  assert_int_equal(ft__session_inject_external(s, 31, 3), FT_OK);
  assert_int_equal(ft__session_inject_external(s, 35, 5), FT_OK);
  add(s, FT_EVENT_KERNEL, LO + 10, LO + 20, 40, false, 0, "k40");
  add(s, FT_EVENT_KERNEL, LO + 30, LO + 40, 31, false, 0, "k31");
  add(s, FT_EVENT_KERNEL, LO + 50, LO + 60, 35, false, 0, "k35");
  assert_int_equal(ft__session_inject_external(s, 99, 9), FT_OK); /* resolves all, as stop does */
  doc = ft_test_render(s);
  assert_int_equal(int_of(args_of_first(doc, "k40"), "External id"), 4);
  assert_int_equal(int_of(args_of_first(doc, "k31"), "External id"), 3);
  assert_int_equal(int_of(args_of_first(doc, "k35"), "External id"), 5);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* The next traceEvents entry at or after *k with category cat (*k moves past it),
 * or NULL at the end. */
static yajl_val next_of_cat(yajl_val ev, size_t *k, const char *cat) {
  while (*k < ev->u.array.len) {
    yajl_val e = ev->u.array.values[(*k)++];
    if (!strcmp(ft_test_str(e, "cat"), cat)) return e;
  }
  return NULL;
}

static void add_range(ft_session *s, const char *name, uint64_t start, uint64_t end, uint64_t id, uint32_t tid) {
  uint32_t name_id;
  assert_int_equal(ft__intern(&s->store.names, name, strlen(name), &name_id), FT_OK);
  assert_int_equal(ft__store_add_range(&s->store, name_id, start, end, id, tid), FT_OK);
}

/* other_first: the other thread's call comes first, in time and in the store, so
 * the calls are not in (thread, time) order until sorted. */
static void check_gpu_projection_of_ranges(bool other_first) {
  ft_session *s = new_session();
  ft_device_event other = {.kind = FT_EVENT_RUNTIME,
                           .start_ns = LO + (other_first ? 50 : 400),
                           .end_ns = LO + (other_first ? 60 : 410),
                           .correlation_id = 32,
                           .thread_id = 43,
                           .name = "other_thread"};
  if (other_first) assert_int_equal(ft__session_inject(s, &other), FT_OK);
  add_range(s, "outer", LO + 100, LO + 900, 1, 42);
  add_range(s, "inner", LO + 140, LO + 200, 2, 42);
  add_range(s, "idle", LO + 950, LO + 960, 3, 42);
  add(s, FT_EVENT_RUNTIME, LO + 150, LO + 160, 30, false, 0, "launch30"); /* tid 42, inside inner */
  add(s, FT_EVENT_KERNEL, LO + 1000, LO + 1100, 30, false, 0, "k30");     /* runs after both end */
  add(s, FT_EVENT_RUNTIME, LO + 300, LO + 310, 31, false, 0, "launch31");
  add(s, FT_EVENT_MEMCPY, LO + 1200, LO + 1250, 31, false, 0, "c31");
  if (!other_first) assert_int_equal(ft__session_inject(s, &other), FT_OK);
  add(s, FT_EVENT_KERNEL, LO + 1300, LO + 1400, 32, false, 0, "k32");
  yajl_val doc = ft_test_render(s);
  yajl_val ev = events_of(doc), e;
  int seen = 0;
  for (size_t i = 0; (e = next_of_cat(ev, &i, "gpu_user_annotation"));) {
    seen++;
    const char *n = ft_test_str(e, "name");
    double ts = YAJL_GET_DOUBLE(ft_test_get(e, "ts")), dur = YAJL_GET_DOUBLE(ft_test_get(e, "dur"));
    assert_int_equal(int_of(e, "pid"), 0);
    assert_int_equal(int_of(e, "tid"), 7);
    if (!strcmp(n, "outer")) { /* both launches on its thread, not the other thread's */
      assert_true(ts == (LO + 1000) / 1000.0 && dur == 0.25);
      assert_int_equal(int_of(ft_test_get(e, "args"), "External id"), 1);
    } else if (!strcmp(n, "inner")) {
      assert_true(ts == (LO + 1000) / 1000.0 && dur == 0.1);
    } else {
      fail_msg("unexpected projection %s", n);
    }
  }
  assert_int_equal(seen, 2); /* "idle" launched nothing */
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_gpu_projection_of_ranges(void **state) {
  (void)state;
  check_gpu_projection_of_ranges(false);
  check_gpu_projection_of_ranges(true);
}

/* Many distinct metadata lists, each used by three events in a row, then the
 * first ones again: the writer's cache of rendered lists (direct-mapped, filled
 * on a second sighting) must give every event its own args, whatever collides
 * or is evicted. */
static void test_metadata_lists_rendered_per_event(void **state) {
  (void)state;
  ft_session *s = new_session();
  enum { LISTS = 3000, REPEAT = 3, AGAIN = 500 };
  char iv[32], tag[32];
  int n = 0;
  for (int j = 0; j < LISTS + AGAIN; j++)
    for (int r = 0; r < REPEAT; r++, n++) {
      int i = j % LISTS;
      snprintf(iv, sizeof iv, "%d", i);
      snprintf(tag, sizeof tag, "t%d \"q\"", i % 7);
      ft_kv md[] = {{"i", iv}, {"tag", tag}, {"grid", "[1, 2, 3]"}};
      uint64_t t = LO + 10 + (uint64_t)n * 10;
      ft_device_event ev = {.kind = FT_EVENT_KERNEL,
                            .start_ns = t,
                            .end_ns = t + 5,
                            .stream = 7,
                            .name = "k",
                            .metadata = md,
                            .n_metadata = i % 3 ? 3 : 2};
      assert_int_equal(ft__session_inject(s, &ev), FT_OK);
    }
  yajl_val doc = ft_test_render(s);
  yajl_val ev = events_of(doc), e;
  int seen = 0;
  for (size_t k = 0; (e = next_of_cat(ev, &k, "kernel"));) {
    int at = (int)((YAJL_GET_DOUBLE(ft_test_get(e, "ts")) * 1000 + 0.5 - LO - 10) / 10);
    int i = at / REPEAT % LISTS;
    yajl_val args = ft_test_get(e, "args");
    assert_int_equal(int_of(args, "i"), i);
    snprintf(tag, sizeof tag, "t%d \"q\"", i % 7);
    assert_string_equal(ft_test_str(args, "tag"), tag);
    yajl_val grid = ft_test_get(args, "grid");
    if (i % 3) assert_true(grid && YAJL_IS_ARRAY(grid) && grid->u.array.len == 3);
    else assert_null(grid);
    seen++;
  }
  assert_int_equal(seen, n);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_start_end_ranges_and_marks(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  uint64_t id;
  assert_int_equal(ft__range_start(s, "early", &id), FT_ESTATE);
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft__range_start(s, "load", &id), FT_OK);
  assert_int_equal(ft__mark(s, "checkpoint"), FT_OK);
  assert_int_equal(ft__range_end(s, id), FT_OK);
  assert_int_equal(ft__range_end(s, id), FT_ESTATE);    /* already closed */
  assert_int_equal(ft__range_end(s, 12345), FT_ESTATE); /* never opened */
  assert_int_equal(ft_range_push(s, "a", NULL), FT_OK);
  assert_int_equal(ft_range_push(s, "b", NULL), FT_OK);
  assert_int_equal(ft__range_depth(s), 2);
  assert_int_equal(ft_range_pop(s), FT_OK);
  assert_int_equal(ft_range_pop(s), FT_OK);
  assert_int_equal(ft__range_depth(s), 0);
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  assert_int_equal(count_x(doc, "load"), 1);
  assert_int_equal(count_x(doc, "checkpoint"), 1);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_ranges_record_and_nest(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_range_push(s, "too early", NULL), FT_ESTATE);
  assert_int_equal(ft_session_start(s), FT_OK);
  uint64_t outer, inner;
  assert_int_equal(ft_range_push(s, "outer", &outer), FT_OK);
  assert_int_equal(ft_range_push(s, "inner \"quoted\"", &inner), FT_OK);
  assert_int_not_equal(outer, inner);
  assert_int_equal(ft_range_pop(s), FT_OK);
  assert_int_equal(ft_range_pop(s), FT_OK);
  assert_int_equal(ft_range_pop(s), FT_ESTATE); /* nothing open */
  assert_string_equal(ft_session_last_error(s), "no open range of this session on this thread");
  assert_int_equal(ft_session_write(s, "/tmp/never.json"), FT_ESTATE); /* not stopped */
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_ESTATE);
  yajl_val doc = ft_test_render(s);
  yajl_val a = args_of_first(doc, "inner \"quoted\"");
  assert_int_equal(int_of(a, "External id"), (long long)inner);
  assert_int_equal(count_x(doc, "outer"), 1);
  /* the trace says why no device activity is there */
  yajl_val ft = ft_test_get(doc, "flagtrace");
  assert_true(YAJL_IS_FALSE(ft_test_get(ft, "device_activity")));
  assert_true(strlen(ft_test_str(ft, "device_status")) > 10);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

static void test_second_session_is_busy(void **state) {
  (void)state;
  ft_session *a, *b;
  assert_int_equal(ft_session_create(&a, NULL), FT_OK);
  assert_int_equal(ft_session_create(&b, NULL), FT_OK);
  assert_int_equal(ft_session_start(a), FT_OK);
  assert_int_equal(ft_session_start(b), FT_EBUSY);
  assert_int_equal(ft_session_stop(a), FT_OK);
  assert_int_equal(ft_session_start(b), FT_OK);
  ft_session_destroy(b); /* destroy stops a running session */
  ft_session_destroy(a);
}

static size_t count_tmp_files(const char *dir) {
  DIR *d = opendir(dir);
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".tmp.")) n++;
  closedir(d);
  return n;
}

static void test_write_files_plain_and_gzip(void **state) {
  (void)state;
  char dir[] = "/tmp/ft_write_XXXXXX";
  assert_non_null(mkdtemp(dir));
  ft_session *s = new_session();
  add(s, FT_EVENT_RUNTIME, LO + 1, LO + 2, 3, true, 9, "cudaLaunchKernel");
  add(s, FT_EVENT_KERNEL, LO + 3, LO + 4, 3, true, 9, "k\x01\xff");
  char path[256];
  for (int gz = 0; gz < 2; gz++) {
    snprintf(path, sizeof path, "%s/trace.json%s", dir, gz ? ".gz" : "");
    assert_int_equal(ft_session_write(s, path), FT_OK);
    size_t len;
    char *raw = ft_test_read_file(path, &len);
    assert_non_null(raw);
    char *text = raw;
    if (gz) {
      assert_true((unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b);
      text = ft_test_gunzip(raw, len, &len);
      assert_non_null(text);
    }
    char err[256];
    yajl_val doc = ft_test_parse_json(text, len, err, sizeof err);
    if (!doc) fail_msg("%s: %s", path, err);
    assert_int_equal(check_flows(doc), 1);
    assert_int_equal(count_x(doc, "k\x01\xef\xbf\xbd"), 1); /* escaped, U+FFFD */
    yajl_tree_free(doc);
    if (text != raw) free(text);
    free(raw);
  }
  assert_int_equal(count_tmp_files(dir), 0);
  /* a missing directory: FT_EIO, a message naming the path, nothing created */
  snprintf(path, sizeof path, "%s/missing/trace.json", dir);
  assert_int_equal(ft_session_write(s, path), FT_EIO);
  assert_non_null(strstr(ft_session_last_error(s), path));
  assert_non_null(strstr(ft_session_last_error(s), "No such file or directory"));
  ft_session_destroy(s);
  snprintf(path, sizeof path, "%s/trace.json", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/trace.json.gz", dir);
  unlink(path);
  rmdir(dir);
}

/* A profile that ends inside a user range (torch's ProfilerStep) leaves its frame
 * open; hundreds of such profiles later, user ranges still work. */
static void test_stale_user_ranges_do_not_pile_up(void **state) {
  (void)state;
  for (int i = 0; i < 300; i++) {
    ft_session *s;
    assert_int_equal(ft_session_create(&s, NULL), FT_OK);
    assert_int_equal(ft_session_start(s), FT_OK);
    assert_int_equal(ft_user_range_push(s, (uint64_t)i, "ProfilerStep"), FT_OK);
    assert_int_equal(ft_session_stop(s), FT_OK);
    ft_session_destroy(s);
  }
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_user_range_push(s, 7, "step"), FT_OK);
  assert_int_equal(ft_user_range_pop(s), FT_OK);
  assert_int_equal(ft_user_range_pop(s), FT_ESTATE); /* nothing of this session left */
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_destroy(s);
}

/* A user range that launched nothing projects onto no GPU row: written, the trace has
 * no gpu_user_annotation (under UBSan this once stopped at qsort(NULL, 0, ...), the
 * empty projection list; CI runs this test sanitized). */
static void test_user_range_without_device_work_writes(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_user_range_push(s, 3, "ProfilerStep#3"), FT_OK);
  assert_int_equal(ft_user_range_pop(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  assert_null(ft_test_find_x(doc, "gpu_user_annotation", NULL, 0));
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

/* A rendered trace of a session created with opts (NULL: defaults), as text. */
static char *render_text(const ft_session_options *opts, size_t *len) {
  ft_session *s;
  assert_int_equal(ft_session_create(&s, opts), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft__out *o;
  assert_int_equal(ft__out_open_mem(&o, false), FT_OK);
  assert_int_equal(ft__write_trace(s, o, NULL), FT_OK);
  const char *m = ft__out_mem(o, len);
  char *copy = malloc(*len + 1);
  memcpy(copy, m, *len);
  copy[*len] = '\0';
  ft__out_abort(o);
  ft_session_destroy(s);
  return copy;
}

/* issue 13: a process with no known rank writes no distributedInfo (a torchrun
 * launcher must not look like a second rank 0); a known one is written with the
 * space HTA's rank regex needs. */
static void test_distributed_info_only_with_a_rank(void **state) {
  (void)state;
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  size_t len;
  char err[256];
  char *text = render_text(NULL, &len);
  yajl_val doc = ft_test_parse_json(text, len, err, sizeof err);
  assert_non_null(doc);
  assert_null(ft_test_get(doc, "distributedInfo"));
  assert_null(strstr(text, "\"rank\""));
  yajl_tree_free(doc);
  free(text);

  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  text = render_text(NULL, &len);
  doc = ft_test_parse_json(text, len, err, sizeof err);
  assert_non_null(doc);
  assert_int_equal(int_of(ft_test_get(doc, "distributedInfo"), "rank"), 3);
  assert_int_equal(int_of(ft_test_get(doc, "distributedInfo"), "world_size"), 4);
  assert_non_null(strstr(text, "\"rank\": 3"));
  yajl_tree_free(doc);
  free(text);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");

  ft_session_options o;
  ft_session_options_init(&o);
  o.rank = 0; /* the options' rank, no world size known: only the rank */
  text = render_text(&o, &len);
  doc = ft_test_parse_json(text, len, err, sizeof err);
  assert_non_null(doc);
  assert_int_equal(int_of(ft_test_get(doc, "distributedInfo"), "rank"), 0);
  assert_null(ft_test_get(ft_test_get(doc, "distributedInfo"), "world_size"));
  yajl_tree_free(doc);
  free(text);
}

/* Ranges left open when a running session is destroyed die with it: the next
 * session (most likely at the same address) pops nothing of them and keeps its
 * full nesting depth. */
static void test_ranges_die_with_their_session(void **state) {
  (void)state;
  ft_session *a;
  assert_int_equal(ft_session_create(&a, NULL), FT_OK);
  assert_int_equal(ft_session_start(a), FT_OK);
  for (int i = 0; i < 200; i++) assert_int_equal(ft_range_push(a, "left open", NULL), FT_OK);
  assert_int_equal(ft__range_depth(a), 200);
  ft_session_destroy(a); /* running, 200 ranges open on this thread */
  ft_session *b;
  assert_int_equal(ft_session_create(&b, NULL), FT_OK);
  assert_int_equal(ft_session_start(b), FT_OK);
  assert_int_equal(ft_range_pop(b), FT_ESTATE); /* a range it never pushed */
  assert_string_equal(ft_session_last_error(b), "no open range of this session on this thread");
  for (int i = 0; i < 256; i++) assert_int_equal(ft_range_push(b, "nest", NULL), FT_OK);
  assert_int_equal(ft_range_push(b, "one too deep", NULL), FT_ERANGE);
  assert_int_equal(ft__range_depth(b), 256);
  for (int i = 0; i < 256; i++) assert_int_equal(ft_range_pop(b), FT_OK);
  assert_int_equal(ft_range_pop(b), FT_ESTATE);
  /* a stopped (not destroyed) session's open ranges do not block the next one either */
  assert_int_equal(ft_range_push(b, "open at stop", NULL), FT_OK);
  assert_int_equal(ft_session_stop(b), FT_OK);
  ft_session *c;
  assert_int_equal(ft_session_create(&c, NULL), FT_OK);
  assert_int_equal(ft_session_start(c), FT_OK);
  assert_int_equal(ft_range_pop(c), FT_ESTATE);
  for (int i = 0; i < 256; i++) assert_int_equal(ft_range_push(c, "nest", NULL), FT_OK);
  assert_int_equal(ft_range_push(c, "one too deep", NULL), FT_ERANGE);
  ft_session_destroy(c);
  ft_session_destroy(b);
}

/* ft_correlation_pop follows ft_range_pop: nothing to pop is FT_ESTATE. */
static void test_correlation_pop_needs_a_push(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_correlation_pop(s), FT_ESTATE); /* before start */
  assert_int_equal(ft_correlation_push(s, 5), FT_ESTATE);
  assert_string_equal(ft_session_last_error(s), "correlation ids can be pushed only while the session runs");
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_correlation_pop(s), FT_ESTATE);
  assert_string_equal(ft_session_last_error(s), "no correlation id of this session pushed on this thread");
  assert_int_equal(ft_correlation_push(s, 5), FT_OK);
  assert_int_equal(ft_correlation_push(s, 6), FT_OK);
  assert_int_equal(ft_correlation_pop(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  assert_int_equal(ft_correlation_push(s, 7), FT_ESTATE); /* after stop */
  assert_int_equal(ft_correlation_pop(s), FT_OK);         /* the push made while running */
  assert_int_equal(ft_correlation_pop(s), FT_ESTATE);     /* more pops than pushes */
  ft_session *t;
  assert_int_equal(ft_session_create(&t, NULL), FT_OK);
  assert_int_equal(ft_session_start(t), FT_OK);
  assert_int_equal(ft_session_stop(t), FT_OK);
  ft_session_destroy(t);
  ft_session *u; /* a push left by a destroyed session is not the next one's */
  assert_int_equal(ft_session_create(&u, NULL), FT_OK);
  assert_int_equal(ft_session_start(u), FT_OK);
  assert_int_equal(ft_correlation_push(u, 8), FT_OK);
  ft_session_destroy(u);
  assert_int_equal(ft_session_create(&u, NULL), FT_OK);
  assert_int_equal(ft_session_start(u), FT_OK);
  assert_int_equal(ft_correlation_pop(u), FT_ESTATE);
  ft_session_destroy(u);
  ft_session_destroy(s);
}

/* Invalid arguments are a status everywhere, never accepted or a crash. */
static void test_invalid_arguments(void **state) {
  (void)state;
  ft_session *s = NULL;
  ft_session_options o;
  ft_session_options_init(&o);
  o.activities = FT_ACTIVITY_ALL + 1; /* an unknown bit */
  assert_int_equal(ft_session_create(&s, &o), FT_EINVAL);
  assert_null(s);
  struct {
    int rank, world;
    ft_status want;
  } cases[] = {
      {-2, -1, FT_EINVAL}, {-1, 0, FT_EINVAL}, {0, -2, FT_EINVAL}, {2, 2, FT_EINVAL},
      {-1, -1, FT_OK},     {1, 2, FT_OK},      {3, -1, FT_OK},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ft_session_options_init(&o);
    o.rank = cases[i].rank;
    o.world_size = cases[i].world;
    assert_int_equal(ft_session_create(&s, &o), cases[i].want);
    ft_session_destroy(s);
    s = NULL;
  }
  assert_int_equal(ft_session_create(NULL, NULL), FT_EINVAL);
  assert_int_equal(ft_session_start(NULL), FT_EINVAL);
  assert_int_equal(ft_session_stop(NULL), FT_EINVAL);
  assert_int_equal(ft_range_push(NULL, "x", NULL), FT_EINVAL);
  assert_int_equal(ft_range_pop(NULL), FT_EINVAL);
  assert_int_equal(ft_correlation_push(NULL, 1), FT_EINVAL);
  assert_int_equal(ft_correlation_pop(NULL), FT_EINVAL);
  assert_int_equal(ft_session_write(NULL, "x"), FT_EINVAL);
  assert_int_equal(ft_session_device_status(NULL, NULL), FT_EINVAL);
  assert_string_equal(ft_session_last_error(NULL), "");
  assert_int_equal(ft_json_escape(NULL, "a", 1), 0);
  char buf[8];
  assert_int_equal(ft_json_escape(buf, NULL, 1), 0);
  assert_int_equal(ft_json_escape(buf, NULL, 0), 2); /* "" */
  assert_int_equal(ft_json_is_literal(NULL, 3), 0);
  s = new_session();
  assert_int_equal(ft_range_push(s, NULL, NULL), FT_EINVAL);
  assert_int_equal(ft_session_write(s, "/nonexistent-dir/x.json"), FT_EIO); /* an older, unrelated message */
  assert_int_equal(ft_session_write(s, NULL), FT_EINVAL);
  assert_string_equal(ft_session_last_error(s), "no path to write the trace to (NULL)");
  assert_int_equal(ft_session_write(s, ""), FT_EINVAL);
  assert_string_equal(ft_session_last_error(s), "no path to write the trace to (an empty name)");
  assert_int_equal(ft_session_device_time(s, 1, NULL, NULL), FT_EINVAL);
  assert_int_equal(ft_session_counts_get(s, NULL), FT_EINVAL);
  assert_int_equal(ft_session_foreach_event(s, 10, 9, NULL, NULL, NULL), FT_EINVAL);
  assert_int_equal(ft_session_streams(s, NULL, NULL, 4), 0);
  ft_session_destroy(s);
}

/* The last-error text is per thread: threads failing at once each read their
 * own message, whole (TSan: no race). */
struct failer {
  ft_session *s;
  int k;
  int ok;
};

static void *fail_repeatedly(void *arg) {
  struct failer *f = arg;
  char want[128];
  f->ok = 1;
  for (int i = 0; i < 2000; i++) {
    if (f->k % 2) {
      if (ft_range_pop(f->s) != FT_ESTATE) f->ok = 0;
      snprintf(want, sizeof want, "no open range of this session on this thread");
    } else {
      char path[64];
      snprintf(path, sizeof path, "/nonexistent-%d/t.json", f->k);
      if (ft_session_write(f->s, path) != FT_ESTATE) f->ok = 0; /* running: not stopped */
      snprintf(want, sizeof want, "stop the session before writing it");
    }
    if (strcmp(ft_session_last_error(f->s), want)) f->ok = 0;
  }
  return NULL;
}

static void test_last_error_per_thread(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  struct failer f[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) {
    f[i] = (struct failer){s, i, 0};
    assert_int_equal(pthread_create(&t[i], NULL, fail_repeatedly, &f[i]), 0);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(f[i].ok, 1);
  }
  assert_string_equal(ft_session_last_error(s), ""); /* this thread failed nothing */
  assert_int_equal(ft_session_stop(s), FT_OK);
  ft_session_destroy(s);
}

/* ---- attribution by time (attribute.c, design.md §2) ---- */

static struct {
  uint32_t corr;
  uint64_t ext;
} pairs[32];
static int n_pairs;

static ft_status collect_pair(ft_session *s, uint32_t corr, uint64_t ext) {
  (void)s;
  assert_true(n_pairs < 32);
  pairs[n_pairs].corr = corr, pairs[n_pairs++].ext = ext;
  return FT_OK;
}

/* The id reported for corr; -1 when none, -2 for a barrier (FT__EXT_NONE: no id
 * open around the call); a second report would be a defect. */
static long long pair_of(uint32_t corr) {
  long long got = -1;
  for (int i = 0; i < n_pairs; i++)
    if (pairs[i].corr == corr) {
      assert_int_equal(got, -1);
      got = pairs[i].ext == FT__EXT_NONE ? -2 : (long long)pairs[i].ext;
    }
  return got;
}

/* A clock reading later than the last one: calls and pushes never share a tick. */
static uint64_t tick(void) {
  static uint64_t last;
  uint64_t t;
  while ((t = ft__now_ns()) <= last) {
  }
  return last = t;
}

static void api_call(ft_session *s, uint32_t corr, uint32_t tid, uint64_t start, uint64_t end) {
  ft_device_event ev = {.kind = FT_EVENT_RUNTIME,
                        .start_ns = start,
                        .end_ns = end,
                        .correlation_id = corr,
                        .thread_id = tid,
                        .name = "cudaLaunchKernel"};
  assert_int_equal(ft__session_inject(s, &ev), FT_OK);
}

/* Calls arriving in any order (buffers complete in any order; a nested driver
 * call ends, and is written, before its runtime call) still get the innermost id
 * open around them on their thread; so do the spans of calls left out of the rows,
 * and a frame still open at the end contains what came after it. */
static void test_time_attribution_in_any_arrival_order(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  uint32_t me = ft__gettid();
  uint64_t c[12];
  assert_int_equal(ft__timed_push(s, 1), FT_OK);
  c[0] = tick(), c[1] = tick(); /* 10: in 1 */
  assert_int_equal(ft__timed_push(s, 2), FT_OK);
  c[2] = tick(), c[3] = tick(), c[4] = tick(), c[5] = tick(); /* 20 = [2, 5] in 2, 30 = [3, 4] nested in 20 */
  assert_int_equal(ft__timed_pop(s), FT_OK);
  c[6] = tick(), c[7] = tick(); /* 40: in 1 again */
  assert_int_equal(ft__timed_pop(s), FT_OK);
  c[8] = tick(), c[9] = tick();                  /* 50: in nothing */
  assert_int_equal(ft__timed_pop(s), FT_ESTATE); /* nothing left to pop */
  assert_int_equal(ft__timed_push(s, 0), FT_OK); /* 0 is an id; never popped */
  c[10] = tick(), c[11] = tick();                /* 70: in 0 */
  api_call(s, 30, me, c[3], c[4]);
  api_call(s, 50, me, c[8], c[9]);
  api_call(s, 20, me, c[2], c[5]);
  api_call(s, 10, me, c[0], c[1]);
  api_call(s, 40, me, c[6], c[7]);
  api_call(s, 80, me + 1, c[0], c[1]); /* another thread: 1 was never open there */
  api_call(s, 70, me, c[10], c[11]);
  assert_int_equal(ft__timed_call_span(s, 60, me, c[3], c[4]), FT_OK); /* a left-out call in 2 */
  assert_int_equal(ft_session_stop(s), FT_OK);
  n_pairs = 0;
  pthread_mutex_lock(&s->mu);
  assert_int_equal(ft__timed_attribute(s, collect_pair), FT_OK);
  pthread_mutex_unlock(&s->mu);
  /* every call is reported: 50 (in nothing) and 80 (a thread that never pushed) as
   * barriers, so runs of ids may span the ids of calls nobody reports */
  static const long long want[][2] = {{10, 1}, {20, 2}, {30, 2}, {40, 1}, {50, -2}, {60, 2}, {70, 0}, {80, -2}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    if (pair_of((uint32_t)want[i][0]) != want[i][1])
      fail_msg("call %lld: id %lld, want %lld", want[i][0], pair_of((uint32_t)want[i][0]), want[i][1]);
  assert_int_equal(n_pairs, 8);
  assert_true(s->corr_gaps);
  for (size_t k = 0; k < s->store.events.len; k++) { /* the API events carry theirs */
    const ft__event *e = ft__vec_at(&s->store.events, k);
    long long w = pair_of(e->correlation_id);
    assert_int_equal((e->flags & FT__F_HAS_EXTERNAL) != 0, w >= 0);
    if (w >= 0) assert_int_equal(e->external_id, (uint64_t)w);
  }
  ft_session_destroy(s);
}

/* A CUDA 13 launch takes two correlation ids (the nested cuKernelGetName CUPTI is
 * told not to record takes one): an op's launches are 10, 12, 14, not consecutive.
 * Runs then span the unreported ids between an op's calls (one 16-byte run per op,
 * not per launch: P6), but never an id of a call outside the op: every call is
 * reported, one with no id open as a barrier, and a barrier that comes after a run
 * already spans its id wins over the run. With records dropped (a dropped call could
 * be in a gap), runs take consecutive ids only. */
static void check_runs_span_gaps(bool dropped) {
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  uint32_t me = ft__gettid(), other = me + 1;
  uint64_t t[14];
  assert_int_equal(ft__timed_push(s, 5), FT_OK);
  for (int i = 0; i < 6; i++) t[i] = tick(); /* 10, 12, 14 in 5 */
  assert_int_equal(ft__timed_pop(s), FT_OK);
  assert_int_equal(ft__timed_push(s, 6), FT_OK);
  for (int i = 6; i < 10; i++) t[i] = tick(); /* 20, 22 in 6 */
  assert_int_equal(ft__timed_pop(s), FT_OK);
  t[10] = tick(), t[11] = tick();                /* 24 in nothing */
  assert_int_equal(ft__timed_push(s, 6), FT_OK); /* the same id again: a run of its own after 24 */
  t[12] = tick(), t[13] = tick();                /* 26 in 6 */
  assert_int_equal(ft__timed_pop(s), FT_OK);
  api_call(s, 10, me, t[0], t[1]);
  api_call(s, 12, me, t[2], t[3]);
  api_call(s, 11, other, t[2], t[3]); /* another thread, during 5, after 12 in the store */
  api_call(s, 14, me, t[4], t[5]);
  api_call(s, 16, other, t[4], t[5]);
  api_call(s, 20, me, t[6], t[7]);
  api_call(s, 22, me, t[8], t[9]);
  api_call(s, 24, me, t[10], t[11]);
  api_call(s, 26, me, t[12], t[13]);
  static const struct {
    uint32_t corr;
    long long ext;
  } want[] = {{10, 5}, {11, -1}, {12, 5}, {14, 5}, {16, -1}, {20, 6}, {22, 6}, {24, -1}, {25, -1}, {26, 6}};
  char name[16];
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    snprintf(name, sizeof name, "k%u", want[i].corr);
    add(s, FT_EVENT_KERNEL, t[13] + 10 * i + 1, t[13] + 10 * i + 5, want[i].corr, false, 0, name);
  }
  assert_int_equal(ft_session_stop(s), FT_OK); /* no tracer: not timed, nothing attributed yet */
  assert_int_equal(s->n_corr_runs, 0);
  if (dropped) s->dropped = 1;
  assert_int_equal(ft__session_attribute(s, true), FT_OK);
  assert_int_equal(s->corr_gaps, !dropped);
  for (size_t k = 0; k < s->store.events.len; k++) {
    const ft__event *e = ft__vec_at(&s->store.events, k);
    if (e->kind != FT__EV_KERNEL) continue;
    long long got = e->flags & FT__F_HAS_EXTERNAL ? (long long)e->external_id : -1;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
      if (want[i].corr == e->correlation_id && got != want[i].ext)
        fail_msg("kernel of call %u: id %lld, want %lld (%s)", e->correlation_id, got, want[i].ext,
                 dropped ? "records dropped" : "runs span gaps");
  }
  if (dropped) { /* exact runs, one per call that had an id: 10 | 12 | 14 | 20 | 22 | 26 */
    assert_int_equal(s->n_corr_runs, 6);
  } else { /* [10, 14] 5 | [16] none | [20, 22] 6 | [24] none | [26] 6, and 11's barrier */
    assert_int_equal(s->n_corr_runs, 5);
    assert_int_equal(s->n_corr_ext, 1);
  }
  ft_session_destroy(s);
}

static void test_runs_span_gaps_but_not_other_calls(void **state) {
  (void)state;
  check_runs_span_gaps(false);
  check_runs_span_gaps(true);
}

int main(void) {
  /* No vendor library: the session tests must not depend on a GPU. */
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent/libcupti.so", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_window_is_strict_containment),
      cmocka_unit_test(test_foreach_event_one_flow_per_event),
      cmocka_unit_test(test_foreach_event_keys_name_and_metadata),
      cmocka_unit_test(test_flow_edge_cases),
      cmocka_unit_test(test_flow_sparse_ids),
      cmocka_unit_test(test_external_id_zero_and_attribution),
      cmocka_unit_test(test_external_ids_resolved_by_correlation),
      cmocka_unit_test(test_external_id_runs),
      cmocka_unit_test(test_gpu_projection_of_ranges),
      cmocka_unit_test(test_metadata_lists_rendered_per_event),
      cmocka_unit_test(test_start_end_ranges_and_marks),
      cmocka_unit_test(test_ranges_record_and_nest),
      cmocka_unit_test(test_second_session_is_busy),
      cmocka_unit_test(test_write_files_plain_and_gzip),
      cmocka_unit_test(test_distributed_info_only_with_a_rank),
      cmocka_unit_test(test_stale_user_ranges_do_not_pile_up),
      cmocka_unit_test(test_ranges_die_with_their_session),
      cmocka_unit_test(test_correlation_pop_needs_a_push),
      cmocka_unit_test(test_invalid_arguments),
      cmocka_unit_test(test_last_error_per_thread),
      cmocka_unit_test(test_time_attribution_in_any_arrival_order),
      cmocka_unit_test(test_runs_span_gaps_but_not_other_calls),
      cmocka_unit_test(test_user_range_without_device_work_writes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
