/* The table form of a report: columns sized by their content and fitted to a width, names elided in the middle and kept
 * distinct. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "stats_out.h"

/* A narrow table leaves columns out in this order: a column goes when a word of
 * its key (between '_') is the entry's, when its key starts with an entry that
 * ends in '_', or is an entry that starts with '='. The spare columns go first,
 * while the name column would get less than NAME_WANT: a row's spread (StdDev,
 * Min, Max, Med, diff's means, averages), the trace's launch details (registers,
 * block, grid, stream, bytes), per-rank extras, ops' CPU total and memory, diff's
 * CPU times and bandwidths. The needed ones (needed_order) only while it would
 * get less than NAME_MIN: Self CUDA Mem, Device total, diff's deltas, then counts
 * and calls. Names, totals, ratios and kinds are never left out. A column goes
 * with its family (the keys alike but for an _a/_b or _x/_y/_z word: Calls A and
 * Calls B, BlkX/BlkY/BlkZ), never one of a pair alone. docs/stats.md lists the
 * order per report; --help states it. */
static const char *const spare_order[] = {
    "stddev", "min", "max", "median", "mean", "avg", "registers", "block", "grid", "stream", "=bytes", "devices",
    "events", "span", "compute",
    /* the ops' memory (issue 51) and CPU totals */
    "=cpu_mem_bytes", "=self_cpu_mem_bytes", "=device_mem_bytes", "cpu_total_",
    /* diff: CPU times, bandwidths (the ratio stays); --by-step: how and where ops were aligned */
    "=cpu_a_us", "gbps", "resyncs", "ops_matched", "=ops_a", "=cpu_ratio", "thread", "pos"};
/* the needed ones: only while the name column would get less than NAME_MIN */
static const char *const needed_order[] = {
    "=self_device_mem_bytes", "device_total_", "=delta_us", "=a_name", "count", "calls"};
#define NEEDED ((int)(sizeof spare_order / sizeof *spare_order)) /* a drop rank from here on: a needed column */
#define N_DROP (NEEDED + (int)(sizeof needed_order / sizeof *needed_order))

static bool has_word(const char *key, const char *w) {
  size_t n = strlen(w);
  for (const char *p = key; (p = strstr(p, w)); p++)
    if ((p == key || p[-1] == '_') && (p[n] == '\0' || p[n] == '_')) return true;
  return false;
}

static int drop_rank(const char *key) {
  for (int i = 0; i < N_DROP; i++) {
    const char *d = i < NEEDED ? spare_order[i] : needed_order[i - NEEDED];
    size_t n = strlen(d);
    bool hit = d[0] == '=' ? !strcmp(key, d + 1) : d[n - 1] == '_' ? !strncmp(key, d, n) : has_word(key, d);
    if (hit) return i;
  }
  return -1;
}

/* A side or axis word of a key: a, b (diff's sides), x, y, z (a launch's axes). */
static bool side_word(const char *p, size_t n) { return n == 1 && strchr("abxyz", *p); }

/* Whether keys a and b are one family: the same words once side and axis words are
 * left out, and at least one such word in each. */
static bool same_family(const char *a, const char *b) {
  bool sa = false, sb = false;
  for (;;) {
    size_t na = strcspn(a, "_"), nb = strcspn(b, "_");
    while (side_word(a, na)) sa = true, a += na + (a[na] == '_'), na = strcspn(a, "_");
    while (side_word(b, nb)) sb = true, b += nb + (b[nb] == '_'), nb = strcspn(b, "_");
    if (!*a || !*b) return !*a && !*b && sa && sb;
    if (na != nb || memcmp(a, b, na)) return false;
    a += na + (a[na] == '_'), b += nb + (b[nb] == '_');
  }
}

/* Characters in s[0..n): what a terminal shows of UTF-8 (escapes are ASCII). */
static size_t chars(const char *s, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
  return c;
}

static bool hex(const char *s, int n) {
  for (int i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i])) return false; /* the NUL stops it too */
  return true;
}

/* Bytes of the shown unit at s: one character, or one escape (\n, \x1b, \u009b),
 * which a cut never splits. */
static size_t unit_len(const char *s) {
  if (s[0] == '\\') {
    if (s[1] == 'n' || s[1] == 'r' || s[1] == 't') return 2;
    if (s[1] == 'x' && hex(s + 2, 2)) return 4;
    if (s[1] == 'u' && hex(s + 2, 4)) return 6;
  }
  size_t n = 1;
  while (s[n] && ((unsigned char)s[n] & 0xC0) == 0x80) n++;
  return n;
}

/* A name too wide for its column: its shown text in units, and the cut form. */
typedef struct cname {
  const char *s;
  size_t len, n;
  size_t *at, *col; /* unit i starts at byte at[i], after col[i] columns; [n]: the end */
  char *out;
  size_t uh, ut; /* cut2's: out is units [0, uh) ... [ut, n) */
} cname;

static int cname_init(cname *c, const char *s) {
  c->s = s;
  c->len = strlen(s);
  c->n = 0;
  for (size_t i = 0; i < c->len; i += unit_len(s + i)) c->n++;
  c->at = malloc(2 * (c->n + 1) * sizeof *c->at);
  c->out = malloc(c->len + 8);
  if (!c->at || !c->out) return -1;
  c->col = c->at + c->n + 1;
  size_t i = 0, b = 0, w = 0;
  for (; b < c->len; i++) {
    size_t u = unit_len(s + b);
    c->at[i] = b;
    c->col[i] = w;
    w += chars(s + b, u);
    b += u;
  }
  c->at[i] = b;
  c->col[i] = w;
  return 0;
}

/* The most units from the start within w columns, and the fewest-start tail within w. */
static size_t head_units(const cname *c, size_t w) {
  size_t lo = 0, hi = c->n; /* the largest k with col[k] <= w */
  while (lo < hi) {
    size_t m = (lo + hi + 1) / 2;
    if (c->col[m] <= w) lo = m;
    else hi = m - 1;
  }
  return lo;
}

static size_t tail_units(const cname *c, size_t w) {
  size_t lo = 0, hi = c->n; /* the smallest k with col[n] - col[k] <= w */
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (c->col[c->n] - c->col[m] <= w) hi = m;
    else lo = m + 1;
  }
  return lo;
}

#define ELL "..."
#define ELL_W 3

static char *put(char *o, const cname *c, size_t from, size_t to) {
  memcpy(o, c->s + c->at[from], c->at[to] - c->at[from]);
  return o + (c->at[to] - c->at[from]);
}

/* head...tail in budget columns (width - 3), the head given h of them: what a
 * side cannot use (an escape does not fit) goes to the other side. */
static void cut2(cname *c, size_t budget, size_t h) {
  size_t uh = head_units(c, h);
  size_t ut = tail_units(c, budget - c->col[uh]);
  uh = head_units(c, budget - (c->col[c->n] - c->col[ut]));
  c->uh = uh, c->ut = ut;
  char *o = put(c->out, c, 0, uh);
  memcpy(o, ELL, ELL_W);
  o = put(o + ELL_W, c, ut, c->n);
  *o = '\0';
}

/* head...window...tail in budget columns (width - 6): the window shows the units
 * from b, where the name first differs from the one most like it. False (nothing
 * written) when the window would reach the tail: a difference at the end. */
static bool cut3(cname *c, size_t budget, size_t b) {
  size_t ww = budget / 3 ? budget / 3 : 1, h = (budget - ww + 1) / 2, t = budget - ww - h;
  size_t uh = head_units(c, h), ut = tail_units(c, t);
  size_t ub = b > uh ? b : uh, ue = ub;
  while (ue < c->n && c->col[ue + 1] - c->col[ub] <= ww) ue++;
  if (ut <= ue) return false;
  char *o = put(c->out, c, 0, uh);
  if (ub > uh) memcpy(o, ELL, ELL_W), o += ELL_W;
  o = put(o, c, ub, ue);
  memcpy(o, ELL, ELL_W), o += ELL_W;
  o = put(o, c, ut, c->n);
  *o = '\0';
  return true;
}

static int by_out(const void *a, const void *b) { return strcmp((*(cname *const *)a)->out, (*(cname *const *)b)->out); }
static int by_text(const void *a, const void *b) { return strcmp((*(cname *const *)a)->s, (*(cname *const *)b)->s); }

static bool distinct(cname **g, size_t n) {
  qsort(g, n, sizeof *g, by_out);
  for (size_t i = 1; i < n; i++)
    if (!strcmp(g[i - 1]->out, g[i]->out)) return false;
  return true;
}

/* The unit where a and b first differ. */
static size_t first_diff(const cname *a, const cname *b) {
  size_t p = 0;
  while (a->s[p] && a->s[p] == b->s[p]) p++;
  size_t lo = 0, hi = a->n; /* the unit holding byte p */
  while (lo < hi) {
    size_t m = (lo + hi + 1) / 2;
    if (a->at[m] <= p) lo = m;
    else hi = m - 1;
  }
  return lo;
}

static bool taken(cname *const *g, size_t n, const char *out) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(g[i]->out, out)) return true;
  return false;
}

/* Whether c's cut2 tells it from the other names of g: none of them starts with
 * its head and ends with its tail (a cut that fits both would read as either). */
static bool telling(cname *const *g, size_t n, const cname *c) {
  size_t hb = c->at[c->uh], tb = c->len - c->at[c->ut];
  for (size_t i = 0; i < n; i++) {
    const cname *m = g[i];
    if (m == c || m->len < hb + tb) continue;
    if (!memcmp(m->s, c->s, hb) && !memcmp(m->s + m->len - tb, c->s + c->at[c->ut], tb)) return false;
  }
  return true;
}

/* Names that read the same cut: first another split, the same for all of them
 * (template arguments differ at the end, namespaces at the start); else each its
 * own split, the first from the middle out that fits no other of them; else, for
 * a difference in the middle, a window where it differs from its nearest. What
 * the width cannot tell apart stays as close as it allows. */
#define GREEDY_MAX 256 /* names a group tries one by one (quadratic) */
static void separate(cname **g, size_t n, size_t width) {
  size_t budget = width - ELL_W, h0 = (budget + 1) / 2;
  for (size_t d = 1; d <= budget; d++) {
    for (int sign = 0; sign < 2; sign++) {
      if (sign ? d > h0 : h0 + d > budget) continue;
      for (size_t i = 0; i < n; i++) cut2(g[i], budget, sign ? h0 - d : h0 + d);
      if (distinct(g, n)) return;
    }
  }
  qsort(g, n, sizeof *g, by_text);
  size_t *at = malloc(n * sizeof *at);
  if (!at) return;
  for (size_t i = 0; i < n; i++) {
    size_t a = i ? first_diff(g[i], g[i - 1]) : 0, b = i + 1 < n ? first_diff(g[i], g[i + 1]) : 0;
    at[i] = a > b ? a : b;
  }
  for (size_t i = 0; i < n; i++) {
    bool ok = false;
    for (size_t d = 0; n <= GREEDY_MAX && !ok && d <= budget; d++)
      for (int sign = 0; !ok && sign < 2; sign++) {
        if ((sign ? d > h0 : h0 + d > budget) || (sign && !d)) continue;
        cut2(g[i], budget, sign ? h0 - d : h0 + d);
        ok = telling(g, n, g[i]);
      }
    if (ok) continue;
    /* a window at the difference, a few units before it; the default cut where it
     * cannot be had or reads as one before it (too narrow to tell them apart) */
    size_t b3 = width - 2 * ELL_W, ctx = b3 / 9;
    if (width < 2 * ELL_W + 3 || !cut3(g[i], b3, at[i] > ctx ? at[i] - ctx : 0) || taken(g, i, g[i]->out))
      cut2(g[i], budget, h0);
  }
  free(at);
}

typedef struct wide_row {
  const char *s;
  size_t row;
} wide_row;
static int by_row_text(const void *a, const void *b) {
  return strcmp(((const wide_row *)a)->s, ((const wide_row *)b)->s);
}

/* The cut names of a table: every shown name wider than width (at least 4) cut
 * to it, distinct names kept distinct; outs[row] is NULL for a name shown whole. */
typedef struct cuts {
  cname *c;
  size_t n;
} cuts;

static void cuts_free(cuts *k) {
  for (size_t i = 0; i < k->n; i++) free(k->c[i].at), free(k->c[i].out);
  free(k->c);
}

static int cut_names(cuts *k, const char *const *shown, size_t rows, size_t width, const char **outs) {
  memset(k, 0, sizeof *k);
  size_t n = 0;
  wide_row *w = malloc((rows + 1) * sizeof *w);
  if (!w) return -1;
  for (size_t i = 0; i < rows; i++) {
    outs[i] = NULL;
    if (chars(shown[i], strlen(shown[i])) > width) w[n++] = (wide_row){shown[i], i};
  }
  /* one cut per distinct name: the same name reads the same on every row */
  qsort(w, n, sizeof *w, by_row_text);
  cname **p = malloc((n + 1) * sizeof *p);
  k->c = calloc(n + 1, sizeof *k->c);
  int rc = p && k->c ? 0 : -1;
  size_t *of = rc ? NULL : malloc((n + 1) * sizeof *of);
  if (!of) rc = -1;
  for (size_t i = 0; !rc && i < n; i++) {
    if (!i || strcmp(w[i].s, w[i - 1].s)) {
      if (cname_init(&k->c[k->n], w[i].s)) rc = -1;
      k->n++; /* freed by cuts_free even when half made */
    }
    of[i] = k->n - 1;
  }
  for (size_t i = 0; !rc && i < k->n; i++) {
    cut2(&k->c[i], width - ELL_W, (width - ELL_W + 1) / 2);
    p[i] = &k->c[i];
  }
  if (!rc) {
    /* a few rounds: names moved apart in one group may meet those of another */
    for (int round = 0, again = 1; again && round < 4; round++) {
      again = 0;
      qsort(p, k->n, sizeof *p, by_out);
      for (size_t i = 0; i < k->n;) {
        size_t e = i + 1;
        while (e < k->n && !strcmp(p[e]->out, p[i]->out)) e++;
        if (e - i > 1) separate(p + i, e - i, width), again = 1; /* reorders p[i..e) only */
        i = e;
      }
    }
    for (size_t i = 0; i < n; i++) outs[w[i].row] = k->c[of[i]].out;
  }
  free(of);
  free(p);
  free(w);
  return rc;
}

/* ---- shapes: Input Dims cut by whole entries ---- */

/* The end of the list or atom at s[0..n): past its closing ']' (depth counted), or
 * at the next top-level ','. */
static size_t entry_end(const char *s, size_t n) {
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '[') depth++;
    else if ((s[i] == ']' && --depth < 0) || (s[i] == ',' && !depth)) return i;
  }
  return n;
}

/* Whether s is a list as torch writes Input Dims: balanced brackets around
 * entries ", "-separated, printable ASCII only (a cut counts bytes as columns). */
static bool is_shape(const char *s, size_t n) {
  if (n < 2 || s[0] != '[' || s[n - 1] != ']') return false;
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < 0x20 || s[i] > 0x7e) return false;
    depth += (s[i] == '[') - (s[i] == ']');
    if (depth < 0 || (!depth && i + 1 < n)) return false;
  }
  return !depth;
}

/* The list s[0..n) (a shape) in at most budget columns into out: whole entries from
 * the start and ",...]" for the rest ("[[4096, 1024],...]"); where not one fits,
 * the first cut the same way inside ("[[[1024, 512],...],...]"); "[...]" at the least.
 * Brackets stay balanced. The bytes written, 0 when not even "[...]" fits. */
static size_t shape_cut(const char *s, size_t n, size_t budget, char *out) {
  if (n <= budget) return memcpy(out, s, n), n;
  if (budget < 5) return 0;
  const char *in = s + 1, *end = s + n - 1;
  size_t kept = 1, e = entry_end(in, (size_t)(end - in)); /* "[" so far; the first entry's length */
  out[0] = '[';
  bool any = false;
  /* whole entries while one fits with what must follow it: "]" after the last, else ", ...]" */
  for (; in < end; any = true) {
    e = entry_end(in, (size_t)(end - in));
    if (kept + (any ? 2 : 0) + e + (in + e >= end ? 1 : 5) > budget) break;
    if (any) memcpy(out + kept, ", ", 2), kept += 2;
    memcpy(out + kept, in, e), kept += e;
    for (in += e; in < end && (*in == ',' || *in == ' ');) in++;
  }
  if (any) return memcpy(out + kept, ",...]", 5), kept + 5;
  bool only = in + e >= end; /* the one entry: "]" after it, else ", ...]" */
  size_t tail = only ? 1 : 5, first = 0;
  if (*in == '[' && budget > 1 + tail) first = shape_cut(in, e, budget - 1 - tail, out + 1);
  bool number = false;
  for (size_t i = 1; i <= first; i++) number |= out[i] >= '0' && out[i] <= '9';
  if (first && number) { /* it keeps a number */
    memcpy(out + 1 + first, only ? "]" : ",...]", tail);
    return 1 + first + tail;
  }
  return memcpy(out, "[...]", 5), 5;
}

/* ---- the writer ---- */

#define NAME_WANT 40 /* columns are left out before the name column gets less */
#define NAME_MIN 16  /* and it never gets less, whatever the width */
#define FREE_WANT 24 /* free text before the name (shapes) is cut to this */
#define FREE_MIN 20  /* and to this where the line is still too wide (a shape: "[[4096, 1024],...]") */

/* s as the table shows it (control characters escaped): s, or *heap (freed by the caller). */
static const char *shown_text(const char *s, char **heap) {
  *heap = NULL;
  if (!ft__visible_changes(s)) return s;
  size_t n = ft__visible(NULL, 0, s);
  if (!(*heap = malloc(n + 1))) return NULL;
  ft__visible(*heap, n + 1, s);
  return *heap;
}

static void pad(FILE *f, size_t n) {
  while (n--) fputc(' ', f);
}

/* A free text column (a string column of no set width: names, files, shapes): its
 * cells as shown, and their cut forms. */
typedef struct freecol {
  const char **shown, **outs;
  char **heap;
  char **shape; /* Input Dims cut by whole entries (shape_cut), per row; NULL: outs' */
  cuts k;
  size_t full; /* the widest cell, or the title */
} freecol;

static void freecol_free(freecol *c, size_t rows) {
  cuts_free(&c->k);
  for (size_t i = 0; c->heap && i < rows; i++) free(c->heap[i]);
  for (size_t i = 0; c->shape && i < rows; i++) free(c->shape[i]);
  free(c->heap);
  free(c->shape);
  free(c->outs);
  free(c->shown);
}

/* Input Dims too wide for their column: each list cut by whole entries (shape_cut)
 * in place of cut_names' middle cut, which would split a list in two. */
static int cut_shapes(freecol *c, const ft_col *col, size_t rows, size_t width) {
  if (strcmp(col->key, "input_dims")) return 0;
  if (!(c->shape = calloc(rows + 1, sizeof *c->shape))) return -1;
  for (size_t i = 0; i < rows; i++) {
    size_t n = strlen(c->shown[i]);
    if (n <= width || !is_shape(c->shown[i], n)) continue;
    if (!(c->shape[i] = malloc(width + 1))) return -1;
    size_t k = shape_cut(c->shown[i], n, width, c->shape[i]);
    c->shape[i][k] = '\0';
    if (k) c->outs[i] = c->shape[i];
  }
  return 0;
}

static bool is_free(const ft_col *col) { return col->kind == COL_STR && !col->width; }

static size_t title_w(const ft_report *rep, int j, const ft_table_opts *o) {
  char buf[128];
  ft_col_label(buf, sizeof buf, &rep->cols[j], o->unit, false);
  return chars(buf, strlen(buf));
}

/* Columns kept: widths and separators (one space; two before free text). */
static size_t line_width(const ft_report *rep, const size_t *w, const bool *drop, int except) {
  size_t used = 0;
  bool first = true;
  for (int j = 0; j < rep->n_cols; j++) {
    if (drop[j] || j == except) continue;
    used += w[j] + (is_free(&rep->cols[j]) ? 2 : first ? 0 : 1);
    first = false;
  }
  return used;
}

/* Leaves out the next column whose drop rank is in [from, to), with its family;
 * false when none is left. */
static bool drop_next(const ft_report *rep, bool *drop, int name, int from, int to, size_t *n_drop) {
  int best = -1, rank = to;
  for (int j = 0; j < rep->n_cols; j++) {
    int r = j == name || drop[j] ? -1 : drop_rank(rep->cols[j].key);
    if (r >= from && r < rank) best = j, rank = r;
  }
  if (best < 0) return false;
  for (int j = 0; j < rep->n_cols; j++)
    if (j == best || (!drop[j] && j != name && same_family(rep->cols[j].key, rep->cols[best].key)))
      drop[j] = true, ++*n_drop;
  return true;
}

int ft_report_table(FILE *f, const ft_report *rep, const ft_table_opts *o) {
  int nc = rep->n_cols, name = -1;
  size_t rows = rep->n_rows;
  size_t *w = calloc((size_t)nc + 1, sizeof *w);
  bool *drop = calloc((size_t)nc + 1, sizeof *drop);
  freecol *fc = calloc((size_t)nc + 1, sizeof *fc);
  int rc = w && drop && fc ? 0 : -1;
  char buf[128];
  /* every column as wide as its title and its widest cell; the last free one is the name */
  for (int j = 0; !rc && j < nc; j++) {
    const ft_col *col = &rep->cols[j];
    ft_col_label(buf, sizeof buf, col, o->unit, false);
    w[j] = chars(buf, strlen(buf));
    if (!is_free(col)) continue;
    name = j;
    fc[j].shown = calloc(rows + 1, sizeof *fc[j].shown);
    fc[j].outs = calloc(rows + 1, sizeof *fc[j].outs);
    fc[j].heap = calloc(rows + 1, sizeof *fc[j].heap);
    if (!fc[j].shown || !fc[j].outs || !fc[j].heap) rc = -1;
  }
  for (int j = 0; !rc && j < nc; j++) /* a column without a title is csv's and json's only */
    drop[j] = !rep->cols[j].title[0];
  for (size_t i = 0; !rc && i < rows; i++) {
    const ft_cell *row = rep->cells + i * (size_t)nc;
    for (int j = 0; !rc && j < nc; j++) {
      const ft_col *col = &rep->cols[j];
      if (drop[j]) continue;
      size_t n;
      if (col->kind == COL_STR) {
        char *h;
        const char *s = shown_text(row[j].s, &h);
        if (!s) rc = -1;
        n = s ? chars(s, strlen(s)) : 0;
        if (is_free(col)) fc[j].shown[i] = s, fc[j].heap[i] = h;
        else free(h);
      } else {
        ft_col tmp;
        ft_cell_text(buf, sizeof buf, ft_report_cell_col(rep, i, j, &tmp), row[j], o->unit);
        n = strlen(buf);
      }
      if (n > w[j]) w[j] = n;
    }
  }
  if (rc) goto done; /* out of memory: nothing below may touch w, drop or fc */
  /* fitting a width: free text other than the name gets FREE_WANT at most; columns
   * are left out in spare_order then needed_order while the name column would get less than
   * it wants; then the name column takes what is left */
  size_t name_w = name >= 0 ? w[name] : 0;
  for (int j = 0; j < nc; j++) fc[j].full = w[j];
  for (int j = 0; o->width && j < name; j++)
    if (is_free(&rep->cols[j]) && w[j] > FREE_WANT)
      w[j] = title_w(rep, j, o) > FREE_WANT ? title_w(rep, j, o) : FREE_WANT;
  if (name >= 0 && o->name_width && o->name_width < name_w) name_w = o->name_width;
  size_t want = name < 0 ? 0 : 2 + (o->name_width ? name_w : name_w < NAME_WANT ? name_w : NAME_WANT);
  size_t used = line_width(rep, w, drop, name), n_drop = 0;
  /* the spare columns while the name would get less than it wants */
  while (!rc && o->width && used + want > o->width && drop_next(rep, drop, name, 0, NEEDED, &n_drop))
    used = line_width(rep, w, drop, name);
  /* still too wide: the other free text gives up to FREE_MIN or its title */
  size_t least = name < 0 ? 0 : 2 + (name_w < NAME_MIN ? name_w : NAME_MIN);
  for (int j = 0; o->width && j < name && used + least > o->width; j++) {
    size_t floor = title_w(rep, j, o) > FREE_MIN ? title_w(rep, j, o) : FREE_MIN;
    if (drop[j] || !is_free(&rep->cols[j]) || w[j] <= floor) continue;
    size_t over = used + least - o->width;
    w[j] = w[j] - floor > over ? w[j] - over : floor;
    used = line_width(rep, w, drop, name);
  }
  /* then the needed ones, while the name would get less than NAME_MIN */
  while (!rc && o->width && used + least > o->width && drop_next(rep, drop, name, NEEDED, N_DROP, &n_drop))
    used = line_width(rep, w, drop, name);
  if (name >= 0 && o->width && !o->name_width) {
    size_t left = o->width > used + 2 ? o->width - used - 2 : 0;
    if (left < NAME_MIN) left = NAME_MIN;
    if (left < name_w) name_w = left;
  }
  if (name >= 0) w[name] = name_w;
  /* room the name does not need goes back to the other free text (whole shapes) */
  size_t line = line_width(rep, w, drop, -1);
  for (int j = 0; o->width && j < name && line < o->width; j++)
    if (!drop[j] && is_free(&rep->cols[j]) && w[j] < fc[j].full) {
      size_t more = fc[j].full - w[j] < o->width - line ? fc[j].full - w[j] : o->width - line;
      w[j] += more, line += more;
    }
  for (int j = 0; !rc && j < nc; j++)
    if (!drop[j] && is_free(&rep->cols[j]) && w[j] < fc[j].full)
      rc = cut_names(&fc[j].k, fc[j].shown, rows, w[j], fc[j].outs) || cut_shapes(&fc[j], &rep->cols[j], rows, w[j]);
  if (rc) goto done;
  for (int j = 0; j < name; j++) /* shapes cut by whole entries may all come out narrower */
    if (fc[j].shape) {
      size_t most = title_w(rep, j, o);
      for (size_t i = 0; i < rows; i++) {
        const char *t = fc[j].outs[i] ? fc[j].outs[i] : fc[j].shown[i];
        if (chars(t, strlen(t)) > most) most = chars(t, strlen(t));
      }
      if (most < w[j]) w[j] = most;
    }
  size_t tw = chars(rep->title, strlen(rep->title));
  if (o->width && tw + 6 > o->width && o->width > 6 + ELL_W) { /* a long title: its start */
    size_t keep = o->width - 6 - ELL_W, b = 0;
    for (size_t c = 0; rep->title[b] && c < keep; c++) b += unit_len(rep->title + b);
    fprintf(f, "== %.*s" ELL " ==\n", (int)b, rep->title);
  } else {
    fprintf(f, "== %s ==\n", rep->title);
  }
  for (size_t i = 0; i <= rows; i++) { /* i == 0: the titles */
    const ft_cell *row = i ? rep->cells + (i - 1) * (size_t)nc : NULL;
    bool first = true;
    for (int j = 0; j < nc; j++) {
      const ft_col *col = &rep->cols[j];
      if (drop[j]) continue;
      const char *s = buf;
      char *h = NULL;
      if (!row) ft_col_label(buf, sizeof buf, col, o->unit, false);
      else if (is_free(col)) s = fc[j].outs[i - 1] ? fc[j].outs[i - 1] : fc[j].shown[i - 1];
      else if (col->kind == COL_STR && !(s = shown_text(row[j].s, &h))) s = "?"; /* no memory: seen before */
      else if (col->kind != COL_STR) {
        ft_col tmp;
        ft_cell_text(buf, sizeof buf, ft_report_cell_col(rep, i - 1, j, &tmp), row[j], o->unit);
      }
      size_t n = chars(s, strlen(s));
      fputs(is_free(col) ? "  " : first ? "" : " ", f);
      if (col->width > 0 || col->kind != COL_STR) pad(f, w[j] - n); /* numbers right, text left */
      fputs(s, f);
      if (j != name && col->kind == COL_STR && col->width <= 0) pad(f, w[j] - n);
      free(h);
      first = false;
    }
    fputc('\n', f);
  }
  if (!rows) fprintf(f, "  (none)\n");
  if (n_drop) { /* one line naming what was left out, or counting it where the names do not fit */
    char line[512];
    size_t len = (size_t)snprintf(line, sizeof line, "(not shown:");
    for (int j = 0; j < nc && len < sizeof line; j++) {
      if (!drop[j] || !rep->cols[j].title[0]) continue;
      ft_col_label(buf, sizeof buf, &rep->cols[j], o->unit, false);
      len += (size_t)snprintf(line + len, sizeof line - len, " %s", buf);
    }
    if (len < sizeof line) len += (size_t)snprintf(line + len, sizeof line - len, "; see --width, -f csv)");
    if (len >= sizeof line || len > o->width)
      snprintf(line, sizeof line, "(%zu column%s not shown; see --width, -f csv)", n_drop, n_drop == 1 ? "" : "s");
    fprintf(f, "%s\n", line);
  }
done:
  for (int j = 0; fc && j < nc; j++) freecol_free(&fc[j], rows);
  free(fc);
  free(drop);
  free(w);
  return rc;
}
