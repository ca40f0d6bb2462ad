/* The report's timeline: each file's events collected as it is read, written as compact columnar JSON. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "report_events.h"
#include "stats_internal.h"
#include "stats_out.h"

/* One slice as the page needs it: 56 B here (the S of docs/guarantees.md's formula),
 * about 20-30 B of JSON in the page. A kernel's launch (grid, block) is kept apart:
 * most slices have none. */
typedef struct tl_ev {
  int64_t ts, dur, pid, tid, corr, ext;
  uint32_t name;
  uint32_t launch; /* cls (FT__TL_*) in the top 2 bits; below, its launch's index + 1 (0: none) */
} tl_ev;
_Static_assert(sizeof(tl_ev) == 56, "the per-slice cost docs/report.md states");
typedef struct tl_launch {
  int32_t grid[3], block[3];
} tl_launch;
#define CLS_SHIFT 30
#define CLS(e) ((int)((e)->launch >> CLS_SHIFT))
#define LAUNCH(e) ((e)->launch & ((1u << CLS_SHIFT) - 1))

enum { TL_OPS, TL_RUNTIME, TL_DEVICE, TL_DEV_RANGE };

struct ft__tl_file {
  ft__vec ev;       /* tl_ev */
  ft__vec launches; /* tl_launch */
  ft__strtab names;
  int64_t first; /* the earliest slice's ts (INT64_MAX: none) */
};

static int cls_of(int sec) {
  switch (sec) {
  case FT__SEC_OP:
  case FT__SEC_RANGE:
  case FT__SEC_OVERHEAD:
  case FT__SEC_PYFUNC: return TL_OPS;
  case FT__SEC_RUNTIME:
  case FT__SEC_DRIVER: return TL_RUNTIME;
  case FT__SEC_KERNEL:
  case FT__SEC_MEMCPY:
  case FT__SEC_MEMSET:
  case FT__SEC_SYNC: return TL_DEVICE;
  case FT__SEC_GPU_RANGE: return TL_DEV_RANGE;
  default: return -1;
  }
}

static bool collect(void *ctx, const ft__ev *e, const char *name, const char *cat) {
  (void)cat;
  struct ft__tl_file *f = ctx;
  int cls = cls_of(e->sec);
  if (cls < 0) return true;
  tl_ev *v = ft__vec_push(&f->ev);
  if (!v || ft__intern(&f->names, name, e->name_len, &v->name)) return false;
  v->ts = e->ts;
  if (e->ts < f->first) f->first = e->ts;
  v->dur = e->dur;
  v->pid = e->dev;
  v->launch = (uint32_t)cls << CLS_SHIFT;
  bool dev = cls >= TL_DEVICE;
  /* device work: one row per (device, stream); host calls: per (process, thread) */
  v->tid = dev ? (e->has_stream ? e->stream : 0) : (e->has_tid ? e->tid : 0);
  /* ids the page can hold exactly (below 2^52), as differences from the previous slice's */
  v->corr = e->has_corr && e->corr > 0 && e->corr < (1ll << 52) ? e->corr : 0;
  v->ext = e->has_ext && e->ext > 0 && e->ext < (1ll << 52) ? e->ext : 0;
  if (e->has_grid && e->has_block) {
    if (f->launches.len >= (1u << CLS_SHIFT) - 1) return true; /* past 2^30 launches: shown without */
    tl_launch *l = ft__vec_push(&f->launches);
    if (!l) return false;
    memcpy(l->grid, e->grid, sizeof l->grid);
    memcpy(l->block, e->block, sizeof l->block);
    v->launch |= (uint32_t)f->launches.len;
  }
  return true;
}

ft_status ft__tl_new(ft__tl *tl, size_t n_files) {
  memset(tl, 0, sizeof *tl);
  tl->n = n_files;
  tl->files = calloc(n_files ? n_files : 1, sizeof *tl->files);
  tl->ctx = calloc(n_files ? n_files : 1, sizeof *tl->ctx);
  tl->base_ns = calloc(n_files ? n_files : 1, sizeof *tl->base_ns);
  if (!tl->files || !tl->ctx || !tl->base_ns) return FT_ENOMEM;
  for (size_t i = 0; i < n_files; i++) {
    tl->files[i] = calloc(1, sizeof **tl->files);
    if (!tl->files[i]) return FT_ENOMEM;
    ft__vec_init(&tl->files[i]->ev, sizeof(tl_ev), 14);
    ft__vec_init(&tl->files[i]->launches, sizeof(tl_launch), 12);
    ft__intern_init(&tl->files[i]->names);
    tl->files[i]->first = INT64_MAX;
    tl->ctx[i] = tl->files[i];
  }
  return FT_OK;
}

void ft__tl_opts(ft__tl *tl, ft_stat_read_opts *o) {
  o->on_event = collect;
  o->on_event_ctx = tl->ctx;
}

void ft__tl_free(ft__tl *tl) {
  for (size_t i = 0; tl->files && i < tl->n; i++) {
    if (!tl->files[i]) continue;
    ft__vec_free(&tl->files[i]->ev);
    ft__vec_free(&tl->files[i]->launches);
    ft__intern_free(&tl->files[i]->names);
    free(tl->files[i]);
  }
  free(tl->files);
  free(tl->ctx);
  free(tl->base_ns);
  memset(tl, 0, sizeof *tl);
}

/* The trace's top-level "baseTimeNanoseconds" (our traces write it before the events,
 * kineto's after them): -1 when the file states none or cannot be read again, -2 when it
 * can be read once. Only a regular file is read again: a FIFO's second open would wait
 * for a writer for good, a pipe (<(cmd)) is empty by now; they are read once, as stdin is. */
static int64_t base_time(const char *path) {
  static const char key[] = "\"baseTimeNanoseconds\"";
  if (!strcmp(path, "-")) return -2;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO's open does not wait */
  struct stat sb;
  if (fd < 0) return -1;
  if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) return close(fd), -2;
  gzFile g = gzdopen(fd, "rb");
  if (!g) return close(fd), -1;
  enum { CHUNK = 1 << 20, KEEP = 64 };
  char *buf = malloc(CHUNK + KEEP + 1);
  int64_t v = -1;
  size_t have = 0;
  int n;
  while (buf && v < 0 && (n = gzread(g, buf + have, CHUNK)) > 0) {
    have += (size_t)n;
    buf[have] = '\0';
    for (char *p = buf; (p = memmem(p, have - (size_t)(p - buf), key, sizeof key - 1)); p++) {
      if (p > buf && p[-1] == '\\') continue; /* inside a string */
      char *q = p + sizeof key - 1;
      while (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t') q++;
      if (*q++ != ':') continue;
      char *end;
      long long x = strtoll(q, &end, 10);
      if (end != q && x >= 0) v = x;
      break;
    }
    size_t keep = have < KEEP ? have : KEEP; /* a key cut by the chunk's end */
    memmove(buf, buf + have - keep, keep);
    have = keep;
  }
  free(buf);
  gzclose(g);
  return v;
}

void ft__tl_base_times(ft__tl *tl, const ft_stat_job *job) {
  for (size_t i = 0; i < tl->n && i < job->n_files; i++) tl->base_ns[i] = base_time(job->files[i].path);
}

/* A column: zigzag varints (7 bits a byte, low first), gzip'd, in base64. About 7
 * characters a slice for the five columns where decimal JSON took 22 (docs/report.md);
 * the page inflates them (DecompressionStream) into typed arrays without a parse. */
typedef struct col {
  unsigned char *b;
  size_t n, cap;
} col;
static bool varint(col *c, int64_t v) {
  if (c->cap - c->n < 10) {
    size_t cap = c->cap ? 2 * c->cap : 4096;
    unsigned char *b = realloc(c->b, cap);
    if (!b) return false;
    c->b = b, c->cap = cap;
  }
  uint64_t z = ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)); /* zigzag; no signed shift */
  for (; z >= 0x80; z >>= 7) c->b[c->n++] = (unsigned char)(z | 0x80);
  c->b[c->n++] = (unsigned char)z;
  return true;
}
static void b64(FILE *out, const unsigned char *p, size_t n) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    unsigned a = p[i], b = i + 1 < n ? p[i + 1] : 0, c = i + 2 < n ? p[i + 2] : 0;
    char q[4] = {abc[a >> 2], abc[(a & 3) << 4 | b >> 4], i + 1 < n ? abc[(b & 15) << 2 | c >> 6] : '=',
                 i + 2 < n ? abc[c & 63] : '='};
    fwrite(q, 1, 4, out);
  }
}
/* c's bytes gzip'd, as a JSON string of base64 */
static ft_status put_col(FILE *out, const col *c) {
  z_stream z = {0};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return FT_ENOMEM;
  uLong cap = deflateBound(&z, (uLong)c->n);
  unsigned char *gz = malloc(cap);
  if (!gz) return deflateEnd(&z), FT_ENOMEM;
  z.next_in = c->b;
  z.avail_in = (uInt)c->n;
  z.next_out = gz;
  z.avail_out = (uInt)cap;
  int r = deflate(&z, Z_FINISH);
  size_t len = cap - z.avail_out;
  deflateEnd(&z);
  if (r != Z_STREAM_END) return free(gz), FT_ENOMEM;
  fputc('"', out);
  b64(out, gz, len);
  fputc('"', out);
  free(gz);
  return FT_OK;
}

static int by_row_ts(const void *a, const void *b) {
  const tl_ev *x = *(tl_ev *const *)a, *y = *(tl_ev *const *)b;
  int xd = CLS(x) >= TL_DEVICE, yd = CLS(y) >= TL_DEVICE;
#define CMP(u, v) \
  if ((u) != (v)) return (u) < (v) ? -1 : 1;
  CMP(xd, yd)
  CMP(x->pid, y->pid)
  CMP(x->tid, y->tid)
  CMP(CLS(x), CLS(y))
  CMP(x->ts, y->ts)
  CMP(y->dur, x->dur) /* the outer call first: its children nest under it */
#undef CMP
  return 0;
}

/* One file: its rows (class, pid, tid or stream, slices), then columns of its slices
 * (b64 above) in row order: start (ns from the row's previous slice; the first from the file's
 * first event), duration ns, name id, correlation and External id (0: none; each as
 * the difference from the previous slice's), and the launches [index, grid xyz,
 * block xyz]. */
static ft_status write_file(FILE *out, struct ft__tl_file *f, ft__strtab *names, int64_t offset_ns, int64_t rank) {
  size_t n = f->ev.len;
  tl_ev **ev = malloc((n ? n : 1) * sizeof *ev);
  uint32_t *ids = malloc((f->names.n ? f->names.n : 1) * sizeof *ids);
  if (!ev || !ids) return free(ev), free(ids), FT_ENOMEM;
  for (uint32_t i = 0; i < f->names.n; i++)
    if (ft__intern(names, ft__intern_str(&f->names, i), ft__intern_len(&f->names, i), &ids[i]))
      return free(ev), free(ids), FT_ENOMEM;
  int64_t first = f->first;
  for (size_t i = 0; i < n; i++) ev[i] = ft__vec_at(&f->ev, i);
  qsort(ev, n, sizeof *ev, by_row_ts);
  fprintf(out, "{\"rank\": %lld, \"offset_ns\": %lld, \"rows\": [", (long long)rank, (long long)offset_ns);
  for (size_t i = 0, k = 0; i < n; i = k) {
    for (k = i + 1; k < n && CLS(ev[k]) == CLS(ev[i]) && ev[k]->pid == ev[i]->pid && ev[k]->tid == ev[i]->tid;) k++;
    fprintf(out, "%s[%d,%lld,%lld,%zu]", i ? "," : "", CLS(ev[i]), (long long)ev[i]->pid, (long long)ev[i]->tid, k - i);
  }
  fputs("]", out);
  /* columns: start, duration, name, correlation, External id; then the launches (g, gn of them) */
  col cols[6] = {{0}};
  bool ok = true;
  size_t launches = 0;
  for (size_t i = 0; i < n && ok; i++) {
    const tl_ev *e = ev[i], *p = i ? ev[i - 1] : NULL;
    bool row_start = !p || CLS(e) != CLS(p) || e->pid != p->pid || e->tid != p->tid;
    ok = varint(&cols[0], e->ts - (row_start ? first : p->ts)) && varint(&cols[1], e->dur) &&
         varint(&cols[2], ids[e->name]) && varint(&cols[3], e->corr - (p ? p->corr : 0)) &&
         varint(&cols[4], e->ext - (p ? p->ext : 0));
    if (ok && LAUNCH(e)) {
      const tl_launch *l = ft__vec_at(&f->launches, LAUNCH(e) - 1);
      ok = varint(&cols[5], (int64_t)i);
      for (int d = 0; d < 3 && ok; d++) ok = varint(&cols[5], l->grid[d]);
      for (int d = 0; d < 3 && ok; d++) ok = varint(&cols[5], l->block[d]);
      launches++;
    }
  }
  static const char *const keys[] = {"s", "d", "n", "c", "x", "g"};
  ft_status s = ok ? FT_OK : FT_ENOMEM;
  for (int c = 0; c < 6 && !s; c++) {
    fprintf(out, ", \"%s\": ", keys[c]);
    s = put_col(out, &cols[c]);
  }
  fprintf(out, ", \"gn\": %zu}", launches);
  for (int c = 0; c < 6; c++) free(cols[c].b);
  free(ev);
  free(ids);
  return s;
}
ft_status ft__tl_write(FILE *out, ft__tl *tl, const ft_stat_job *job) {
  /* one clock when every trace states its base time: then ts + base is wall time */
  const char *why = NULL;
  size_t why_file = 0;
  int64_t origin = INT64_MAX, *abs = calloc(tl->n ? tl->n : 1, sizeof *abs);
  if (!abs) return FT_ENOMEM;
  for (size_t i = 0; i < tl->n && !why; i++) {
    int64_t first = tl->files[i]->first == INT64_MAX ? 0 : tl->files[i]->first;
    if (tl->base_ns[i] == -2) why = "was read once (stdin, a FIFO or a pipe): no base time", why_file = i;
    else if (tl->base_ns[i] < 0) why = "states no baseTimeNanoseconds", why_file = i;
    else if (__builtin_add_overflow(tl->base_ns[i], first, &abs[i])) why = "has a base time out of range", why_file = i;
    else if (abs[i] < origin) origin = abs[i];
  }
  fputs("{\"clock\": {\"aligned\": ", out);
  fputs(why || tl->n < 2 ? "false" : "true", out);
  fputs(", \"why\": ", out);
  if (tl->n < 2) {
    fputs("null", out);
  } else if (why) {
    char *text = NULL;
    if (asprintf(&text, "%s %s: each rank is drawn from its own first event", job->files[why_file].path, why) < 0)
      return free(abs), FT_ENOMEM;
    ft_json_string(out, text);
    free(text);
  } else {
    ft_json_string(out, "every trace states its base time (baseTimeNanoseconds): one wall clock");
  }
  fputs("},\n \"files\": [", out);
  ft__strtab names;
  ft__intern_init(&names);
  ft_status s = FT_OK;
  for (size_t i = 0; i < tl->n && !s; i++) {
    fputs(i ? ",\n" : "\n", out);
    bool aligned = !why && tl->n > 1;
    s = write_file(out, tl->files[i], &names, aligned ? abs[i] - origin : 0, job->files[i].rank);
  }
  fputs("],\n \"names\": [", out);
  for (uint32_t i = 0; i < names.n && !s; i++) {
    fputs(i ? "," : "", out);
    ft_json_string(out, ft__intern_str(&names, i));
  }
  fputs("]}", out);
  ft__intern_free(&names);
  free(abs);
  return s;
}
