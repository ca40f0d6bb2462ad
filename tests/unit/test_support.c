/* Helpers shared by the unit tests: JSON validation with yajl, gunzip. */
#include "test_support.h"

#include <stdio.h>
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
