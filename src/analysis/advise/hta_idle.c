/* HTA's idle-time breakdown (host wait, kernel wait, other) per stream and per step, on the event model. */
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"

/* Stream ids in ascending order and each track's index among them (SIZE_MAX: not a
 * stream). HTA groups device work by the stream id alone. */
typedef struct groups {
  int64_t *ids;
  size_t n;
  size_t *of_track;
} groups;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static bool groups_make(const ft_model *m, groups *g) {
  memset(g, 0, sizeof *g);
  size_t nt = m->n_tracks ? m->n_tracks : 1;
  g->ids = malloc(nt * sizeof *g->ids);
  g->of_track = malloc(nt * sizeof *g->of_track);
  if (!g->ids || !g->of_track) {
    free(g->ids);
    free(g->of_track);
    return false;
  }
  for (size_t t = 0; t < m->n_tracks; t++)
    if (m->tracks[t].kind == FT_TRACK_STREAM) g->ids[g->n++] = m->tracks[t].tid;
  if (g->n) qsort(g->ids, g->n, sizeof *g->ids, cmp_i64);
  size_t k = 0;
  for (size_t i = 0; i < g->n; i++)
    if (!k || g->ids[k - 1] != g->ids[i]) g->ids[k++] = g->ids[i];
  g->n = k;
  for (size_t t = 0; t < m->n_tracks; t++) {
    g->of_track[t] = SIZE_MAX;
    if (m->tracks[t].kind != FT_TRACK_STREAM) continue;
    const int64_t *p = bsearch(&m->tracks[t].tid, g->ids, g->n, sizeof *g->ids, cmp_i64);
    g->of_track[t] = (size_t)(p - g->ids);
  }
  return true;
}

static void groups_free(groups *g) {
  free(g->ids);
  free(g->of_track);
}

/* The state of one (step, stream): the previous work's end, INT64_MIN before the first. */
typedef struct cell {
  int64_t prev_end;
  ft__hta_idle r;
} cell;

/* HTA's classification of slice i's gap after its stream's previous work
 * (_analyze_idle_time_for_stream): host wait when the launch began after that work
 * ended (a kernel with no launch in the trace never is), else kernel wait under the
 * threshold, else other. */
static void add_work(const ft_model *m, size_t i, cell *c) {
  int64_t end = m->ts[i] + m->dur[i];
  if (c->prev_end != INT64_MIN) {
    int64_t gap = m->ts[i] - c->prev_end;
    uint32_t l = m->link[i];
    if (l != FT_MODEL_NONE && m->ts[l] > c->prev_end) {
      c->r.host_ns += gap;
      c->r.n_host++;
    } else if (gap < FT_HTA_KERNEL_WAIT_NS) {
      c->r.kernel_ns += gap;
      c->r.n_kernel++;
    } else {
      c->r.other_ns += gap;
      c->r.n_other++;
    }
  }
  c->prev_end = end;
}

/* Over the whole trace (step >= n_steps, one row of cells) or every step (n_steps rows). */
static cell *pass(const ft_model *m, const groups *g, bool per_step) {
  size_t rows = per_step ? m->n_steps : 1;
  if (!rows || !g->n) return calloc(1, sizeof(cell));
  if (rows > SIZE_MAX / sizeof(cell) / g->n) return NULL;
  cell *c = calloc(rows * g->n, sizeof *c);
  if (!c) return NULL;
  for (size_t k = 0; k < rows * g->n; k++) {
    c[k].prev_end = INT64_MIN;
    c[k].r.stream = g->ids[k % g->n];
  }
  for (size_t i = 0; i < m->n; i++) {
    if (!ft_model_is_device(m->kind[i])) continue;
    size_t s = g->of_track[m->track[i]];
    if (s == SIZE_MAX) continue;
    size_t row = 0;
    if (per_step) {
      if (m->step[i] == FT_MODEL_NONE) continue;
      row = m->step[i];
    }
    add_work(m, i, &c[row * g->n + s]);
  }
  return c;
}

/* (advise_internal.h) */
bool ft__hta_idle_streams(const ft_model *m, size_t step, ft__hta_idle **out, size_t *n) {
  *out = NULL;
  *n = 0;
  groups g;
  if (!groups_make(m, &g)) return false;
  bool one = step < m->n_steps;
  cell *c = pass(m, &g, one);
  ft__hta_idle *r = malloc((g.n ? g.n : 1) * sizeof *r);
  if (!c || !r) {
    free(c);
    free(r);
    groups_free(&g);
    return false;
  }
  size_t k = 0;
  for (size_t s = 0; s < g.n; s++) {
    const cell *x = &c[(one ? step : 0) * g.n + s];
    if (x->prev_end != INT64_MIN) r[k++] = x->r; /* HTA lists the streams with work */
  }
  free(c);
  groups_free(&g);
  *out = r;
  *n = k;
  return true;
}

static uint64_t floor0(int64_t v) { return v > 0 ? (uint64_t)v : 0; }

/* (advise_internal.h) */
bool ft__hta_idle_steps(const ft_model *m, uint64_t (*out)[3]) {
  groups g;
  if (!groups_make(m, &g)) return false;
  cell *c = pass(m, &g, true);
  if (!c) {
    groups_free(&g);
    return false;
  }
  for (size_t st = 0; st < m->n_steps; st++) {
    int64_t h = 0, k = 0, o = 0;
    for (size_t s = 0; s < g.n; s++) {
      const ft__hta_idle *r = &c[st * g.n + s].r;
      h += r->host_ns;
      k += r->kernel_ns;
      o += r->other_ns;
    }
    out[st][0] = floor0(h);
    out[st][1] = floor0(k);
    out[st][2] = floor0(o);
  }
  free(c);
  groups_free(&g);
  return true;
}

/* (advise_internal.h) */
void ft__hta_idle_step(const ft_model *m, size_t step, uint64_t *host, uint64_t *kernel, uint64_t *other) {
  *host = *kernel = *other = 0;
  ft__hta_idle *r;
  size_t n;
  if (step >= m->n_steps || !ft__hta_idle_streams(m, step, &r, &n)) return;
  int64_t h = 0, k = 0, o = 0;
  for (size_t s = 0; s < n; s++) {
    h += r[s].host_ns;
    k += r[s].kernel_ns;
    o += r[s].other_ns;
  }
  free(r);
  *host = floor0(h);
  *kernel = floor0(k);
  *other = floor0(o);
}
