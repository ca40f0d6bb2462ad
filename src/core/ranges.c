/* CPU ranges of a session: nested ranges with external correlation, start/end ranges, user ranges. */
#define _GNU_SOURCE
#include <string.h>

#include "internal.h"

enum { MAX_DEPTH = 256 };

typedef struct range_frame {
  uint64_t gen; /* the session's: a frame of a destroyed session never matches */
  uint64_t external_id;
  uint64_t start_ns;
  uint32_t name_id;
  uint8_t pushed; /* how this frame's id was pushed (push_mode): popped the same way */
} range_frame;

static _Thread_local range_frame tls_frames[MAX_DEPTH];
static _Thread_local int tls_depth;
/* Where a push goes: nowhere (CPU-only), the tracer's per-thread stack, or the
 * session's per-thread log for attribution by time (design.md §2). A session
 * pushes every id one way, decided at start. */
enum push_mode { PUSH_NONE, PUSH_TRACER, PUSH_TIMED };

/* This thread's ft_correlation_push calls awaiting their pop, of session gen. */
static _Thread_local struct {
  uint64_t gen;
  uint64_t pushed;
  uint8_t mode;
} tls_corr;

/* framework user ranges (ft_user_range_push) open on this thread */
typedef struct user_frame {
  ft_session *session;
  uint64_t serial; /* the session's, as its address may be reused */
  uint64_t id, start_ns;
  uint32_t name_id;
} user_frame;
static _Thread_local user_frame tls_user[MAX_DEPTH];
static _Thread_local int tls_user_depth;

/* Frames of other sessions can never be recorded (one session runs at a time and
 * runs once): drop them, so they take no depth from the running session s. */
static void drop_foreign_frames(const ft_session *s) {
  int w = 0;
  for (int i = 0; i < tls_depth; i++)
    if (tls_frames[i].gen == s->gen) tls_frames[w++] = tls_frames[i];
  tls_depth = w;
}

/* How s pushes ids (design.md §2): none while its tracer is not armed (CPU-only
 * sessions count pushes and pops only). */
static uint8_t push_mode_of(const ft_session *s, bool armed) {
  if (s->parent) return PUSH_TIMED; /* attached: its own logs, matched against the parent's calls */
  return !armed ? PUSH_NONE : s->timed ? PUSH_TIMED : PUSH_TRACER;
}

static ft_status push_id(ft_session *s, uint8_t mode, uint64_t id) {
  if (mode == PUSH_TIMED) return ft__timed_push(s, id);
  return mode == PUSH_TRACER ? s->tracer->ops->push_correlation(s->tracer, id) : FT_OK;
}

static ft_status pop_id(ft_session *s, uint8_t mode) {
  if (mode == PUSH_TIMED) return ft__timed_pop(s);
  return mode == PUSH_TRACER ? s->tracer->ops->pop_correlation(s->tracer) : FT_OK;
}

ft_status ft_range_push(ft_session *s, const char *name, uint64_t *external_id) {
  if (!s || !name) return FT_EINVAL;
  uint64_t now = ft__now_ns();
  pthread_mutex_lock(&s->mu);
  if (s->state != FT__S_RUNNING) {
    pthread_mutex_unlock(&s->mu);
    return ft__session_fail(s, FT_ESTATE, "ranges can be pushed only while the session runs");
  }
  if (tls_depth && tls_frames[tls_depth - 1].gen != s->gen) drop_foreign_frames(s);
  if (tls_depth >= MAX_DEPTH) {
    pthread_mutex_unlock(&s->mu);
    return ft__session_fail(s, FT_ERANGE, "more than %d nested ranges on one thread", MAX_DEPTH);
  }
  range_frame *f = &tls_frames[tls_depth];
  ft_status st = ft__intern(&s->store.names, name, strlen(name), &f->name_id);
  uint64_t id = s->next_external_id++;
  bool armed = s->tracer_armed;
  pthread_mutex_unlock(&s->mu);
  if (st) return ft__session_fail(s, st, "recording range '%s'", name);
  f->gen = s->gen;
  f->external_id = id;
  f->start_ns = now;
  uint8_t mode = push_mode_of(s, armed);
  f->pushed = push_id(s, mode, id) == FT_OK ? mode : PUSH_NONE; /* popped only if pushed */
  tls_depth++;
  if (external_id) *external_id = id;
  return FT_OK;
}

ft_status ft_correlation_push(ft_session *s, uint64_t external_id) {
  if (!s) return FT_EINVAL;
  if (!s->running) return ft__session_fail(s, FT_ESTATE, "correlation ids can be pushed only while the session runs");
  if (tls_corr.gen != s->gen) /* another session's pushes: never popped into this one */
    tls_corr.gen = s->gen, tls_corr.pushed = 0;
  uint8_t mode = push_mode_of(s, s->tracer_armed);
  ft_status st = push_id(s, mode, external_id);
  if (st)
    return ft__session_fail(s, st, "pushing correlation id %llu: %s", (unsigned long long)external_id,
                            mode == PUSH_TRACER ? s->tracer->ops->last_error(s->tracer) : ft_strerror(st));
  tls_corr.mode = mode;
  tls_corr.pushed++;
  return FT_OK;
}

ft_status ft_correlation_pop(ft_session *s) {
  if (!s) return FT_EINVAL;
  if (tls_corr.gen != s->gen || !tls_corr.pushed)
    return ft__session_fail(s, FT_ESTATE, "no correlation id of this session pushed on this thread");
  tls_corr.pushed--;
  /* after stop too: the vendor's per-thread stack is unwound */
  return pop_id(s, tls_corr.mode);
}

ft_status ft_user_range_push(ft_session *s, uint64_t id, const char *name) {
  if (!s) return FT_EINVAL;
  /* frames another session left open (a profile that ended inside a range) are
   * stale: one session at a time uses these */
  while (tls_user_depth && tls_user[tls_user_depth - 1].serial != s->serial) tls_user_depth--;
  if (tls_user_depth >= MAX_DEPTH)
    return ft__session_fail(s, FT_ERANGE, "more than %d nested user ranges on one thread", MAX_DEPTH);
  user_frame *f = &tls_user[tls_user_depth];
  pthread_mutex_lock(&s->mu);
  ft_status st = ft__intern(&s->store.names, name ? name : "", name ? strlen(name) : 0, &f->name_id);
  pthread_mutex_unlock(&s->mu);
  if (st) return ft__session_fail(s, st, "recording a user range");
  f->session = s;
  f->serial = s->serial;
  f->id = id;
  f->start_ns = ft__now_ns();
  tls_user_depth++; /* pushed even while stopped: the pops stay balanced */
  return FT_OK;
}

ft_status ft_user_range_pop(ft_session *s) {
  if (!s) return FT_EINVAL;
  if (!tls_user_depth || tls_user[tls_user_depth - 1].serial != s->serial)
    return ft__session_fail(s, FT_ESTATE, "no open user range of this session on this thread");
  user_frame f = tls_user[--tls_user_depth];
  uint64_t now = ft__now_ns();
  ft_status st = FT_OK;
  pthread_mutex_lock(&s->mu);
  if (s->state == FT__S_RUNNING) {
    st = ft__store_add_range(&s->store, f.name_id, f.start_ns, now, f.id, ft__gettid());
    if (!st) ((ft__event *)ft__vec_at(&s->store.events, s->store.events.len - 1))->flags |= FT__F_USER_RANGE;
  }
  pthread_mutex_unlock(&s->mu);
  return st ? ft__session_fail(s, st, "recording a user range") : FT_OK;
}

ft_status ft_range_pop(ft_session *s) {
  if (!s) return FT_EINVAL;
  if (tls_depth == 0 || tls_frames[tls_depth - 1].gen != s->gen)
    return ft__session_fail(s, FT_ESTATE, "no open range of this session on this thread");
  range_frame f = tls_frames[--tls_depth];
  pop_id(s, f.pushed);
  uint64_t now = ft__now_ns();
  pthread_mutex_lock(&s->mu);
  ft_status st = FT_ESTATE;
  if (s->state == FT__S_RUNNING)
    st = ft__store_add_range(&s->store, f.name_id, f.start_ns, now, f.external_id, ft__gettid());
  pthread_mutex_unlock(&s->mu);
  if (st == FT_ESTATE) return ft__session_fail(s, st, "range closed after the session stopped; not recorded");
  if (st) return ft__session_fail(s, st, "recording a range");
  return FT_OK;
}

int ft__range_depth(const ft_session *s) {
  int n = 0;
  for (int i = 0; i < tls_depth; i++) n += tls_frames[i].gen == s->gen;
  return n;
}

ft_status ft__range_start(ft_session *s, const char *name, uint64_t *id) {
  uint64_t now = ft__now_ns();
  pthread_mutex_lock(&s->mu);
  ft_status st = FT_ESTATE;
  if (s->state == FT__S_RUNNING) {
    ft__open_range *r = ft__vec_push(&s->open_vec);
    uint64_t *slot = r ? ft__map_upsert(&s->open_ranges, s->next_external_id) : NULL;
    st = slot ? ft__intern(&s->store.names, name, strlen(name), &r->name_id) : FT_ENOMEM;
    if (!st) {
      *slot = s->open_vec.len - 1;
      r->start_ns = now;
      r->tid = ft__gettid();
      *id = s->next_external_id++;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

ft_status ft__range_end(ft_session *s, uint64_t id) {
  uint64_t now = ft__now_ns();
  pthread_mutex_lock(&s->mu);
  ft_status st = FT_ESTATE;
  uint64_t *slot = ft__map_find(&s->open_ranges, id);
  if (slot && *slot != UINT64_MAX && s->state == FT__S_RUNNING) {
    ft__open_range *r = ft__vec_at(&s->open_vec, *slot);
    st = ft__store_add_range(&s->store, r->name_id, r->start_ns, now, id, r->tid);
    *slot = UINT64_MAX; /* closed: a second end is an error */
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

ft_status ft__mark(ft_session *s, const char *name) {
  uint64_t id;
  ft_status st = ft__range_start(s, name, &id);
  return st ? st : ft__range_end(s, id);
}
