/* Event storage without per-event malloc: arenas, interned strings, chunked arrays. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "keyed_hash.h"

enum { ARENA_CHUNK = 64 * 1024, ARENA_FIRST = 256 };

struct ft__arena_chunk {
  ft__arena_chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

void ft__arena_init(ft__arena *a) { memset(a, 0, sizeof *a); }

void *ft__arena_alloc(ft__arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  ft__arena_chunk *c = a->head;
  if (!c || c->cap - c->used < size) {
    /* 256 B, doubling to 64 KiB: an interning table of a few names costs a few hundred bytes */
    size_t cap = !c ? ARENA_FIRST : c->cap < ARENA_CHUNK ? 2 * c->cap : ARENA_CHUNK;
    if (cap < size) cap = size;
    ft__arena_chunk *n = malloc(sizeof *n + cap);
    if (!n) return NULL;
    n->used = 0;
    n->cap = cap;
    /* An oversized block goes behind the current chunk so the chunk's free tail
     * stays usable. */
    if (c && size > ARENA_CHUNK) {
      n->next = c->next;
      c->next = n;
    } else {
      n->next = c;
      a->head = n;
    }
    c = n;
  }
  void *p = c->data + c->used;
  c->used += size;
  a->bytes += size;
  return p;
}

void ft__arena_free(ft__arena *a) {
  ft__arena_chunk *c = a->head;
  while (c) {
    ft__arena_chunk *n = c->next;
    free(c);
    c = n;
  }
  memset(a, 0, sizeof *a);
}

/* Interning hashes are keyed (ft__hash_bytes_keyed): `stats` interns the names of
 * traces anyone may have written, and an unseeded FNV-1a let crafted names share one
 * slot (quadratic interning). The ids are handed out in order, so the table's layout
 * never reaches an output. */

void ft__intern_init(ft__strtab *in) {
  ft__hash_key_init();
  memset(in, 0, sizeof *in);
  ft__arena_init(&in->arena);
}

void ft__intern_free(ft__strtab *in) {
  ft__arena_free(&in->arena);
  free(in->strs);
  free(in->lens);
  free(in->table);
  memset(in, 0, sizeof *in);
}

static ft_status intern_rehash(ft__strtab *in) {
  uint32_t ncap = in->tcap ? in->tcap * 2 : 16;
  uint32_t *t = calloc(ncap, sizeof *t);
  if (!t) return FT_ENOMEM;
  for (uint32_t id = 0; id < in->n; id++) {
    uint32_t i = (uint32_t)ft__hash_bytes_keyed(in->strs[id], in->lens[id]) & (ncap - 1);
    while (t[i]) i = (i + 1) & (ncap - 1);
    t[i] = id + 1;
  }
  free(in->table);
  in->table = t;
  in->tcap = ncap;
  return FT_OK;
}

ft_status ft__intern(ft__strtab *in, const char *s, size_t len, uint32_t *id) {
  if (len > UINT32_MAX - 1) return FT_ERANGE;
  if ((uint64_t)(in->n + 1) * 2 > in->tcap) {
    ft_status st = intern_rehash(in);
    if (st) return st;
  }
  uint32_t i = (uint32_t)ft__hash_bytes_keyed(s, len) & (in->tcap - 1);
  for (; in->table[i]; i = (i + 1) & (in->tcap - 1)) {
    uint32_t cand = in->table[i] - 1;
    if (in->lens[cand] == len && memcmp(in->strs[cand], s, len) == 0) {
      *id = cand;
      return FT_OK;
    }
  }
  if (in->n == in->cap) {
    uint32_t ncap = in->cap ? in->cap * 2 : 8;
    const char **ns = realloc((void *)in->strs, ncap * sizeof *ns);
    if (!ns) return FT_ENOMEM;
    in->strs = ns;
    uint32_t *nl = realloc(in->lens, ncap * sizeof *nl);
    if (!nl) return FT_ENOMEM;
    in->lens = nl;
    in->cap = ncap;
  }
  char *copy = ft__arena_alloc(&in->arena, len + 1);
  if (!copy) return FT_ENOMEM;
  memcpy(copy, s, len);
  copy[len] = '\0';
  in->strs[in->n] = copy;
  in->lens[in->n] = (uint32_t)len;
  in->table[i] = in->n + 1;
  *id = in->n++;
  return FT_OK;
}

void ft__vec_init(ft__vec *v, size_t elem, unsigned shift) {
  memset(v, 0, sizeof *v);
  v->elem = elem;
  v->shift = shift;
  v->first = shift < FT__VEC_FIRST_SHIFT ? shift : FT__VEC_FIRST_SHIFT;
}

void ft__vec_free(ft__vec *v) {
  for (size_t i = 0; i < v->n_chunks; i++) free(v->chunks[i]);
  free(v->chunks);
  size_t elem = v->elem;
  unsigned shift = v->shift;
  ft__vec_init(v, elem, shift);
}

void *ft__vec_push(ft__vec *v) {
  if (v->len == v->cap) {
    if (v->n_chunks == v->cap_chunks) {
      size_t ncap = v->cap_chunks ? v->cap_chunks * 2 : 4;
      char **nc = realloc(v->chunks, ncap * sizeof *nc);
      if (!nc) return NULL;
      v->chunks = nc;
      v->cap_chunks = ncap;
    }
    /* as ft__vec_at reads them: 1 << first, then doubling what there is up to 1 << shift */
    size_t per = v->n_chunks == 0                   ? (size_t)1 << v->first
                 : v->cap < ((size_t)1 << v->shift) ? v->cap
                                                    : (size_t)1 << v->shift;
    char *chunk = calloc(per, v->elem);
    if (!chunk) return NULL;
    v->chunks[v->n_chunks++] = chunk;
    v->cap += per;
  }
  return ft__vec_at(v, v->len++);
}

bool ft__vec_drain(ft__vec *v, bool (*fn)(void *ctx, const void *elem), void *ctx) {
  bool ok = true;
  size_t i = 0;
  for (size_t c = 0; c < v->n_chunks; c++) {
    /* chunk sizes as ft__vec_push makes them */
    size_t per = c == 0                     ? (size_t)1 << v->first
                 : c <= v->shift - v->first ? (size_t)1 << (v->first + c - 1)
                                            : (size_t)1 << v->shift;
    for (size_t k = 0; k < per && i < v->len && ok; k++, i++) ok = fn(ctx, v->chunks[c] + k * v->elem);
    free(v->chunks[c]);
    v->chunks[c] = NULL;
  }
  ft__vec_free(v);
  return ok;
}

static uint64_t hash_u64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

ft_status ft__map_init(ft__map *m, size_t expected) {
  memset(m, 0, sizeof *m);
  size_t cap = 16;
  while (cap < expected * 2) cap <<= 1;
  m->keys = malloc(cap * sizeof *m->keys);
  m->vals = malloc(cap * sizeof *m->vals);
  m->used = calloc(cap, 1);
  if (!m->keys || !m->vals || !m->used) {
    ft__map_free(m);
    return FT_ENOMEM;
  }
  m->cap = cap;
  return FT_OK;
}

void ft__map_free(ft__map *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  memset(m, 0, sizeof *m);
}

uint64_t *ft__map_find(const ft__map *m, uint64_t key) {
  if (!m->cap) return NULL;
  for (size_t i = hash_u64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->used[i]) return NULL;
    if (m->keys[i] == key) return &m->vals[i];
  }
}

static ft_status map_grow(ft__map *m) {
  ft__map n;
  ft_status st = ft__map_init(&n, m->cap);
  if (st) return st;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->used[i]) continue;
    *ft__map_upsert(&n, m->keys[i]) = m->vals[i];
  }
  ft__map_free(m);
  *m = n;
  return FT_OK;
}

uint64_t *ft__map_upsert(ft__map *m, uint64_t key) {
  if ((m->len + 1) * 2 > m->cap && map_grow(m) != FT_OK) return NULL;
  size_t i = hash_u64(key) & (m->cap - 1);
  for (; m->used[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == key) return &m->vals[i];
  m->used[i] = 1;
  m->keys[i] = key;
  m->vals[i] = 0;
  m->len++;
  return &m->vals[i];
}

void ft__store_init(ft__store *st) {
  ft__intern_init(&st->names);
  ft__intern_init(&st->values);
  ft__vec_init(&st->events, sizeof(ft__event), 12);
  ft__vec_init(&st->kvs, sizeof(ft__kvid), 14);
  ft__vec_init(&st->mems, sizeof(ft__mem), 10);
  memset(&st->meta_sets, 0, sizeof st->meta_sets); /* made on the first metadata list */
  st->last_meta[0] = st->last_meta[1] = 0;
}

void ft__store_free(ft__store *st) {
  ft__intern_free(&st->names);
  ft__intern_free(&st->values);
  ft__vec_free(&st->events);
  ft__vec_free(&st->kvs);
  ft__vec_free(&st->mems);
  ft__map_free(&st->meta_sets);
}

enum { META_DEDUP_MAX = 64 }; /* longer lists are stored as they come */

static uint64_t meta_hash(const ft__kvid *ids, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  for (size_t i = 0; i < n; i++) h = (h ^ (((uint64_t)ids[i].key << 32) | ids[i].value)) * 0x100000001b3ull;
  return h;
}

/* Appends the list, or finds the same list stored before; *first is its index. */
static ft_status store_meta(ft__store *st, const ft__kvid *ids, size_t n, uint32_t *first) {
  uint64_t *slot = NULL;
  if (!st->meta_sets.cap) (void)ft__map_init(&st->meta_sets, 64); /* on failure it stays empty: no sharing */
  if (st->meta_sets.cap) {
    uint64_t h = meta_hash(ids, n);
    uint64_t *found = ft__map_find(&st->meta_sets, h);
    if (found) {
      uint32_t f = (uint32_t)*found;
      size_t i = 0;
      if ((*found >> 32) == n)
        for (; i < n; i++) {
          const ft__kvid *old = ft__vec_at(&st->kvs, f + i);
          if (old->key != ids[i].key || old->value != ids[i].value) break;
        }
      if ((*found >> 32) == n && i == n) {
        *first = f;
        return FT_OK;
      }
    } else {
      slot = ft__map_upsert(&st->meta_sets, h); /* NULL (out of memory) only loses the sharing */
    }
  }
  *first = (uint32_t)st->kvs.len;
  for (size_t i = 0; i < n; i++) {
    ft__kvid *kv = ft__vec_push(&st->kvs);
    if (!kv) return FT_ENOMEM;
    *kv = ids[i];
  }
  if (slot) *slot = *first | (uint64_t)n << 32;
  return FT_OK;
}

/* True when ev's metadata is, text for text, the list last stored (last). */
static bool same_as_last(const ft__store *st, uint64_t last, const ft_device_event *ev) {
  if ((last >> 32) != ev->n_metadata) return false;
  uint32_t first = (uint32_t)last;
  for (size_t i = 0; i < ev->n_metadata; i++) {
    const ft__kvid *id = ft__vec_at(&st->kvs, first + i);
    const ft_kv *kv = &ev->metadata[i];
    if (!kv->key || !kv->value || strcmp(kv->key, ft__intern_str(&st->names, id->key)) ||
        strcmp(kv->value, ft__intern_str(&st->values, id->value)))
      return false;
  }
  return true;
}

/* A memory event: its numbers go to store.mems, its metadata nowhere (the contract
 * puts everything in ev->memory). */
static ft_status add_memory(ft__store *st, const ft_device_event *ev) {
  const ft_memory_info *m = ev->memory;
  if (!m || m->op < FT_MEMORY_ALLOC || m->op > FT_MEMORY_UNRESERVE) return FT_EINVAL;
  if (st->mems.len >= UINT32_MAX) return FT_ERANGE;
  uint32_t name_id;
  ft_status s = ft__intern(&st->names, ev->name, strlen(ev->name), &name_id);
  if (s) return s;
  ft__mem *x = ft__vec_push(&st->mems);
  if (!x) return FT_ENOMEM;
  ft__event *e = ft__vec_push(&st->events);
  if (!e) {
    st->mems.len--;
    return FT_ENOMEM;
  }
  x->info = *m;
  x->thread_id = ev->thread_id;
  e->kind = FT__EV_MEMORY;
  e->start_ns = ev->start_ns;
  e->end_ns = ev->end_ns;
  e->correlation_id = ev->correlation_id;
  e->flags = ev->has_external_id ? FT__F_HAS_EXTERNAL : 0;
  e->external_id = ev->external_id;
  e->device = ev->device;
  e->stream = ev->stream;
  e->name_id = name_id;
  e->meta_first = (uint32_t)(st->mems.len - 1);
  e->meta_count = 0;
  return FT_OK;
}

ft_status ft__store_add_device(ft__store *st, const ft_device_event *ev) {
  if (ev && ev->name && ev->kind == FT_EVENT_MEMORY) return add_memory(st, ev);
  if (!ev || !ev->name || (unsigned)ev->kind > FT_EVENT_SYNC) return FT_EINVAL;
  if (ev->n_metadata > UINT16_MAX || (ev->n_metadata && !ev->metadata)) return FT_EINVAL;
  if (st->kvs.len + ev->n_metadata > UINT32_MAX) return FT_ERANGE;
  uint32_t name_id;
  ft_status s = ft__intern(&st->names, ev->name, strlen(ev->name), &name_id);
  if (s) return s;
  uint32_t first = (uint32_t)st->kvs.len;
  ft__kvid ids[META_DEDUP_MAX];
  bool shared = ev->n_metadata <= META_DEDUP_MAX;
  uint64_t *last = &st->last_meta[ft__on_device_row(ev->kind)];
  bool again = shared && ev->n_metadata && same_as_last(st, *last, ev);
  if (again) first = (uint32_t)*last;
  for (size_t i = 0; i < ev->n_metadata && !again; i++) {
    const ft_kv *kv = &ev->metadata[i];
    if (!kv->key || !kv->value) return FT_EINVAL;
    ft__kvid id, *slot = shared ? &ids[i] : ft__vec_push(&st->kvs);
    if (!slot) return FT_ENOMEM;
    if ((s = ft__intern(&st->names, kv->key, strlen(kv->key), &id.key)) ||
        (s = ft__intern(&st->values, kv->value, strlen(kv->value), &id.value)))
      return s;
    *slot = id;
  }
  if (shared && ev->n_metadata && !again) {
    if ((s = store_meta(st, ids, ev->n_metadata, &first))) return s;
    *last = first | (uint64_t)ev->n_metadata << 32;
  }
  ft__event *e = ft__vec_push(&st->events);
  if (!e) return FT_ENOMEM;
  e->kind = (uint8_t)ev->kind;
  e->start_ns = ev->start_ns;
  e->end_ns = ev->end_ns;
  e->correlation_id = ev->correlation_id;
  e->flags = ev->has_external_id ? FT__F_HAS_EXTERNAL : 0;
  e->external_id = ev->external_id;
  if (ft__on_device_row(e->kind)) {
    e->device = ev->device;
    e->stream = ev->stream;
  } else {
    e->thread_id = ev->thread_id;
  }
  e->name_id = name_id;
  e->meta_first = first;
  e->meta_count = (uint16_t)ev->n_metadata;
  return FT_OK;
}

ft_status ft__store_add_range(ft__store *st, uint32_t name_id, uint64_t start, uint64_t end, uint64_t external_id,
                              uint32_t tid) {
  ft__event *e = ft__vec_push(&st->events);
  if (!e) return FT_ENOMEM;
  e->kind = FT__EV_CPU_RANGE;
  e->start_ns = start;
  e->end_ns = end;
  e->external_id = external_id;
  e->flags = FT__F_HAS_EXTERNAL;
  e->thread_id = tid;
  e->name_id = name_id;
  return FT_OK;
}

/* A stored event as a tracer would have handed it over, its metadata resolved into
 * *kv (grown as needed, the caller frees it); FT_ENOMEM. Pointers are the store's. */
ft_status ft__store_view(const ft__store *st, const ft__event *e, ft_kv **kv, size_t *kv_cap, ft_device_event *out) {
  if (e->meta_count > *kv_cap) {
    ft_kv *n = realloc(*kv, e->meta_count * sizeof *n);
    if (!n) return FT_ENOMEM;
    *kv = n, *kv_cap = e->meta_count;
  }
  for (uint32_t k = 0; k < e->meta_count; k++) {
    const ft__kvid *id = ft__vec_at(&st->kvs, e->meta_first + k);
    (*kv)[k] = (ft_kv){ft__intern_str(&st->names, id->key), ft__intern_str(&st->values, id->value)};
  }
  bool row = ft__on_device_row(e->kind), mem = ft__is_memory_kind(e->kind);
  const ft__mem *m = mem ? ft__vec_at(&st->mems, e->meta_first) : NULL;
  *out = (ft_device_event){.kind = (ft_event_kind)e->kind,
                           .start_ns = e->start_ns,
                           .end_ns = e->end_ns,
                           .correlation_id = e->correlation_id,
                           .has_external_id = (e->flags & FT__F_HAS_EXTERNAL) != 0,
                           .external_id = e->external_id,
                           .device = row || mem ? e->device : 0,
                           .stream = row || mem ? e->stream : 0,
                           .thread_id = mem   ? m->thread_id
                                        : row ? 0
                                              : e->thread_id,
                           .name = ft__intern_str(&st->names, e->name_id),
                           .metadata = *kv,
                           .n_metadata = e->meta_count,
                           .memory = mem ? &m->info : NULL};
  return FT_OK;
}
