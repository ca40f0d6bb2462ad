/* The report's timeline: each file's slices from its event model, written as compact columnar JSON. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "model.h"
#include "report_events.h"
#include "stats_internal.h"
#include "stats_out.h"

enum { TL_OPS, TL_RUNTIME, TL_DEVICE, TL_DEV_RANGE };

/* The page's class of a model slice: its row kind. python_function slices are not
 * drawn: the report's read never asked for them (nn.Module nesting is stats -r modules'). */
static int cls_of(uint8_t kind) {
  switch (kind) {
  case FT_MK_OP:
  case FT_MK_RANGE:
  case FT_MK_OVERHEAD: return TL_OPS;
  case FT_MK_RUNTIME:
  case FT_MK_DRIVER: return TL_RUNTIME;
  case FT_MK_KERNEL:
  case FT_MK_MEMCPY:
  case FT_MK_MEMSET:
  case FT_MK_SYNC: return TL_DEVICE;
  case FT_MK_GPU_RANGE: return TL_DEV_RANGE;
  default: return -1;
  }
}

ft_status ft__tl_new(ft__tl *tl, size_t n_files) {
  memset(tl, 0, sizeof *tl);
  tl->n = n_files;
  tl->models = calloc(n_files ? n_files : 1, sizeof *tl->models);
  tl->base_ns = calloc(n_files ? n_files : 1, sizeof *tl->base_ns);
  if (!tl->models || !tl->base_ns) return FT_ENOMEM;
  for (size_t i = 0; i < n_files; i++) tl->models[i].rank = -1;
  return FT_OK;
}

void ft__tl_opts(ft__tl *tl, ft_stat_read_opts *o) {
  o->model = true;
  o->models = tl->models;
}

void ft__tl_free(ft__tl *tl) {
  for (size_t i = 0; tl->models && i < tl->n; i++) ft_model_free(&tl->models[i]);
  free(tl->models);
  free(tl->base_ns);
  memset(tl, 0, sizeof *tl);
}

/* The earliest slice's start, else (a file of memory operations only) its first memory
 * operation's time; INT64_MAX when the file has neither. */
static int64_t first_ts(const ft_model *m) {
  int64_t first = INT64_MAX;
  for (size_t i = 0; i < m->n; i++)
    if (m->ts[i] < first && cls_of(m->kind[i]) >= 0) first = m->ts[i];
  return first == INT64_MAX && m->n_mem ? m->mem[0].ts : first;
}
int64_t ft__tl_first_ts(const struct ft_model *m) { return first_ts(m); }

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
typedef ft__tl_col col;
bool ft__tl_varint(col *c, int64_t v) {
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
ft_status ft__tl_put_col(FILE *out, const col *c) {
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

/* A slice's row while its file is written (24 B, freed after the file): the page's
 * row is (class, pid, tid), a device row's tid its stream (0: none given). */
typedef struct tl_row {
  int64_t pid, tid;
  uint32_t slice;
  uint8_t cls, launch; /* launch: the slice has a kernel's grid and block */
} tl_row;

static int by_row_ts(const void *a, const void *b, void *arg) {
  const tl_row *x = a, *y = b;
  const ft_model *m = arg;
  int xd = x->cls >= TL_DEVICE, yd = y->cls >= TL_DEVICE;
#define CMP(u, v) \
  if ((u) != (v)) return (u) < (v) ? -1 : 1;
  CMP(xd, yd)
  CMP(x->pid, y->pid)
  CMP(x->tid, y->tid)
  CMP(x->cls, y->cls)
  CMP(m->ts[x->slice], m->ts[y->slice])
  CMP(m->dur[y->slice], m->dur[x->slice]) /* the outer call first: its children nest under it */
  CMP(x->slice, y->slice)                 /* then the model's order: the same page every time */
#undef CMP
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Each stream's queue length (its device work launched and not started yet: a launch's start to its
 * work's start), the highest in each of the busy bins (FT_TIMELINE_BINS over [t0, t0 + span), the
 * timeline's "busy_ns"): "queue": [[pid, stream, [bins]], ...], a stream only with linked work. A
 * stream's rows are ev[i, j) (by start); its launches' starts sorted in a buffer of 8 B a slice. */
static ft_status write_queues(FILE *out, const ft_model *m, const tl_row *ev, size_t n, int64_t t0, uint64_t span) {
  fputs(", \"queue\": [", out);
  if (!m->link || !span) return fputc(']', out), FT_OK;
  int64_t *launch = NULL;
  size_t cap = 0, w = 0;
  uint32_t bins[FT_TIMELINE_BINS];
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && ev[j].cls == ev[i].cls && ev[j].pid == ev[i].pid && ev[j].tid == ev[i].tid;) j++;
    if (ev[i].cls != TL_DEVICE) continue;
    if (j - i > cap) {
      int64_t *b = realloc(launch, (j - i) * sizeof *b);
      if (!b) return free(launch), FT_ENOMEM;
      launch = b, cap = j - i;
    }
    size_t nl = 0;
    for (size_t k = i; k < j; k++) {
      uint32_t l = m->link[ev[k].slice];
      if (l != FT_MODEL_NONE && m->ts[l] <= m->ts[ev[k].slice]) launch[nl++] = m->ts[l];
    }
    if (!nl) continue;
    qsort(launch, nl, sizeof *launch, cmp_i64);
    memset(bins, 0, sizeof bins);
    int64_t cur = 0; /* queued now; in effect since bin `last` */
    size_t a = 0, k = i, last = 0;
    while (a < nl || k < j) { /* launches and starts in time order, a launch first at a tie */
      bool start = k < j && (a >= nl || m->ts[ev[k].slice] < launch[a]);
      int64_t t = start ? m->ts[ev[k].slice] : launch[a];
      if (start) {
        uint32_t l = m->link[ev[k].slice];
        k++;
        if (l == FT_MODEL_NONE || m->ts[l] > t) continue; /* in no launch counted */
      } else {
        a++;
      }
      uint64_t off = t < t0 ? 0 : (uint64_t)(t - t0);
      size_t bin = off >= span ? FT_TIMELINE_BINS - 1 : (size_t)((unsigned __int128)off * FT_TIMELINE_BINS / span);
      for (size_t c = last; c <= bin && cur > 0; c++) /* what was queued stays queued until now */
        if (bins[c] < cur) bins[c] = cur > UINT32_MAX ? UINT32_MAX : (uint32_t)cur;
      last = bin;
      cur += start ? -1 : 1;
      if (cur > (int64_t)bins[bin]) bins[bin] = cur > UINT32_MAX ? UINT32_MAX : (uint32_t)cur;
    }
    fprintf(out, "%s[%lld,%lld,[", w++ ? "," : "", (long long)ev[i].pid, (long long)ev[i].tid);
    for (size_t b = 0; b < FT_TIMELINE_BINS; b++) fprintf(out, "%s%u", b ? "," : "", bins[b]);
    fputs("]]", out);
  }
  free(launch);
  fputc(']', out);
  return FT_OK;
}

/* A correlation or External id the page can hold exactly (below 2^52), else 0. */
static int64_t page_id(int64_t v) { return v > 0 && v < (1ll << 52) ? v : 0; }

enum { DIMS = 64 << 10 }; /* bytes of Input Dims texts a report carries for the details panel (each a name) */

/* One file: its rows (class, pid, tid or stream, slices), then columns of its slices
 * (b64 above) in row order: start (ns from the row's previous slice; the first from the file's
 * first event), duration ns, name id, correlation and External id (0: none; each as
 * the difference from the previous slice's), and the launches [index, grid xyz,
 * block xyz]. */
static ft_status write_file(FILE *out, const ft_model *m, ft__strtab *names, int64_t offset_ns, const ft_stat_file *sf,
                            uint32_t *dims_n) {
  size_t n = 0;
  uint32_t max_name = 0;
  for (size_t i = 0; i < m->n; i++) {
    n += cls_of(m->kind[i]) >= 0;
    if (m->name[i] != FT_MODEL_NONE && m->name[i] > max_name) max_name = m->name[i];
  }
  tl_row *ev = malloc((n ? n : 1) * sizeof *ev);
  uint32_t *ids = malloc(((size_t)max_name + 1) * sizeof *ids); /* the model's name id -> the page's */
  if (!ev || !ids) return free(ev), free(ids), FT_ENOMEM;
  for (size_t i = 0; i <= max_name; i++) ids[i] = FT_MODEL_NONE;
  size_t k = 0;
  for (size_t i = 0; i < m->n; i++) {
    int cls = cls_of(m->kind[i]);
    if (cls < 0) continue;
    const ft_model_track *t = &m->tracks[m->track[i]];
    int64_t tid = t->tid < 0 ? 0 : t->tid;
    struct ft_model_kernel_args a;
    bool args = ft_model_kernel_args(m, i, &a);
    if (cls >= TL_DEVICE) tid = a.stream >= 0 ? a.stream : 0; /* device work: one row per (device, stream) */
    bool launch = args && (a.grid[0] | a.grid[1] | a.grid[2]) && (a.block[0] | a.block[1] | a.block[2]);
    ev[k++] = (tl_row){t->pid, tid, (uint32_t)i, (uint8_t)cls, launch};
    if (m->name[i] != FT_MODEL_NONE) ids[m->name[i]] = 0; /* used */
  }
  /* into the page's names in the model's order of them (the file's): the page the read's own collector made */
  for (uint32_t nm = 0; n && nm <= max_name; nm++) {
    if (ids[nm] == FT_MODEL_NONE) continue;
    const char *str = ft_model_str(m, nm);
    if (ft__intern(names, str, strlen(str), &ids[nm])) return free(ev), free(ids), FT_ENOMEM;
  }
  int64_t first = first_ts(m);
  qsort_r(ev, n, sizeof *ev, by_row_ts, (void *)m);
  fprintf(out, "{\"rank\": %lld, \"offset_ns\": %lld, ", (long long)sf->rank, (long long)offset_ns);
  /* the busy bins' span (report.c's "timeline": stats' first to last event) on the page's clock, so that
   * the page draws them under the slices */
  if (first != INT64_MAX && sf->span_ns && sf->first_ns <= INT64_MAX) {
    long long at = (long long)offset_ns + ((long long)sf->first_ns - (long long)first);
    fprintf(out, "\"busy_ns\": [%lld, %llu], ", at, (unsigned long long)sf->span_ns);
  }
  fputs("\"rows\": [", out);
  for (size_t i = 0, j = 0; i < n; i = j) {
    for (j = i + 1; j < n && ev[j].cls == ev[i].cls && ev[j].pid == ev[i].pid && ev[j].tid == ev[i].tid;) j++;
    fprintf(out, "%s[%d,%lld,%lld,%zu]", i ? "," : "", (int)ev[i].cls, (long long)ev[i].pid, (long long)ev[i].tid,
            j - i);
  }
  fputs("]", out);
  /* the trace's thread and process names ("M" events): the page names its rows with them */
  for (int proc = 0; proc < 2; proc++) {
    fputs(proc ? ", \"procs\": [" : ", \"threads\": [", out);
    for (size_t i = 0, w = 0; i < m->n_meta; i++) {
      const ft_model_meta *t = &m->meta[i];
      if (t->process != proc) continue;
      if (proc) fprintf(out, "%s[%lld,", w++ ? "," : "", (long long)t->pid);
      else fprintf(out, "%s[%lld,%lld,", w++ ? "," : "", (long long)t->pid, (long long)(t->tid < 0 ? 0 : t->tid));
      ft_json_string(out, t->name);
      fputc(']', out);
    }
    fputc(']', out);
  }
  /* columns: start, duration, name, correlation, External id; then the launches (g, gn of them); the
   * details panel's (the page decodes them on the first click): each slice's kind (k), and the args
   * of the slices that have them (e: [index from the previous entry's, field, value]...: 1 bytes,
   * 2 registers, 3 Input Dims as a name id, until DIMS bytes of distinct texts a report) */
  col cols[8] = {{0}};
  int64_t prev_e = 0;
  bool ok = true;
  size_t launches = 0;
  int64_t prev_corr = 0, prev_ext = 0;
  for (size_t i = 0; i < n && ok; i++) {
    const tl_row *e = &ev[i], *p = i ? &ev[i - 1] : NULL;
    size_t sl = e->slice;
    bool row_start = !p || e->cls != p->cls || e->pid != p->pid || e->tid != p->tid;
    int64_t corr = page_id(ft_model_corr(m, sl)), ext = page_id(ft_model_ext(m, sl));
    uint32_t nm = m->name[sl];
    ok = ft__tl_varint(&cols[0], m->ts[sl] - (row_start ? first : m->ts[p->slice])) &&
         ft__tl_varint(&cols[1], m->dur[sl]) && ft__tl_varint(&cols[2], nm == FT_MODEL_NONE ? 0 : ids[nm]) &&
         ft__tl_varint(&cols[3], corr - prev_corr) && ft__tl_varint(&cols[4], ext - prev_ext);
    prev_corr = corr, prev_ext = ext;
    struct ft_model_kernel_args a; /* launch configuration and the details panel's args: one lookup */
    bool has_args = ok && ft_model_kernel_args(m, sl, &a);
    if (ok && e->launch && has_args) {
      ok = ft__tl_varint(&cols[5], (int64_t)i);
      for (int d = 0; d < 3 && ok; d++) ok = ft__tl_varint(&cols[5], a.grid[d]);
      for (int d = 0; d < 3 && ok; d++) ok = ft__tl_varint(&cols[5], a.block[d]);
      launches++;
    }
    ok = ok && ft__tl_varint(&cols[6], m->kind[sl]);
    bool xa = ok && has_args;
    int64_t dims = -1;
    if (xa && a.dims && *a.dims && *dims_n < DIMS) { /* past the cap, the page's names stop growing */
      uint32_t before = names->n, id;
      if (ft__intern(names, a.dims, strlen(a.dims), &id)) ok = false;
      else dims = id, *dims_n += id >= before ? (uint32_t)strlen(a.dims) : 0;
    }
    int64_t fv[4] = {0, m->arg ? (int64_t)m->arg[sl] : 0, xa ? a.regs : -1, dims};
    for (int fi = 1; fi < 4 && ok; fi++) {
      if (fi == 1 ? fv[fi] <= 0 : fv[fi] < 0) continue;
      ok = ft__tl_varint(&cols[7], (int64_t)i - prev_e) && ft__tl_varint(&cols[7], fi) &&
           ft__tl_varint(&cols[7], fv[fi]);
      prev_e = (int64_t)i;
    }
  }
  static const char *const keys[] = {"s", "d", "n", "c", "x", "g", "k", "e"};
  ft_status s = ok ? FT_OK : FT_ENOMEM;
  for (int c = 0; c < 8 && !s; c++) {
    fprintf(out, ", \"%s\": ", keys[c]);
    s = ft__tl_put_col(out, &cols[c]);
  }
  fprintf(out, ", \"gn\": %zu", launches);
  if (!s) s = ft__tl_write_mem(out, m, names, first);
  if (!s && sf->span_ns && sf->first_ns <= INT64_MAX)
    s = write_queues(out, m, ev, n, (int64_t)sf->first_ns, sf->span_ns);
  fputc('}', out);
  for (int c = 0; c < 8; c++) free(cols[c].b);
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
    int64_t first = first_ts(&tl->models[i]);
    if (first == INT64_MAX) first = 0;
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
  uint32_t dims_n = 0;
  for (size_t i = 0; i < tl->n && !s; i++) {
    fputs(i ? ",\n" : "\n", out);
    bool aligned = !why && tl->n > 1;
    s = write_file(out, &tl->models[i], &names, aligned ? abs[i] - origin : 0, &job->files[i], &dims_n);
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
