/* The per-process key of keyed_hash.h. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "keyed_hash.h"

uint64_t ft__hash_key[2];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* From getrandom; where that fails (no entropy yet, an old kernel), from the clocks,
 * the process id and addresses ASLR placed: weaker, still unknown to an input's author. */
static void draw_key(void) {
  uint64_t k[2];
  if (getrandom(k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
    struct timespec a, b;
    clock_gettime(CLOCK_REALTIME, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    k[0] = (uint64_t)a.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)a.tv_sec ^ (uint64_t)(uintptr_t)&a;
    k[1] = (uint64_t)b.tv_nsec * 0xc2b2ae3d27d4eb4full ^ (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&draw_key;
  }
  ft__hash_key[0] = k[0];
  ft__hash_key[1] = k[1];
}

void ft__hash_key_init(void) { pthread_once(&key_once, draw_key); }
