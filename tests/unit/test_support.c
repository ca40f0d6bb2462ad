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
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

/* ft_test_parse_json builds the tree yajl_tree_parse would, through yajl's
 * callback parser: yajl_tree_parse grows each array and object by one realloc
 * per element, which is quadratic under ASan (every realloc moves), and a trace
 * holds ~10^5 events. Here containers double, their capacities kept on the parse
 * stack, so the tree is still one yajl_tree_free can release. */
typedef struct {
  yajl_val v; /* the open array or object, already linked into the tree */
  size_t cap; /* slots allocated in its values (and keys) */
  char *key;  /* an object's key still waiting for its value */
} jp_frame;

typedef struct {
  yajl_val root;
  jp_frame *st;
  size_t depth, cap;
  bool oom;
} jp_ctx;

static yajl_val jp_new(jp_ctx *c, yajl_type t) {
  yajl_val v = calloc(1, sizeof *v);
  if (!v) c->oom = true;
  else v->type = t;
  return v;
}

static char *jp_dup(jp_ctx *c, const void *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) {
    c->oom = true;
    return NULL;
  }
  memcpy(d, s, n); /* n, not strlen: a \u0000 escape puts a NUL inside, as yajl's tree keeps it */
  d[n] = '\0';
  return d;
}

/* Links v into the open container (or makes it the root); takes v, freeing it on failure. */
static int jp_add(jp_ctx *c, yajl_val v) {
  if (!v) return 0;
  if (!c->depth) {
    if (c->root) { /* a second top-level value: yajl's default flags never let one through */
      yajl_tree_free(v);
      return 0;
    }
    c->root = v;
    return 1;
  }
  jp_frame *f = &c->st[c->depth - 1];
  bool obj = f->v->type == yajl_t_object;
  size_t *len = obj ? &f->v->u.object.len : &f->v->u.array.len;
  yajl_val **vals = obj ? &f->v->u.object.values : &f->v->u.array.values;
  if (*len == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 8;
    yajl_val *nv = realloc(*vals, cap * sizeof *nv);
    if (nv) *vals = nv;
    if (nv && obj) {
      const char **nk = realloc(f->v->u.object.keys, cap * sizeof *nk);
      if (nk) f->v->u.object.keys = nk;
      else nv = NULL;
    }
    if (!nv) {
      c->oom = true;
      yajl_tree_free(v);
      return 0;
    }
    f->cap = cap;
  }
  if (obj) {
    f->v->u.object.keys[*len] = f->key;
    f->key = NULL;
  }
  (*vals)[(*len)++] = v;
  return 1;
}

/* Containers are linked into the tree when they open, so a failure part way
 * leaves one consistent tree to free. */
static int jp_open(jp_ctx *c, yajl_type t) {
  yajl_val v = jp_new(c, t);
  if (!jp_add(c, v)) return 0;
  if (c->depth == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    jp_frame *ns = realloc(c->st, cap * sizeof *ns);
    if (!ns) {
      c->oom = true;
      return 0;
    }
    c->st = ns;
    c->cap = cap;
  }
  c->st[c->depth++] = (jp_frame){v, 0, NULL};
  return 1;
}

static int jp_close(void *ctx) {
  jp_ctx *c = ctx;
  if (!c->depth) return 0;
  c->depth--;
  return 1;
}

static int jp_null(void *ctx) { return jp_add(ctx, jp_new(ctx, yajl_t_null)); }

static int jp_bool(void *ctx, int b) { return jp_add(ctx, jp_new(ctx, b ? yajl_t_true : yajl_t_false)); }

static int jp_start_map(void *ctx) { return jp_open(ctx, yajl_t_object); }

static int jp_start_array(void *ctx) { return jp_open(ctx, yajl_t_array); }

static int jp_string(void *ctx, const unsigned char *s, size_t n) {
  jp_ctx *c = ctx;
  yajl_val v = jp_new(c, yajl_t_string);
  if (v && !(v->u.string = jp_dup(c, s, n))) {
    free(v);
    return 0;
  }
  return jp_add(c, v);
}

static int jp_key(void *ctx, const unsigned char *s, size_t n) {
  jp_ctx *c = ctx;
  jp_frame *f = &c->st[c->depth - 1];
  free(f->key);
  f->key = jp_dup(c, s, n);
  return f->key != NULL;
}

/* The flags and values yajl's tree gives a number, so callers see no change:
 * i is valid only for an integer whose magnitude fits LLONG_MAX (yajl rejects
 * LLONG_MIN too), and is otherwise LLONG_MAX or LLONG_MIN by the sign; d is
 * valid when strtod takes the whole text without a range error. */
static int jp_number(void *ctx, const char *s, size_t n) {
  jp_ctx *c = ctx;
  yajl_val v = jp_new(c, yajl_t_number);
  if (!v) return 0;
  char *r = jp_dup(c, s, n);
  if (!r) {
    free(v);
    return 0;
  }
  v->u.number.r = r;
  bool neg = r[0] == '-', ok = true;
  unsigned long long mag = 0;
  for (const char *p = r + neg; *p && ok; p++) {
    unsigned d = (unsigned)(*p - '0');
    ok = d <= 9 && mag <= ((unsigned long long)LLONG_MAX - d) / 10;
    mag = mag * 10 + d;
  }
  if (ok) {
    v->u.number.i = neg ? -(long long)mag : (long long)mag;
    v->u.number.flags |= YAJL_NUMBER_INT_VALID;
  } else {
    v->u.number.i = neg ? LLONG_MIN : LLONG_MAX;
  }
  char *end;
  errno = 0;
  v->u.number.d = strtod(r, &end);
  if (!errno && !*end) v->u.number.flags |= YAJL_NUMBER_DOUBLE_VALID;
  return jp_add(c, v);
}

yajl_val ft_test_parse_json(const char *text, size_t len, char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  /* JSON text holds no raw NUL; callers have always had this message for one
   * (yajl_tree_parse would stop at it and accept the prefix) */
  if (memchr(text, '\0', len)) {
    snprintf(err, errlen, "NUL byte inside the document");
    return NULL;
  }
  static const yajl_callbacks cb = {
      .yajl_null = jp_null,
      .yajl_boolean = jp_bool,
      .yajl_number = jp_number, /* raw text, so r is kept as yajl's tree keeps it */
      .yajl_string = jp_string,
      .yajl_start_map = jp_start_map,
      .yajl_map_key = jp_key,
      .yajl_end_map = jp_close,
      .yajl_start_array = jp_start_array,
      .yajl_end_array = jp_close,
  };
  jp_ctx c = {0};
  yajl_handle h = yajl_alloc(&cb, NULL, &c);
  if (!h) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  yajl_config(h, yajl_allow_comments, 1); /* as yajl_tree_parse sets it; other flags default */
  yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
  if (st == yajl_status_ok) st = yajl_complete_parse(h);
  if (st != yajl_status_ok || !c.root) {
    unsigned char *msg = c.oom ? NULL : yajl_get_error(h, 0, (const unsigned char *)text, len);
    snprintf(err, errlen, "%s", msg ? (char *)msg : c.oom ? "out of memory" : "invalid JSON");
    if (msg) yajl_free_error(h, msg);
    size_t n = errlen ? strcspn(err, "\n") : 0; /* one line: yajl ends its message with one */
    if (n < errlen) err[n] = '\0';
    for (size_t i = 0; i < c.depth; i++) free(c.st[i].key);
    yajl_tree_free(c.root);
    c.root = NULL;
  }
  free(c.st);
  yajl_free(h);
  return c.root;
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
      char *n = realloc(out, cap);
      if (!n) {
        free(out);
        inflateEnd(&z);
        return NULL;
      }
      out = n;
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

yajl_val ft_test_find_ph(yajl_val doc, const char *ph, const char *name, int nth) {
  yajl_val ev = ft_test_get(doc, "traceEvents");
  for (size_t i = 0; ev && i < ev->u.array.len; i++) {
    yajl_val e = ev->u.array.values[i];
    if (!strcmp(ft_test_str(e, "ph"), ph) && !strcmp(ft_test_str(e, "name"), name) && nth-- == 0) return e;
  }
  return NULL;
}

static long long memory_arg(yajl_val args, const char *key) {
  yajl_val v = ft_test_get(args, key);
  if (!v || !YAJL_IS_INTEGER(v)) fail_msg("[memory] args: %s is not an integer", key);
  return YAJL_GET_INTEGER(v);
}

void ft_test_memory_args(yajl_val e, const ft_test_mem_want *w) {
  assert_non_null(e);
  assert_string_equal(ft_test_str(e, "cat"), "cpu_instant_event");
  assert_string_equal(ft_test_str(e, "s"), "t");
  yajl_val a = ft_test_get(e, "args");
  assert_non_null(a);
  assert_int_equal(memory_arg(a, "Device Type"), w->device_type);
  assert_int_equal(memory_arg(a, "Device Id"), w->device);
  assert_int_equal(memory_arg(a, "Addr"), w->addr);
  assert_int_equal(memory_arg(a, "Bytes"), w->bytes);
  assert_int_equal(memory_arg(a, "Total Allocated"), w->allocated);
  assert_int_equal(memory_arg(a, "Total Reserved"), w->reserved);
  assert_int_equal(memory_arg(a, "correlation"), w->correlation);
  if (w->has_ext) assert_int_equal(memory_arg(a, "External id"), w->ext);
  else assert_null(ft_test_get(a, "External id"));
  if (w->has_stream) assert_int_equal(memory_arg(a, "stream"), w->stream);
  else assert_null(ft_test_get(a, "stream"));
  assert_string_equal(ft_test_str(a, "Kind"), w->kind);
  assert_string_equal(ft_test_str(a, "Op"), w->op);
  /* nothing else: 9 keys, one more for each optional one present */
  assert_int_equal(a->u.object.len, 9 + (size_t)w->has_ext + (size_t)w->has_stream);
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

ft_session *ft_test_started(void) {
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  const char *why;
  if (ft_session_device_status(s, &why) != FT_OK) fail_msg("the fake vendor library is not usable: %s", why);
  assert_int_equal(ft_session_start(s), FT_OK);
  return s;
}

void ft_test_settle(void) {
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
}

static const char *const row_names[FT_ROW_COUNT] = {"kernel",   "runtime", "flow",   "linkage",
                                                    "metadata", "memcpy",  "memset", "cbid"};

static bool is_device_cat(const char *cat) {
  return !strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset");
}

static long long int_arg(yajl_val e, const char *key, bool *ok) {
  yajl_val v = ft_test_get(ft_test_get(e, "args"), key);
  *ok = v && YAJL_IS_INTEGER(v);
  return *ok ? YAJL_GET_INTEGER(v) : 0;
}

void ft_test_contract(yajl_val doc, const ft_contract *c) {
  int asserted = 0;
  for (int r = 0; r < FT_ROW_COUNT; r++) {
    if (c->why_not[r]) print_message("     SKIP %s %s: %s\n", c->vendor, row_names[r], c->why_not[r]);
    else asserted++;
  }
  if (asserted < 4) fail_msg("%s: only %d contract rows asserted", c->vendor, asserted);
  yajl_val evs = ft_test_get(doc, "traceEvents");
  assert_non_null(evs);
  size_t n = evs->u.array.len, n_kernels = 0, n_device = 0, n_runtime = 0, n_s = 0, n_f = 0;
  bool copy_seen = false, set_seen = false, launch_seen = false, ok;
  for (size_t i = 0; i < n; i++) {
    yajl_val e = evs->u.array.values[i];
    const char *ph = ft_test_str(e, "ph"), *cat = ft_test_str(e, "cat");
    if (!strcmp(ph, "s")) n_s++;
    if (!strcmp(ph, "f")) n_f++;
    if (strcmp(ph, "X")) continue;
    if (is_device_cat(cat)) {
      n_device++;
      if (!c->why_not[FT_ROW_LINKAGE] && int_arg(e, "External id", &ok) != c->op)
        fail_msg("%s linkage: %s '%s' carries External id %lld, not %lld", c->vendor, cat, ft_test_str(e, "name"),
                 int_arg(e, "External id", &ok), c->op);
    }
    if (!strcmp(cat, "kernel")) {
      n_kernels++;
      yajl_val dur = ft_test_get(e, "dur");
      if (!c->why_not[FT_ROW_KERNEL] &&
          (!dur || !YAJL_IS_NUMBER(dur) || YAJL_GET_DOUBLE(dur) <= 0 || !*ft_test_str(e, "name")))
        fail_msg("%s kernel: '%s' has no name or no positive duration", c->vendor, ft_test_str(e, "name"));
      yajl_val a = ft_test_get(e, "args");
      if (!c->why_not[FT_ROW_METADATA] &&
          !(YAJL_IS_ARRAY(ft_test_get(a, "grid")) && YAJL_IS_ARRAY(ft_test_get(a, "block"))))
        fail_msg("%s metadata: kernel '%s' lacks grid or block", c->vendor, ft_test_str(e, "name"));
    }
    if (!strcmp(cat, "gpu_memcpy") && int_arg(e, "bytes", &ok) == c->memcpy_bytes) copy_seen = true;
    if (!strcmp(cat, "gpu_memset") && int_arg(e, "bytes", &ok) == c->memset_bytes) set_seen = true;
    if (!strcmp(cat, c->runtime_cat)) {
      n_runtime++;
      if (!strcmp(ft_test_str(e, "name"), c->launch_name)) launch_seen = true;
      if (!c->why_not[FT_ROW_CBID]) {
        int_arg(e, "cbid", &ok);
        bool ok2;
        int_arg(e, "correlation", &ok2);
        if (!ok || !ok2)
          fail_msg("%s cbid: runtime '%s' lacks an integer cbid or correlation", c->vendor, ft_test_str(e, "name"));
      }
    }
  }
  if (!c->why_not[FT_ROW_KERNEL] && !n_kernels) fail_msg("%s kernel: no kernel in the trace", c->vendor);
  if (!c->why_not[FT_ROW_RUNTIME] && !launch_seen)
    fail_msg("%s runtime: no %s row named %s", c->vendor, c->runtime_cat, c->launch_name);
  if (!c->why_not[FT_ROW_CBID] && !n_runtime) fail_msg("%s cbid: no runtime rows to check", c->vendor);
  /* one flow per device event, each start with its finish */
  if (!c->why_not[FT_ROW_FLOW] && (n_s != n_device || n_f != n_device))
    fail_msg("%s flow: %zu starts and %zu finishes for %zu device events", c->vendor, n_s, n_f, n_device);
  if (!c->why_not[FT_ROW_MEMCPY] && !copy_seen)
    fail_msg("%s memcpy: no gpu_memcpy of %lld bytes", c->vendor, c->memcpy_bytes);
  if (!c->why_not[FT_ROW_MEMSET] && !set_seen)
    fail_msg("%s memset: no gpu_memset of %lld bytes", c->vendor, c->memset_bytes);
}

void ft_test_gzip_matches_plain(ft__out *p, ft__out *z) {
  size_t plen, zlen, ulen;
  const char *plain = ft__out_mem(p, &plen);
  const char *gz = ft__out_mem(z, &zlen);
  char *un = ft_test_gunzip(gz, zlen, &ulen);
  assert_non_null(un);
  assert_int_equal(ulen, plen);
  assert_memory_equal(un, plain, plen);
  free(un);
  ft__out_abort(p);
  ft__out_abort(z);
}

uint32_t ft_test_rand(uint64_t *state, uint32_t n) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return (uint32_t)(*state % n);
}
