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
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti_runtime_cbid.h>

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

/* Memory from callbacks, 8 threads allocating at once (each from its own pool, and
 * outside any): every allocation and free an event, each pool's growth reserved once;
 * then threads still allocating while the session stops and is destroyed, which
 * waits for callbacks in flight (an event after stop would be a use after free). */
typedef void (*fake_call_fn)(const fake_launch *l);
static fake_call_fn call;
enum { MEM_THREADS = 8, MEM_ROUNDS = 300 };
static atomic_int keep_allocating;

static void mem_round(int t) {
  uint64_t pool = 0x100000000000ull + (uint64_t)t * (1ull << 30), own = 0x200000000000ull + (uint64_t)t * (1ull << 30);
  fake_launch a = {.kind = FAKE_MEMORY,
                   .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
                   .mem_op = 1,
                   .address = pool,
                   .bytes = 4096,
                   .stream = (uint32_t)t + 1,
                   .pool_address = pool,
                   .pool_size = 2 << 20};
  call(&a);
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, a.mem_op = 2;
  call(&a);
  fake_launch m = {.kind = FAKE_MEMORY,
                   .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                   .mem_op = 1,
                   .address = own,
                   .bytes = 8192};
  call(&m);
  m.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, m.mem_op = 2;
  call(&m);
}

static void *mem_worker(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < MEM_ROUNDS; i++) mem_round(t);
  while (atomic_load(&keep_allocating)) mem_round(t);
  return NULL;
}

static void test_threads_allocate_at_once(void **state) {
  (void)state;
  setenv("FLAGTRACE_CUPTI_MEMORY", "callbacks", 1);
  ft_session_options o;
  ft_session_options_init(&o);
  assert_int_equal(ft_session_create(&session, &o), FT_OK);
  assert_int_equal(ft_session_start(session), FT_OK);
  pthread_t th[MEM_THREADS];
  for (int t = 0; t < MEM_THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, mem_worker, (void *)(intptr_t)t), 0);
  for (int t = 0; t < MEM_THREADS; t++) pthread_join(th[t], NULL);
  assert_int_equal(ft_session_stop(session), FT_OK);
  ft_session_counts st;
  assert_int_equal(ft_session_counts_get(session, &st), FT_OK);
  /* per round 4 operations; per thread its pool's one reservation */
  assert_int_equal(st.device_events, MEM_THREADS * (MEM_ROUNDS * 4 + 1));
  ft_session_destroy(session);
  /* stopped and destroyed while the threads go on allocating */
  atomic_store(&keep_allocating, 1);
  assert_int_equal(ft_session_create(&session, &o), FT_OK);
  assert_int_equal(ft_session_start(session), FT_OK);
  for (int t = 0; t < MEM_THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, mem_worker, (void *)(intptr_t)t), 0);
  struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);
  assert_int_equal(ft_session_stop(session), FT_OK);
  ft_session_destroy(session);
  atomic_store(&keep_allocating, 0);
  for (int t = 0; t < MEM_THREADS; t++) pthread_join(th[t], NULL);
}

int main(void) {
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "test_threads: %s\n", dlerror());
    return 1;
  }
  launch = (fake_cupti_launch_fn)dlsym(h, "fake_cupti_launch");
  call = (fake_call_fn)dlsym(h, "fake_cupti_call");
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_attribute_to_their_own_ranges),
                                     cmocka_unit_test(test_threads_allocate_at_once)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
