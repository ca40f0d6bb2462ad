/* Helpers shared by the C tests: JSON validation with yajl, gunzip, trace rendering and lookups. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "test_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

yajl_val ft_test_parse_json(const char *text, size_t len, char *err, size_t errlen) {
  /* yajl_tree_parse wants a NUL-terminated string: an embedded NUL would make it
   * stop early and accept a prefix, so reject it here as invalid JSON. */
  if (memchr(text, '\0', len)) {
    snprintf(err, errlen, "NUL byte inside the document");
    return NULL;
  }
  char *copy = malloc(len + 1);
  memcpy(copy, text, len);
  copy[len] = '\0';
  yajl_val v = yajl_tree_parse(copy, err, errlen);
  free(copy);
  return v;
}

char *ft_test_gunzip(const char *data, size_t len, size_t *out_len) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 16) != Z_OK) return NULL;
  size_t cap = len * 4 + 1024, used = 0;
  char *out = malloc(cap);
  z.next_in = (unsigned char *)data;
  z.avail_in = (uInt)len;
  int r;
  do {
    if (cap - used < 4096) {
      cap *= 2;
      out = realloc(out, cap);
    }
    z.next_out = (unsigned char *)out + used;
    z.avail_out = (uInt)(cap - used - 1);
    r = inflate(&z, Z_NO_FLUSH);
    used = cap - 1 - z.avail_out;
  } while (r == Z_OK);
  inflateEnd(&z);
  if (r != Z_STREAM_END) {
    free(out);
    return NULL;
  }
  out[used] = '\0';
  *out_len = used;
  return out;
}

char *ft_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  buf[n] = '\0';
  *len = (size_t)n;
  return buf;
}

yajl_val ft_test_get(yajl_val obj, const char *key) {
  if (!YAJL_IS_OBJECT(obj)) return NULL;
  for (size_t i = 0; i < obj->u.object.len; i++)
    if (!strcmp(obj->u.object.keys[i], key)) return obj->u.object.values[i];
  return NULL;
}

const char *ft_test_str(yajl_val obj, const char *key) {
  yajl_val v = ft_test_get(obj, key);
  return v && YAJL_IS_STRING(v) ? v->u.string : "";
}

yajl_val ft_test_find_x(yajl_val doc, const char *cat, const char *name, int nth) {
  yajl_val ev = ft_test_get(doc, "traceEvents");
  for (size_t i = 0; ev && i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    if (!strcmp(ft_test_str(e, "ph"), "X") && !strcmp(ft_test_str(e, "cat"), cat) &&
        (!name || !strcmp(ft_test_str(e, "name"), name)) && nth-- == 0)
      return e;
  }
  return NULL;
}

yajl_val ft_test_render(struct ft_session *s) {
  ft__out *o;
  assert_int_equal(ft__out_open_mem(&o, false), FT_OK);
  assert_int_equal(ft__write_trace(s, o, NULL), FT_OK);
  size_t len;
  const char *m = ft__out_mem(o, &len);
  char err[512];
  yajl_val v = ft_test_parse_json(m, len, err, sizeof err);
  if (!v) fail_msg("trace is not JSON: %s", err);
  ft__out_abort(o);
  return v;
}

void ft_test_settle(void) {
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
}
