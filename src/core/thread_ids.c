/* pthread id -> OS thread id, for vendor API records that carry the former. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* Process-global, like the vendors' own numbering: each thread records its pair
 * once; a thread never registered keeps the vendor's value. */
enum { TID_SLOTS = 4096 };
static pthread_mutex_t tid_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t tid_keys[TID_SLOTS], tid_vals[TID_SLOTS];
static _Thread_local bool tid_registered;

static uint32_t tid_hash(uint32_t k) { return (k * 2654435761u) >> 20; } /* 12 bits */

void ft__thread_register(void) {
  if (tid_registered) return;
  tid_registered = true;
  uint32_t key = (uint32_t)(uintptr_t)pthread_self(), os = ft__gettid();
  if (!key) return;
  pthread_mutex_lock(&tid_mu);
  for (uint32_t i = tid_hash(key), n = 0; n < TID_SLOTS; i = (i + 1) % TID_SLOTS, n++) {
    if (tid_keys[i] == key || !tid_keys[i]) {
      tid_keys[i] = key;
      tid_vals[i] = os;
      break;
    }
  }
  pthread_mutex_unlock(&tid_mu);
}

uint32_t ft__thread_os_tid(uint32_t vendor_tid) {
  uint32_t out = vendor_tid;
  pthread_mutex_lock(&tid_mu);
  for (uint32_t i = tid_hash(vendor_tid), n = 0; vendor_tid && n < TID_SLOTS; i = (i + 1) % TID_SLOTS, n++) {
    if (!tid_keys[i]) break;
    if (tid_keys[i] == vendor_tid) {
      out = tid_vals[i];
      break;
    }
  }
  pthread_mutex_unlock(&tid_mu);
  return out;
}
