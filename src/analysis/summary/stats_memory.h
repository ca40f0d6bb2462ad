/* The device-memory accumulator (issue 51): what [memory] instants add up to per device, reusable by other reports. */
#ifndef FLAGTRACE_ANALYSIS_STATS_MEMORY_H
#define FLAGTRACE_ANALYSIS_STATS_MEMORY_H

#include "stats_internal.h"

/* One file's accumulator: fed the file's [memory] instants, its ops and ranges, its runtime
 * calls and its ProfilerStep#N ranges (in any order: the events are applied in time order at
 * the end, ties in the order given), it ends in an ft_stat_mem whose peaks and live
 * allocations name their op, call and step. Memory while the file is read: 96 B a [memory]
 * event, 48 B an op or call, 64 B a live allocation (at most FT_MEM_MAX_LIVE of them). */
typedef struct ft__memacc ft__memacc;
ft__memacc *ft__memacc_new(void);
void ft__memacc_free(ft__memacc *a);
/* Tests: track at most n live addresses (FT_MEM_MAX_LIVE by default). */
void ft__memacc_set_live_limit(ft__memacc *a, size_t n);
/* e: sec FT__SEC_MEMORY. False without memory. */
bool ft__memacc_event(ft__memacc *a, const ft__ev *e);
/* An op or range (name: an id of the names table finish is given), a runtime or driver call with a
 * correlation id, a step (ProfilerStep#N's N). False without memory. */
bool ft__memacc_op(ft__memacc *a, const ft__ev *e, uint32_t name);
bool ft__memacc_call(ft__memacc *a, const ft__ev *e, uint32_t name);
bool ft__memacc_step(ft__memacc *a, const ft__ev *e, int64_t number);
/* The summary (out: zeroed first; the reader's bad_field count is the caller's). False without memory
 * (out then freed). The accumulator is left empty for another file. */
bool ft__memacc_finish(ft__memacc *a, const ft__strtab *names, ft_stat_mem *out);

/* A copy of m (strings too); false without memory (dst then empty). */
bool ft__stat_mem_copy(ft_stat_mem *dst, const ft_stat_mem *m);
/* "cuda:0", "cpu", "privateuse1:1", "type 7:0" into buf. */
const char *ft__mem_device_name(const ft_stat_mem_dev *d, char *buf, size_t len);

#endif
