/* The event model's builder, accessors, read (one parse with the summary) and replay into a summary. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "model_internal.h"

void ft_model_init(ft_model *m, const ft_model_opts *o) {
  memset(m, 0, sizeof *m);
  m->rank = -1;
  struct ft_model_priv *p = calloc(1, sizeof *p);
  if (!p) return; /* ft_model_add then fails: no memory */
  ft__intern_init(&p->names);
  ft__intern_init(&p->text);
  ft__intern_init(&p->vars);
  ft__intern_init(&p->tkeys);
  if (o && o->step && !(p->step_name = strdup(o->step))) {
    ft__intern_free(&p->names), ft__intern_free(&p->text), ft__intern_free(&p->vars), ft__intern_free(&p->tkeys);
    free(p);
    return;
  }
  p->first_ns = INT64_MAX;
  p->last_ns = INT64_MIN;
  p->meta.rank = -1;
  p->meta.device_activity = -1;
  m->p = p;
}

void ft_model_free(ft_model *m) {
  struct ft_model_priv *p = m->p;
  free(m->ts), free(m->dur), free(m->corr32), free(m->ext32), free(m->arg);
  free(m->name), free(m->track), free(m->link), free(m->op), free(m->step), free(m->kind);
  free(m->tracks), free(m->steps), free(m->mem), free(m->meta);
  if (p) {
    free(p->memx), free(p->mem_order);
    ft__intern_free(&p->names);
    ft__intern_free(&p->text);
    ft__intern_free(&p->vars);
    ft__intern_free(&p->tkeys);
    free(p->var), free(p->order), free(p->wide), free(p->unk), free(p->step_name);
    ft__map_free(&p->unk_index);
    free(p);
  }
  memset(m, 0, sizeof *m);
  m->rank = -1;
}

void ft__model_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (!p || bytes < 2 * huge) return;
  uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: refused or not, the same */
#else
  (void)p, (void)bytes;
#endif
}

/* The columns with room for one more slice (doubling: large blocks grow in place
 * by mremap, without a copy); false without memory. */
static bool build_room(ft_model *m) {
  struct ft_model_priv *p = m->p;
  if (m->n < p->cap) return true;
  size_t cap = p->cap ? 2 * p->cap : 1024;
#define GROW(f)                            \
  do {                                     \
    void *q = realloc(f, cap * sizeof *f); \
    if (!q) return false;                  \
    f = q;                                 \
    ft__model_huge(f, cap * sizeof *f);    \
  } while (0)
  GROW(m->ts);
  GROW(m->dur);
  GROW(m->arg);
  GROW(m->corr32);
  GROW(m->ext32);
  GROW(m->name);
  GROW(m->track);
  GROW(m->kind);
  GROW(p->var);
#undef GROW
  p->cap = cap;
  return true;
}

/* A 32-bit id column's value; a wider one (or INT64_MIN, which reads as none) to
 * the side table, by file position until finish sorts. */
static bool id32(struct ft_model_priv *p, uint32_t at, uint8_t ext, bool has, int64_t v, uint32_t *out) {
  if (!has) return *out = FT_MODEL_NONE, true;
  if (v >= 0 && v < (int64_t)FT_MODEL_WIDE) return *out = (uint32_t)v, true;
  *out = FT_MODEL_WIDE;
  if (p->n_wide == p->cap_wide) {
    size_t c = p->cap_wide ? 2 * p->cap_wide : 16;
    ft__mwide *w = realloc(p->wide, c * sizeof *w);
    if (!w) return false;
    p->wide = w;
    p->cap_wide = c;
  }
  p->wide[p->n_wide++] = (ft__mwide){at, ext, v};
  return true;
}

static uint32_t mix_slot(uint64_t x) { return (uint32_t)(ft__cache_mix(x) % MODEL_CACHE); }

/* A category the reader does not know: counted where it was first seen. */
static bool add_unknown(struct ft_model_priv *p, size_t before, const char *cat) {
  uint32_t id;
  if (ft__intern(&p->text, cat, strlen(cat), &id)) return false;
  uint64_t *at = ft__map_upsert(&p->unk_index, id); /* a hash: a trace may name many categories */
  if (!at) return false;
  if (*at) return ++p->unk[*at - 1].count, true;
  if (p->n_unk == p->cap_unk) {
    size_t cap = p->cap_unk ? 2 * p->cap_unk : 4;
    ft__munknown *u = realloc(p->unk, cap * sizeof *u);
    if (!u) return false;
    p->unk = u;
    p->cap_unk = cap;
  }
  p->unk[p->n_unk++] = (ft__munknown){(uint32_t)before, id, 1};
  *at = p->n_unk;
  return true;
}

static bool is_stream_kind(int k) { return ft_model_is_device((uint8_t)k) || k == FT_MK_GPU_RANGE || k == FT_MK_SYNC; }

static bool track_of(ft_model *m, const ft__ev *e, int kind, uint32_t *out) {
  struct ft_model_priv *p = m->p;
  bool stream = is_stream_kind(kind);
  ft__mtrack_key k;
  memset(&k, 0, sizeof k);
  k.dev = e->dev;
  k.tid = stream ? (e->has_stream ? e->stream : e->has_tid ? e->tid : -1) : (e->has_tid ? e->tid : -1);
  k.kind = stream ? FT_TRACK_STREAM : FT_TRACK_THREAD;
  uint32_t *c = &p->track_cache[mix_slot((uint64_t)k.dev * 31 + (uint64_t)k.tid * 7 + k.kind)];
  if (*c) {
    const ft_model_track *t = &m->tracks[*c - 1];
    if (t->pid == k.dev && t->tid == k.tid && t->kind == k.kind) return *out = *c - 1, true;
  }
  uint32_t id;
  if (ft__intern(&p->tkeys, (const char *)&k, 17, &id)) return false;
  if (id == m->n_tracks) {
    if (m->n_tracks == p->cap_tracks) {
      size_t cap = p->cap_tracks ? 2 * p->cap_tracks : 16;
      ft_model_track *t = realloc(m->tracks, cap * sizeof *t);
      if (!t) return false;
      m->tracks = t;
      p->cap_tracks = cap;
    }
    m->tracks[m->n_tracks++] = (ft_model_track){
        .pid = k.dev, .tid = k.tid, .device = stream ? k.dev : -1, .name = FT_MODEL_NONE, .kind = k.kind};
  }
  *c = id + 1;
  *out = id;
  return true;
}

static bool var_of(struct ft_model_priv *p, const ft__ev *e, uint32_t *out) {
  ft__mvar v;
  memset(&v, 0, sizeof v);
  if (e->has_tid) v.flags |= V_TID, v.tid = e->tid;
  if (e->has_stream) v.flags |= V_STREAM, v.stream = e->stream;
  if (e->has_regs) v.flags |= V_REGS, v.regs = e->regs;
  if (e->has_grid) v.flags |= V_GRID, memcpy(v.grid, e->grid, sizeof v.grid);
  if (e->has_block) v.flags |= V_BLOCK, memcpy(v.block, e->block, sizeof v.block);
  if (e->has_dims) {
    v.flags |= V_DIMS;
    if (ft__intern(&p->text, e->dims, e->dims_len, &v.dims)) return false;
  }
  uint64_t w[7], h = 0;
  memcpy(w, &v, sizeof w);
  for (int i = 0; i < 7; i++) h = h * 0x9e3779b97f4a7c15ull + w[i];
  uint32_t *c = &p->var_cache[mix_slot(h)];
  if (*c && !memcmp(ft__intern_str(&p->vars, *c - 1), &v, sizeof v)) return *out = *c - 1, true;
  if (ft__intern(&p->vars, (const char *)&v, sizeof v, out)) return false;
  *c = *out + 1;
  return true;
}

static bool name_of(struct ft_model_priv *p, const char *name, size_t len, uint32_t *out) {
  uint64_t head = 0, tail = 0; /* a cheap key: the length, the first and last 8 bytes */
  memcpy(&head, name, len < 8 ? len : 8);
  if (len > 8) memcpy(&tail, name + len - 8, 8);
  uint32_t *c = &p->name_cache[mix_slot(head ^ (tail * 31) ^ len)];
  if (*c && ft__intern_len(&p->names, *c - 1) == len && !memcmp(ft__intern_str(&p->names, *c - 1), name, len))
    return *out = *c - 1, true;
  if (ft__intern(&p->names, name, len, out)) return false;
  *c = *out + 1;
  return true;
}

/* A [memory] instant: a row in file order (finish sorts them by time). */
static bool add_mem(ft_model *m, const ft__ev *e) {
  struct ft_model_priv *p = m->p;
  if (m->n_mem >= FT_MODEL_NONE - 1) return false;
  if (m->n_mem == p->cap_mem) {
    size_t cap = p->cap_mem ? 2 * p->cap_mem : 256;
    ft_model_mem *r = realloc(m->mem, cap * sizeof *r);
    if (!r) return false;
    m->mem = r;
    ft__mmemx *x = realloc(p->memx, cap * sizeof *x);
    if (!x) return false;
    p->memx = x;
    p->cap_mem = cap;
  }
  ft__ev t = *e; /* its thread's track: the host side */
  t.sec = FT__SEC_RUNTIME;
  uint32_t track;
  if (!track_of(m, &t, FT_MK_RUNTIME, &track)) return false;
  size_t i = m->n_mem++;
  m->mem[i] = (ft_model_mem){.ts = e->ts,
                             .bytes = e->mem_bytes,
                             .addr = e->mem_addr,
                             .total_allocated = e->mem_total_alloc,
                             .total_reserved = e->mem_total_res,
                             .device = e->mem_device,
                             .device_type = e->mem_device_type,
                             .track = track,
                             .op = FT_MODEL_NONE,
                             .call = FT_MODEL_NONE,
                             .step = FT_MODEL_NONE};
  p->memx[i] = (ft__mmemx){.tid = e->tid,
                           .corr = e->corr,
                           .ext = e->ext,
                           .stream = e->stream,
                           .pool_bytes = e->mem_pool_bytes,
                           .pid = e->dev,
                           .before = (uint32_t)m->n,
                           .file = (uint32_t)i,
                           .flags = (uint8_t)((e->has_tid ? MX_TID : 0) | (e->has_corr ? MX_CORR : 0) |
                                              (e->has_ext ? MX_EXT : 0) | (e->has_stream ? MX_STREAM : 0)),
                           .op = e->mem_op,
                           .kind = e->mem_kind};
  return true;
}

/* A thread_name / process_name event: kept as the trace gives it (a few a thread) */
static bool add_meta(ft_model *m, const ft__ev *e, const char *name) {
  if (!(m->n_meta & (m->n_meta - 1)) && m->n_meta < SIZE_MAX / 2 / sizeof *m->meta) { /* 0, 1, 2, 4...: grown twice */
    ft_model_meta *r = realloc(m->meta, (m->n_meta ? 2 * m->n_meta : 1) * sizeof *r);
    if (!r) return false;
    m->meta = r;
  }
  ft_model_meta *t = &m->meta[m->n_meta++];
  t->pid = e->dev;
  t->process = e->bytes == 1;
  t->tid = t->process || !e->has_tid ? -1 : e->tid;
  snprintf(t->name, sizeof t->name, "%.*s", (int)(e->name_len < sizeof t->name ? e->name_len : sizeof t->name - 1),
           name);
  return true;
}

bool ft_model_add(ft_model *m, const ft__ev *e, const char *name, const char *cat) {
  struct ft_model_priv *p = m->p;
  if (!p || p->finished) return false;
  if (e->sec == FT__SEC_IGNORED) return true;
  if (e->sec == FT__SEC_META) return add_meta(m, e, name);
  if (e->sec == FT__SEC_MEMORY) return add_mem(m, e);
  if (e->sec == FT__SEC_UNKNOWN) return add_unknown(p, m->n, cat ? cat : "");
  if (e->sec < FT__SEC_KERNEL || e->sec > FT__SEC_PYFUNC) return true;
  if (m->n >= FT_MODEL_NONE - 1 || !build_room(m)) return false; /* slice indexes are 32-bit */
  int kind = e->sec - FT__SEC_KERNEL;
  size_t i = m->n;
  if (!name_of(p, name, e->name_len, &m->name[i]) || !track_of(m, e, kind, &m->track[i]) || !var_of(p, e, &p->var[i]) ||
      !id32(p, (uint32_t)i, 0, e->has_corr, e->corr, &m->corr32[i]) ||
      !id32(p, (uint32_t)i, 1, e->has_ext, e->ext, &m->ext32[i]))
    return false;
  m->ts[i] = e->ts;
  m->dur[i] = e->dur;
  m->arg[i] = e->bytes;
  m->kind[i] = (uint8_t)kind;
  if (e->name_cut && kind == FT_MK_PYFUNC) p->cut_pyfunc++;
  m->n++;
  return true;
}
ft_status ft_model_finish(ft_model *m) {
  if (!m->p) return FT_ENOMEM;
  if (m->p->finished) return FT_EINVAL;
  ft_status s = ft__model_finish(m);
  if (!s) m->p->finished = true;
  return s;
}

const char *ft_model_str(const ft_model *m, uint32_t id) {
  if (!m->p || id >= m->p->names.n) return "";
  return ft__intern_str(&m->p->names, id);
}

uint32_t ft_model_find_str(const ft_model *m, const char *s) {
  const ft__strtab *t = m->p ? &m->p->names : NULL;
  if (!t || !t->n) return FT_MODEL_NONE;
  size_t len = strlen(s);
  for (uint32_t i = (uint32_t)ft__hash_bytes_keyed(s, len) & (t->tcap - 1); t->table[i]; i = (i + 1) & (t->tcap - 1)) {
    uint32_t c = t->table[i] - 1;
    if (t->lens[c] == len && !memcmp(t->strs[c], s, len)) return c;
  }
  return FT_MODEL_NONE;
}

bool ft_model_kernel_args(const ft_model *m, size_t slice, struct ft_model_kernel_args *a) {
  memset(a, 0, sizeof *a);
  a->stream = a->regs = -1;
  if (!m->p || !m->p->finished || slice >= m->n) return false;
  ft__mvar v;
  memcpy(&v, ft__intern_str(&m->p->vars, m->p->var[slice]), sizeof v);
  if (v.flags & V_GRID) memcpy(a->grid, v.grid, sizeof a->grid);
  if (v.flags & V_BLOCK) memcpy(a->block, v.block, sizeof a->block);
  if (v.flags & V_STREAM) a->stream = v.stream;
  if (v.flags & V_REGS) a->regs = v.regs;
  if (v.flags & V_DIMS) a->dims = ft__intern_str(&m->p->text, v.dims);
  return (v.flags & (V_GRID | V_BLOCK | V_STREAM | V_REGS | V_DIMS)) != 0;
}

int64_t ft__model_wide(const ft_model *m, size_t i, bool ext) {
  const struct ft_model_priv *p = m->p;
  size_t lo = 0, hi = p ? p->n_wide : 0;
  while (lo < hi) { /* by slice, corr before ext */
    size_t mid = (lo + hi) / 2;
    const ft__mwide *w = &p->wide[mid];
    if (w->slice < i || (w->slice == i && w->ext < ext)) lo = mid + 1;
    else hi = mid;
  }
  if (lo < (p ? p->n_wide : 0) && p->wide[lo].slice == i && p->wide[lo].ext == ext) return p->wide[lo].v;
  return FT_MODEL_NO_ID;
}

static size_t strtab_bytes(const ft__strtab *t) {
  return t->arena.bytes + (size_t)t->cap * (sizeof *t->strs + sizeof *t->lens) + (size_t)t->tcap * sizeof *t->table;
}

/* What does not grow with slices: names and texts, variants, tracks, the model's own structs. */
size_t ft_model_bytes_distinct(const ft_model *m) {
  const struct ft_model_priv *p = m->p;
  if (!p) return 0;
  size_t b = sizeof *m + sizeof *p + strtab_bytes(&p->names) + strtab_bytes(&p->text) + strtab_bytes(&p->vars);
  b += p->cap_tracks * sizeof *m->tracks + strtab_bytes(&p->tkeys) + p->cap_unk * sizeof *p->unk;
  /* memory rows grow with [memory] events, not with slices: the 64 B a slice leaves them out */
  b += (p->finished ? m->n_mem : p->cap_mem) * (sizeof *m->mem + sizeof *p->memx) + m->n_mem * sizeof *p->mem_order;
  return b + (p->step_name ? strlen(p->step_name) + 1 : 0);
}

size_t ft_model_bytes(const ft_model *m) {
  const struct ft_model_priv *p = m->p;
  if (!p) return 0;
  /* ts dur arg; corr ext name track link op step var order; kind */
  size_t per = 3 * sizeof(int64_t) + 9 * sizeof(uint32_t) + 1;
  size_t b = (p->finished ? m->n : p->cap) * per; /* the build's room until finished */
  b += m->n_steps * sizeof *m->steps + p->n_wide * sizeof *p->wide;
  return b + ft_model_bytes_distinct(m); /* with the memory rows (the build's room until finished) */
}

/* The one peaks table (issue 50): each device's dense (no 2:4 sparsity) BF16 tensor
 * peak, FP16 where the device has no BF16 (V100), in FLOP/s, from its vendor's data
 * sheet (half the "with sparsity" figure the sheets print; docs/advise.md "Peaks" names
 * each sheet). Matched as a substring of deviceProperties' name, the first match wins:
 * each variant before the name it contains (H200 NVL before H200, H200 before H20,
 * H100 NVL and PCIe before H100, GB200 before B200, L40S before L40 before L4). */
static const struct {
  const char *name;
  double flops;
} peaks[] = {{"H200 NVL", 835.5e12},  /* H200 datasheet: H200 NVL 1,671 TFLOPS with sparsity */
             {"H200", 989.4e12},      /* H200 datasheet: H200 SXM 1,979 with sparsity; the GH100 of H100 SXM5 */
             {"H100 NVL", 835.5e12},  /* H100 datasheet: H100 NVL 1,671 with sparsity */
             {"H100 PCIe", 756.5e12}, /* H100 PCIe product brief / Hopper whitepaper: 756.5 dense (1,513) */
             {"H100", 989.4e12},      /* Hopper whitepaper: H100 SXM5 989.4 dense (1,979); "NVIDIA H100 80GB HBM3" */
             {"H800 PCIe", 756.5e12}, /* H800 PCIe datasheet: 1,513 with sparsity */
             {"H800", 989.4e12},      /* H800 SXM5 datasheet: 1,979 with sparsity */
             {"H20", 148.0e12},       /* H20 product brief: BF16 148 dense (296 with sparsity) */
             {"A100", 312.0e12},      /* A100 datasheet: BF16 312 (624 with sparsity), SXM and PCIe */
             {"A800", 312.0e12},      /* A800 datasheet: BF16 312 (624 with sparsity) */
             {"L40S", 362.05e12},     /* L40S datasheet: BF16 362.05 (733 with sparsity) */
             {"L40", 181.05e12},      /* L40 datasheet: BF16 181.05 (362.1 with sparsity) */
             {"L4", 121.0e12},        /* L4 datasheet: BF16 242 with sparsity */
             {"GB200", 2500.0e12},    /* GB200 NVL72 datasheet: FP16/BF16 5 PFLOPS a GPU with sparsity */
             {"B200", 2250.0e12},     /* HGX B200 datasheet: FP16/BF16 4.5 PFLOPS a GPU with sparsity */
             {"V100S", 130.0e12},     /* V100S datasheet: FP16 tensor 130 (no BF16, no sparsity) */
             {"V100-PCIE", 112.0e12}, /* V100 datasheet: PCIe FP16 tensor 112 ("Tesla V100-PCIE-32GB") */
             {"V100", 125.0e12},      /* V100 datasheet: SXM2 FP16 tensor 125 ("Tesla V100-SXM2-32GB") */
             {"MI300X", 1307.4e12}};  /* AMD Instinct MI300X datasheet: BF16 1307.4 (2614.9 with sparsity) */

/* (model.h) */
double ft_model_peak_flops(const char *device) {
  for (size_t i = 0; device && i < sizeof peaks / sizeof peaks[0]; i++)
    if (strstr(device, peaks[i].name)) return peaks[i].flops;
  return 0;
}

/* ---- the read: the stats reader's parse, its on_event hook into the model ---- */

typedef struct hook_ctx {
  ft_model *m;
  bool (*prev)(void *ctx, const struct ft__ev *e, const char *name, const char *cat);
  void *prev_ctx;
} hook_ctx;

static bool hook(void *ctx, const struct ft__ev *e, const char *name, const char *cat) {
  hook_ctx *h = ctx;
  return ft_model_add(h->m, e, name, cat) && (!h->prev || h->prev(h->prev_ctx, e, name, cat));
}

static ft_status model_read(ft_model *m, const char *path, const char *data, size_t len, const ft_model_opts *o,
                            ft_stats *st, char *err, size_t errlen) {
  ft_model_init(m, o);
  ft_stats tmp;
  ft_stats *s = st;
  if (!m->p) {
    snprintf(err, errlen, "out of memory");
    return FT_ENOMEM;
  }
  if (!st) { /* the model alone: the reader hands events over and sums nothing */
    if (ft_stats_init(&tmp)) {
      ft_stats_free(&tmp);
      ft_model_free(m);
      snprintf(err, errlen, "out of memory");
      return FT_ENOMEM;
    }
    tmp.events_only = true;
    tmp.want_ops = false;
    tmp.want_modules = true; /* python_function events too: a replay drops them unless its st wants them */
    tmp.want_source = o && o->source;
    s = &tmp;
  }
  hook_ctx h = {m, s->on_event, s->on_event_ctx};
  bool args = s->want_args, pyfunc = s->read_pyfunc;
  s->on_event = hook;
  s->on_event_ctx = &h;
  s->want_args = true;   /* correlation, stream, grid, block, registers: the model's columns */
  s->read_pyfunc = true; /* python_function slices whatever st wants: one model either way */
  ft_status r = path ? ft_stats_read(s, path, err, errlen) : ft_stats_read_mem(s, data, len, err, errlen);
  s->on_event = h.prev;
  s->on_event_ctx = h.prev_ctx;
  s->want_args = args;
  s->read_pyfunc = pyfunc;
  struct ft_model_priv *p = m->p;
  if (!r) {
    p->read = true;
    p->events = s->events;
    p->skipped = s->skipped;
    p->cut_strings = s->cut_strings; /* python_function's cut names counted (a replay takes them out) */
    /* the reader counted the cut names of python_function events that st's summary
     * ignores (want_modules off): not its names */
    if (st && !st->want_modules) st->cut_strings -= p->cut_pyfunc;
    p->first_ns = s->first_ns;
    p->last_ns = s->last_ns;
    p->meta = s->meta;
    p->source = s->source;
    p->mem_bad = s->mem_bad;
    p->skipped.unknown_cat = 0; /* counted again by a replay, from the model's categories */
    p->skipped.unpaired = 0;    /* HTA's, at the summary's finish */
    m->rank = s->meta.rank;
    memcpy(m->device_name, s->device_name, sizeof m->device_name);
    m->device_name[sizeof m->device_name - 1] = '\0';
    m->peak_flops = ft_model_peak_flops(m->device_name);
    r = ft_model_finish(m);
    if (r) snprintf(err, errlen, "out of memory");
  }
  if (!st) ft_stats_free(&tmp);
  if (r) ft_model_free(m);
  return r;
}

ft_status ft_model_read(ft_model *m, const char *path, const ft_model_opts *o, ft_stats *st, char *err, size_t errlen) {
  return model_read(m, path, NULL, 0, o, st, err, errlen);
}

ft_status ft_model_read_mem(ft_model *m, const char *data, size_t len, const ft_model_opts *o, ft_stats *st, char *err,
                            size_t errlen) {
  return model_read(m, NULL, data ? data : "", len, o, st, err, errlen);
}

/* ---- the replay: each slice's event as the reader handed it over ---- */

static const char *const kind_cat[FT_MK_N] = {"kernel",      "gpu_memcpy", "gpu_memset",      "cuda_runtime",
                                              "cuda_driver", "cpu_op",     "user_annotation", "gpu_user_annotation",
                                              "cuda_sync",   "overhead",   "python_function"};

/* A slice's id as given (INT64_MIN too: a wide one); the slice has one. */
static int64_t id_of(const ft_model *m, size_t i, bool ext) {
  uint32_t v = ext ? m->ext32[i] : m->corr32[i];
  return v < FT_MODEL_WIDE ? (int64_t)v : ft__model_wide(m, i, ext);
}

/* The event of slice i (name in *name). */
static void slice_ev(const ft_model *m, size_t i, bool args, ft__ev *e, const char **name) {
  const struct ft_model_priv *p = m->p;
  memset(e, 0, sizeof *e);
  uint8_t k = m->kind[i];
  e->sec = (uint8_t)(k + FT__SEC_KERNEL);
  e->ts = m->ts[i];
  e->dur = m->dur[i];
  e->bytes = m->arg[i];
  const ft_model_track *t = &m->tracks[m->track[i]];
  e->dev = t->pid;
  e->name_len = ft__intern_len(&p->names, m->name[i]);
  *name = ft__intern_str(&p->names, m->name[i]);
  if (m->ext32[i] != FT_MODEL_NONE) e->has_ext = true, e->ext = id_of(m, i, true);
  if (args && m->corr32[i] != FT_MODEL_NONE) e->has_corr = true, e->corr = id_of(m, i, false);
  ft__mvar v;
  memcpy(&v, ft__intern_str(&p->vars, p->var[i]), sizeof v);
  e->has_tid = v.flags & V_TID;
  e->tid = v.tid;
  if (args) {
    e->has_stream = v.flags & V_STREAM;
    e->stream = v.stream;
    e->has_regs = v.flags & V_REGS;
    e->regs = v.regs;
    e->has_grid = v.flags & V_GRID;
    e->has_block = v.flags & V_BLOCK;
    memcpy(e->grid, v.grid, sizeof e->grid);
    memcpy(e->block, v.block, sizeof e->block);
  }
  if (v.flags & V_DIMS) {
    e->has_dims = true;
    e->dims = ft__intern_str(&p->text, v.dims);
    e->dims_len = ft__intern_len(&p->text, v.dims);
  }
}

/* Memory row r's event as the reader handed it over. */
static void mem_ev(const ft_model *m, size_t r, ft__ev *e, const char **name) {
  const ft_model_mem *w = &m->mem[r];
  const ft__mmemx *x = &m->p->memx[r];
  memset(e, 0, sizeof *e);
  e->sec = FT__SEC_MEMORY;
  e->ts = w->ts;
  e->dev = x->pid;
  e->name_len = 8;
  *name = "[memory]";
  e->has_tid = x->flags & MX_TID, e->tid = x->tid;
  e->has_corr = x->flags & MX_CORR, e->corr = x->corr;
  e->has_ext = x->flags & MX_EXT, e->ext = x->ext;
  e->has_stream = x->flags & MX_STREAM, e->stream = x->stream;
  e->mem_bytes = w->bytes;
  e->mem_addr = w->addr;
  e->mem_total_alloc = w->total_allocated;
  e->mem_total_res = w->total_reserved;
  e->mem_pool_bytes = x->pool_bytes;
  e->mem_device = w->device;
  e->mem_device_type = w->device_type;
  e->mem_op = x->op;
  e->mem_kind = x->kind;
}

ft_status ft_model_replay(const ft_model *m, ft_stats *st) {
  const struct ft_model_priv *p = m->p;
  if (!p || !p->finished) return FT_EINVAL;
  size_t u = 0, k = 0;
  bool ok = true;
  for (size_t f = 0; ok && f <= m->n; f++) {
    for (; ok && k < m->n_mem && m->p->memx[p->mem_order[k]].before == f; k++) { /* in file order */
      ft__ev e;
      const char *name;
      mem_ev(m, p->mem_order[k], &e, &name);
      ok = ft__stats_apply(st, &e, name, "cpu_instant_event");
    }
    for (; ok && u < p->n_unk && p->unk[u].before == f; u++) { /* its category's count, where it was first seen */
      ft__ev e = {.sec = FT__SEC_UNKNOWN};
      for (uint64_t c = 0; ok && c < p->unk[u].count; c++)
        ok = ft__stats_apply(st, &e, "", ft__intern_str(&p->text, p->unk[u].cat));
    }
    if (f == m->n) break;
    size_t i = p->order[f];
    if (m->kind[i] == FT_MK_PYFUNC && !st->want_modules) continue; /* the reader ignores them then */
    ft__ev e;
    const char *name;
    slice_ev(m, i, st->want_args || st->want_memory, &e, &name); /* a call's correlation id: memory's too */
    ok = ok && ft__stats_apply(st, &e, name, kind_cat[m->kind[i]]);
  }
  if (p->read) { /* what the reader counts itself */
    st->events += p->events;
    st->skipped.bad_time += p->skipped.bad_time;
    st->skipped.time_range += p->skipped.time_range;
    st->skipped.no_dur += p->skipped.no_dur;
    st->skipped.neg_dur += p->skipped.neg_dur;
    st->skipped.bad_bytes += p->skipped.bad_bytes;
    st->skipped.bad_ext += p->skipped.bad_ext;
    st->cut_strings += p->cut_strings - (st->want_modules ? 0 : p->cut_pyfunc);
    st->mem_bad += p->mem_bad;
    if (st->first_ns > p->first_ns) st->first_ns = p->first_ns;
    if (st->last_ns < p->last_ns) st->last_ns = p->last_ns;
    st->meta = p->meta;
    if (st->want_source) st->source = p->source;
  }
  /* the parse's end: the memory summary, the op join and the calls' nesting are per file */
  ok = ft__stats_mem_file_end(st) && ok;
  ok = ft__ops_file_end(st) && ok;
  ft__join_free(&st->ext_op);
  return ok ? FT_OK : FT_ENOMEM;
}
