/* 16 threads, each inside its own named range, each launching on its own stream:
 * every kernel is attributed to its own thread's range and every flow is paired.
 * Run under TSan in CI (the data-race check on the CPU path). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cupti.h"
#include "internal.h"

enum { THREADS = 16, LAUNCHES = 500 };

static fake_cupti_launch_fn launch;
static ft_session *session;
static uint64_t range_of_stream[THREADS + 1];

static void *worker(void *arg) {
  int t = (int)(intptr_t)arg;
  char name[32];
  snprintf(name, sizeof name, "thread-%d", t);
  uint64_t id;
  if (ft_range_push(session, name, &id) != FT_OK) return (void *)1;
  range_of_stream[t + 1] = id;
  fake_launch k = {.kind = FAKE_KERNEL,
                   .name = "k",
                   .grid = {1, 1, 1},
                   .block = {32, 1, 1},
                   .dur_ns = 100,
                   .stream = (uint32_t)t + 1};
  for (int i = 0; i < LAUNCHES; i++) launch(&k);
  return ft_range_pop(session) == FT_OK ? NULL : (void *)1;
}

typedef struct tally {
  uint64_t kernels, misattributed, starts, ends;
  uint64_t start_ids, end_ids; /* sums, to compare the id sets cheaply */
} tally;

static int visit(void *ctx, const ft_export_event *x) {
  tally *t = ctx;
  if (x->event.kind == FT_EVENT_KERNEL) {
    t->kernels++;
    uint32_t s = x->event.stream;
    if (!x->event.has_external_id || s == 0 || s > THREADS || x->event.external_id != range_of_stream[s])
      t->misattributed++;
  }
  if (x->flow == FT_FLOW_START) t->starts++, t->start_ids += x->flow_id;
  if (x->flow == FT_FLOW_END) t->ends++, t->end_ids += x->flow_id;
  return 0;
}

static void test_threads_attribute_to_their_own_ranges(void **state) {
  (void)state;
  assert_int_equal(ft_session_create(&session, NULL), FT_OK);
  assert_int_equal(ft_session_start(session), FT_OK);
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t), 0);
  for (int t = 0; t < THREADS; t++) {
    void *rc;
    pthread_join(th[t], &rc);
    assert_null(rc);
  }
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
  assert_int_equal(ft_session_stop(session), FT_OK);
  tally t = {0};
  uint64_t outside;
  assert_int_equal(ft_session_foreach_event(session, 0, UINT64_MAX, visit, &t, &outside), FT_OK);
  assert_int_equal(t.kernels, THREADS * LAUNCHES);
  assert_int_equal(t.misattributed, 0);
  assert_int_equal(t.starts, THREADS * LAUNCHES);
  assert_int_equal(t.ends, THREADS * LAUNCHES);
  assert_int_equal(t.start_ids, t.end_ids);
  ft_session_destroy(session);
}

int main(void) {
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "test_threads: %s\n", dlerror());
    return 1;
  }
  launch = (fake_cupti_launch_fn)dlsym(h, "fake_cupti_launch");
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_attribute_to_their_own_ranges)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
