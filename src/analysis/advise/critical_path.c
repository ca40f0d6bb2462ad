/* HTA's critical path (critical_path_analysis.py) through a step, on the event model: its graph, then its longest path.
 */
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"
#include "stats_hta.h" /* ft__hta_queue_calls */

/* Speed (P5: advise on 1 M events in < 1 s, whole process): nothing here sorts what the
 * model holds in order already. Slices are in start order (ties: file order), so a
 * window's slices, the calls' starts and the device work come sorted; only ends are
 * sorted, and they are nearly sorted (an insertion sort, qsort past a budget). The
 * graph's edges are bucketed by their tail (a stable counting sort), not sorted. */

/* A CPU event's end as the call stack orders them (call_stack.py compare_events):
 * by time, the shorter first, then the later slice first. */
typedef struct cend {
  int64_t t, dur;
  uint32_t s;
} cend;
static bool cend_lt(const cend *a, const cend *b) {
  if (a->t != b->t) return a->t < b->t;
  if (a->dur != b->dur) return a->dur < b->dur;
  return a->s > b->s;
}

/* The names HTA looks for, as the model's string ids (FT_MODEL_NONE: not in the trace):
 * CUDA_RUNTIME_EVENTS (the calls that take the CUDA runtime's lock), BLOCKING_SYNC_CALLS
 * (a call stack edge into their end weighs nothing), get_runtime_launch_events_mask's
 * (the launches the queue length counts). */
typedef struct names {
  uint32_t lock[3], blk[6], queue[FT__HTA_N_QUEUE_CALLS];
} names;
static void names_find(const ft_model *m, names *nm) {
  static const char *const lock[] = {"cudaHostAlloc", "cudaLaunchKernel", "cudaMemcpyAsync"};
  static const char *const blk[] = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize", "cudaMemcpy",
      "cudaMemcpyAsync"};
  for (size_t i = 0; i < 3; i++) nm->lock[i] = ft_model_find_str(m, lock[i]);
  for (size_t i = 0; i < 6; i++) nm->blk[i] = ft_model_find_str(m, blk[i]);
  for (size_t i = 0; i < FT__HTA_N_QUEUE_CALLS; i++) nm->queue[i] = ft_model_find_str(m, ft__hta_queue_calls[i]);
}
static bool id_in(uint32_t id, const uint32_t *set, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (set[i] == id && id != FT_MODEL_NONE) return true;
  return false;
}

static bool on_stream(const ft_model *m, size_t i) { return m->tracks[m->track[i]].kind == FT_TRACK_STREAM; }
static int64_t stream_of(const ft_model *m, size_t i) { return m->tracks[m->track[i]].tid; }

/* Per stream id, in start order: where the stream's queue stood (HTA's
 * _get_queue_length_time_series_for_rank over the whole trace): after each launch
 * counted (+1) and after each of their device work's start (-1). */
typedef struct streams {
  int64_t *id;
  int64_t *len;   /* per stream */
  uint32_t *last; /* per stream: the end node of its last work, UINT32_MAX */
  size_t n;
} streams;

/* What every window shares (the whole trace's queue lengths, each sync's call) and
 * scratch that windows reuse: per-slice arrays a window sets and clears again, the
 * rest grown to the largest window. */
typedef struct callref {
  int64_t corr;
  uint32_t s;
} callref;
typedef struct prep {
  int32_t *qlen;
  uint32_t *call; /* device work's and a sync's call; FT_MODEL_NONE */
  uint32_t *work; /* a CPU event's device work (HTA's pairing); FT_MODEL_NONE */
  callref *syncs; /* (call, sync) by call */
  size_t n_syncs;
  streams q;
  names nm;
  uint32_t *node_of, *win, *ev; /* node_of: FT_MODEL_NONE outside a window */
  uint64_t *bits;               /* a bit per slice: in the window (clear outside one) */
  uint32_t *tmark, *tgroup;     /* per track: touched by the window (+1), its call stack group */
  /* grown as windows need */
  ft__dag_edge *e;
  ft__tkey *ka, *kb;
  cend *heap;
  uint32_t *stack, *tlist, *gcount, *cs, *far;
  size_t cap_e, cap_ka, cap_kb, cap_heap, cap_stack, cap_tlist, cap_gcount, cap_cs, cap_far;
  ft__dag dag;
} prep;

/* The events that get nodes, each a start node (2k) and an end node (2k + 1). */
typedef struct cp {
  const ft_model *m;
  prep *p;
  const uint32_t *win; /* the window's slices, ascending */
  size_t n_win;
  uint32_t *ev; /* node-event k's slice */
  size_t n_ev;
  uint32_t *node_of; /* slice -> k, FT_MODEL_NONE */
  size_t n_e;
  bool oom;
} cp;

/* p's scratch field with room for need + 1 entries; false (c->oom) without memory. */
#define GROW(c, field, need)                                                                            \
  (ft__advise_grow((void **)&(c)->p->field, &(c)->p->cap_##field, (need) + 1, sizeof *(c)->p->field) || \
   ((c)->oom = true, false))

static int64_t node_ts(const cp *c, uint32_t node) {
  uint32_t s = c->ev[node / 2];
  return c->m->ts[s] + (node & 1 ? c->m->dur[s] : 0);
}

/* networkx's add_edge: a second edge between the same nodes replaces the first
 * (longest() keeps the last). Dependency and sync edges weigh nothing. */
static void edge(cp *c, uint32_t u, uint32_t v, bool zero) {
  if (c->oom || u == v || (c->n_e >= c->p->cap_e && !GROW(c, e, c->n_e))) return;
  int64_t w = zero ? 0 : node_ts(c, v) - node_ts(c, u);
  if (w <= -1000) w = 0; /* _validate_graph: a weight of -1 us or less counts 0 (HTA's non-strict default) */
  c->p->e[c->n_e++] = (ft__dag_edge){u, v, w};
}

static bool is_lock(const cp *c, uint32_t node) { return id_in(c->m->name[c->ev[node / 2]], c->p->nm.lock, 3); }

/* _shares_cuda_runtime_lock */
static bool shares_lock(const cp *c, uint32_t a, uint32_t b) {
  return is_lock(c, a) && is_lock(c, b) && (!(a & 1) || (b & 1));
}

/* _construct_graph_from_cuda_runtime_events: the lock's path through the calls' ends,
 * its nodes by (time, event, a start before its end): the starts come in that order,
 * the ends are sorted, the two merged. */
static void lock_edges(cp *c) {
  const ft_model *m = c->m;
  if (!GROW(c, ka, c->n_ev) || !GROW(c, kb, c->n_ev) || !GROW(c, stack, c->n_ev)) return;
  ft__tkey *st = c->p->ka, *en = c->p->kb;
  uint32_t *starts = c->p->stack;
  size_t n = 0, top = 0;
  for (uint32_t k = 0; k < c->n_ev; k++) {
    if (!is_lock(c, 2 * k)) continue;
    uint32_t s = c->ev[k];
    st[n] = (ft__tkey){m->ts[s], s, 2 * k};
    en[n++] = (ft__tkey){m->ts[s] + m->dur[s], s, 2 * k + 1};
  }
  ft__sort_nearly(en, n);
  uint32_t last = UINT32_MAX;
  for (size_t i = 0, j = 0; i < n || j < n;) {
    uint32_t v = i < n && (j == n || ft__tkey_lt(&st[i], &en[j])) ? st[i++].node : en[j++].node;
    if (!(v & 1)) {
      starts[top++] = v;
    } else {
      while (top) {
        uint32_t s = starts[--top];
        edge(c, s, v, s / 2 != v / 2); /* its own start: the call's span; another's: a dependency */
      }
      if (last != UINT32_MAX && (last & 1)) edge(c, last, v, true);
    }
    last = v;
  }
}

/* _get_tid_for_event: the one thread whose ops or ranges have word in their name, else -1 (none or several). */
static bool tid_with(const cp *c, const char *word, int64_t *tid) {
  const ft_model *m = c->m;
  bool found = false;
  for (size_t w = 0; w < c->n_win; w++) {
    uint32_t i = c->win[w];
    if (m->kind[i] != FT_MK_OP && m->kind[i] != FT_MK_RANGE) continue;
    if (!strstr(ft_model_str(m, m->name[i]), word)) continue;
    int64_t t = m->tracks[m->track[i]].tid;
    if (found && t != *tid) return false;
    found = true;
    *tid = t;
  }
  return found;
}

/* A thread track's call stack key: (pid, tid), the backward thread's tid mapped to the forward one's. */
typedef struct tgkey {
  int64_t pid, tid;
  uint32_t track;
} tgkey;
static int cmp_tgkey(const void *x, const void *y) {
  const tgkey *a = x, *b = y;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  return 0;
}

/* One call stack walk step (an event's start, or an end: the stack's top exits). */
typedef struct walk {
  size_t top;
  uint32_t last;
  int depth;
} walk;
static void walk_event(cp *c, walk *k, uint32_t s, bool end) {
  uint32_t *stack = c->p->stack;
  if (!end) stack[k->top++] = s;
  else if (!k->top) return;
  else s = stack[--k->top];
  uint32_t ev = c->node_of[s];
  if (ev == FT_MODEL_NONE) return;
  uint32_t node = 2 * ev + (end ? 1 : 0);
  if (k->last != UINT32_MAX && !shares_lock(c, k->last, node)) {
    if (!end) edge(c, k->last, node, k->depth == 0); /* top-level ops: a dependency */
    else edge(c, k->last, node, id_in(c->m->name[s], c->p->nm.blk, 6));
  }
  k->last = node;
  k->depth += end ? -1 : 1;
}

/* A min-heap of ends by cend_lt. */
static void heap_push(cend *h, size_t *n, cend x) {
  size_t i = (*n)++;
  while (i && cend_lt(&x, &h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = x;
}
static cend heap_pop(cend *h, size_t *n) {
  cend top = h[0], x = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, b = i;
    const cend *bx = &x;
    if (l < *n && cend_lt(&h[l], bx)) b = l, bx = &h[l];
    if (r < *n && cend_lt(&h[r], bx)) b = r;
    if (b == i) break;
    h[i] = h[b];
    i = b;
  }
  h[i] = x;
  return top;
}

/* Starts at one time: the longer first, then the earlier slice (compare_events). */
static _Thread_local const ft_model *sort_m; /* qsort has no context; a job's files are advised on parallel threads */
static int cmp_longer(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  if (sort_m->dur[a] != sort_m->dur[b]) return sort_m->dur[a] > sort_m->dur[b] ? -1 : 1;
  return a < b ? -1 : a > b;
}
static void order_ties(const ft_model *m, uint32_t *s, size_t n) {
  for (size_t k = 0; k < n;) {
    size_t e = k + 1;
    while (e < n && m->ts[s[e]] == m->ts[s[k]]) e++;
    if (e - k > 16) {
      sort_m = m;
      qsort(s + k, e - k, sizeof *s, cmp_longer);
    } else {
      for (size_t i = k + 1; i < e; i++) { /* stable: a run is in slice order already */
        uint32_t x = s[i];
        size_t j = i;
        for (; j > k && m->dur[x] > m->dur[s[j - 1]]; j--) s[j] = s[j - 1];
        s[j] = x;
      }
    }
    k = e;
  }
}

/* _construct_graph_from_call_stacks: per thread (the backward thread merged into the
 * forward one when each is the only one with such ops; threads by (pid, tid)), the
 * events in the order of a depth-first walk of HTA's call stack, edges between
 * consecutive ones with nodes. The walk meets the events as compare_events sorts
 * them (by time, ends before starts, longer starts first, shorter ends first), each
 * end exiting whatever the stack's top is (the tree's parent is the top at a start):
 * the starts come in start order (ties reordered), the ends from a heap. */
static void stack_edges(cp *c) {
  const ft_model *m = c->m;
  prep *p = c->p;
  int64_t fwd = -1, bwd = -1;
  bool remap = tid_with(c, "forward", &fwd) && tid_with(c, "autograd", &bwd) && fwd != bwd;
  size_t n = 0, nt = 0;
  for (size_t w = 0; w < c->n_win; w++) n += !on_stream(m, c->win[w]);
  if (!GROW(c, cs, n) || !GROW(c, heap, n) || !GROW(c, stack, n) || !GROW(c, tlist, n)) return;
  /* the window's threads, grouped by key: tmark[t] = 1 + its index in tlist */
  for (size_t w = 0; w < c->n_win; w++) {
    uint32_t i = c->win[w], t = m->track[i];
    if (on_stream(m, i) || p->tmark[t]) continue;
    p->tlist[nt++] = t;
    p->tmark[t] = (uint32_t)nt;
  }
  tgkey *keys = malloc((nt + 1) * sizeof *keys);
  if (!keys || !GROW(c, gcount, nt + 1)) {
    c->oom = true;
    free(keys);
    for (size_t k = 0; k < nt; k++) p->tmark[p->tlist[k]] = 0;
    return;
  }
  for (size_t k = 0; k < nt; k++) {
    const ft_model_track *t = &m->tracks[p->tlist[k]];
    keys[k] = (tgkey){t->pid, remap && t->tid == bwd ? fwd : t->tid, p->tlist[k]};
  }
  qsort(keys, nt, sizeof *keys, cmp_tgkey);
  size_t ng = 0;
  for (size_t k = 0; k < nt; k++) {
    if (!k || cmp_tgkey(&keys[k - 1], &keys[k])) ng++;
    p->tgroup[keys[k].track] = (uint32_t)(ng - 1);
  }
  free(keys);
  /* a stable counting sort of the CPU events by group: each group's in start order */
  uint32_t *cnt = p->gcount;
  memset(cnt, 0, (ng + 1) * sizeof *cnt);
  for (size_t w = 0; w < c->n_win; w++)
    if (!on_stream(m, c->win[w])) cnt[p->tgroup[m->track[c->win[w]]] + 1]++;
  for (size_t g = 0; g < ng; g++) cnt[g + 1] += cnt[g];
  for (size_t w = 0; w < c->n_win; w++) {
    uint32_t i = c->win[w];
    if (!on_stream(m, i)) p->cs[cnt[p->tgroup[m->track[i]]]++] = i;
  }
  for (size_t k = 0; k < nt; k++) p->tmark[p->tlist[k]] = 0;
  for (size_t g = 0, a = 0; g < ng; g++) { /* cnt[g]: the end of group g now */
    size_t b = cnt[g], nh = 0;
    uint32_t *s = p->cs + a;
    order_ties(m, s, b - a);
    walk k = {0, UINT32_MAX, 0};
    for (size_t x = 0; x < b - a; x++) {
      int64_t t = m->ts[s[x]];
      while (nh && p->heap[0].t <= t) walk_event(c, &k, heap_pop(p->heap, &nh).s, true);
      walk_event(c, &k, s[x], false);
      heap_push(p->heap, &nh, (cend){t + m->dur[s[x]], m->dur[s[x]], s[x]});
    }
    while (nh) walk_event(c, &k, heap_pop(p->heap, &nh).s, true);
    a = b;
  }
}

/* HTA's index_correlation, by correlation id (transform_correlation_to_index): device
 * work's and a sync's call is the last CPU event with its id; a CPU event's device side
 * is the last device event with its id (a launch of several kernels clips in only that
 * one). The model links launches only, one piece of work each. */
static int cmp_callref(const void *x, const void *y) {
  const callref *a = x, *b = y;
  if (a->corr != b->corr) return a->corr < b->corr ? -1 : 1;
  return a->s < b->s ? -1 : a->s > b->s;
}
static uint32_t last_with(const callref *r, size_t n, int64_t c) {
  size_t lo = 0, hi = n;
  while (lo < hi) { /* past the last with c */
    size_t mid = (lo + hi) / 2;
    if (r[mid].corr <= c) lo = mid + 1;
    else hi = mid;
  }
  return c != FT_MODEL_NO_ID && lo && r[lo - 1].corr == c ? r[lo - 1].s : FT_MODEL_NONE;
}

/* The pairing through a table indexed by id, when the ids span at most 4 a slice
 * (they count up from 1 in CUPTI's and kineto's traces): no sort. False: too sparse
 * or no memory (the caller sorts). */
static bool pairs_dense(const ft_model *m, uint32_t *call, uint32_t *work) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < m->n; i++) {
    int64_t c = ft_model_corr(m, i);
    if (c == FT_MODEL_NO_ID) continue;
    if (c < lo) lo = c;
    if (c > hi) hi = c;
  }
  if (lo > hi) lo = hi = 0; /* no ids */
  uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
  if (span > 4 * (uint64_t)m->n + 1024) return false;
  uint32_t *cpu = malloc(span * sizeof *cpu), *dev = malloc(span * sizeof *dev);
  if (!cpu || !dev) {
    free(cpu);
    free(dev);
    return false;
  }
  memset(cpu, 0xff, span * sizeof *cpu); /* FT_MODEL_NONE */
  memset(dev, 0xff, span * sizeof *dev);
  for (size_t i = 0; i < m->n; i++) { /* the last (latest slice) with each id */
    int64_t c = ft_model_corr(m, i);
    if (c == FT_MODEL_NO_ID) continue;
    if (!on_stream(m, i)) cpu[(uint64_t)c - (uint64_t)lo] = (uint32_t)i;
    else if (c >= 0) dev[(uint64_t)c - (uint64_t)lo] = (uint32_t)i;
  }
  for (size_t i = 0; i < m->n; i++) {
    int64_t c = ft_model_corr(m, i);
    bool gpu = on_stream(m, i) || m->kind[i] == FT_MK_SYNC;
    call[i] = work[i] = FT_MODEL_NONE;
    if (c == FT_MODEL_NO_ID) continue;
    if (gpu) call[i] = cpu[(uint64_t)c - (uint64_t)lo];
    else work[i] = dev[(uint64_t)c - (uint64_t)lo];
  }
  free(cpu);
  free(dev);
  return true;
}

static bool hta_pairs(const ft_model *m, uint32_t *call, uint32_t *work, callref **pairs, size_t *n_pairs) {
  if (!pairs_dense(m, call, work)) {
    callref *r = malloc((m->n + 1) * sizeof *r), *d = malloc((m->n + 1) * sizeof *d);
    if (!r || !d) {
      free(r);
      free(d);
      return false;
    }
    size_t nr = 0, nd = 0;
    for (size_t i = 0; i < m->n; i++) {
      int64_t c = ft_model_corr(m, i);
      if (c == FT_MODEL_NO_ID) continue;
      if (!on_stream(m, i)) r[nr++] = (callref){c, (uint32_t)i};
      else if (c >= 0) d[nd++] = (callref){c, (uint32_t)i};
    }
    if (nr) qsort(r, nr, sizeof *r, cmp_callref);
    if (nd) qsort(d, nd, sizeof *d, cmp_callref);
    for (size_t i = 0; i < m->n; i++) {
      bool gpu = on_stream(m, i) || m->kind[i] == FT_MK_SYNC;
      call[i] = gpu ? last_with(r, nr, ft_model_corr(m, i)) : FT_MODEL_NONE;
      work[i] = gpu ? FT_MODEL_NONE : last_with(d, nd, ft_model_corr(m, i));
    }
    free(r);
    free(d);
  }
  /* the syncs by their call's index (corr holds the call, s the sync) */
  size_t k = 0;
  for (size_t i = 0; i < m->n; i++) k += m->kind[i] == FT_MK_SYNC && call[i] != FT_MODEL_NONE;
  callref *r = malloc((k + 1) * sizeof *r);
  if (!r) return false;
  k = 0;
  for (size_t i = 0; i < m->n; i++)
    if (m->kind[i] == FT_MK_SYNC && call[i] != FT_MODEL_NONE) r[k++] = (callref){call[i], (uint32_t)i};
  if (k) qsort(r, k, sizeof *r, cmp_callref);
  *pairs = r;
  *n_pairs = k;
  return true;
}

static size_t stream_ix(const streams *q, int64_t id) {
  size_t lo = 0, hi = q->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (q->id[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static bool queue_lengths(const ft_model *m, const names *nm, streams *q, int32_t *qlen) {
  q->id = malloc((m->n_tracks + 1) * sizeof *q->id);
  q->len = calloc(m->n_tracks + 1, sizeof *q->len);
  q->last = malloc((m->n_tracks + 1) * sizeof *q->last);
  if (!q->id || !q->len || !q->last) return false;
  q->n = 0;
  for (size_t t = 0; t < m->n_tracks; t++)
    if (m->tracks[t].kind == FT_TRACK_STREAM) q->id[q->n++] = m->tracks[t].tid;
  if (q->n) qsort(q->id, q->n, sizeof *q->id, cmp_i64);
  size_t u = 0;
  for (size_t i = 0; i < q->n; i++)
    if (!u || q->id[u - 1] != q->id[i]) q->id[u++] = q->id[i];
  q->n = u;
  for (size_t i = 0; i < q->n; i++) q->last[i] = UINT32_MAX;
  for (size_t i = 0; i < m->n; i++) {
    qlen[i] = INT32_MIN;
    uint32_t l = m->link[i];
    if (l == FT_MODEL_NONE) continue;
    bool work = on_stream(m, i);
    uint32_t launch = work ? l : (uint32_t)i, dev = work ? (uint32_t)i : l;
    if (!on_stream(m, dev) || on_stream(m, launch) || !id_in(m->name[launch], nm->queue, FT__HTA_N_QUEUE_CALLS))
      continue;
    size_t s = stream_ix(q, stream_of(m, dev));
    q->len[s] += work ? -1 : 1;
    qlen[i] = (int32_t)q->len[s];
  }
  return true;
}

/* _construct_graph_from_kernels: each device work's span; a launch delay edge when its
 * stream's queue was empty at the launch and is again at its start and the stream's
 * last work ended before the launch; else a kernel-kernel edge from the last work
 * under the threshold. Stream and context syncs: an edge from the last work on the
 * stream (on every stream) to the end of the call that waited. In the order of
 * (start, slice), a sync at its end: the work comes so, the syncs are sorted and
 * merged in. */
static void kernel_edges(cp *c, const uint32_t *call, streams *q, const int32_t *qlen) {
  const ft_model *m = c->m;
  size_t nw = 0, ns = 0;
  for (size_t w = 0; w < c->n_win; w++)
    if (on_stream(m, c->win[w])) *(m->kind[c->win[w]] == FT_MK_SYNC ? &ns : &nw) += 1;
  if (!GROW(c, ka, nw) || !GROW(c, kb, ns)) return;
  ft__tkey *wk = c->p->ka, *sy = c->p->kb;
  nw = ns = 0;
  for (size_t w = 0; w < c->n_win; w++) {
    uint32_t i = c->win[w];
    if (!on_stream(m, i)) continue;
    if (m->kind[i] == FT_MK_SYNC) sy[ns++] = (ft__tkey){m->ts[i] + m->dur[i], i, 0}; /* syncs sort by their end */
    else wk[nw++] = (ft__tkey){m->ts[i], i, 0};
  }
  ft__sort_nearly(sy, ns);
  /* merged into ka's tail order: (key, slice) */
  if (!GROW(c, kb, nw + ns) || !GROW(c, ka, nw + ns)) return;
  wk = c->p->ka, sy = c->p->kb;
  memmove(sy + nw, sy, ns * sizeof *sy); /* the syncs behind room for the merge */
  size_t a = 0, b = nw, k = nw + ns;
  for (size_t o = 0; a < nw || b < k; o++)
    sy[o] = a < nw && (b == k || ft__tkey_lt(&wk[a], &sy[b])) ? wk[a++] : sy[b++];
  const ft__tkey *r = sy;
  for (size_t x = 0; x < q->n; x++) q->last[x] = UINT32_MAX;
  for (size_t i = 0; i < k; i++) {
    uint32_t s = r[i].s, l = call[s];
    size_t st = stream_ix(q, stream_of(m, s));
    if (m->kind[s] == FT_MK_SYNC) {
      if (l == FT_MODEL_NONE || c->node_of[l] == FT_MODEL_NONE) continue;
      const char *nm = ft_model_str(m, m->name[s]);
      uint32_t to = 2 * c->node_of[l] + 1;
      if (!strcmp(nm, "Context Sync")) {
        for (size_t x = 0; x < q->n; x++)
          if (q->last[x] != UINT32_MAX) edge(c, q->last[x], to, true);
      } else if (!strcmp(nm, "Stream Sync") && st < q->n) {
        if (q->last[st] != UINT32_MAX) edge(c, q->last[st], to, true);
      }
      continue;
    }
    uint32_t ev = c->node_of[s];
    if (ev == FT_MODEL_NONE) continue;
    uint32_t u = 2 * ev, v = u + 1, last = q->last[st];
    edge(c, u, v, false);
    bool launch_ok = l != FT_MODEL_NONE && c->node_of[l] != FT_MODEL_NONE && qlen[s] == 0 && qlen[l] == 1 &&
                     (last == UINT32_MAX || node_ts(c, last) < m->ts[l]);
    if (launch_ok) edge(c, 2 * c->node_of[l], u, false);
    else if (last != UINT32_MAX && m->ts[s] - node_ts(c, last) < FT_HTA_CP_KERNEL_DELAY_NS) edge(c, last, u, false);
    q->last[st] = v;
  }
}

static void prep_free(prep *p) {
  void *all[] = {p->qlen, p->call,  p->work,  p->syncs,  p->q.id,   p->q.len, p->q.last, p->node_of,
                 p->win,  p->ev,    p->bits,  p->tmark,  p->tgroup, p->e,     p->ka,     p->kb,
                 p->heap, p->stack, p->tlist, p->gcount, p->cs,     p->far};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
  ft__dag_free(&p->dag);
}

static bool prep_make(const ft_model *m, prep *p) {
  memset(p, 0, sizeof *p);
  names_find(m, &p->nm);
  size_t n = m->n + 1;
  p->qlen = malloc(n * sizeof *p->qlen);
  p->call = malloc(n * sizeof *p->call);
  p->work = malloc(n * sizeof *p->work);
  p->node_of = malloc(n * sizeof *p->node_of);
  p->win = malloc(n * sizeof *p->win);
  p->ev = malloc(n * sizeof *p->ev);
  p->bits = calloc(n / 64 + 1, sizeof *p->bits);
  p->tmark = calloc(m->n_tracks + 1, sizeof *p->tmark);
  p->tgroup = malloc((m->n_tracks + 1) * sizeof *p->tgroup);
  void *big[] = {p->qlen, p->call, p->work, p->node_of, p->win, p->ev};
  for (size_t i = 0; i < sizeof big / sizeof *big; i++) ft__model_huge(big[i], n * 4);
  if (!p->qlen || !p->call || !p->work || !p->node_of || !p->win || !p->ev || !p->bits || !p->tmark || !p->tgroup ||
      !queue_lengths(m, &p->nm, &p->q, p->qlen) || !hta_pairs(m, p->call, p->work, &p->syncs, &p->n_syncs)) {
    prep_free(p);
    return false;
  }
  memset(p->node_of, 0xff, m->n * sizeof *p->node_of); /* FT_MODEL_NONE */
  return true;
}

/* The first slice starting at or after t (slices are in start order). */
static size_t first_at(const ft_model *m, int64_t t, bool after) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m->ts[mid] < t || (after && m->ts[mid] == t)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* Slice i into the window (once); one outside [lo, hi) (device work or a sync queued
 * long after its call, or a clock that ran backwards) also into the far list. */
static void mark(cp *c, uint32_t i, size_t lo, size_t hi, size_t *n_far) {
  uint64_t *w = &c->p->bits[i / 64], bit = 1ull << (i % 64);
  if (*w & bit) return;
  *w |= bit;
  if ((i < lo || i >= hi) && GROW(c, far, *n_far)) c->p->far[(*n_far)++] = i;
}

/* One window [lo, hi) of slices by start: critical_path_analysis's clip (CPU events
 * starting in it and lasting > 0; device work and syncs whose call is one of those),
 * its graph, its longest path. p's per-slice scratch is clear again on return. */
static uint64_t window(const ft_model *m, prep *p, size_t lo, size_t hi, bool *oom) {
  cp c = {.m = m, .p = p, .win = p->win, .node_of = p->node_of, .ev = p->ev};
  /* the window's slices in slice order, each once: marked, then read off the bits of
   * [lo, hi), the few outside it sorted around them (a window costs its own length) */
  size_t n_far = 0;
  for (size_t i = lo; i < hi; i++) {
    if (on_stream(m, i) || m->dur[i] <= 0) continue;
    mark(&c, (uint32_t)i, lo, hi, &n_far);
    if (p->work[i] != FT_MODEL_NONE) mark(&c, p->work[i], lo, hi, &n_far);
  }
  size_t a = 0, b = p->n_syncs; /* the syncs whose call is in [lo, hi) */
  while (a < b) {
    size_t mid = (a + b) / 2;
    if (p->syncs[mid].corr < (int64_t)lo) a = mid + 1;
    else b = mid;
  }
  for (; a < p->n_syncs && p->syncs[a].corr < (int64_t)hi; a++)
    if (m->dur[p->syncs[a].corr] > 0) mark(&c, p->syncs[a].s, lo, hi, &n_far);
  if (n_far) qsort(p->far, n_far, sizeof *p->far, cmp_u32);
  size_t u = 0, f = 0;
  for (; f < n_far && p->far[f] < lo; f++) p->win[u++] = p->far[f];
  for (size_t wd = lo / 64; hi > lo && wd <= (hi - 1) / 64; wd++) {
    size_t a0 = lo > wd * 64 ? lo - wd * 64 : 0, a1 = hi - wd * 64 < 64 ? hi - wd * 64 : 64;
    uint64_t in = (a1 == 64 ? ~0ull : (1ull << a1) - 1) & ~((1ull << a0) - 1), bits = p->bits[wd] & in;
    p->bits[wd] &= ~in;
    while (bits) {
      p->win[u++] = (uint32_t)(wd * 64 + (size_t)__builtin_ctzll(bits));
      bits &= bits - 1;
    }
  }
  for (; f < n_far; f++) p->win[u++] = p->far[f];
  for (size_t k = 0; k < n_far; k++) p->bits[p->far[k] / 64] &= ~(1ull << (p->far[k] % 64));
  c.n_win = u;
  /* _create_event_nodes: ops, runtime and driver calls, device work with a correlation */
  for (size_t w = 0; w < u; w++) {
    uint32_t i = p->win[w];
    uint8_t k = m->kind[i];
    bool cpu = k == FT_MK_OP || k == FT_MK_RUNTIME || k == FT_MK_DRIVER;
    bool gpu = ft_model_is_device(k) && on_stream(m, i) && ft_model_corr(m, i) >= 0;
    if (cpu || gpu) {
      p->node_of[i] = (uint32_t)c.n_ev;
      p->ev[c.n_ev++] = i;
    }
  }
  lock_edges(&c); /* edges grown as made: room reserved for 4 an event cost the report 8 B a call more (1 M) */
  stack_edges(&c);
  kernel_edges(&c, p->call, &p->q, p->qlen);
  /* the graph's building scratch freed before the longest path's arrays (the report's bound: issue 49) */
  free(p->ka), free(p->kb), free(p->heap), free(p->stack), free(p->tlist), free(p->gcount), free(p->cs);
  p->ka = p->kb = NULL, p->heap = NULL, p->stack = p->tlist = p->gcount = p->cs = NULL;
  p->cap_ka = p->cap_kb = p->cap_heap = p->cap_stack = p->cap_tlist = p->cap_gcount = p->cap_cs = 0;
  uint64_t len = c.oom ? 0 : ft__dag_longest(&p->dag, p->e, c.n_e, 2 * c.n_ev, &c.oom);
  *oom = c.oom;
  for (size_t w = 0; w < u; w++) p->node_of[p->win[w]] = FT_MODEL_NONE;
  return len;
}

static void step_range(const ft_model *m, size_t step, size_t *lo, size_t *hi) {
  if (step >= m->n_steps) { /* annotation "": the trace's first start to its last end */
    *lo = 0, *hi = m->n;
    return;
  }
  *lo = first_at(m, m->steps[step].start, false);
  *hi = first_at(m, m->steps[step].end, true);
}

/* (advise_internal.h) */
uint64_t ft__critical_path_ns(const ft_model *m, size_t step) {
  prep p;
  if (!m->n || !prep_make(m, &p)) return 0;
  size_t lo, hi;
  bool oom;
  step_range(m, step, &lo, &hi);
  uint64_t len = window(m, &p, lo, hi, &oom);
  prep_free(&p);
  return len;
}

/* (advise_internal.h) */
bool ft__critical_paths(const ft_model *m, uint64_t *out) {
  prep p;
  if (!m->n) {
    for (size_t s = 0; s < m->n_steps; s++) out[s] = 0;
    return true;
  }
  if (!prep_make(m, &p)) return false;
  bool oom = false;
  for (size_t s = 0; s < m->n_steps && !oom; s++) {
    size_t lo, hi;
    step_range(m, s, &lo, &hi);
    out[s] = window(m, &p, lo, hi, &oom);
  }
  prep_free(&p);
  return !oom;
}
