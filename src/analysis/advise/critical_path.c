/* HTA's critical path (critical_path_analysis.py) through a step, on the event model: its graph, then its longest path.
 */
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"
#include "stats_hta.h" /* ft__hta_queue_calls */

/* The events that get nodes, each a start node (2k) and an end node (2k + 1). */
typedef struct cp {
  const ft_model *m;
  const struct names *nm; /* HTA's names (below) */
  const uint32_t *win;    /* the window's slices, ascending */
  size_t n_win;
  uint32_t *ev; /* node-event k's slice */
  size_t n_ev;
  uint32_t *node_of; /* slice -> k, FT_MODEL_NONE */
  struct edge {      /* 12 bytes: the weight is read from the nodes' times when the path is walked */
    uint32_t u, v;
    uint32_t seq; /* the edge's order << 1 | 1 where it weighs nothing */
  } * e;
  size_t n_e, cap_e;
  bool oom;
} cp;

static int64_t node_ts(const cp *c, uint32_t node) {
  uint32_t s = c->ev[node / 2];
  return c->m->ts[s] + (node & 1 ? c->m->dur[s] : 0);
}

/* networkx's add_edge: a second edge between the same nodes replaces the first
 * (dedup() keeps the last). Dependency and sync edges weigh nothing. */
static void edge(cp *c, uint32_t u, uint32_t v, bool zero) {
  if (c->oom || u == v) return;
  if (c->n_e == UINT32_MAX / 2) { /* seq's room: 2^31 edges are beyond any window's memory */
    c->oom = true;
    return;
  }
  if (c->n_e == c->cap_e) {
    size_t cap = c->cap_e ? 2 * c->cap_e : 1024;
    void *p = realloc(c->e, cap * sizeof *c->e);
    if (!p) {
      c->oom = true;
      return;
    }
    c->e = p;
    c->cap_e = cap;
  }
  c->e[c->n_e] = (struct edge){u, v, (uint32_t)c->n_e << 1 | zero};
  c->n_e++;
}
static int64_t edge_w(const cp *c, const struct edge *e) {
  int64_t w = e->seq & 1 ? 0 : node_ts(c, e->v) - node_ts(c, e->u);
  return w <= -1000 ? 0 : w; /* _validate_graph: a weight of -1 us or less counts 0 (HTA's non-strict default) */
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
static bool is_lock(const cp *c, uint32_t node) { return id_in(c->m->name[c->ev[node / 2]], c->nm->lock, 3); }

static bool on_stream(const ft_model *m, size_t i) { return m->tracks[m->track[i]].kind == FT_TRACK_STREAM; }
static int64_t stream_of(const ft_model *m, size_t i) { return m->tracks[m->track[i]].tid; }

/* _shares_cuda_runtime_lock */
static bool shares_lock(const cp *c, uint32_t a, uint32_t b) {
  return is_lock(c, a) && is_lock(c, b) && (!(a & 1) || (b & 1));
}

/* qsort has no context argument, and advise reads a job's files on parallel threads */
static _Thread_local const cp *sort_cp;
static int cmp_node(const void *x, const void *y) { /* (ts, event index), a start before its end */
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  int64_t ta = node_ts(sort_cp, a), tb = node_ts(sort_cp, b);
  if (ta != tb) return ta < tb ? -1 : 1;
  uint32_t sa = sort_cp->ev[a / 2], sb = sort_cp->ev[b / 2];
  if (sa != sb) return sa < sb ? -1 : 1;
  return (int)(a & 1) - (int)(b & 1);
}

/* _construct_graph_from_cuda_runtime_events: the lock's path through the calls' ends. */
static void lock_edges(cp *c) {
  uint32_t *nodes = malloc((2 * c->n_ev + 1) * sizeof *nodes), *starts = malloc((c->n_ev + 1) * sizeof *starts);
  if (!nodes || !starts) {
    c->oom = true;
    free(nodes);
    free(starts);
    return;
  }
  size_t n = 0, top = 0;
  for (uint32_t k = 0; k < c->n_ev; k++)
    if (is_lock(c, 2 * k)) nodes[n++] = 2 * k, nodes[n++] = 2 * k + 1;
  sort_cp = c;
  if (n) qsort(nodes, n, sizeof *nodes, cmp_node);
  uint32_t last = UINT32_MAX;
  for (size_t i = 0; i < n; i++) {
    uint32_t v = nodes[i];
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
  free(nodes);
  free(starts);
}

/* A CPU event's start or end (slice << 1 | end: 4 bytes, where a copied row took 40; the
 * report runs advise beside its own columns) as the call stack sorts them (call_stack.py
 * compare_events, every event lasting > 0): per thread, by time, ends before starts, longer
 * starts first, shorter ends first. */
typedef struct cs_sort {
  const ft_model *m;
  int64_t fwd, bwd; /* the backward thread's tid read as the forward one's (remap), else -1 both */
} cs_sort;
static _Thread_local const cs_sort *sort_cs;
static int64_t cs_tid(const cs_sort *q, uint32_t s) {
  int64_t t = q->m->tracks[q->m->track[s]].tid;
  return t == q->bwd && q->bwd != q->fwd ? q->fwd : t;
}
static int cmp_cs(const void *x, const void *y) {
  const cs_sort *q = sort_cs;
  const ft_model *m = q->m;
  uint32_t ea = *(const uint32_t *)x, eb = *(const uint32_t *)y, sa = ea >> 1, sb = eb >> 1;
  bool aend = ea & 1, bend = eb & 1;
  int64_t pa = m->tracks[m->track[sa]].pid, pb = m->tracks[m->track[sb]].pid;
  if (pa != pb) return pa < pb ? -1 : 1;
  int64_t ta = cs_tid(q, sa), tb = cs_tid(q, sb);
  if (ta != tb) return ta < tb ? -1 : 1;
  if (sa == sb) return (int)aend - (int)bend;
  int64_t da = m->dur[sa], db = m->dur[sb], a = m->ts[sa] + (aend ? da : 0), b = m->ts[sb] + (bend ? db : 0);
  if (a != b) return a < b ? -1 : 1;
  if (aend != bend) return aend ? -1 : 1;
  if (da != db) return (da < db) == aend ? -1 : 1;
  return (sa < sb) == !aend ? -1 : 1;
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

/* _construct_graph_from_call_stacks: per thread (the backward thread merged into the
 * forward one when each is the only one with such ops), the events in the order of a
 * depth-first walk of HTA's call stack, edges between consecutive ones with nodes. */
static void stack_edges(cp *c) {
  const ft_model *m = c->m;
  int64_t fwd = -1, bwd = -1;
  bool remap = tid_with(c, "forward", &fwd) && tid_with(c, "autograd", &bwd) && fwd != bwd;
  if (m->n > UINT32_MAX / 2) { /* an entry holds slice << 1: 2^31 slices would be 128 GiB of model anyway */
    c->oom = true;
    return;
  }
  size_t n = 0;
  for (size_t w = 0; w < c->n_win; w++) n += !on_stream(m, c->win[w]);
  uint32_t *v = malloc((2 * n + 1) * sizeof *v), *stack = malloc((n + 1) * sizeof *stack);
  if (!v || !stack) {
    c->oom = true;
    free(v);
    free(stack);
    return;
  }
  size_t k = 0;
  for (size_t w = 0; w < c->n_win; w++) {
    uint32_t i = c->win[w];
    if (on_stream(m, i)) continue;
    v[k++] = i << 1;
    v[k++] = i << 1 | 1;
  }
  cs_sort q = {m, remap ? fwd : -1, remap ? bwd : -1};
  sort_cs = &q;
  if (k) qsort(v, k, sizeof *v, cmp_cs);
  /* Walking HTA's tree depth first meets the events as the sorted list does, each end
   * exiting whatever the stack's top is (the tree's parent is the top at a start). */
  size_t top = 0;
  uint32_t last = UINT32_MAX;
  int depth = 0;
  for (size_t i = 0; i < k; i++) {
    uint32_t si = v[i] >> 1;
    bool end = v[i] & 1;
    if (i && (m->tracks[m->track[si]].pid != m->tracks[m->track[v[i - 1] >> 1]].pid ||
              cs_tid(&q, si) != cs_tid(&q, v[i - 1] >> 1)))
      top = 0, last = UINT32_MAX, depth = 0;
    uint32_t s;
    if (!end) {
      s = si;
      stack[top++] = s;
    } else {
      if (!top) continue;
      s = stack[--top];
    }
    uint32_t ev = c->node_of[s];
    if (ev == FT_MODEL_NONE) continue;
    uint32_t node = 2 * ev + (end ? 1 : 0);
    if (last != UINT32_MAX && !shares_lock(c, last, node)) {
      if (!end) edge(c, last, node, depth == 0); /* top-level ops: a dependency */
      else edge(c, last, node, id_in(m->name[s], c->nm->blk, 6));
    }
    last = node;
    depth += end ? -1 : 1;
  }
  free(v);
  free(stack);
}

/* HTA's index_correlation, by correlation id (transform_correlation_to_index): device
 * work's and a sync's call is the last CPU event with its id; a CPU event's device side
 * is the last device event with its id (a launch of several kernels clips in only that
 * one). The model links launches only, one piece of work each. */
typedef struct callref {
  int64_t corr;
  uint32_t s;
} callref;
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
static bool hta_pairs(const ft_model *m, uint32_t *call, uint32_t *work, callref **pairs, size_t *n_pairs) {
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
  free(d);
  /* the syncs by their call's index (r reused: corr holds the call, s the sync) */
  size_t k = 0;
  for (size_t i = 0; i < m->n; i++)
    if (m->kind[i] == FT_MK_SYNC && call[i] != FT_MODEL_NONE) r[k++] = (callref){call[i], (uint32_t)i};
  if (k) qsort(r, k, sizeof *r, cmp_callref);
  callref *kept = realloc(r, (k + 1) * sizeof *r); /* the syncs only: held through every window */
  *pairs = kept ? kept : r;
  *n_pairs = k;
  return true;
}

/* Per stream id, in start order: where the stream's queue stood (HTA's
 * _get_queue_length_time_series_for_rank over the whole trace): after each launch
 * counted (+1) and after each of their device work's start (-1). */
typedef struct streams {
  int64_t *id;
  int64_t *len;   /* per stream */
  uint32_t *last; /* per stream: the end node of its last work, UINT32_MAX */
  size_t n;
} streams;

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

struct row {
  int64_t key; /* start; a sync's end (HTA sorts them so) */
  uint32_t s;
};
static int cmp_row(const void *x, const void *y) {
  const struct row *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->s < b->s ? -1 : a->s > b->s;
}

/* _construct_graph_from_kernels: each device work's span; a launch delay edge when its
 * stream's queue was empty at the launch and is again at its start and the stream's
 * last work ended before the launch; else a kernel-kernel edge from the last work
 * under the threshold. Stream and context syncs: an edge from the last work on the
 * stream (on every stream) to the end of the call that waited. */
static void kernel_edges(cp *c, const uint32_t *call, streams *q, const int32_t *qlen) {
  const ft_model *m = c->m;
  size_t n = 0;
  for (size_t w = 0; w < c->n_win; w++) n += on_stream(m, c->win[w]) || m->kind[c->win[w]] == FT_MK_SYNC;
  struct row *r = malloc((n + 1) * sizeof *r);
  if (!r) {
    c->oom = true;
    return;
  }
  size_t k = 0;
  for (size_t w = 0; w < c->n_win; w++) {
    uint32_t i = c->win[w];
    if (on_stream(m, i) || m->kind[i] == FT_MK_SYNC) /* syncs sort by their end */
      r[k++] = (struct row){m->ts[i] + (m->kind[i] == FT_MK_SYNC ? m->dur[i] : 0), i};
  }
  if (k) qsort(r, k, sizeof *r, cmp_row);
  for (size_t x = 0; x < q->n; x++) q->last[x] = UINT32_MAX;
  for (size_t i = 0; i < k; i++) {
    uint32_t s = r[i].s, l = call[s];
    size_t st = on_stream(m, s) ? stream_ix(q, stream_of(m, s)) : SIZE_MAX;
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
    uint32_t a = 2 * ev, b = a + 1, last = q->last[st];
    edge(c, a, b, false);
    bool launch_ok = l != FT_MODEL_NONE && c->node_of[l] != FT_MODEL_NONE && qlen[s] == 0 && qlen[l] == 1 &&
                     (last == UINT32_MAX || node_ts(c, last) < m->ts[l]);
    if (launch_ok) edge(c, 2 * c->node_of[l], a, false);
    else if (last != UINT32_MAX && m->ts[s] - node_ts(c, last) < FT_HTA_CP_KERNEL_DELAY_NS) edge(c, last, a, false);
    q->last[st] = b;
  }
  free(r);
}

static int cmp_edge(const void *x, const void *y) {
  const struct edge *a = x, *b = y;
  if (a->u != b->u) return a->u < b->u ? -1 : 1;
  if (a->v != b->v) return a->v < b->v ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* networkx's dag_longest_path: in topological order, each node's distance is the best
 * predecessor's plus the edge, restarting at 0 where that is negative. */
static uint64_t longest(cp *c) {
  size_t nn = 2 * c->n_ev;
  if (c->n_e) qsort(c->e, c->n_e, sizeof *c->e, cmp_edge);
  size_t w = 0;
  for (size_t i = 0; i < c->n_e; i++) {
    if (w && c->e[w - 1].u == c->e[i].u && c->e[w - 1].v == c->e[i].v)
      c->e[w - 1] = c->e[i]; /* the later edge replaces the earlier */
    else c->e[w++] = c->e[i];
  }
  c->n_e = w;
  uint32_t *first = calloc(nn + 1, sizeof *first); /* n_e < 2^31 (edge()) */
  uint32_t *indeg = calloc(nn + 1, sizeof *indeg), *order = malloc((nn + 1) * sizeof *order);
  int64_t *dist = calloc(nn + 1, sizeof *dist);
  uint64_t best = 0;
  if (!first || !indeg || !order || !dist) goto out;
  for (size_t i = 0; i < c->n_e; i++) first[c->e[i].u + 1]++, indeg[c->e[i].v]++;
  for (size_t i = 0; i < nn; i++) first[i + 1] += first[i];
  size_t head = 0, tail = 0;
  for (uint32_t i = 0; i < nn; i++)
    if (!indeg[i]) order[tail++] = i;
  while (head < tail) {
    uint32_t u = order[head++];
    if (dist[u] < 0) dist[u] = 0;
    if ((uint64_t)dist[u] > best) best = (uint64_t)dist[u];
    for (size_t j = first[u]; j < first[u + 1]; j++) {
      uint32_t v = c->e[j].v;
      int64_t d = dist[u] + edge_w(c, &c->e[j]);
      if (d > dist[v]) dist[v] = d;
      if (!--indeg[v]) order[tail++] = v;
    }
  }
  if (tail != nn) best = 0; /* a cycle: HTA's validation fails too */
out:
  free(first);
  free(indeg);
  free(order);
  free(dist);
  return best;
}

/* What every window shares: the whole trace's queue lengths, each sync's call, and
 * per-slice scratch that a window sets and clears again. */
typedef struct prep {
  int32_t *qlen;
  uint32_t *call; /* device work's and a sync's call; FT_MODEL_NONE */
  uint32_t *work; /* a CPU event's device work (HTA's pairing); FT_MODEL_NONE */
  callref *syncs; /* (call, sync) by call */
  size_t n_syncs;
  streams q;
  names nm;
  uint32_t *node_of, *win, *ev; /* node_of: FT_MODEL_NONE outside a window */
} prep;

static void prep_free(prep *p) {
  free(p->qlen);
  free(p->call);
  free(p->work);
  free(p->syncs);
  free(p->q.id);
  free(p->q.len);
  free(p->q.last);
  free(p->node_of);
  free(p->win);
  free(p->ev);
}

static bool prep_make(const ft_model *m, prep *p) {
  memset(p, 0, sizeof *p);
  names_find(m, &p->nm);
  size_t n = m->n + 1;
  p->qlen = malloc(n * sizeof *p->qlen);
  p->call = malloc(n * sizeof *p->call);
  p->work = malloc(n * sizeof *p->work);
  p->node_of = malloc(n * sizeof *p->node_of);
  p->win = malloc(2 * n * sizeof *p->win);
  p->ev = malloc(n * sizeof *p->ev);
  if (!p->qlen || !p->call || !p->work || !p->node_of || !p->win || !p->ev ||
      !queue_lengths(m, &p->nm, &p->q, p->qlen) || !hta_pairs(m, p->call, p->work, &p->syncs, &p->n_syncs)) {
    prep_free(p);
    return false;
  }
  for (size_t i = 0; i < m->n; i++) p->node_of[i] = FT_MODEL_NONE;
  return true;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
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

/* One window [lo, hi) of slices by start: critical_path_analysis's clip (CPU events
 * starting in it and lasting > 0; device work and syncs whose call is one of those),
 * its graph, its longest path. p's scratch is clear again on return. */
static uint64_t window(const ft_model *m, prep *p, size_t lo, size_t hi, bool *oom) {
  cp c = {.m = m, .nm = &p->nm, .win = p->win, .node_of = p->node_of, .ev = p->ev};
  size_t n = 0;
  for (size_t i = lo; i < hi; i++) {
    if (on_stream(m, i) || m->dur[i] <= 0) continue;
    p->win[n++] = (uint32_t)i;
    uint32_t l = p->work[i];
    if (l != FT_MODEL_NONE) p->win[n++] = l;
  }
  size_t a = 0, b = p->n_syncs; /* the syncs whose call is in [lo, hi) */
  while (a < b) {
    size_t mid = (a + b) / 2;
    if (p->syncs[mid].corr < (int64_t)lo) a = mid + 1;
    else b = mid;
  }
  for (; a < p->n_syncs && p->syncs[a].corr < (int64_t)hi; a++)
    if (m->dur[p->syncs[a].corr] > 0) p->win[n++] = p->syncs[a].s;
  if (n) qsort(p->win, n, sizeof *p->win, cmp_u32);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || p->win[u - 1] != p->win[i]) p->win[u++] = p->win[i];
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
  lock_edges(&c);
  stack_edges(&c);
  kernel_edges(&c, p->call, &p->q, p->qlen);
  uint64_t len = c.oom ? 0 : longest(&c);
  *oom = c.oom;
  for (size_t w = 0; w < u; w++) p->node_of[p->win[w]] = FT_MODEL_NONE;
  free(c.e);
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
