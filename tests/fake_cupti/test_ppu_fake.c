/* The CUPTI tracer as PPU builds it, against the fake libcupti in PPU mode
 * (FAKE_CUPTI_PPU=1): a driver record beside every runtime record under the same
 * correlation id, so buffers hold many more, smaller records than on NVIDIA. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>

#include "fake_cupti.h"
#include "internal.h"
#include "test_support.h"

static fake_cupti_launch_fn launch;

#include "fake_memory.h"

enum { LAUNCHES = 36000 }; /* 108,000 API-buffer records in one buffer: past a flat cap of 100,000 */

static void test_every_record_of_a_dense_buffer(void **state) {
  (void)state;
  ft_session *s = ft_test_started();
  uint64_t op;
  assert_int_equal(ft_range_push(s, "aten::add_", &op), FT_OK);
  fake_launch k = {.kind = FAKE_KERNEL, .name = "ppu_kernel", .grid = {1, 1, 1}, .block = {32, 1, 1}, .dur_ns = 50};
  for (int i = 0; i < LAUNCHES; i++) launch(&k);
  fake_launch cp = {.kind = FAKE_MEMCPY, .copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, .bytes = 256, .dur_ns = 900};
  fake_launch ms = {.kind = FAKE_MEMSET, .memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, .bytes = 128, .dur_ns = 90};
  launch(&cp);
  launch(&ms);
  assert_int_equal(ft_range_pop(s), FT_OK);
  ft_test_settle();
  assert_int_equal(ft_session_stop(s), FT_OK);
  yajl_val doc = ft_test_render(s);
  yajl_val ev = ft_test_get(doc, "traceEvents");
  size_t kernels = 0, runtime = 0, driver = 0, starts_on_runtime = 0, starts = 0, ends = 0, attributed = 0;
  for (size_t i = 0; i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    const char *ph = ft_test_str(e, "ph"), *cat = ft_test_str(e, "cat");
    if (!strcmp(ph, "X") && !strcmp(cat, "kernel")) {
      kernels++;
      attributed += YAJL_GET_INTEGER(ft_test_get(ft_test_get(e, "args"), "External id")) == (long long)op;
    }
    runtime += !strcmp(ph, "X") && !strcmp(cat, "cuda_runtime");
    driver += !strcmp(ph, "X") && !strcmp(cat, "cuda_driver");
    ends += !strcmp(ph, "f");
    if (!strcmp(ph, "s")) {
      starts++;
      /* the flow leaves from the slice just before it: the runtime call, not its driver twin */
      yajl_val prev = ev->u.array.values[i - 1];
      starts_on_runtime += !strcmp(ft_test_str(prev, "cat"), "cuda_runtime");
    }
  }
  assert_int_equal(kernels, LAUNCHES);
  assert_int_equal(attributed, LAUNCHES);
  assert_int_equal(runtime, LAUNCHES + 2);
  assert_int_equal(driver, LAUNCHES + 2);
  assert_int_equal(starts, LAUNCHES + 2); /* one pair per device event, no more */
  assert_int_equal(ends, LAUNCHES + 2);
  assert_int_equal(starts_on_runtime, LAUNCHES + 2);
  ft_contract con = {.vendor = "ppu/cupti",
                     .runtime_cat = "cuda_runtime",
                     .launch_name = "cudaLaunchKernel",
                     .op = (long long)op,
                     .memcpy_bytes = 256,
                     .memset_bytes = 128};
  ft_test_contract(doc, &con);
  yajl_tree_free(doc);
  ft_session_destroy(s);
}

int main(void) {
  void *h = dlopen(getenv("FLAGOS_TRACER_LIBRARY"), RTLD_NOW | RTLD_LOCAL);
  if (!h || !getenv("FAKE_CUPTI_PPU")) {
    fprintf(stderr, "test_ppu_fake: needs FLAGOS_TRACER_LIBRARY (the fake libcupti) and FAKE_CUPTI_PPU=1\n");
    return 1;
  }
  launch = (fake_cupti_launch_fn)dlsym(h, "fake_cupti_launch");
  if (!launch) return 1;
  /* memory: PPU's library decodes with CUPTI 13's layouts (its version is gated to
   * CUPTI 13), stamped on its own clock, not ours (FT_ACCELERATOR_NAME is not cuda) */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_record_of_a_dense_buffer), cmocka_unit_test(test_memory_at_the_sink),
      cmocka_unit_test(test_memory_driver_calls_and_syncs),  cmocka_unit_test(test_memory_only_when_asked),
      cmocka_unit_test(test_memory_refused_keeps_the_rest),  cmocka_unit_test(test_memory_in_the_trace),
      cmocka_unit_test(test_memory_many_pools_bounded),      cmocka_unit_test(test_memory_finalized_between_sessions),
      cmocka_unit_test(test_memory_staged_until_flush),      cmocka_unit_test(test_memory_slot_free_between_sessions)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
