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
  uint32_t slice;
  uint8_t ext; /* 0: corr, 1: ext */
  int64_t v;
} ft__mwide;

struct ft_model_priv {
  ft__strtab names; /* slice names: ft_model_str */
  ft__strtab text;  /* Input Dims texts, unknown categories */
  ft__strtab vars;  /* ft__mvar bytes */
  ft__strtab tkeys; /* ft__mtrack_key bytes, ids = track indexes */
  size_t cap_tracks;
  /* the build, in file order (freed by finish) */
  int64_t *ts, *dur, *corr, *ext;
  uint64_t *bytes;
  uint32_t *name, *track, *var;
  uint8_t *kind;
  size_t cap;
  bool finished;
  /* held after finish */
  uint32_t *var_col; /* per slice (sorted): its variant */
  uint32_t *order;   /* file position -> slice */
  ft__mwide *wide;   /* by slice, then corr before ext */
  size_t n_wide;
  ft__munknown *unk;
  size_t n_unk, cap_unk;
  /* the reader's file-level results, for a replay */
  bool read;
  uint64_t events, cut_strings, cut_pyfunc;
  ft_stat_skips skipped;
  int64_t first_ns, last_ns;
  ft_stat_meta meta;
  ft_stat_source source;
  char *step_name; /* opts.step, copied */
  /* the latest lookups: consecutive events mostly share them */
  uint32_t last_name, last_var, last_track;
  bool has_last_name, has_last_var, has_last_track;
};

/* model.c: frees the build arrays (file order) */
void ft__model_free_build(struct ft_model_priv *p);
/* model_finish.c */
ft_status ft__model_finish(ft_model *m);

#endif
