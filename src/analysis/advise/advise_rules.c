/* advise's rules that are not idle causes: repeated kernel sequences (fuse), low FLOP/s ops, stragglers across ranks.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"

#define FUSE_MAX_LEN 8
#define FUSE_MIN_PER_STEP 4 /* occurrences a step, on average, for a sequence to be "often" */
#define FUSE_MAX_FINDINGS 8
/* achieved over peak below which an op is reported: under the ~5 % a well-fed fp32 GEMM
 * reaches, the dtype being unknown */
#define LOW_FLOPS_EFF 0.02

/* Idle time in [a, b) from the sorted idle gaps [ga, gb) and their prefix sums. */
static uint64_t idle_in(const int64_t *ga, const int64_t *gb, const uint64_t *pre, size_t n, int64_t a, int64_t b) {
  if (b <= a) return 0;
  size_t lo = 0, hi = n;
  while (lo < hi) { /* first gap ending after a */
    size_t mid = lo + (hi - lo) / 2;
    if (gb[mid] <= a) lo = mid + 1;
    else hi = mid;
  }
  size_t k = lo;
  hi = n;
  while (lo < hi) { /* first gap starting at or after b */
    size_t mid = lo + (hi - lo) / 2;
    if (ga[mid] < b) lo = mid + 1;
    else hi = mid;
  }
  size_t j = lo;
  if (k >= j) return 0;
  uint64_t t = pre[j] - pre[k];
  if (ga[k] < a) t -= (uint64_t)(a - ga[k]);
  if (gb[j - 1] > b) t -= (uint64_t)(gb[j - 1] - b);
  return t;
}

typedef struct fuse_ctx {
  const ft_model *m;
  uint32_t *k; /* kernels in steps, by (stream, start) */
  size_t n;
  unsigned len;
} fuse_ctx;

/* Whether a sequence starts at position p: len kernels of one stream and one step. */
static bool seq_at(const fuse_ctx *f, size_t p) {
  if (p + f->len > f->n) return false;
  const ft_model *m = f->m;
  uint32_t a = f->k[p], z = f->k[p + f->len - 1];
  return m->track[a] == m->track[z] && m->step[a] == m->step[z];
}
static uint64_t seq_hash(const fuse_ctx *f, size_t p) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned i = 0; i < f->len; i++) h = (h ^ f->m->name[f->k[p + i]]) * 1099511628211ull;
  return h | 1;
}
static bool seq_eq(const fuse_ctx *f, size_t p, size_t q) {
  for (unsigned i = 0; i < f->len; i++)
    if (f->m->name[f->k[p + i]] != f->m->name[f->k[q + i]]) return false;
  return true;
}

typedef struct seq {
  uint64_t h;
  size_t first, count, last;
  uint64_t idle;
} seq;

/* tab in a table twice its size (frees tab; NULL without memory, tab freed). */
static seq *rehash(seq *tab, size_t *n_slot) {
  size_t n = 2 * *n_slot;
  seq *t = calloc(n, sizeof *t);
  if (t)
    for (size_t i = 0; i < *n_slot; i++) {
      if (!tab[i].h) continue;
      size_t s = tab[i].h & (n - 1);
      while (t[s].h) s = (s + 1) & (n - 1);
      t[s] = tab[i];
    }
  free(tab);
  *n_slot = n;
  return t;
}

static int by_idle(const void *x, const void *y) {
  const seq *a = x, *b = y;
  if (a->idle != b->idle) return a->idle > b->idle ? -1 : 1;
  return a->first < b->first ? -1 : a->first > b->first;
}

static void seq_what(const fuse_ctx *f, size_t p, double per_step, char *out, size_t len) {
  size_t o = 0;
  for (unsigned i = 0; i < f->len && o + 1 < len; i++) {
    int w = snprintf(out + o, len - o, "%s%.32s", i ? " > " : "", ft_model_str(f->m, f->m->name[f->k[p + i]]));
    if (w < 0) break;
    o += (size_t)w;
  }
  if (o < len) snprintf(out + o, len - o, " x%.1f/step", per_step);
}

bool ft__rule_fuse(const ft_model *m, const ft_advise_opts *o, const int64_t *ga, const int64_t *gb,
                   const uint64_t *pre, size_t n_idle, ft__findings *t) {
  fuse_ctx f = {.m = m,
                .len = o->fuse_min_len < 2              ? 2
                       : o->fuse_min_len > FUSE_MAX_LEN ? FUSE_MAX_LEN
                                                        : o->fuse_min_len};
  size_t nk = 0;
  for (size_t i = 0; i < m->n; i++) nk += m->kind[i] == FT_MK_KERNEL && m->step[i] != FT_MODEL_NONE;
  if (nk < f.len || !m->n_steps) return true;
  size_t n_slot = 1024, n_used = 0; /* grown at half full: a trace repeats few sequences */
  f.k = malloc(nk * sizeof *f.k);
  seq *tab = calloc(n_slot, sizeof *tab);
  unsigned char *used = calloc(nk, 1);
  size_t *occ = malloc(nk * sizeof *occ);
  uint32_t *at = calloc(m->n_tracks + 1, sizeof *at);
  bool ok = f.k && tab && used && occ && at;
  if (!ok) goto done;
  /* by (stream, start): a stable counting sort by track of the kernels in start order */
  for (size_t i = 0; i < m->n; i++)
    if (m->kind[i] == FT_MK_KERNEL && m->step[i] != FT_MODEL_NONE) at[m->track[i] + 1]++;
  for (size_t t = 0; t < m->n_tracks; t++) at[t + 1] += at[t];
  for (size_t i = 0; i < m->n; i++)
    if (m->kind[i] == FT_MK_KERNEL && m->step[i] != FT_MODEL_NONE) f.k[at[m->track[i]]++] = (uint32_t)i;
  f.n = nk;
  /* every sequence's non-overlapping occurrences and the idle inside them */
  for (size_t p = 0; p + f.len <= f.n; p++) {
    if (!seq_at(&f, p)) continue;
    uint64_t h = seq_hash(&f, p);
    size_t s = h & (n_slot - 1);
    while (tab[s].h && !(tab[s].h == h && seq_eq(&f, tab[s].first, p))) s = (s + 1) & (n_slot - 1);
    if (!tab[s].h) {
      if (2 * (n_used + 1) > n_slot) {
        if (!(tab = rehash(tab, &n_slot))) goto oom;
        s = h & (n_slot - 1);
        while (tab[s].h) s = (s + 1) & (n_slot - 1);
      }
      tab[s] = (seq){h, p, 0, 0, 0};
      n_used++;
    } else if (p < tab[s].last) {
      continue;
    }
    tab[s].count++;
    tab[s].last = p + f.len;
    tab[s].idle += idle_in(ga, gb, pre, n_idle, m->ts[f.k[p]] + m->dur[f.k[p]], m->ts[f.k[p + f.len - 1]]);
  }
  size_t nc = 0;
  for (size_t s = 0; s < n_slot; s++)
    if (tab[s].h && tab[s].count >= FUSE_MIN_PER_STEP * m->n_steps) tab[nc++] = tab[s];
  if (nc) qsort(tab, nc, sizeof *tab, by_idle);
  /* the most costly first; a later one only over kernels no earlier one took */
  size_t found = 0;
  for (size_t c = 0; c < nc && found < FUSE_MAX_FINDINGS; c++) {
    size_t no = 0;
    for (size_t p = 0; p + f.len <= f.n; p++) {
      if (!seq_at(&f, p) || !seq_eq(&f, tab[c].first, p)) continue;
      bool free_run = true;
      for (unsigned i = 0; i < f.len; i++) free_run = free_run && !used[p + i];
      if (!free_run) continue;
      occ[no++] = p;
      p += f.len - 1;
    }
    if (no < FUSE_MIN_PER_STEP * m->n_steps) continue;
    bool is_new;
    uint32_t fi = ft__finding(t, FT_RULE_FUSE, m->name[f.k[tab[c].first]], (uint32_t)(tab[c].h >> 32), &is_new);
    if (fi == UINT32_MAX) goto oom;
    ft_advise_finding *fd = &t->f[fi];
    uint32_t op = m->op ? m->op[f.k[tab[c].first]] : FT_MODEL_NONE;
    seq_what(&f, tab[c].first, (double)no / (double)m->n_steps, fd->what, sizeof fd->what);
    const char *where = op == FT_MODEL_NONE ? "(no op)" : ft_model_str(m, m->name[op]);
    snprintf(fd->where, sizeof fd->where, "%s", strncmp(where, "ProfilerStep#", 13) ? where : "(no op)");
    snprintf(fd->suggestion, sizeof fd->suggestion, "%s",
             "fuse the sequence (torch.compile, a fused kernel) or capture the loop in a CUDA graph");
    for (size_t q = 0; q < no; q++) {
      size_t p = occ[q];
      for (unsigned i = 0; i < f.len; i++) used[p + i] = 1;
      uint32_t a = f.k[p], z = f.k[p + f.len - 1];
      uint64_t ns = idle_in(ga, gb, pre, n_idle, m->ts[a] + m->dur[a], m->ts[z]);
      if (!ft__credit_add(t, fi, m, m->step[a], a, m->ts[a], m->ts[z] + m->dur[z] - m->ts[a], ns)) goto oom;
    }
    found++;
  }
  goto done;
oom:
  ok = false;
done:
  free(f.k);
  free(tab);
  free(used);
  free(occ);
  free(at);
  return ok;
}

/* ---- low FLOP/s: matmul, conv and attention ops recorded with shapes ---- */

#define MAX_T 8
#define MAX_D 8
typedef struct shapes {
  int nt;
  int nd[MAX_T]; /* -1: not a flat list of whole numbers (a tensor list, a scalar) */
  int64_t d[MAX_T][MAX_D];
} shapes;

/* Input Dims as Python prints them: "[[8, 64], [64, 64], []]". False when not that shape. */
static bool parse_dims(const char *s, shapes *out) {
  memset(out, 0, sizeof *out);
  while (*s == ' ') s++;
  if (*s++ != '[') return false;
  for (;;) {
    while (*s == ' ' || *s == ',') s++;
    if (*s == ']') return true;
    if (out->nt == MAX_T) return true; /* the first MAX_T are enough for every formula */
    int t = out->nt++;
    if (*s != '[') { /* a scalar or a string: skip to the next top-level comma */
      out->nd[t] = -1;
      while (*s && *s != ',' && *s != ']') s++;
      continue;
    }
    s++;
    int depth = 1;
    while (depth > 0 && *s) {
      while (*s == ' ' || *s == ',') s++;
      if (*s == '[') {
        out->nd[t] = -1, depth++, s++;
      } else if (*s == ']') {
        depth--, s++;
      } else if (isdigit((unsigned char)*s)) {
        char *e;
        long long v = strtoll(s, &e, 10);
        if (out->nd[t] >= 0 && depth == 1) {
          if (out->nd[t] == MAX_D) out->nd[t] = -1;
          else out->d[t][out->nd[t]++] = v;
        }
        s = e;
      } else if (*s) {
        s++;
      }
    }
    if (!*s && depth) return false;
  }
}

static double prod(const int64_t *d, int from, int to) {
  double p = 1;
  for (int i = from; i < to; i++) p *= (double)d[i];
  return p;
}

/* FLOPs of one call from its input shapes (a multiply-add is 2); 0 when the name or
 * the shapes do not fit. Convolutions assume stride 1 and same padding (the output's
 * size is not recorded); attention counts the two forward GEMMs. */
static double op_flops(const char *name, const shapes *s) {
  if (!strncmp(name, "aten::", 6)) name += 6;
#define T(i, n) (s->nt > (i) && s->nd[i] == (n))
  if (!strcmp(name, "mm") && T(0, 2) && T(1, 2)) return 2.0 * s->d[0][0] * s->d[0][1] * s->d[1][1];
  if (!strcmp(name, "addmm") && T(1, 2) && T(2, 2)) return 2.0 * s->d[1][0] * s->d[1][1] * s->d[2][1];
  if (!strcmp(name, "bmm") && T(0, 3) && T(1, 3)) return 2.0 * s->d[0][0] * s->d[0][1] * s->d[0][2] * s->d[1][2];
  if (!strcmp(name, "baddbmm") && T(1, 3) && T(2, 3)) return 2.0 * s->d[1][0] * s->d[1][1] * s->d[1][2] * s->d[2][2];
  if (!strcmp(name, "matmul") && s->nt >= 2 && s->nd[0] >= 2 && s->nd[1] >= 2) {
    int a = s->nd[0], b = s->nd[1];
    return 2.0 * prod(s->d[0], 0, a - 2) * s->d[0][a - 2] * s->d[0][a - 1] * s->d[1][b - 1];
  }
  if (!strcmp(name, "linear") && s->nt >= 2 && s->nd[0] >= 1 && T(1, 2)) {
    int a = s->nd[0];
    return 2.0 * prod(s->d[0], 0, a - 1) * s->d[0][a - 1] * s->d[1][0];
  }
  if ((!strcmp(name, "convolution") || !strcmp(name, "_convolution") || !strcmp(name, "cudnn_convolution") ||
       !strcmp(name, "conv1d") || !strcmp(name, "conv2d") || !strcmp(name, "conv3d")) &&
      s->nt >= 2 && s->nd[0] >= 3 && s->nd[1] == s->nd[0]) {
    int r = s->nd[0]; /* x [N, C, spatial...], w [O, C/groups, kernel...] */
    return 2.0 * s->d[0][0] * s->d[1][0] * prod(s->d[1], 1, r) * prod(s->d[0], 2, r);
  }
  bool bhld = !strcmp(name, "scaled_dot_product_attention") || !strcmp(name, "_scaled_dot_product_flash_attention") ||
              !strcmp(name, "_scaled_dot_product_efficient_attention") ||
              !strcmp(name, "_scaled_dot_product_cudnn_attention");
  bool blhd = !strcmp(name, "_flash_attention_forward") || !strcmp(name, "_efficient_attention_forward");
  if ((bhld || blhd) && T(0, 4) && T(1, 4) && T(2, 4)) {
    /* q [B, H, L, E] (flash's own ops: [B, L, H, E]), k [.., S, ..], v [.., S, .., Ev] */
    double b = (double)s->d[0][0], h = (double)s->d[0][bhld ? 1 : 2], l = (double)s->d[0][bhld ? 2 : 1];
    double sk = (double)s->d[1][bhld ? 2 : 1];
    return 2.0 * b * h * l * sk * ((double)s->d[0][3] + (double)s->d[2][3]);
  }
#undef T
  return 0;
}

typedef struct lf_op {
  uint32_t slice, group; /* group: an index into the finding totals */
  double flops;
  uint64_t ns;
} lf_op;
typedef struct lf_group {
  uint32_t fi;
  double flops;
  uint64_t ns;
} lf_group;

static uint32_t str_hash32(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

bool ft__rule_low_flops(const ft_model *m, double peak, ft__findings *t) {
  if (peak <= 0) return true; /* without the device's peak there is nothing to compare with */
  lf_op *ops = NULL;
  size_t n = 0, cap = 0;
  uint32_t *slot = NULL; /* op slice -> index in ops + 1 */
  size_t n_slot = 0;
  bool ok = false;
  for (size_t i = 0; i < m->n; i++) {
    if (m->kind[i] != FT_MK_OP || m->step[i] == FT_MODEL_NONE) continue;
    struct ft_model_kernel_args a;
    shapes sh;
    if (!ft_model_kernel_args(m, i, &a) || !a.dims || !parse_dims(a.dims, &sh)) continue;
    double fl = op_flops(ft_model_str(m, m->name[i]), &sh);
    if (fl <= 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      lf_op *p = realloc(ops, cap * sizeof *p);
      if (!p) goto done;
      ops = p;
    }
    ops[n++] = (lf_op){(uint32_t)i, 0, fl, 0};
  }
  if (!n) {
    ok = true;
    goto done;
  }
  for (n_slot = 64; n_slot < n * 2; n_slot *= 2) {
  }
  if (!(slot = calloc(n_slot, sizeof *slot))) goto done;
  for (size_t k = 0; k < n; k++) {
    size_t h = (ops[k].slice * 2654435761u) & (n_slot - 1);
    while (slot[h]) h = (h + 1) & (n_slot - 1);
    slot[h] = (uint32_t)k + 1;
  }
  /* each op's device time: the work its launches made (the model's op column) */
  for (size_t i = 0; i < m->n; i++) {
    uint32_t op = m->op ? m->op[i] : FT_MODEL_NONE;
    if (!ft_model_is_device(m->kind[i]) || op == FT_MODEL_NONE) continue;
    for (size_t h = (op * 2654435761u) & (n_slot - 1); slot[h]; h = (h + 1) & (n_slot - 1))
      if (ops[slot[h] - 1].slice == op) {
        ops[slot[h] - 1].ns += (uint64_t)m->dur[i];
        break;
      }
  }
  /* per (name, shapes): an op under the threshold costs the time over what the threshold would take */
  lf_group *g = NULL;
  size_t ng = 0;
  bool fail = false;
  for (size_t k = 0; k < n; k++) {
    if (!ops[k].ns) continue;
    double eff = ops[k].flops / ((double)ops[k].ns * 1e-9) / peak;
    if (eff >= LOW_FLOPS_EFF) continue;
    struct ft_model_kernel_args a;
    ft_model_kernel_args(m, ops[k].slice, &a);
    bool is_new;
    uint32_t fi = ft__finding(t, FT_RULE_LOW_FLOPS, m->name[ops[k].slice], str_hash32(a.dims), &is_new);
    if ((fail = fi == UINT32_MAX)) break;
    size_t gi = 0;
    while (gi < ng && g[gi].fi != fi) gi++;
    if (gi == ng) {
      lf_group *p = realloc(g, (ng + 1) * sizeof *p);
      if ((fail = !p)) break;
      g = p;
      g[ng++] = (lf_group){fi, 0, 0};
    }
    g[gi].flops += ops[k].flops;
    g[gi].ns += ops[k].ns;
    uint64_t ideal = (uint64_t)(ops[k].flops / (peak * LOW_FLOPS_EFF) * 1e9);
    uint32_t sl = ops[k].slice;
    if ((fail = !ft__credit_add(t, fi, m, m->step[sl], sl, m->ts[sl], (int64_t)ops[k].ns,
                                ops[k].ns > ideal ? ops[k].ns - ideal : 0)))
      break;
    ft_advise_finding *f = &t->f[fi];
    snprintf(f->where, sizeof f->where, "%s", ft_model_str(m, m->name[sl]));
    snprintf(f->suggestion, sizeof f->suggestion, "%s",
             "batch small GEMMs, use bf16/TF32, or check the layout: the op runs far below the device's peak");
    snprintf(f->what, sizeof f->what, "%s %.100s at %.1f%% of %.0f TFLOP/s", f->where, a.dims,
             100.0 * g[gi].flops / ((double)g[gi].ns * 1e-9) / peak, peak / 1e12);
  }
  ok = !fail;
  free(g);
done:
  free(ops);
  free(slot);
  return ok;
}
