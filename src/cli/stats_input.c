/* `flagtrace stats` input: files, stdin or memory, inflated (zlib or ISA-L) on a second thread and fed to the reader. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef FT_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "deflate.h" /* ISA-L's inflate, loaded at run time (zlib without it) */
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
  /* ISA-L's inflate, ~4x zlib's (README, bench_stats --split), when libisal loads */
  const ft__isal_inflate_api *isal_api;
  struct inflate_state *isal;
#endif
  unsigned char *out; /* the chunk handed to the parser (single-threaded reads) */
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

static long src_next(void *p, unsigned char *buf, size_t cap, char *err, size_t errlen) {
  src *s = p;
  bool failed = false;
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
      snprintf(err, errlen, "truncated gzip data after %llu bytes of text", (unsigned long long)s->total_out);
      return -1;
    }
    if (s->gz_member_done) { /* more bytes after a member: another member, or garbage */
      if (s->left < 2 && s->f && !s->eof) { /* the magic straddles a read: keep one byte */
        unsigned char c = s->mem[0];
        s->fbuf[0] = c;
        size_t n = fread(s->fbuf + 1, 1, RAW_CHUNK - 1, s->f);
        if (n < RAW_CHUNK - 1) s->eof = true;
        s->mem = s->fbuf;
        s->left = n + 1;
      }
      if (s->left < 2 || s->mem[0] != 0x1f || s->mem[1] != 0x8b) {
        snprintf(err, errlen, "trailing garbage after the gzip data at compressed byte %llu",
                 (unsigned long long)s->raw_read);
        return -1;
      }
      if (!gz_reset(s)) return -1;
      s->gz_member_done = false;
    }
    size_t used, before = out_left;
    int r = gz_step(s, buf + (cap - out_left), &out_left, &used, err, errlen);
    s->mem += used;
    s->left -= used;
    s->raw_read += used;
    s->total_out += before - out_left;
    if (r < 0) return -1;
    s->gz_member_done = r == 1;
  }
  return (long)(cap - out_left);
}

static long sync_next(void *p, const unsigned char **data, char *err, size_t errlen) {
  src *s = p;
  *data = s->out;
  return src_next(s, s->out, CHUNK, err, errlen);
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
    long n = src_next(q->s, q->buf[tail], CHUNK, q->err, sizeof q->err);
    pthread_mutex_lock(&q->mu);
    q->len[tail] = n;
    q->count++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (n <= 0) return NULL;
  }
}

static long pipe_next(void *p, const unsigned char **data, char *err, size_t errlen) {
  pipe_t *q = p;
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
  unsigned char *mem = malloc((size_t)PIPE_SLOTS * CHUNK);
  pthread_t th;
  if (!mem || pthread_mutex_init(&q.mu, NULL)) {
    free(mem);
    return ft__stats_parse(st, sync_next, s, err, errlen);
  }
  pthread_cond_init(&q.cv, NULL);
  for (int i = 0; i < PIPE_SLOTS; i++) q.buf[i] = mem + (size_t)i * CHUNK;
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

/* Reads from s after looking at its first bytes for gzip's magic. */
static ft_status read_src(ft_stats *st, src *s, char *err, size_t errlen) {
  bool failed = false;
  if (raw_fill(s, err, errlen, &failed) && s->left >= 2 && s->mem[0] == 0x1f && s->mem[1] == 0x8b) {
    if (!gz_init(s)) return FT_ENOMEM;
    s->gz = true;
  }
  ft_status r;
  if (failed) {
    r = FT_EIO;
  } else if (s->f) { /* a file: read and inflated on a second thread */
    r = parse_piped(st, s, err, errlen);
  } else {
    s->out = malloc(CHUNK);
    r = s->out ? ft__stats_parse(st, sync_next, s, err, errlen) : FT_ENOMEM;
    free(s->out);
  }
  if (s->gz) gz_end(s);
  return r;
}

ft_status ft_stats_read(ft_stats *st, const char *path, char *err, size_t errlen) {
  src s;
  memset(&s, 0, sizeof s);
  bool std_in = !strcmp(path, "-");
  s.f = std_in ? stdin : fopen(path, "rb");
  if (!s.f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return FT_EIO;
  }
  s.fbuf = malloc(RAW_CHUNK);
  ft_status r = s.fbuf ? read_src(st, &s, err, errlen) : FT_ENOMEM;
  free(s.fbuf);
  if (!std_in) fclose(s.f);
  return r;
}

ft_status ft_stats_read_mem(ft_stats *st, const char *data, size_t len, char *err, size_t errlen) {
  src s;
  memset(&s, 0, sizeof s);
  s.mem = (const unsigned char *)data;
  s.left = len;
  return read_src(st, &s, err, errlen);
}
