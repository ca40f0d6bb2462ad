/* libFuzzer harness for `advise --merge`'s reader (advise_partial.c): arbitrary bytes give per-rank advice or a
 * one-line error, never a crash, a hang or undefined behaviour; advice read is written again and reads back to the
 * same text (a partial of a partial is itself), compares with itself as unchanged, and goes the rest of --merge's
 * way: the job's part (stragglers), the ranking, every output format. */
#define _GNU_SOURCE /* open_memstream */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_cli.h"
#include "advise_partial.h"

static char *partial_text(const ft_advise_partial *p, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f || ft_advise_partial_write(f, p)) abort();
  fclose(f);
  return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ft_advise_partial p;
  memset(&p, 0, sizeof p);
  char err[512] = "";
  if (ft_advise_partial_read_mem((const char *)data, size, &p, err, sizeof err)) {
    if (!err[0] || strchr(err, '\n')) abort(); /* one line that says what went wrong */
    if (p.n) abort();                          /* a file refused adds no part */
    ft_advise_partial_free(&p);
    return 0;
  }
  /* diff of two advise results: the file against itself changes nothing */
  ft_advise_delta *d = NULL;
  size_t nd = 0;
  if (ft_advise_compare(&p, &p, 0.05, &d, &nd) == FT_OK)
    for (size_t i = 0; i < nd; i++)
      if (d[i].change != FT_ADV_SAME || d[i].cost_a != d[i].cost_b) abort();
  free(d);
  /* written and read back: the same text */
  size_t n1, n2;
  char *t1 = partial_text(&p, &n1);
  ft_advise_partial q;
  memset(&q, 0, sizeof q);
  if (ft_advise_partial_read_mem(t1, n1, &q, err, sizeof err)) abort();
  if (q.n != p.n) abort();
  char *t2 = partial_text(&q, &n2);
  if (n1 != n2 || memcmp(t1, t2, n1)) abort();
  free(t1);
  free(t2);
  ft_advise_partial_free(&q);
  /* the rest of --merge: the advice moved into the CLI's, the job's part, the ranking, the outputs */
  ft_cli_advice a;
  ft_advise_opts o;
  ft_advise_opts_default(&o);
  if (ft_cli_advice_take(&a, &p, &o, err, sizeof err) == FT_OK) {
    FILE *null = fopen("/dev/null", "w");
    if (!null) abort();
    ft_cli_advice_json(null, &a, 0);
    if (ft_cli_advice_csv(null, &a, 3) || ft_cli_advice_table(null, &a, 0, 0) || ft_cli_advice_table(null, &a, 60, 2))
      abort();
    ft_report rep;
    if (ft_cli_advice_report(&rep, &a, 0, true) == FT_OK) ft_report_free(&rep);
    fclose(null);
  } else if (!err[0] || strchr(err, '\n')) {
    abort();
  }
  const char **names = (const char **)a.paths; /* take's: freed after a */
  ft_cli_advice_free(&a);
  free(names);
  ft_advise_partial_free(&p);
  return 0;
}
