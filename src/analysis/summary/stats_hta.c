/* HTA's analyses on HTA's definitions, kept while a trace is read: temporal breakdown, comm/compute overlap, launch
 * statistics, queue length. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_hta.h"

/* A launch call (stream-less event of a launch name) and a GPU event (one with an
 * args.stream), held by correlation id until the file ends: which call an event
 * pairs with is known only then (either may come first). A correlation id names one
 * launch: a call pairs with at most one event (HTA pairs every call of an id with
 * every event of it: n * m pairs, quadratic, when a trace repeats an id). A call's
 * two name flags ride in its dur's top bits: durations stay below 2^62 ns
 * (FT_STATS_MAX_US). */
#define F_LAUNCH (1ull << 63) /* a name get_cuda_kernel_launch_stats pairs */
#define F_QUEUE (1ull << 62)  /* a name the queue length counts */
#define DUR_MASK (F_QUEUE - 1)
typedef struct cpu_rec {
  int64_t corr, ts;
  uint64_t dur_flags;
} cpu_rec;
typedef struct gpu_rec {
  int64_t corr, ts, dur, stream;
} gpu_rec;

struct ft__hta {
  ft_stat_ivset all, compute, comm; /* GPU events; compute kernels; communication kernels */
  uint64_t n;
  int64_t lo, hi;
  cpu_rec *cpu;
  gpu_rec *gpu;
  size_t n_cpu, cap_cpu, n_gpu, cap_gpu;
};

ft__hta *ft__hta_new(void) {
  ft__hta *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  ft__ivset_init(&h->all);
  ft__ivset_init(&h->compute);
  ft__ivset_init(&h->comm);
  return h;
}

void ft__hta_free(ft__hta *h) {
  if (!h) return;
  ft__ivset_free(&h->all);
  ft__ivset_free(&h->compute);
  ft__ivset_free(&h->comm);
  free(h->cpu);
  free(h->gpu);
  free(h);
}

void ft__hta_result_free(ft_stat_hta *r) {
  ft_dist_free(&r->cpu_ns);
  ft_dist_free(&r->gpu_ns);
  ft_dist_free(&r->delay_ns);
}

/* ---- names, as HTA's patterns match them (re.match: anchored at the start; `.`
 * stops at a newline, so ".*X" finds X in the first line only) ---- */

static bool starts(const char *s, size_t n, const char *p) {
  size_t k = strlen(p);
  return n >= k && !memcmp(s, p, k);
}

static bool has(const char *s, size_t n, const char *p) { return memmem(s, n, p, strlen(p)) != NULL; }

int ft__hta_kernel_type(const char *s, size_t len) {
  const char *nl = memchr(s, '\n', len);
  size_t n = nl ? (size_t)(nl - s) : len; /* the first line */
  /* CommunicateKernelGroupingPattern: ^nccl | ^hip | ^hccl | .*ncclKernel */
  if (starts(s, len, "nccl") || starts(s, len, "hip") || starts(s, len, "hccl") || has(s, n, "ncclKernel"))
    return FT_HTA_COMM;
  /* MemoryKernelGroupingPattern: ^(hip)?Memcpy | ^(hip)?Memset | ^dma */
  if (starts(s, len, "Memcpy") || starts(s, len, "Memset") || starts(s, len, "dma")) return FT_HTA_MEMORY;
  /* ComputeKernelGroupingPattern, inverted: a name none of these match is compute */
  static const char *const prefixes[] = {"nccl",        "Stream Wait Event",
                                         "runFunction", "hip",
                                         "job_exe",     "packet",
                                         "pe_exe",      "cpum_exe_subgraph",
                                         "hccl",        "collective_subgraph_execution"};
  static const char *const inside[] = {"Memcpy", "Memset", "dma", "Sync"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (starts(s, len, prefixes[i])) return FT_HTA_OTHER;
  for (size_t i = 0; i < sizeof inside / sizeof *inside; i++)
    if (has(s, n, inside[i])) return FT_HTA_OTHER;
  if (starts(s, n, "cuda") && has(s + 4, n - 4, "LaunchKernel")) return FT_HTA_OTHER;
  return FT_HTA_COMPUTE;
}

/* (stats_hta.h) */
const char *const ft__hta_queue_calls[FT__HTA_N_QUEUE_CALLS] = {"cudaLaunchKernel",
                                                                "cudaLaunchKernelExC",
                                                                "cuLaunchKernel",
                                                                "cuLaunchKernelEx",
                                                                "cudaMemcpyAsync",
                                                                "cudaMemsetAsync",
                                                                "runFunction - job_prep_and_submit_for_execution",
                                                                "hipLaunchKernel",
                                                                "hipExtModuleLaunchKernel",
                                                                "hipMemcpyAsync",
                                                                "hipMemsetAsync",
                                                                "hipMemcpyWithStream"};

/* A name's class byte: the kernel type, the two launch-name flags, and "done". */
#define C_LAUNCH 0x10
#define C_QUEUE 0x20
#define C_DONE 0x80
static uint8_t classify(const char *s, size_t len) {
  /* get_cuda_kernel_launch_stats' names (memory calls included, its default) */
  static const char *const launch[] = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
                                       "runFunction - job_prep_and_submit_for_execution"};
  uint8_t c = (uint8_t)(C_DONE | ft__hta_kernel_type(s, len));
  for (size_t i = 0; i < sizeof launch / sizeof *launch; i++)
    if (strlen(launch[i]) == len && !memcmp(s, launch[i], len)) c |= C_LAUNCH;
  for (size_t i = 0; i < FT__HTA_N_QUEUE_CALLS; i++)
    if (strlen(ft__hta_queue_calls[i]) == len && !memcmp(s, ft__hta_queue_calls[i], len)) c |= C_QUEUE;
  return c;
}

static void *grow(void *p, size_t *cap, size_t elem) {
  size_t n = *cap ? 2 * *cap : 256;
  if (n > SIZE_MAX / elem) return NULL;
  void *q = realloc(p, n * elem);
  if (q) *cap = n;
  return q;
}

/* (stats_hta.h) */
bool ft__hta_event(ft_stats *st, const ft__ev *e, const char *name, ft_stat_row *row) {
  ft__hta *h = st->hta;
  bool gpu = e->has_stream && e->stream != -1; /* HTA's GPU events: stream != -1 */
  if (!gpu && !e->has_corr) return true;
  uint8_t c = row ? row->hta : 0;
  if (!c) {
    c = classify(name, e->name_len);
    if (row) row->hta = c;
  }
  if (gpu) {
    int64_t lo = e->ts, hi = e->ts + e->dur;
    if (!h->n++ || lo < h->lo) h->lo = lo;
    if (h->n == 1 || hi > h->hi) h->hi = hi;
    int type = c & 0x0f;
    if (!ft__add_interval(&h->all, lo, hi)) return false;
    if (type == FT_HTA_COMPUTE && !ft__add_interval(&h->compute, lo, hi)) return false;
    if (type == FT_HTA_COMM && !ft__add_interval(&h->comm, lo, hi)) return false;
    if (!e->has_corr) return true;
    if (h->n_gpu == h->cap_gpu) {
      gpu_rec *g = grow(h->gpu, &h->cap_gpu, sizeof *g);
      if (!g) return false;
      h->gpu = g;
    }
    h->gpu[h->n_gpu++] = (gpu_rec){e->corr, e->ts, e->dur, e->stream};
    return true;
  }
  if (!e->has_corr || !(c & (C_LAUNCH | C_QUEUE))) return true;
  if (h->n_cpu == h->cap_cpu) {
    cpu_rec *r = grow(h->cpu, &h->cap_cpu, sizeof *r);
    if (!r) return false;
    h->cpu = r;
  }
  h->cpu[h->n_cpu++] =
      (cpu_rec){e->corr, e->ts, (uint64_t)e->dur | (c & C_LAUNCH ? F_LAUNCH : 0) | (c & C_QUEUE ? F_QUEUE : 0)};
  return true;
}

/* ---- at the file's end ---- */

static int cpu_cmp(const void *a, const void *b) {
  const cpu_rec *x = a, *y = b;
  if (x->corr != y->corr) return (x->corr > y->corr) - (x->corr < y->corr);
  return (x->ts > y->ts) - (x->ts < y->ts);
}
static int gpu_cmp(const void *a, const void *b) {
  const gpu_rec *x = a, *y = b;
  if (x->corr != y->corr) return (x->corr > y->corr) - (x->corr < y->corr);
  return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Sorted unless already so (correlation ids mostly come in order: no sort then). */
static void sort_if(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *)) {
  for (size_t i = 1; i < n; i++)
    if (cmp((char *)base + (i - 1) * elem, (char *)base + i * elem) > 0) {
      qsort(base, n, elem, cmp);
      return;
    }
}

/* A stream's queue steps: +1 at a launch call's start, -1 at its event's start,
 * kept as two lists of times (8 B a step), each mostly in time order already. */
typedef struct qstream {
  int64_t stream;
  int64_t *calls, *events;
  size_t n_calls, cap_calls, n_events, cap_events;
} qstream;
typedef struct qset {
  qstream *s;
  size_t n, cap;
  ft_stat_join index; /* stream -> index + 1 */
} qset;

static bool push_ts(int64_t **v, size_t *n, size_t *cap, int64_t ts) {
  if (*n == *cap) {
    int64_t *g = grow(*v, cap, sizeof **v);
    if (!g) return false;
    *v = g;
  }
  (*v)[(*n)++] = ts;
  return true;
}

static qstream *qstream_of(qset *q, int64_t stream) {
  if (q->n && q->s[q->n - 1].stream == stream) return &q->s[q->n - 1];
  uint64_t *slot = ft__join_find(&q->index, (uint64_t)stream);
  if (slot) return &q->s[*slot - 1];
  if (q->n == q->cap) {
    qstream *g = grow(q->s, &q->cap, sizeof *g);
    if (!g) return NULL;
    q->s = g;
  }
  if (!(slot = ft__join_upsert(&q->index, (uint64_t)stream))) return NULL;
  q->s[q->n] = (qstream){.stream = stream};
  *slot = ++q->n;
  return &q->s[q->n - 1];
}

static int ts_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static ft_stat_row *stream_row(ft_stats *st, int64_t stream) {
  char buf[24];
  int len = snprintf(buf, sizeof buf, "%lld", (long long)stream);
  uint32_t id;
  if (ft__intern(&st->names, buf, (size_t)len, &id)) return NULL;
  uint64_t *slot = ft__map_upsert(&st->index[FT_STAT_STREAMS], id);
  if (!slot) return NULL;
  if (!*slot) {
    ft_stat_row *r = ft__vec_push(&st->rows[FT_STAT_STREAMS]);
    if (!r) return NULL;
    r->name_id = id;
    *slot = st->rows[FT_STAT_STREAMS].len;
  }
  return ft__vec_at(&st->rows[FT_STAT_STREAMS], *slot - 1);
}

/* One stream's queue: every step is a sample (HTA's describe() of its series).
 * At one ts an event's start counts first (the call enqueues during the call;
 * HTA's unstable sort leaves such ties in no fixed order). */
static bool queue_row(ft_stats *st, qstream *q) {
  sort_if(q->calls, q->n_calls, sizeof *q->calls, ts_cmp);
  sort_if(q->events, q->n_events, sizeof *q->events, ts_cmp);
  ft_stat_row *r = stream_row(st, q->stream);
  if (!r) return false;
  int64_t len = 0, at = 0;
  for (size_t a = 0, b = 0; a < q->n_calls || b < q->n_events;) {
    bool event = b < q->n_events && (a == q->n_calls || q->events[b] <= q->calls[a]);
    int64_t ts = event ? q->events[b++] : q->calls[a++];
    if (len >= FT_HTA_QUEUE_FULL) r->self_ns += (uint64_t)(ts - at); /* the time since the last step */
    at = ts;
    len += event ? -1 : 1;
    r->calls += event;
    /* twice the length, so that the median of an even count keeps its half (HTA's
     * is the mean of the middle two); below 0 only when an event starts before
     * its call: counted as 0 */
    if (!ft_dist_add(&r->t, len > 0 ? 2 * (uint64_t)len : 0)) return false;
  }
  return true;
}

static bool pair(ft_stat_hta *o, const cpu_rec *c, const gpu_rec *g) {
  uint64_t cpu = c->dur_flags & DUR_MASK, gpu = (uint64_t)g->dur;
  int64_t d = g->ts - c->ts - (int64_t)cpu;
  uint64_t delay = d > 0 ? (uint64_t)d : 0; /* clipped at 0, as HTA */
  o->launches++;
  o->short_kernels += cpu <= FT_HTA_RUNTIME_CUTOFF_NS && gpu < cpu;
  o->runtime_outliers += cpu > FT_HTA_RUNTIME_CUTOFF_NS;
  o->delay_outliers += delay > FT_HTA_DELAY_CUTOFF_NS;
  return ft_dist_add(&o->cpu_ns, cpu) && ft_dist_add(&o->gpu_ns, gpu) && ft_dist_add(&o->delay_ns, delay);
}

/* A call paired with an event: a launch pair, and/or a step of the event's stream's queue. */
static bool pair_one(qset *q, ft_stat_hta *o, const cpu_rec *c, const gpu_rec *g) {
  if (c->dur_flags & F_LAUNCH && !pair(o, c, g)) return false;
  if (!(c->dur_flags & F_QUEUE)) return true;
  qstream *s = qstream_of(q, g->stream);
  return s && push_ts(&s->calls, &s->n_calls, &s->cap_calls, c->ts) &&
         push_ts(&s->events, &s->n_events, &s->cap_events, g->ts);
}

/* One correlation id's calls c[0, nc) and events g[0, ng), each in time order:
 * each event pairs with the nearest unpaired call before it (a stack of the calls
 * seen), then the events no call preceded with the calls left, nearest first (all
 * of those calls come after all of those events). min(nc, ng) pairs, in
 * O(nc + ng); *unpaired counts the rest. stack, lone: room for nc, ng. */
static bool join_id(qset *q, ft_stat_hta *o, const cpu_rec *c, size_t nc, const gpu_rec *g, size_t ng, size_t *stack,
                    size_t *lone, uint64_t *unpaired) {
  size_t top = 0, n_lone = 0, a = 0;
  for (size_t b = 0; b < ng; b++) {
    while (a < nc && c[a].ts <= g[b].ts) stack[top++] = a++;
    if (!top) lone[n_lone++] = b;
    else if (!pair_one(q, o, &c[stack[--top]], &g[b])) return false;
  }
  while (a < nc) stack[top++] = a++;
  size_t m = top < n_lone ? top : n_lone;
  for (size_t k = 0; k < m; k++) /* stack[0, top) is in time order */
    if (!pair_one(q, o, &c[stack[k]], &g[lone[n_lone - 1 - k]])) return false;
  *unpaired += (top - m) + (n_lone - m);
  return true;
}

/* Calls and events joined by correlation id: the launch pairs, the queue's steps;
 * *unpaired: the calls and events of an id that has both, left without a pair. */
static bool join(ft_stats *st, ft__hta *h, ft_stat_hta *o, uint64_t *unpaired) {
  sort_if(h->cpu, h->n_cpu, sizeof *h->cpu, cpu_cmp);
  sort_if(h->gpu, h->n_gpu, sizeof *h->gpu, gpu_cmp);
  qset q = {0};
  size_t *stack = malloc((h->n_cpu ? h->n_cpu : 1) * sizeof *stack),
         *lone = malloc((h->n_gpu ? h->n_gpu : 1) * sizeof *lone);
  bool ok = stack && lone;
  for (size_t i = 0, j = 0; ok && i < h->n_cpu && j < h->n_gpu;) {
    if (h->cpu[i].corr != h->gpu[j].corr) {
      if (h->cpu[i].corr < h->gpu[j].corr) i++;
      else j++;
      continue;
    }
    int64_t corr = h->cpu[i].corr;
    size_t i1 = i, j1 = j;
    while (i1 < h->n_cpu && h->cpu[i1].corr == corr) i1++;
    while (j1 < h->n_gpu && h->gpu[j1].corr == corr) j1++;
    ok = join_id(&q, o, h->cpu + i, i1 - i, h->gpu + j, j1 - j, stack, lone, unpaired);
    i = i1, j = j1;
  }
  free(stack);
  free(lone);
  for (size_t k = 0; k < q.n; k++) {
    ok = ok && queue_row(st, &q.s[k]);
    free(q.s[k].calls);
    free(q.s[k].events);
  }
  free(q.s);
  ft__join_free(&q.index);
  return ok;
}

bool ft__hta_finish(ft_stats *st, ft_stat_hta *out) {
  ft__hta *h = st->hta;
  memset(out, 0, sizeof *out);
  if (!h) return true;
  st->hta = NULL;
  out->kept = true;
  out->gpu_events = h->n;
  out->gpu_first_ns = h->n ? h->lo : 0;
  out->gpu_last_ns = h->n ? h->hi : 0;
  bool ok = ft__device_busy(&h->all, &out->gpu_busy_ns, NULL, 0, 0) &&
            ft__device_busy(&h->compute, &out->compute_ns, NULL, 0, 0) &&
            ft__device_busy(&h->comm, &out->comm_ns, NULL, 0, 0) &&
            ft__ivset_overlap(&h->compute, &h->comm, &out->overlap_ns) && join(st, h, out, &st->skipped.unpaired);
  ft__hta_free(h);
  return ok;
}
