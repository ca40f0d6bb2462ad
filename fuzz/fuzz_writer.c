/* libFuzzer harness for the trace writer: arbitrary bytes become event names,
 * metadata keys and values, ids and times; the trace must always parse as JSON
 * (yajl, strict UTF-8) and keep its flow halves paired. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "internal.h"

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static unsigned byte(reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}

/* A string of up to 63 bytes, NUL-free (names are C strings). */
static void text(reader *r, char *out) {
  size_t len = byte(r) % 64, i = 0;
  for (; i < len && r->n; i++) {
    unsigned c = byte(r);
    out[i] = (char)(c ? c : 0x80); /* a stray continuation byte instead of NUL */
  }
  out[i] = '\0';
}

static size_t count(const char *hay, size_t n, const char *needle) {
  size_t k = 0, m = strlen(needle);
  for (const char *p = hay; (p = memmem(p, n - (size_t)(p - hay), needle, m)); p += m) k++;
  return k;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent", 1); /* no vendor library: fast, deterministic */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) abort();
  ft__session_set_window(s, 1000, 1000 + 1000 * (uint64_t)(byte(&r) + 1));
  bool gz = byte(&r) & 1;
  unsigned n = byte(&r) % 32;
  static char name[64], keys[4][64], vals[4][64];
  for (unsigned i = 0; i < n && r.n; i++) {
    text(&r, name);
    ft_kv md[4];
    unsigned nmd = byte(&r) % 5;
    for (unsigned k = 0; k < nmd; k++) {
      text(&r, keys[k]);
      text(&r, vals[k]);
      md[k] = (ft_kv){keys[k], vals[k]};
    }
    uint64_t start = 900 + 8 * (uint64_t)byte(&r);
    ft_device_event ev = {.kind = (ft_event_kind)(byte(&r) % 5),
                          .start_ns = start,
                          .end_ns = start + 4 * (uint64_t)byte(&r),
                          .correlation_id = byte(&r) % 8,
                          .has_external_id = byte(&r) & 1,
                          .external_id = byte(&r) % 4,
                          .device = byte(&r) % 2,
                          .stream = byte(&r) % 3,
                          .thread_id = byte(&r) % 3,
                          .name = name,
                          .metadata = md,
                          .n_metadata = nmd};
    if (ft__session_inject(s, &ev)) abort();
    if (byte(&r) % 4 == 0) {
      uint64_t id;
      if (!ft__range_start(s, name, &id)) ft__range_end(s, id);
    }
  }
  ft__out *o;
  if (ft__out_open_mem(&o, gz)) abort();
  ft__export_stats stats;
  if (ft__write_trace(s, o, &stats)) abort();
  size_t len;
  const char *m = ft__out_mem(o, &len);
  char *plain = NULL;
  if (gz) { /* inflated in a buffer grown as needed: a fixed worst case costs every run */
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 31) != Z_OK) abort();
    size_t cap = 8 * len + 4096;
    plain = malloc(cap);
    z.next_in = (unsigned char *)m;
    z.avail_in = (uInt)len;
    int zr;
    do {
      if (z.total_out == cap) plain = realloc(plain, cap *= 2);
      z.next_out = (unsigned char *)plain + z.total_out;
      z.avail_out = (uInt)(cap - z.total_out);
      zr = inflate(&z, Z_NO_FLUSH);
    } while (zr == Z_OK);
    if (zr != Z_STREAM_END || z.avail_in) abort(); /* our gzip must be one complete member */
    len = z.total_out;
    inflateEnd(&z);
    m = plain;
  }
  if (memchr(m, '\0', len)) abort(); /* a raw NUL is never valid inside JSON text */
  /* yajl's parser without callbacks only validates: no tree to build and free */
  yajl_handle h = yajl_alloc(NULL, NULL, NULL);
  if (!h) abort();
  if (yajl_parse(h, (const unsigned char *)m, len) != yajl_status_ok || yajl_complete_parse(h) != yajl_status_ok)
    abort(); /* the writer produced invalid JSON */
  yajl_free(h);
  if (count(m, len, "{\"ph\":\"s\"") != stats.flow_starts || count(m, len, "{\"ph\":\"f\"") != stats.flows)
    abort(); /* one start per launch, one end per linked device event */
  free(plain);
  ft__out_abort(o);
  ft_session_destroy(s);
  return 0;
}
