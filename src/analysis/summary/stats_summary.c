/* What each trace event adds to a `flagtrace stats` summary: its row, op attribution, device intervals, the kept
 * events. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stats_hta.h"
#include "stats_internal.h"
#include "stats_memory.h"

static ft_stat_row *row(ft_stats *st, int section, const char *name, size_t len, uint8_t cat, uint32_t *index) {
  /* a small cache first: names repeat, and comparing is cheaper than hashing a
   * long kernel name (perf: ft__intern was 12 % of a read) */
  uint64_t head = 0, tail = 0; /* a cheap key: the length, the first and last 8 bytes */
  memcpy(&head, name, len < 8 ? len : 8);
  if (len > 8) memcpy(&tail, name + len - 8, 8);
  if (!st->last) st->last = calloc(FT_STAT_N_SECTIONS, sizeof *st->last); /* without memory: no cache */
  ft_stat_last spare = {0},
               *last =
                   st->last ? &st->last[section][ft__cache_mix(head ^ (tail * 31) ^ len) % FT_STAT_ROW_CACHE] : &spare;
  if (last->valid && last->cat == cat && ft__intern_len(&st->names, last->name_id) == len &&
      !memcmp(ft__intern_str(&st->names, last->name_id), name, len)) {
    if (index) *index = (uint32_t)last->index;
    return ft__vec_at(&st->rows[section], last->index);
  }
  uint32_t id;
  if (ft__intern(&st->names, name, len, &id)) return NULL;
  uint64_t *slot = ft__map_upsert(&st->index[section], (uint64_t)cat << 32 | id);
  if (!slot) return NULL;
  if (!*slot) {
    ft_stat_row *r = ft__vec_push(&st->rows[section]);
    if (!r) return NULL;
    r->name_id = id;
    r->cat = cat;
    r->comm = section == FT_STAT_KERNELS && ft_stats_is_comm(ft__intern_str(&st->names, id));
    *slot = st->rows[section].len;
  }
  *last = (ft_stat_last){true, cat, id, *slot - 1};
  if (index) *index = (uint32_t)(*slot - 1);
  return ft__vec_at(&st->rows[section], *slot - 1);
}

/* (stats_internal.h) */
ft_stat_row *ft__aux_row(ft_stats *st, int sec, uint32_t name_id, uint32_t aux, uint32_t *index) {
  uint64_t *slot = ft__map_upsert(&st->index[sec], (uint64_t)aux << 32 | name_id);
  if (!slot) return NULL;
  if (!*slot) {
    ft_stat_row *r = ft__vec_push(&st->rows[sec]);
    if (!r) return NULL;
    r->name_id = name_id;
    r->aux_id = aux;
    *slot = st->rows[sec].len;
  }
  *index = (uint32_t)(*slot - 1);
  return ft__vec_at(&st->rows[sec], *slot - 1);
}

bool ft_stats_is_comm(const char *name) {
  return strcasestr(name, "nccl") || strcasestr(name, "hccl") || strcasestr(name, "rccl");
}

/* torch.autograd.profiler.emit_nvtx names ranges "aten::mm, seq = 3, op_id = 7,
 * sizes = [...]": group them by the op name. */
static size_t op_name_len(const char *name, size_t len) {
  static const char *const tails[] = {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
  if (!memchr(name, ',', len)) return len; /* most names: no memmem (perf: 2 % of a read) */
  size_t cut = len;
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    const char *p = memmem(name, len, tails[i], strlen(tails[i]));
    if (p && (size_t)(p - name) < cut) cut = (size_t)(p - name);
  }
  return cut;
}

/* kineto's activity types (libkineto ActivityType.cpp) and their older
 * spellings; those that are not device work or calls are read and ignored, any
 * other category is counted and named in one line. */
enum ft__sec ft__stats_section_of(const char *c) {
  static const struct {
    const char *cat;
    enum ft__sec sec;
  } cats[] = {
      {"kernel", FT__SEC_KERNEL},
      {"mtia_ccp_events", FT__SEC_KERNEL},
      {"gpu_memcpy", FT__SEC_MEMCPY},
      {"memcpy", FT__SEC_MEMCPY},
      {"gpu_memset", FT__SEC_MEMSET},
      {"memset", FT__SEC_MEMSET},
      {"cuda_runtime", FT__SEC_RUNTIME},
      {"privateuse1_runtime", FT__SEC_RUNTIME},
      {"runtime", FT__SEC_RUNTIME},
      {"mtia_runtime", FT__SEC_RUNTIME},
      {"xpu_runtime", FT__SEC_RUNTIME},
      {"glow_runtime", FT__SEC_RUNTIME},
      {"cuda_driver", FT__SEC_DRIVER},
      {"privateuse1_driver", FT__SEC_DRIVER},
      {"xpu_driver", FT__SEC_DRIVER},
      {"cpu_op", FT__SEC_OP},
      {"operator", FT__SEC_OP},
      {"hpu_op", FT__SEC_OP},
      {"user_annotation", FT__SEC_RANGE},
      {"gpu_user_annotation", FT__SEC_GPU_RANGE},
      {"python_function", FT__SEC_PYFUNC},
      {"python", FT__SEC_IGNORED},
      {"overhead", FT__SEC_OVERHEAD},
      {"cuda_sync", FT__SEC_SYNC},
      {"cpu_instant_event", FT__SEC_IGNORED},
      {"cuda_profiler_range", FT__SEC_IGNORED},
      {"trace", FT__SEC_IGNORED},
      {"fwdbwd", FT__SEC_IGNORED},
      {"ac2g", FT__SEC_IGNORED},
      {"mtia_insight", FT__SEC_IGNORED},
      {"external_correlation", FT__SEC_IGNORED},
      {"collective_comm", FT__SEC_IGNORED},
      {"mtia_counters", FT__SEC_IGNORED},
  };
  for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++)
    if (!strcasecmp(c, cats[i].cat)) return cats[i].sec;
  return FT__SEC_UNKNOWN;
}

static bool count_unknown(ft_stats *st, const char *cat) {
  uint32_t id;
  if (ft__intern(&st->names, *cat ? cat : "(none)", *cat ? strlen(cat) : 6, &id)) return false;
  uint64_t *n = ft__map_upsert(&st->unknown_cats, id);
  if (!n) return false;
  ++*n;
  st->skipped.unknown_cat++;
  return true;
}

/* Keeps the trace_limit earliest device events: a max-heap by ts. */
static bool trace_keep(ft_stats *st, const ft_stat_event *e) {
  ft_stat_event *h = st->trace;
  size_t n = st->n_trace, i;
  if (n == st->trace_limit) {
    if (e->ts >= h[0].ts) return true;
    i = 0; /* replace the latest, sift down */
    for (;;) {
      size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && h[c + 1].ts > h[c].ts) c++;
      if (h[c].ts <= e->ts) break;
      h[i] = h[c];
      i = c;
    }
    h[i] = *e;
    return true;
  }
  /* The heap grows as events come (64, then doubling, up to the limit): a limit far
   * above the events a file has (-n 1000000000, or 0: all) costs what is kept. Its
   * capacity is implied by n: a power of two from 64, or the limit. */
  if (!n || (n >= 64 && !(n & (n - 1)))) {
    if (n > SIZE_MAX / 2 / sizeof *h) return false;
    size_t cap = n ? 2 * n : 64;
    if (cap > st->trace_limit) cap = st->trace_limit;
    if (!(h = realloc(h, cap * sizeof *h))) return false;
    st->trace = h;
  }
  for (i = st->n_trace++; i && h[(i - 1) / 2].ts < e->ts; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
  h[i] = *e;
  return true;
}

/* "ProfilerStep#N": N, else -1 (also the event model's steps: model_finish.c). */
int64_t ft__profiler_step(const char *s, size_t len) {
  static const char pre[] = "ProfilerStep#";
  size_t k = sizeof pre - 1;
  if (len <= k || len > k + 18 || memcmp(s, pre, k)) return -1;
  int64_t v = 0;
  for (size_t i = k; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* An op or range for the memory summary: where allocations happen, and the steps. */
static bool mem_op(ft_stats *st, const ft__ev *e, enum ft__sec sec, uint32_t name_id, const char *name) {
  int64_t step = sec == FT__SEC_RANGE ? ft__profiler_step(name, e->name_len) : -1;
  if (step >= 0 && !ft__memacc_step(st->mem, e, step)) return false;
  return ft__memacc_op(st->mem, e, name_id);
}

/* (stats_internal.h) */
bool ft__stats_apply(ft_stats *st, const ft__ev *e, const char *name, const char *cat_s) {
  enum ft__sec sec = (enum ft__sec)e->sec;
  int64_t dur = e->dur;
  ft_stat_row *row_p = NULL;
  if (st->on_event && sec != FT__SEC_IGNORED && !st->on_event(st->on_event_ctx, e, name, cat_s)) return false;
  if (st->events_only) return true;
  switch (sec) {
  case FT__SEC_IGNORED:
  case FT__SEC_META: return true; /* a row's name: the event model's (on_event above) */
  case FT__SEC_MEMORY:            /* the ops' memory columns (with want_ops), the memory summary (with want_memory) */
    st->mem_seen++;
    return ft__ops_memory(st, e->ts, e->mem_bytes, e->mem_device_type) && (!st->mem || ft__memacc_event(st->mem, e));
  case FT__SEC_SYNC: return !st->hta || ft__hta_event(st, e, name, NULL); /* HTA's GPU event, no row of ours */
  case FT__SEC_UNKNOWN: return count_unknown(st, cat_s);
  case FT__SEC_KERNEL: row_p = row(st, FT_STAT_KERNELS, name, e->name_len, 0, NULL); break;
  case FT__SEC_MEMCPY:
  case FT__SEC_MEMSET:
    row_p = row(st, FT_STAT_MEMORY, name, e->name_len, sec == FT__SEC_MEMSET ? FT_STAT_CAT_MEMSET : FT_STAT_CAT_MEMCPY,
                NULL);
    if (row_p && !ft_dist_add(&row_p->b, e->bytes)) return false;
    break;
  case FT__SEC_RUNTIME:
  case FT__SEC_DRIVER: {
    uint32_t at;
    row_p =
        row(st, FT_STAT_API, name, e->name_len, sec == FT__SEC_DRIVER ? FT_STAT_CAT_DRIVER : FT_STAT_CAT_RUNTIME, &at);
    if (!row_p || !ft__ops_note(st, e, UINT32_MAX, UINT32_MAX, at)) return false; /* a child of its op */
    if (st->mem && e->has_corr && !ft__memacc_call(st->mem, e, row_p->name_id)) return false;
  } break;
  case FT__SEC_GPU_RANGE: /* a projection: not device work of its own (busy % counts its kernels) */
    row_p = row(st, FT_STAT_GPU_RANGES, name, e->name_len, 0, NULL);
    return row_p && ft_dist_add(&row_p->t, (uint64_t)dur);
  case FT__SEC_RANGE:
    row_p = row(st, FT_STAT_RANGES, name, e->name_len, 0, NULL);
    if (!row_p || !ft_dist_add(&row_p->t, (uint64_t)dur)) return false;
    row_p->calls = 1;             /* the file has it: a job's total counts the files (diff's steps) */
    __attribute__((fallthrough)); /* a range is also an op (self device time) */
  case FT__SEC_OP: {
    uint32_t at, shape_at = UINT32_MAX;
    if (st->hta && !ft__hta_event(st, e, name, NULL)) return false; /* an op with a stream is HTA's GPU event */
    ft_stat_row *op = row(st, FT_STAT_OPS, name, op_name_len(name, e->name_len), 0, &at);
    if (!op) return false;
    if (st->mem && !mem_op(st, e, sec, op->name_id, name)) return false;
    /* record_shapes=True: the same op by its inputs' shapes */
    uint32_t dims;
    if (e->has_dims && (ft__intern(&st->names, e->dims, e->dims_len, &dims) ||
                        !ft__aux_row(st, FT_STAT_OP_SHAPES, op->name_id, dims, &shape_at)))
      return false;
    return ft__ops_note(st, e, at, shape_at, UINT32_MAX); /* counted at the file's end: torch drops some */
  }
  case FT__SEC_PYFUNC: { /* torch's with_modules: "nn.Module: Linear_0" around the module's ops */
    static const char mod[] = "nn.Module: ";
    size_t m = sizeof mod - 1;
    if (!st->want_modules || e->name_len <= m || memcmp(name, mod, m)) return true;
    return ft__ops_module(st, e, name + m, e->name_len - m);
  }
  case FT__SEC_OVERHEAD: { /* key_averages has a row for it, and counts it as a child of the op it ran in */
    uint32_t at;
    if (!row(st, FT_STAT_OPS, name, e->name_len, 0, &at)) return false;
    ft__ev o = *e;
    o.has_ext = false; /* its own device time: none (see stats_ops.c) */
    o.has_tid = false; /* kineto writes tid 0: the profiling thread's, at the file's end */
    return ft__ops_note(st, &o, at, UINT32_MAX, UINT32_MAX);
  }
  }
  if (!row_p || !ft_dist_add(&row_p->t, (uint64_t)dur)) return false;
  if (st->hta && !ft__hta_event(st, e, name, row_p)) return false;
  if (sec == FT__SEC_RUNTIME || sec == FT__SEC_DRIVER) return true;
  bool over;
  ft_stat_device *d = ft__stats_device(st, e->dev, &over);
  if ((!d && !over) || !ft__ops_device(st, e->has_ext, e->ext, (uint64_t)dur)) return false;
  if (st->want_op_kernels && st->want_ops && !ft__ops_kernel(st, e->has_ext, e->ext, row_p->name_id, (uint64_t)dur))
    return false;
  if (over) {
    st->device_cap_events++;
  } else {
    if (!ft__add_interval(&d->all, e->ts, e->ts + dur)) return false;
    if (st->timeline && sec != FT__SEC_KERNEL && !ft__add_interval(&d->copy, e->ts, e->ts + dur)) return false;
  }
  if (st->trace_limit) {
    ft_stat_event t = {.ts = e->ts,
                       .dur = dur,
                       .device = e->dev,
                       .bytes = e->bytes,
                       .name_id = row_p->name_id,
                       .kind = (uint8_t)(sec == FT__SEC_MEMCPY   ? 1
                                         : sec == FT__SEC_MEMSET ? 2
                                                                 : 0),
                       .stream = e->has_stream ? e->stream : -1,
                       .regs = e->has_regs && e->regs >= 0 && e->regs <= INT32_MAX ? (int32_t)e->regs : 0};
    if (e->has_grid) memcpy(t.grid, e->grid, sizeof t.grid);
    if (e->has_block) memcpy(t.block, e->block, sizeof t.block);
    return trace_keep(st, &t);
  }
  return true;
}

ft_status ft_stats_init(ft_stats *st) {
  memset(st, 0, sizeof *st);
  ft__hash_key_init(); /* the join's and device table's slots (keyed_hash.h) */
  ft__intern_init(&st->names);
  /* the index maps are made on their first row (ft__map_upsert): a file's empty
   * sections cost nothing */
  for (int i = 0; i < FT_STAT_N_SECTIONS; i++) ft__vec_init(&st->rows[i], sizeof(ft_stat_row), 10);
  ft__vec_init(&st->op_kernel_wait, 24, 10);
  ft__vec_init(&st->host_early, 32, 12);
  st->meta.rank = -1;
  st->meta.device_activity = -1;
  st->first_ns = INT64_MAX;
  st->last_ns = INT64_MIN;
  st->parse_threads = -1;
  st->want_ops = true; /* a job's read says otherwise when no report uses them */
  return FT_OK;
}

void ft_stats_free(ft_stats *st) {
  ft__intern_free(&st->names);
  free(st->last);
  for (int i = 0; i < FT_STAT_N_SECTIONS; i++) {
    for (size_t k = 0; k < st->rows[i].len; k++) {
      ft_stat_row *r = ft__vec_at(&st->rows[i], k);
      ft_dist_free(&r->t);
      ft_dist_free(&r->b);
    }
    ft__vec_free(&st->rows[i]);
    ft__map_free(&st->index[i]);
  }
  ft__join_free(&st->ext_op);
  ft__hta_free(st->hta);
  ft__join_free(&st->device_index);
  ft__map_free(&st->unknown_cats);
  for (size_t i = 0; i < st->n_devices; i++) {
    ft__ivset_free(&st->devices[i].all);
    ft__ivset_free(&st->devices[i].copy);
  }
  free(st->devices);
  free(st->trace);
  free(st->host);
  free(st->rt);
  ft__join_free(&st->ext_rt);
  ft__vec_free(&st->op_kernel_wait);
  ft__vec_free(&st->host_early);
  ft__vec_free(&st->ops_mem);
  ft__memacc_free(st->mem);
  ft_stat_mem_free(&st->mem_sum);
}

void ft_stats_finish(ft_stats *st) {
  /* self device time of an op: device events whose External id is one of its
   * calls (the innermost op that launched them); the rest is left unattributed */
  uint64_t unattributed = st->device_ns - st->attributed_ns;
  if (unattributed && st->rows[FT_STAT_OPS].len) {
    ft_stat_row *r = row(st, FT_STAT_OPS, "(no op)", 7, 0, NULL);
    if (r) r->self_ns += unattributed, r->total_dev_ns += unattributed;
  }
}

uint64_t ft_stats_span(const ft_stats *st) {
  /* both ends lie within +-8e18 ns: the difference fits unsigned */
  return st->last_ns > st->first_ns ? (uint64_t)st->last_ns - (uint64_t)st->first_ns : 0;
}
