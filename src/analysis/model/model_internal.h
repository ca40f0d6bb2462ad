/* The event model's private state (model.c, model_finish.c): build arrays, strings, kernel-args variants, replay data.
 */
#ifndef FLAGTRACE_ANALYSIS_MODEL_INTERNAL_H
#define FLAGTRACE_ANALYSIS_MODEL_INTERNAL_H

#include "containers.h"
#include "model.h"
#include "stats_internal.h"

/* What a slice's event said beyond the columns, deduplicated (kernels share launch
 * configurations, ops their Input Dims): 56 B per distinct one, interned as bytes. */
enum { V_TID = 1, V_STREAM = 2, V_REGS = 4, V_GRID = 8, V_BLOCK = 16, V_DIMS = 32 };
typedef struct ft__mvar {
  int64_t tid, stream, regs;
  int32_t grid[3], block[3];
  uint32_t dims; /* id in priv.text */
  uint8_t flags; /* V_* */
  uint8_t pad[3];
} ft__mvar;
_Static_assert(sizeof(ft__mvar) == 56, "a variant's bytes are its key: no padding");

/* A track's key, interned as bytes (17 B). */
typedef struct ft__mtrack_key {
  int64_t dev, tid;
  uint8_t kind;
} ft__mtrack_key;

/* A category the stats reader does not know: where it was first seen (the slices
 * before it) and how many events had it, so a replay counts it where the file did. */
typedef struct ft__munknown {
  uint32_t before, cat; /* cat: id in priv.text */
  uint64_t count;
} ft__munknown;

typedef struct ft__mwide {
  uint32_t slice; /* its file position until finish, then the slice */
  uint8_t ext;    /* 0: corr, 1: ext */
  int64_t v;
} ft__mwide;

/* A memory row's event beyond its ft_model_mem columns, for a replay (issue 51). */
enum { MX_TID = 1, MX_CORR = 2, MX_EXT = 4, MX_STREAM = 8 };
typedef struct ft__mmemx {
  int64_t tid, corr, ext, stream, pool_bytes, pid;
  uint32_t before;  /* the slices before it in the file */
  uint32_t file;    /* its position among the file's memory rows (the sort's tie-break, the replay's order) */
  uint8_t flags;    /* MX_* */
  uint8_t op, kind; /* FT__MOP_*, FT__MKIND_* */
} ft__mmemx;

#define MODEL_CACHE 64
struct ft_model_priv {
  ft__strtab names; /* slice names: ft_model_str */
  ft__strtab text;  /* Input Dims texts, unknown categories */
  ft__strtab vars;  /* ft__mvar bytes */
  ft__strtab tkeys; /* ft__mtrack_key bytes, ids = track indexes */
  size_t cap_tracks;
  /* the build, in file order: the columns ts, dur, arg, corr32, ext32, name, track, kind
   * and var are filled as events come, then sorted in place by finish */
  uint32_t *var; /* per slice: its variant */
  size_t cap;
  size_t cap_wide;
  bool finished;
  uint32_t *order; /* file position -> slice */
  ft__mwide *wide; /* by slice, then corr before ext */
  size_t n_wide;
  ft__mmemx *memx;     /* per memory row (sorted with them) */
  uint32_t *mem_order; /* file position -> memory row */
  size_t cap_mem;
  uint64_t mem_bad; /* [memory] instants the reader skipped */
  ft__munknown *unk;
  size_t n_unk, cap_unk;
  ft__map unk_index; /* category text id -> index + 1 into unk; freed by finish */
  /* the reader's file-level results, for a replay */
  bool read;
  uint64_t events, cut_strings, cut_pyfunc;
  ft_stat_skips skipped;
  int64_t first_ns, last_ns;
  ft_stat_meta meta;
  ft_stat_source source;
  char *step_name; /* opts.step, copied */
  /* recent lookups (id + 1, 0: empty), by a cheap hash of the key: a trace's events
   * alternate among a few names, threads and launch configurations */
  uint32_t name_cache[MODEL_CACHE], var_cache[MODEL_CACHE], track_cache[MODEL_CACHE];
};

/* ft__model_huge (model.h): a 1 M-event model touches 40 MB (page faults were a fifth
 * of `stats --engine=model`'s time). */

/* A slice's id as given, its code not FT_MODEL_NONE (a wide one from the side table). */
static inline int64_t ft__model_id(const ft_model *m, size_t i, bool ext) {
  uint32_t v = ext ? m->ext32[i] : m->corr32[i];
  return v < FT_MODEL_WIDE ? (int64_t)v : ft__model_wide(m, i, ext);
}
/* model_finish.c */
ft_status ft__model_finish(ft_model *m);
/* model_mem.c: the memory rows by time, their op, call and step (after the slices' ops and steps) */
ft_status ft__model_mem_finish(ft_model *m);

#endif
