/* The flagtrace command: dispatches to one file per subcommand. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "deflate.h" /* which gzip backend --version reports */
#include "flagtrace/flagtrace.h"
#include "ft_git_commit.h" /* FT_GIT_COMMIT: "" outside a git checkout */

#ifndef FT_TRACER_NAME
#define FT_TRACER_NAME "unknown"
#endif
#ifndef FT_ACCELERATOR_NAME
#define FT_ACCELERATOR_NAME "unknown"
#endif

static const char usage[] =
    "usage: flagtrace [--help] [--version] <command> [args]\n"
    "\n"
    "flagtrace records GPU activity (kernels, copies, memsets, runtime and driver\n"
    "calls, NVTX ranges) as a Chrome/Perfetto trace, the same way on every supported\n"
    "accelerator, and summarizes traces.\n"
    "\n"
    "commands:\n"
    "  record [options] -- CMD [ARGS...]   run CMD and write its trace (no code change)\n"
    "  capture [options]                   capture running `record --on-demand` processes now\n"
    "  stats [options] FILE...             summarize traces (flagtrace's or torch.profiler's)\n"
    "  report [options] FILE...            write one HTML report of traces (-o report.html)\n"
    "  diff [options] A B                  compare two runs op by op and kernel by kernel\n"
    "  advise [options] FILE...            why each step is slow: idle by cause, findings by cost\n"
    "\n"
    "  flagtrace <command> --help shows the command's options.\n"
    "\n"
    "options:\n"
    "  -h, --help     show this help and exit\n"
    "  -V, --version  show the version, the accelerator and tracer of this build\n"
    "\n"
    "environment:\n"
    "  FLAGOS_TRACE=1           diagnostics on stderr (1/true/on/yes, 0/false/off/no)\n"
    "  FLAGOS_TRACER_LIBRARY=P  load the vendor activity library from path P\n"
    "\n"
    "example:\n"
    "  flagtrace record -o train-%p.json.gz -- python train.py\n"
    "  flagtrace stats train-*.json.gz\n"
    "  flagtrace report -o report.html train-*.json.gz\n"
    "  flagtrace advise train-*.json.gz\n";

/* Every command's output is checked: a full disk or a closed stdout is one line
 * and a non-zero status, never a silent exit 0 with the output lost. */
static int finish(int status) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return status;
  fprintf(stderr, "flagtrace: cannot write the output: %s\n", errno ? strerror(errno) : "write error");
  return status ? status : 1;
}

static int run(int argc, char **argv);

/* The command the usage's "commands:" list holds nearest to cmd (a prefix of it, or
 * at most 2 edits away), into out; false when none is near. Read from the usage text,
 * so a command added there is suggested too. */
static bool nearest_command(const char *cmd, char *out, size_t len) {
  const char *p = strstr(usage, "\ncommands:\n");
  size_t best = 3;
  bool found = false;
  for (p = p ? strchr(p + 1, '\n') : NULL; p && !strncmp(p, "\n  ", 3) && p[3] != ' '; p = strchr(p + 1, '\n')) {
    char name[32];
    size_t n = strcspn(p + 3, " \n");
    if (n >= sizeof name) continue;
    memcpy(name, p + 3, n);
    name[n] = 0;
    size_t d = strncmp(name, cmd, strlen(cmd)) ? ft_cli_distance(cmd, name) : 1;
    if (d < best) {
      best = d;
      snprintf(out, len, "%s", name);
      found = true;
    }
  }
  return found;
}

int main(int argc, char **argv) { return finish(run(argc, argv)); }

static int run(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return FT_CLI_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
    /* the gzip backend too: whether ISA-L loaded decides the write and read speed of .json.gz (5x) */
    printf("flagtrace %s (accelerator %s, tracer %s, gzip %s%s%s)\n", ft_version(), FT_ACCELERATOR_NAME, FT_TRACER_NAME,
           ft__deflate_default()->name, FT_GIT_COMMIT[0] ? ", commit " : "", FT_GIT_COMMIT);
    return 0;
  }
  if (!strcmp(cmd, "record")) return ft_cli_record(argc - 1, argv + 1);
  if (!strcmp(cmd, "capture")) return ft_cli_capture(argc - 1, argv + 1);
  if (!strcmp(cmd, "stats")) return ft_cli_stats(argc - 1, argv + 1);
  if (!strcmp(cmd, "report")) return ft_cli_report(argc - 1, argv + 1);
  if (!strcmp(cmd, "diff")) return ft_cli_diff(argc - 1, argv + 1);
  if (!strcmp(cmd, "advise")) return ft_cli_advise(argc - 1, argv + 1);
  if (!strcmp(cmd, "columns")) return ft_cli_columns(argc - 1, argv + 1);  /* unlisted: the Python API's feed */
  if (!strcmp(cmd, "_hta")) return ft_cli_hta_numbers(argc - 1, argv + 1); /* a testing aid, not in --help */
  if (cmd[0] == '-') ft_cli_error(NULL, "unknown option '%s' (see flagtrace --help)", cmd);
  else {
    char near[32];
    if (cmd[0] && nearest_command(cmd, near, sizeof near))
      ft_cli_error(NULL, "unknown command '%s'; did you mean '%s'? (see flagtrace --help)", cmd, near);
    else ft_cli_error(NULL, "unknown command '%s' (see flagtrace --help)", cmd);
  }
  return FT_CLI_USAGE;
}
