/* The flagtrace command: dispatches subcommands (record and stats arrive later). */
#include <stdio.h>
#include <string.h>

#include "flagtrace/flagtrace.h"

#ifndef FT_TRACER_NAME
#define FT_TRACER_NAME "unknown"
#endif
#ifndef FT_ACCELERATOR_NAME
#define FT_ACCELERATOR_NAME "unknown"
#endif

static const char usage[] =
    "usage: flagtrace [--help] [--version] <command> [args]\n"
    "\n"
    "flagtrace records GPU activity (kernels, copies, memsets, runtime calls) as a\n"
    "Chrome/Perfetto trace, the same way on every supported accelerator.\n"
    "\n"
    "options:\n"
    "  -h, --help     show this help and exit\n"
    "  -V, --version  show the version, the accelerator and tracer of this build\n"
    "\n"
    "commands:\n"
    "  (none yet: 'record' and 'stats' are being built; embed the C API from\n"
    "   <flagtrace/flagtrace.h> meanwhile, see examples/embed.c)\n"
    "\n"
    "environment:\n"
    "  FLAGOS_TRACE=1           diagnostics on stderr (1/true/on/yes, 0/false/off/no)\n"
    "  FLAGOS_TRACER_LIBRARY=P  load the vendor activity library from path P\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
    printf("flagtrace %s (accelerator %s, tracer %s)\n", ft_version(), FT_ACCELERATOR_NAME,
           FT_TRACER_NAME);
    return 0;
  }
  if (cmd[0] == '-')
    fprintf(stderr, "flagtrace: unknown option '%s' (see flagtrace --help)\n", cmd);
  else
    fprintf(stderr, "flagtrace: unknown command '%s' (see flagtrace --help)\n", cmd);
  return 2;
}
