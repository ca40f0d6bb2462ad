/* The activity-buffer pool every tracer hands its vendor library: preallocated,
 * grown rather than ever returning nothing, one buffer size at a time. */
#include <pthread.h>
#include <stdlib.h>

#include "tracer_support.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t **free_list;
static size_t n_free, cap, total; /* total: buffers allocated, home or lent */
/* the most lent at once since the last reserve: each was written, so its pages count in
 * the process's RSS (P6, bench/) */
static size_t max_lent;
static size_t size = 8 * 1024 * 1024;

size_t ft__pool_buffer_size(void) {
  pthread_mutex_lock(&mu);
  size_t s = size;
  pthread_mutex_unlock(&mu);
  return s;
}

static int grow_list(size_t need) {
  if (cap >= need) return 1;
  size_t ncap = need + 16;
  uint8_t **f = realloc(free_list, ncap * sizeof *f);
  if (!f) return 0;
  free_list = f;
  cap = ncap;
  return 1;
}

int ft__pool_reserve(size_t n, size_t buffer_size) {
  int ok = 1;
  pthread_mutex_lock(&mu);
  /* a buffer of another size must never be handed out: resize only when all are home */
  max_lent = total - n_free;
  if (buffer_size != size && n_free == total) {
    while (n_free) free(free_list[--n_free]);
    total = 0;
    size = buffer_size;
  }
  if (!grow_list(n > total ? n : total)) ok = 0;
  while (ok && total < n) {
    uint8_t *b = aligned_alloc(8, size);
    if (!b) {
      ok = 0;
      break;
    }
    free_list[n_free++] = b;
    total++;
  }
  if (size != buffer_size) ok = -1;
  pthread_mutex_unlock(&mu);
  return ok;
}

size_t ft__pool_max_lent(void) {
  pthread_mutex_lock(&mu);
  size_t m = max_lent;
  pthread_mutex_unlock(&mu);
  return m;
}

uint8_t *ft__pool_get(size_t *buffer_size) {
  pthread_mutex_lock(&mu);
  uint8_t *b = n_free ? free_list[--n_free] : NULL;
  size_t s = size;
  if (!b && grow_list(total + 1)) {
    /* The pool ran dry (more threads hold buffers than were reserved). A malloc on
     * this (launching) thread is the lesser evil: handing the vendor no buffer
     * crashes older CUPTIs and drops records in newer ones. */
    b = aligned_alloc(8, s);
    if (b) total++;
  }
  size_t now = total;
  if (b && total - n_free > max_lent) max_lent = total - n_free;
  pthread_mutex_unlock(&mu);
  if (b && !n_free) ft__log("activity buffer pool: %zu buffers of %zu KiB in use", now, s >> 10);
  *buffer_size = b ? s : 0;
  return b;
}

void ft__pool_put(uint8_t *b) {
  if (!b) return;
  pthread_mutex_lock(&mu);
  if (grow_list(n_free + 1)) {
    free_list[n_free++] = b;
    b = NULL;
  } else {
    total--;
  }
  pthread_mutex_unlock(&mu);
  free(b); /* only if the free list could not take it back */
}

bool ft__held_add(ft__held *h, uint8_t *buf, size_t valid) {
  if (h->n == h->cap) {
    size_t ncap = h->cap ? h->cap * 2 : 64;
    struct ft__held_buf *n = realloc(h->items, ncap * sizeof *n);
    if (!n) return false;
    h->items = n;
    h->cap = ncap;
  }
  h->items[h->n++] = (struct ft__held_buf){buf, valid};
  return true;
}

void ft__held_keep(ft__held *h, pthread_mutex_t *mu, uint8_t *buf, size_t valid, const char *who) {
  if (buf && valid) {
    pthread_mutex_lock(mu);
    bool kept = ft__held_add(h, buf, valid);
    pthread_mutex_unlock(mu);
    if (kept) return;
    ft__warn("%s: out of memory holding an activity buffer; its records are lost", who);
  }
  ft__pool_put(buf);
}

size_t ft__held_take_all(ft__held *h, void (*decode)(void *ctx, uint8_t *buf, size_t valid), void *ctx) {
  size_t n = h->n;
  for (size_t i = 0; i < n; i++) {
    decode(ctx, h->items[i].buf, h->items[i].valid);
    ft__pool_put(h->items[i].buf);
  }
  h->n = 0;
  return n;
}

void ft__held_free(ft__held *h) {
  for (size_t i = 0; i < h->n; i++) ft__pool_put(h->items[i].buf);
  free(h->items);
  h->items = NULL;
  h->n = h->cap = 0;
}
