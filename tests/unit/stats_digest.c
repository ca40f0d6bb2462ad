/* Everything a `flagtrace stats` read put into an ft_stats, as text: two reads that should agree are compared by it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include "stats_digest.h"

#include <stdio.h>
#include <stdlib.h>

static void dist(FILE *f, const ft_stat_dist *d) {
  fprintf(f, " n=%llu total=%llu min=%llu max=%llu sq=%llu med=%llu", (unsigned long long)d->n,
          (unsigned long long)d->total, (unsigned long long)d->min, (unsigned long long)d->max,
          (unsigned long long)(uint64_t)d->sumsq, (unsigned long long)ft_dist_median(d));
}

char *stats_digest(ft_stats *st) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (!f) return NULL;
  fprintf(f, "events=%llu skipped=%llu/%llu/%llu span=%lld..%lld device=%llu attributed=%llu\n",
          (unsigned long long)st->events, (unsigned long long)st->skipped.bad_time,
          (unsigned long long)st->skipped.time_range, (unsigned long long)st->skipped.unknown_cat,
          (long long)st->first_ns, (long long)st->last_ns, (unsigned long long)st->device_ns,
          (unsigned long long)st->attributed_ns);
  fprintf(f, "skipped no_dur=%llu neg_dur=%llu bad_bytes=%llu bad_ext=%llu cut=%llu over_cap=%llu\n",
          (unsigned long long)st->skipped.no_dur, (unsigned long long)st->skipped.neg_dur,
          (unsigned long long)st->skipped.bad_bytes, (unsigned long long)st->skipped.bad_ext,
          (unsigned long long)st->cut_strings, (unsigned long long)st->device_cap_events);
  const ft_stat_meta *m = &st->meta;
  fprintf(f, "meta rank=%lld activity=%d tracer=%s status=%s dropped=%llu window=%llu flagtrace=%d\n",
          (long long)m->rank, m->device_activity, m->tracer, m->device_status, (unsigned long long)m->dropped_records,
          (unsigned long long)m->window_discarded, m->has_flagtrace);
  for (int s = 0; s < FT_STAT_N_SECTIONS; s++)
    for (size_t i = 0; i < st->rows[s].len; i++) {
      const ft_stat_row *r = ft__vec_at(&st->rows[s], i);
      fprintf(f, "row %d '%s' cat=%u comm=%d calls=%llu self=%llu t:", s, ft__intern_str(&st->names, r->name_id),
              r->cat, r->comm, (unsigned long long)r->calls, (unsigned long long)r->self_ns);
      dist(f, &r->t);
      fputs(" b:", f);
      dist(f, &r->b);
      fputc('\n', f);
    }
  for (size_t i = 0; i < st->unknown_cats.cap; i++)
    if (st->unknown_cats.used[i])
      fprintf(f, "unknown '%s' %llu\n", ft__intern_str(&st->names, (uint32_t)st->unknown_cats.keys[i]),
              (unsigned long long)st->unknown_cats.vals[i]);
  for (size_t i = 0; i < st->n_trace; i++) /* the heap's layout too: the same inserts give the same one */
    fprintf(f, "trace %lld+%lld dev=%lld bytes=%llu '%s' kind=%u\n", (long long)st->trace[i].ts,
            (long long)st->trace[i].dur, (long long)st->trace[i].device, (unsigned long long)st->trace[i].bytes,
            ft__intern_str(&st->names, st->trace[i].name_id), st->trace[i].kind);
  size_t n;
  ft_stat_busy *b = ft_stats_busy(st, &n);
  if (n != SIZE_MAX)
    for (size_t i = 0; i < n; i++) {
      unsigned long long bins = 0; /* the report's timeline: a weighted sum tells bins apart */
      for (size_t k = 0; b[i].busy_bins && k < 2 * FT_TIMELINE_BINS; k++) bins += (k + 1) * b[i].busy_bins[k];
      fprintf(f, "busy dev=%lld %llu bins=%llu\n", (long long)b[i].device, (unsigned long long)b[i].busy_ns, bins);
    }
  ft_stats_busy_free(b, n == SIZE_MAX ? 0 : n);
  fclose(f);
  return out;
}
