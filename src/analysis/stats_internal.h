/* What the `flagtrace stats` reader's files share: the parse entry, what an event adds, the op join and the busy
 * intervals. */
#ifndef FT_STATS_INTERNAL_H
#define FT_STATS_INTERNAL_H

#include "keyed_hash.h"
#include "stats.h"

/* stats_source.c: SipHash-2-4 under a fixed key, streamed: the digest of a trace's bytes
 * that its partial names (ft_stat_source). */
typedef struct ft__digest {
  uint64_t v[4], tail, len;
  unsigned n_tail;
} ft__digest;
void ft__digest_init(ft__digest *d);
void ft__digest_add(ft__digest *d, const void *data, size_t n);
uint64_t ft__digest_end(const ft__digest *d);
/* A merge's files: FT_EINVAL, and the later one named in err ("PARTIAL: its trace ...
 * is a copy of ..."), when two from different partials (partial_of[file], paths[partial])
 * have one source: the same digest and size. */
ft_status ft__sources_distinct(const ft_stat_job *job, const size_t *partial_of, const char *const *paths, char *err,
                               size_t errlen);

/* stats_reader.c: one parse over chunks pulled from next() (the chunk stays valid
 * until the next call); error offsets are in the uncompressed text. */
typedef struct ft__evbatch ft__evbatch;
typedef long (*ft__chunk_fn)(void *src, const unsigned char **data, const ft__evbatch **batch, char *err,
                             size_t errlen);
ft_status ft__stats_parse(ft_stats *st, ft__chunk_fn next, void *src, char *err, size_t errlen);

/* stats_summary.c: what an event read (by the reader, or a worker's batch) adds to
 * the summary. The section of a complete event's category, including older kineto
 * spellings (Runtime, Memcpy, Memset, Operator) and MTIA's. */
enum ft__sec {
  FT__SEC_UNKNOWN,
  FT__SEC_IGNORED,
  FT__SEC_KERNEL,
  FT__SEC_MEMCPY,
  FT__SEC_MEMSET,
  FT__SEC_RUNTIME,
  FT__SEC_DRIVER,
  FT__SEC_OP,
  FT__SEC_RANGE,
  FT__SEC_GPU_RANGE,
  FT__SEC_SYNC,     /* cuda_sync: no row of its own; HTA's analyses count it (stats_hta.c) */
  FT__SEC_OVERHEAD, /* kineto's own CPU work (Activity Buffer Request): an ops row, a child in the nesting */
  FT__SEC_PYFUNC,   /* python_function: its nn.Module events place ops in their module (FT_STAT_OP_MODULES) */
  FT__SEC_MEMORY,   /* a "[memory]" instant (ph "i"/"I"): one allocation or free (issue 51; the mem_* fields) */
  FT__SEC_META      /* a "thread_name" or "process_name" event (ph "M"): its args.name as the name, its pid in dev,
                     * tid; bytes 1 for a process's, 0 for a thread's. Only the event model keeps them (the report's rows) */
};
enum ft__sec ft__stats_section_of(const char *cat);

/* An event past the counting: what it adds to the summary, from the reader's
 * current event or from a worker's batch. Names are in the batch's text. */
typedef struct ft__ev {
  int64_t ts, dur, dev, ext;
  uint64_t bytes;
  uint32_t name_off, name_len, cat_off;
  uint8_t sec;
  bool has_ext;
  bool name_cut; /* the name was cut to FT_STATS_KEEP bytes (the event model's replay counts it) */
  /* the event's tid and args: correlation, stream, grid, block, registers per
   * thread, Input Dims (as Python's str() of the list: dims, dims_len bytes; in a
   * batch at dims_off of its text). Each has_* says it was given (a dim3 only
   * when it was three whole numbers). */
  bool has_tid, has_corr, has_stream, has_regs, has_grid, has_block, has_dims;
  int64_t tid, corr, stream, regs;
  int32_t grid[3], block[3];
  const char *dims;
  uint32_t dims_off, dims_len;
  /* a [memory] instant's args (sec FT__SEC_MEMORY; tid, corr, ext and stream as above, dev its pid): Bytes
   * (signed, torch's: > 0 allocated, < 0 freed), Addr, Total Allocated/Reserved (-1 absent), our Pool Bytes
   * (reserve/unreserve), Device Id (-1 absent), Device Type (-1 absent), our Op and Kind (FT__MOP_*, FT__MKIND_*) */
  int64_t mem_bytes, mem_total_alloc, mem_total_res, mem_pool_bytes;
  uint64_t mem_addr;
  int32_t mem_device;
  int16_t mem_device_type;
  uint8_t mem_op, mem_kind;
} ft__ev;
enum { FT__MOP_NONE, FT__MOP_ALLOC, FT__MOP_FREE, FT__MOP_RESERVE, FT__MOP_UNRESERVE };
enum { FT__MKIND_NONE, FT__MKIND_DEVICE, FT__MKIND_PINNED, FT__MKIND_MANAGED, FT__MKIND_PAGEABLE, FT__MKIND_OTHER };

/* "ProfilerStep#N": N, else -1 (stats_summary.c; the summary's and the event model's steps). */
int64_t ft__profiler_step(const char *s, size_t len);

/* What event e adds to st (name and cat: C strings); false without memory. */
bool ft__stats_apply(ft_stats *st, const ft__ev *e, const char *name, const char *cat);

/* Parse workers (stats_input.c): a segment of the text that starts where one
 * trace event of the events array (at depth 1 or 2) ends is parsed on its own
 * into a batch, as if the parse were there; ft__stats_parse takes the batch
 * (with the segment as its chunk) only when it finds the guess held. */
typedef struct ft__evcounts {
  uint64_t events, bad_time, time_range, no_dur, neg_dur, bad_bytes, bad_ext, cut_strings;
  int64_t first_ns, last_ns;
  uint64_t mem_bad; /* [memory] instants skipped: ts, Bytes or another number field missing or not a number */
} ft__evcounts;
ft__evbatch *ft__evbatch_new(bool want_args, bool want_modules); /* st's, of the parse it works for */
void ft__evbatch_free(ft__evbatch *b);
void ft__stats_parse_segment(ft__evbatch *b, const unsigned char *buf, size_t n, uint64_t base, unsigned depth);

/* A cheap 64-bit finalizer for the row cache's slot: a key that collides there
 * only costs the name table's lookup. Not for tables the input fills. */
static inline uint64_t ft__cache_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

/* stats_ops.c: a call on the CPU (an op, range or kineto overhead with its rows in
 * FT_STAT_OPS and FT_STAT_OP_SHAPES, UINT32_MAX for none; a runtime call with none
 * and its FT_STAT_API row, UINT32_MAX for an op), device time
 * by External id, and at a file's end the calls' nesting into their rows (self
 * CPU, self device, device total). False without memory. */
bool ft__ops_note(ft_stats *st, const ft__ev *e, uint32_t row, uint32_t shape_row, uint32_t api_row);
bool ft__ops_device(ft_stats *st, bool has_ext, int64_t ext, uint64_t ns);
bool ft__ops_file_end(ft_stats *st);
/* A [memory] event (ts ns, Bytes, torch's Device Type) for the ops' memory columns (with want_ops):
 * kept until the file's end, when each call takes those in its interval. False without memory. */
bool ft__ops_memory(ft_stats *st, int64_t ts, int64_t bytes, int64_t device_type);
/* a + b as two's complement wraps it: the memory sums of hostile Bytes never overflow a signed int (UB) */
static inline int64_t ft__wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
/* stats_memory.c: a file's memory summary (st->mem's, with want_memory) into st->mem_sum; false without memory. */
bool ft__stats_mem_file_end(ft_stats *st);
/* With want_op_kernels: device work named kernel (a name id) of External id ext
 * into FT_STAT_OP_KERNELS under its op, now or (when its op comes later) at the
 * file's end; under "(no op)" without one. False without memory. */
bool ft__ops_kernel(ft_stats *st, bool has_ext, int64_t ext, uint32_t kernel, uint64_t ns);
/* stats_summary.c: the row of name_id and aux (name ids) in a section that
 * ft_stat_keyed_by_aux, made when new; NULL without memory. */
ft_stat_row *ft__aux_row(ft_stats *st, int sec, uint32_t name_id, uint32_t aux, uint32_t *index);
/* An nn.Module's python_function event (name: the module, "Linear_0"), with want_modules. */
bool ft__ops_module(ft_stats *st, const ft__ev *e, const char *module, size_t len);

/* stats_busy.c: the External id -> op join (16 B a slot). A value is the index of
 * its call in st->host with JOIN_OP set, or the device ns of an External id whose
 * call has not been read yet (fewer than 2^63 ns: times are bounded). */
#define JOIN_OP (1ull << 63)
void ft__join_free(ft_stat_join *j);
uint64_t *ft__join_upsert(ft_stat_join *j, uint64_t key); /* 0 when new; NULL on ENOMEM */
uint64_t *ft__join_find(ft_stat_join *j, uint64_t key);   /* NULL when absent */
/* stats_busy.c: a device's row (created on first sight while the file has fewer
 * than FT_STATS_MAX_DEVICES; *over set and NULL returned past that) and its busy intervals */
ft_stat_device *ft__stats_device(ft_stats *st, int64_t id, bool *over);
void ft__ivset_free(ft_stat_ivset *s);
bool ft__add_interval(ft_stat_ivset *d, int64_t lo, int64_t hi);
bool ft__device_busy(ft_stat_ivset *d, uint64_t *busy, uint64_t *bins, int64_t t0, uint64_t span_ns);

#endif
