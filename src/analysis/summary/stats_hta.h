/* HTA's analyses in the reader (stats_hta.c): what a read keeps for them per event, and the per-file results. */
#ifndef FT_STATS_HTA_H
#define FT_STATS_HTA_H

#include "stats_internal.h"

/* HTA's thresholds (its get_cuda_kernel_launch_stats defaults) and the CUDA
 * launch queue's depth (its CUDA_MAX_LAUNCH_QUEUE_PER_STREAM). */
#define FT_HTA_RUNTIME_CUTOFF_NS 50000
#define FT_HTA_DELAY_CUTOFF_NS 100000
#define FT_HTA_QUEUE_FULL 1024

/* get_runtime_launch_events_mask's calls: those a stream's queue length counts (the
 * queue report here, the critical path's launch edges in advise/critical_path.c). */
#define FT__HTA_N_QUEUE_CALLS 12
extern const char *const ft__hta_queue_calls[FT__HTA_N_QUEUE_CALLS];

/* A read's state for them: NULL in ft_stats unless the read asked. */
typedef struct ft__hta ft__hta;
ft__hta *ft__hta_new(void);
void ft__hta_free(ft__hta *h);

/* What event e adds (row: its row, NULL for the events that have none, such as
 * cuda_sync); false without memory. */
bool ft__hta_event(ft_stats *st, const ft__ev *e, const char *name, ft_stat_row *row);

/* The file's results into out and its queue rows into st's FT_STAT_STREAMS;
 * frees st->hta. False without memory. */
bool ft__hta_finish(ft_stats *st, ft_stat_hta *out);
void ft__hta_result_free(ft_stat_hta *r);

/* stats_busy.c: an empty interval set, and the length of two sets' intersection. */
void ft__ivset_init(ft_stat_ivset *s);
bool ft__ivset_overlap(ft_stat_ivset *a, ft_stat_ivset *b, uint64_t *ns);

/* HTA's name classes (hta/common/types.py's patterns, our reading of them). */
enum { FT_HTA_COMM = 1, FT_HTA_MEMORY, FT_HTA_COMPUTE, FT_HTA_OTHER };
int ft__hta_kernel_type(const char *name, size_t len);

#endif
