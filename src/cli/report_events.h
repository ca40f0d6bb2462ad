/* The report's timeline data (report_events.c): every slice of each file, from its event model. */
#ifndef FLAGTRACE_CLI_REPORT_EVENTS_H
#define FLAGTRACE_CLI_REPORT_EVENTS_H

#include <stdio.h>

#include "stats.h"

struct ft_model;
typedef struct ft__tl {
  struct ft_model *models; /* each file's event model, kept by the job's read (ft_stat_read_opts.models) */
  int64_t *base_ns;        /* each trace's baseTimeNanoseconds, -1 where it states none */
  size_t n;
} ft__tl;

/* For n_files files; FT_ENOMEM (free it all the same). */
ft_status ft__tl_new(ft__tl *tl, size_t n_files);
/* Has the job's read keep each file's event model in tl (the read goes through the model). */
void ft__tl_opts(ft__tl *tl, ft_stat_read_opts *o);
/* Reads each trace's base time (a second pass over files that state it after their events). */
void ft__tl_base_times(ft__tl *tl, const ft_stat_job *job);
void ft__tl_free(ft__tl *tl);
/* A file's first slice's start: the page's slice times are ts minus it (plus the file's offset_ns). */
int64_t ft__tl_first_ts(const struct ft_model *m);
/* {"findings": [...]} (or {"error": ...}): `flagtrace advise`'s findings on the files' models,
 * ranked, each with "at": its first occurrence on the page's clock (file index, t_ns from the
 * file's first slice as the page's columns, dur_ns), or null (report_advice.c). */
ft_status ft__report_advice(FILE *out, ft__tl *tl, const ft_stat_job *job);

/* A column of the page: zigzag varints, written gzip'd in base64 (report_events.c). */
typedef struct ft__tl_col {
  unsigned char *b;
  size_t n, cap;
} ft__tl_col;
bool ft__tl_varint(ft__tl_col *c, int64_t v); /* false without memory */
ft_status ft__tl_put_col(FILE *out, const ft__tl_col *c);
/* `, "mem": [per device: ...], "mem_more": N`: each device's memory after every operation
 * of the file's model (issue 51), times in ns from first as the slices'; names interned in
 * the page's names (report_memory.c; docs/report.md describes it). */
struct ft__strtab;
ft_status ft__tl_write_mem(FILE *out, const struct ft_model *m, struct ft__strtab *names, int64_t first);

/* {"clock": {"aligned", "why"}, "files": [per file: rank, offset_ns, rows, columns], "names": [...]}:
 * the files on one clock when every one states its base time, else each from its own
 * first slice and the reason. docs/report.md describes the columns. */
ft_status ft__tl_write(FILE *out, ft__tl *tl, const ft_stat_job *job);

#endif
