/* The Chrome trace in kineto's layout: JSON emission of what export.c selects and pairs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "deflate.h"
#include "export.h"
#include "internal.h"

/* The JSON text of interned string id of table tab (cache slot c). */
static struct text render(plan *p, struct text *c, const ft__strtab *tab, uint32_t id, bool value) {
  if (c[id].p) return c[id];
  const char *str = ft__intern_str(tab, id);
  size_t n = ft__intern_len(tab, id);
  char *d = ft__arena_alloc(&p->rendered, 6 * n + 2);
  if (!d) return (struct text){NULL, 0}; /* caller falls back to direct output */
  if (value && ft__json_is_literal(str, n)) {
    memcpy(d, str, n);
    c[id] = (struct text){d, n};
  } else {
    c[id] = (struct text){d, ft__json_escape(d, str, n)};
  }
  return c[id];
}

/* The text of a metadata list, "key":value pairs joined by commas, or {NULL, 0}
 * when it is not cached (yet): the caller writes it pair by pair. */
static struct text meta_text(plan *p, const ft__store *st, uint32_t first, uint32_t count) {
  struct meta_text *m = &p->meta[(first * 2654435761u) % FT__META_SLOTS];
  if (m->t.p && m->first == first && m->count == count) return m->t;
  if (!m->seen || m->first != first || m->count != count) { /* first sighting here */
    *m = (struct meta_text){first, count, true, {NULL, 0}};
    return m->t;
  }
  size_t n = 0;
  for (uint32_t k = 0; k < count; k++) {
    const ft__kvid *kv = ft__vec_at(&st->kvs, first + k);
    struct text key = render(p, p->names, &st->names, kv->key, false);
    struct text val = render(p, p->values, &st->values, kv->value, true);
    if (!key.p || !val.p) return (struct text){NULL, 0};
    n += key.n + val.n + 2;
  }
  if (p->meta_bytes + n > FT__META_BUDGET) return (struct text){NULL, 0};
  char *d = ft__arena_alloc(&p->rendered, n);
  if (!d) return (struct text){NULL, 0};
  p->meta_bytes += n;
  size_t used = 0;
  for (uint32_t k = 0; k < count; k++) {
    const ft__kvid *kv = ft__vec_at(&st->kvs, first + k);
    struct text key = p->names[kv->key], val = p->values[kv->value]; /* rendered above */
    if (k) d[used++] = ',';
    memcpy(d + used, key.p, key.n);
    used += key.n;
    d[used++] = ':';
    memcpy(d + used, val.p, val.n);
    used += val.n;
  }
  m->t = (struct text){d, used};
  return m->t;
}

static void out_interned(ft__out *o, plan *p, bool value, const ft__strtab *tab, uint32_t id) {
  struct text t = render(p, value ? p->values : p->names, tab, id, value);
  if (t.p) ft__out_write(o, t.p, t.n);
  else if (value) ft__out_json_value(o, ft__intern_str(tab, id), ft__intern_len(tab, id));
  else ft__out_json_string(o, ft__intern_str(tab, id), ft__intern_len(tab, id));
}

static void out_key(ft__out *o, const char *key) {
  ft__out_json_string(o, key, strlen(key));
  ft__out_write(o, ":", 1);
}

static void out_flow(ft__out *o, char ph, uint64_t id, uint64_t pid, uint64_t tid, uint64_t ts) {
  FT__OUT_LIT(o, ",\n  {\"ph\":\"");
  ft__out_write(o, &ph, 1);
  FT__OUT_LIT(o, "\",\"id\":");
  ft__out_u64(o, id);
  FT__OUT_LIT(o, ",\"pid\":");
  ft__out_u64(o, pid);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, tid);
  FT__OUT_LIT(o, ",\"ts\":");
  ft__out_us3(o, ts);
  ft__out_str(o,
              ph == 'f' ? ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}" : ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
}

static void out_meta_event(ft__out *o, bool *first, const char *name, uint64_t pid, uint64_t tid, uint64_t ts,
                           const char *argkey, const char *sval, int64_t ival) {
  ft__out_str(o, *first ? "\n  {\"name\":\"" : ",\n  {\"name\":\"");
  *first = false;
  ft__out_str(o, name);
  FT__OUT_LIT(o, "\",\"ph\":\"M\",\"ts\":");
  ft__out_us3(o, ts);
  FT__OUT_LIT(o, ",\"pid\":");
  ft__out_u64(o, pid);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, tid);
  FT__OUT_LIT(o, ",\"args\":{");
  out_key(o, argkey);
  if (sval) ft__out_json_string(o, sval, strlen(sval));
  else ft__out_i64(o, ival);
  FT__OUT_LIT(o, "}}");
}

static void write_rows(const ft_session *s, const plan *p, ft__out *o, uint64_t base, bool *first) {
  char label[64];
  uint64_t ts = s->window_lo_ns - base;
  out_meta_event(o, first, "process_name", s->pid, 0, ts, "name", s->process_name, 0);
  out_meta_event(o, first, "process_labels", s->pid, 0, ts, "labels", "CPU", 0);
  out_meta_event(o, first, "process_sort_index", s->pid, 0, ts, "sort_index", NULL, s->pid);
  for (size_t i = 0; i < p->tids.cap; i++) {
    if (!p->tids.used[i]) continue;
    uint64_t tid = p->tids.keys[i];
    snprintf(label, sizeof label, "thread %llu", (unsigned long long)tid);
    out_meta_event(o, first, "thread_name", s->pid, tid, ts, "name", label, 0);
    out_meta_event(o, first, "thread_sort_index", s->pid, tid, ts, "sort_index", NULL, (int64_t)tid);
  }
  for (size_t i = 0; i < p->devices.cap; i++) {
    if (!p->devices.used[i]) continue;
    uint64_t dev = p->devices.keys[i];
    snprintf(label, sizeof label, "GPU %llu", (unsigned long long)dev);
    out_meta_event(o, first, "process_name", dev, 0, ts, "name", label, 0);
    out_meta_event(o, first, "process_labels", dev, 0, ts, "labels", label, 0);
    out_meta_event(o, first, "process_sort_index", dev, 0, ts, "sort_index", NULL, (int64_t)dev);
  }
  for (size_t i = 0; i < p->streams.cap; i++) {
    if (!p->streams.used[i]) continue;
    uint64_t dev = p->streams.keys[i] >> 32, stream = p->streams.keys[i] & 0xffffffffu;
    /* torch-cuda's label has the trailing space; tools match it literally. */
    snprintf(label, sizeof label, "stream %llu ", (unsigned long long)stream);
    out_meta_event(o, first, "thread_name", dev, stream, ts, "name", label, 0);
    out_meta_event(o, first, "thread_sort_index", dev, stream, ts, "sort_index", NULL, (int64_t)stream);
  }
}

static const char *category(const ft_session *s, unsigned kind) {
  switch (kind) {
  case FT__EV_KERNEL: return "kernel";
  case FT__EV_MEMCPY: return "gpu_memcpy";
  case FT__EV_MEMSET: return "gpu_memset";
  case FT__EV_RUNTIME: return s->tracer->ops->runtime_category;
  case FT__EV_DRIVER: return s->tracer->ops->driver_category;
  case FT__EV_SYNC: return "cuda_sync"; /* kineto's name for every vendor (ActivityType::CUDA_SYNC) */
  default: return "user_annotation";
  }
}

/* The row of a device-row event: its stream, as kineto writes it (a sync's stream
 * is a signed int there, and its tid the absolute value: -1 reads 1). */
static uint64_t row_tid(const ft__event *e) {
  if (e->kind != FT__EV_SYNC) return e->stream;
  int32_t v = (int32_t)e->stream;
  return v == INT32_MIN ? 0 : (uint64_t)(v < 0 ? -v : v);
}

static void write_event(const ft_session *s, plan *p, ft__out *o, const ft__event *e, uint64_t base) {
  const ft__store *st = &s->store;
  bool device = ft__is_device_kind(e->kind), sync = e->kind == FT__EV_SYNC;
  FT__OUT_LIT(o, ",\n  {\"ph\":\"X\",\"cat\":\"");
  ft__out_str(o, category(s, e->kind));
  FT__OUT_LIT(o, "\",\"name\":");
  out_interned(o, p, false, &st->names, e->name_id);
  FT__OUT_LIT(o, ",\"pid\":");
  ft__out_u64(o, device || sync ? e->device : s->pid);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, device || sync ? row_tid(e) : e->thread_id);
  FT__OUT_LIT(o, ",\"ts\":");
  ft__out_us3(o, e->start_ns - base);
  FT__OUT_LIT(o, ",\"dur\":");
  ft__out_us3(o, e->end_ns - e->start_ns);
  FT__OUT_LIT(o, ",\"args\":{");
  bool comma = false;
  if (e->flags & FT__F_HAS_EXTERNAL) {
    FT__OUT_LIT(o, "\"External id\":");
    ft__out_u64(o, e->external_id);
    comma = true;
  } else if (sync) { /* kineto's: an unlinked sync's External id is its correlation */
    FT__OUT_LIT(o, "\"External id\":");
    ft__out_u64(o, e->correlation_id);
    comma = true;
  }
  if (device) {
    ft__out_str(o, comma ? ",\"device\":" : "\"device\":");
    ft__out_u64(o, e->device);
    FT__OUT_LIT(o, ",\"stream\":");
    ft__out_u64(o, e->stream);
    comma = true;
  }
  if (e->kind != FT__EV_CPU_RANGE && !sync) { /* a sync's list has its own, in kineto's order */
    ft__out_str(o, comma ? ",\"correlation\":" : "\"correlation\":");
    ft__out_u64(o, e->correlation_id);
    comma = true;
  }
  struct text m = e->meta_count ? meta_text(p, st, e->meta_first, e->meta_count) : (struct text){NULL, 0};
  if (m.p) {
    if (comma) ft__out_write(o, ",", 1);
    ft__out_write(o, m.p, m.n);
  } else {
    for (uint32_t k = 0; k < e->meta_count; k++) {
      const ft__kvid *kv = ft__vec_at(&st->kvs, e->meta_first + k);
      if (comma) ft__out_write(o, ",", 1);
      comma = true;
      out_interned(o, p, false, &st->names, kv->key);
      ft__out_write(o, ":", 1);
      out_interned(o, p, true, &st->values, kv->value);
    }
  }
  ft__out_write(o, "}}", 2);
}

static const char *memory_kind_name(ft_memory_kind k) {
  switch (k) {
  case FT_MEMKIND_DEVICE: return "device";
  case FT_MEMKIND_PINNED: return "pinned";
  case FT_MEMKIND_MANAGED: return "managed";
  case FT_MEMKIND_PAGEABLE: return "pageable";
  default: return "other";
  }
}

static const char *const memory_op_name[] = {"", "alloc", "free", "reserve", "unreserve"};

/* A memory operation as torch writes one with profile_memory=True (its keys first,
 * then ours), and its device's "Memory" counter sample after it (docs/memory.md). */
static void write_memory(const ft_session *s, const plan *p, ft__out *o, const ft__event *e, uint64_t base) {
  const ft__mem_row *r = p->mem.rows ? &p->mem.rows[e->meta_first] : NULL;
  if (!r || !r->written) return; /* skipped: counted in the header's memory object */
  const ft_memory_info *m = &((const ft__mem *)ft__vec_at(&s->store.mems, e->meta_first))->info;
  bool cuda = !strcmp(s->tracer->ops->runtime_category, "cuda_runtime"), host = ft__mem_on_host(m);
  FT__OUT_LIT(o, ",\n  {\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":");
  ft__out_u64(o, s->pid);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, r->tid);
  FT__OUT_LIT(o, ",\"ts\":");
  ft__out_us3(o, r->ts - base);
  /* kineto's DeviceType: CPU 0 (host memory, Device Id -1 as torch's), CUDA 1, PrivateUse1 20 */
  ft__out_str(o, host   ? ",\"args\":{\"Device Type\":0,\"Device Id\":-1"
                 : cuda ? ",\"args\":{\"Device Type\":1,\"Device Id\":"
                        : ",\"args\":{\"Device Type\":20,\"Device Id\":");
  if (!host) ft__out_u64(o, r->device);
  FT__OUT_LIT(o, ",\"Addr\":");
  ft__out_u64(o, m->address);
  FT__OUT_LIT(o, ",\"Bytes\":");
  ft__out_i64(o, r->bytes);
  FT__OUT_LIT(o, ",\"Total Allocated\":");
  ft__out_u64(o, r->allocated);
  FT__OUT_LIT(o, ",\"Total Reserved\":");
  ft__out_u64(o, r->reserved);
  FT__OUT_LIT(o, ",\"correlation\":");
  ft__out_u64(o, e->correlation_id);
  if (e->flags & FT__F_HAS_EXTERNAL) {
    FT__OUT_LIT(o, ",\"External id\":");
    ft__out_u64(o, e->external_id);
  }
  if (e->stream != UINT32_MAX) { /* UINT32_MAX: the call names no stream */
    FT__OUT_LIT(o, ",\"stream\":");
    ft__out_u64(o, e->stream);
  }
  FT__OUT_LIT(o, ",\"Kind\":\"");
  ft__out_str(o, memory_kind_name(m->memory_kind));
  FT__OUT_LIT(o, "\",\"Op\":\"");
  ft__out_str(o, memory_op_name[m->op]);
  ft__out_write(o, "\"", 1);
  if (r->pool) {
    FT__OUT_LIT(o, ",\"Pool\":");
    ft__out_u64(o, r->pool);
  }
  if (m->op == FT_MEMORY_RESERVE || m->op == FT_MEMORY_UNRESERVE) {
    FT__OUT_LIT(o, ",\"Pool Bytes\":");
    ft__out_i64(o, r->pool_bytes);
  }
  FT__OUT_LIT(o, "}},\n  {\"ph\":\"C\",\"name\":\"Memory\",\"pid\":");
  ft__out_u64(o, host ? s->pid : r->device); /* host memory's track is under the process */
  FT__OUT_LIT(o, ",\"ts\":");
  ft__out_us3(o, r->ts - base);
  FT__OUT_LIT(o, ",\"args\":{\"Allocated\":");
  ft__out_u64(o, r->allocated);
  FT__OUT_LIT(o, ",\"Reserved\":");
  ft__out_u64(o, r->reserved);
  FT__OUT_LIT(o, "}}");
}

/* torch-cuda's arrows: one start on the launch and an end on every device event it
 * launched, all with the vendor id (a graph replay's five nodes share their launch's
 * start), so every device event is linked and ids stay below 2^32. */
static void write_flows(const ft_session *s, plan *p, ft__out *o, size_t i, const ft__event *e, uint64_t base) {
  int role = ft__flow_role(p, i, e);
  if (role == FT_FLOW_START) out_flow(o, 's', e->correlation_id, s->pid, e->thread_id, e->start_ns - base);
  else if (role == FT_FLOW_END) out_flow(o, 'f', e->correlation_id, e->device, row_tid(e), e->start_ns - base);
}

static void write_projection(plan *p, ft__out *o, const ft__event *r, uint64_t lo, uint64_t hi, uint32_t dev,
                             uint32_t stream, uint64_t base, const ft_session *s) {
  FT__OUT_LIT(o, ",\n  {\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":");
  out_interned(o, p, false, &s->store.names, r->name_id);
  FT__OUT_LIT(o, ",\"pid\":");
  ft__out_u64(o, dev);
  FT__OUT_LIT(o, ",\"tid\":");
  ft__out_u64(o, stream);
  FT__OUT_LIT(o, ",\"ts\":");
  ft__out_us3(o, lo - base);
  FT__OUT_LIT(o, ",\"dur\":");
  ft__out_us3(o, hi - lo);
  FT__OUT_LIT(o, ",\"args\":{\"External id\":");
  ft__out_u64(o, r->external_id);
  FT__OUT_LIT(o, "}}");
}

/* kineto's layout: one object per device, "id" first, then what the vendor offers. */
static void write_device_properties(const ft_session *s, plan *p, ft__out *o) {
  for (int d = 0; d < s->n_devprops; d++) {
    ft__out_str(o, d ? ",\n    {\"id\": " : "\n    {\"id\": ");
    ft__out_u64(o, (uint64_t)d);
    for (uint32_t k = 0; k < s->devprops[d].count; k++) {
      const ft__kvid *kv = ft__vec_at(&s->store.kvs, s->devprops[d].first + k);
      ft__out_write(o, ", ", 2);
      out_interned(o, p, false, &s->store.names, kv->key);
      ft__out_write(o, ": ", 2);
      out_interned(o, p, true, &s->store.values, kv->value);
    }
    ft__out_write(o, "}", 1);
  }
  if (s->n_devprops) FT__OUT_LIT(o, "\n  ");
}

/* What the memory totals counted and skipped, and each device's peaks (docs/memory.md). */
static void write_memory_summary(const ft__mem_totals *m, ft__out *o) {
  static const char *const keys[] = {"operations",          "written",       "skipped_frees",     "skipped_allocations",
                                     "skipped_implausible", "replaced_live", "unreserve_clamped", "moved_frees"};
  const uint64_t vals[] = {m->operations,          m->written,  m->skipped_frees,     m->skipped_allocs,
                           m->skipped_implausible, m->replaced, m->unreserve_clamped, m->moved_frees};
  FT__OUT_LIT(o, ", \"memory\": {");
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
    if (i) ft__out_write(o, ", ", 2);
    out_key(o, keys[i]);
    ft__out_u64(o, vals[i]);
  }
  FT__OUT_LIT(o, ", \"live_limit\": ");
  ft__out_u64(o, ft__mem_live_max());
  FT__OUT_LIT(o, ", \"devices\": [");
  for (size_t i = 0; i < m->n_devices; i++) {
    const ft__mem_device *d = &m->devices[i];
    ft__out_str(o, i ? ", {\"device\": " : "{\"device\": ");
    ft__out_i64(o, d->device == FT__MEM_HOST ? -1 : (int64_t)d->device); /* -1: the host's */
    const char *dk[] = {"operations",       "peak_allocated",   "peak_allocated_ns", "peak_reserved",
                        "peak_reserved_ns", "allocated_at_end", "reserved_at_end"};
    const uint64_t dv[] = {d->operations,       d->peak_allocated, d->peak_allocated_ns, d->peak_reserved,
                           d->peak_reserved_ns, d->allocated,      d->reserved};
    for (size_t k = 0; k < sizeof dv / sizeof *dv; k++) {
      ft__out_write(o, ", ", 2);
      out_key(o, dk[k]);
      ft__out_u64(o, dv[k]);
    }
    ft__out_write(o, "}", 1);
  }
  FT__OUT_LIT(o, "]}");
}

static void write_header(const ft_session *s, plan *p, ft__out *o, uint64_t base) {
  bool collected = s->device_status == FT_OK; /* as ft_session_device_status says it */
  const char *why = collected ? "" : s->device_why;
  FT__OUT_LIT(o, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
  write_device_properties(s, p, o);
  FT__OUT_LIT(o, "],\n");
  if (s->rank >= 0) {
    /* HTA finds the rank with the regex "rank":\s+(\d+): keep the space. */
    FT__OUT_LIT(o, "  \"distributedInfo\": {\"rank\": ");
    ft__out_i64(o, s->rank);
    if (s->world_size >= 1) {
      FT__OUT_LIT(o, ", \"world_size\": ");
      ft__out_i64(o, s->world_size);
    }
    FT__OUT_LIT(o, "},\n");
  }
  ft__out_str(o, "  \"flagtrace\": {\"version\": \"" FT_VERSION_STRING "\", \"tracer\": ");
  ft__out_json_string(o, s->tracer->ops->name, strlen(s->tracer->ops->name));
  ft__out_str(o, collected ? ", \"device_activity\": true" : ", \"device_activity\": false");
  FT__OUT_LIT(o, ", \"device_status\": ");
  ft__out_json_string(o, collected ? "collected" : why, strlen(collected ? "collected" : why));
  FT__OUT_LIT(o, ", \"dropped_records\": ");
  ft__out_u64(o, s->dropped);
  FT__OUT_LIT(o, ", \"window_discarded\": ");
  ft__out_u64(o, p->stats.window_discarded);
  if (s->lost_ns) { /* what another client's takeover of the vendor API cost (never silent) */
    FT__OUT_LIT(o, ", \"device_activity_lost_ns\": ");
    ft__out_u64(o, s->lost_ns);
    FT__OUT_LIT(o, ", \"device_activity_lost\": ");
    ft__out_json_string(o, s->lost_why, strlen(s->lost_why));
  }
  if (s->paused_left_out) {
    FT__OUT_LIT(o, ", \"collection_stopped_left_out\": ");
    ft__out_u64(o, s->paused_left_out);
  }
  /* asked and collected, or some recorded (an attached session's copies): a reader
   * tells "nothing allocated" from "not recorded" */
  if (((s->activities & FT_ACTIVITY_MEMORY) && collected) || p->n_mem) write_memory_summary(&p->mem, o);
  FT__OUT_LIT(o, ", \"capture_window_ns\": [");
  ft__out_u64(o, s->window_lo_ns);
  ft__out_write(o, ", ", 2);
  ft__out_u64(o, s->window_hi_ns);
  FT__OUT_LIT(o, "]},\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
  ft__out_u64(o, base);
  FT__OUT_LIT(o, ",\n  \"traceEvents\": [");
}

/* The slices of store events [from, to) with their projections and flows. Reads
 * the plan's pairing only (ft__flow_role and ft__project keep no cursor), so any
 * range renders alone the bytes the whole walk gives it; p's render caches are
 * the caller's own. */
static void write_range(const ft_session *s, plan *p, ft__out *o, size_t from, size_t to, uint64_t base) {
  const ft__vec *ev = &s->store.events;
  for (size_t i = from; i < to; i++) {
    const ft__event *e = ft__vec_at(ev, i);
    if (!ft__in_window(e, p->window_lo_ns, p->window_hi_ns) || (e->flags & FT__F_USER_RANGE)) continue;
    if (ft__is_memory_kind(e->kind)) { /* an instant and a counter sample: no flow, no projection */
      write_memory(s, p, o, e, base);
      continue;
    }
    /* The slice is written before its flow halves (Perfetto binds by order). */
    write_event(s, p, o, e, base);
    uint64_t plo = 0, phi = 0; /* set by ft__project(); zeroed for GCC -O3's maybe-uninitialized */
    uint32_t pdev = 0, pstream = 0;
    if (e->kind == FT__EV_CPU_RANGE && ft__project(p, e, &plo, &phi, &pdev, &pstream))
      write_projection(p, o, e, plo, phi, pdev, pstream, base, s);
    write_flows(s, p, o, i, e, base);
  }
}

/* ---- the body on several threads ----
 * The store is cut into chunks of consecutive events; worker threads and the
 * caller render chunks into growing buffers of a ring, and the caller hands them
 * to o in order, so the bytes are the serial walk's and at most a ring of chunks
 * is held. Each thread has its own render caches (a plan copy): they are caches
 * only, so which thread rendered a string never changes the bytes. */

enum {
  RENDER_CHUNK = 1024,       /* events: ~400 KB of JSON (a gzip block's size), ~0.2 ms of work */
  RENDER_MIN_EVENTS = 32768, /* fewer: the calling thread alone (threads would not pay) */
  RENDER_MAX_WORKERS = 8
};
/* Chunks in the ring: two per thread, so a worker descheduled on a busy host
 * (the deflate workers run too) stalls the in-order hand-off less. */
static size_t ring_slots(int workers) { return 2 * ((size_t)workers + 1) + 2; }

static int force_threads = -1;
static size_t force_chunk;
static int last_workers; /* workers the last body started, for tests; atomic: sessions
                            may be written from several threads at once */

/* (internal.h) */
int ft__render_split(int workers, size_t chunk) {
  int last = __atomic_load_n(&last_workers, __ATOMIC_RELAXED);
  force_threads = workers;
  force_chunk = chunk;
  return last;
}

typedef struct render_job {
  const ft_session *s;
  uint64_t base;
  size_t n_events, chunk, n_chunks;
  ft__out **slots; /* chunk c renders into slots[c % n_slots] */
  bool *done;
  size_t n_slots;
  size_t next, emitted; /* next chunk to take; chunks handed to the output */
  bool stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} render_job;

typedef struct renderer {
  render_job *job;
  plan p; /* the shared plan with this thread's own caches */
  pthread_t thread;
} renderer;

/* Takes the next chunk when its slot is free; SIZE_MAX when none (locked). */
static size_t take_chunk(render_job *j) {
  if (j->stop || j->next >= j->n_chunks || j->next - j->emitted >= j->n_slots) return SIZE_MAX;
  return j->next++;
}

/* Renders chunk c (unlocked), then marks it done (locked on return). */
static void render_chunk(render_job *j, plan *p, size_t c) {
  pthread_mutex_unlock(&j->mu);
  size_t from = c * j->chunk, to = from + j->chunk < j->n_events ? from + j->chunk : j->n_events;
  write_range(j->s, p, j->slots[c % j->n_slots], from, to, j->base);
  pthread_mutex_lock(&j->mu);
  j->done[c % j->n_slots] = true;
  pthread_cond_broadcast(&j->cv);
}

static void *render_main(void *arg) {
  renderer *r = arg;
  render_job *j = r->job;
  pthread_mutex_lock(&j->mu);
  for (;;) {
    size_t c = take_chunk(j);
    if (c != SIZE_MAX) {
      render_chunk(j, &r->p, c);
      continue;
    }
    if (j->stop || j->next >= j->n_chunks) break;
    pthread_cond_wait(&j->cv, &j->mu);
  }
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

/* A worker's copy of the plan with empty caches of its own; false when out of
 * memory (the worker is then not started). */
static bool own_caches(const ft_session *s, const plan *shared, plan *p) {
  *p = *shared;
  ft__arena_init(&p->rendered);
  p->names = calloc(s->store.names.n + 1, sizeof *p->names);
  p->values = calloc(s->store.values.n + 1, sizeof *p->values);
  p->meta = calloc(FT__META_SLOTS, sizeof *p->meta);
  p->meta_bytes = 0;
  if (p->names && p->values && p->meta) return true;
  free(p->names);
  free(p->values);
  free(p->meta);
  return false;
}

static void free_caches(plan *p) {
  free(p->names);
  free(p->values);
  free(p->meta);
  ft__arena_free(&p->rendered);
}

/* Renders the chunks on workers and the calling thread, handing them to o in
 * order. FT_ENOMEM when a buffer could not grow; no worker started: serial. */
static ft_status write_parallel(render_job *j, plan *p, ft__out *o, renderer *r, int n_workers) {
  int started = 0;
  sigset_t all, old; /* signals stay with the program's threads, as the deflate workers */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (int w = 0; w < n_workers; w++) {
    if (!own_caches(j->s, p, &r[started].p)) break;
    r[started].job = j;
    if (pthread_create(&r[started].thread, NULL, render_main, &r[started])) {
      free_caches(&r[started].p);
      break;
    }
    started++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  __atomic_store_n(&last_workers, started, __ATOMIC_RELAXED);
  int err = 0;
  pthread_mutex_lock(&j->mu);
  for (size_t c = 0; c < j->n_chunks; c++) {
    size_t at = c % j->n_slots;
    while (!j->done[at]) { /* help while the oldest chunk is rendered elsewhere */
      size_t mine = take_chunk(j);
      if (mine != SIZE_MAX) render_chunk(j, p, mine);
      else pthread_cond_wait(&j->cv, &j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    size_t len;
    int e;
    const char *text = ft__out_grown(j->slots[at], &len, &e);
    if (e && !err) err = e;
    if (!err) ft__out_write(o, text, len);
    ft__out_rewind(j->slots[at]);
    pthread_mutex_lock(&j->mu);
    j->done[at] = false;
    j->emitted++;
    pthread_cond_broadcast(&j->cv);
  }
  j->stop = true;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  for (int w = 0; w < started; w++) {
    pthread_join(r[w].thread, NULL);
    free_caches(&r[w].p);
  }
  return err ? FT_ENOMEM : FT_OK;
}

/* Every in-window slice of the store, in store order: on the calling thread for
 * small traces or FLAGOS_TRACE_RENDER_THREADS=0, else in chunks on workers. */
static ft_status write_body(const ft_session *s, plan *p, ft__out *o, uint64_t base) {
  size_t n = s->store.events.len;
  size_t chunk = force_chunk ? force_chunk : RENDER_CHUNK;
  size_t n_chunks = (n + chunk - 1) / chunk;
  int workers = force_threads;
  if (workers < 0) /* unset: the CPUs less the caller's and the output's own workers
                    * (deflate, a file's writer), so a 2-CPU box writing a file renders
                    * serially, as it did */
    workers = ft__worker_threads("FLAGOS_TRACE_RENDER_THREADS", ft__cpus() - 1 - ft__out_sink_threads(o));
  __atomic_store_n(&last_workers, 0, __ATOMIC_RELAXED);
  if (workers > RENDER_MAX_WORKERS) workers = RENDER_MAX_WORKERS;
  if ((size_t)workers > n_chunks - (n_chunks > 0)) workers = (int)(n_chunks - (n_chunks > 0));
  if (workers <= 0 || (!force_chunk && n < RENDER_MIN_EVENTS)) {
    write_range(s, p, o, 0, n, base);
    return FT_OK;
  }
  render_job j = {
      .s = s, .base = base, .n_events = n, .chunk = chunk, .n_chunks = n_chunks, .n_slots = ring_slots(workers)};
  renderer r[RENDER_MAX_WORKERS];
  j.slots = calloc(j.n_slots, sizeof *j.slots);
  j.done = calloc(j.n_slots, sizeof *j.done);
  ft_status st = j.slots && j.done ? FT_OK : FT_ENOMEM;
  for (size_t i = 0; !st && i < j.n_slots; i++) st = ft__out_open_grow(&j.slots[i]);
  if (!st && pthread_mutex_init(&j.mu, NULL)) st = FT_ENOMEM;
  if (!st && pthread_cond_init(&j.cv, NULL)) {
    pthread_mutex_destroy(&j.mu);
    st = FT_ENOMEM;
  }
  if (!st) {
    st = write_parallel(&j, p, o, r, workers);
    pthread_cond_destroy(&j.cv);
    pthread_mutex_destroy(&j.mu);
  } else {
    write_range(s, p, o, 0, n, base); /* no ring: the same bytes, serially */
    st = FT_OK;
  }
  for (size_t i = 0; j.slots && i < j.n_slots; i++) ft__out_abort(j.slots[i]);
  free(j.slots);
  free(j.done);
  return st;
}

ft_status ft__write_trace(ft_session *s, ft__out *o, ft__export_stats *stats) {
  plan p;
  /* without output (counts) nothing is rendered: no projections */
  ft_status st = ft__plan_build(s, &p, s->window_lo_ns, s->window_hi_ns, o != NULL);
  if (st) {
    ft__plan_free(&p);
    return st;
  }
  if (stats) *stats = p.stats;
  if (!o) {
    ft__plan_free(&p);
    return FT_OK;
  }
  /* ts are microseconds after a base rounded down to the UTC day, so every rank
   * of a job started the same day shares it and doubles keep ns precision. */
  uint64_t base = s->window_lo_ns - s->window_lo_ns % (86400ull * 1000000000ull);
  write_header(s, &p, o, base);
  bool first = true;
  write_rows(s, &p, o, base, &first);
  const ft__vec *ev = &s->store.events;
  st = write_body(s, &p, o, base);
  for (size_t i = 0; i < p.n_uprojs; i++) {
    const uproj *u = &p.uprojs[i];
    write_projection(&p, o, ft__vec_at(ev, u->range), u->lo, u->hi, u->device, u->stream, base, s);
  }
  FT__OUT_LIT(o, "\n  ]\n}\n");
  ft__plan_free(&p);
  return st;
}
