/* The stats reader's args that take more than a number (Input Dims, grid, block, [memory] instants') and its hand-over.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "stats_reader.h"
#include "trace_numbers.h"

/* *buf with room for need bytes (doubling from first); false without memory. */
bool ft__rd_room(char **buf, size_t *cap, size_t need, size_t first) {
  if (need <= *cap) return true;
  size_t c = *cap ? 2 * *cap : first;
  while (c < need) c *= 2;
  char *p = realloc(*buf, c);
  if (!p) return false;
  *buf = p;
  *cap = c;
  return true;
}

/* Appends n bytes and a NUL to b's text; their offset, or UINT32_MAX without memory. */
static uint32_t batch_text(ft__evbatch *b, const char *s, size_t n) {
  /* a segment is far smaller than 4 GiB: the first test is not reached */
  if (b->len + n + 1 > UINT32_MAX || !ft__rd_room(&b->text, &b->tcap, b->len + n + 1, 1 << 16)) return UINT32_MAX;
  uint32_t at = (uint32_t)b->len;
  memcpy(b->text + at, s, n);
  b->text[at + n] = '\0';
  b->len += n + 1;
  return at;
}

bool ft__rd_batch_add(ft__evbatch *b, ft__ev e, const char *name, const char *cat_s) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 4096;
    ft__ev *p = realloc(b->ev, cap * sizeof *p);
    if (!p) return false;
    b->ev = p;
    b->cap = cap;
  }
  if ((e.name_off = batch_text(b, name, e.name_len)) == UINT32_MAX) return false;
  if (e.has_dims && (e.dims_off = batch_text(b, e.dims, e.dims_len)) == UINT32_MAX) return false;
  e.dims = NULL; /* its text is the batch's: resolved when the batch is taken */
  if (e.sec == FT__SEC_UNKNOWN && (e.cat_off = batch_text(b, cat_s, strlen(cat_s))) == UINT32_MAX) return false;
  b->ev[b->n++] = e;
  return true;
}

/* A [memory] instant: its args to the summary (and the event model); one whose ts or a number
 * field is missing or not a number is counted (mem_bad), not read. */
bool ft__rd_memory_event(reader *r) {
  if (r->bad_time || r->time_range || !r->has_ts || r->mem_bad || !r->has_mbytes || r->bad_ext) {
    r->cnt.mem_bad++;
    return true;
  }
  ft__ev e = r->mem;
  e.ts = r->ts;
  e.dur = 0;
  e.dev = r->pid_num ? r->pid : -1;
  e.sec = FT__SEC_MEMORY;
  e.name_len = (uint32_t)r->name_len;
  e.has_ext = r->has_ext, e.ext = r->ext;
  e.has_tid = r->has_tid, e.tid = r->tid;
  e.has_corr = r->has_corr, e.corr = r->corr;
  e.has_stream = r->has_stream, e.stream = r->stream;
  if (!r->has_addr) e.mem_addr = 0;
  return ft__rd_emit(r, &e, "cpu_instant_event");
}

/* Appends s[0, n) to the Input Dims text, up to FT_STATS_KEEP bytes (a longer list
 * is cut: its key stays distinct from any shorter one's). */
bool ft__rd_dims_put(reader *r, const char *s, size_t n) {
  if (r->dims_len + n + 1 > FT_STATS_KEEP) n = r->dims_len + 1 < FT_STATS_KEEP ? FT_STATS_KEEP - r->dims_len - 1 : 0;
  if (!ft__rd_room(&r->dims, &r->dims_cap, r->dims_len + n + 1, 256)) {
    snprintf(r->err, sizeof r->err, "out of memory");
    return false;
  }
  memcpy(r->dims + r->dims_len, s, n);
  r->dims_len += n;
  r->dims[r->dims_len] = '\0';
  return true;
}

/* A value inside Input Dims, written as Python's str() of the list writes it
 * ("[[16, 1024], []]"): key_averages(group_by_input_shape=True) keys on that. */
bool ft__rd_dims_value(reader *r, const char *s, size_t n) {
  if (r->arr_after && !ft__rd_dims_put(r, ", ", 2)) return false;
  r->arr_after = true;
  return ft__rd_dims_put(r, s, n);
}

/* grid or block held something other than three whole numbers: not shown */
void ft__rd_arr_spoil(reader *r) { *(r->arr_key == K_GRID ? &r->grid_n : &r->block_n) = 4; }

/* A value of an array being read (grid, block, Input Dims); false on ENOMEM. */
bool ft__rd_arr_number(reader *r, const char *s, size_t n) {
  if (r->arr_key == K_DIMS) return ft__rd_dims_value(r, s, n);
  uint8_t *cnt = r->arr_key == K_GRID ? &r->grid_n : &r->block_n;
  int32_t *d = r->arr_key == K_GRID ? r->grid : r->block;
  int64_t v;
  if (r->depth == r->arr_depth && *cnt < 3 && parse_int(s, n, &v) && v >= 0 && v <= INT32_MAX) d[(*cnt)++] = (int32_t)v;
  else ft__rd_arr_spoil(r);
  return true;
}

/* A [memory] instant's args key (torch's seven and ours), and the others every event's args have. */
void ft__rd_mem_key(reader *r, const unsigned char *k, size_t n) {
#define IS(lit) (n == sizeof(lit) - 1 && !memcmp(k, lit, n))
  r->key = IS("Bytes")                                  ? K_M_BYTES
           : IS("Addr")                                 ? K_M_ADDR
           : IS("Total Allocated")                      ? K_M_TALLOC
           : IS("Total Reserved")                       ? K_M_TRES
           : IS("Device Id")                            ? K_M_DEVID
           : IS("Device Type")                          ? K_M_DEVTYPE
           : IS("Pool Bytes")                           ? K_M_POOLB
           : IS("Op")                                   ? K_M_OP
           : IS("Kind")                                 ? K_M_KIND
           : IS("correlation")                          ? K_CORR
           : IS("stream")                               ? K_STREAM
           : IS("External id") || IS("external id")     ? K_EXT
           : IS("bytes")                                ? K_BYTES
           : r->want_args && IS("block")                ? K_BLOCK
           : r->want_args && IS("grid")                 ? K_GRID
           : r->want_args && IS("registers per thread") ? K_REGS
           : IS("Input Dims")                           ? K_DIMS
                                                        : K_OTHER;
#undef IS
}

/* Our Op and Kind args (torch writes neither); an unknown word reads as none / other. */
void ft__rd_mem_string(reader *r, const unsigned char *s, size_t n) {
#define IS(lit) (n == sizeof(lit) - 1 && !memcmp(s, lit, n))
  if (r->key == K_M_OP)
    r->mem.mem_op = IS("alloc")       ? FT__MOP_ALLOC
                    : IS("free")      ? FT__MOP_FREE
                    : IS("reserve")   ? FT__MOP_RESERVE
                    : IS("unreserve") ? FT__MOP_UNRESERVE
                                      : FT__MOP_NONE;
  else
    r->mem.mem_kind = IS("device")     ? FT__MKIND_DEVICE
                      : IS("pinned")   ? FT__MKIND_PINNED
                      : IS("managed")  ? FT__MKIND_MANAGED
                      : IS("pageable") ? FT__MKIND_PAGEABLE
                                       : FT__MKIND_OTHER;
#undef IS
}

/* A [memory] instant's number arg; one that is not a whole number spoils the event (counted). Addr
 * is unsigned: an address above 2^63 is read as its 64 bits. */
void ft__rd_mem_number(reader *r, const char *s, size_t n) {
  int64_t v;
  bool ok = parse_int(s, n, &v);
  if (!ok && r->key == K_M_ADDR) { /* 2^63 and above: digits only */
    uint64_t u = 0;
    size_t i = 0;
    for (; i < n && i < 20 && ft__is_digit(s[i]); i++) u = u * 10 + (uint64_t)(s[i] - '0');
    if ((ok = i == n && n > 0 && n < 20)) v = (int64_t)u;
  }
  if (!ok) {
    r->mem_bad = true;
    return;
  }
  switch (r->key) {
  case K_M_BYTES: r->mem.mem_bytes = v, r->has_mbytes = true; break;
  case K_M_ADDR: r->mem.mem_addr = (uint64_t)v, r->has_addr = true; break;
  case K_M_TALLOC:
    r->mem.mem_total_alloc = v;
    r->mem_bad |= v < 0;
    break;
  case K_M_TRES:
    r->mem.mem_total_res = v;
    r->mem_bad |= v < 0;
    break;
  case K_M_POOLB: r->mem.mem_pool_bytes = v; break;
  case K_M_DEVID:
    r->mem.mem_device = v >= -1 && v <= INT32_MAX ? (int32_t)v : -1;
    r->mem_bad |= v < -1 || v > INT32_MAX;
    break;
  case K_M_DEVTYPE:
    r->mem.mem_device_type = v >= 0 && v <= INT16_MAX ? (int16_t)v : -1;
    r->mem_bad |= v < 0 || v > INT16_MAX;
    break;
  default: break;
  }
}
