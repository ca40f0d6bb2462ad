/* One gzip member from independently compressed blocks, on worker threads, written in order; plain text through the
 * same ring. */
#define _GNU_SOURCE
#include "deflate.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Each block is a run of raw deflate blocks ending byte-aligned (pigz's layout),
 * so their concatenation is one deflate stream and the file one gzip member,
 * which every reader handles (some stop after a first member). The CRC of the
 * whole is combined from the blocks' CRCs. Output bytes depend on the block
 * boundaries only, never on the number of threads. Without a backend (ops NULL)
 * the same ring carries plain text, so a file's writes overlap the rendering.
 *
 * Blocks are written in order by whichever thread finishes the oldest one (a
 * worker, or the caller when none runs), one writer at a time: the caller waits
 * only when every slot of the ring is in flight. */

enum { MAX_WORKERS = 8 };
enum slot_state { FREE, QUEUED, DONE };
enum { PLAIN_WORKERS = 1 }; /* plain text: one thread writes while the caller renders */

typedef struct slot {
  char *in;
  size_t cap, len; /* cap: bytes at in; out holds out_bound(cap) */
  bool final;
  unsigned char *out;
  size_t out_len; /* 0: compression failed */
  uint32_t crc;
  enum slot_state state;
} slot;

struct ft__gz {
  const ft__deflate_ops *ops;
  ft__gz_sink sink;
  void *ctx;
  int err;
  uint32_t crc;
  uint64_t total_in;
  void *inline_state; /* the calling thread's compressor, when no workers run */
  int want_workers;
  /* the ring: block seq lives in slots[seq % n_slots] */
  slot *slots; /* MAX_WORKERS + 2 entries, n_alloc of them allocated */
  size_t n_slots, n_alloc;
  uint64_t n_pushed, n_taken, n_written;
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  bool stop, writing; /* writing: a thread is sinking the oldest block */
  int n_workers;
  pthread_t workers[MAX_WORKERS];
};

/* Worst case output of one block: deflate's stored blocks add 5 bytes per 64 KiB;
 * the rest is slack for headers and the flush marker. */
static size_t out_bound(size_t n) { return n + n / 8 + 4096; }

/* Zeroed bytes after a block's input: ISA-L's igzip reads past avail_in (hashing and
 * match compares near the end; its look-ahead is 288 bytes), and what lay there (an
 * earlier block's text, different for each worker) could change its output, so the
 * bytes depended on the worker count. With this and a zeroed state, test_deflate
 * under ASan went from 1 failing run in ~50 to ~1 in 250; what remains is not
 * explained (docs/measurements.md). The reads also stay inside the allocation. */
enum { IN_TAIL = 512 };

/* The first error (an errno value) wins; under the lock once workers run. */
static void note_err(ft__gz *g, int e) {
  if (!g->err) g->err = e;
}

static void compress_slot(const ft__deflate_ops *ops, void *st, slot *s) {
  if (!ops) return; /* plain: written from s->in */
  memset(s->in + s->len, 0, IN_TAIL);
  s->out_len = ops->compress(st, s->in, s->len, s->final, s->out, out_bound(s->len));
  s->crc = ops->crc32(0, s->in, s->len);
}

/* Sinks a finished block and folds its CRC in (one thread at a time); failed
 * says an earlier block failed, so nothing more is written. Returns the error. */
static int emit(ft__gz *g, slot *s, bool failed) {
  int e = g->ops && !s->out_len ? EIO : 0;
  if (!e && !failed) e = g->ops ? g->sink(g->ctx, s->out, s->out_len) : g->sink(g->ctx, s->in, s->len);
  if (g->ops) g->crc = (uint32_t)crc32_combine(g->crc, s->crc, (z_off_t)s->len);
  g->total_in += s->len;
  return e;
}

/* Writes the finished blocks at the head of the ring, in order, unless another
 * thread is already doing so. Called with the lock held. */
static void write_ready(ft__gz *g) {
  if (g->writing) return;
  g->writing = true;
  while (g->n_written < g->n_pushed) {
    slot *s = &g->slots[g->n_written % g->n_slots];
    if (s->state != DONE) break;
    bool failed = g->err != 0;
    pthread_mutex_unlock(&g->mu);
    int e = emit(g, s, failed);
    pthread_mutex_lock(&g->mu);
    note_err(g, e);
    s->state = FREE;
    g->n_written++;
    pthread_cond_broadcast(&g->done_cv);
  }
  g->writing = false;
}

static void *worker_main(void *arg) {
  ft__gz *g = arg;
  void *st = NULL;
  pthread_mutex_lock(&g->mu);
  for (;;) {
    while (!g->stop && g->n_taken == g->n_pushed) pthread_cond_wait(&g->work_cv, &g->mu);
    if (g->n_taken == g->n_pushed) break; /* stopping, nothing queued */
    slot *s = &g->slots[g->n_taken++ % g->n_slots];
    pthread_mutex_unlock(&g->mu);
    if (!st && g->ops) st = g->ops->state_new();
    if (st || !g->ops) compress_slot(g->ops, st, s);
    else s->out_len = 0; /* reported as a compression failure */
    pthread_mutex_lock(&g->mu);
    s->state = DONE;
    write_ready(g);
  }
  pthread_mutex_unlock(&g->mu);
  if (st) g->ops->state_free(st);
  return NULL;
}

/* (deflate.h) */
int ft__cpus(void) {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* (deflate.h) Half the CPUs besides the caller's, rounded up: the rest render the
 * JSON (trace_writer.c gives it what deflate leaves). Deflate taking them all left
 * the rendering on the calling thread wherever 8 or fewer CPUs were usable: on the
 * H200 host, pinned to 8, a 94.5 k-event gzip write took 0.033 s against 0.018 s
 * for the same trace as plain JSON. ISA-L level 1 and the renderer each run at
 * ~1.1-1.3 GB/s of text per thread there (bench_writer), hence an even split. */
int ft__gz_default_workers(int cpus) {
  int spare = cpus - 1;
  return spare <= 0 ? 0 : (spare + 1) / 2 > MAX_WORKERS ? MAX_WORKERS : (spare + 1) / 2;
}

/* (deflate.h) */
int ft__worker_threads(const char *env, int dflt) {
  const char *v = getenv(env);
  if (v && *v) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end == '\0' && n >= 0) return n > MAX_WORKERS ? MAX_WORKERS : (int)n;
    ft__warn("%s='%s' is not a count of threads; using the default", env, v);
  }
  return dflt < 0 ? 0 : dflt > MAX_WORKERS ? MAX_WORKERS : dflt;
}

/* Gives s buffers for blocks of size bytes (freeing its old ones), or leaves it
 * as it was and returns false. */
static bool alloc_slot(const ft__gz *g, slot *s, size_t size) {
  char *in = malloc(size + IN_TAIL);
  unsigned char *out = g->ops ? malloc(out_bound(size)) : NULL;
  if (!in || (g->ops && !out)) {
    free(in);
    free(out);
    return false;
  }
  free(s->in);
  free(s->out);
  s->in = in;
  s->out = out;
  s->cap = size;
  return true;
}

ft_status ft__gz_open(ft__gz **out, const ft__deflate_ops *ops, int threads, ft__gz_sink sink, void *ctx) {
  ft__gz *g = calloc(1, sizeof *g);
  if (!g) return FT_ENOMEM;
  g->ops = ops;
  g->sink = sink;
  g->ctx = ctx;
  g->want_workers = threads < 0 ? ft__worker_threads("FLAGOS_TRACE_GZIP_THREADS", ft__gz_default_workers(ft__cpus()))
                    : threads > MAX_WORKERS ? MAX_WORKERS
                                            : threads;
  if (!ops && g->want_workers > PLAIN_WORKERS) g->want_workers = PLAIN_WORKERS;
  g->slots = calloc(MAX_WORKERS + 2, sizeof *g->slots);
  g->inline_state = ops ? ops->state_new() : g; /* plain: any non-NULL marker */
  if (!g->slots || !g->inline_state || !alloc_slot(g, &g->slots[0], FT__GZ_FIRST_BLOCK) ||
      pthread_mutex_init(&g->mu, NULL)) {
    if (g->slots) {
      free(g->slots[0].in);
      free(g->slots[0].out);
    }
    free(g->slots);
    if (g->inline_state && ops) ops->state_free(g->inline_state);
    free(g);
    return FT_ENOMEM;
  }
  g->n_alloc = 1;
  g->n_slots = 1; /* until workers start */
  pthread_cond_init(&g->work_cv, NULL);
  pthread_cond_init(&g->done_cv, NULL);
  /* fixed header: deflate, no name, no mtime (reproducible files), Unix */
  static const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  if (ops) note_err(g, sink(ctx, header, sizeof header));
  *out = g;
  return FT_OK;
}

/* Starts the workers, with every signal blocked in them: signals stay with the
 * program's own threads (the writer can run from a signal-driven helper). Fewer
 * than asked, or none, is fine: the calling thread compresses what they don't. */
static void start_workers(ft__gz *g) {
  /* workers + 2 blocks keep every worker busy while the caller fills one and
   * writes another: memory stays bounded at about 1.1 MB per slot */
  size_t want = (size_t)g->want_workers + 2;
  size_t have = 1;
  while (have < want && alloc_slot(g, &g->slots[have], FT__GZ_BLOCK)) have++;
  g->n_alloc = have;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int n = 0;
  while (n < g->want_workers && (size_t)n + 2 <= have && pthread_create(&g->workers[n], NULL, worker_main, g) == 0) n++;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_mutex_lock(&g->mu);
  g->n_workers = n;
  g->n_slots = n ? have : 1;
  pthread_mutex_unlock(&g->mu);
  g->want_workers = n; /* never try again */
}

/* (deflate.h) */
int ft__gz_planned_workers(const ft__gz *g) { return g->want_workers; }

char *ft__gz_buf(ft__gz *g, size_t *cap) {
  slot *s = &g->slots[g->n_pushed % g->n_slots];                                  /* free: push waited for it */
  if (g->n_pushed && s->cap < FT__GZ_BLOCK) (void)alloc_slot(g, s, FT__GZ_BLOCK); /* out of memory: smaller blocks do */
  *cap = s->cap;
  return s->in;
}

static int push(ft__gz *g, size_t used, bool final) {
  if (!final && g->want_workers && !g->n_workers && g->n_pushed == 0) start_workers(g);
  slot *s = &g->slots[g->n_pushed % g->n_slots];
  s->len = used;
  s->final = final;
  if (!g->n_workers) {
    compress_slot(g->ops, g->inline_state, s);
    g->n_pushed++;
    g->n_written++;
    note_err(g, emit(g, s, g->err != 0));
    return g->err;
  }
  pthread_mutex_lock(&g->mu);
  s->state = QUEUED;
  g->n_pushed++;
  pthread_cond_signal(&g->work_cv);
  /* the slot filled next must be written out; the last block: everything */
  while (final ? g->n_written < g->n_pushed : g->n_pushed - g->n_written >= g->n_slots)
    pthread_cond_wait(&g->done_cv, &g->mu);
  int err = g->err;
  pthread_mutex_unlock(&g->mu);
  return err;
}

int ft__gz_push(ft__gz *g, size_t used) { return push(g, used, false); }

static void stop_workers(ft__gz *g) {
  if (!g->n_workers) return;
  pthread_mutex_lock(&g->mu);
  g->stop = true;
  pthread_cond_broadcast(&g->work_cv);
  pthread_mutex_unlock(&g->mu);
  for (int i = 0; i < g->n_workers; i++) pthread_join(g->workers[i], NULL);
  g->n_workers = 0;
}

int ft__gz_finish(ft__gz *g, size_t used) {
  push(g, used, true);
  stop_workers(g);
  if (!g->ops) return g->err;
  unsigned char trailer[8];
  for (int i = 0; i < 4; i++) {
    trailer[i] = (unsigned char)(g->crc >> (8 * i));
    trailer[4 + i] = (unsigned char)(g->total_in >> (8 * i)); /* ISIZE: length mod 2^32 */
  }
  if (!g->err) note_err(g, g->sink(g->ctx, trailer, sizeof trailer));
  return g->err;
}

void ft__gz_free(ft__gz *g) {
  if (!g) return;
  stop_workers(g);
  for (size_t i = 0; i < g->n_alloc; i++) {
    free(g->slots[i].in);
    free(g->slots[i].out);
  }
  free(g->slots);
  if (g->ops) g->ops->state_free(g->inline_state);
  pthread_cond_destroy(&g->work_cv);
  pthread_cond_destroy(&g->done_cv);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

int ft__gz_workers(const ft__gz *g) { return g->n_workers; }

const ft__deflate_ops *ft__deflate_default(void) {
  const ft__deflate_ops *isal = ft__deflate_isal();
  const char *v = getenv("FLAGOS_TRACE_DEFLATE");
  if (v && *v) {
    if (!strcmp(v, "zlib")) return &ft__deflate_zlib;
    if (!strcmp(v, "isal") && isal) return isal;
    ft__warn("FLAGOS_TRACE_DEFLATE='%s': %s; using %s", v,
             strcmp(v, "isal") ? "not zlib or isal" : "ISA-L is not available", isal ? "isal" : "zlib");
  }
  return isal ? isal : &ft__deflate_zlib;
}
