/* Option parsing shared by the subcommands: -x VALUE, --long VALUE, --long=VALUE. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "out_file.h" /* ft__visible */

const char ft_cli_off[] = "off", ft_cli_on[] = "on";

/* msg as one visible line on stderr: a file name or a value with a newline or an
 * ESC in it neither breaks the line nor drives the terminal. */
static void put_line(const char *cmd, const char *msg, const char *tail) {
  char shown[2048];
  ft__visible(shown, sizeof shown, msg);
  fprintf(stderr, "flagtrace%s%s: %s%s\n", cmd ? " " : "", cmd ? cmd : "", shown, tail);
}

void ft_cli_error(const char *cmd, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  put_line(cmd, msg, "");
}

int ft_cli_output_refused(const char *cmd, bool exists, const char *err) {
  if (exists) return ft_cli_usage_error(cmd, "%s", err); /* the remedy is an option */
  ft_cli_error(cmd, "%s", err);
  return FT_CLI_USAGE;
}

int ft_cli_usage_error(const char *cmd, const char *fmt, ...) {
  char msg[1024], tail[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(tail, sizeof tail, " (see flagtrace %s --help)", cmd);
  put_line(cmd, msg, tail);
  return FT_CLI_USAGE;
}

bool ft_cli_value_forgotten(const char *cmd, char **argv, int optind_now, const char *optarg) {
  if (strcmp(optarg, "--") || optind_now < 2 || optarg != argv[optind_now - 1]) return false;
  ft_cli_usage_error(cmd, "option '%s' needs a value before '--'", argv[optind_now - 2]);
  return true;
}

/* The option a names, and its value if given as --long=VALUE. */
static const ft_cli_option *match(const char *a, const ft_cli_option *opts, const char **inline_value) {
  *inline_value = NULL;
  for (const ft_cli_option *o = opts; o->long_name; o++) {
    if (a[1] != '-' && a[1] == o->short_name && !a[2]) return o;
    if (a[1] != '-') continue;
    size_t n = strlen(o->long_name);
    if (strncmp(a + 2, o->long_name, n)) continue;
    if (!a[2 + n]) return o;
    if (a[2 + n] == '=') {
      *inline_value = a + 3 + n;
      return o;
    }
  }
  return NULL;
}

/* Takes the option at argv[*i] (and its value). 0, FT_CLI_HELP or FT_CLI_ERROR. */
static int take_option(const char *cmd, int argc, char **argv, int *i, const ft_cli_option *opts, const char *usage) {
  const char *a = argv[*i];
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
    fputs(usage, stdout);
    return FT_CLI_HELP;
  }
  const char *val;
  const ft_cli_option *o = match(a, opts, &val);
  if (!o) return ft_cli_usage_error(cmd, "unknown option '%s'", a), FT_CLI_ERROR;
  if (*o->value == ft_cli_off || *o->value == ft_cli_on) { /* a switch */
    if (val) return ft_cli_usage_error(cmd, "option '--%s' takes no value", o->long_name), FT_CLI_ERROR;
    *o->value = ft_cli_on;
    return 0;
  }
  if (!val) {
    if (*i + 1 >= argc) return ft_cli_usage_error(cmd, "option '%s' needs a value", a), FT_CLI_ERROR;
    /* "-o -- prog": the value was forgotten; "--" ends the options, never a value (--output=-- is one) */
    if (!strcmp(argv[*i + 1], "--"))
      return ft_cli_usage_error(cmd, "option '%s' needs a value before '--'", a), FT_CLI_ERROR;
    val = argv[++*i];
  }
  *o->value = val;
  return 0;
}

int ft_cli_parse(const char *cmd, int argc, char **argv, const ft_cli_option *opts, const char *usage) {
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) return i + 1;
    if (a[0] != '-' || !a[1]) break;
    int r = take_option(cmd, argc, argv, &i, opts, usage);
    if (r) return r;
  }
  return i;
}

int ft_cli_parse_anywhere(const char *cmd, int argc, char **argv, const ft_cli_option *opts, const char *usage) {
  char **operands = malloc((size_t)argc * sizeof *operands);
  if (!operands) return ft_cli_usage_error(cmd, "out of memory"), FT_CLI_ERROR;
  int n = 0, w = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      while (++i < argc) operands[n++] = argv[i];
      break;
    }
    if (a[0] != '-' || !a[1]) { /* an operand ("-" too) */
      operands[n++] = argv[i];
      continue;
    }
    int first = i, r = take_option(cmd, argc, argv, &i, opts, usage);
    if (r) {
      free(operands);
      return r;
    }
    while (first <= i) argv[w++] = argv[first++]; /* options first, in order */
  }
  memcpy(argv + w, operands, (size_t)n * sizeof *operands);
  free(operands);
  return w;
}

size_t ft_cli_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), row[32];
  if (la >= 32 || lb >= 32) return 99;
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      if (up + 1 < best) best = up + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[lb];
}

/* bad's distance to name: a prefix of 3+ bytes counts as 1 edit ("kern" for "kernels") */
static size_t near_distance(const char *bad, const char *name) {
  size_t lb = strlen(bad);
  return lb >= 3 && !strncmp(name, bad, lb) ? 1 : ft_cli_distance(bad, name);
}

bool ft_cli_nearest(const char *bad, const char *const *names, size_t n, char *out, size_t len) {
  size_t lb = strlen(bad), limit = lb < 3 ? 1 : lb < 5 ? 2 : 3; /* fewer edits for a short name */
  size_t best = limit, used = 0, k = 0;
  for (size_t i = 0; i < n; i++)
    if (near_distance(bad, names[i]) < best) best = near_distance(bad, names[i]);
  out[0] = 0;
  for (size_t i = 0; best < limit && i < n && k < 3; i++) {
    if (near_distance(bad, names[i]) != best) continue;
    int w = snprintf(out + used, len - used, "%s'%s'", k ? " or " : "", names[i]);
    if (w < 0 || (size_t)w >= len - used) break;
    used += (size_t)w, k++;
  }
  return k > 0;
}

int ft_cli_width(const char *cmd, const char *arg, long *width) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (!*arg || *end || errno || *arg == '-' || v < 20 || v > 100000)
    return ft_cli_usage_error(cmd, "--width takes a width from 20, not '%s'", arg);
  *width = (long)v;
  return 0;
}
