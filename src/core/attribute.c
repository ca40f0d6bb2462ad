/* Attribution by time: pushed ids noted per thread, calls matched to them at stop. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

/* Where a tracer stamps its calls with our clock on the calling thread
 * (calls_on_core_clock), a push before a call and the pop after it bracket the
 * call's [start, end] exactly, so the innermost id open around a call on its thread
 * is the one the vendor's per-thread stack would have named (design.md §2). Noting
 * a push is a clock read and three stores; the vendor's push, pop and per-call
 * correlation record cost torch's profiled add_ ~3 % (docs/measurements.md). */

enum { FRAMES_PER_CHUNK = 2048 };
#define OPEN_END UINT64_MAX /* not popped (yet): contains everything after its start */

typedef struct ft__frame {
  uint64_t ext, start;
  _Atomic uint64_t end; /* written by the pop, read at stop by another thread */
} ft__frame;

typedef struct frame_chunk {
  struct frame_chunk *next; /* written before the count that publishes it */
  ft__frame f[FRAMES_PER_CHUNK];
} frame_chunk;

/* One thread's pushes in one session; only that thread writes it (and, once it is
 * gone, a new thread with its OS id: see log_for). */
struct ft__thread_log {
  struct ft__thread_log *next; /* the session's list, under its mutex */
  uint32_t tid;
  frame_chunk *head, *tail;
  size_t tail_used;
  atomic_size_t published; /* frames stop may read, in push (= start) order */
  ft__frame **open;        /* the open frames, innermost last */
  size_t depth, cap;
};

static _Thread_local struct {
  uint64_t gen;
  struct ft__thread_log *log;
} tls_log;

/* Closes what a thread left open when it ended: it cannot contain later calls. */
static void close_open(struct ft__thread_log *l, uint64_t now) {
  while (l->depth) atomic_store_explicit(&l->open[--l->depth]->end, now, memory_order_relaxed);
}

/* The calling thread's log in s, made (or adopted) on its first push. */
static struct ft__thread_log *log_for(ft_session *s) {
  if (tls_log.gen == s->gen) return tls_log.log;
  ft__thread_register(); /* the vendor's thread ids of its calls map to ours */
  uint32_t tid = ft__gettid();
  pthread_mutex_lock(&s->mu);
  struct ft__thread_log *l = s->logs;
  while (l && l->tid != tid) l = l->next;
  if (l) {
    /* a thread with this OS id pushed before, so it has ended (ids are unique
     * among live threads): its log is ours now, and what it left open closed */
    close_open(l, ft__now_ns());
  } else if ((l = calloc(1, sizeof *l))) {
    l->tid = tid;
    l->next = s->logs;
    s->logs = l;
  }
  pthread_mutex_unlock(&s->mu);
  if (l) tls_log.gen = s->gen, tls_log.log = l;
  return l;
}

ft_status ft__timed_push(ft_session *s, uint64_t id) {
  struct ft__thread_log *l = log_for(s);
  if (!l) return FT_ENOMEM;
  if (l->depth == l->cap) {
    size_t ncap = l->cap ? l->cap * 2 : 32;
    ft__frame **n = realloc(l->open, ncap * sizeof *n);
    if (!n) return FT_ENOMEM;
    l->open = n, l->cap = ncap;
  }
  if (!l->tail || l->tail_used == FRAMES_PER_CHUNK) {
    frame_chunk *c = malloc(sizeof *c);
    if (!c) return FT_ENOMEM;
    c->next = NULL;
    if (l->tail) l->tail->next = c;
    else l->head = c;
    l->tail = c, l->tail_used = 0;
  }
  ft__frame *f = &l->tail->f[l->tail_used++];
  f->ext = id;
  atomic_store_explicit(&f->end, OPEN_END, memory_order_relaxed);
  f->start = ft__now_ns(); /* last: the call it brackets comes after */
  atomic_store_explicit(&l->published, atomic_load_explicit(&l->published, memory_order_relaxed) + 1,
                        memory_order_release);
  l->open[l->depth++] = f;
  return FT_OK;
}

ft_status ft__timed_pop(ft_session *s) {
  if (tls_log.gen != s->gen || !tls_log.log->depth) return FT_ESTATE;
  struct ft__thread_log *l = tls_log.log;
  atomic_store_explicit(&l->open[--l->depth]->end, ft__now_ns(), memory_order_relaxed);
  return FT_OK;
}

ft_status ft__timed_call_span(ft_session *s, uint32_t corr, uint32_t tid, uint64_t start, uint64_t end) {
  if (!corr) return FT_OK; /* names no device work */
  pthread_mutex_lock(&s->mu);
  struct ft__call_span *c = ft__vec_push(&s->call_spans);
  if (c) *c = (struct ft__call_span){start, end, corr, tid};
  pthread_mutex_unlock(&s->mu);
  return c ? FT_OK : FT_ENOMEM;
}

void ft__timed_free(ft_session *s) {
  for (struct ft__thread_log *l = s->logs, *next; l; l = next) {
    next = l->next;
    for (frame_chunk *c = l->head, *cn; c; c = cn) cn = c->next, free(c);
    free(l->open);
    free(l);
  }
  s->logs = NULL;
  ft__vec_free(&s->call_spans);
}

/* ---- at stop ---- */

/* One thread's frames (nested, in start order) swept against its calls in start
 * order, with the frames open at the current call on a stack. */
typedef struct sweeper {
  struct ft__thread_log *log;
  frame_chunk *chunk;
  size_t used, fi, n_frames;
  ft__frame **stack;
  size_t depth, cap;
  uint64_t last_start;
  /* calls that came out of start order (buffers complete in any order, a call
   * ends before the one it is nested in), and the left-out calls' spans: swept
   * afresh at the end, sorted */
  struct late_call *late;
  size_t n_late, cap_late;
} sweeper;

typedef struct late_call {
  uint64_t start, end;
  size_t index; /* into store.events, or into call_spans | SPAN_BIT */
} late_call;
#define SPAN_BIT ((size_t)1 << (sizeof(size_t) * 8 - 1))

static uint64_t end_of(const ft__frame *f) { return atomic_load_explicit(&f->end, memory_order_relaxed); }

static void rewind_sweeper(sweeper *w) {
  w->chunk = w->log->head;
  w->used = w->fi = w->depth = 0;
  w->n_frames = atomic_load_explicit(&w->log->published, memory_order_acquire);
  w->last_start = 0;
}

/* The innermost frame open around [start, end] (NULL: none, or no memory with
 * *st set); calls must come in nondecreasing start. */
static const ft__frame *around(sweeper *w, uint64_t start, uint64_t end, ft_status *st) {
  for (; w->fi < w->n_frames && w->chunk; w->fi++) {
    if (w->used == FRAMES_PER_CHUNK) w->chunk = w->chunk->next, w->used = 0;
    if (!w->chunk || w->chunk->f[w->used].start > start) break;
    ft__frame *f = &w->chunk->f[w->used++];
    while (w->depth && end_of(w->stack[w->depth - 1]) < f->start) w->depth--; /* closed before f opened */
    if (w->depth == w->cap) {
      size_t ncap = w->cap ? w->cap * 2 : 64;
      ft__frame **n = realloc(w->stack, ncap * sizeof *n);
      if (!n) return *st = FT_ENOMEM, NULL;
      w->stack = n, w->cap = ncap;
    }
    w->stack[w->depth++] = f;
  }
  while (w->depth && end_of(w->stack[w->depth - 1]) < start) w->depth--; /* closed before the call */
  size_t k = w->depth;
  while (k && end_of(w->stack[k - 1]) < end) k--; /* skips only a frame the call outlasts (never, in order) */
  return k ? w->stack[k - 1] : NULL;
}

static bool add_late(sweeper *w, uint64_t start, uint64_t end, size_t index) {
  if (w->n_late == w->cap_late) {
    size_t ncap = w->cap_late ? w->cap_late * 2 : 64;
    late_call *n = realloc(w->late, ncap * sizeof *n);
    if (!n) return false;
    w->late = n, w->cap_late = ncap;
  }
  w->late[w->n_late++] = (late_call){start, end, index};
  return true;
}

static int cmp_late(const void *a, const void *b) {
  const late_call *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->end < y->end) - (x->end > y->end); /* an enclosing call first */
}

static int cmp_tid(const void *a, const void *b) {
  uint32_t x = ((const sweeper *)a)->log->tid, y = ((const sweeper *)b)->log->tid;
  return (x > y) - (x < y);
}

static sweeper *find_tid(sweeper *w, size_t n, uint32_t tid) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (w[mid].log->tid < tid) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && w[lo].log->tid == tid ? &w[lo] : NULL;
}

/* Gives the call its frame's id: an API event keeps it, and its device work
 * follows through the pair. */
static ft_status attribute(ft_session *s, const ft__frame *f, size_t index, uint32_t corr, ft__attribute_pair_fn pair) {
  if (!(index & SPAN_BIT)) {
    ft__event *e = ft__vec_at(&s->store.events, index);
    e->external_id = f->ext;
    e->flags |= FT__F_HAS_EXTERNAL;
  }
  return pair(s, corr, f->ext);
}

/* True when some thread pushed FT__EXT_NONE itself: then it cannot mark a barrier. */
static bool pushed_none(const ft_session *s) {
  for (const struct ft__thread_log *l = s->logs; l; l = l->next) {
    size_t n = atomic_load_explicit(&l->published, memory_order_acquire), k = 0;
    for (const frame_chunk *c = l->head; c && k < n; c = c->next)
      for (size_t i = 0; i < FRAMES_PER_CHUNK && k < n; i++, k++)
        if (c->f[i].ext == FT__EXT_NONE) return true;
  }
  return false;
}

/* Reports a call no id was open around, when runs may span gaps: every call of
 * the store is then reported, so an id a run spans belongs to no call we know of
 * (a query CUPTI was told not to record). Dropped records could be such calls. */
static ft_status barrier(ft_session *s, uint32_t corr, ft__attribute_pair_fn pair) {
  return s->corr_gaps ? pair(s, corr, FT__EXT_NONE) : FT_OK;
}

ft_status ft__timed_attribute(ft_session *s, ft__attribute_pair_fn pair) {
  size_t n_logs = 0;
  for (struct ft__thread_log *l = s->logs; l; l = l->next) n_logs++;
  if (!n_logs) return FT_OK;
  s->corr_gaps = s->dropped == 0 && !s->n_corr_runs && !s->n_corr_ext && !pushed_none(s);
  sweeper *ws = calloc(n_logs, sizeof *ws);
  if (!ws) return FT_ENOMEM;
  size_t i = 0;
  for (struct ft__thread_log *l = s->logs; l; l = l->next) ws[i].log = l, rewind_sweeper(&ws[i++]);
  qsort(ws, n_logs, sizeof *ws, cmp_tid);
  /* one pass over the store in arrival order, which is start order per thread
   * nearly always: no copy of the calls (P6 counts the peak) */
  ft_status st = FT_OK;
  uint64_t calls = 0, hit = 0;
  for (size_t k = 0; !st && k < s->store.events.len; k++) {
    const ft__event *e = ft__vec_at(&s->store.events, k);
    if (!ft__is_api_kind(e->kind) || !e->correlation_id) continue;
    if (e->flags & FT__F_HAS_EXTERNAL) { /* came with its own id: its work gets none, as before */
      st = barrier(s, e->correlation_id, pair);
      continue;
    }
    sweeper *w = find_tid(ws, n_logs, e->thread_id);
    if (!w) {
      st = barrier(s, e->correlation_id, pair);
      continue;
    }
    calls++;
    if (e->start_ns < w->last_start) {
      if (!add_late(w, e->start_ns, e->end_ns, k)) st = FT_ENOMEM;
      continue;
    }
    w->last_start = e->start_ns;
    const ft__frame *f = around(w, e->start_ns, e->end_ns, &st);
    if (f) st = attribute(s, f, k, e->correlation_id, pair), hit += !st;
    else if (!st) st = barrier(s, e->correlation_id, pair);
  }
  for (size_t k = 0; !st && k < s->call_spans.len; k++) {
    const struct ft__call_span *c = ft__vec_at(&s->call_spans, k);
    sweeper *w = find_tid(ws, n_logs, c->tid);
    if (w && !add_late(w, c->start, c->end, k | SPAN_BIT)) st = FT_ENOMEM;
    else if (!w) st = barrier(s, c->corr, pair);
    calls += w != NULL;
  }
  for (size_t k = 0; k < n_logs; k++) {
    sweeper *w = &ws[k];
    if (!st && w->n_late) {
      qsort(w->late, w->n_late, sizeof *w->late, cmp_late);
      rewind_sweeper(w);
      for (size_t j = 0; !st && j < w->n_late; j++) {
        const late_call *c = &w->late[j];
        const ft__frame *f = around(w, c->start, c->end, &st);
        uint32_t corr = c->index & SPAN_BIT
                            ? ((const struct ft__call_span *)ft__vec_at(&s->call_spans, c->index & ~SPAN_BIT))->corr
                            : ((const ft__event *)ft__vec_at(&s->store.events, c->index))->correlation_id;
        if (f) st = attribute(s, f, c->index, corr, pair), hit += !st;
        else if (!st) st = barrier(s, corr, pair);
      }
    }
    free(w->late);
    free(w->stack);
  }
  ft__log("attribution by time: %zu threads pushed ids; %llu of their %llu calls issued inside one", n_logs,
          (unsigned long long)hit, (unsigned long long)calls);
  free(ws);
  return st;
}

/* ---- memory operations by thread and time ---- */

/* A frame or CPU range of a thread, and a memory operation to attribute. */
typedef struct open_span {
  uint64_t start, end, ext;
  uint32_t tid;
} open_span;
typedef struct mem_query {
  uint64_t t;
  size_t index; /* into store.events */
  uint32_t tid;
} mem_query;

static int cmp_span(const void *a, const void *b) {
  const open_span *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->end < y->end) - (x->end > y->end); /* same start: the outer one first */
}

static int cmp_query(const void *a, const void *b) {
  const mem_query *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return (x->t > y->t) - (x->t < y->t);
}

/* The spans to search: the session's CPU ranges (not a framework's user ranges,
 * which are no ops of ours) and, in a timed session, every pushed frame. */
static open_span *collect_spans(const ft_session *s, size_t *n_out) {
  size_t n = 0;
  for (size_t i = 0; i < s->store.events.len; i++) {
    const ft__event *e = ft__vec_at(&s->store.events, i);
    n += e->kind == FT__EV_CPU_RANGE && !(e->flags & FT__F_USER_RANGE);
  }
  for (const struct ft__thread_log *l = s->logs; l; l = l->next)
    n += atomic_load_explicit(&l->published, memory_order_acquire);
  open_span *sp = malloc((n ? n : 1) * sizeof *sp);
  if (!sp) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < s->store.events.len && k < n; i++) {
    const ft__event *e = ft__vec_at(&s->store.events, i);
    if (e->kind == FT__EV_CPU_RANGE && !(e->flags & FT__F_USER_RANGE))
      sp[k++] = (open_span){e->start_ns, e->end_ns, e->external_id, e->thread_id};
  }
  for (const struct ft__thread_log *l = s->logs; l; l = l->next) {
    size_t m = atomic_load_explicit(&l->published, memory_order_acquire), j = 0;
    for (const frame_chunk *c = l->head; c && j < m; c = c->next)
      for (size_t i = 0; i < FRAMES_PER_CHUNK && j < m && k < n; i++, j++)
        sp[k++] = (open_span){c->f[i].start, end_of(&c->f[i]), c->f[i].ext, l->tid};
  }
  *n_out = k;
  return sp;
}

ft_status ft__attribute_by_thread(ft_session *s) {
  ft__vec *ev = &s->store.events;
  if (!s->store.mems.len) return FT_OK; /* no memory event: no pass over the store at stop */
  size_t nq = 0;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (ft__is_memory_kind(e->kind) && !(e->flags & FT__F_HAS_EXTERNAL))
      nq += ((const ft__mem *)ft__vec_at(&s->store.mems, e->meta_first))->thread_id != 0;
  }
  if (!nq) return FT_OK;
  size_t ns = 0;
  open_span *sp = collect_spans(s, &ns);
  mem_query *q = malloc(nq * sizeof *q);
  const open_span **stack = malloc((ns ? ns : 1) * sizeof *stack);
  if (!sp || !q || !stack) {
    free(sp), free(q), free((void *)stack);
    return FT_ENOMEM;
  }
  size_t k = 0;
  for (size_t i = 0; i < ev->len && k < nq; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__is_memory_kind(e->kind) || (e->flags & FT__F_HAS_EXTERNAL)) continue;
    uint32_t tid = ((const ft__mem *)ft__vec_at(&s->store.mems, e->meta_first))->thread_id;
    if (tid) q[k++] = (mem_query){e->start_ns, i, tid};
  }
  qsort(sp, ns, sizeof *sp, cmp_span);
  qsort(q, nq, sizeof *q, cmp_query);
  /* one sweep: per thread, the spans started by the query's time on a stack of
   * those still open (spans of a thread nest) */
  size_t si = 0, depth = 0;
  for (size_t j = 0; j < nq; j++) {
    if (j && q[j].tid != q[j - 1].tid) depth = 0;
    while (si < ns && sp[si].tid < q[j].tid) si++;
    for (; si < ns && sp[si].tid == q[j].tid && sp[si].start <= q[j].t; si++) {
      while (depth && stack[depth - 1]->end < sp[si].start) depth--; /* closed before this one opened */
      stack[depth++] = &sp[si];
    }
    while (depth && stack[depth - 1]->end < q[j].t) depth--; /* closed before the operation */
    if (!depth) continue;
    ft__event *e = ft__vec_at(ev, q[j].index);
    e->external_id = stack[depth - 1]->ext;
    e->flags |= FT__F_HAS_EXTERNAL;
  }
  free(sp), free(q), free((void *)stack);
  return FT_OK;
}
