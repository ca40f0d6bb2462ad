/* Ops as torch's key_averages() counts them (their nesting on a thread), and the device work each op launched. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "stats_internal.h"

/* A call on the CPU, kept while its file is read (64 B): ops and ranges, kineto's
 * overhead, and the runtime calls without an External id, all children in the
 * nesting (a launch's time is not its op's self CPU time). A runtime call with one
 * is its op's child without being kept: its time and count go to the op (torch
 * puts it on its op's thread, under it), or wait in rt until the op is read. */
struct ft__host_ev {
  int64_t ts, end, tid;
  uint64_t dev;            /* device ns of its own work (External id) */
  uint64_t sub_dev;        /* device totals of its direct children */
  uint64_t child_ns;       /* CPU time of its direct children */
  uint32_t row, shape_row; /* FT_STAT_OPS / FT_STAT_OP_SHAPES indexes; UINT32_MAX: none (runtime) */
  uint32_t key; /* its name: the op row, or the api row | RUNTIME_KEY (torch merges a lone child of its name) */
  bool module;  /* an nn.Module (key: its name id), not a call: placed apart at the file's end */
  uint8_t n_rt; /* runtime calls it has as children by External id: 0, 1, 2 for more */
};
struct ft__rt_wait {
  uint64_t ns;
  uint32_t n;
};
_Static_assert(sizeof(struct ft__host_ev) == 64, "the per-call cost stats --help and docs/ops.md state");
#define RUNTIME_KEY (1u << 31)
/* tid of kineto's overhead events: they are the profiling thread's (kineto writes
 * tid 0 for them), taken as the thread of the file's earliest op or range */
#define MAIN_THREAD INT64_MIN

/* (stats_internal.h) */
static void take_rt(struct ft__host_ev *h, uint64_t ns, uint32_t n) {
  h->child_ns += ns;
  h->n_rt = (uint8_t)(h->n_rt + n > 2 ? 2 : h->n_rt + n);
}

/* A runtime call of External id ext: a child of that op's call (false without memory). */
static bool runtime_child(ft_stats *st, int64_t ext, uint64_t ns) {
  uint64_t *v = ft__join_find(&st->ext_op, (uint64_t)ext);
  if (v && (*v & JOIN_OP)) {
    take_rt(&st->host[*v & ~JOIN_OP], ns, 1);
    return true;
  }
  uint64_t *w = ft__join_upsert(&st->ext_rt, (uint64_t)ext);
  if (!w) return false;
  if (!*w) {
    if (st->n_rt == st->cap_rt) {
      size_t cap = st->cap_rt ? 2 * st->cap_rt : 256;
      struct ft__rt_wait *g = realloc(st->rt, cap * sizeof *g);
      if (!g) return false;
      st->rt = g;
      st->cap_rt = cap;
    }
    st->rt[st->n_rt++] = (struct ft__rt_wait){0, 0};
    *w = st->n_rt;
  }
  st->rt[*w - 1].ns += ns;
  st->rt[*w - 1].n++;
  return true;
}

/* A runtime call without an External id read before the file's first op, range or
 * module (32 B): a trace of only such calls (`record`'s) keeps them at half the cost,
 * and drops them at its end, having no op to nest them in. */
struct early_call {
  int64_t ts, end, tid;
  uint32_t key, pad;
};
_Static_assert(sizeof(struct early_call) == 32, "half a call's 64 B");

static bool host_room(ft_stats *st) {
  if (st->n_host < st->cap_host) return true;
  size_t cap = st->cap_host ? 2 * st->cap_host : 1024;
  struct ft__host_ev *h = realloc(st->host, cap * sizeof *h);
  if (!h) return false;
  st->host = h;
  st->cap_host = cap;
  return true;
}

/* An early call as the call it is (ft__vec_drain's fn). */
static bool early_to_host(void *ctx, const void *elem) {
  ft_stats *st = ctx;
  const struct early_call *c = elem;
  if (!host_room(st)) return false;
  st->host[st->n_host++] =
      (struct ft__host_ev){c->ts, c->end, c->tid, 0, 0, 0, UINT32_MAX, UINT32_MAX, c->key, false, 0};
  return true;
}

static bool note(ft_stats *st, const ft__ev *e, uint32_t row, uint32_t shape_row, uint32_t api_row, bool module) {
  if (!st->want_ops) return true;
  if (row == UINT32_MAX && e->has_ext && api_row != UINT32_MAX) return runtime_child(st, e->ext, (uint64_t)e->dur);
  int64_t tid = e->has_tid ? e->tid : MAIN_THREAD;
  if (row == UINT32_MAX && !module && !st->n_host) { /* a call, no op yet */
    struct early_call *c = ft__vec_push(&st->host_early);
    if (!c) return false;
    *c = (struct early_call){e->ts, e->ts + e->dur, tid, api_row | RUNTIME_KEY, 0};
    return true;
  }
  /* the calls before it first, in file order: the nesting is the same as if kept */
  if (st->host_early.len && !ft__vec_drain(&st->host_early, early_to_host, st)) return false;
  if (!host_room(st)) return false;
  uint64_t dev = 0;
  if (row != UINT32_MAX && e->has_ext) { /* the device time its External id gathered so far, and what comes later */
    uint64_t *v = ft__join_upsert(&st->ext_op, (uint64_t)e->ext);
    if (!v) return false;
    if (!(*v & JOIN_OP)) dev = *v; /* a second call of one id gets nothing twice */
    *v = JOIN_OP | st->n_host;
  }
  if (row != UINT32_MAX && e->has_tid && (!st->host_has_main || e->ts < st->host_main_ts)) {
    st->host_main_tid = e->tid; /* the earliest op's: whatever order the file has */
    st->host_main_ts = e->ts;
    st->host_has_main = true;
  }
  st->host[st->n_host] = (struct ft__host_ev){
      e->ts, e->ts + e->dur, tid, dev, 0, 0, row, shape_row, row != UINT32_MAX ? row : api_row | RUNTIME_KEY, false, 0};
  if (row != UINT32_MAX && e->has_ext) { /* runtime calls of its id read before it */
    uint64_t *w = ft__join_find(&st->ext_rt, (uint64_t)e->ext);
    if (w && *w != UINT64_MAX) {
      take_rt(&st->host[st->n_host], st->rt[*w - 1].ns, st->rt[*w - 1].n);
      *w = UINT64_MAX; /* taken: a second call of the id gets nothing twice */
    }
  }
  st->n_host++;
  return true;
}

bool ft__ops_note(ft_stats *st, const ft__ev *e, uint32_t row, uint32_t shape_row, uint32_t api_row) {
  return note(st, e, row, shape_row, api_row, false);
}

/* (stats_internal.h) */
bool ft__ops_module(ft_stats *st, const ft__ev *e, const char *module, size_t len) {
  uint32_t id;
  if (ft__intern(&st->names, module, len, &id)) return false;
  ft__ev m = *e;
  m.has_ext = false;
  if (!note(st, &m, UINT32_MAX, UINT32_MAX, 0, true)) return false;
  if (st->want_ops) st->host[st->n_host - 1].key = id, st->host[st->n_host - 1].module = true;
  return true;
}

/* A [memory] event kept while its file's ops are nested (24 B): key_averages() gives each CPU
 * call the bytes of the events in its [start, end], whatever their thread (torch's
 * MemRecordsAcc.in_interval; docs/memory.md "Ops' memory"). */
struct mem_ev {
  int64_t ts, bytes;
  uint32_t cls, pad; /* MEM_CPU or MEM_DEV */
};
_Static_assert(sizeof(struct mem_ev) == 24, "the per-event cost docs/memory.md states");
enum { MEM_CPU, MEM_DEV };

/* torch's _cpu_memory_usage (CPU, MKLDNN, IDEEP) and _device_memory_usage (CUDA, HIP,
 * PrivateUse1); -1: neither (XPU, MPS, ...: key_averages counts them nowhere) */
static int mem_class(int64_t device_type) {
  if (device_type == 0 || device_type == 2 || device_type == 5) return MEM_CPU;
  if (device_type == 1 || device_type == 6 || device_type == 20) return MEM_DEV;
  return -1;
}

/* (stats_internal.h) */
bool ft__ops_memory(ft_stats *st, int64_t ts, int64_t bytes, int64_t device_type) {
  int cls = mem_class(device_type);
  if (!st->want_ops || cls < 0) return true;
  if (!st->ops_mem.elem) ft__vec_init(&st->ops_mem, sizeof(struct mem_ev), 12);
  struct mem_ev *m = ft__vec_push(&st->ops_mem);
  if (!m) return false;
  *m = (struct mem_ev){ts, bytes, (uint32_t)cls, 0};
  st->mem_events[cls]++;
  st->mem_events[2] += device_type == 1 || device_type == 6; /* torch's use_device "cuda": its columns say CUDA */
  return true;
}

/* (stats_internal.h) device time of External id ext: to its call when read, else
 * held until it is */
bool ft__ops_device(ft_stats *st, bool has_ext, int64_t ext, uint64_t ns) {
  st->device_ns += ns;
  if (!has_ext || !st->want_ops) return true;
  uint64_t *v = ft__join_upsert(&st->ext_op, (uint64_t)ext);
  if (!v) return false;
  if (*v & JOIN_OP) st->host[*v & ~JOIN_OP].dev += ns;
  else *v += ns; /* a file's device times sum below 2^63: times are bounded */
  return true;
}

/* Device work waiting for its op (with want_op_kernels). */
struct op_kernel_wait {
  uint64_t ext, ns;
  uint32_t kernel, pad;
};
_Static_assert(sizeof(struct op_kernel_wait) == 24, "the per-event cost docs/diff.md states");

static bool op_kernel_add(ft_stats *st, uint32_t op_name, uint32_t kernel, uint64_t ns) {
  uint32_t at;
  ft_stat_row *r = ft__aux_row(st, FT_STAT_OP_KERNELS, op_name, kernel, &at);
  if (!r) return false;
  r->calls++;
  r->self_ns += ns;
  return ft_dist_add(&r->t, ns);
}

/* The op name id of External id ext's call when it has been read; UINT32_MAX if not. */
static uint32_t op_of_ext(ft_stats *st, int64_t ext) {
  uint64_t *v = ft__join_find(&st->ext_op, (uint64_t)ext);
  if (!v || !(*v & JOIN_OP)) return UINT32_MAX;
  const struct ft__host_ev *h = &st->host[*v & ~JOIN_OP];
  return ((ft_stat_row *)ft__vec_at(&st->rows[FT_STAT_OPS], h->row))->name_id;
}

/* (stats_internal.h) */
bool ft__ops_kernel(ft_stats *st, bool has_ext, int64_t ext, uint32_t kernel, uint64_t ns) {
  uint32_t op = has_ext ? op_of_ext(st, ext) : UINT32_MAX;
  if (op != UINT32_MAX) return op_kernel_add(st, op, kernel, ns);
  if (has_ext) { /* its op may come later in the file */
    struct op_kernel_wait *w = ft__vec_push(&st->op_kernel_wait);
    if (!w) return false;
    *w = (struct op_kernel_wait){(uint64_t)ext, ns, kernel, 0};
    return true;
  }
  uint32_t none;
  return !ft__intern(&st->names, "(no op)", 7, &none) && op_kernel_add(st, none, kernel, ns);
}

/* At a file's end, before its calls are sorted: the waiting work to its op, or "(no op)". */
static bool op_kernels_resolve(ft_stats *st) {
  bool ok = true;
  for (size_t i = 0; ok && i < st->op_kernel_wait.len; i++) {
    const struct op_kernel_wait *w = ft__vec_at(&st->op_kernel_wait, i);
    uint32_t op = op_of_ext(st, (int64_t)w->ext);
    if (op == UINT32_MAX && ft__intern(&st->names, "(no op)", 7, &op)) ok = false;
    else ok = op_kernel_add(st, op, w->kernel, w->ns);
  }
  ft__vec_free(&st->op_kernel_wait);
  ft__vec_init(&st->op_kernel_wait, sizeof(struct op_kernel_wait), 10);
  return ok;
}

static int by_thread_start(const void *a, const void *b) {
  const struct ft__host_ev *x = a, *y = b;
  if (x->tid != y->tid) return (x->tid > y->tid) - (x->tid < y->tid);
  if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
  return (x->end < y->end) - (x->end > y->end); /* the longer first: it is the parent */
}

/* The file's memory per call (index in the sorted calls), NULL arrays when it has none:
 * total[c][k] the bytes of class c in call k's interval; self[c][k] that less its children's. */
typedef struct call_mem {
  int64_t *total[2], *self[2];
} call_mem;

static bool add_to_row(ft_stats *st, int sec, uint32_t i, const struct ft__host_ev *h, const call_mem *cm, size_t k) {
  ft_stat_row *r = ft__vec_at(&st->rows[sec], i);
  if (cm && cm->total[0]) {
    r->cpu_mem = ft__wrap_add(r->cpu_mem, cm->total[MEM_CPU][k]);
    r->self_cpu_mem = ft__wrap_add(r->self_cpu_mem, cm->self[MEM_CPU][k]);
    r->dev_mem = ft__wrap_add(r->dev_mem, cm->total[MEM_DEV][k]);
    r->self_dev_mem = ft__wrap_add(r->self_dev_mem, cm->self[MEM_DEV][k]);
  }
  r->calls++;
  r->self_cpu_ns += (uint64_t)(h->end - h->ts) - h->child_ns;
  r->total_dev_ns += h->dev + h->sub_dev;
  r->self_ns += h->dev;
  return ft_dist_add(&r->t, (uint64_t)(h->end - h->ts)); /* CPU total: the calls' durations */
}

/* Sorts h by thread and start: a merge of its ascending runs (a trace writes each
 * kind of call in order, so there are few: perf, P5), false without memory. */
static bool sort_calls(struct ft__host_ev *h, size_t n) {
  size_t *starts = malloc((n + 1) * sizeof *starts), runs = 0;
  struct ft__host_ev *tmp = malloc(n * sizeof *tmp);
  if (!starts || !tmp) {
    free(starts), free(tmp);
    return false;
  }
  for (size_t i = 0; i < n; i++)
    if (!i || by_thread_start(&h[i - 1], &h[i]) > 0) starts[runs++] = i;
  starts[runs] = n;
  struct ft__host_ev *from = h, *to = tmp;
  while (runs > 1) { /* merge runs pairwise, from one buffer into the other */
    size_t w = 0;
    for (size_t r = 0; r < runs; r += 2) {
      size_t a = starts[r], m = starts[r + 1 < runs ? r + 1 : runs], e = starts[r + 2 < runs ? r + 2 : runs], o = a;
      size_t i = a, j = m;
      while (i < m && j < e) to[o++] = by_thread_start(&from[j], &from[i]) < 0 ? from[j++] : from[i++];
      while (i < m) to[o++] = from[i++];
      while (j < e) to[o++] = from[j++];
      starts[w++] = a;
    }
    starts[w] = n;
    runs = w;
    struct ft__host_ev *t = from;
    from = to;
    to = t;
  }
  if (from != h) memcpy(h, from, n * sizeof *h);
  free(starts);
  free(tmp);
  return true;
}

/* Each op call (not folded away) into FT_STAT_OP_MODULES under the innermost module
 * around it on its thread (by start and end, as calls nest), or "(no module)". Both
 * arrays are sorted by thread and start. */
static bool by_module(ft_stats *st, const struct ft__host_ev *h, size_t n, const uint8_t *gone,
                      const struct ft__host_ev *m, size_t n_mod, const call_mem *cm) {
  size_t *open = malloc(n_mod * sizeof *open), depth = 0, j = 0;
  uint32_t none;
  if (!open || ft__intern(&st->names, "(no module)", 11, &none)) {
    free(open);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const struct ft__host_ev *c = &h[i];
    for (; j < n_mod && (m[j].tid < c->tid || (m[j].tid == c->tid && m[j].ts <= c->ts)); j++) {
      while (depth && (m[open[depth - 1]].tid != m[j].tid || m[open[depth - 1]].end < m[j].end)) depth--;
      open[depth++] = j;
    }
    while (depth && (m[open[depth - 1]].tid != c->tid || m[open[depth - 1]].end < c->end)) depth--;
    if (gone[i] || c->row == UINT32_MAX) continue;
    uint32_t name = ((ft_stat_row *)ft__vec_at(&st->rows[FT_STAT_OPS], c->row))->name_id, at;
    if (!ft__aux_row(st, FT_STAT_OP_MODULES, name, depth ? m[open[depth - 1]].key : none, &at) ||
        !add_to_row(st, FT_STAT_OP_MODULES, at, c, cm, i)) {
      free(open);
      return false;
    }
  }
  free(open);
  return true;
}

static int by_mem_ts(const void *a, const void *b) {
  const struct mem_ev *x = a, *y = b;
  return (x->ts > y->ts) - (x->ts < y->ts);
}

static void call_mem_free(call_mem *cm) {
  for (int c = 0; c < 2; c++) free(cm->total[c]), free(cm->self[c]), cm->total[c] = cm->self[c] = NULL;
}

/* The first of the n sorted events at or after t (after: past t). */
static size_t mem_lower(const struct mem_ev *e, size_t n, int64_t t, bool after) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (e[mid].ts < t || (after && e[mid].ts == t)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* A call's bound as key_averages() compares it: torch computes float(ns / 1000) * 1000 in
 * doubles (Python's correctly rounded true division, then a rounded product) and compares the
 * events' whole ns with that, so an epoch clock's ns (~1.7e18, past 2^53) move by up to 128 ns
 * there (HTA's V100 trace: 605 of 101 088 calls would take other events exactly). This is that
 * value, exactly, rounded up (a lower bound: the first ns at or after it) or down. */
static int bitlen(unsigned __int128 v) {
  int n = 0;
  for (; v; v >>= 1) n++;
  return n;
}
static int64_t torch_ns(int64_t ns, bool up) {
  bool neg = ns < 0;
  unsigned __int128 a = neg ? (unsigned __int128)(-(ns + 1)) + 1 : (unsigned __int128)ns, one = 1;
  if (a < 1000) return ns;       /* a quotient under 1: exact enough there (a call of the first microsecond) */
  int k = 53 - bitlen(a / 1000); /* floor(log2(a / 1000)) = bitlen - 1: the quotient's last place is 2^-k */
  if (k < 0) return ns;          /* past the bounded times (4e18 ns) */
  unsigned __int128 num = a << k, q = num / 1000, rem = num % 1000;
  if (2 * rem > 1000 || (2 * rem == 1000 && (q & 1))) q++; /* the division, to nearest, ties to even */
  unsigned __int128 p = q * 1000;
  int b = bitlen(p);
  if (b > 53) { /* the product, rounded to 53 bits the same way */
    int sh = b - 53;
    unsigned __int128 low = p & ((one << sh) - 1), half = one << (sh - 1);
    p >>= sh;
    if (low > half || (low == half && (p & 1))) p++;
    p <<= sh;
  }
  unsigned __int128 fl = p >> k, ce = (p + (one << k) - 1) >> k; /* the value is p * 2^-k */
  return neg ? -(int64_t)(up ? fl : ce) : (int64_t)(up ? ce : fl);
}

/* Each call's memory: the bytes of the events in its [start, end], both ends in, on any
 * thread (torch's in_interval), into cm->total; the events in no call's interval make
 * key_averages' "[memory]" row (one call each, no time). False without memory. */
static bool mem_totals(ft_stats *st, const struct ft__host_ev *h, size_t n, call_mem *cm) {
  size_t nm = st->ops_mem.len;
  struct mem_ev *e = malloc((nm + 1) * sizeof *e);
  int64_t *pre = malloc(2 * (nm + 1) * sizeof *pre), *cover = calloc(nm + 1, sizeof *cover);
  bool ok = e && pre && cover;
  for (int c = 0; ok && c < 2; c++)
    ok = (cm->total[c] = malloc((n + 1) * sizeof **cm->total)) && (cm->self[c] = calloc(n + 1, sizeof **cm->self));
  for (size_t i = 0; ok && i < nm; i++) e[i] = *(const struct mem_ev *)ft__vec_at(&st->ops_mem, i);
  if (!ok) goto out;
  qsort(e, nm, sizeof *e, by_mem_ts);
  pre[0] = pre[nm + 1] = 0;
  for (size_t i = 0; i < nm; i++) /* sums wrap as uint64 (hostile bytes): the difference of two is exact */
    for (int c = 0; c < 2; c++)
      pre[c * (nm + 1) + i + 1] =
          (int64_t)((uint64_t)pre[c * (nm + 1) + i] + (e[i].cls == (uint32_t)c ? (uint64_t)e[i].bytes : 0));
  for (size_t k = 0; k < n; k++) {
    size_t lo = mem_lower(e, nm, torch_ns(h[k].ts, true), false),
           hi = mem_lower(e, nm, torch_ns(h[k].end, false), true);
    if (hi < lo) hi = lo;
    for (int c = 0; c < 2; c++)
      cm->total[c][k] = (int64_t)((uint64_t)pre[c * (nm + 1) + hi] - (uint64_t)pre[c * (nm + 1) + lo]);
    cover[lo]++;
    cover[hi]--;
  }
  int64_t open = 0, lone[2] = {0, 0};
  uint64_t n_lone = 0;
  for (size_t i = 0; i < nm; i++) {
    open += cover[i];
    if (open) continue;
    n_lone++;
    lone[e[i].cls] = (int64_t)((uint64_t)lone[e[i].cls] + (uint64_t)e[i].bytes);
  }
  if (n_lone) {
    uint32_t id, at;
    ft_stat_row *r = ft__intern(&st->names, "[memory]", 8, &id) ? NULL : ft__aux_row(st, FT_STAT_OPS, id, 0, &at);
    if (!(ok = r != NULL)) goto out;
    r->calls += n_lone;
    r->cpu_mem = ft__wrap_add(r->cpu_mem, lone[MEM_CPU]),
    r->self_cpu_mem = ft__wrap_add(r->self_cpu_mem, lone[MEM_CPU]);
    r->dev_mem = ft__wrap_add(r->dev_mem, lone[MEM_DEV]),
    r->self_dev_mem = ft__wrap_add(r->self_dev_mem, lone[MEM_DEV]);
  }
out:
  free(e);
  free(pre);
  free(cover);
  return ok;
}

/* (stats_internal.h) The file's calls nested as torch nests them
 * (_populate_cpu_children): per thread, by start (the longer first); a call is the
 * child of the innermost open one it starts before the end of and does not
 * outlast. Self CPU = duration - the children's; device total = own work + the
 * children's totals. */
bool ft__ops_file_end(ft_stats *st) {
  bool ok = !st->want_op_kernels || op_kernels_resolve(st);
  call_mem cm = {{NULL, NULL}, {NULL, NULL}};
  ft__vec_free(&st->host_early); /* calls and no op: nothing to nest */
  struct ft__host_ev *h = st->host;
  size_t n = st->n_host;
  bool any_op = false;
  size_t n_mod = 0; /* the modules go to the end, in their order; the calls keep theirs */
  for (size_t i = 0; i < n; i++) {
    if (h[i].tid == MAIN_THREAD) h[i].tid = st->host_has_main ? st->host_main_tid : MAIN_THREAD;
    any_op |= h[i].row != UINT32_MAX;
    n_mod += h[i].module;
  }
  struct ft__host_ev *mods = n_mod ? malloc(n_mod * sizeof *mods) : NULL;
  if (n_mod && !mods) {
    ok = false;
    n = 0;
  } else if (n_mod) {
    size_t w = 0, k = 0;
    for (size_t i = 0; i < n; i++)
      if (h[i].module) mods[k++] = h[i];
      else h[w++] = h[i];
    n = w;
    if (!sort_calls(mods, n_mod)) ok = false, n = 0;
  }
  st->host_has_main = false;
  if (!any_op) n = 0; /* runtime calls alone: no op to nest them in (a trace of `record`) */
  if (n && !sort_calls(h, n)) {
    ok = false;
    n = 0;
  }
  /* per call: its parent, then (a stack while nesting) how many children it has */
  uint32_t *parent = n ? malloc(n * sizeof *parent) : NULL, *aux = n ? malloc(n * sizeof *aux) : NULL;
  if (n && (!parent || !aux)) {
    ok = false;
    goto out;
  }
  size_t depth = 0;
  for (size_t i = 0; i < n; i++) {
    if (i && h[i].tid != h[i - 1].tid) depth = 0;
    parent[i] = UINT32_MAX;
    while (depth) {
      struct ft__host_ev *p = &h[aux[depth - 1]];
      if (h[i].ts >= p->end || h[i].end > p->end) {
        depth--;
        continue;
      }
      parent[i] = aux[depth - 1];
      p->child_ns += (uint64_t)(h[i].end - h[i].ts);
      break;
    }
    aux[depth++] = (uint32_t)i;
  }
  for (size_t i = 0; i < n; i++) aux[i] = h[i].n_rt; /* its runtime calls are children too */
  for (size_t i = 0; i < n; i++)
    if (parent[i] != UINT32_MAX) aux[parent[i]]++;
  /* torch's _remove_dup_nodes: a call whose parent has its name and no other child
   * is dropped; the parent takes its children, their CPU time and its device work
   * (in place of its own, as torch does). Parents come first, so a chain folds
   * into its top. */
  uint8_t *gone = n ? calloc(n, 1) : NULL;
  if (n && !gone) {
    ok = false;
    goto out;
  }
  if (n && st->ops_mem.len && !mem_totals(st, h, n, &cm)) {
    ok = false;
    call_mem_free(&cm);
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t p = parent[i];
    while (p != UINT32_MAX && gone[p]) p = parent[p];
    parent[i] = p;
    if (p != UINT32_MAX && h[p].key == h[i].key && aux[p] == 1) {
      gone[i] = 1;
      h[p].dev = h[i].dev;
      h[p].child_ns = h[i].child_ns;
      aux[p] = aux[i];
    }
  }
  /* children follow their parents: from the last, each total is complete when its
   * parent takes it */
  for (size_t k = n; k-- > 0;) {
    if (gone[k]) continue;
    for (int c = 0; c < 2 && cm.total[0]; c++) { /* self: its total less its (kept) children's, done before it */
      cm.self[c][k] = (int64_t)((uint64_t)cm.self[c][k] + (uint64_t)cm.total[c][k]);
      if (parent[k] != UINT32_MAX)
        cm.self[c][parent[k]] = (int64_t)((uint64_t)cm.self[c][parent[k]] - (uint64_t)cm.total[c][k]);
    }
    if (parent[k] != UINT32_MAX) h[parent[k]].sub_dev += h[k].dev + h[k].sub_dev;
    if (h[k].row == UINT32_MAX) continue; /* a runtime call: its own rows are the api report's */
    st->attributed_ns += h[k].dev;
    if (!add_to_row(st, FT_STAT_OPS, h[k].row, &h[k], &cm, k) ||
        (h[k].shape_row != UINT32_MAX && !add_to_row(st, FT_STAT_OP_SHAPES, h[k].shape_row, &h[k], &cm, k)))
      ok = false;
  }
  if (ok && n_mod && !by_module(st, h, n, gone, mods, n_mod, &cm)) ok = false;
  free(gone);
out:
  call_mem_free(&cm);
  ft__vec_free(&st->ops_mem); /* per file: the next file's events start afresh */
  free(mods);
  free(parent);
  free(aux);
  free(st->host);
  st->host = NULL;
  st->n_host = st->cap_host = 0;
  ft__join_free(&st->ext_rt); /* per file, as External ids are */
  free(st->rt);
  st->rt = NULL;
  st->n_rt = st->cap_rt = 0;
  return ok;
}
