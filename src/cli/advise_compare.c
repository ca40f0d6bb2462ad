/* `flagtrace diff A.advice.json B.advice.json`: two advise results compared, the findings that appeared, grew, shrank
 * or went away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "advise_cli.h"
#include "advise_partial.h"
#include "cli.h"
#include "stats_out.h"

#define SAME_WITHIN 0.05 /* a cost within 5 % (or 1 us) of A's is "same" (docs/advise.md "## Comparing") */

/* Only a regular file is looked into: a pipe or FIFO (`<(zcat a.json)`) read here would
 * lose its first bytes to diff's own read. */
static bool is_advice(const char *path, ft_advise_partial *p, char *err, size_t errlen) {
  struct stat sb;
  snprintf(err, errlen, "%s: not a regular file, not advice", path);
  if (stat(path, &sb) || !S_ISREG(sb.st_mode)) return false;
  return ft_advise_partial_read(path, p, err, errlen) == FT_OK;
}

/* ns as us with the ns digits, sign "" / "+" / "-" before it */
static const char *us_text(char buf[32], const char *sign, uint64_t ns) {
  snprintf(buf, 32, "%s%llu.%03llu", sign, (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
  return buf;
}
static const char *delta_text(char buf[32], uint64_t a, uint64_t b, bool plus) {
  return us_text(buf, b < a ? "-" : plus ? "+" : "", b < a ? a - b : b - a);
}

static size_t n_findings(const ft_advise_partial *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) n += p->parts[i].advice.n_findings;
  return n;
}

static void write_table(FILE *f, const char *const side[2], const ft_advise_partial p[2], const ft_advise_delta *d,
                        size_t n) {
  fprintf(f, "advice A: %s (%zu findings)\nadvice B: %s (%zu findings)\n\n", side[0], n_findings(&p[0]), side[1],
          n_findings(&p[1]));
  if (!n) {
    fputs("no findings on either side\n", f);
    return;
  }
  fprintf(f, "%-7s %-13s %14s %14s %14s %8s %8s  %s\n", "change", "rule", "A us/step", "B us/step", "delta", "A count",
          "B count", "where");
  for (size_t i = 0; i < n; i++) {
    char a[32], b[32], dl[32];
    bool in_a = d[i].change != FT_ADV_NEW, in_b = d[i].change != FT_ADV_GONE;
    fprintf(f, "%-7s %-13s %14s %14s %14s %8llu %8llu  %s\n", ft_advise_change_name(d[i].change), d[i].rule,
            in_a ? us_text(a, "", d[i].cost_a) : "-", in_b ? us_text(b, "", d[i].cost_b) : "-",
            delta_text(dl, d[i].cost_a, d[i].cost_b, true), (unsigned long long)d[i].count_a,
            (unsigned long long)d[i].count_b, d[i].where);
  }
}

static void write_json(FILE *f, const char *const side[2], const ft_advise_delta *d, size_t n) {
  fputs("{\n  \"schema\": 1,\n  \"compare\": \"advice\",\n  \"a\": ", f);
  ft_json_string(f, side[0]);
  fputs(",\n  \"b\": ", f);
  ft_json_string(f, side[1]);
  fputs(",\n  \"changes\": [", f);
  for (size_t i = 0; i < n; i++) {
    char a[32], b[32], dl[32];
    fprintf(f, "%s\n    {\"change\": \"%s\", \"rule\": \"%s\", \"where\": ", i ? "," : "",
            ft_advise_change_name(d[i].change), d[i].rule);
    ft_json_string(f, d[i].where);
    fprintf(f, ", \"cost_a_us\": %s, \"cost_b_us\": %s, \"delta_us\": %s", us_text(a, "", d[i].cost_a),
            us_text(b, "", d[i].cost_b), delta_text(dl, d[i].cost_a, d[i].cost_b, false));
    fprintf(f, ", \"count_a\": %llu, \"count_b\": %llu, \"share_a\": %.6f, \"share_b\": %.6f}",
            (unsigned long long)d[i].count_a, (unsigned long long)d[i].count_b, d[i].share_a, d[i].share_b);
  }
  fprintf(f, "%s]\n}\n", n ? "\n  " : "");
}

int ft_cli_diff_advice(int argc, char **argv, int *rc) {
  const char *side[2] = {NULL, NULL}, *output = NULL, *format = "table";
  const char *pos[2];
  size_t npos = 0;
  bool overwrite = false;
  for (int i = 1; i < argc; i++) { /* diff's options that make sense here; any other: diff's own parse */
    const char *a = argv[i], *eq = strchr(a, '=');
    const char **val = NULL;
    if (!strcmp(a, "--")) {
      for (i++; i < argc; i++)
        if (npos < 2) pos[npos++] = argv[i];
        else return 0;
      break;
    }
    if (!strcmp(a, "-f") || !strcmp(a, "--format") || !strncmp(a, "--format=", 9)) val = &format;
    else if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strncmp(a, "--output=", 9)) val = &output;
    else if (!strcmp(a, "--a") || !strncmp(a, "--a=", 4)) val = &side[0];
    else if (!strcmp(a, "--b") || !strncmp(a, "--b=", 4)) val = &side[1];
    else if (!strcmp(a, "--force")) {
      overwrite = true;
      continue;
    } else if ((a[0] != '-' || !a[1]) && npos < 2) { /* a file or "-"; an unknown option, a third file: not ours */
      pos[npos++] = a;
      continue;
    } else return 0;
    if (a[1] == '-' && eq) *val = eq + 1;
    else if (i + 1 < argc) *val = argv[++i];
    else return 0;
  }
  for (size_t k = 0; k < npos; k++) {
    if (side[0] && side[1]) return 0;
    side[side[0] ? 1 : 0] = pos[k];
  }
  if (!side[0] || !side[1]) return 0;
  ft_advise_partial p[2] = {{0}, {0}};
  char err[2][640];
  bool adv[2] = {is_advice(side[0], &p[0], err[0], sizeof err[0]), is_advice(side[1], &p[1], err[1], sizeof err[1])};
  if (!adv[0] && !adv[1]) return 0; /* two traces (or not files at all): diff's own work */
  if (!adv[0] || !adv[1]) {
    int k = adv[0] ? 1 : 0;
    ft_cli_error("diff", "%s is advise JSON, %s", side[1 - k], err[k]);
    *rc = FT_CLI_USAGE;
  } else if (strcmp(format, "table") && strcmp(format, "json")) {
    *rc = ft_cli_usage_error("diff", "two advise results: --format takes table or json, not '%s'", format);
  } else {
    ft_advise_delta *d = NULL;
    size_t n = 0;
    ft_outfile out;
    bool exists = false;
    const char *names[1] = {output && strcmp(output, "-") ? output : NULL};
    *rc = 0;
    if (ft_advise_compare(&p[0], &p[1], SAME_WITHIN, &d, &n)) {
      ft_cli_error("diff", "out of memory");
      *rc = 1;
    } else if (names[0] && ft_outputs_open(&out, names, 1, overwrite, &exists, err[0], sizeof err[0])) {
      *rc = ft_cli_output_refused("diff", exists, err[0]);
    } else {
      FILE *f = names[0] ? out.f : stdout;
      if (!strcmp(format, "json")) write_json(f, side, d, n);
      else write_table(f, side, p, d, n);
      if (names[0] && ft_outfile_commit(&out, 1, err[0], sizeof err[0])) {
        ft_cli_error("diff", "%s", err[0]);
        *rc = 1;
      }
    }
    free(d);
  }
  ft_advise_partial_free(&p[0]);
  ft_advise_partial_free(&p[1]);
  return 1;
}
