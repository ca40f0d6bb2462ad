/* The flagtrace command's subcommands: one file each, one entry point each. */
#ifndef FLAGTRACE_CLI_H
#define FLAGTRACE_CLI_H

/* Each returns the process exit status; argv[0] is the subcommand's name. */
int ft_cli_record(int argc, char **argv);
int ft_cli_stats(int argc, char **argv);

/* Exit status for usage errors and unreadable input. */
#define FT_CLI_USAGE 2

#endif
