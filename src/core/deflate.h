/* gzip output in independent blocks: the deflate backends (zlib, ISA-L) and the pipeline that runs them on worker
 * threads. */
#ifndef FT_DEFLATE_H
#define FT_DEFLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* One deflate implementation. A worker owns one state; blocks are compressed
 * independently (no shared window), so any worker can take any block. */
typedef struct ft__deflate_ops {
  const char *name;
  void *(*state_new)(void); /* NULL when out of memory */
  void (*state_free)(void *st);
  /* Raw deflate of in[0..n) into out[0..cap): a final block when final, else
   * blocks ending byte-aligned (a sync flush), so the next block's output can
   * follow it. Returns the bytes written, 0 on failure. */
  size_t (*compress)(void *st, const void *in, size_t n, bool final, void *out, size_t cap);
  uint32_t (*crc32)(uint32_t crc, const void *p, size_t n);
} ft__deflate_ops;

extern const ft__deflate_ops ft__deflate_zlib;
/* ISA-L's igzip, or NULL when not built in or its library (libisal.so.2) cannot be
 * loaded. Loaded once, on first use. */
const ft__deflate_ops *ft__deflate_isal(void);
/* ISA-L's inflate for readers (flagtrace stats), from the same run-time load as
 * the deflate above, so that the command never needs libisal to start: NULL when
 * not built in or not loadable. The functions take ISA-L's struct inflate_state. */
struct inflate_state;
typedef struct ft__isal_inflate_api {
  void (*init)(struct inflate_state *state);
  void (*reset)(struct inflate_state *state);
  int (*inflate)(struct inflate_state *state);
} ft__isal_inflate_api;
const ft__isal_inflate_api *ft__isal_inflate(void);
/* The fastest available; FLAGOS_TRACE_DEFLATE=zlib|isal picks one (unknown or
 * unavailable: the default, with a warning). */
const ft__deflate_ops *ft__deflate_default(void);

/* Input bytes per block: large enough that independent windows cost little ratio,
 * small enough that the ring of blocks stays a few MB. */
enum { FT__GZ_BLOCK = 512 * 1024 };
/* The first block is smaller: a small trace allocates and touches little. */
enum { FT__GZ_FIRST_BLOCK = 64 * 1024 };

/* Where output bytes go, in order, one call at a time, from a worker thread (with
 * every signal blocked) or the caller. Returns 0 or an errno value. */
typedef int (*ft__gz_sink)(void *ctx, const void *p, size_t n);

/* The CPUs this process may use. */
int ft__cpus(void);
/* Worker threads to start: env's count when set (a bad value warns), else dflt;
 * either kept within [0, 8]. */
int ft__worker_threads(const char *env, int dflt);
/* The default count of deflate workers for cpus usable CPUs: half of those besides
 * the caller's, rounded up, at most 8 (1 -> 0, 2 -> 1, 4 -> 2, 8 -> 4, 16+ -> 8). */
int ft__gz_default_workers(int cpus);

typedef struct ft__gz ft__gz;
/* A gzip stream (one member) written through sink; with ops NULL, the plain bytes
 * (one worker writes while the caller fills the next block). threads < 0: the default
 * (FLAGOS_TRACE_GZIP_THREADS, else ft__gz_default_workers of the CPUs this process
 * may use); 0: compress on the calling thread. Workers start only once a second block
 * is pushed, so small traces start none. */
ft_status ft__gz_open(ft__gz **g, const ft__deflate_ops *ops, int threads, ft__gz_sink sink, void *ctx);
/* The workers the stream will run besides the caller (0: none) before they start
 * (with the second block), then those that started (ft__gz_workers). */
int ft__gz_planned_workers(const ft__gz *g);
/* The block to fill next and its capacity (FT__GZ_FIRST_BLOCK, then FT__GZ_BLOCK
 * unless memory ran short). */
char *ft__gz_buf(ft__gz *g, size_t *cap);
/* Hands the filled block (used bytes of ft__gz_buf) to compression. Returns the
 * first error seen so far (sink, compression), 0 if none. */
int ft__gz_push(ft__gz *g, size_t used);
/* Pushes the current block (used bytes) as the last, writes everything and the
 * trailer, stops the workers. Returns the first error, 0 if none. */
int ft__gz_finish(ft__gz *g, size_t used);
/* Stops the workers and frees; nothing more is written. */
void ft__gz_free(ft__gz *g);
/* A memory writer (with discard: one that only counts bytes) compressing with ops
 * on threads workers as ft__gz_open takes them; ops NULL: plain. For tests and
 * benchmarks that compare backends. */
ft_status ft__out_open_gz(ft__out **out, const ft__deflate_ops *ops, int threads, bool discard);
/* Worker threads running now (tests). */
int ft__gz_workers(const ft__gz *g);

#endif
