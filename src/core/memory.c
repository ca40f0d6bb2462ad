/* Device memory totals (issue 51): each device's allocated and reserved bytes after every memory operation. */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "keyed_hash.h"

/* Live allocations (or, for the pool set, pools that report reservations, size
 * their bytes reserved so far) by
 * address: open addressing under a keyed hash, since the addresses are the
 * tracer's and a crafted set must not share a slot; deletion by backward shift
 * (frees are as many as allocations). */
typedef struct live {
  uint64_t addr, size, pool;
} live;

typedef struct table {
  live *slots;
  uint8_t *used;
  size_t cap, len; /* cap: a power of two, at most 2 * FT__MEM_LIVE_MAX */
} table;

static void table_free(table *t) {
  free(t->slots);
  free(t->used);
  memset(t, 0, sizeof *t);
}

static size_t home(const table *t, uint64_t addr) { return (size_t)ft__hash_u64_keyed(addr) & (t->cap - 1); }

static live *table_find(const table *t, uint64_t addr) {
  if (!t->len) return NULL;
  for (size_t i = home(t, addr);; i = (i + 1) & (t->cap - 1)) {
    if (!t->used[i]) return NULL;
    if (t->slots[i].addr == addr) return &t->slots[i];
  }
}

static void put(table *t, const live *x) {
  size_t i = home(t, x->addr);
  while (t->used[i]) i = (i + 1) & (t->cap - 1);
  t->used[i] = 1;
  t->slots[i] = *x;
  t->len++;
}

static size_t live_max = FT__MEM_LIVE_MAX;

/* (export.h) */
size_t ft__mem_live_max(void) { return live_max; }
void ft__mem_set_live_max_for_tests(size_t n) { live_max = n ? n : FT__MEM_LIVE_MAX; }

/* Inserts x (its address not present); false when the table is full (live_max) or
 * out of memory (*nomem). */
static bool table_insert(table *t, const live *x, bool *nomem) {
  if (t->len >= live_max) return false;
  if ((t->len + 1) * 2 > t->cap) {
    table n = {0};
    n.cap = t->cap ? t->cap * 2 : 64;
    n.slots = malloc(n.cap * sizeof *n.slots);
    n.used = calloc(n.cap, 1);
    if (!n.slots || !n.used) {
      table_free(&n);
      *nomem = true;
      return false;
    }
    for (size_t i = 0; i < t->cap; i++)
      if (t->used[i]) put(&n, &t->slots[i]);
    table_free(t);
    *t = n;
  }
  put(t, x);
  return true;
}

static void table_remove(table *t, live *x) {
  size_t i = (size_t)(x - t->slots), mask = t->cap - 1;
  t->used[i] = 0;
  t->len--;
  /* backward shift: an entry further on whose home is not between the hole and it moves into the hole */
  for (size_t j = (i + 1) & mask; t->used[j]; j = (j + 1) & mask) {
    size_t h = home(t, t->slots[j].addr);
    bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
    if (stays) continue;
    t->slots[i] = t->slots[j];
    t->used[i] = 1;
    t->used[j] = 0;
    i = j;
  }
}

/* Empties t for the next device; a large table is given back, so that many devices
 * never pay a large clear each. */
static void table_reset(table *t) {
  if (t->cap > 4096) table_free(t);
  else if (t->cap) memset(t->used, 0, t->cap), t->len = 0;
}

typedef struct op_ref {
  uint64_t ts;          /* inside its API call (fit_to_calls) */
  uint64_t raw;         /* the tracer's: breaks ties of ts, as events fitted to one call end */
  uint32_t device, mem; /* mem: index into store.mems */
  size_t index;         /* into store.events: arrival order breaks the rest */
} op_ref;

static int cmp_time(const void *a, const void *b) {
  const op_ref *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->raw != y->raw) return x->raw < y->raw ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

static int cmp_ref(const void *a, const void *b) {
  const op_ref *x = a, *y = b;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  return cmp_time(a, b);
}

/* The entry for addr on device dev (in .pool), in a table that may hold one address on
 * several devices (the same chain: the home is the address's). */
static live *table_find_on(const table *t, uint64_t addr, uint32_t dev) {
  if (!t->len) return NULL;
  for (size_t i = home(t, addr);; i = (i + 1) & (t->cap - 1)) {
    if (!t->used[i]) return NULL;
    if (t->slots[i].addr == addr && t->slots[i].pool == dev) return &t->slots[i];
  }
}

/* A free made from another device's context (CUDA frees any device's pointer, and
 * callbacks name the calling context's device) is moved to its allocation's device:
 * a free with no live allocation on its own device but one on another goes there (a
 * vendor whose devices share addresses keeps each free where it was named). refs are
 * in time order; false when out of memory. */
static bool own_frees(const ft_session *s, op_ref *refs, size_t n, ft__mem_totals *t) {
  table owner = {0}; /* live device allocations: addr, and the device in .pool */
  bool nomem = false;
  for (size_t i = 0; i < n && !nomem; i++) {
    const ft_memory_info *x = &((const ft__mem *)ft__vec_at(&s->store.mems, refs[i].mem))->info;
    uint32_t dev = refs[i].device;
    if (dev == FT__MEM_HOST || (x->op != FT_MEMORY_ALLOC && x->op != FT_MEMORY_FREE)) continue;
    live *a = table_find_on(&owner, x->address, dev);
    if (x->op == FT_MEMORY_ALLOC) {
      if (!a) (void)table_insert(&owner, &(live){x->address, 0, dev}, &nomem);
      continue;
    }
    if (!a && (a = table_find(&owner, x->address)) != NULL) refs[i].device = (uint32_t)a->pool, t->moved_frees++;
    if (a) table_remove(&owner, a);
  }
  table_free(&owner);
  return !nomem;
}

void ft__mem_totals_free(ft__mem_totals *t) {
  free(t->rows);
  free(t->devices);
  memset(t, 0, sizeof *t);
}

/* One event stamped after its call's end: the call, its stamp, its ref. */
typedef struct late_ref {
  size_t call;
  uint64_t raw;
  size_t ref;
} late_ref;

static int cmp_late(const void *a, const void *b) {
  const late_ref *x = a, *y = b;
  if (x->call != y->call) return x->call < y->call ? -1 : 1;
  if (x->raw != y->raw) return x->raw < y->raw ? -1 : 1;
  return (x->ref > y->ref) - (x->ref < y->ref);
}

/* The events stamped after their call's end, drawn at it: several of one call (a
 * pool's growth placed before its allocation, the allocation) 1 ns apart, ending at
 * the end, in their stamps' order, so that a reader that orders instants by time and
 * breaks ties by file order (Perfetto's counter track) sees them as the totals were
 * counted. Without memory for it, they share the end (the totals are right, ties are
 * not). */
static void spread_late(const ft__vec *ev, late_ref *late, size_t n_late, op_ref *refs, uint64_t lo, uint64_t hi) {
  if (!n_late) return; /* late is NULL then: qsort may not be handed it */
  qsort(late, n_late, sizeof *late, cmp_late);
  for (size_t g = 0, m; g < n_late; g += m) {
    for (m = 1; g + m < n_late && late[g + m].call == late[g].call;) m++;
    const ft__event *call = ft__vec_at(ev, late[g].call);
    for (size_t j = 0; j < m; j++) {
      uint64_t back = m - 1 - j, ts = call->end_ns - call->start_ns > back ? call->end_ns - back : call->start_ns;
      if (ts < lo) ts = lo;
      if (ts > hi) ts = hi;
      refs[late[g + j].ref].ts = ts;
    }
  }
}

/* The calling thread of each in-window memory event (the thread of the API call with
 * its correlation id, a runtime call before a driver one, else the tracer's), and its
 * time fitted into that call (and the window [lo, hi]): CUPTI's exit callback runs
 * after the call's end is taken (0.2-6 us after it on an H100), and an operation is
 * the call's, so its instant is drawn inside the call, as a record-made one is
 * (spread_late). */
static ft_status fit_to_calls(const ft_session *s, uint64_t lo, uint64_t hi, op_ref *refs, size_t n,
                              ft__mem_totals *t) {
  ft__map call_of; /* correlation id -> index + 1 of its API call (a runtime one before a driver one) */
  if (ft__map_init(&call_of, n)) return FT_ENOMEM;
  const ft__vec *ev = &s->store.events;
  for (size_t i = 0; i < n; i++) {
    const ft__event *e = ft__vec_at(ev, refs[i].index);
    if (e->correlation_id && !ft__map_upsert(&call_of, e->correlation_id)) {
      ft__map_free(&call_of);
      return FT_ENOMEM;
    }
  }
  for (size_t i = 0; call_of.len && i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__is_api_kind(e->kind) || !e->correlation_id) continue;
    uint64_t *v = ft__map_find(&call_of, e->correlation_id);
    if (v &&
        (!*v || (e->kind == FT__EV_RUNTIME && ((const ft__event *)ft__vec_at(ev, *v - 1))->kind != FT__EV_RUNTIME)))
      *v = i + 1;
  }
  late_ref *late = NULL; /* made at the first late event, with room for every event after it */
  size_t n_late = 0;
  bool spread = true;
  for (size_t i = 0; i < n; i++) {
    const ft__event *e = ft__vec_at(ev, refs[i].index);
    const uint64_t *v = e->correlation_id ? ft__map_find(&call_of, e->correlation_id) : NULL;
    const ft__event *call = v && *v ? ft__vec_at(ev, *v - 1) : NULL;
    ft__mem_row *row = &t->rows[refs[i].mem];
    row->tid = call ? call->thread_id : ((const ft__mem *)ft__vec_at(&s->store.mems, refs[i].mem))->thread_id;
    if (call) {
      if (refs[i].ts > call->end_ns && spread) {
        if (!late && !(late = malloc((n - i) * sizeof *late))) spread = false;
        if (spread) late[n_late++] = (late_ref){*v - 1, refs[i].raw, i};
      }
      if (refs[i].ts > call->end_ns) refs[i].ts = call->end_ns;
      if (refs[i].ts < call->start_ns) refs[i].ts = call->start_ns;
      if (refs[i].ts < lo) refs[i].ts = lo; /* the call began before the window: kept inside it */
      if (refs[i].ts > hi) refs[i].ts = hi;
    }
  }
  if (spread) spread_late(ev, late, n_late, refs, lo, hi);
  free(late);
  for (size_t i = 0; i < n; i++) t->rows[refs[i].mem].ts = refs[i].ts;
  ft__map_free(&call_of);
  return FT_OK;
}

typedef struct replay {
  table live_;      /* this device's live allocations */
  table reserving;  /* this device's pools with RESERVE/UNRESERVE events */
  ft__mem_device d; /* this device's totals */
  bool nomem;
} replay;

/* Whether an allocation in pool holds reserved bytes of its own: outside any pool,
 * or in a pool that reports no reservations. */
static bool reserves_itself(const replay *r, uint64_t pool) { return !pool || !table_find(&r->reserving, pool); }

static void step(replay *r, ft__mem_totals *t, const ft__mem *m, ft__mem_row *row) {
  const ft_memory_info *x = &m->info;
  ft__mem_device *d = &r->d;
  row->written = false;
  if (x->bytes > FT__MEM_BYTES_MAX) {
    t->skipped_implausible++;
    return;
  }
  switch (x->op) {
  case FT_MEMORY_ALLOC: {
    live *old = table_find(&r->live_, x->address);
    if (old) { /* its free was never seen (dropped): the address is free again now */
      d->allocated -= old->size;
      if (reserves_itself(r, old->pool)) d->reserved -= old->size;
      table_remove(&r->live_, old);
      t->replaced++;
    }
    live n = {x->address, x->bytes, x->pool};
    if (!table_insert(&r->live_, &n, &r->nomem)) {
      t->skipped_allocs++;
      return;
    }
    d->allocated += x->bytes;
    if (reserves_itself(r, x->pool)) d->reserved += x->bytes;
    row->bytes = (int64_t)x->bytes;
    row->pool = x->pool;
    break;
  }
  case FT_MEMORY_FREE: {
    live *a = table_find(&r->live_, x->address);
    if (!a) {
      t->skipped_frees++;
      return;
    }
    d->allocated -= a->size;
    if (reserves_itself(r, a->pool)) d->reserved -= a->size;
    row->bytes = -(int64_t)a->size;
    row->pool = a->pool;
    table_remove(&r->live_, a);
    break;
  }
  default: { /* RESERVE, UNRESERVE (the store takes no other op): the pool's own bytes */
    live *p = table_find(&r->reserving, x->address);
    if (!p) { /* past the limit of tracked pools */
      t->skipped_allocs++;
      return;
    }
    uint64_t delta = x->bytes;
    if (x->op == FT_MEMORY_UNRESERVE && delta > p->size) { /* reserved before the window, or never */
      delta = p->size;
      t->unreserve_clamped++;
    }
    bool grow = x->op == FT_MEMORY_RESERVE;
    p->size = grow ? p->size + delta : p->size - delta;
    d->reserved = grow ? d->reserved + delta : d->reserved - delta;
    row->bytes = 0;
    row->pool_bytes = grow ? (int64_t)delta : -(int64_t)delta;
    row->pool = x->address;
    break;
  }
  }
  row->written = true;
  row->device = d->device;
  row->allocated = d->allocated;
  row->reserved = d->reserved;
  d->operations++;
  t->written++;
}

/* Replays one device's operations refs[0, n) (sorted by time) into t. */
static ft_status replay_device(const ft_session *s, replay *r, const op_ref *refs, size_t n, ft__mem_totals *t) {
  table_reset(&r->live_);
  table_reset(&r->reserving);
  memset(&r->d, 0, sizeof r->d);
  r->d.device = refs[0].device;
  for (size_t i = 0; i < n; i++) {
    const ft__mem *m = ft__vec_at(&s->store.mems, refs[i].mem);
    bool pool_op = m->info.op == FT_MEMORY_RESERVE || m->info.op == FT_MEMORY_UNRESERVE;
    live p = {m->info.address, 0, 0};
    if (pool_op && !table_find(&r->reserving, p.addr)) (void)table_insert(&r->reserving, &p, &r->nomem);
  }
  for (size_t i = 0; i < n && !r->nomem; i++) {
    ft__mem_row *row = &t->rows[refs[i].mem];
    step(r, t, ft__vec_at(&s->store.mems, refs[i].mem), row);
    if (!row->written) continue;
    if (row->allocated > r->d.peak_allocated) r->d.peak_allocated = row->allocated, r->d.peak_allocated_ns = refs[i].ts;
    if (row->reserved > r->d.peak_reserved) r->d.peak_reserved = row->reserved, r->d.peak_reserved_ns = refs[i].ts;
  }
  t->devices[t->n_devices++] = r->d;
  return r->nomem ? FT_ENOMEM : FT_OK;
}

ft_status ft__mem_totals_build(const ft_session *s, uint64_t lo, uint64_t hi, ft__map *tids, ft__mem_totals *t) {
  memset(t, 0, sizeof *t);
  const ft__vec *ev = &s->store.events;
  size_t n = 0;
  for (size_t i = 0; i < ev->len; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    n += ft__is_memory_kind(e->kind) && ft__in_window(e, lo, hi);
  }
  if (!n) return FT_OK;
  op_ref *refs = malloc(n * sizeof *refs);
  t->rows = calloc(s->store.mems.len, sizeof *t->rows);
  if (!refs || !t->rows) {
    free(refs);
    return FT_ENOMEM;
  }
  size_t k = 0;
  for (size_t i = 0; i < ev->len && k < n; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (ft__is_memory_kind(e->kind) && ft__in_window(e, lo, hi))
      refs[k++] =
          (op_ref){e->start_ns, e->start_ns,
                   ft__mem_on_host(&((const ft__mem *)ft__vec_at(&s->store.mems, e->meta_first))->info) ? FT__MEM_HOST
                                                                                                        : e->device,
                   e->meta_first, i};
  }
  t->operations = n;
  ft_status st = fit_to_calls(s, lo, hi, refs, n, t);
  qsort(refs, n, sizeof *refs, cmp_time);
  if (!st && !own_frees(s, refs, n, t)) st = FT_ENOMEM;
  if (st) {
    free(refs);
    return st;
  }
  /* buffers arrive in any order, devices interleave: replay each device in time order */
  qsort(refs, n, sizeof *refs, cmp_ref);
  size_t n_dev = 1;
  for (size_t i = 1; i < n; i++) n_dev += refs[i].device != refs[i - 1].device;
  t->devices = calloc(n_dev, sizeof *t->devices);
  st = t->devices ? FT_OK : FT_ENOMEM;
  replay r = {0};
  for (size_t a = 0, b; a < n && !st; a = b) {
    for (b = a + 1; b < n && refs[b].device == refs[a].device;) b++;
    st = replay_device(s, &r, refs + a, b - a, t);
  }
  table_free(&r.live_);
  table_free(&r.reserving);
  uint64_t last = 0;
  for (size_t i = 0; i < n && !st; i++) {
    const ft__mem_row *row = &t->rows[refs[i].mem];
    if (row->written && row->tid) st = ft__set_add(tids, row->tid, &last);
  }
  free(refs);
  return st;
}
