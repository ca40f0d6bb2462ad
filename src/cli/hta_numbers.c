/* `flagtrace _hta TRACE`: the numbers advise shares with HTA, as JSON, for tests/gpu/hta_advise_compare.py (not listed
 * in --help). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_internal.h"
#include "cli.h"

static const char usage[] =
    "usage: flagtrace _hta [--step NAME] TRACE\n"
    "HTA's idle-time breakdown per stream (whole trace and per step) and its critical path\n"
    "length per step and over the whole trace, as JSON (times in ns). A testing aid for\n"
    "tests/gpu/hta_advise_compare.py; docs/advise.md \"Against HTA\".\n"
    "  --step NAME  the steps are the ranges named NAME (default: ProfilerStep#N)\n";

static void print_idle(const ft__hta_idle *r, size_t n) {
  printf("[");
  for (size_t i = 0; i < n; i++)
    printf("%s{\"stream\": %" PRId64 ", \"host_wait_ns\": %" PRId64 ", \"kernel_wait_ns\": %" PRId64
           ", \"other_ns\": %" PRId64 ", \"n_host_wait\": %" PRIu64 ", \"n_kernel_wait\": %" PRIu64
           ", \"n_other\": %" PRIu64 "}",
           i ? ", " : "", r[i].stream, r[i].host_ns, r[i].kernel_ns, r[i].other_ns, r[i].n_host, r[i].n_kernel,
           r[i].n_other);
  printf("]");
}

/* (cli.h) */
int ft_cli_hta_numbers(int argc, char **argv) {
  const char *step = NULL;
  ft_cli_option opts[] = {{0, "step", &step}, {0}};
  int first = ft_cli_parse("_hta", argc, argv, opts, usage);
  if (first == FT_CLI_HELP) return 0;
  if (first == FT_CLI_ERROR) return FT_CLI_USAGE;
  if (argc - first != 1) return ft_cli_usage_error("_hta", "one trace wanted");
  ft_model m;
  ft_model_opts o = {.step = step};
  char err[256];
  if (ft_model_read(&m, argv[first], &o, NULL, err, sizeof err) != FT_OK) {
    ft_cli_error("_hta", "%s: %s", argv[first], err);
    return 1;
  }
  ft__hta_idle *r = NULL;
  size_t n = 0;
  uint64_t *cp = malloc((m.n_steps + 1) * sizeof *cp);
  uint64_t(*idle)[3] = malloc((m.n_steps + 1) * sizeof *idle);
  if (!cp || !idle || !ft__critical_paths(&m, cp) || !ft__hta_idle_steps(&m, idle) ||
      !ft__hta_idle_streams(&m, SIZE_MAX, &r, &n))
    goto oom;
  printf("{\"rank\": %" PRId64 ", \"idle\": ", m.rank);
  print_idle(r, n);
  free(r);
  printf(", \"critical_path_ns\": %" PRIu64 ", \"steps\": [", ft__critical_path_ns(&m, SIZE_MAX));
  for (size_t s = 0; s < m.n_steps; s++) {
    if (!ft__hta_idle_streams(&m, s, &r, &n)) goto oom;
    printf("%s{\"number\": %" PRId64 ", \"start\": %" PRId64 ", \"end\": %" PRId64 ", \"critical_path_ns\": %" PRIu64
           ", \"hta_host_wait_ns\": %" PRIu64 ", \"hta_kernel_wait_ns\": %" PRIu64 ", \"hta_other_ns\": %" PRIu64
           ", \"idle\": ",
           s ? ", " : "", m.steps[s].number, m.steps[s].start, m.steps[s].end, cp[s], idle[s][0], idle[s][1],
           idle[s][2]);
    print_idle(r, n);
    free(r);
    printf("}");
  }
  printf("]}\n");
  free(cp);
  free(idle);
  ft_model_free(&m);
  return 0;
oom:
  free(cp);
  free(idle);
  ft_model_free(&m);
  ft_cli_error("_hta", "out of memory");
  return 1;
}
