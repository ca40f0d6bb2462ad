/* Attribution by time: pushed ids noted per thread, calls matched to them at stop. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct call_ref {
  uint64_t start, end;
  uint32_t corr;
  uint32_t event; /* index into store.events + 1; 0 for a call span */
} call_ref;

typedef struct tid_calls {
  struct ft__thread_log *log;
  call_ref *calls;
  size_t n, cap;
} tid_calls;

static int cmp_tid(const void *a, const void *b) {
  uint32_t x = ((const tid_calls *)a)->log->tid, y = ((const tid_calls *)b)->log->tid;
  return (x > y) - (x < y);
}

static int cmp_start(const void *a, const void *b) {
  const call_ref *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->end < y->end) - (x->end > y->end); /* an enclosing call first */
}

static tid_calls *find_tid(tid_calls *t, size_t n, uint32_t tid) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t[mid].log->tid < tid) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && t[lo].log->tid == tid ? &t[lo] : NULL;
}

static bool add_call(tid_calls *t, call_ref c) {
  if (t->n == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 256;
    call_ref *n = realloc(t->calls, ncap * sizeof *n);
    if (!n) return false;
    t->calls = n, t->cap = ncap;
  }
  t->calls[t->n++] = c;
  return true;
}

/* One thread: its frames (nested, in start order) swept against its calls (in
 * start order) with a stack of the frames open at each call. */
typedef struct frame_stack {
  ft__frame **f;
  size_t cap;
} frame_stack;

static ft_status sweep(ft_session *s, tid_calls *t, frame_stack *fs, ft__attribute_pair_fn pair, uint64_t *hit) {
  size_t n_frames = atomic_load_explicit(&t->log->published, memory_order_acquire), fi = 0, depth = 0, used = 0;
  frame_chunk *chunk = t->log->head;
  ft__frame **stack = fs->f;
  for (size_t i = 0; i < t->n; i++) {
    const call_ref *c = &t->calls[i];
    for (; fi < n_frames && chunk; fi++) {
      if (used == FRAMES_PER_CHUNK) chunk = chunk->next, used = 0;
      if (!chunk || chunk->f[used].start > c->start) break;
      ft__frame *f = &chunk->f[used++];
      while (depth && atomic_load_explicit(&stack[depth - 1]->end, memory_order_relaxed) < f->start) depth--;
      if (depth == fs->cap) {
        size_t ncap = fs->cap ? fs->cap * 2 : 64;
        ft__frame **n = realloc(fs->f, ncap * sizeof *n);
        if (!n) return FT_ENOMEM;
        fs->f = stack = n, fs->cap = ncap;
      }
      stack[depth++] = f;
    }
    while (depth && atomic_load_explicit(&stack[depth - 1]->end, memory_order_relaxed) < c->start) depth--;
    size_t k = depth;
    while (k && atomic_load_explicit(&stack[k - 1]->end, memory_order_relaxed) < c->end) k--;
    if (!k) continue; /* issued outside every pushed id */
    uint64_t ext = stack[k - 1]->ext;
    if (c->event) {
      ft__event *e = ft__vec_at(&s->store.events, c->event - 1);
      e->external_id = ext;
      e->flags |= FT__F_HAS_EXTERNAL;
    }
    ft_status st = pair(s, c->corr, ext);
    if (st) return st;
    ++*hit;
  }
  return FT_OK;
}

ft_status ft__timed_attribute(ft_session *s, ft__attribute_pair_fn pair) {
  size_t n_logs = 0;
  for (struct ft__thread_log *l = s->logs; l; l = l->next) n_logs++;
  if (!n_logs) return FT_OK;
  tid_calls *by_tid = calloc(n_logs, sizeof *by_tid);
  frame_stack stack = {NULL, 0};
  ft_status st = by_tid ? FT_OK : FT_ENOMEM;
  size_t i = 0;
  for (struct ft__thread_log *l = s->logs; l && !st; l = l->next) by_tid[i++].log = l;
  if (!st) qsort(by_tid, n_logs, sizeof *by_tid, cmp_tid);
  /* the calls of threads that pushed: API events without an id of their own, and
   * the spans of calls left out of the rows */
  uint64_t calls = 0, hit = 0;
  for (size_t k = 0; !st && k < s->store.events.len; k++) {
    const ft__event *e = ft__vec_at(&s->store.events, k);
    if (!ft__is_api_kind(e->kind) || (e->flags & FT__F_HAS_EXTERNAL) || !e->correlation_id) continue;
    tid_calls *t = find_tid(by_tid, n_logs, e->thread_id);
    if (t && !add_call(t, (call_ref){e->start_ns, e->end_ns, e->correlation_id, (uint32_t)k + 1})) st = FT_ENOMEM;
    calls += t != NULL;
  }
  for (size_t k = 0; !st && k < s->call_spans.len; k++) {
    const struct ft__call_span *c = ft__vec_at(&s->call_spans, k);
    tid_calls *t = find_tid(by_tid, n_logs, c->tid);
    if (t && !add_call(t, (call_ref){c->start, c->end, c->corr, 0})) st = FT_ENOMEM;
    calls += t != NULL;
  }
  for (size_t k = 0; !st && k < n_logs; k++) {
    tid_calls *t = &by_tid[k];
    size_t j = 1; /* buffers usually deliver one thread's calls in order: then no sort */
    while (j < t->n && cmp_start(&t->calls[j - 1], &t->calls[j]) <= 0) j++;
    if (j < t->n) qsort(t->calls, t->n, sizeof *t->calls, cmp_start);
    st = sweep(s, t, &stack, pair, &hit);
  }
  ft__log("attribution by time: %zu threads pushed ids; %llu of their %llu calls issued inside one", n_logs,
          (unsigned long long)hit, (unsigned long long)calls);
  for (size_t k = 0; by_tid && k < n_logs; k++) free(by_tid[k].calls);
  free(by_tid);
  free(stack.f);
  return st;
}
