/* The report's memory tracks (issue 51): each device's allocated and reserved bytes after every memory operation. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "report_events.h"
#include "stats_internal.h"
#include "stats_out.h"

/* Devices drawn per file: a hostile trace of many device ids costs a pass over the rows
 * each, so the rest are counted ("mem_more") and not drawn. */
#define MEM_MAX_DEVICES 16

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* A row of device memory: a device id, and not the host's (torch's DeviceType CPU 0, MKLDNN 2,
 * IDEEP 5, as stats' memory columns tell CPU memory; -1, no type stated, is a device's). */
static bool on_device(const ft_model_mem *r) {
  return r->device >= 0 && r->device_type != 0 && r->device_type != 2 && r->device_type != 5;
}

/* The page's name id + 1 of slice s's name, 0 when none. */
static ft_status name_of(const ft_model *m, uint32_t s, ft__strtab *names, int64_t *out) {
  *out = 0;
  if (s == FT_MODEL_NONE || s >= m->n || m->name[s] == FT_MODEL_NONE) return FT_OK;
  const char *str = ft_model_str(m, m->name[s]);
  uint32_t id;
  if (ft__intern(names, str, strlen(str), &id)) return FT_ENOMEM;
  *out = (int64_t)id + 1;
  return FT_OK;
}

/* One device's track: its samples' columns and its peak (the first sample at the highest
 * allocated). Allocated and reserved are the operation's totals after it ("Total
 * Allocated"/"Total Reserved"); a row without them carries the running sum of its bytes
 * and the reserved before it (at least the allocated). */
static ft_status write_device(FILE *out, const ft_model *m, int16_t type, int32_t dev, ft__strtab *names,
                              int64_t first) {
  ft__tl_col c[6] = {{0}}; /* t: ns from the previous (the first from first), a, r: deltas; b: bytes; w, k: names */
  int64_t prev_t = first, alloc = 0, resv = 0, pa = 0, pr = 0, max_resv = 0, peak_t = 0, peak_a = -1, peak_r = 0,
          peak_b = 0, peak_w = 0, peak_k = 0;
  size_t n = 0, peak_i = 0;
  ft_status s = FT_OK;
  for (size_t i = 0; i < m->n_mem && !s; i++) {
    const ft_model_mem *r = &m->mem[i];
    if (r->device != dev || r->device_type != type) continue;
    alloc = r->total_allocated >= 0 ? r->total_allocated : alloc + r->bytes > 0 ? alloc + r->bytes : 0;
    resv = r->total_reserved >= 0 ? r->total_reserved : resv > alloc ? resv : alloc;
    int64_t w, k;
    if ((s = name_of(m, r->op, names, &w)) || (s = name_of(m, r->call, names, &k))) break;
    bool ok = ft__tl_varint(&c[0], r->ts - prev_t) && ft__tl_varint(&c[1], alloc - pa) &&
              ft__tl_varint(&c[2], resv - pr) && ft__tl_varint(&c[3], r->bytes) && ft__tl_varint(&c[4], w) &&
              ft__tl_varint(&c[5], k);
    if (!ok) s = FT_ENOMEM;
    if (alloc > peak_a)
      peak_a = alloc, peak_r = resv, peak_t = r->ts - first, peak_b = r->bytes, peak_w = w, peak_k = k, peak_i = n;
    if (resv > max_resv) max_resv = resv;
    prev_t = r->ts, pa = alloc, pr = resv;
    n++;
  }
  static const char *const keys[] = {"t", "a", "r", "b", "w", "k"};
  if (!s)
    fprintf(out, "{\"device\": %d, \"type\": %d, \"n\": %zu, \"max_reserved\": %lld", (int)dev, (int)type, n,
            (long long)max_resv);
  for (int i = 0; i < 6 && !s; i++) {
    fprintf(out, ", \"%s\": ", keys[i]);
    s = ft__tl_put_col(out, &c[i]);
  }
  if (!s) {
    fprintf(out, ", \"peak\": {\"i\": %zu, \"t_ns\": %lld, \"allocated\": %lld, \"reserved\": %lld, \"bytes\": %lld",
            peak_i, (long long)peak_t, (long long)peak_a, (long long)peak_r, (long long)peak_b);
    fputs(", \"op\": ", out);
    if (peak_w) ft_json_string(out, ft__intern_str(names, (uint32_t)(peak_w - 1)));
    else fputs("null", out);
    fputs(", \"call\": ", out);
    if (peak_k) ft_json_string(out, ft__intern_str(names, (uint32_t)(peak_k - 1)));
    else fputs("null", out);
    fputs("}}", out);
  }
  for (int i = 0; i < 6; i++) free(c[i].b);
  return s;
}

ft_status ft__tl_write_mem(FILE *out, const ft_model *m, struct ft__strtab *names, int64_t first) {
  struct {
    int16_t type;
    int32_t dev;
  } devs[MEM_MAX_DEVICES];
  size_t nd = 0, more = 0;
  uint64_t seen_more = 0; /* rows of devices past the cap: counted once per device below */
  for (size_t i = 0; i < m->n_mem; i++) {
    const ft_model_mem *r = &m->mem[i];
    if (!on_device(r)) continue;
    size_t d = 0;
    while (d < nd && !(devs[d].dev == r->device && devs[d].type == r->device_type)) d++;
    if (d < nd) continue;
    if (nd < MEM_MAX_DEVICES) devs[nd].type = r->device_type, devs[nd++].dev = r->device;
    else seen_more++;
  }
  if (seen_more) { /* the devices past the cap, each counted once (a sort of their ids) */
    int64_t *ids = malloc(seen_more * sizeof *ids);
    if (!ids) return FT_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < m->n_mem && k < seen_more; i++) {
      const ft_model_mem *r = &m->mem[i];
      size_t d = 0;
      if (!on_device(r)) continue;
      while (d < nd && !(devs[d].dev == r->device && devs[d].type == r->device_type)) d++;
      if (d == nd) ids[k++] = (int64_t)r->device_type << 32 | (uint32_t)r->device;
    }
    qsort(ids, k, sizeof *ids, cmp_i64);
    for (size_t i = 0; i < k; i++) more += !i || ids[i] != ids[i - 1];
    free(ids);
  }
  /* in device order: the page puts each under its device's streams */
  for (size_t a = 1; a < nd; a++)
    for (size_t b = a; b > 0 && (devs[b].dev < devs[b - 1].dev ||
                                 (devs[b].dev == devs[b - 1].dev && devs[b].type < devs[b - 1].type));
         b--) {
      __typeof__(devs[0]) t = devs[b];
      devs[b] = devs[b - 1], devs[b - 1] = t;
    }
  fputs(", \"mem\": [", out);
  ft_status s = FT_OK;
  for (size_t d = 0; d < nd && !s; d++) {
    fputs(d ? ",\n  " : "\n  ", out);
    s = write_device(out, m, devs[d].type, devs[d].dev, names, first);
  }
  fprintf(out, "], \"mem_more\": %zu", more);
  return s;
}
