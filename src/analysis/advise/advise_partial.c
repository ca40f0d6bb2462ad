/* advise --partial / --merge: per-rank advice as JSON (written here, read back with json_scan), and two results
 * compared. */
#include "advise_partial.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "json_scan.h"
#include "out_file.h" /* ft__visible */

/* ---- writing ---- */

static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

static void json_step(FILE *f, const ft_advise_step *s) {
  fprintf(f,
          "{\"rank\":%" PRId64 ",\"step\":%" PRId64 ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64
          ",\"wall_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64 ",\"compute_ns\":%" PRIu64 ",\"comm_ns\":%" PRIu64
          ",\"copy_ns\":%" PRIu64 ",\"exposed_comm_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64,
          s->rank, s->number, s->start, s->end, ft_advise_wall(s), s->busy_ns, s->compute_ns, s->comm_ns, s->copy_ns,
          s->exposed_comm_ns, s->idle_ns);
  static const char *const idle[FT_IDLE_N] = {"idle_step_start_ns", "idle_sync_ns", "idle_h2d_ns", "idle_launch_ns",
                                              "idle_other_ns"};
  for (int i = 0; i < FT_IDLE_N; i++) fprintf(f, ",\"%s\":%" PRIu64, idle[i], s->idle[i]);
  fprintf(f,
          ",\"critical_path_ns\":%" PRIu64 ",\"hta_host_wait_ns\":%" PRIu64 ",\"hta_kernel_wait_ns\":%" PRIu64
          ",\"hta_other_ns\":%" PRIu64 "}",
          s->critical_path_ns, s->hta_host_wait_ns, s->hta_kernel_wait_ns, s->hta_other_ns);
}

static void json_finding(FILE *f, const ft_advise_finding *x) {
  fputs("{\"rule\":", f);
  put_str(f, ft_rule_name(x->rule));
  fprintf(f, ",\"cost_ns\":%" PRIu64 ",\"share\":%.17g,\"count\":%" PRIu64 ",\"where\":", x->cost_ns, x->cost_share,
          x->count);
  put_str(f, x->where);
  if (x->bytes) fprintf(f, ",\"bytes\":%" PRIu64, x->bytes);
  fputs(",\"what\":", f);
  put_str(f, x->what);
  fputs(",\"suggestion\":", f);
  put_str(f, x->suggestion);
  fputs(",\"occurrences\":[", f);
  for (size_t i = 0; i < x->n_occ; i++) {
    const ft_advise_occurrence *o = &x->occ[i];
    fprintf(f, "%s{\"rank\":%" PRId64 ",\"step\":%" PRId64 ",\"ts_ns\":%" PRId64 ",\"dur_ns\":%" PRId64, i ? "," : "",
            o->rank, o->step, o->ts, o->dur);
    if (o->slice == FT_MODEL_NONE) fputs(",\"slice\":null}", f);
    else fprintf(f, ",\"slice\":%" PRIu32 "}", o->slice);
  }
  fputs("]}", f);
}

ft_status ft_advise_partial_write(FILE *f, const ft_advise_partial *p) {
  const ft_advise_opts *o = &p->opts;
  fprintf(f, "{\"schema\":%d,\"partial\":true,\"step\":", FT_ADVISE_JSON_SCHEMA);
  if (p->step) put_str(f, p->step);
  else fputs("null", f);
  fprintf(f,
          ",\"whole_trace\":%s,\"opts\":{\"gap_ns\":%" PRIu64 ",\"min_share\":%.17g,\"fuse_min_len\":%u},\"ranks\":[",
          p->whole_trace ? "true" : "false", o->gap_ns, o->min_share, o->fuse_min_len);
  for (size_t r = 0; r < p->n; r++) {
    const ft_advice *a = &p->parts[r].advice;
    fputs(r ? ",\n{\"file\":" : "\n{\"file\":", f);
    if (p->parts[r].file) put_str(f, p->parts[r].file);
    else fputs("null", f);
    if (p->parts[r].positional) fputs(",\"rank\":null,\"steps\":[", f);
    else fprintf(f, ",\"rank\":%" PRId64 ",\"steps\":[", p->parts[r].rank);
    for (size_t i = 0; i < a->n_steps; i++) {
      fputs(i ? ",\n" : "\n", f);
      json_step(f, &a->steps[i]);
    }
    fputs("],\"findings\":[", f);
    for (size_t i = 0; i < a->n_findings; i++) {
      fputs(i ? ",\n" : "\n", f);
      json_finding(f, &a->findings[i]);
    }
    fputs("]}", f);
  }
  fputs("]}\n", f);
  fflush(f);
  return ferror(f) ? FT_EIO : FT_OK;
}

void ft_advise_partial_free(ft_advise_partial *p) {
  for (size_t i = 0; i < p->n; i++) {
    ft_advice_free(&p->parts[i].advice);
    free(p->parts[i].file);
  }
  free(p->parts);
  free(p->step);
  memset(p, 0, sizeof *p);
}

/* ---- reading: a SAX walk that knows where it is by a stack of frames ---- */

enum frame { F_TOP, F_OPTS, F_RANKS, F_RANK, F_STEPS, F_STEP, F_FINDINGS, F_FINDING, F_OCCS, F_OCC, F_SKIP };

typedef struct rd {
  enum frame fr[16];
  unsigned depth, skip; /* skip: containers open inside a skipped value */
  char key[40];
  bool key_cut;
  ft_advise_partial *p;
  size_t first;  /* the first part this file adds */
  bool top_rank; /* the file is one advice: steps/findings at the top */
  ft_advise_opts opts;
  bool has_opts, has_schema, has_findings, whole, has_step;
  char *step;
  char msg[160];
} rd;

static int fail(rd *r, const char *fmt, ...) {
  if (!r->msg[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
  }
  return 0;
}

/* the arrays' capacities are not kept: each doubles when its count reaches a power of two */
static bool push(void **arr, size_t n, size_t size) {
  if (n && (n & (n - 1))) return true;
  void *q = realloc(*arr, (n ? 2 * n : 1) * size);
  if (!q) return false;
  *arr = q;
  return true;
}

static ft_advise_part *cur_part(rd *r) { return r->p->n > r->first ? &r->p->parts[r->p->n - 1] : NULL; }

static ft_advise_part *new_part(rd *r) {
  if (!push((void **)&r->p->parts, r->p->n, sizeof *r->p->parts)) return NULL;
  ft_advise_part *q = &r->p->parts[r->p->n++];
  memset(q, 0, sizeof *q);
  q->rank = (int64_t)(r->p->n - 1); /* a result without ranks: its position */
  return q;
}

static bool key_is(const rd *r, const char *k) { return !r->key_cut && !strcmp(r->key, k); }

/* Which frame a container value opens, from the frame it is in and its key; F_SKIP for any other. */
static enum frame child(rd *r, bool is_map) {
  enum frame f = r->fr[r->depth - 1];
  if (f == F_TOP && is_map && key_is(r, "opts")) return F_OPTS;
  if (f == F_TOP && !is_map && key_is(r, "ranks")) return F_RANKS;
  if ((f == F_TOP || f == F_RANK) && !is_map && (key_is(r, "steps") || key_is(r, "findings"))) {
    if (f == F_TOP) {
      if (!r->top_rank && !new_part(r)) return fail(r, "out of memory"), F_SKIP;
      r->top_rank = true;
    }
    if (key_is(r, "findings")) r->has_findings = true;
    return key_is(r, "steps") ? F_STEPS : F_FINDINGS;
  }
  if (f == F_RANKS && is_map) return new_part(r) ? F_RANK : (fail(r, "out of memory"), F_SKIP);
  ft_advise_part *q = cur_part(r);
  ft_advice *a = q ? &q->advice : NULL;
  if (f == F_STEPS && is_map) {
    if (!push((void **)&a->steps, a->n_steps, sizeof *a->steps)) return fail(r, "out of memory"), F_SKIP;
    memset(&a->steps[a->n_steps++], 0, sizeof *a->steps);
    return F_STEP;
  }
  if (f == F_FINDINGS && is_map) {
    if (!push((void **)&a->findings, a->n_findings, sizeof *a->findings)) return fail(r, "out of memory"), F_SKIP;
    memset(&a->findings[a->n_findings++], 0, sizeof *a->findings);
    a->findings[a->n_findings - 1].rule = FT_RULE_N; /* "no rule named yet" */
    return F_FINDING;
  }
  if (f == F_FINDING && !is_map && key_is(r, "occurrences")) return F_OCCS;
  if (f == F_OCCS && is_map) {
    ft_advise_finding *x = &a->findings[a->n_findings - 1];
    if (!push((void **)&x->occ, x->n_occ, sizeof *x->occ)) return fail(r, "out of memory"), F_SKIP;
    x->occ[x->n_occ++] = (ft_advise_occurrence){0, 0, 0, 0, FT_MODEL_NONE};
    return F_OCC;
  }
  return F_SKIP;
}

static int open_value(void *ctx, bool is_map) {
  rd *r = ctx;
  if (r->skip) return r->skip++, 1;
  if (!r->depth) {
    if (!is_map) return fail(r, "not advise JSON: the text is not an object");
    r->fr[r->depth++] = F_TOP;
    return 1;
  }
  enum frame c = child(r, is_map);
  if (r->msg[0]) return 0;
  if (c == F_SKIP) return r->skip = 1, 1;
  if (r->depth == sizeof r->fr / sizeof r->fr[0]) return fail(r, "advise JSON nested too deep");
  r->fr[r->depth++] = c;
  return 1;
}
static int start_map(void *ctx) { return open_value(ctx, true); }
static int start_array(void *ctx) { return open_value(ctx, false); }
static int end_value(void *ctx) {
  rd *r = ctx;
  if (r->skip) return r->skip--, 1;
  enum frame f = r->fr[--r->depth];
  if (f == F_FINDING) {
    ft_advice *a = &cur_part(r)->advice;
    if (a->findings[a->n_findings - 1].rule == FT_RULE_N) return fail(r, "a finding without a known \"rule\"");
  }
  if (f == F_STEP) { /* what one advise gives: never a negative wall time (fuzz_advise_partial) */
    const ft_advise_step *s = &cur_part(r)->advice.steps[cur_part(r)->advice.n_steps - 1];
    if (s->end < s->start) return fail(r, "a step that ends before it starts");
  }
  return 1;
}

static int map_key(void *ctx, const unsigned char *s, size_t len) {
  rd *r = ctx;
  if (r->skip) return 1;
  if (r->depth == 1 && len == 11 && !memcmp(s, "traceEvents", 11)) return fail(r, "a trace, not advice");
  r->key_cut = len >= sizeof r->key;
  size_t n = r->key_cut ? sizeof r->key - 1 : len;
  memcpy(r->key, s, n);
  r->key[n] = 0;
  return 1;
}

static bool to_i64(const char *s, size_t n, int64_t *v) {
  char buf[32];
  if (!n || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *end;
  errno = 0;
  long long x = strtoll(buf, &end, 10);
  if (*end || errno) return false;
  *v = x;
  return true;
}

static bool to_u64(const char *s, size_t n, uint64_t *v) {
  int64_t x;
  if (!n || s[0] == '-' || !to_i64(s, n, &x)) return false; /* counts here stay under 2^63 */
  *v = (uint64_t)x;
  return true;
}

static bool to_double(const char *s, size_t n, double *v) {
  char buf[64];
  if (!n || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  *v = strtod(buf, NULL);
  return isfinite(*v); /* 1e999: no number a write gives back */
}

static const char *const idle_keys[FT_IDLE_N] = {"idle_step_start_ns", "idle_sync_ns", "idle_h2d_ns", "idle_launch_ns",
                                                 "idle_other_ns"};

static int number(void *ctx, const char *t, size_t n) {
  rd *r = ctx;
  if (r->skip || !r->depth) return 1;
  enum frame f = r->fr[r->depth - 1];
  ft_advise_part *q = cur_part(r);
  ft_advice *a = q ? &q->advice : NULL;
  int64_t *i = NULL, dummy;
  uint64_t *u = NULL;
  double *d = NULL;
  if (f == F_TOP && key_is(r, "schema")) {
    if (!to_i64(t, n, &dummy) || dummy != FT_ADVISE_JSON_SCHEMA)
      return fail(r, "advise JSON schema %.*s, this flagtrace reads schema %d", (int)(n > 20 ? 20 : n), t,
                  FT_ADVISE_JSON_SCHEMA);
    r->has_schema = true;
    return 1;
  }
  if (f == F_OPTS) {
    r->has_opts = true;
    if (key_is(r, "gap_ns")) u = &r->opts.gap_ns;
    if (key_is(r, "min_share")) d = &r->opts.min_share;
    if (key_is(r, "fuse_min_len")) {
      if (!to_i64(t, n, &dummy) || dummy < 0 || dummy > UINT32_MAX) return fail(r, "bad opts.fuse_min_len");
      r->opts.fuse_min_len = (unsigned)dummy;
      return 1;
    }
  } else if (f == F_RANK && key_is(r, "rank")) {
    i = &q->rank;
  } else if (f == F_STEP) {
    ft_advise_step *s = &a->steps[a->n_steps - 1];
    if (key_is(r, "rank")) i = &s->rank;
    if (key_is(r, "step")) i = &s->number;
    if (key_is(r, "start_ns")) i = &s->start;
    if (key_is(r, "end_ns")) i = &s->end;
    if (key_is(r, "busy_ns")) u = &s->busy_ns;
    if (key_is(r, "compute_ns")) u = &s->compute_ns;
    if (key_is(r, "comm_ns")) u = &s->comm_ns;
    if (key_is(r, "copy_ns")) u = &s->copy_ns;
    if (key_is(r, "exposed_comm_ns")) u = &s->exposed_comm_ns;
    if (key_is(r, "idle_ns")) u = &s->idle_ns;
    for (int k = 0; k < FT_IDLE_N; k++)
      if (key_is(r, idle_keys[k])) u = &s->idle[k];
    if (key_is(r, "critical_path_ns")) u = &s->critical_path_ns;
    if (key_is(r, "hta_host_wait_ns")) u = &s->hta_host_wait_ns;
    if (key_is(r, "hta_kernel_wait_ns")) u = &s->hta_kernel_wait_ns;
    if (key_is(r, "hta_other_ns")) u = &s->hta_other_ns;
  } else if (f == F_FINDING) {
    ft_advise_finding *x = &a->findings[a->n_findings - 1];
    if (key_is(r, "cost_ns")) u = &x->cost_ns;
    if (key_is(r, "count")) u = &x->count;
    if (key_is(r, "bytes")) u = &x->bytes;
    if (key_is(r, "share")) d = &x->cost_share;
    if (key_is(r, "cost_us")) { /* `advise -f json`'s: us with ns digits */
      double us;
      if (!to_double(t, n, &us) || !(us >= 0) || us > 9e15) return fail(r, "\"cost_us\" is not a time");
      x->cost_ns = (uint64_t)(us * 1000 + 0.5);
      return 1;
    }
  } else if (f == F_OCC) {
    ft_advise_finding *x = &a->findings[a->n_findings - 1];
    ft_advise_occurrence *o = &x->occ[x->n_occ - 1];
    if (key_is(r, "rank")) i = &o->rank;
    if (key_is(r, "step")) i = &o->step;
    if (key_is(r, "ts_ns")) i = &o->ts;
    if (key_is(r, "dur_ns")) i = &o->dur;
    if (key_is(r, "slice")) {
      if (!to_i64(t, n, &dummy) || dummy < 0 || dummy >= UINT32_MAX) return fail(r, "bad occurrence slice");
      o->slice = (uint32_t)dummy;
      return 1;
    }
  }
  if (i && !to_i64(t, n, i)) return fail(r, "\"%s\" is not a whole number", r->key);
  if (u && !to_u64(t, n, u)) return fail(r, "\"%s\" is not a count", r->key);
  if (d && !to_double(t, n, d)) return fail(r, "\"%s\" is too long or not a finite number", r->key);
  return 1;
}

static char *dup_n(const unsigned char *s, size_t n) {
  char *c = malloc(n + 1);
  if (c) memcpy(c, s, n), c[n] = 0;
  return c;
}

static int string(void *ctx, const unsigned char *s, size_t n) {
  rd *r = ctx;
  if (r->skip || !r->depth) return 1;
  enum frame f = r->fr[r->depth - 1];
  if (f == F_TOP && key_is(r, "step")) {
    free(r->step);
    r->has_step = true;
    return (r->step = dup_n(s, n)) ? 1 : fail(r, "out of memory");
  }
  if (f == F_RANK && key_is(r, "file")) {
    ft_advise_part *q = cur_part(r);
    free(q->file);
    return (q->file = dup_n(s, n)) ? 1 : fail(r, "out of memory");
  }
  if (f != F_FINDING) return 1;
  ft_advice *a = &cur_part(r)->advice;
  ft_advise_finding *x = &a->findings[a->n_findings - 1];
  char *dst = NULL;
  size_t cap = 0;
  if (key_is(r, "rule")) {
    for (int k = 0; k < FT_RULE_N; k++) {
      const char *nm = ft_rule_name((enum ft_rule)k);
      if (strlen(nm) == n && !memcmp(nm, s, n)) x->rule = (enum ft_rule)k;
    }
    if (x->rule == FT_RULE_N) return fail(r, "unknown rule \"%.*s\"", (int)(n > 40 ? 40 : n), (const char *)s);
    return 1;
  }
  if (key_is(r, "what")) dst = x->what, cap = sizeof x->what;
  if (key_is(r, "where")) dst = x->where, cap = sizeof x->where;
  if (key_is(r, "suggestion")) dst = x->suggestion, cap = sizeof x->suggestion;
  if (dst) {
    size_t k = n < cap ? n : cap - 1;
    memcpy(dst, s, k);
    dst[k] = 0;
  }
  return 1;
}
static int null_value(void *ctx) {
  rd *r = ctx;
  if (!r->skip && r->depth == 1 && key_is(r, "step")) r->has_step = true; /* null: ProfilerStep#N */
  if (!r->skip && r->depth && r->fr[r->depth - 1] == F_RANK && key_is(r, "rank")) cur_part(r)->positional = true;
  return 1;
}
static int boolean(void *ctx, int v) {
  rd *r = ctx;
  if (!r->skip && r->depth == 1 && key_is(r, "whole_trace")) r->whole = v;
  return 1;
}

static const ft__json_callbacks callbacks = {null_value, boolean,   number,      string,   start_map,
                                             map_key,    end_value, start_array, end_value};

static bool same_opts(const ft_advise_opts *a, const ft_advise_opts *b) {
  return a->gap_ns == b->gap_ns && a->min_share == b->min_share && a->fuse_min_len == b->fuse_min_len;
}

/* The file's header checked against the parts read before it (one job: one set of options and --step). */
static bool join_header(rd *r, ft_advise_partial *p) {
  bool first = !p->files_read;
  if (r->has_opts) {
    if (p->has_opts && !same_opts(&p->opts, &r->opts))
      return fail(r, "advised with other options than the files before it");
    p->opts = r->opts, p->has_opts = true;
  }
  if (r->has_step) {
    if (!first && ((p->step == NULL) != (r->step == NULL) || (p->step && strcmp(p->step, r->step))))
      return fail(r, "advised with another --step than the files before it");
    if (first) p->step = r->step, r->step = NULL;
  }
  p->whole_trace = (first || p->whole_trace) && r->whole;
  p->files_read++;
  return true;
}

typedef struct src {
  FILE *f;
  const char *data;
  size_t len;
} src;

static ft_status read_any(src *in, const char *label, ft_advise_partial *p, char *err, size_t errlen) {
  rd r = {.p = p, .first = p->n};
  ft__json j;
  ft__json_init(&j, &callbacks, &r);
  j.nul_fffd = true; /* names are C strings */
  ft__json_status js = FT__JSON_OK;
  bool io = false;
  if (in->f) {
    unsigned char buf[1 << 16];
    size_t got;
    bool first = true;
    while (js == FT__JSON_OK && (got = fread(buf, 1, sizeof buf, in->f)) > 0) {
      if (first && got >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
        fail(&r, "a gzip file, not advice");
        js = FT__JSON_STOPPED;
        break;
      }
      first = false;
      js = ft__json_feed(&j, buf, got);
    }
    io = ferror(in->f);
  } else if (in->len) {
    js = ft__json_feed(&j, (const unsigned char *)in->data, in->len);
  }
  if (js == FT__JSON_OK && !io) js = ft__json_finish(&j);
  ft_status st = FT_OK;
  if (io) snprintf(err, errlen, "%s: read error", label), st = FT_EIO;
  else if (!r.msg[0] && js == FT__JSON_OK && (!r.has_schema || !r.has_findings))
    snprintf(err, errlen, "%s: not advise JSON (no \"schema\" and \"findings\")", label), st = FT_EINVAL;
  else if (!r.msg[0] && js == FT__JSON_OK && !join_header(&r, p)) st = FT_EINVAL;
  if (!st && r.msg[0]) st = FT_EINVAL; /* join_header's */
  if (st == FT_EINVAL || r.msg[0] || js != FT__JSON_OK) {
    if (r.msg[0]) snprintf(err, errlen, "%s: %s", label, r.msg);
    else if (js != FT__JSON_OK)
      snprintf(err, errlen, "%s: not JSON (%s at byte %" PRIu64 ")", label, j.err_msg ? j.err_msg : "error", j.err_at);
    st = st ? st : FT_EINVAL;
  }
  ft__json_free(&j);
  free(r.step);
  if (st != FT_OK && ft__visible_changes(err)) { /* one line: a rule's name or a path may hold a newline */
    char line[512];
    ft__visible(line, sizeof line, err);
    snprintf(err, errlen, "%s", line);
  }
  if (st != FT_OK) {
    for (size_t k = r.first; k < p->n; k++) {
      ft_advice_free(&p->parts[k].advice);
      free(p->parts[k].file);
    }
    p->n = r.first;
  }
  return st;
}

ft_status ft_advise_partial_read(const char *path, ft_advise_partial *p, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return FT_EIO;
  }
  src in = {.f = f};
  ft_status st = read_any(&in, path, p, err, errlen);
  fclose(f);
  return st;
}

ft_status ft_advise_partial_read_mem(const char *data, size_t len, ft_advise_partial *p, char *err, size_t errlen) {
  src in = {.data = data, .len = len};
  return read_any(&in, "advise JSON", p, err, errlen);
}

/* ---- two results compared ---- */

const char *ft_advise_change_name(enum ft_advise_change c) {
  static const char *const names[] = {"new", "grew", "shrank", "same", "gone"};
  return c <= FT_ADV_GONE ? names[c] : "?";
}

static int by_key(const void *x, const void *y) {
  const ft_advise_delta *a = x, *b = y;
  int c = strcmp(a->rule, b->rule);
  return c ? c : strcmp(a->where, b->where);
}

/* The findings of n advices as one delta row per rule+where, side s (0: a, 1: b) filled. */
static ft_advise_delta *collect(const ft_advise_partial *p, int s, size_t *out_n) {
  size_t total = 0, n = p->n;
  for (size_t i = 0; i < n; i++) total += p->parts[i].advice.n_findings;
  ft_advise_delta *d = calloc(total ? total : 1, sizeof *d);
  if (!d) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < p->parts[i].advice.n_findings; j++) {
      const ft_advise_finding *x = &p->parts[i].advice.findings[j];
      d[k++] = (ft_advise_delta){.rule = ft_rule_name(x->rule),
                                 .where = x->where,
                                 .cost_a = s ? 0 : x->cost_ns,
                                 .cost_b = s ? x->cost_ns : 0,
                                 .count_a = s ? 0 : x->count,
                                 .count_b = s ? x->count : 0,
                                 .share_a = s ? 0 : x->cost_share,
                                 .share_b = s ? x->cost_share : 0};
    }
  if (k) qsort(d, k, sizeof *d, by_key);
  size_t m = 0; /* the same key on several ranks: summed */
  for (size_t i = 0; i < k; i++) {
    if (m && !by_key(&d[m - 1], &d[i])) {
      ft_advise_delta *p = &d[m - 1];
      p->cost_a += d[i].cost_a, p->cost_b += d[i].cost_b, p->count_a += d[i].count_a, p->count_b += d[i].count_b;
      p->share_a += d[i].share_a, p->share_b += d[i].share_b;
    } else {
      d[m++] = d[i];
    }
  }
  *out_n = m;
  return d;
}

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

static int by_change(const void *x, const void *y) {
  const ft_advise_delta *a = x, *b = y;
  if (a->change != b->change) return a->change < b->change ? -1 : 1;
  uint64_t da = absdiff(a->cost_a, a->cost_b), db = absdiff(b->cost_a, b->cost_b);
  if (da != db) return da > db ? -1 : 1;
  return by_key(a, b);
}

ft_status ft_advise_compare(const ft_advise_partial *a, const ft_advise_partial *b, double tolerance,
                            ft_advise_delta **out, size_t *n_out) {
  size_t ka = 0, kb = 0;
  ft_advise_delta *da = collect(a, 0, &ka), *db = collect(b, 1, &kb);
  ft_advise_delta *d = malloc((ka + kb ? ka + kb : 1) * sizeof *d);
  if (!da || !db || !d) {
    free(da), free(db), free(d);
    return FT_ENOMEM;
  }
  size_t i = 0, j = 0, m = 0; /* both sorted by key: a merge */
  while (i < ka || j < kb) {
    int c = i == ka ? 1 : j == kb ? -1 : by_key(&da[i], &db[j]);
    ft_advise_delta r = c <= 0 ? da[i] : db[j];
    if (!c) {
      r.cost_b = db[j].cost_b, r.count_b = db[j].count_b, r.share_b = db[j].share_b;
      /* "same": within the tolerance or within a microsecond */
      uint64_t dd = absdiff(r.cost_a, r.cost_b);
      r.change = dd <= 1000 || (double)dd <= tolerance * (double)r.cost_a ? FT_ADV_SAME
                 : r.cost_b > r.cost_a                                    ? FT_ADV_GREW
                                                                          : FT_ADV_SHRANK;
    } else {
      r.change = c < 0 ? FT_ADV_GONE : FT_ADV_NEW;
    }
    d[m++] = r;
    if (c <= 0) i++;
    if (c >= 0) j++;
  }
  free(da), free(db);
  if (m) qsort(d, m, sizeof *d, by_change);
  *out = d;
  *n_out = m;
  return FT_OK;
}
