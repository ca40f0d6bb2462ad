/* The event model's finish: slices sorted by start, launches linked to their device work, ops and steps assigned. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* A stable sort of the build's slices by ts: perm[k] is the file position of the
 * k-th slice by start. LSD radix over 11-bit digits of ts - min (passes whose digit
 * is the same for every slice are skipped), O(n) whatever the order: traces write
 * CPU and device events in separate runs. */
typedef struct rkey {
  uint64_t k;
  uint32_t i, pad;
} rkey;
typedef struct rkey32 { /* a span below 2^32 ns (4.3 s): half the bytes moved */
  uint32_t k, i;
} rkey32;

/* One LSD pass over 11-bit digits at shift, from a into b. */
#define RADIX_PASS(a, b, n, shift, cnt)                                                        \
  do {                                                                                         \
    memset(cnt, 0, 2048 * sizeof *(cnt));                                                      \
    for (size_t i_ = 0; i_ < (n); i_++) (cnt)[((a)[i_].k >> (shift)) & 2047]++;                \
    size_t sum_ = 0;                                                                           \
    for (size_t d_ = 0; d_ < 2048; d_++) {                                                     \
      size_t c_ = (cnt)[d_];                                                                   \
      (cnt)[d_] = sum_;                                                                        \
      sum_ += c_;                                                                              \
    }                                                                                          \
    for (size_t i_ = 0; i_ < (n); i_++) (b)[(cnt)[((a)[i_].k >> (shift)) & 2047]++] = (a)[i_]; \
  } while (0)

/* The span of ts (the sort's key width): work needs 16 B a slice below 2^32 ns, else 32. */
static uint64_t ts_span(const int64_t *ts, size_t n) {
  int64_t lo = n ? ts[0] : 0, hi = lo;
  for (size_t i = 1; i < n; i++) {
    if (ts[i] < lo) lo = ts[i];
    if (ts[i] > hi) hi = ts[i];
  }
  return (uint64_t)hi - (uint64_t)lo;
}

static bool sort_by_ts(const int64_t *ts, size_t n, uint32_t *perm, void *work) {
  if (!n) return true;
  int64_t lo = ts[0], hi = ts[0];
  bool sorted = true;
  for (size_t i = 1; i < n; i++) {
    if (ts[i] < lo) lo = ts[i];
    if (ts[i] > hi) hi = ts[i];
    sorted &= ts[i] >= ts[i - 1];
  }
  if (sorted) {
    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    return true;
  }
  uint64_t span = (uint64_t)hi - (uint64_t)lo;
  bool narrow = span <= UINT32_MAX;
  size_t elem = narrow ? sizeof(rkey32) : sizeof(rkey);
  void *a = work, *b = (char *)work + n * elem;
  size_t *cnt = malloc(2048 * sizeof *cnt);
  if (!cnt) return false;
  if (narrow) {
    rkey32 *x = a, *y = b;
    for (size_t i = 0; i < n; i++) x[i] = (rkey32){(uint32_t)((uint64_t)ts[i] - (uint64_t)lo), (uint32_t)i};
    for (unsigned shift = 0; shift < 32 && (span >> shift); shift += 11) {
      RADIX_PASS(x, y, n, shift, cnt);
      rkey32 *t = x;
      x = y, y = t;
    }
    for (size_t i = 0; i < n; i++) perm[i] = x[i].i;
  } else {
    rkey *x = a, *y = b;
    for (size_t i = 0; i < n; i++) x[i] = (rkey){(uint64_t)ts[i] - (uint64_t)lo, (uint32_t)i, 0};
    for (unsigned shift = 0; shift < 64 && (span >> shift); shift += 11) {
      RADIX_PASS(x, y, n, shift, cnt);
      rkey *t = x;
      x = y, y = t;
    }
    for (size_t i = 0; i < n; i++) perm[i] = x[i].i;
  }
  free(cnt);
  return true;
}

/* ---- launches and device work, by correlation id ---- */

typedef struct cref {
  int64_t corr;
  uint32_t i; /* slice; slices are in start order, so i orders by ts (ties: file order) */
  uint32_t pad;
} cref;

static int cref_cmp(const void *a, const void *b) {
  const cref *x = a, *y = b;
  if (x->corr != y->corr) return (x->corr > y->corr) - (x->corr < y->corr);
  return (x->i > y->i) - (x->i < y->i);
}

/* Sorted by id, then start, unless already so (ids mostly grow with time: no sort then). */
static void sort_if(cref *r, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (cref_cmp(&r[i - 1], &r[i]) > 0) {
      if (n) qsort(r, n, sizeof *r, cref_cmp);
      return;
    }
}

static void link_pair(ft_model *m, uint32_t call, uint32_t work) {
  m->link[call] = work;
  m->link[work] = call;
}

/* One id's calls c[0, nc) and device work g[0, ng), in start order: stats_hta.c's
 * join_id. Each piece of work pairs with the nearest unpaired call before it, then
 * the work no call preceded with the calls left, nearest first. */
static void join_id(ft_model *m, const cref *c, size_t nc, const cref *g, size_t ng, uint32_t *stack, uint32_t *lone) {
  size_t top = 0, n_lone = 0, a = 0;
  for (size_t b = 0; b < ng; b++) {
    while (a < nc && m->ts[c[a].i] <= m->ts[g[b].i]) stack[top++] = c[a++].i;
    if (!top) lone[n_lone++] = g[b].i;
    else link_pair(m, stack[--top], g[b].i);
  }
  while (a < nc) stack[top++] = c[a++].i;
  size_t k_max = top < n_lone ? top : n_lone;
  for (size_t k = 0; k < k_max; k++) link_pair(m, stack[k], lone[n_lone - 1 - k]);
}

/* work: 16 B a slice; spare: 4 B a slice. */
static bool link_all(ft_model *m, void *work, uint32_t *spare) {
  size_t n = m->n, nc = 0, ng = 0;
  for (size_t i = 0; i < n; i++) {
    m->link[i] = FT_MODEL_NONE;
    if (m->corr32[i] == FT_MODEL_NONE) continue;
    if (ft_model_is_device(m->kind[i])) ng++;
    else if (m->kind[i] == FT_MK_RUNTIME || m->kind[i] == FT_MK_DRIVER) nc++;
  }
  if (!nc || !ng) return true;
  cref *c = work, *g = c + nc;
  uint32_t *stack = spare, *lone = spare + nc;
  {
    nc = ng = 0;
    for (size_t i = 0; i < n; i++) {
      if (m->corr32[i] == FT_MODEL_NONE) continue;
      if (ft_model_is_device(m->kind[i])) g[ng++] = (cref){ft__model_id(m, i, false), (uint32_t)i, 0};
      else if (m->kind[i] == FT_MK_RUNTIME || m->kind[i] == FT_MK_DRIVER)
        c[nc++] = (cref){ft__model_id(m, i, false), (uint32_t)i, 0};
    }
    sort_if(c, nc);
    sort_if(g, ng);
    for (size_t i = 0, j = 0; i < nc && j < ng;) {
      if (c[i].corr != g[j].corr) {
        if (c[i].corr < g[j].corr) i++;
        else j++;
        continue;
      }
      size_t i1 = i, j1 = j;
      while (i1 < nc && c[i1].corr == c[i].corr) i1++;
      while (j1 < ng && g[j1].corr == c[i].corr) j1++;
      join_id(m, c + i, i1 - i, g + j, j1 - j, stack, lone);
      i = i1, j = j1;
    }
  }
  return true;
}

/* ---- ops: the innermost op or range around a call on its thread ---- */

static _Thread_local const ft_model *cmp_m; /* for qsort's comparator: files are finished on parallel threads */
static int by_longer(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  int64_t dx = cmp_m->dur[x], dy = cmp_m->dur[y];
  if (dx != dy) return (dx < dy) - (dx > dy);
  return (x > y) - (x < y);
}

/* Each thread's slices by start, the longer first at one start (the parent, as
 * torch nests calls); a call's op is the innermost open op or range it starts
 * before the end of and does not outlast. */
/* work: 8 B a slice. */
static bool ops_on_threads(ft_model *m, uint32_t *work) {
  size_t n = m->n, nt = m->n_tracks;
  uint32_t *start = calloc(nt + 1, sizeof *start), *at = work, *stack = work + n;
  bool ok = start != NULL;
  if (!ok) goto out;
  for (size_t i = 0; i < n; i++) start[m->track[i] + 1]++;
  for (size_t t = 0; t < nt; t++) start[t + 1] += start[t];
  {
    uint32_t *fill = malloc((nt ? nt : 1) * sizeof *fill);
    if (!(ok = fill != NULL)) goto out;
    memcpy(fill, start, nt * sizeof *fill);
    for (size_t i = 0; i < n; i++) at[fill[m->track[i]]++] = (uint32_t)i;
    free(fill);
  }
  cmp_m = m;
  for (size_t t = 0; t < nt; t++) {
    if (m->tracks[t].kind != FT_TRACK_THREAD) continue;
    uint32_t *s = at + start[t];
    size_t len = start[t + 1] - start[t], depth = 0;
    for (size_t k = 0; k < len;) { /* runs of one start: the longer first */
      size_t e = k + 1;
      while (e < len && m->ts[s[e]] == m->ts[s[k]]) e++;
      if (e - k > 1) qsort(s + k, e - k, sizeof *s, by_longer);
      k = e;
    }
    for (size_t k = 0; k < len; k++) {
      uint32_t i = s[k];
      int64_t end = m->ts[i] + m->dur[i];
      while (depth) {
        uint32_t p = stack[depth - 1];
        int64_t pend = m->ts[p] + m->dur[p];
        if (m->ts[i] < pend && end <= pend) break;
        depth--;
      }
      m->op[i] = depth ? stack[depth - 1] : FT_MODEL_NONE;
      if (m->kind[i] == FT_MK_OP || m->kind[i] == FT_MK_RANGE) stack[depth++] = i;
    }
  }
out:
  free(start);
  return ok;
}

/* Work on a stream: its launch's op; without a launch, the op or range of its
 * External id (the latest in file order, as stats_ops.c's join keeps it). */
static bool ops_on_streams(ft_model *m, const uint32_t *order) {
  ft__map by_ext = {0};
  bool ok = true;
  for (size_t f = 0; ok && f < m->n; f++) {
    uint32_t i = order[f];
    if ((m->kind[i] != FT_MK_OP && m->kind[i] != FT_MK_RANGE) || m->ext32[i] == FT_MODEL_NONE) continue;
    uint64_t *v = ft__map_upsert(&by_ext, (uint64_t)ft__model_id(m, i, true));
    if (!v) ok = false;
    else *v = (uint64_t)i + 1;
  }
  for (size_t i = 0; ok && i < m->n; i++) {
    if (m->tracks[m->track[i]].kind != FT_TRACK_STREAM) continue;
    m->op[i] = FT_MODEL_NONE;
    if (m->link[i] != FT_MODEL_NONE) m->op[i] = m->op[m->link[i]];
    else if (m->ext32[i] != FT_MODEL_NONE && by_ext.len) {
      uint64_t *v = ft__map_find(&by_ext, (uint64_t)ft__model_id(m, i, true));
      if (v) m->op[i] = (uint32_t)(*v - 1);
    }
  }
  ft__map_free(&by_ext);
  return ok;
}

/* ---- steps ---- */

static bool find_steps(ft_model *m) {
  struct ft_model_priv *p = m->p;
  uint32_t want = p->step_name ? ft_model_find_str(m, p->step_name) : FT_MODEL_NONE;
  size_t n_steps = 0, cap = 0;
  ft_model_step *steps = NULL;
  for (size_t i = 0; i < m->n && (!p->step_name || want != FT_MODEL_NONE); i++) {
    if (m->kind[i] != FT_MK_RANGE) continue;
    int64_t num;
    if (p->step_name) {
      if (m->name[i] != want) continue;
      num = (int64_t)n_steps;
    } else if ((num = ft__profiler_step(ft__intern_str(&p->names, m->name[i]), ft__intern_len(&p->names, m->name[i]))) <
               0) {
      continue;
    }
    if (n_steps == cap) {
      cap = cap ? 2 * cap : 16;
      ft_model_step *g = realloc(steps, cap * sizeof *g);
      if (!g) return free(steps), false;
      steps = g;
    }
    steps[n_steps++] = (ft_model_step){num, m->ts[i], m->ts[i] + m->dur[i], (uint32_t)i};
  }
  if (!n_steps && m->n) { /* the whole trace */
    if (!(steps = malloc(sizeof *steps))) return false;
    int64_t end = m->ts[0];
    for (size_t i = 0; i < m->n; i++)
      if (m->ts[i] + m->dur[i] > end) end = m->ts[i] + m->dur[i];
    steps[0] = (ft_model_step){-1, m->ts[0], end, FT_MODEL_NONE};
    n_steps = 1;
  } else if (n_steps < cap) {
    ft_model_step *g = realloc(steps, n_steps * sizeof *g);
    if (g) steps = g;
  }
  m->steps = steps;
  m->n_steps = n_steps;
  bool whole = n_steps == 1 && steps[0].slice == FT_MODEL_NONE;
  /* slices and steps both by start: the latest step started by each slice's start */
  size_t k = 0;
  for (size_t i = 0; i < m->n; i++) {
    while (k + 1 < n_steps && steps[k + 1].start <= m->ts[i]) k++;
    m->step[i] =
        n_steps && (whole || (steps[k].start <= m->ts[i] && m->ts[i] < steps[k].end)) ? (uint32_t)k : FT_MODEL_NONE;
  }
  for (size_t i = 0; i < m->n; i++) /* linked device work: its launch's step */
    if (ft_model_is_device(m->kind[i]) && m->link[i] != FT_MODEL_NONE) m->step[i] = m->step[m->link[i]];
  return true;
}

/* ---- the columns ---- */

static int wide_cmp(const void *a, const void *b) {
  const ft__mwide *x = a, *y = b;
  if (x->slice != y->slice) return (x->slice > y->slice) - (x->slice < y->slice);
  return (x->ext > y->ext) - (x->ext < y->ext);
}

/* Shrinks a column to n entries (in place: no copy). */
#define FIT(col, n)                               \
  do {                                            \
    void *q_ = realloc(col, (n) * sizeof *(col)); \
    if (q_) col = q_;                             \
  } while (0)

ft_status ft__model_finish(ft_model *m) {
  struct ft_model_priv *p = m->p;
  size_t n = m->n, nn = n ? n : 1;
  if (!n) { /* columns of one entry, never read: every pointer is valid */
    m->ts = calloc(1, 8), m->dur = calloc(1, 8), m->arg = calloc(1, 8), m->corr32 = calloc(1, 4);
    m->ext32 = calloc(1, 4), m->name = calloc(1, 4), m->track = calloc(1, 4), m->kind = calloc(1, 1);
    p->var = calloc(1, 4);
  }
  /* one scratch buffer for the sort, the permutation, the links and the nesting: every
   * fresh page costs a fault */
  size_t work_bytes = nn * (ts_span(m->ts, n) <= UINT32_MAX ? 16 : 32);
  void *work = malloc(work_bytes);
  uint32_t *perm = malloc(nn * sizeof *perm);
  p->order = malloc(nn * sizeof *p->order);
  ft__model_huge(work, work_bytes);
  ft__model_huge(perm, nn * sizeof *perm);
  ft__model_huge(p->order, nn * sizeof *p->order);
  bool ok = work && perm && p->order && m->ts && m->dur && m->arg && m->corr32 && m->ext32 && m->name && m->track &&
            m->kind && p->var && sort_by_ts(m->ts, n, perm, work);
  bool moved = false;
  for (size_t i = 0; ok && i < n; i++) moved |= perm[i] != i;
  if (ok && moved) { /* each column gathered into one scratch buffer, then copied back */
    void *scratch = work;
#define PERMUTE(col)                                       \
  do {                                                     \
    __typeof__(*(col)) *s_ = scratch;                      \
    for (size_t i = 0; i < n; i++) s_[i] = (col)[perm[i]]; \
    memcpy(col, s_, n * sizeof *(col));                    \
  } while (0)
    PERMUTE(m->ts);
    PERMUTE(m->dur);
    PERMUTE(m->arg);
    PERMUTE(m->corr32);
    PERMUTE(m->ext32);
    PERMUTE(m->name);
    PERMUTE(m->track);
    PERMUTE(m->kind);
    PERMUTE(p->var);
#undef PERMUTE
  }
  for (size_t i = 0; ok && i < n; i++) p->order[perm[i]] = (uint32_t)i;
  for (size_t k = 0; ok && k < p->n_wide; k++) p->wide[k].slice = p->order[p->wide[k].slice];
  if (ok && p->n_wide) qsort(p->wide, p->n_wide, sizeof *p->wide, wide_cmp);
  if (ok) { /* held from now on: their exact size */
    FIT(m->ts, nn);
    FIT(m->dur, nn);
    FIT(m->arg, nn);
    FIT(m->corr32, nn);
    FIT(m->ext32, nn);
    FIT(m->name, nn);
    FIT(m->track, nn);
    FIT(m->kind, nn);
    FIT(p->var, nn);
    p->cap = n;
    if (p->n_wide < p->cap_wide) {
      FIT(p->wide, p->n_wide ? p->n_wide : 1);
      p->cap_wide = p->n_wide;
    }
    if (m->n_tracks < p->cap_tracks) {
      FIT(m->tracks, m->n_tracks ? m->n_tracks : 1);
      p->cap_tracks = m->n_tracks;
    }
  }
  m->link = malloc(nn * sizeof *m->link), m->op = malloc(nn * sizeof *m->op), m->step = malloc(nn * sizeof *m->step);
  ft__model_huge(m->link, nn * sizeof *m->link);
  ft__model_huge(m->op, nn * sizeof *m->op);
  ft__model_huge(m->step, nn * sizeof *m->step);
  ok = ok && m->link && m->op && m->step && link_all(m, work, perm) && ops_on_threads(m, work) &&
       ops_on_streams(m, p->order) && find_steps(m) && !ft__model_mem_finish(m);
  ft__map_free(&p->unk_index);
  memset(&p->unk_index, 0, sizeof p->unk_index);
  if (ok) { /* the variants' and tracks' lookup tables: no more adds */
    free(p->vars.table), p->vars.table = NULL, p->vars.tcap = 0;
    free(p->tkeys.table), p->tkeys.table = NULL, p->tkeys.tcap = 0;
  }
  free(perm);
  free(work);
  return ok ? FT_OK : FT_ENOMEM;
}
