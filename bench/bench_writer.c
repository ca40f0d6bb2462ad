/* Trace writer throughput: synthetic and replayed real captures to JSON and gzip,
 * against zlib alone on the same bytes and the old writer, in the same run. Output
 * goes to a byte-counting sink (the writer's CPU cost) and, in one row each, to a
 * file. Also the memory a captured event costs (resident set growth). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include <zlib.h>

#include "deflate.h"
#include "internal.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ft_session *make_session(size_t n) {
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) exit(1);
  ft__session_set_window(s, 0, UINT64_MAX / 2);
  static const char *const names[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
      "at::native::FillFunctor<float>, std::array<char*, 1ul>)",
      "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__"
      "5x_cublas",
      "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
      "float>, unsigned int, float, 4>)"};
  ft_kv md[] = {{"queued", "0"},
                {"context", "1"},
                {"registers per thread", "44"},
                {"shared memory", "0"},
                {"blocks per SM", "1.939394"},
                {"warps per SM", "15.515152"},
                {"grid", "[256, 1, 1]"},
                {"block", "[256, 1, 1]"},
                {"est. achieved occupancy %", "24"}};
  ft_kv cbid[] = {{"cbid", "211"}};
  uint64_t t = 1000000;
  for (size_t i = 0; i < n; i += 2) {
    uint32_t corr = (uint32_t)(i / 2 + 1);
    ft_device_event rt = {.kind = FT_EVENT_RUNTIME,
                          .start_ns = t,
                          .end_ns = t + 3000,
                          .correlation_id = corr,
                          .has_external_id = true,
                          .external_id = i / 20,
                          .thread_id = 4242,
                          .name = "cudaLaunchKernel",
                          .metadata = cbid,
                          .n_metadata = 1};
    ft_device_event k = {.kind = FT_EVENT_KERNEL,
                         .start_ns = t + 5000,
                         .end_ns = t + 7000,
                         .correlation_id = corr,
                         .has_external_id = true,
                         .external_id = i / 20,
                         .device = 0,
                         .stream = 7,
                         .name = names[i % 3],
                         .metadata = md,
                         .n_metadata = 9};
    if (ft__session_inject(s, &rt) || ft__session_inject(s, &k)) exit(1);
    t += 4000;
  }
  return s;
}

/* A real capture's events, replayed: every "X" slice of a written trace (kernels,
 * copies, runtime and driver calls, user ranges; derived rows and flows are the
 * writer's own and come back by themselves) injected again with its names and
 * args, copies shifted in time and ids until n events. */
static const char *replay_kinds[] = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver"};

static char *read_gz(const char *path) {
  gzFile f = gzopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *b = malloc(cap);
  int r;
  while (b && (r = gzread(f, b + len, (unsigned)(cap - len - 1))) > 0) {
    len += (size_t)r;
    if (cap - len < 2) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) free(b);
      b = nb;
    }
  }
  gzclose(f);
  if (b) b[len] = '\0';
  return b;
}

/* yajl keeps a number's text: arrays become "[a, b, c]" as kineto writes them */
static void value_text(yajl_val v, char *buf, size_t n) {
  if (YAJL_IS_STRING(v)) snprintf(buf, n, "%s", YAJL_GET_STRING(v));
  else if (YAJL_IS_NUMBER(v)) snprintf(buf, n, "%s", YAJL_GET_NUMBER(v));
  else if (YAJL_IS_TRUE(v)) snprintf(buf, n, "true");
  else if (YAJL_IS_FALSE(v)) snprintf(buf, n, "false");
  else if (YAJL_IS_ARRAY(v)) {
    size_t used = (size_t)snprintf(buf, n, "[");
    for (size_t i = 0; i < v->u.array.len && used < n; i++)
      used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "",
                               YAJL_IS_NUMBER(v->u.array.values[i]) ? YAJL_GET_NUMBER(v->u.array.values[i]) : "0");
    if (used < n) snprintf(buf + used, n - used, "]");
  } else snprintf(buf, n, "null");
}

static uint64_t arg_u64(yajl_val args, const char *key, bool *has) {
  const char *path[] = {key, NULL};
  yajl_val v = args ? yajl_tree_get(args, path, yajl_t_number) : NULL;
  if (has) *has = v != NULL;
  return v ? (uint64_t)YAJL_GET_INTEGER(v) : 0;
}

static ft_session *replay_session(const char *path, size_t n) {
  char *text = read_gz(path), err[256];
  yajl_val doc = text ? yajl_tree_parse(text, err, sizeof err) : NULL;
  const char *ev_path[] = {"traceEvents", NULL};
  yajl_val evs = doc ? yajl_tree_get(doc, ev_path, yajl_t_array) : NULL;
  if (!evs) {
    fprintf(stderr, "bench_writer: cannot read %s\n", path);
    exit(1);
  }
  ft_session *s;
  if (ft_session_create(&s, NULL) || ft_session_start(s) || ft_session_stop(s)) exit(1);
  ft__session_set_window(s, 0, UINT64_MAX / 2);
  size_t injected = 0;
  uint64_t span = 0, max_corr = 0, max_ext = 0;
  static char vals[64][256];
  for (uint64_t copy = 0; injected < n; copy++) {
    size_t before = injected;
    for (size_t i = 0; i < evs->u.array.len && injected < n; i++) {
      yajl_val e = evs->u.array.values[i];
      const char *ph_p[] = {"ph", NULL}, *cat_p[] = {"cat", NULL}, *name_p[] = {"name", NULL}, *ts_p[] = {"ts", NULL},
                 *dur_p[] = {"dur", NULL}, *args_p[] = {"args", NULL}, *tid_p[] = {"tid", NULL};
      yajl_val ph = yajl_tree_get(e, ph_p, yajl_t_string), cat = yajl_tree_get(e, cat_p, yajl_t_string);
      const char *phs = ph ? YAJL_GET_STRING(ph) : NULL;
      const char *c = cat ? YAJL_GET_STRING(cat) : NULL,
                 *name = YAJL_GET_STRING(yajl_tree_get(e, name_p, yajl_t_string));
      if (!phs || strcmp(phs, "X") || !c) continue;
      uint64_t ts = (uint64_t)(YAJL_GET_DOUBLE(yajl_tree_get(e, ts_p, yajl_t_number)) * 1000);
      uint64_t dur = (uint64_t)(YAJL_GET_DOUBLE(yajl_tree_get(e, dur_p, yajl_t_number)) * 1000);
      uint64_t tid = (uint64_t)YAJL_GET_INTEGER(yajl_tree_get(e, tid_p, yajl_t_number));
      yajl_val args = yajl_tree_get(e, args_p, yajl_t_object);
      bool has_ext;
      uint64_t ext = arg_u64(args, "External id", &has_ext), corr = arg_u64(args, "correlation", NULL);
      if (copy == 0) {
        if (ts + dur > span) span = ts + dur;
        if (corr > max_corr) max_corr = corr;
        if (ext > max_ext) max_ext = ext;
      }
      uint64_t shift = copy * (span + 1000);
      if (!strcmp(c, "user_annotation")) {
        uint32_t id;
        if (!name || ft__intern(&s->store.names, name, strlen(name), &id) ||
            ft__store_add_range(&s->store, id, ts + shift, ts + shift + dur, ext + copy * (max_ext + 1), (uint32_t)tid))
          exit(1);
        injected++;
        continue;
      }
      int kind = -1;
      for (int k = 0; k < 5; k++)
        if (!strcmp(c, replay_kinds[k])) kind = k;
      if (kind < 0 || !name) continue;
      ft_kv md[64];
      size_t nmd = 0;
      for (size_t k = 0; args && k < args->u.object.len && nmd < 64; k++) {
        const char *key = args->u.object.keys[k];
        if (!strcmp(key, "External id") || !strcmp(key, "device") || !strcmp(key, "stream") ||
            !strcmp(key, "correlation"))
          continue; /* the writer's own fields */
        value_text(args->u.object.values[k], vals[nmd], sizeof vals[nmd]);
        md[nmd] = (ft_kv){key, vals[nmd]};
        nmd++;
      }
      bool dev = kind <= FT_EVENT_MEMSET;
      ft_device_event d = {.kind = (ft_event_kind)kind,
                           .start_ns = ts + shift,
                           .end_ns = ts + shift + dur,
                           .correlation_id = (uint32_t)(corr + copy * (max_corr + 1)),
                           .has_external_id = has_ext,
                           .external_id = ext + copy * (max_ext + 1),
                           .device = dev ? (uint32_t)arg_u64(args, "device", NULL) : 0,
                           .stream = dev ? (uint32_t)arg_u64(args, "stream", NULL) : 0,
                           .thread_id = dev ? 0 : (uint32_t)tid,
                           .name = name,
                           .metadata = md,
                           .n_metadata = nmd};
      if (ft__session_inject(s, &d)) exit(1);
      injected++;
    }
    if (injected == before) {
      fprintf(stderr, "bench_writer: no slices in %s\n", path);
      exit(1);
    }
  }
  yajl_tree_free(doc);
  free(text);
  return s;
}

/* What a gzip row runs: a deflate backend on some worker threads. */
typedef struct config {
  const char *label;
  bool gzip, to_file;
  const ft__deflate_ops *ops; /* NULL with gzip: zlib alone on the writer's JSON */
  int threads;                /* -1: the default */
  int old;                    /* the row this one is compared with, -1: none */
  double target;              /* events/s judged against, 0: not judged */
  bool needs_isal;
  /* row_env's values for the row (NULL: as set): the old writer's deflate and gzip
   * workers (to-file rows), the rendering threads */
  const char *env_deflate, *env_threads, *env_render;
} config;

/* The row's settings of the writer's environment variables (NULL: as set), and
 * their values before, restored after the row. */
static const char *const row_env[] = {"FLAGOS_TRACE_DEFLATE", "FLAGOS_TRACE_GZIP_THREADS",
                                      "FLAGOS_TRACE_RENDER_THREADS"};
enum { N_ROW_ENV = sizeof row_env / sizeof row_env[0] };

/* Seconds to render the session through config c; bytes produced. */
static double run_config_env(ft_session *s, const config *c, const char *json, size_t json_len, size_t *bytes) {
  if (c->to_file) { /* the whole public path: temporary file, write, rename */
    char path[256];
    snprintf(path, sizeof path, "%s/bench_writer.%ld%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(),
             c->gzip ? ".json.gz" : ".json");
    double t0 = now_s();
    if (ft_session_write(s, path)) exit(1);
    double dt = now_s() - t0;
    FILE *f = fopen(path, "rb");
    if (f && !fseek(f, 0, SEEK_END)) *bytes = (size_t)ftell(f);
    if (f) fclose(f);
    unlink(path);
    return dt;
  }
  if (c->gzip && !c->ops) { /* the baseline: zlib level 1 alone over the exact JSON, one stream */
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) exit(1);
    unsigned char *buf = malloc(1 << 20);
    double t0 = now_s();
    z.next_in = (unsigned char *)(uintptr_t)json;
    z.avail_in = (uInt)json_len;
    int r;
    do {
      z.next_out = buf;
      z.avail_out = 1 << 20;
      r = deflate(&z, Z_FINISH);
    } while (r == Z_OK);
    double dt = now_s() - t0;
    *bytes = z.total_out;
    deflateEnd(&z);
    free(buf);
    return dt;
  }
  ft__out *o;
  if (ft__out_open_gz(&o, c->gzip ? c->ops : NULL, c->threads, true)) exit(1);
  double t0 = now_s();
  if (ft__write_trace(s, o, NULL)) exit(1);
  ft__out_mem(o, bytes); /* finishes the gzip stream */
  double dt = now_s() - t0;
  ft__out_abort(o);
  return dt;
}

/* run_config_env under the row's environment (row_env), restored afterwards. */
static double run_config(ft_session *s, const config *c, const char *json, size_t json_len, size_t *bytes) {
  const char *want[N_ROW_ENV] = {c->env_deflate, c->env_threads, c->env_render};
  char *saved[N_ROW_ENV];
  for (int i = 0; i < N_ROW_ENV; i++) {
    const char *v = getenv(row_env[i]);
    saved[i] = v ? strdup(v) : NULL;
    if (want[i]) setenv(row_env[i], want[i], 1);
  }
  double dt = run_config_env(s, c, json, json_len, bytes);
  for (int i = 0; i < N_ROW_ENV; i++) {
    if (saved[i]) setenv(row_env[i], saved[i], 1);
    else unsetenv(row_env[i]);
    free(saved[i]);
  }
  return dt;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* --no-old: the old writer's rows (and the comparisons with them) are left out; the
 * GPU host's bench run has no time for them (bench/run.py: 8 minutes in all). */
static bool no_old;

static bool left_out(const char *label) { return no_old && strstr(label, "old") != NULL; }

/* Every config once per rep, interleaved (rep-major), so drift on a shared host
 * hits all of them alike; medians compared. */
static void bench_session(const char *what, ft_session *s, size_t n, int reps, bool quick) {
  ft__out *m;
  size_t json_len;
  if (ft__out_open_mem(&m, false) || ft__write_trace(s, m, NULL)) exit(1);
  const char *json = ft__out_mem(m, &json_len);
  const ft__deflate_ops *isal = ft__deflate_isal();
  /* the old writer: zlib on the calling thread, a file written by it too */
  config cs[] = {
      {"JSON (writer only)", false, false, NULL, 0, 10, 3e6, false, NULL, NULL, NULL},
      {"JSON to a file, old path (written by the calling thread)", false, true, NULL, 0, -1, 0, false, NULL, "0", "0"},
      {"JSON to a file (ft_session_write)", false, true, NULL, 0, 1, 3e6, false, NULL, NULL, NULL},
      {"zlib alone on that JSON (baseline)", true, false, NULL, 0, -1, 0, false, NULL, NULL, NULL},
      {"gzip, old writer (zlib, calling thread)", true, false, &ft__deflate_zlib, 0, -1, 0, false, NULL, NULL, "0"},
      {"gzip, zlib, default workers", true, false, &ft__deflate_zlib, -1, 4, 0, false, NULL, NULL, NULL},
      {"gzip, ISA-L, calling thread", true, false, isal, 0, 4, 0, true, NULL, NULL, "0"},
      {"gzip, ISA-L, default workers", true, false, isal, -1, 4, 1e6, true, NULL, NULL, NULL},
      {"gzip to a file, old writer", true, true, NULL, 0, -1, 0, false, "zlib", "0", "0"},
      {"gzip to a file (ft_session_write)", true, true, NULL, 0, 8, 1e6, false, NULL, NULL, NULL},
      {"JSON (writer only), rendered on the calling thread", false, false, NULL, 0, -1, 0, false, NULL, NULL, "0"},
  };
  enum { NC = sizeof cs / sizeof cs[0], ZLIB_ALONE = 3 };
  double t[NC][32], med[NC];
  size_t bytes[NC] = {0};
  for (int r = 0; r < reps; r++)
    for (int c = 0; c < NC; c++)
      if ((!cs[c].needs_isal || isal) && !left_out(cs[c].label))
        t[c][r] = run_config(s, &cs[c], json, json_len, &bytes[c]);
  for (int c = 0; c < NC; c++) {
    qsort(t[c], (size_t)reps, sizeof t[c][0], cmp_double);
    med[c] = t[c][reps / 2];
  }
  const char *threads = getenv("FLAGOS_TRACE_GZIP_THREADS");
  printf("\n### %s: %zu events, %d reps interleaved, %s, gzip workers by default: %s\n\n", what, n, reps,
         isal ? "ISA-L loaded" : "ISA-L not available",
         threads ? threads : "half the CPUs besides the caller's, rounded up, at most 8");
  printf(
      "| output | min s | median s | M events/s (median) | MB | time vs zlib alone | speed vs old | target |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (int c = 0; c < NC; c++) {
    if ((cs[c].needs_isal && !isal) || left_out(cs[c].label)) continue;
    double rate = (double)n / med[c];
    char vs_z[32] = "-", vs_old[32] = "-", target[64] = "-";
    if (cs[c].gzip && c != ZLIB_ALONE) snprintf(vs_z, sizeof vs_z, "%.2fx", med[c] / med[ZLIB_ALONE]);
    if (cs[c].old >= 0 && !left_out(cs[cs[c].old].label))
      snprintf(vs_old, sizeof vs_old, "%.2fx", med[cs[c].old] / med[c]);
    if (cs[c].target)
      snprintf(target, sizeof target, ">= %.0fM ev/s: %s", cs[c].target / 1e6,
               quick                  ? "(quick, not judged)"
               : rate >= cs[c].target ? "pass"
                                      : "MISS");
    printf("| %s | %.3f | %.3f | %.2f | %.1f | %s | %s | %s |\n", cs[c].label, t[c][0], med[c], rate / 1e6,
           (double)bytes[c] / 1e6, vs_z, vs_old, target);
  }
  ft__out_abort(m);
}

/* Resident set size in bytes (VmRSS), 0 when /proc is not there. */
static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %zu kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb * 1024;
}

int main(int argc, char **argv) {
  bool quick = false;
  const char *replay[8];
  int n_replay = 0, reps = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--no-old")) no_old = true;
    else if (!strcmp(argv[i], "--replay") && i + 1 < argc && n_replay < 8) replay[n_replay++] = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc && atoi(argv[i + 1]) > 0 && atoi(argv[i + 1]) <= 16)
      reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_writer [--quick] [--no-old] [--reps N (1-16)] [--replay TRACE.json.gz]...\n");
      return 2;
    }
  }
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent", 1); /* synthetic events only: no vendor library */
  size_t n = quick ? 100000 : 1000000;
  if (!reps) reps = quick ? 1 : 5;
  size_t rss0 = rss_bytes();
  ft_session *s = make_session(n);
  size_t rss1 = rss_bytes();
  printf("# bench_writer: the trace writer's throughput; output to a byte-counting sink unless \"to a file\"\n");
  bench_session("synthetic: kernel + cudaLaunchKernel pairs, 13 kernel args", s, n, reps, quick);
  /* the 3 kernel names and the arg texts are interned once; what grows is per event */
  double per_event = rss1 > rss0 ? (double)(rss1 - rss0) / (double)n : 0;
  printf("\n| memory | RSS growth MB | bytes per captured event | target |\n|---|---|---|---|\n");
  printf("| %zu events | %.1f | %.1f | <= 64 B + interned names: %s |\n", n, (double)(rss1 - rss0) / 1e6, per_event,
         quick             ? "(quick mode, not judged)"
         : per_event <= 64 ? "pass"
                           : "MISS");
  ft_session_destroy(s);
  for (int i = 0; i < n_replay; i++) {
    size_t rn = quick ? 100000 : 1000000;
    ft_session *r = replay_session(replay[i], rn);
    char what[512];
    snprintf(what, sizeof what, "replay of a real capture (%s)", replay[i]);
    bench_session(what, r, rn, reps, quick);
    ft_session_destroy(r);
  }
  return 0;
}
