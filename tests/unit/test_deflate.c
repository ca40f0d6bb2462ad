/* The block pipeline behind gzip and file output: every backend and thread count gives a gzip member that inflates to
 * the input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "deflate.h"
#include "test_support.h"

typedef struct buf {
  char *p;
  size_t len, cap;
  size_t fail_after; /* the sink fails (EPIPE) once this many bytes were taken; 0: never */
} buf;

static int sink(void *ctx, const void *p, size_t n) {
  buf *b = ctx;
  if (b->fail_after && b->len + n > b->fail_after) return EPIPE;
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
  return 0;
}

/* Text that compresses like a trace, with stretches of noise that do not. */
static char *make_input(size_t n) {
  char *s = malloc(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    s[i] = (i / 100000) % 3 == 2 ? (char)(x >> 24) : "{\"ph\":\"X\",\"name\":\"k\"},\n"[i % 24];
  }
  return s;
}

/* Pushes in[0..n) through the pipeline in blocks of the pipeline's size. */
static int run(const ft__deflate_ops *ops, int threads, const char *in, size_t n, buf *out, int *workers) {
  ft__gz *g;
  assert_int_equal(ft__gz_open(&g, ops, threads, sink, out), FT_OK);
  int err = 0;
  size_t cap, used = 0;
  char *b = ft__gz_buf(g, &cap);
  assert_int_equal(cap, FT__GZ_FIRST_BLOCK);
  for (size_t i = 0; i < n; i++) {
    if (used == cap) {
      err = ft__gz_push(g, used);
      b = ft__gz_buf(g, &cap);
      assert_int_equal(cap, FT__GZ_BLOCK);
      used = 0;
    }
    b[used++] = in[i];
  }
  if (workers) *workers = ft__gz_workers(g);
  int fin = ft__gz_finish(g, used);
  ft__gz_free(g);
  return err ? err : fin;
}

static bool same_bytes(const buf *a, const buf *b) { return a->len == b->len && !memcmp(a->p, b->p, a->len); }

/* ISA-L's igzip, with workers, gave a valid member 1-2 bytes longer about once in
 * 300 runs of this test (ASan or not, CI included): one 512 KiB block compressed
 * differently, never reproduced by a second compression. Randomizing its state,
 * its history, the input's alignment, or the bytes before and after the input did
 * not make it more frequent (docs/measurements.md); zlib never did it. A difference
 * the thread count causes comes back when both are compressed again, and fails;
 * a passing one is said. */
static buf settle(const ft__deflate_ops *ops, int threads, const char *in, size_t n, buf out, buf *first) {
  buf again = {0}, serial = {0};
  assert_int_equal(run(ops, threads, in, n, &again, NULL), 0);
  assert_int_equal(run(ops, 0, in, n, &serial, NULL), 0);
  print_message("%s, %d threads, %zu bytes: a %zu-byte member against %zu serially; again: %zu and %zu\n", ops->name,
                threads, n, out.len, first->len, again.len, serial.len);
  free(out.p);
  if (same_bytes(&again, &serial) && !same_bytes(&serial, first)) { /* the serial one was the odd one */
    free(first->p);
    *first = serial;
    return again;
  }
  free(serial.p);
  return again;
}

static void check_round_trip(const ft__deflate_ops *ops, size_t n) {
  char *in = make_input(n);
  buf first = {0};
  for (int threads = 0; threads <= 3; threads++) {
    buf out = {0};
    int workers = -1;
    assert_int_equal(run(ops, threads, in, n, &out, &workers), 0);
    /* workers start only once a second block comes */
    assert_int_equal(workers, n > FT__GZ_FIRST_BLOCK ? threads : 0);
    size_t len;
    char *plain = ft_test_gunzip(out.p, out.len, &len); /* one member: stops at its end */
    assert_non_null(plain);
    assert_int_equal(len, n);
    assert_memory_equal(plain, in, n);
    free(plain);
    /* one gzip member, nothing after it: inflate ends exactly at the last byte */
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    char *sink_buf = malloc(n + 1);
    z.next_in = (unsigned char *)out.p;
    z.avail_in = (uInt)out.len;
    z.next_out = (unsigned char *)sink_buf;
    z.avail_out = (uInt)n + 1;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(z.avail_in, 0);
    inflateEnd(&z);
    free(sink_buf);
    /* the bytes do not depend on the number of threads */
    if (threads == 0) {
      first = out;
    } else {
      if (!same_bytes(&out, &first)) out = settle(ops, threads, in, n, out, &first);
      assert_int_equal(out.len, first.len);
      assert_memory_equal(out.p, first.p, first.len);
      free(out.p);
    }
  }
  free(first.p);
  free(in);
}

static void test_zlib_round_trip(void **state) {
  (void)state;
  check_round_trip(&ft__deflate_zlib, 0);
  check_round_trip(&ft__deflate_zlib, 1000);
  check_round_trip(&ft__deflate_zlib, FT__GZ_FIRST_BLOCK);
  check_round_trip(&ft__deflate_zlib, FT__GZ_FIRST_BLOCK + 1);
  check_round_trip(&ft__deflate_zlib, 7 * FT__GZ_BLOCK + 333);
}

static void test_isal_round_trip(void **state) {
  (void)state;
  const ft__deflate_ops *isal = ft__deflate_isal();
  if (!isal) {
    print_message("ISA-L not available here: skipped\n");
    skip();
  }
  check_round_trip(isal, 0);
  check_round_trip(isal, 1000);
  check_round_trip(isal, FT__GZ_FIRST_BLOCK);
  check_round_trip(isal, FT__GZ_FIRST_BLOCK + 1);
  check_round_trip(isal, 7 * FT__GZ_BLOCK + 333);
}

/* Plain text through the ring: the bytes as pushed, in order, no framing. */
static void test_plain_passes_through(void **state) {
  (void)state;
  size_t n = 5 * FT__GZ_BLOCK + 17;
  char *in = make_input(n);
  for (int threads = 0; threads <= 2; threads++) {
    buf out = {0};
    int workers = -1;
    assert_int_equal(run(NULL, threads, in, n, &out, &workers), 0);
    assert_int_equal(workers, threads ? 1 : 0); /* one writer is enough */
    assert_int_equal(out.len, n);
    assert_memory_equal(out.p, in, n);
    free(out.p);
  }
  free(in);
}

/* A sink that fails: the first error comes back, nothing hangs, later blocks are
 * not written. */
static void test_sink_error_reported(void **state) {
  (void)state;
  size_t n = 9 * FT__GZ_BLOCK;
  char *in = make_input(n);
  const ft__deflate_ops *backends[] = {&ft__deflate_zlib, ft__deflate_isal(), NULL};
  for (int k = 0; k < 3; k++) {
    if (k == 1 && !backends[k]) continue;
    for (int threads = 0; threads <= 3; threads += 3) {
      buf out = {.fail_after = 2 * FT__GZ_BLOCK};
      assert_int_equal(run(backends[k], threads, in, n, &out, NULL), EPIPE);
      assert_true(out.len <= 2 * FT__GZ_BLOCK);
      free(out.p);
    }
  }
  free(in);
}

/* The ft__out writer on top: a session-sized text in pieces, gzip with threads,
 * inflates to what the plain writer produced. */
static void test_out_gzip_threads_match_plain(void **state) {
  (void)state;
  ft__out *p, *z;
  assert_int_equal(ft__out_open_gz(&p, NULL, 0, false), FT_OK);
  assert_int_equal(ft__out_open_gz(&z, &ft__deflate_zlib, 3, false), FT_OK);
  char line[80];
  for (int i = 0; i < 300000; i++) {
    int len = snprintf(line, sizeof line, "{\"i\": %d, \"s\": ", i);
    ft__out_write(p, line, (size_t)len);
    ft__out_write(z, line, (size_t)len);
    ft__out_json_string(p, "caf\xc3\xa9 \"q\"", 9);
    ft__out_json_string(z, "caf\xc3\xa9 \"q\"", 9);
    FT__OUT_LIT(p, "}\n");
    FT__OUT_LIT(z, "}\n");
  }
  ft_test_gzip_matches_plain(p, z);
}

/* --write DIR: a session of n kernel + launch pairs written through the public
 * path as DIR/trace.json and DIR/trace.json.gz, for the readers' test
 * (tests/e2e/test_gzip_readers.py). */
static int write_pair(const char *dir, size_t n) {
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent", 1); /* injected events only */
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) return 1;
  ft__session_set_window(s, 0, UINT64_MAX / 2);
  ft_kv md[] = {{"grid", "[256, 1, 1]"}, {"block", "[128, 1, 1]"}, {"note", "caf\xc3\xa9 \"q\""}};
  char name[64];
  for (size_t i = 0; i < n; i++) {
    snprintf(name, sizeof name, "kernel_%zu<float>(int)", i % 37);
    uint64_t t = 1000000 + 4000 * i;
    ft_device_event rt = {.kind = FT_EVENT_RUNTIME,
                          .start_ns = t,
                          .end_ns = t + 1500,
                          .correlation_id = (uint32_t)i + 1,
                          .thread_id = 7,
                          .name = "cudaLaunchKernel"};
    ft_device_event k = {.kind = FT_EVENT_KERNEL,
                         .start_ns = t + 2000,
                         .end_ns = t + 3000 + i % 977,
                         .correlation_id = (uint32_t)i + 1,
                         .stream = 7,
                         .name = name,
                         .metadata = md,
                         .n_metadata = 3};
    if (ft__session_inject(s, &rt) || ft__session_inject(s, &k)) return 1;
  }
  char path[4096];
  for (int gz = 0; gz < 2; gz++) {
    snprintf(path, sizeof path, "%s/trace.json%s", dir, gz ? ".gz" : "");
    if (ft_session_write(s, path)) {
      fprintf(stderr, "%s\n", ft_session_last_error(s));
      return 1;
    }
  }
  ft_session_destroy(s);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--write")) return write_pair(argv[2], (size_t)atol(argv[3]));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zlib_round_trip),
      cmocka_unit_test(test_isal_round_trip),
      cmocka_unit_test(test_plain_passes_through),
      cmocka_unit_test(test_sink_error_reported),
      cmocka_unit_test(test_out_gzip_threads_match_plain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
