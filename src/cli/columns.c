/* `flagtrace columns TRACE`: the event model's columns as raw little-endian arrays (get_trace's feed). */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advise_cli.h"
#include "cli.h"
#include "model.h"
#include "stats_out.h"

/* Not in flagtrace --help's list: a feed for the Python API (docs/python-analysis.md "Events"). */
static const char usage[] =
    "usage: flagtrace columns [options] TRACE\n"
    "\n"
    "Reads TRACE (.json, .json.gz, \"-\" stdin) into the event model and writes its\n"
    "columns as raw little-endian arrays: \"FTCOLS1\\n\", the header's length (8 bytes),\n"
    "a JSON header (counts, each array's name, dtype, offset and count) padded to 8\n"
    "bytes, then the arrays, each at an 8-byte offset from the header's end.\n"
    "flagtrace.analysis.get_trace() reads it with numpy.frombuffer, no JSON per event.\n"
    "\n"
    "options:\n"
    "  -o, --output PATH   write there (default: stdout, when it is not a terminal)\n"
    "      --force-overwrite  replace an existing -o file\n"
    "      --step NAME     the range NAME's occurrences are the steps (default:\n"
    "                      ProfilerStep#N, else the whole trace)\n"
    "  -h, --help          show this help\n"
    "\n"
    "exit status: 0; 2 for a usage error or an input that cannot be read; 1 when\n"
    "the output cannot be written or memory runs out.\n";

typedef struct col {
  const char *name, *dtype; /* numpy's spelling */
  const void *data;
  size_t count, size;
} col;

static void put_json_str(FILE *f, const char *s) { ft_json_string(f, s); }

/* The header, then the arrays; offsets count from the header's end. */
static int write_all(FILE *f, const ft_model *m, const char *path, col *cols, size_t nc) {
  char *hdr = NULL;
  size_t hlen = 0;
  FILE *h = open_memstream(&hdr, &hlen);
  if (!h) return -1;
  fprintf(h, "{\"format\": \"flagtrace-columns\", \"version\": 1, \"file\": ");
  put_json_str(h, path);
  fprintf(h, ", \"rank\": %" PRId64 ", \"device_name\": ", m->rank);
  put_json_str(h, m->device_name);
  fprintf(h, ", \"peak_flops\": %.17g, \"n\": %zu, \"n_tracks\": %zu, \"n_steps\": %zu, \"columns\": [", m->peak_flops,
          m->n, m->n_tracks, m->n_steps);
  uint64_t off = 0;
  for (size_t i = 0; i < nc; i++) {
    fprintf(h, "%s{\"name\": \"%s\", \"dtype\": \"%s\", \"offset\": %" PRIu64 ", \"count\": %zu}", i ? ", " : "",
            cols[i].name, cols[i].dtype, off, cols[i].count);
    off += (cols[i].count * cols[i].size + 7) / 8 * 8;
  }
  fputs("]}", h);
  if (fclose(h)) return free(hdr), -1;
  static const char pad[8] = "        ";
  uint64_t padded = (hlen + 7) / 8 * 8;
  fwrite("FTCOLS1\n", 1, 8, f);
  fwrite(&padded, 8, 1, f);
  fwrite(hdr, 1, hlen, f);
  fwrite(pad, 1, padded - hlen, f);
  free(hdr);
  static const char zeros[8] = {0};
  for (size_t i = 0; i < nc; i++) {
    size_t bytes = cols[i].count * cols[i].size;
    if (bytes) fwrite(cols[i].data, 1, bytes, f);
    fwrite(zeros, 1, (8 - bytes % 8) % 8, f);
  }
  return ferror(f) ? -1 : 0;
}

/* The names in use as a dense table (codes from 0, -1: none), so that the Python side
 * builds categoricals from the codes directly. */
typedef struct strtab {
  int32_t *name_code, *track_name; /* per slice, per track */
  uint64_t *offs;                  /* n_str + 1 */
  char *blob;
  size_t n_str, blob_len;
} strtab;

static int build_strings(const ft_model *m, strtab *t) {
  uint32_t max = 0;
  bool any = false;
  for (size_t i = 0; i < m->n; i++)
    if (m->name[i] != FT_MODEL_NONE && (!any || m->name[i] > max)) max = m->name[i], any = true;
  for (size_t i = 0; i < m->n_tracks; i++)
    if (m->tracks[i].name != FT_MODEL_NONE && (!any || m->tracks[i].name > max)) max = m->tracks[i].name, any = true;
  int32_t *code = malloc(((size_t)max + 1) * sizeof *code);
  t->name_code = malloc((m->n ? m->n : 1) * sizeof *t->name_code);
  t->track_name = malloc((m->n_tracks ? m->n_tracks : 1) * sizeof *t->track_name);
  if (!code || !t->name_code || !t->track_name) return free(code), -1;
  memset(code, 0xff, ((size_t)max + 1) * sizeof *code);
  size_t n_str = 0, blob = 0, all = m->n + m->n_tracks;
#define ID(i) ((i) < m->n ? m->name[i] : m->tracks[(i)-m->n].name)
  for (size_t i = 0; any && i < all; i++) /* codes in order of first use */
    if (ID(i) != FT_MODEL_NONE && code[ID(i)] < 0)
      code[ID(i)] = (int32_t)n_str++, blob += strlen(ft_model_str(m, ID(i)));
  t->offs = malloc((n_str + 1) * sizeof *t->offs);
  t->blob = malloc(blob ? blob : 1);
  if (!t->offs || !t->blob) return free(code), -1;
  t->offs[0] = 0;
  for (size_t i = 0, next = 0; any && i < all; i++) /* the strings in code order: each at its first use */
    if (ID(i) != FT_MODEL_NONE && (size_t)code[ID(i)] == next) {
      const char *str = ft_model_str(m, ID(i));
      size_t len = strlen(str);
      memcpy(t->blob + t->blob_len, str, len);
      t->blob_len += len;
      t->offs[++next] = t->blob_len;
    }
#undef ID
  t->n_str = n_str;
  for (size_t i = 0; i < m->n; i++) t->name_code[i] = m->name[i] == FT_MODEL_NONE ? -1 : code[m->name[i]];
  for (size_t i = 0; i < m->n_tracks; i++)
    t->track_name[i] = m->tracks[i].name == FT_MODEL_NONE ? -1 : code[m->tracks[i].name];
  free(code);
  return 0;
}

/* The launch configurations and Input Dims texts, each distinct text once (a table of its
 * own: few texts, many slices), by an open-addressing hash of their bytes. */
typedef struct argtab {
  int32_t *grid, *block, *dims; /* per slice: a code, -1 none */
  uint64_t *offs;               /* n + 1 */
  char *blob;
  size_t n, cap, blob_len, blob_cap;
  int32_t *slot; /* hash slots: code, -1 empty */
  size_t n_slot;
} argtab;

static uint64_t hash_text(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}

static bool grow_slots(argtab *t) {
  size_t n = t->n_slot ? t->n_slot * 2 : 64;
  int32_t *s = malloc(n * sizeof *s);
  if (!s) return false;
  memset(s, 0xff, n * sizeof *s);
  for (size_t c = 0; c < t->n; c++) { /* rehash every text */
    uint64_t h = hash_text(t->blob + t->offs[c], t->offs[c + 1] - t->offs[c]);
    size_t k = h & (n - 1);
    while (s[k] >= 0) k = (k + 1) & (n - 1);
    s[k] = (int32_t)c;
  }
  free(t->slot);
  t->slot = s, t->n_slot = n;
  return true;
}

/* text's code, added when new; -1 without memory */
static int32_t arg_code(argtab *t, const char *text) {
  size_t len = strlen(text);
  if (2 * (t->n + 1) > t->n_slot && !grow_slots(t)) return -1;
  uint64_t h = hash_text(text, len);
  size_t k = h & (t->n_slot - 1);
  for (; t->slot[k] >= 0; k = (k + 1) & (t->n_slot - 1)) {
    size_t c = (size_t)t->slot[k];
    if (t->offs[c + 1] - t->offs[c] == len && !memcmp(t->blob + t->offs[c], text, len)) return (int32_t)c;
  }
  if (t->n + 2 > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    uint64_t *o = realloc(t->offs, cap * sizeof *o);
    if (!o) return -1;
    t->offs = o, t->cap = cap;
  }
  if (t->blob_len + len > t->blob_cap) {
    size_t cap = t->blob_cap ? 2 * t->blob_cap : 4096;
    while (cap < t->blob_len + len) cap *= 2;
    char *b = realloc(t->blob, cap);
    if (!b) return -1;
    t->blob = b, t->blob_cap = cap;
  }
  if (!t->n) t->offs[0] = 0;
  memcpy(t->blob + t->blob_len, text, len);
  t->blob_len += len;
  t->offs[++t->n] = t->blob_len;
  t->slot[k] = (int32_t)(t->n - 1);
  return (int32_t)(t->n - 1);
}

/* Kernels: grid and block as "[x, y, z]" (kineto's spelling); ops: their Input Dims. */
static int build_args(const ft_model *m, argtab *t) {
  size_t n = m->n ? m->n : 1;
  t->grid = malloc(n * sizeof *t->grid), t->block = malloc(n * sizeof *t->block), t->dims = malloc(n * sizeof *t->dims);
  if (!t->grid || !t->block || !t->dims) return -1;
  for (size_t i = 0; i < m->n; i++) {
    struct ft_model_kernel_args a;
    t->grid[i] = t->block[i] = t->dims[i] = -1;
    if (!ft_model_kernel_args(m, i, &a)) continue;
    char text[96];
    if (a.grid[0] || a.grid[1] || a.grid[2]) {
      snprintf(text, sizeof text, "[%d, %d, %d]", a.grid[0], a.grid[1], a.grid[2]);
      if ((t->grid[i] = arg_code(t, text)) < 0) return -1;
    }
    if (a.block[0] || a.block[1] || a.block[2]) {
      snprintf(text, sizeof text, "[%d, %d, %d]", a.block[0], a.block[1], a.block[2]);
      if ((t->block[i] = arg_code(t, text)) < 0) return -1;
    }
    if (a.dims && (t->dims[i] = arg_code(t, a.dims)) < 0) return -1;
  }
  if (!t->offs && !(t->offs = calloc(1, sizeof *t->offs))) return -1;
  return 0;
}

static void argtab_free(argtab *t) {
  free(t->grid), free(t->block), free(t->dims), free(t->offs), free(t->blob), free(t->slot);
}

int ft_cli_columns(int argc, char **argv) {
  const char *output = NULL, *step = NULL;
  bool overwrite = false;
  static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
                                        {"force-overwrite", no_argument, NULL, 1},
                                        {"step", required_argument, NULL, 2},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  for (;;) {
    int prev = optind, c = getopt_long(argc, argv, ":o:h", longs, NULL);
    if (c == -1) break;
    const char *bad = argv[prev] ? argv[prev] : "";
    switch (c) {
    case 'h': fputs(usage, stdout); return 0;
    case 'o': output = strcmp(optarg, "-") ? optarg : NULL; break;
    case 1: overwrite = true; break;
    case 2:
      if (!*optarg) return ft_cli_usage_error("columns", "--step takes a range name");
      step = optarg;
      break;
    case ':': return ft_cli_usage_error("columns", "option '%s' needs a value", bad);
    default: return ft_cli_usage_error("columns", "unknown option '%s'", bad);
    }
  }
  if (optind + 1 != argc) return ft_cli_usage_error("columns", "one trace file, not %d", argc - optind);
  const uint16_t one = 1;
  if (*(const uint8_t *)&one != 1) {
    ft_cli_error("columns", "this host is big-endian: the columns are written little-endian only");
    return 1;
  }
  if (!output && isatty(STDOUT_FILENO))
    return ft_cli_usage_error("columns", "the output is binary: -o FILE, or a pipe");
  char err[640];
  bool exists = false;
  const char *names[1] = {output};
  if (output && ft_outputs_check(names, 1, overwrite, &exists, err, sizeof err))
    return ft_cli_output_refused("columns", exists, err);
  const char *path = argv[optind];
  ft_model m;
  memset(&m, 0, sizeof m);
  ft_model_opts mo = {.step = step};
  ft_status s = ft_model_read(&m, path, &mo, NULL, err, sizeof err);
  if (s) {
    ft_cli_error("columns", "%s", err);
    ft_model_free(&m);
    return s == FT_ENOMEM ? 1 : FT_CLI_USAGE;
  }
  if (step && (m.n_steps == 0 || (m.n_steps == 1 && m.steps[0].slice == FT_MODEL_NONE))) {
    /* as advise: a name that names nothing is a mistake, not a whole-trace step */
    ft_cli_error("columns", "%s: no range named '%s' (--step)", path, step);
    ft_model_free(&m);
    return FT_CLI_USAGE;
  }
  strtab t = {0};
  argtab at = {0};
  size_t nt = m.n_tracks, ns = m.n_steps;
  int64_t *tr = malloc((nt ? nt : 1) * 3 * sizeof *tr), *st = malloc((ns ? ns : 1) * 3 * sizeof *st);
  uint8_t *tk = malloc(nt ? nt : 1);
  int64_t *ids = malloc((m.n ? m.n : 1) * 2 * sizeof *ids); /* corr, ext: the full ids, -1 for none */
  /* the memory rows (issue 51) as columns: ts, bytes, allocated, reserved; addr; device; type; op, call, step */
  size_t nm = m.n_mem;
  int64_t *mi = malloc((nm ? nm : 1) * 4 * sizeof *mi);
  uint64_t *ma = malloc((nm ? nm : 1) * sizeof *ma);
  int32_t *md = malloc((nm ? nm : 1) * sizeof *md);
  int16_t *mt = malloc((nm ? nm : 1) * sizeof *mt);
  uint32_t *mx = malloc((nm ? nm : 1) * 3 * sizeof *mx);
  int rc = 0;
  if (!tr || !st || !tk || !ids || !mi || !ma || !md || !mt || !mx || build_strings(&m, &t) || build_args(&m, &at)) {
    ft_cli_error("columns", "out of memory");
    rc = 1;
    goto out;
  }
  for (size_t i = 0; i < nt; i++) /* columns of the small tables, for numpy */
    tr[i] = m.tracks[i].pid, tr[nt + i] = m.tracks[i].tid, tr[2 * nt + i] = m.tracks[i].device,
    tk[i] = m.tracks[i].kind;
  for (size_t i = 0; i < ns; i++)
    st[i] = m.steps[i].number, st[ns + i] = m.steps[i].start, st[2 * ns + i] = m.steps[i].end;
  size_t n = m.n;
  for (size_t i = 0; i < n; i++) {
    int64_t c = ft_model_corr(&m, i), e = ft_model_ext(&m, i);
    ids[i] = c == FT_MODEL_NO_ID ? -1 : c, ids[n + i] = e == FT_MODEL_NO_ID ? -1 : e;
  }
  for (size_t i = 0; i < nm; i++) {
    const ft_model_mem *x = &m.mem[i];
    mi[i] = x->ts, mi[nm + i] = x->bytes, mi[2 * nm + i] = x->total_allocated, mi[3 * nm + i] = x->total_reserved;
    ma[i] = x->addr, md[i] = x->device, mt[i] = x->device_type;
    mx[i] = x->op, mx[nm + i] = x->call, mx[2 * nm + i] = x->step;
  }
  col cols[] = {
      {"ts", "<i8", m.ts, n, 8},
      {"dur", "<i8", m.dur, n, 8},
      {"corr", "<i8", ids, n, 8},
      {"ext", "<i8", ids + n, n, 8},
      {"arg", "<u8", m.arg, n, 8},
      {"name", "<i4", t.name_code, n, 4},
      {"track", "<u4", m.track, n, 4},
      {"link", "<u4", m.link, n, 4},
      {"op", "<u4", m.op, n, 4},
      {"step", "<u4", m.step, n, 4},
      {"kind", "|u1", m.kind, n, 1},
      {"grid", "<i4", at.grid, n, 4},
      {"block", "<i4", at.block, n, 4},
      {"input_dims", "<i4", at.dims, n, 4},
      {"track_pid", "<i8", tr, nt, 8},
      {"track_tid", "<i8", tr + nt, nt, 8},
      {"track_device", "<i8", tr + 2 * nt, nt, 8},
      {"track_name", "<i4", t.track_name, nt, 4},
      {"track_kind", "|u1", tk, nt, 1},
      {"step_number", "<i8", st, ns, 8},
      {"step_start", "<i8", st + ns, ns, 8},
      {"step_end", "<i8", st + 2 * ns, ns, 8},
      {"string_offsets", "<u8", t.offs, t.n_str + 1, 8},
      {"string_bytes", "|u1", t.blob, t.blob_len, 1},
      {"arg_string_offsets", "<u8", at.offs, at.n + 1, 8},
      {"arg_string_bytes", "|u1", at.blob, at.blob_len, 1},
      {"mem_ts", "<i8", mi, nm, 8},
      {"mem_bytes", "<i8", mi + nm, nm, 8},
      {"mem_total_allocated", "<i8", mi + 2 * nm, nm, 8},
      {"mem_total_reserved", "<i8", mi + 3 * nm, nm, 8},
      {"mem_addr", "<u8", ma, nm, 8},
      {"mem_device", "<i4", md, nm, 4},
      {"mem_device_type", "<i2", mt, nm, 2},
      {"mem_op", "<u4", mx, nm, 4},
      {"mem_call", "<u4", mx + nm, nm, 4},
      {"mem_step", "<u4", mx + 2 * nm, nm, 4},
  };
  ft_outfile of;
  FILE *f = stdout;
  if (output && ft_outputs_open(&of, names, 1, overwrite, &exists, err, sizeof err)) {
    rc = ft_cli_output_refused("columns", exists, err);
    goto out;
  }
  if (output) f = of.f;
  if (write_all(f, &m, path, cols, sizeof cols / sizeof *cols)) {
    ft_cli_error("columns", "cannot write the output: %s", strerror(errno ? errno : EIO));
    rc = 1;
    if (output) ft_outfile_discard(&of);
  } else if (output && ft_outfile_commit(&of, 1, err, sizeof err)) {
    ft_cli_error("columns", "%s", err);
    rc = 1;
  }
out:
  free(tr), free(st), free(tk), free(ids), free(mi), free(ma), free(md), free(mt), free(mx);
  free(t.name_code), free(t.track_name), free(t.offs), free(t.blob);
  argtab_free(&at);
  ft_model_free(&m);
  return rc;
}
