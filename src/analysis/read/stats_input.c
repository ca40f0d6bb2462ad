/* `flagtrace stats` input: files, stdin or memory, inflated (zlib or ISA-L) on a second thread and fed to the reader.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#ifdef FT_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "deflate.h"    /* ISA-L's inflate, loaded at run time (zlib without it) */
#include "input_kind.h" /* what an input that is not a trace looks like */
#include "json_scan.h"  /* ft__json_ws */
#include "stats_internal.h"

/* Input bytes from a file or from memory, inflated when they start with gzip's
 * magic. Concatenated gzip members are read in turn (gzip(1) writes them);
 * anything else after the last member is refused, not ignored. */
typedef struct src {
  FILE *f;
  const unsigned char *mem; /* memory input, or the file's buffer */
  size_t left;              /* unread bytes at mem */
  unsigned char *fbuf;
  bool eof;
  uint64_t raw_read; /* compressed bytes taken so far */
  bool gz, gz_member_done;
  uint64_t total_out; /* text bytes inflated */
  z_stream z;
#ifdef FT_HAVE_ISAL
  /* ISA-L's inflate, ~4x zlib's (docs/measurements.md, bench_stats --split), when libisal loads */
  const ft__isal_inflate_api *isal_api;
  struct inflate_state *isal;
#endif
  unsigned char *out; /* the chunk handed to the parser (single-threaded reads) */
  size_t chunk;       /* text bytes asked of each read: every way of parsing reads alike */
  char perr[256];     /* corrupt data found after some text: that text first, then this */
  bool pending;
  ft__digest *dg; /* the raw bytes' digest, as they are read (want_source); NULL: none */
  unsigned char head[FT__INPUT_HEAD], text[FT__INPUT_HEAD]; /* the first raw and inflated bytes */
  size_t n_head, n_text;
} src;

enum { RAW_CHUNK = 1 << 18, CHUNK = 1 << 20 };

static bool gz_init(src *s) {
#ifdef FT_HAVE_ISAL
  if ((s->isal_api = ft__isal_inflate()) != NULL) {
    s->isal = malloc(sizeof *s->isal);
    if (!s->isal) return false;
    s->isal_api->init(s->isal);
    s->isal->crc_flag = ISAL_GZIP; /* header parsed, CRC and length checked */
    return true;
  }
#endif
  return inflateInit2(&s->z, 15 + 16) == Z_OK;
}

static void gz_end(src *s) {
#ifdef FT_HAVE_ISAL
  if (s->isal_api) {
    free(s->isal);
    return;
  }
#endif
  inflateEnd(&s->z);
}

static bool gz_reset(src *s) {
#ifdef FT_HAVE_ISAL
  if (s->isal_api) {
    s->isal_api->reset(s->isal);
    s->isal->crc_flag = ISAL_GZIP;
    return true;
  }
#endif
  return inflateReset(&s->z) == Z_OK;
}

/* Inflates from s->mem into out; *used input bytes taken. 1 at a member's end,
 * 0 for more, -1 on corrupt data (err set). */
static int gz_step(src *s, unsigned char *out, size_t *out_left, size_t *used, char *err, size_t errlen) {
  uint32_t in = (uint32_t)(s->left < UINT32_MAX ? s->left : UINT32_MAX);
#ifdef FT_HAVE_ISAL
  if (s->isal_api) {
    struct inflate_state *z = s->isal;
    z->next_in = (uint8_t *)s->mem;
    z->avail_in = in;
    z->next_out = out;
    z->avail_out = (uint32_t)*out_left;
    int r = s->isal_api->inflate(z);
    *used = in - z->avail_in;
    *out_left = z->avail_out;
    if (r < 0) {
      snprintf(err, errlen, "corrupt gzip data (%s)",
               r == ISAL_INCORRECT_CHECKSUM ? "incorrect data check"
               : r == ISAL_INVALID_WRAPPER  ? "incorrect header"
                                            : "invalid deflate data");
      return -1;
    }
    return z->block_state == ISAL_BLOCK_FINISH;
  }
#endif
  s->z.next_in = (unsigned char *)s->mem;
  s->z.avail_in = in;
  s->z.next_out = out;
  s->z.avail_out = (uInt)*out_left;
  int r = inflate(&s->z, Z_NO_FLUSH);
  *used = in - s->z.avail_in;
  *out_left = s->z.avail_out;
  if (r != Z_OK && r != Z_BUF_ERROR && r != Z_STREAM_END) {
    snprintf(err, errlen, "corrupt gzip data (%s)", s->z.msg ? s->z.msg : "inflate failed");
    return -1;
  }
  return r == Z_STREAM_END;
}

/* Makes unread raw bytes available; false at the end of input or on a read error. */
static bool raw_fill(src *s, char *err, size_t errlen, bool *failed) {
  if (s->left) return true;
  if (!s->f || s->eof) return false;
  size_t n = fread(s->fbuf, 1, RAW_CHUNK, s->f);
  if (s->dg) ft__digest_add(s->dg, s->fbuf, n);
  if (n < RAW_CHUNK) {
    if (ferror(s->f)) {
      snprintf(err, errlen, "read error (%s)", strerror(errno));
      *failed = true;
      return false;
    }
    s->eof = true;
  }
  s->mem = s->fbuf;
  s->left = n;
  return n > 0;
}

/* At least want raw bytes at s->mem when the input has them: the few left are
 * moved to the buffer's start and the rest read after them. */
static void raw_ensure(src *s, size_t want) {
  if (s->left >= want || !s->f || s->eof) return;
  memmove(s->fbuf, s->mem, s->left);
  size_t n = fread(s->fbuf + s->left, 1, RAW_CHUNK - s->left, s->f);
  if (s->dg) ft__digest_add(s->dg, s->fbuf + s->left, n);
  if (n < RAW_CHUNK - s->left) s->eof = true;
  s->mem = s->fbuf;
  s->left += n;
}

/* A gzip member's first bytes (s->mem[0, 2) are its magic): a method other than
 * deflate, or any of FLG's reserved bits, is refused as gzip(1) refuses it (ISA-L's
 * inflate ignores them). Too few bytes: left to the inflater, which says truncated. */
static bool member_header_ok(src *s, char *err, size_t errlen) {
  raw_ensure(s, 4);
  if (s->left < 4 || (s->mem[2] == 8 && !(s->mem[3] & 0xE0))) return true;
  snprintf(err, errlen, "corrupt gzip data (%s) at compressed byte %llu",
           s->mem[2] != 8 ? "not deflate" : "reserved header flags set", (unsigned long long)s->raw_read);
  return false;
}

/* Corrupt data after got bytes of text in this read: those bytes now, the error
 * (err) at the next read, so that the parser sees every byte before it however
 * the text is cut into reads. */
static long bad_data(src *s, size_t got, const char *err) {
  if (!got) return -1;
  snprintf(s->perr, sizeof s->perr, "%s", err);
  s->pending = true;
  return (long)got;
}

static long src_next(void *p, unsigned char *buf, size_t cap, char *err, size_t errlen) {
  src *s = p;
  bool failed = false;
  if (s->pending) {
    snprintf(err, errlen, "%s", s->perr);
    return -1;
  }
  if (!s->gz) {
    if (!raw_fill(s, err, errlen, &failed)) return failed ? -1 : 0;
    size_t n = s->left < cap ? s->left : cap;
    memcpy(buf, s->mem, n);
    s->mem += n;
    s->left -= n;
    return (long)n;
  }
  size_t out_left = cap;
  while (out_left == cap) {
    if (!raw_fill(s, err, errlen, &failed)) {
      if (failed) return -1;
      if (s->gz_member_done) return 0;
      /* the input ends mid-member: text the inflater still holds comes out
       * first (however small the reads), then the error */
      size_t used, before = out_left;
      int r = gz_step(s, buf + (cap - out_left), &out_left, &used, err, errlen);
      s->total_out += before - out_left;
      if (r < 0) return bad_data(s, cap - out_left, err);
      s->gz_member_done = r == 1;
      if (out_left < before || r == 1) continue;
      snprintf(err, errlen, "truncated gzip data after %llu bytes of text", (unsigned long long)s->total_out);
      return -1;
    }
    if (s->gz_member_done) { /* more bytes after a member: another member, or garbage */
      raw_ensure(s, 2);      /* the magic may straddle a read */
      if (s->left < 2 || s->mem[0] != 0x1f || s->mem[1] != 0x8b) {
        snprintf(err, errlen, "trailing garbage after the gzip data at compressed byte %llu",
                 (unsigned long long)s->raw_read);
        return -1;
      }
      if (!member_header_ok(s, err, errlen)) return bad_data(s, cap - out_left, err);
      if (!gz_reset(s)) return -1;
      s->gz_member_done = false;
    }
    size_t used, before = out_left;
    int r = gz_step(s, buf + (cap - out_left), &out_left, &used, err, errlen);
    s->mem += used;
    s->left -= used;
    s->raw_read += used;
    s->total_out += before - out_left;
    if (r < 0) return bad_data(s, cap - out_left, err);
    s->gz_member_done = r == 1;
  }
  size_t take = cap - out_left; /* the text's first bytes, for describe() */
  if (take > FT__INPUT_HEAD - s->n_text) take = FT__INPUT_HEAD - s->n_text;
  memcpy(s->text + s->n_text, buf, take);
  s->n_text += take;
  return (long)(cap - out_left);
}

static long sync_next(void *p, const unsigned char **data, const ft__evbatch **batch, char *err, size_t errlen) {
  src *s = p;
  *data = s->out;
  *batch = NULL;
  return src_next(s, s->out, s->chunk, err, errlen);
}

/* Reading (and inflating) on a second thread while the parser works: a ring of
 * PIPE_SLOTS chunks, so the parse waits only when inflating is the slower. */
enum { PIPE_SLOTS = 4 };
typedef struct pipe {
  src *s;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned char *buf[PIPE_SLOTS];
  long len[PIPE_SLOTS];
  size_t head, count; /* the oldest filled slot; filled slots, the one the parser holds included */
  bool held, stop;
  char err[256]; /* the reader's error, for the slot whose len is -1 */
} pipe_t;

static void *pipe_fill(void *p) {
  pipe_t *q = p;
  for (size_t tail = 0;; tail = (tail + 1) % PIPE_SLOTS) {
    pthread_mutex_lock(&q->mu);
    while (q->count == PIPE_SLOTS && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
    bool stop = q->stop;
    pthread_mutex_unlock(&q->mu);
    if (stop) return NULL;
    long n = src_next(q->s, q->buf[tail], q->s->chunk, q->err, sizeof q->err);
    pthread_mutex_lock(&q->mu);
    q->len[tail] = n;
    q->count++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (n <= 0) return NULL;
  }
}

static long pipe_next(void *p, const unsigned char **data, const ft__evbatch **batch, char *err, size_t errlen) {
  pipe_t *q = p;
  *batch = NULL;
  pthread_mutex_lock(&q->mu);
  if (q->held) { /* the parser is done with the previous chunk */
    q->head = (q->head + 1) % PIPE_SLOTS;
    q->count--;
    q->held = false;
    pthread_cond_broadcast(&q->cv);
  }
  while (!q->count) pthread_cond_wait(&q->cv, &q->mu);
  long n = q->len[q->head];
  *data = q->buf[q->head];
  q->held = n > 0;
  pthread_mutex_unlock(&q->mu);
  if (n < 0) snprintf(err, errlen, "%s", q->err);
  return n;
}

/* Parses s with its reading on a second thread; single-threaded when one cannot start. */
static ft_status parse_piped(ft_stats *st, src *s, char *err, size_t errlen) {
  pipe_t q;
  memset(&q, 0, sizeof q);
  q.s = s;
  unsigned char *mem = malloc((size_t)PIPE_SLOTS * s->chunk);
  pthread_t th;
  if (!mem || pthread_mutex_init(&q.mu, NULL)) {
    free(mem);
    return ft__stats_parse(st, sync_next, s, err, errlen);
  }
  pthread_cond_init(&q.cv, NULL);
  for (int i = 0; i < PIPE_SLOTS; i++) q.buf[i] = mem + (size_t)i * s->chunk;
  ft_status r;
  if (pthread_create(&th, NULL, pipe_fill, &q)) {
    r = ft__stats_parse(st, sync_next, s, err, errlen);
  } else {
    r = ft__stats_parse(st, pipe_next, &q, err, errlen);
    pthread_mutex_lock(&q.mu); /* the parse may stop early (an error): stop the reader */
    q.stop = true;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    pthread_join(th, NULL);
  }
  pthread_cond_destroy(&q.cv);
  pthread_mutex_destroy(&q.mu);
  free(mem);
  return r;
}

/* Parse workers: the text, read and inflated on one thread, is cut into
 * segments that end where one trace event ends and the next begins ("}" "," "{"
 * with whitespace between); each is parsed on a worker as if it started there,
 * while this thread adds the workers' events to the summary in the text's
 * order and parses itself any segment whose guess did not hold (a cut inside
 * a string, say). The result is the single-threaded parse's, byte for byte. */
enum { SEG_TAIL = 1 << 16 }; /* a cut is looked for in a segment's last 64 kB; none: the next is parsed here */
enum { SEG_FREE, SEG_FILLED, SEG_CLAIMED, SEG_DONE };
typedef struct seg {
  unsigned char *buf; /* SEG_TAIL + chunk bytes: a tail and a read */
  long len;           /* bytes, 0 at the end of the text, -1 on a read error */
  uint64_t base;      /* offset of buf[0] in the text */
  unsigned depth;     /* 1 or 2: the events array's, as the worker assumes it; 0: not parsed by one */
  int state;
  ft__evbatch *batch;
} seg;

typedef struct par {
  src *s;
  size_t n_slots;
  seg *slots;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t head, filled; /* sequence numbers: the reader's next segment, the filler's */
  bool held, stop, fill_done;
  unsigned char *tail; /* the text after the last cut, to start the next segment */
  size_t tail_len;
  char err[256];
} par;

static seg *slot_of(par *q, uint64_t i) { return &q->slots[i % q->n_slots]; }

/* The last place in b[0, len) just after a '}' that whitespace, ',' and '{'
 * follow, within the last SEG_TAIL bytes; 0 when there is none. */
static size_t find_cut(const unsigned char *b, size_t len) {
  size_t lo = len > SEG_TAIL ? len - SEG_TAIL : 0;
  const unsigned char *p = b + len;
  while ((p = memrchr(b + lo, '{', (size_t)(p - (b + lo)))) != NULL) {
    size_t k = (size_t)(p - b);
    while (k > lo && ft__json_ws[b[k - 1]]) k--;
    if (k > lo && b[k - 1] == ',') {
      k--;
      while (k > lo && ft__json_ws[b[k - 1]]) k--;
      if (k > lo && b[k - 1] == '}') return k;
    }
  }
  return 0;
}

/* The depth of the events array: 1 for a bare array, else 2 (the top map's "traceEvents"). */
static unsigned events_depth(const unsigned char *b, size_t n) {
  size_t i = 0;
  while (i < n && ft__json_ws[b[i]]) i++;
  return i < n && b[i] == '[' ? 1 : 2;
}

/* The filler: each segment is the text after the last cut and one read (the
 * reads the single-threaded parse makes: the same text, then the same error),
 * cut again where an event ends. */
static void *par_fill(void *p) {
  par *q = p;
  uint64_t base = 0;
  unsigned depth = 0;
  bool eof = false, failed = false, spec = false; /* spec: the next segment starts at a cut */
  for (;;) {
    pthread_mutex_lock(&q->mu);
    seg *g = slot_of(q, q->filled);
    while (g->state != SEG_FREE && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
    bool stop = q->stop;
    pthread_mutex_unlock(&q->mu);
    if (stop) break;
    size_t got = q->tail_len;
    memcpy(g->buf, q->tail, got);
    q->tail_len = 0;
    if (!eof && !failed) {
      long n = src_next(q->s, g->buf + got, q->s->chunk, q->err, sizeof q->err);
      failed = n < 0;
      eof = n == 0;
      got += n > 0 ? (size_t)n : 0;
    }
    if (failed && !got) {
      g->len = -1;
      g->depth = 0;
    } else { /* at the end (or an error) the last text goes whole */
      size_t cut = eof || failed ? 0 : find_cut(g->buf, got);
      if (cut) {
        q->tail_len = got - cut;
        memcpy(q->tail, g->buf + cut, q->tail_len);
        got = cut;
      }
      if (!depth && got) depth = events_depth(g->buf, got);
      g->len = (long)got;
      g->base = base;
      g->depth = spec && got ? depth : 0;
      base += got;
      spec = cut != 0;
    }
    pthread_mutex_lock(&q->mu);
    g->state = g->depth ? SEG_FILLED : SEG_DONE;
    q->filled++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (g->len <= 0) break;
  }
  pthread_mutex_lock(&q->mu);
  q->fill_done = true;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

static void *par_work(void *p) {
  par *q = p;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    seg *g = NULL;
    for (uint64_t i = q->head; !g && i < q->filled; i++)
      if (slot_of(q, i)->state == SEG_FILLED) g = slot_of(q, i);
    if (!g) {
      if (q->stop || q->fill_done) break;
      pthread_cond_wait(&q->cv, &q->mu);
      continue;
    }
    g->state = SEG_CLAIMED;
    pthread_mutex_unlock(&q->mu);
    ft__stats_parse_segment(g->batch, g->buf, (size_t)g->len, g->base, g->depth);
    pthread_mutex_lock(&q->mu);
    g->state = SEG_DONE;
    pthread_cond_broadcast(&q->cv);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

static long par_next(void *p, const unsigned char **data, const ft__evbatch **batch, char *err, size_t errlen) {
  par *q = p;
  pthread_mutex_lock(&q->mu);
  if (q->held) { /* the reader is done with the previous segment */
    slot_of(q, q->head)->state = SEG_FREE;
    q->head++;
    q->held = false;
    pthread_cond_broadcast(&q->cv);
  }
  seg *g = slot_of(q, q->head);
  while (!(q->head < q->filled && g->state == SEG_DONE)) pthread_cond_wait(&q->cv, &q->mu);
  long n = g->len;
  *data = g->buf;
  *batch = g->depth ? g->batch : NULL;
  q->held = n > 0;
  pthread_mutex_unlock(&q->mu);
  if (n < 0) snprintf(err, errlen, "%s", q->err);
  return n;
}

/* Parses s with `workers` parse workers; false when they cannot start (nothing read yet). */
static bool parse_parallel(ft_stats *st, src *s, int workers, ft_status *r, char *err, size_t errlen) {
  par q;
  memset(&q, 0, sizeof q);
  q.s = s;
  q.n_slots = 2 * (size_t)workers + 2; /* each worker one ahead, and the reader's */
  q.slots = calloc(q.n_slots, sizeof *q.slots);
  q.tail = malloc(SEG_TAIL);
  bool ok = q.slots && q.tail && !pthread_mutex_init(&q.mu, NULL);
  if (!ok) {
    free(q.slots), free(q.tail);
    return false;
  }
  pthread_cond_init(&q.cv, NULL);
  for (size_t i = 0; ok && i < q.n_slots; i++)
    ok = (q.slots[i].buf = malloc(SEG_TAIL + s->chunk)) &&
         (q.slots[i].batch = ft__evbatch_new(st->want_args || st->want_memory, st->want_modules || st->read_pyfunc));
  pthread_t filler, th[64];
  int started = 0;
  while (ok && started < workers && started < 64 && !pthread_create(&th[started], NULL, par_work, &q)) started++;
  bool run = ok && started && !pthread_create(&filler, NULL, par_fill, &q);
  if (run) {
    *r = ft__stats_parse(st, par_next, &q, err, errlen);
    pthread_mutex_lock(&q.mu);
  } else {
    pthread_mutex_lock(&q.mu);
    q.fill_done = true;
  }
  q.stop = true; /* the parse may stop early (an error): stop the filler and the workers */
  pthread_cond_broadcast(&q.cv);
  pthread_mutex_unlock(&q.mu);
  if (run) pthread_join(filler, NULL);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  for (size_t i = 0; i < q.n_slots; i++) {
    free(q.slots[i].buf);
    ft__evbatch_free(q.slots[i].batch);
  }
  free(q.slots);
  free(q.tail);
  pthread_cond_destroy(&q.cv);
  pthread_mutex_destroy(&q.mu);
  return run;
}

/* Parse workers for this read: st's choice, else FLAGTRACE_STATS_THREADS, else
 * one per CPU beyond the first, shared with the job's other file threads. */
static int parse_workers(const ft_stats *st, const src *s) {
  if (st->parse_threads >= 0) return st->parse_threads;
  if (!s->f) return 0; /* memory (tests, fuzzing): single-threaded unless asked */
  /* one worker only moves the parse to another thread: slower on 2 CPUs (docs/measurements.md) */
  int n = ft__cpus() / (st->file_threads > 1 ? st->file_threads : 1) - 1;
  return ft__worker_threads("FLAGTRACE_STATS_THREADS", n < 2 ? 0 : n);
}

/* Reads from s after looking at its first bytes for gzip's magic. */
static ft_status read_src(ft_stats *st, src *s, char *err, size_t errlen) {
  bool failed = false;
  bool any = raw_fill(s, err, errlen, &failed);
  s->n_head = any ? (s->left < FT__INPUT_HEAD ? s->left : FT__INPUT_HEAD) : 0;
  memcpy(s->head, s->mem, s->n_head);
  if (any && s->left >= 2 && s->mem[0] == 0x1f && s->mem[1] == 0x8b) {
    if (!member_header_ok(s, err, errlen)) return FT_EPARSE;
    if (!gz_init(s)) return FT_ENOMEM;
    s->gz = true;
  }
  ft_status r;
  s->chunk = st->segment_bytes ? st->segment_bytes : CHUNK;
  int workers = failed ? 0 : parse_workers(st, s);
  if (failed) {
    r = FT_EIO;
  } else if (workers > 0 && parse_parallel(st, s, workers, &r, err, errlen)) {
    /* done */
  } else if (s->f) { /* a file: read and inflated on a second thread */
    r = parse_piped(st, s, err, errlen);
  } else {
    s->out = malloc(s->chunk);
    r = s->out ? ft__stats_parse(st, sync_next, s, err, errlen) : FT_ENOMEM;
    free(s->out);
  }
  if (s->gz) gz_end(s);
  return r;
}

/* A parse that failed at the text's start (or on an empty file) on bytes that are not a JSON
 * trace's: err says what the input looks like instead. A trace's own errors are kept. */
static void describe(const src *s, const char *path, char *err, size_t errlen) {
  if (strcmp(err, "empty file") && (!strstr(err, " at byte ") || strstr(err, "gzip"))) return;
  char what[512];
  if (ft__input_kind(s->head, s->n_head, s->gz, s->text, s->n_text, path, what, sizeof what))
    snprintf(err, errlen, "%s", what);
}

/* The file's identity (device, inode, mtime) when it is a regular one: stdin
 * redirected from a file has one, a pipe or a FIFO none. */
static void source_file(ft_stat_source *o, FILE *f) {
  struct stat sb;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) return;
  o->regular = true;
  o->dev = (uint64_t)sb.st_dev;
  o->ino = (uint64_t)sb.st_ino;
  o->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
}

ft_status ft_stats_read(ft_stats *st, const char *path, char *err, size_t errlen) {
  src s;
  ft__digest dg;
  memset(&s, 0, sizeof s);
  bool std_in = !strcmp(path, "-");
  s.f = std_in ? stdin : fopen(path, "rb");
  if (!s.f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return FT_EIO;
  }
  if (st->want_source) {
    memset(&st->source, 0, sizeof st->source);
    source_file(&st->source, s.f);
    ft__digest_init(&dg);
    s.dg = &dg;
  }
  s.fbuf = malloc(RAW_CHUNK);
  ft_status r = s.fbuf ? read_src(st, &s, err, errlen) : FT_ENOMEM;
  if (r == FT_EPARSE) describe(&s, std_in ? NULL : path, err, errlen);
  if (!r && s.dg) { /* the digest is of every byte: a parse that ended early leaves some */
    size_t n;
    while (!s.eof && (n = fread(s.fbuf, 1, RAW_CHUNK, s.f)) > 0) ft__digest_add(&dg, s.fbuf, n);
    if (ferror(s.f)) r = FT_EIO, snprintf(err, errlen, "read error (%s)", strerror(errno));
    st->source.digest = ft__digest_end(&dg);
    st->source.size = dg.len;
    st->source.known = true;
  }
  free(s.fbuf);
  if (!std_in) fclose(s.f);
  return r;
}

ft_status ft_stats_read_mem(ft_stats *st, const char *data, size_t len, char *err, size_t errlen) {
  src s;
  memset(&s, 0, sizeof s);
  s.mem = (const unsigned char *)data;
  s.left = len;
  if (st->want_source) { /* memory has no file identity: its bytes' digest only */
    ft__digest dg;
    ft__digest_init(&dg);
    ft__digest_add(&dg, data, len);
    st->source = (ft_stat_source){.digest = ft__digest_end(&dg), .size = len, .known = true};
  }
  ft_status r = read_src(st, &s, err, errlen);
  if (r == FT_EPARSE) describe(&s, NULL, err, errlen);
  return r;
}
