/* SipHash-1-3 under a key drawn once per process: hash tables that input fills. */
#ifndef FLAGTRACE_KEYED_HASH_H
#define FLAGTRACE_KEYED_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Without the key an input cannot tell which keys share a slot: an invertible mixer
 * or an unseeded FNV let 160 000 crafted External ids (or names) share one slot of
 * the stats join (19 s where sequential ids take 0.02 s, issue 35). The key is drawn
 * from getrandom at the first use (clocks, pid and addresses where that fails). Only
 * for tables whose layout never reaches an output: their order would change per run. */
extern uint64_t ft__hash_key[2];
void ft__hash_key_init(void); /* idempotent, thread-safe; the functions below call it */

static inline uint64_t ft__rotl64(uint64_t x, int b) { return x << b | x >> (64 - b); }
#define FT__SIPROUND(v0, v1, v2, v3)                                      \
  do {                                                                    \
    v0 += v1, v1 = ft__rotl64(v1, 13), v1 ^= v0, v0 = ft__rotl64(v0, 32); \
    v2 += v3, v3 = ft__rotl64(v3, 16), v3 ^= v2;                          \
    v0 += v3, v3 = ft__rotl64(v3, 21), v3 ^= v0;                          \
    v2 += v1, v1 = ft__rotl64(v1, 17), v1 ^= v2, v2 = ft__rotl64(v2, 32); \
  } while (0)

/* The state after the key, and the last block, compressed and finalized. */
static inline void ft__sip_init(uint64_t v[4]) {
  uint64_t k0 = ft__hash_key[0], k1 = ft__hash_key[1];
  v[0] = k0 ^ 0x736f6d6570736575ull, v[1] = k1 ^ 0x646f72616e646f6dull;
  v[2] = k0 ^ 0x6c7967656e657261ull, v[3] = k1 ^ 0x7465646279746573ull;
}
static inline void ft__sip_word(uint64_t v[4], uint64_t m) {
  v[3] ^= m;
  FT__SIPROUND(v[0], v[1], v[2], v[3]);
  v[0] ^= m;
}
static inline uint64_t ft__sip_finish(uint64_t v[4], uint64_t last) {
  ft__sip_word(v, last);
  v[2] ^= 0xff;
  FT__SIPROUND(v[0], v[1], v[2], v[3]);
  FT__SIPROUND(v[0], v[1], v[2], v[3]);
  FT__SIPROUND(v[0], v[1], v[2], v[3]);
  return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* SipHash-1-3 of n bytes (one compression round per 8-byte word, three to finish). */
static inline uint64_t ft__hash_bytes_keyed(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t v[4];
  ft__sip_init(v);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t m = 0;
    for (int b = 0; b < 8; b++) m |= (uint64_t)p[i + b] << (8 * b);
    ft__sip_word(v, m);
  }
  uint64_t last = (uint64_t)(n & 0xff) << 56;
  for (int b = 0; i + b < n; b++) last |= (uint64_t)p[i + b] << (8 * b);
  return ft__sip_finish(v, last);
}

/* The same of one 64-bit word (its 8 bytes, little-endian). */
static inline uint64_t ft__hash_u64_keyed(uint64_t m) {
  uint64_t v[4];
  ft__sip_init(v);
  ft__sip_word(v, m);
  return ft__sip_finish(v, 8ull << 56); /* the final block: the length, 8 bytes */
}

#endif
