/* The flagtrace command's subcommands: one file each, one entry point each. */
#ifndef FLAGTRACE_CLI_H
#define FLAGTRACE_CLI_H

#include <stdbool.h>
#include <stddef.h>

/* Each returns the process exit status; argv[0] is the subcommand's name. */
int ft_cli_record(int argc, char **argv);
int ft_cli_capture(int argc, char **argv);
int ft_cli_stats(int argc, char **argv);
int ft_cli_report(int argc, char **argv);
int ft_cli_diff(int argc, char **argv);
int ft_cli_advise(int argc, char **argv);
int ft_cli_columns(int argc, char **argv);     /* not listed in --help: get_trace's feed */
int ft_cli_hta_numbers(int argc, char **argv); /* `_hta`: HTA's shared numbers as JSON (tests) */

/* diff --by-step (diff_step.c), on one trace per side: fmt 0 table, 1 csv, 2 json;
 * step: --step's value or NULL. Returns the exit status. */
int ft__cli_diff_by_step(const char *const path[2], int fmt, const char *output, bool overwrite, const char *step,
                         size_t limit, long width); /* width: --width's, -1 for none */

/* Exit status for usage errors and unreadable input. */
#define FT_CLI_USAGE 2

/* One option taking a value: -s VALUE, --long VALUE or --long=VALUE. */
typedef struct ft_cli_option {
  char short_name; /* 0 for none */
  const char *long_name;
  const char **value; /* receives the value */
} ft_cli_option;

enum { FT_CLI_HELP = -1, FT_CLI_ERROR = -2 };

/* A switch (an option taking no value) is an option whose value starts as
 * ft_cli_off; the parser sets it to ft_cli_on. */
extern const char ft_cli_off[], ft_cli_on[];

/* Parses argv[1..] up to "--" or the first operand against opts (ended by a zero
 * entry). Returns the index of the first operand; FT_CLI_HELP after printing usage
 * (exit 0); FT_CLI_ERROR after printing a one-line error (exit FT_CLI_USAGE). */
int ft_cli_parse(const char *cmd, int argc, char **argv, const ft_cli_option *opts, const char *usage);

/* The same, getopt_long's way: options anywhere among the operands, until "--".
 * Reorders argv (options first) and returns the index of the first operand. */
int ft_cli_parse_anywhere(const char *cmd, int argc, char **argv, const ft_cli_option *opts, const char *usage);

/* getopt_long took "--" as a value given as its own word ("-o -- x"): one line, true.
 * "--" ends the options; --output=-- still names a file "--". */
bool ft_cli_value_forgotten(const char *cmd, char **argv, int optind_now, const char *optarg);

/* Prints "flagtrace CMD: <message> (see flagtrace CMD --help)"; returns FT_CLI_USAGE.
 * Like every message of the command, one line: control characters are escaped. */
int ft_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An output -o names was refused (err from ft_outputs_check or _open): one line,
 * with the --help pointer when the refusal was an existing file. FT_CLI_USAGE. */
int ft_cli_output_refused(const char *cmd, bool exists, const char *err);
/* Edit distance of two short names (99 when either is 32 bytes or more). */
size_t ft_cli_distance(const char *a, const char *b);
/* The names nearest to bad (at most 2 edits away, 1 for a name under 5 bytes; a
 * prefix of 3+ bytes counts as 1), up to three, into out as "'a'" or "'a' or 'b'";
 * false when none is near: for "did you mean". */
bool ft_cli_nearest(const char *bad, const char *const *names, size_t n, char *out, size_t len);
/* --width's value (stats, diff, advise): a width from 20 to 100000 into *width and 0; else
 * the one-line usage error's status (FT_CLI_USAGE). */
int ft_cli_width(const char *cmd, const char *arg, long *width);
/* Prints "flagtrace CMD: <message>" ("flagtrace: " when cmd is NULL), one line,
 * control characters escaped (a file name may hold a newline or an ESC). */
void ft_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
