/* Sessions that share the vendor's activity API: one attached to record's whole-run
 * session, stopped stretches of collection, another client taking the API over. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Attaches s to the running session p (record's), which records the whole process:
 * s reads its window from p at stop. False (s runs CPU-only, device_why says why)
 * when p's tracer cannot hand a window over, or another session is attached. */
bool ft__session_attach(ft_session *s, ft_session *p) {
  const ft_tracer_ops *ops = p->tracer->ops;
  const char *why = NULL;
  bool expected = false;
  if (!p->tracer_armed) why = "its tracer is not armed";
  else if (!ops->flush || !p->timed) why = "its tracer cannot hand a window over (no flush, or calls not on our clock)";
  else if (!atomic_compare_exchange_strong(&p->has_child, &expected, true)) why = "another session is attached to it";
  if (why) {
    s->device_status = FT_EBUSY;
    snprintf(s->device_why, sizeof s->device_why,
             "the process's device activity is recorded by flagtrace record, and this session cannot share it: %s",
             why);
    ft__warn("%s", s->device_why);
    return false;
  }
  pthread_mutex_lock(&p->mu);
  s->parent_events_from = p->store.events.len;
  s->parent_spans_from = p->call_spans.len;
  pthread_mutex_unlock(&p->mu);
  s->parent_dropped_from = ops->dropped_records(p->tracer);
  s->parent = p;
  unsigned missing = s->activities & ~p->activities;
  if (missing & FT_ACTIVITY_SYNC) /* the parent's kinds were armed at its start */
    ft__warn(
        "this profile asked for synchronization events, which flagtrace record was not asked to record "
        "(record -t ...,sync): it has none");
  s->timed = true; /* ids by this session's own pushes, against the parent's calls */
  ft__log("session attached to record's whole-run session: its window is read from there at stop");
  return true;
}

/* An attached session's window (attach): the parent's tracer delivers what has
 * completed, then the parent's events and left-out calls that arrived since our
 * start and lie inside our window are copied (a record arrives after its work
 * ended, so nothing of our window sits before parent_events_from). The parent's
 * own ids are not ours: copies carry none. */
ft_status ft__session_read_parent(ft_session *s) {
  ft_session *p = s->parent;
  const ft_tracer_ops *ops = p->tracer->ops;
  pthread_mutex_lock(&ft__tracer_mu);
  ft_status st = p->tracer_armed && ops->flush ? ops->flush(p->tracer) : FT_OK;
  pthread_mutex_unlock(&ft__tracer_mu);
  if (st) ft__warn("flushing record's session for this profile: %s (its last records may be missing)", ft_strerror(st));
  uint64_t dropped = ops->dropped_records(p->tracer);
  s->dropped = dropped >= s->parent_dropped_from ? dropped - s->parent_dropped_from : dropped;
  ft_kv *kv = NULL;
  size_t kv_cap = 0;
  st = FT_OK;
  pthread_mutex_lock(&p->mu);
  const ft__store *ps = &p->store;
  for (size_t i = s->parent_events_from; i < ps->events.len && !st; i++) {
    const ft__event *e = ft__vec_at(&ps->events, i);
    if (e->kind == FT__EV_CPU_RANGE || !(s->activities & FT_KIND_BIT(e->kind)) ||
        !ft__in_window(e, s->window_lo_ns, s->window_hi_ns))
      continue;
    ft_device_event ev;
    if ((st = ft__store_view(ps, e, &kv, &kv_cap, &ev))) break;
    ev.has_external_id = false; /* the parent's ids are not ours */
    pthread_mutex_lock(&s->mu);
    st = ft__store_add_device(&s->store, &ev);
    pthread_mutex_unlock(&s->mu);
  }
  for (size_t i = s->parent_spans_from; i < p->call_spans.len && !st; i++) {
    const struct ft__call_span *c = ft__vec_at(&p->call_spans, i);
    if (c->start < s->window_lo_ns || c->start > s->window_hi_ns) continue;
    struct ft__call_span *d = ft__vec_push(&s->call_spans);
    if (d) *d = *c;
    else st = FT_ENOMEM;
  }
  uint64_t lost = p->lost_ns;
  if (lost && lost <= s->window_hi_ns && !s->lost_ns) {
    s->lost_ns = lost < s->window_lo_ns ? s->window_lo_ns : lost;
    snprintf(s->lost_why, sizeof s->lost_why, "%s", p->lost_why);
  }
  pthread_mutex_unlock(&p->mu);
  free(kv);
  atomic_store(&p->has_child, false);
  return st;
}

static bool paused_at(const ft_session *s, uint64_t t) {
  for (size_t i = 0; i < s->n_pauses; i++)
    if (t >= s->pauses[i].lo && t < s->pauses[i].hi) return true;
  return false;
}

/* ft_session_set_collecting's stopped intervals, applied at stop (under s->mu): the
 * calls made in one go, with the device work they launched; device work without a
 * recorded launch goes by its own start. */
ft_status ft__session_apply_pauses(ft_session *s) {
  if (!s->n_pauses) return FT_OK;
  ft__map paused, called;
  if (ft__map_init(&paused, 64)) return FT_ENOMEM;
  if (ft__map_init(&called, 1024)) {
    ft__map_free(&paused);
    return FT_ENOMEM;
  }
  ft_status st = FT_OK;
  ft__vec *ev = &s->store.events;
  for (size_t i = 0; i < ev->len && !st; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__is_api_kind(e->kind) || !e->correlation_id) continue;
    if (!ft__map_upsert(paused_at(s, e->start_ns) ? &paused : &called, e->correlation_id)) st = FT_ENOMEM;
  }
  size_t w = 0;
  for (size_t i = 0; i < ev->len && !st; i++) {
    ft__event *e = ft__vec_at(ev, i);
    bool drop = false;
    if (ft__is_api_kind(e->kind)) {
      drop = paused_at(s, e->start_ns);
    } else if (ft__on_device_row(e->kind) || ft__is_memory_kind(e->kind)) { /* made by a call, as device work */
      bool launched_paused = e->correlation_id && ft__map_find(&paused, e->correlation_id);
      bool launched = e->correlation_id && ft__map_find(&called, e->correlation_id);
      drop = launched_paused || (!launched && paused_at(s, e->start_ns));
    }
    if (drop) {
      s->paused_left_out++;
      continue;
    }
    if (w != i) *(ft__event *)ft__vec_at(ev, w) = *e;
    w++;
  }
  if (!st) ev->len = w;
  ft__map_free(&paused);
  ft__map_free(&called);
  if (s->paused_left_out)
    ft__log("%llu events left out: collection was stopped then (ft_session_set_collecting)",
            (unsigned long long)s->paused_left_out);
  return st;
}

ft_status ft_session_set_collecting(ft_session *s, int collecting) {
  if (!s) return FT_EINVAL;
  uint64_t now = ft__now_ns();
  ft_status st = FT_OK;
  pthread_mutex_lock(&s->mu);
  bool open = s->n_pauses && s->pauses[s->n_pauses - 1].hi == UINT64_MAX;
  if (s->state != FT__S_RUNNING) {
    st = FT_ESTATE;
  } else if (!collecting && !open) {
    if (s->n_pauses == s->cap_pauses) {
      size_t ncap = s->cap_pauses ? 2 * s->cap_pauses : 8;
      struct ft__pause *n = realloc(s->pauses, ncap * sizeof *n);
      if (n) s->pauses = n, s->cap_pauses = ncap;
    }
    if (s->n_pauses < s->cap_pauses) s->pauses[s->n_pauses++] = (struct ft__pause){now, UINT64_MAX};
    else st = FT_ENOMEM;
  } else if (collecting && open) {
    s->pauses[s->n_pauses - 1].hi = now;
  }
  pthread_mutex_unlock(&s->mu);
  if (st == FT_ESTATE)
    return ft__session_fail(s, st, "collection can be stopped or resumed only while the session runs");
  if (st) return ft__session_fail(s, st, "stopping collection");
  return FT_OK;
}

void ft__session_accept_attach(ft_session *s) { s->accepts_attach = true; }

void ft__session_set_lost(ft_session *s, uint64_t at, const char *why) {
  pthread_mutex_lock(&s->mu);
  if (!s->lost_ns) {
    s->lost_ns = at ? at : 1;
    snprintf(s->lost_why, sizeof s->lost_why, "%s", why);
  }
  pthread_mutex_unlock(&s->mu);
}

void ft__session_relinquish(ft_session *s, const char *who) {
  uint64_t now = ft__now_ns();
  pthread_mutex_lock(&ft__tracer_mu);
  bool armed = s->tracer_armed && s->state == FT__S_RUNNING;
  const ft_tracer_ops *ops = s->tracer->ops;
  if (armed && ops->relinquish) ops->relinquish(s->tracer);
  pthread_mutex_unlock(&ft__tracer_mu);
  if (!armed) return;
  char why[512];
  snprintf(why, sizeof why,
           "%s took over the %s activity API; flagtrace stepped aside then, so the program keeps "
           "running and its own profiler works",
           who, ops->name);
  ft__session_set_lost(s, now, why);
}

int ft_session_device_lost(const ft_session *s, uint64_t *at_ns, const char **why) {
  if (!s || !s->lost_ns) return 0;
  if (at_ns) *at_ns = s->lost_ns;
  if (why) *why = s->lost_why;
  return 1;
}
