/* The activity-buffer pool every tracer hands its vendor library: preallocated,
 * grown rather than ever returning nothing, one buffer size at a time. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "tracer_support.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t **free_list;
static size_t n_free, cap, total; /* total: buffers allocated, home or lent */
/* the most lent at once since the last reserve: each was written, so its pages count in
 * the process's RSS (P6, bench/) */
static size_t max_lent;
static size_t size = 8 * 1024 * 1024;

/* A start's first buffers (ft__pool_first): larger, kept home between starts while
 * a start's records fit in them, given back to the system once one outgrows them.
 * mmap'd, so that giving back lowers the RSS (free() would keep a 4 MiB block in
 * the heap once glibc's mmap threshold has grown past it). */
static struct first_buf {
  uint8_t *p;
  size_t size;
  bool home;
} firsts[FT__POOL_MAX_FIRST];
static size_t n_firsts;               /* allocated, home or lent */
static size_t first_size, first_left; /* this start's size, and how many it may still take */
static bool first_armed, outgrown;

static void unmap_first(size_t i) {
  munmap(firsts[i].p, firsts[i].size);
  firsts[i] = firsts[--n_firsts];
}

/* Whether first buffer i, home, stays there for a start (under mu): this start's
 * size, first buffers on, not outgrown. */
static bool keep_first(size_t i) { return first_armed && !outgrown && firsts[i].size == first_size; }

/* Gives back the first buffers home that are no longer kept (under mu). */
static void drop_unkept_firsts(void) {
  for (size_t i = n_firsts; i-- > 0;)
    if (firsts[i].home && !keep_first(i)) unmap_first(i);
}

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

size_t ft__pool_lent(void) {
  pthread_mutex_lock(&mu);
  size_t n = total - n_free;
  for (size_t i = 0; i < n_firsts; i++) n += !firsts[i].home;
  pthread_mutex_unlock(&mu);
  return n;
}

size_t ft__pool_max_lent(void) {
  pthread_mutex_lock(&mu);
  size_t m = max_lent;
  pthread_mutex_unlock(&mu);
  return m;
}

void ft__pool_first(size_t n, size_t buffer_size) {
  pthread_mutex_lock(&mu);
  if (n > FT__POOL_MAX_FIRST) n = FT__POOL_MAX_FIRST;
  first_armed = n && buffer_size > size;
  first_left = first_armed ? n : 0;
  first_size = buffer_size;
  outgrown = false;
  drop_unkept_firsts();
  pthread_mutex_unlock(&mu);
}

void ft__pool_first_count(size_t *home, size_t *lent, bool *grew) {
  pthread_mutex_lock(&mu);
  *home = *lent = 0;
  for (size_t i = 0; i < n_firsts; i++) *(firsts[i].home ? home : lent) += 1;
  *grew = outgrown;
  pthread_mutex_unlock(&mu);
}

/* One of this start's first buffers (under mu), or NULL when it has taken them all
 * or none can be made. */
static uint8_t *take_first(void) {
  if (!first_left) return NULL;
  for (size_t i = 0; i < n_firsts; i++)
    if (firsts[i].home && firsts[i].size == first_size) {
      firsts[i].home = false;
      first_left--;
      return firsts[i].p;
    }
  if (n_firsts == FT__POOL_MAX_FIRST) return NULL;
  void *p = mmap(NULL, first_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  firsts[n_firsts++] = (struct first_buf){p, first_size, false};
  first_left--;
  return p;
}

uint8_t *ft__pool_get(size_t *buffer_size) {
  pthread_mutex_lock(&mu);
  uint8_t *fb = take_first();
  if (fb) {
    *buffer_size = first_size;
    pthread_mutex_unlock(&mu);
    return fb;
  }
  bool grew_now = first_armed && !outgrown && !first_left;
  if (grew_now) { /* a request past the first buffers: this start outgrew them */
    outgrown = true;
    drop_unkept_firsts();
  }
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
  size_t f = first_size;
  bool dry = !n_free; /* read under the lock: another thread's put changes it */
  pthread_mutex_unlock(&mu);
  if (grew_now)
    ft__log(
        "activity buffers: this start outgrew its first buffers (%zu KiB); they go back to the system as they come "
        "home",
        f >> 10);
  if (b && dry) ft__log("activity buffer pool: %zu buffers of %zu KiB in use", now, s >> 10);
  *buffer_size = b ? s : 0;
  return b;
}

void ft__pool_put(uint8_t *b) {
  if (!b) return;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < n_firsts; i++)
    if (firsts[i].p == b) {
      if (keep_first(i)) firsts[i].home = true;
      else unmap_first(i);
      pthread_mutex_unlock(&mu);
      return;
    }
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
