/* Partial summaries, writing: a job's whole state as the versioned JSON that stats_partial_read.c reads back. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_partial.h"

static const char *const section_keys[FT_STAT_N_SECTIONS] = {
    [FT_STAT_KERNELS] = "kernels",       [FT_STAT_API] = "api",
    [FT_STAT_MEMORY] = "memory",         [FT_STAT_OPS] = "ops",
    [FT_STAT_RANGES] = "ranges",         [FT_STAT_GPU_RANGES] = "gpu_ranges",
    [FT_STAT_OP_SHAPES] = "op_shapes",   [FT_STAT_STREAMS] = "streams",
    [FT_STAT_OP_MODULES] = "op_modules", [FT_STAT_OP_KERNELS] = "op_kernels"};

/* Written and read alike, so that a section added before it is named here round-trips. */
const char *ft__partial_section_key(int sec, char *buf, size_t cap) {
  if (section_keys[sec]) return section_keys[sec];
  snprintf(buf, cap, "section_%d", sec);
  return buf;
}

/* ================================ writing ================================ */

/* Valid UTF-8 without NUL: written as a JSON string; anything else as its bytes
 * in hex, so that names (bytes, as the trace held them) come back unchanged. */
static bool utf8_ok(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (!c) return false;
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || i + len > n) return false;
    for (size_t k = 1; k < len; k++)
      if ((s[i + k] & 0xC0) != 0x80) return false;
    unsigned c1 = s[i + 1];
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
      return false; /* overlong, a surrogate, past U+10FFFF */
    i += len;
  }
  return true;
}

static void put_string(FILE *f, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  static const char hex[] = "0123456789abcdef";
  if (!utf8_ok(s, n)) {
    fputs("{\"hex\": \"", f);
    for (size_t i = 0; i < n; i++) fputc(hex[s[i] >> 4], f), fputc(hex[s[i] & 15], f);
    fputs("\"}", f);
    return;
  }
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"' || s[i] == '\\') fputc('\\', f), fputc(s[i], f);
    else if (s[i] < 0x20) fprintf(f, "\\u%04x", s[i]);
    else fputc(s[i], f);
  }
  fputc('"', f);
}

static void put_u128(FILE *f, ft_u128 v) {
  char buf[48], *p = buf + sizeof buf;
  *--p = '\0';
  do *--p = (char)('0' + (int)(v % 10));
  while ((v /= 10));
  fprintf(f, "\"%s\"", p);
}

typedef struct writer {
  FILE *f;
  ft__strtab strs;            /* every string of the document, in the order of the strings table */
  size_t *unknown, n_unknown; /* the unknown categories' slots, by name (the order they are printed in) */
  bool *keep_event;           /* the device events written: a file's first trace_limit */
  bool oom;
} writer;

/* The index of s in the strings table (interned on the first pass, found on the second). */
static uint32_t sref(writer *w, const char *s, size_t n) {
  uint32_t id = 0;
  if (ft__intern(&w->strs, s, n, &id)) w->oom = true;
  return id;
}
static uint32_t sref_c(writer *w, const char *s) { return sref(w, s, strlen(s)); }
static uint32_t sref_id(writer *w, const ft_stats *st, uint32_t id) {
  return sref(w, ft__intern_str(&st->names, id), ft__intern_len(&st->names, id));
}

static void put_dist(FILE *f, const char *key, const ft_stat_dist *d) {
  if (!d->n) return;
  fprintf(f, ", \"%s\": {\"n\": %" PRIu64, key, d->n);
  if (!d->hist) { /* exact: the rest follows from the values */
    fputs(", \"vals\": [", f);
    for (uint64_t i = 0; i < d->n; i++) fprintf(f, "%s%" PRIu64, i ? "," : "", d->vals[i]);
    fputs("]}", f);
    return;
  }
  uint32_t lo = 0, hi = d->hist_len; /* only the buckets from the first to the last used */
  while (lo < hi && !d->hist[lo]) lo++;
  while (hi > lo && !d->hist[hi - 1]) hi--;
  fprintf(f, ", \"total\": %" PRIu64 ", \"min\": %" PRIu64 ", \"max\": %" PRIu64 ", \"sumsq\": ", d->total, d->min,
          d->max);
  put_u128(f, d->sumsq);
  fprintf(f, ", \"hist_lo\": %" PRIu32 ", \"hist\": [", d->hist_lo + lo);
  for (uint32_t i = lo; i < hi; i++) fprintf(f, "%s%" PRIu32, i > lo ? "," : "", d->hist[i]);
  fputs("]}", f);
}

/* Every field of ft_stat_row (tests/unit/test_stats_partial.c pins the struct's size). */
static void put_rows(writer *w, const ft_stats *st, const char *indent) {
  FILE *f = w->f;
  fputc('{', f);
  bool first_sec = true;
  for (int sec = 0; sec < FT_STAT_N_SECTIONS; sec++) {
    if (!st->rows[sec].len) continue;
    char kbuf[32];
    fprintf(f, "%s\n%s  \"%s\": [", first_sec ? "" : ",", indent, ft__partial_section_key(sec, kbuf, sizeof kbuf));
    first_sec = false;
    for (size_t i = 0; i < st->rows[sec].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[sec], i);
      fprintf(f, "%s\n%s    {\"name\": %" PRIu32, i ? "," : "", indent, sref_id(w, st, r->name_id));
      if (ft_stat_keyed_by_aux(sec)) fprintf(f, ", \"aux\": %" PRIu32, sref_id(w, st, r->aux_id));
      if (r->cat) fprintf(f, ", \"cat\": %u", (unsigned)r->cat);
      if (r->comm) fputs(", \"comm\": true", f);
      if (r->calls) fprintf(f, ", \"calls\": %" PRIu64, r->calls);
      if (r->self_ns) fprintf(f, ", \"self_ns\": %" PRIu64, r->self_ns);
      if (r->self_cpu_ns) fprintf(f, ", \"self_cpu_ns\": %" PRIu64, r->self_cpu_ns);
      if (r->total_dev_ns) fprintf(f, ", \"total_dev_ns\": %" PRIu64, r->total_dev_ns);
      const char *const mk[] = {"cpu_mem", "self_cpu_mem", "dev_mem", "self_dev_mem"};
      const int64_t mv[] = {r->cpu_mem, r->self_cpu_mem, r->dev_mem, r->self_dev_mem};
      for (int k = 0; k < 4; k++) /* the ops' memory (signed bytes), when the trace has [memory] events */
        if (mv[k]) fprintf(f, ", \"%s\": %" PRId64, mk[k], mv[k]);
      put_dist(f, "t", &r->t);
      put_dist(f, "b", &r->b);
      fputc('}', f);
    }
    fprintf(f, "\n%s  ]", indent);
  }
  fprintf(f, "%s}", first_sec ? "" : "\n  ");
}

/* A memory moment: [bytes, ts, step, addr, op, call], op and call string indexes + 1 (0: none). */
static void put_mem_at(writer *w, const ft_stat_mem_at *a) {
  fprintf(w->f, "[%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRIu64 ", %" PRIu32 ", %" PRIu32 "]", a->bytes, a->ts,
          a->step, a->addr, a->op ? sref_c(w, a->op) + 1 : 0, a->call ? sref_c(w, a->call) + 1 : 0);
}

/* A file's device memory (issue 51), when the read kept it. */
static void put_mem(writer *w, const ft_stat_mem *m) {
  FILE *f = w->f;
  fprintf(f,
          ",\n   \"mem\": {\"counts\": [%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64
          "], \"devs\": [",
          m->events, m->bad_field, m->bad_sign, m->unmatched, m->over_bound, m->over_devices);
  for (size_t i = 0; i < m->n_devs; i++) {
    const ft_stat_mem_dev *d = &m->devs[i];
    fprintf(f,
            "%s\n    {\"dev\": [%" PRId32 ", %d, %" PRId64 ", %" PRId64 ", %" PRIu64 ", %" PRIu64 "], \"peak_alloc\": ",
            i ? "," : "", d->device, (int)d->device_type, d->end_alloc, d->end_res, d->live_n, d->live_bytes);
    put_mem_at(w, &d->peak_alloc);
    fputs(", \"peak_res\": ", f);
    put_mem_at(w, &d->peak_res);
    fputs(", \"live\": [", f);
    for (size_t k = 0; k < d->n_live; k++) {
      if (k) fputs(", ", f);
      put_mem_at(w, &d->live[k]);
    }
    fputc(']', f);
    put_dist(f, "allocs", &d->alloc_sizes);
    put_dist(f, "frees", &d->free_sizes);
    fputc('}', f);
  }
  fputs("]}", f);
}

static void collect_at(writer *w, const ft_stat_mem_at *a) {
  if (a->op) sref_c(w, a->op);
  if (a->call) sref_c(w, a->call);
}

/* Interns every string in document order: the strings table is then written
 * first, and every later string is its index. */
static void collect(writer *w, const ft_stat_job *job, bool rows) {
  for (size_t i = 0; i < job->n_files; i++) {
    const ft_stat_file *x = &job->files[i];
    sref_c(w, x->path);
    sref_c(w, x->meta.tracer);
    sref_c(w, x->meta.device_status);
    for (size_t d = 0; x->mem_kept && d < x->mem.n_devs; d++) {
      const ft_stat_mem_dev *v = &x->mem.devs[d];
      collect_at(w, &v->peak_alloc);
      collect_at(w, &v->peak_res);
      for (size_t k = 0; k < v->n_live; k++) collect_at(w, &v->live[k]);
    }
    if (rows) {
      for (int sec = 0; sec < FT_STAT_N_SECTIONS; sec++)
        for (size_t k = 0; k < x->own->rows[sec].len; k++) {
          const ft_stat_row *r = ft__vec_at(&x->own->rows[sec], k);
          sref_id(w, x->own, r->name_id);
          if (ft_stat_keyed_by_aux(sec)) sref_id(w, x->own, r->aux_id);
        }
    }
  }
  const ft_stats *t = &job->total;
  if (!rows)
    for (int sec = 0; sec < FT_STAT_N_SECTIONS; sec++)
      for (size_t k = 0; k < t->rows[sec].len; k++) {
        const ft_stat_row *r = ft__vec_at(&t->rows[sec], k);
        sref_id(w, t, r->name_id);
        if (ft_stat_keyed_by_aux(sec)) sref_id(w, t, r->aux_id);
      }
  for (size_t i = 0; i < w->n_unknown; i++) sref_id(w, t, (uint32_t)t->unknown_cats.keys[w->unknown[i]]);
  for (size_t i = 0; i < t->n_trace; i++)
    if (w->keep_event[i]) sref_id(w, t, t->trace[i].name_id);
}

ft_status ft_stat_partial_write(FILE *f, const ft_stat_job *job, uint64_t trace_limit) {
  for (size_t i = 0; i < job->n_files; i++) /* without it, a merge could not tell two partials of one trace */
    if (!job->files[i].source.known) return FT_EINVAL;
  writer w = {.f = f};
  ft__intern_init(&w.strs);
  /* the files' own rows when every file has them (by rank), else the total */
  bool rows = true;
  for (size_t i = 0; i < job->n_files; i++) rows = rows && job->files[i].own;
  w.unknown = ft_stat_unknown_order(&job->total, &w.n_unknown);
  if (!w.unknown && job->total.unknown_cats.len) w.oom = true;
  /* a merge of partials that kept more events of a file than the smallest
   * trace_limit writes that many: the earliest, as a read with it keeps */
  const ft_stats *tt = &job->total;
  w.keep_event = calloc(tt->n_trace ? tt->n_trace : 1, sizeof *w.keep_event);
  if (!w.keep_event) w.oom = true;
  for (size_t i = 0, run = 0; w.keep_event && i < tt->n_trace; i++) {
    run = i && tt->trace[i].file == tt->trace[i - 1].file ? run + 1 : 0;
    w.keep_event[i] = run < trace_limit;
  }
  if (!w.oom) collect(&w, job, rows); /* it reads keep_event */
  if (w.oom) {
    ft__intern_free(&w.strs);
    free(w.unknown);
    free(w.keep_event);
    return FT_ENOMEM;
  }
  fprintf(f, "{\"flagtrace_partial\": %d,\n \"trace_limit\": %" PRIu64 ",\n \"strings\": [", FT_PARTIAL_VERSION,
          trace_limit);
  for (uint32_t i = 0; i < w.strs.n; i++) {
    fputs(i ? ",\n  " : "\n  ", f);
    put_string(f, w.strs.strs[i], w.strs.lens[i]);
  }
  fputs("],\n \"files\": [", f);
  for (size_t i = 0; i < job->n_files; i++) {
    const ft_stat_file *x = &job->files[i];
    const ft_stat_meta *m = &x->meta;
    const ft_stat_skips *k = &x->skipped;
    fprintf(f,
            "%s\n  {\"path\": %" PRIu32 ", \"events\": %" PRIu64 ", \"span_ns\": %" PRIu64 ", \"first_ns\": %" PRId64
            ", \"kernel_ns\": %" PRIu64 ", \"comm_ns\": %" PRIu64 ", \"device_cap_events\": %" PRIu64
            ", \"cut_strings\": %" PRIu64 ",\n   \"skipped\": {\"bad_time\": %" PRIu64 ", \"time_range\": %" PRIu64
            ", \"unknown_cat\": %" PRIu64 ", \"no_dur\": %" PRIu64 ", \"neg_dur\": %" PRIu64 ", \"bad_bytes\": %" PRIu64
            ", \"bad_ext\": %" PRIu64 ", \"unpaired\": %" PRIu64 "},\n   \"meta\": {\"rank\": %" PRId64
            ", \"device_activity\": %d, \"tracer\": %" PRIu32 ", \"device_status\": %" PRIu32
            ", \"dropped_records\": %" PRIu64 ", \"window_discarded\": %" PRIu64
            ", \"has_flagtrace\": %s},\n   \"busy\": [",
            i ? "," : "", sref_c(&w, x->path), x->events, x->span_ns, (int64_t)x->first_ns, x->kernel_ns, x->comm_ns,
            x->device_cap_events, x->cut_strings, k->bad_time, k->time_range, k->unknown_cat, k->no_dur, k->neg_dur,
            k->bad_bytes, k->bad_ext, k->unpaired, m->rank, m->device_activity, sref_c(&w, m->tracer),
            sref_c(&w, m->device_status), m->dropped_records, m->window_discarded, m->has_flagtrace ? "true" : "false");
    for (size_t d = 0; d < x->n_busy; d++)
      fprintf(f, "%s[%" PRId64 ", %" PRIu64 "]", d ? ", " : "", x->busy[d].device, x->busy[d].busy_ns);
    fputc(']', f);
    /* the trace it was read from: a merge refuses one that two partials hold */
    const ft_stat_source *src = &x->source;
    fprintf(f, ",\n   \"source\": {\"size\": %" PRIu64 ", \"digest\": \"%016" PRIx64 "\"", src->size, src->digest);
    if (src->regular)
      fprintf(f, ", \"dev\": %" PRIu64 ", \"ino\": %" PRIu64 ", \"mtime_ns\": %" PRId64, src->dev, src->ino,
              src->mtime_ns);
    fputc('}', f);
    const char *const mk[] = {"mem_cpu", "mem_dev", "mem_cuda"}; /* [memory] events (the ops' columns) */
    for (int k = 0; k < 3; k++)
      if (x->mem_events[k]) fprintf(f, ", \"%s\": %" PRIu64, mk[k], x->mem_events[k]);
    const ft_stat_hta *h = &x->hta;
    if (h->kept) { /* HTA's analyses, when the read kept them */
      fprintf(f,
              ",\n   \"hta\": {\"gpu_events\": %" PRIu64 ", \"gpu_first_ns\": %" PRId64 ", \"gpu_last_ns\": %" PRId64
              ", \"gpu_busy_ns\": %" PRIu64 ", \"compute_ns\": %" PRIu64 ", \"comm_ns\": %" PRIu64
              ", \"overlap_ns\": %" PRIu64 ", \"launches\": %" PRIu64 ", \"short_kernels\": %" PRIu64
              ", \"runtime_outliers\": %" PRIu64 ", \"delay_outliers\": %" PRIu64,
              h->gpu_events, h->gpu_first_ns, h->gpu_last_ns, h->gpu_busy_ns, h->compute_ns, h->comm_ns, h->overlap_ns,
              h->launches, h->short_kernels, h->runtime_outliers, h->delay_outliers);
      put_dist(f, "cpu_ns", &h->cpu_ns);
      put_dist(f, "gpu_ns", &h->gpu_ns);
      put_dist(f, "delay_ns", &h->delay_ns);
      fputc('}', f);
    }
    if (x->mem_kept) put_mem(&w, &x->mem);
    if (rows) {
      fputs(",\n   \"rows\": ", f);
      put_rows(&w, x->own, "   ");
    }
    fputc('}', f);
  }
  fputs("]", f);
  if (!rows) {
    fputs(",\n \"total\": ", f);
    put_rows(&w, &job->total, "");
  }
  fputs(",\n \"unknown_categories\": [", f);
  const ft__map *u = &job->total.unknown_cats;
  for (size_t k = 0; k < w.n_unknown; k++) {
    size_t i = w.unknown[k];
    fprintf(f, "%s[%" PRIu32 ", %" PRIu64 "]", k ? ", " : "", sref_id(&w, &job->total, (uint32_t)u->keys[i]),
            u->vals[i]);
  }
  fputs("],\n \"trace\": [", f);
  for (size_t i = 0, n = 0; i < job->total.n_trace; i++) {
    const ft_stat_event *e = &job->total.trace[i];
    if (!w.keep_event[i]) continue;
    fprintf(f,
            "%s\n  [%" PRIu32 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRIu64 ", %u, %" PRIu32 ", %" PRId64
            ", %" PRId32 ", %" PRId32 ", %" PRId32 ", %" PRId32 ", %" PRId32 ", %" PRId32 ", %" PRId32 "]",
            n++ ? "," : "", e->file, e->ts, e->dur, e->device, e->bytes, (unsigned)e->kind,
            sref_id(&w, &job->total, e->name_id), e->stream, e->grid[0], e->grid[1], e->grid[2], e->block[0],
            e->block[1], e->block[2], e->regs);
  }
  fputs("]}\n", f);
  ft__intern_free(&w.strs);
  free(w.unknown);
  free(w.keep_event);
  return w.oom ? FT_ENOMEM : FT_OK;
}

/* ---- the unknown categories in an order of their own ---- */

typedef struct cat_slot {
  const char *s;
  size_t len, slot;
} cat_slot;

static int by_bytes(const void *a, const void *b) {
  const cat_slot *x = a, *y = b;
  int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

size_t *ft_stat_unknown_order(const ft_stats *st, size_t *n) {
  const ft__map *u = &st->unknown_cats;
  *n = 0;
  cat_slot *c = u->len ? malloc(u->len * sizeof *c) : NULL;
  size_t *out = u->len ? malloc(u->len * sizeof *out) : NULL;
  if (!c || !out) {
    free(c), free(out);
    return NULL;
  }
  size_t m = 0;
  for (size_t i = 0; i < u->cap; i++)
    if (u->used[i]) {
      uint32_t id = (uint32_t)u->keys[i];
      c[m++] = (cat_slot){ft__intern_str(&st->names, id), ft__intern_len(&st->names, id), i};
    }
  qsort(c, m, sizeof *c, by_bytes);
  for (size_t i = 0; i < m; i++) out[i] = c[i].slot;
  free(c);
  *n = m;
  return out;
}
