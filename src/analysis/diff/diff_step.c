/* diff --by-step: steps paired by number or position, each pair's top-level ops aligned by name in call order. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_step.h"

#define NONE FT_MODEL_NONE
/* Edits Myers' search may take in one thread's ops before the rest is paired by
 * position: its trace holds about MAX_D^2 4-byte entries (4 MiB). */
#define MAX_D 1024

/* One side: per step, its top-level ops in start order; per top-level op, the device
 * time and count of the work it (and the ops under it) launched. */
typedef struct side {
  const ft_model *m;
  bool whole;        /* one step: the whole trace */
  size_t n_steps;    /* 1 when whole */
  uint64_t *dev_ns;  /* per slice, non-zero on top-level ops only */
  uint32_t *kernels; /* per slice: device work launched under it */
  uint32_t *tops;    /* top-level ops by step, each step's in start order */
  size_t *at;        /* per step: its first entry in tops; [n_steps]: the end */
  int64_t *wall;     /* per step, ns */
  uint64_t *dev;     /* per step: device work that started in it, ns */
} side;

/* The outermost op around slice i (i itself when it is one), through ranges. */
static uint32_t top_of(const ft_model *m, uint32_t i) {
  uint32_t t = NONE;
  for (int depth = 0; i != NONE && i < m->n && depth < 4096; depth++, i = m->op[i])
    if (m->kind[i] == FT_MK_OP) t = i;
  return t;
}

static bool model_whole(const ft_model *m) { return !m->n_steps || (m->n_steps == 1 && m->steps[0].slice == NONE); }

static uint32_t step_of(const side *s, size_t i) { return s->whole ? 0 : s->m->step[i]; }

static void side_free(side *s) {
  free(s->dev_ns);
  free(s->kernels);
  free(s->tops);
  free(s->at);
  free(s->wall);
  free(s->dev);
}

static bool side_init(side *s, const ft_model *m, bool whole) {
  memset(s, 0, sizeof *s);
  s->m = m;
  s->whole = whole || model_whole(m);
  s->n_steps = s->whole ? 1 : m->n_steps;
  size_t n = m->n ? m->n : 1;
  s->dev_ns = calloc(n, sizeof *s->dev_ns);
  s->kernels = calloc(n, sizeof *s->kernels);
  s->tops = malloc(n * sizeof *s->tops);
  s->at = calloc(s->n_steps + 1, sizeof *s->at);
  s->wall = calloc(s->n_steps, sizeof *s->wall);
  s->dev = calloc(s->n_steps, sizeof *s->dev);
  if (!s->dev_ns || !s->kernels || !s->tops || !s->at || !s->wall || !s->dev) return false;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < m->n; i++) {
    if (m->ts[i] < lo) lo = m->ts[i];
    if (m->ts[i] + m->dur[i] > hi) hi = m->ts[i] + m->dur[i];
    uint32_t k = step_of(s, i);
    if (ft_model_is_device(m->kind[i])) {
      if (k != NONE && k < s->n_steps) s->dev[k] += (uint64_t)m->dur[i];
      uint32_t t = m->op[i] == NONE ? NONE : top_of(m, m->op[i]);
      if (t != NONE) s->dev_ns[t] += (uint64_t)m->dur[i], s->kernels[t]++;
    } else if (m->kind[i] == FT_MK_OP && k != NONE && k < s->n_steps && top_of(m, (uint32_t)i) == i) {
      s->at[k + 1]++;
    }
  }
  if (s->whole) s->wall[0] = m->n ? hi - lo : 0;
  else
    for (size_t k = 0; k < s->n_steps; k++) s->wall[k] = m->steps[k].end - m->steps[k].start;
  for (size_t k = 0; k < s->n_steps; k++) s->at[k + 1] += s->at[k];
  size_t *fill = malloc((s->n_steps + 1) * sizeof *fill);
  if (!fill) return false;
  memcpy(fill, s->at, (s->n_steps + 1) * sizeof *fill);
  for (size_t i = 0; i < m->n; i++) {
    uint32_t k = step_of(s, i);
    if (m->kind[i] == FT_MK_OP && k != NONE && k < s->n_steps && top_of(m, (uint32_t)i) == i)
      s->tops[fill[k]++] = (uint32_t)i;
  }
  free(fill);
  return true;
}

/* A step's top-level ops grouped by thread (threads in the order of their first op
 * in the step), each thread's in start order. */
typedef struct seqs {
  uint32_t *ops;
  size_t n, *gat, ng; /* group g is ops[gat[g], gat[g + 1]) */
} seqs;

static bool by_thread(const side *s, size_t k, uint32_t *grp, seqs *q) {
  const uint32_t *in = s->tops + s->at[k];
  size_t n = s->at[k + 1] - s->at[k];
  q->n = n, q->ng = 0;
  q->ops = malloc((n ? n : 1) * sizeof *q->ops);
  q->gat = calloc(n + 2, sizeof *q->gat);
  if (!q->ops || !q->gat) return false;
  for (size_t i = 0; i < n; i++) {
    uint32_t t = s->m->track[in[i]];
    if (grp[t] == NONE) grp[t] = (uint32_t)q->ng++;
    q->gat[grp[t] + 1]++;
  }
  for (size_t g = 0; g < q->ng; g++) q->gat[g + 1] += q->gat[g];
  size_t *fill = malloc((q->ng + 1) * sizeof *fill);
  if (!fill) return false;
  memcpy(fill, q->gat, (q->ng + 1) * sizeof *fill);
  for (size_t i = 0; i < n; i++) q->ops[fill[grp[s->m->track[in[i]]]]++] = in[i];
  for (size_t i = 0; i < n; i++) grp[s->m->track[in[i]]] = NONE; /* ready for the next step */
  free(fill);
  return true;
}

/* Pairs x[0, n) with y[0, m) on equal keys as a shortest edit script does (Myers'
 * O(ND) search, after the common head and tail): mx[i] = j and my[j] = i, NONE where
 * unpaired. Past MAX_D edits the middle is paired by position where keys agree. */
static bool align(const uint64_t *x, size_t n, const uint64_t *y, size_t m, uint32_t *mx, uint32_t *my) {
  for (size_t i = 0; i < n; i++) mx[i] = NONE;
  for (size_t j = 0; j < m; j++) my[j] = NONE;
  size_t p = 0, q = 0;
  while (p < n && p < m && x[p] == y[p]) mx[p] = (uint32_t)p, my[p] = (uint32_t)p, p++;
  while (q < n - p && q < m - p && x[n - 1 - q] == y[m - 1 - q])
    mx[n - 1 - q] = (uint32_t)(m - 1 - q), my[m - 1 - q] = (uint32_t)(n - 1 - q), q++;
  const uint64_t *a = x + p, *b = y + p;
  int64_t N = (int64_t)(n - p - q), M = (int64_t)(m - p - q);
  if (!N || !M) return true;
  int64_t max = N + M < MAX_D ? N + M : MAX_D;
  int32_t *v = calloc((size_t)(2 * max + 3), sizeof *v), *tr = NULL;
  if (!v) return false;
  int32_t *V = v + max + 1; /* V[k], k in [-max - 1, max + 1] */
  int64_t found = -1;
  size_t cap = 0;
  for (int64_t d = 0; d <= max && found < 0; d++) {
    size_t need = (size_t)((d + 1) * (d + 1) + 2 * (d + 1)); /* snapshots 0..d: V[-e-1, e+1] before step e */
    if (need > cap) {
      size_t nc = cap ? 2 * cap : 1024;
      while (nc < need) nc *= 2;
      int32_t *t = realloc(tr, nc * sizeof *t);
      if (!t) return free(v), free(tr), false;
      tr = t, cap = nc;
    }
    memcpy(tr + d * d + 2 * d, V - d - 1, (size_t)(2 * d + 3) * sizeof *V);
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t xx = k == -d || (k != d && V[k - 1] < V[k + 1]) ? V[k + 1] : V[k - 1] + 1, yy = xx - k;
      while (xx < N && yy < M && a[xx] == b[yy]) xx++, yy++;
      V[k] = (int32_t)xx;
      if (xx >= N && yy >= M) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) { /* too different: the middle by position */
    for (int64_t i = 0; i < N && i < M; i++)
      if (a[i] == b[i]) mx[p + i] = (uint32_t)(p + i), my[p + i] = (uint32_t)(p + i);
  } else {
    int64_t xx = N, yy = M;
    for (int64_t d = found; d >= 0; d--) {
      const int32_t *T = tr + d * d + 2 * d + d + 1; /* T[k]: V[k] before step d */
      int64_t k = xx - yy;
      int64_t pk = k == -d || (k != d && T[k - 1] < T[k + 1]) ? k + 1 : k - 1;
      int64_t px = d ? T[pk] : 0, py = d ? px - pk : 0;
      while (xx > px && yy > py) {
        xx--, yy--;
        mx[p + xx] = (uint32_t)(p + yy), my[p + yy] = (uint32_t)(p + xx);
      }
      xx = px, yy = py;
    }
  }
  free(v);
  free(tr);
  return true;
}

/* Breaks in an alignment: each maximal run of unpaired entries between pairs. */
static uint64_t breaks(const uint32_t *mx, size_t n, const uint32_t *my, size_t m) {
  uint64_t c = 0;
  bool gap = false;
  for (size_t i = 0, j = 0; i < n || j < m;) {
    if (i < n && j < m && mx[i] == j) {
      i++, j++, gap = false;
      continue;
    }
    if (!gap) c++, gap = true;
    if (i < n && mx[i] == NONE) i++;
    else j++;
  }
  (void)my;
  return c;
}

static const ft_col steps_cols[] = {{"step", "Step", COL_I64, 5},
                                    {"a_us", "A(us)", COL_F3, 14},
                                    {"b_us", "B(us)", COL_F3, 14},
                                    {"ratio", "B/A", COL_F3, 8},
                                    {"delta_us", "Delta(us)", COL_F3, 14},
                                    {"device_a_us", "Dev A(us)", COL_F3, 14},
                                    {"device_b_us", "Dev B(us)", COL_F3, 14},
                                    {"device_ratio", "Dev B/A", COL_F3, 8},
                                    {"ops_a", "Ops A", COL_U64, 7},
                                    {"ops_b", "Ops B", COL_U64, 7},
                                    {"ops_matched", "Aligned", COL_U64, 7},
                                    {"resyncs", "Breaks", COL_U64, 6},
                                    {"a_name", "A step", COL_STR, -16},
                                    {"b_name", "B step", COL_STR, 0}};
static const ft_col ops_cols[] = {{"step", "Step", COL_I64, 5},
                                  {"device_a_us", "Dev A(us)", COL_F3, 14},
                                  {"device_b_us", "Dev B(us)", COL_F3, 14},
                                  {"device_ratio", "Dev B/A", COL_F3, 8},
                                  {"cpu_a_us", "CPU A(us)", COL_F3, 14},
                                  {"cpu_b_us", "CPU B(us)", COL_F3, 14},
                                  {"cpu_ratio", "CPU B/A", COL_F3, 8},
                                  {"kernels_a", "Kern A", COL_U64, 6},
                                  {"kernels_b", "Kern B", COL_U64, 6},
                                  {"thread", "Thr", COL_I64, 3},
                                  {"a_pos", "A#", COL_I64, 5},
                                  {"b_pos", "B#", COL_I64, 5},
                                  {"name", "Name", COL_STR, 0}};
static const ft_col unmatched_cols[] = {
    {"step", "Step", COL_I64, 5},      {"side", "Side", COL_STR, -4},   {"device_us", "Dev(us)", COL_F3, 14},
    {"cpu_us", "CPU(us)", COL_F3, 14}, {"kernels", "Kern", COL_U64, 6}, {"thread", "Thr", COL_I64, 3},
    {"pos", "#", COL_I64, 5},          {"name", "Name", COL_STR, 0}};

/* A new row of report r (zeroed), NULL without memory. */
static ft_cell *add_row(ft_diff_step *d, int r) {
  ft_report *rep = &d->reps[r];
  size_t w = (size_t)rep->n_cols;
  if (rep->n_rows == d->cap[r]) {
    size_t cap = d->cap[r] ? 2 * d->cap[r] : 64;
    ft_cell *c = realloc(rep->cells, cap * w * sizeof *c);
    if (!c) return NULL;
    rep->cells = c, d->cap[r] = cap;
  }
  ft_cell *c = rep->cells + rep->n_rows++ * w;
  memset(c, 0, w * sizeof *c);
  return c;
}

static double ratio(double a, double b) { return a > 0 ? b / a : 0; }
static double us(uint64_t ns) { return (double)ns / 1000.0; }

typedef struct cand {
  uint32_t a, b; /* slices */
  uint32_t g, pa, pb;
  uint64_t change;
} cand;
static int by_change(const void *x, const void *y) {
  const cand *p = x, *q = y;
  if (p->change != q->change) return p->change < q->change ? 1 : -1;
  if (p->g != q->g) return p->g < q->g ? -1 : 1;
  return p->pa < q->pa ? -1 : p->pa > q->pa;
}
static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

static bool unmatched_row(ft_diff_step *d, const side *s, int sd, int64_t step, uint32_t sl, size_t g, size_t pos) {
  ft_cell *c = add_row(d, FT_DSTEP_UNMATCHED);
  if (!c) return false;
  c[0].i = step;
  c[1].s = sd ? "B" : "A";
  c[2].d = us(s->dev_ns[sl]);
  c[3].d = us((uint64_t)s->m->dur[sl]);
  c[4].u = s->kernels[sl];
  c[5].i = (int64_t)g;
  c[6].i = (int64_t)pos + 1;
  c[7].s = ft_model_str(s->m, s->m->name[sl]);
  return true;
}

/* Step pair (ka of A, kb of B; NONE: missing) as row `row` (from 1) of each report. */
static bool pair_step(ft_diff_step *d, const side sd[2], uint32_t ka, uint32_t kb, int64_t row, uint32_t *grp[2],
                      const ft_diff_step_opts *o, uint64_t *ops, uint64_t *matched, uint64_t *resyncs) {
  seqs q[2] = {{0}, {0}};
  uint32_t k[2] = {ka, kb};
  bool ok = true;
  for (int s = 0; s < 2 && ok; s++)
    if (k[s] != NONE) ok = by_thread(&sd[s], k[s], grp[s], &q[s]);
  size_t ng = q[0].ng > q[1].ng ? q[0].ng : q[1].ng;
  cand *cs = NULL;
  size_t nc = 0, cap = 0;
  for (size_t g = 0; g < ng && ok; g++) {
    size_t n[2];
    const uint32_t *ops_of[2];
    for (int s = 0; s < 2; s++) {
      n[s] = g < q[s].ng ? q[s].gat[g + 1] - q[s].gat[g] : 0;
      ops_of[s] = g < q[s].ng ? q[s].ops + q[s].gat[g] : NULL;
      ops[s] += n[s];
    }
    uint64_t *key[2] = {malloc((n[0] + 1) * sizeof(uint64_t)), malloc((n[1] + 1) * sizeof(uint64_t))};
    uint32_t *mt[2] = {malloc((n[0] + 1) * sizeof(uint32_t)), malloc((n[1] + 1) * sizeof(uint32_t))};
    ok = key[0] && key[1] && mt[0] && mt[1];
    for (size_t i = 0; ok && i < n[0]; i++) key[0][i] = sd[0].m->name[ops_of[0][i]];
    for (size_t j = 0; ok && j < n[1]; j++) { /* B's names as A's ids; a name A lacks matches nothing */
      uint32_t id = sd[1].m->name[ops_of[1][j]];
      uint32_t in_a = ft_model_find_str(sd[0].m, ft_model_str(sd[1].m, id));
      key[1][j] = in_a != NONE ? in_a : (1ull << 32) | id;
    }
    ok = ok && align(key[0], n[0], key[1], n[1], mt[0], mt[1]);
    if (ok) *resyncs += breaks(mt[0], n[0], mt[1], n[1]);
    for (size_t i = 0; ok && i < n[0]; i++) {
      if (mt[0][i] == NONE) continue;
      if (nc == cap) {
        cap = cap ? 2 * cap : 64;
        cand *t = realloc(cs, cap * sizeof *t);
        if (!(ok = t != NULL)) break;
        cs = t;
      }
      uint32_t a = ops_of[0][i], b = ops_of[1][mt[0][i]];
      uint64_t dc = absdiff((uint64_t)sd[0].m->dur[a], (uint64_t)sd[1].m->dur[b]);
      uint64_t dd = absdiff(sd[0].dev_ns[a], sd[1].dev_ns[b]);
      cs[nc++] = (cand){a, b, (uint32_t)g, (uint32_t)i, mt[0][i], dd > dc ? dd : dc};
    }
    for (int s = 0; s < 2; s++)
      for (size_t i = 0; ok && i < n[s]; i++)
        if (mt[s][i] == NONE) ok = unmatched_row(d, &sd[s], s, row, ops_of[s][i], g, i);
    for (int s = 0; s < 2; s++) free(key[s]), free(mt[s]);
  }
  *matched += nc;
  if (ok && nc) qsort(cs, nc, sizeof *cs, by_change);
  size_t keep = o->limit && o->limit < nc ? o->limit : nc;
  for (size_t i = 0; ok && i < keep; i++) {
    ft_cell *c = add_row(d, FT_DSTEP_OPS);
    if (!(ok = c != NULL)) break;
    const cand *x = &cs[i];
    double dv[2] = {us(sd[0].dev_ns[x->a]), us(sd[1].dev_ns[x->b])};
    double cpu[2] = {us((uint64_t)sd[0].m->dur[x->a]), us((uint64_t)sd[1].m->dur[x->b])};
    c[0].i = row;
    c[1].d = dv[0], c[2].d = dv[1], c[3].d = ratio(dv[0], dv[1]);
    c[4].d = cpu[0], c[5].d = cpu[1], c[6].d = ratio(cpu[0], cpu[1]);
    c[7].u = sd[0].kernels[x->a], c[8].u = sd[1].kernels[x->b];
    c[9].i = x->g, c[10].i = (int64_t)x->pa + 1, c[11].i = (int64_t)x->pb + 1;
    c[12].s = ft_model_str(sd[0].m, sd[0].m->name[x->a]);
  }
  free(cs);
  for (int s = 0; s < 2; s++) free(q[s].ops), free(q[s].gat);
  return ok;
}

static const char *step_name(const side *s, uint32_t k) {
  if (k == NONE) return "";
  if (s->whole) return "(whole trace)";
  uint32_t sl = s->m->steps[k].slice;
  return sl == NONE ? "(whole trace)" : ft_model_str(s->m, s->m->name[sl]);
}

/* Steps of A and B by number: the order of each side's numbers. */
typedef struct num_ix {
  int64_t num;
  uint32_t k;
} num_ix;
static int by_num(const void *x, const void *y) {
  const num_ix *p = x, *q = y;
  if (p->num != q->num) return p->num < q->num ? -1 : 1;
  return p->k < q->k ? -1 : p->k > q->k;
}

/* The step pairs (pa[i], pb[i]; NONE: that side has none), how they were paired. */
static bool pair_steps(const side sd[2], uint32_t **pa, uint32_t **pb, size_t *np, int *by, bool user) {
  size_t n0 = sd[0].n_steps, n1 = sd[1].n_steps;
  *pa = malloc((n0 + n1 + 1) * sizeof **pa);
  *pb = malloc((n0 + n1 + 1) * sizeof **pb);
  num_ix *x[2] = {malloc((n0 + 1) * sizeof(num_ix)), malloc((n1 + 1) * sizeof(num_ix))};
  bool ok = *pa && *pb && x[0] && x[1];
  *np = 0;
  if (ok && (sd[0].whole || sd[1].whole)) {
    *by = FT_DSTEP_WHOLE;
    (*pa)[0] = (*pb)[0] = 0;
    *np = 1;
  } else if (ok) {
    for (int s = 0; s < 2; s++) {
      for (uint32_t k = 0; k < sd[s].n_steps; k++) x[s][k] = (num_ix){sd[s].m->steps[k].number, k};
      if (sd[s].n_steps) qsort(x[s], sd[s].n_steps, sizeof(num_ix), by_num);
    }
    /* by number when neither side repeats one and one side's numbers are all the other's */
    bool dup = false;
    size_t common = 0;
    for (int s = 0; s < 2; s++)
      for (size_t i = 1; i < sd[s].n_steps; i++) dup |= x[s][i].num == x[s][i - 1].num;
    for (size_t i = 0, j = 0; i < n0 && j < n1;) {
      if (x[0][i].num == x[1][j].num) common++, i++, j++;
      else if (x[0][i].num < x[1][j].num) i++;
      else j++;
    }
    *by = !user && !dup && common == (n0 < n1 ? n0 : n1) ? FT_DSTEP_BY_NUMBER : FT_DSTEP_BY_POSITION;
    if (*by == FT_DSTEP_BY_NUMBER) {
      for (size_t i = 0, j = 0; i < n0 || j < n1;) {
        bool take_a = i < n0 && (j >= n1 || x[0][i].num <= x[1][j].num);
        bool take_b = j < n1 && (i >= n0 || x[1][j].num <= x[0][i].num);
        (*pa)[*np] = take_a ? x[0][i++].k : NONE;
        (*pb)[*np] = take_b ? x[1][j++].k : NONE;
        ++*np;
      }
    } else { /* the k-th in start order with the k-th */
      for (size_t k = 0; k < n0 || k < n1; k++, ++*np) {
        (*pa)[*np] = k < n0 ? (uint32_t)k : NONE;
        (*pb)[*np] = k < n1 ? (uint32_t)k : NONE;
      }
    }
  }
  free(x[0]);
  free(x[1]);
  return ok;
}

const char *ft_diff_step_by_name(int by) {
  return by == FT_DSTEP_BY_NUMBER ? "number" : by == FT_DSTEP_BY_POSITION ? "position" : "whole";
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return FT_EINVAL;
}

ft_status ft_diff_step_build(ft_diff_step *d, const ft_model *a, const ft_model *b, const ft_diff_step_opts *o,
                             char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  const ft_model *m[2] = {a, b};
  if (!o->whole && o->step && (model_whole(a) || model_whole(b)))
    return fail(err, errlen, "%s has no range named '%s' (--step; ranges are user_annotation events)",
                model_whole(a) ? "A" : "B", o->step);
  if (!o->whole && model_whole(a) != model_whole(b)) {
    int has = model_whole(a) ? 1 : 0;
    return fail(err, errlen,
                "%s has %zu ProfilerStep ranges and %s none: they cannot be aligned by step (--step all compares "
                "the whole traces)",
                has ? "B" : "A", m[has]->n_steps, has ? "A" : "B");
  }
  side sd[2];
  uint32_t *pa = NULL, *pb = NULL, *grp[2] = {NULL, NULL};
  size_t np = 0;
  bool ok0 = side_init(&sd[0], a, o->whole), ok1 = side_init(&sd[1], b, o->whole); /* both: both are freed */
  bool ok = ok0 && ok1;
  ok = ok && pair_steps(sd, &pa, &pb, &np, &d->by, o->step != NULL);
  for (int s = 0; s < 2 && ok; s++) {
    d->steps[s] = sd[s].n_steps;
    grp[s] = malloc((m[s]->n_tracks + 1) * sizeof *grp[s]);
    if (!(ok = grp[s] != NULL)) break;
    for (size_t t = 0; t < m[s]->n_tracks; t++) grp[s][t] = NONE;
  }
  static const struct {
    const char *key, *title;
    const ft_col *cols;
    int n;
  } reps[FT_DSTEP_N] = {
      {"steps", "steps, A vs B (wall time of each step, device time of the work that started in it)", steps_cols, 14},
      {"ops", "ops of each step aligned in call order: the ones whose time changed most", ops_cols, 13},
      {"unmatched", "ops of a step only in A or only in B (a name mismatch: the alignment resyncs after it)",
       unmatched_cols, 8}};
  for (int r = 0; r < FT_DSTEP_N; r++)
    d->reps[r] = (ft_report){reps[r].key, reps[r].title, reps[r].cols, reps[r].n, NULL, 0, NULL, NULL, NULL};
  d->ops_at = calloc(np + 1, sizeof *d->ops_at);
  d->unmatched_at = calloc(np + 1, sizeof *d->unmatched_at);
  ok = ok && d->ops_at && d->unmatched_at;
  for (size_t i = 0; ok && i < np; i++) {
    uint64_t ops[2] = {0, 0}, matched = 0, resyncs = 0;
    d->ops_at[i] = d->reps[FT_DSTEP_OPS].n_rows;
    d->unmatched_at[i] = d->reps[FT_DSTEP_UNMATCHED].n_rows;
    ok = pair_step(d, sd, pa[i], pb[i], (int64_t)i + 1, grp, o, ops, &matched, &resyncs);
    ft_cell *c = ok ? add_row(d, FT_DSTEP_STEPS) : NULL;
    if (!(ok = c != NULL)) break;
    double wall[2] = {0, 0}, dev[2] = {0, 0};
    uint32_t k[2] = {pa[i], pb[i]};
    for (int s = 0; s < 2; s++)
      if (k[s] != NONE) wall[s] = us((uint64_t)sd[s].wall[k[s]]), dev[s] = us(sd[s].dev[k[s]]);
    c[0].i = (int64_t)i + 1;
    c[1].d = wall[0], c[2].d = wall[1], c[3].d = ratio(wall[0], wall[1]), c[4].d = wall[1] - wall[0];
    c[5].d = dev[0], c[6].d = dev[1], c[7].d = ratio(dev[0], dev[1]);
    c[8].u = ops[0], c[9].u = ops[1], c[10].u = matched, c[11].u = resyncs;
    c[12].s = step_name(&sd[0], k[0]), c[13].s = step_name(&sd[1], k[1]);
    d->ops[0] += ops[0], d->ops[1] += ops[1], d->ops_matched += matched, d->resyncs += resyncs;
    d->steps_matched += k[0] != NONE && k[1] != NONE;
  }
  if (ok) {
    d->ops_at[np] = d->reps[FT_DSTEP_OPS].n_rows;
    d->unmatched_at[np] = d->reps[FT_DSTEP_UNMATCHED].n_rows;
  }
  free(pa);
  free(pb);
  for (int s = 0; s < 2; s++) free(grp[s]), side_free(&sd[s]);
  if (!ok) {
    ft_diff_step_free(d);
    return FT_ENOMEM;
  }
  return FT_OK;
}

void ft_diff_step_free(ft_diff_step *d) {
  for (int r = 0; r < FT_DSTEP_N; r++) {
    free(d->reps[r].cells);
    d->reps[r].cells = NULL;
  }
  free(d->ops_at);
  free(d->unmatched_at);
  d->ops_at = d->unmatched_at = NULL;
}
