/* The stats reader's JSON parser against yajl: every file of the fuzz corpora and generated documents, the same events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_diff.h"
#include "test_support.h"

static size_t checked;

static void check(const unsigned char *doc, size_t n, size_t chunk, const char *what) {
  char why[512];
  if (ft_json_diff(doc, n, chunk, why, sizeof why)) {
    char shown[512];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 8 < sizeof shown; i++)
      k += (size_t)(doc[i] >= 0x20 && doc[i] < 0x7f ? snprintf(shown + k, 8, "%c", doc[i])
                                                    : snprintf(shown + k, 8, "\\x%02x", doc[i]));
    fail_msg("%s (%zu bytes: %s): %s", what, n, shown, why);
  }
  checked++;
}

/* Every file under FT_FUZZ_CORPUS (fuzz/corpus: each harness's folder), in
 * chunks of 1, 7 and 4096 bytes; a gzip file also as its text. */
static void test_fuzz_corpora(void **state) {
  (void)state;
  const char *root = getenv("FT_FUZZ_CORPUS");
  if (!root) fail_msg("FT_FUZZ_CORPUS is not set");
  DIR *top = opendir(root);
  if (!top) fail_msg("%s: cannot open", root);
  size_t files = 0;
  struct dirent *d;
  while ((d = readdir(top))) {
    if (d->d_name[0] == '.') continue;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, d->d_name);
    DIR *sub = opendir(dir);
    if (!sub) continue;
    struct dirent *f;
    while ((f = readdir(sub))) {
      if (f->d_name[0] == '.') continue;
      char path[8192];
      snprintf(path, sizeof path, "%s/%s", dir, f->d_name);
      size_t n;
      char *doc = ft_test_read_file(path, &n);
      if (!doc) fail_msg("%s: cannot read", path);
      static const size_t chunks[] = {1, 7, 4096};
      for (size_t c = 0; c < 3; c++) check((const unsigned char *)doc, n, chunks[c], path);
      if (n > 2 && (unsigned char)doc[0] == 0x1f && (unsigned char)doc[1] == 0x8b) {
        size_t tn;
        char *text = ft_test_gunzip(doc, n, &tn);
        if (text) check((const unsigned char *)text, tn, 13, path);
        free(text);
      }
      free(doc);
      files++;
    }
    closedir(sub);
  }
  closedir(top);
  print_message("%zu corpus files, %zu parses compared\n", files, checked);
  assert_true(files >= 1000); /* the corpora were found: stats and writer alone hold more */
}

/* Random documents: valid ones, then mutated (a byte changed, dropped or added,
 * or the end cut off), which makes most of them invalid in varied places. */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) { return ft_test_rand(&rng, n); }

typedef struct buf {
  unsigned char b[1 << 16];
  size_t n;
} buf;
static void ch(buf *o, unsigned char c) {
  if (o->n < sizeof o->b) o->b[o->n++] = c;
}
static void str(buf *o, const char *s) {
  while (*s) ch(o, (unsigned char)*s++);
}
static void ws(buf *o) {
  static const char w[] = " \t\n\r";
  while (!rnd(3)) ch(o, (unsigned char)w[rnd(4)]);
}
static void hex4(buf *o, unsigned v) {
  char t[8];
  snprintf(t, sizeof t, rnd(2) ? "%04x" : "%04X", v);
  str(o, t);
}
static void gen_string(buf *o) {
  ch(o, '"');
  for (uint32_t i = 0, n = rnd(4) ? rnd(12) : rnd(200); i < n; i++) {
    switch (rnd(10)) {
    case 0: {
      static const char *const e[] = {"\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"};
      str(o, e[rnd(8)]);
      break;
    }
    case 1: /* \u: anything, surrogates (paired, lone, odd) often */
      str(o, "\\u");
      switch (rnd(4)) {
      case 0: hex4(o, rnd(0x10000)); break;
      case 1: hex4(o, 0xD800 + rnd(0x400)), str(o, "\\u"), hex4(o, 0xDC00 + rnd(0x400)); break;
      case 2: hex4(o, 0xD800 + rnd(0x800)); break;
      default: hex4(o, rnd(0x80)); break;
      }
      break;
    case 2: ch(o, (unsigned char)(0x7f + rnd(0x81))); break; /* DEL and bytes >= 0x80, no UTF-8 check */
    default:
      ch(o, (unsigned char)(0x20 + rnd(0x5f)));
      if (o->b[o->n - 1] == '"' || o->b[o->n - 1] == '\\') o->n--;
    }
  }
  ch(o, '"');
}
static void digits(buf *o, uint32_t max) {
  for (uint32_t i = 0, n = 1 + rnd(max); i < n; i++) ch(o, (unsigned char)('0' + rnd(10)));
}
static void gen_number(buf *o) {
  if (rnd(2)) ch(o, '-');
  if (rnd(4)) {
    ch(o, (unsigned char)('1' + rnd(9)));
    if (rnd(2)) digits(o, rnd(3) ? 4 : 40);
  } else {
    ch(o, '0');
  }
  if (rnd(2)) ch(o, '.'), digits(o, 6);
  if (!rnd(3)) {
    ch(o, rnd(2) ? 'e' : 'E');
    if (rnd(2)) ch(o, rnd(2) ? '+' : '-');
    digits(o, 3);
  }
}
static void gen_value(buf *o, int depth) {
  ws(o);
  switch (depth > 4 ? 3 + rnd(4) : rnd(8)) {
  case 0:
  case 1:
    ch(o, '{');
    for (uint32_t i = 0, n = rnd(5); i < n; i++) {
      if (i) ch(o, ',');
      ws(o);
      gen_string(o);
      ws(o);
      ch(o, ':');
      gen_value(o, depth + 1);
    }
    ws(o);
    ch(o, '}');
    break;
  case 2:
    ch(o, '[');
    for (uint32_t i = 0, n = rnd(5); i < n; i++) {
      if (i) ch(o, ',');
      gen_value(o, depth + 1);
    }
    ws(o);
    ch(o, ']');
    break;
  case 3: gen_string(o); break;
  case 4: gen_number(o); break;
  default: {
    static const char *const lit[] = {"true", "false", "null"};
    str(o, lit[rnd(3)]);
  }
  }
  ws(o);
}

static void mutate(buf *o) {
  static const char pick[] = "{}[],:\"\\0123456789-+.eEtfnulrsaxu \t\n\r\v\f\x01\x1f\x7f\x80\xff";
  for (uint32_t k = 0, m = 1 + rnd(3); k < m && o->n; k++) {
    size_t at = rnd((uint32_t)o->n);
    unsigned char c = (unsigned char)pick[rnd(sizeof pick - 1)];
    switch (rnd(4)) {
    case 0: o->b[at] = c; break;
    case 1: memmove(o->b + at, o->b + at + 1, o->n - at - 1), o->n--; break;
    case 2:
      if (o->n < sizeof o->b) memmove(o->b + at + 1, o->b + at, o->n - at), o->b[at] = c, o->n++;
      break;
    default: o->n = at; break;
    }
  }
}

static void test_generated_documents(void **state) {
  (void)state;
  static buf o;
  size_t valid = 0, n = 200000;
  for (size_t i = 0; i < n; i++) {
    o.n = 0;
    gen_value(&o, 0);
    char what[64];
    snprintf(what, sizeof what, "generated document %zu", i);
    if (i % 2) {
      mutate(&o);
    } else if (o.n < sizeof o.b) { /* not cut by the buffer's end */
      /* a valid one must be accepted by both, not only alike */
      static ft__json j;
      ft_json_log log = {0};
      if (ft_json_log_ours(&j, &log, o.b, o.n, 0))
        fail_msg("%s refused: %s at %llu", what, j.err_msg, (unsigned long long)j.err_at);
      ft_json_log_free(&log);
      valid++;
    }
    check(o.b, o.n, 1 + rnd(17), what);
  }
  print_message("%zu generated documents (%zu valid, the rest mutated)\n", n, valid);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuzz_corpora),
      cmocka_unit_test(test_generated_documents),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
