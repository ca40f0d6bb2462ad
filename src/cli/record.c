/* flagtrace record: run any CUDA program under the injection library, no code change. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
    "usage: flagtrace record [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with flagtrace's injection library (CUDA_INJECTION64_PATH and\n"
    "NVTX_INJECTION64_PATH): every process it starts that initializes CUDA writes its\n"
    "own trace when it exits, or when SIGINT/SIGTERM ends it. The program is not changed.\n"
    "COMMAND's stdin, stdout and stderr pass through; each written trace is reported\n"
    "on stderr with its event and dropped-record counts.\n"
    "\n"
    "options:\n"
    "  -o, --output PATTERN   trace file (default flagtrace-%p.json.gz); %p = pid,\n"
    "                         %h = host, %r = RANK (else LOCAL_RANK, else norank),\n"
    "                         %% = %; a name ending in .gz is gzip-compressed\n"
    "  -t, --trace LIST       what to record, a comma-separated subset of\n"
    "                         kernel,memcpy,memset,runtime,driver,nvtx (default: all)\n"
    "      --capture-range=cudaProfilerApi\n"
    "                         write only what happens between the program's first\n"
    "                         cudaProfilerStart and cudaProfilerStop (device tracing\n"
    "                         is enabled at that start, so waiting for it is cheap)\n"
    "  -h, --help             show this help\n"
    "\n"
    "exit status: COMMAND's own; 128+N if it died of signal N; 127 if it could not be\n"
    "run; 2 for a usage error.\n"
    "\n"
    "example: flagtrace record -o run-%p.json.gz -- python train.py\n";

static bool valid_trace_list(const char *list) {
  static const char *const ok[] = {"kernel", "memcpy", "memset", "runtime", "driver", "nvtx"};
  char buf[256];
  if (!*list || strlen(list) >= sizeof buf) return false;
  snprintf(buf, sizeof buf, "%s", list);
  char *save = NULL;
  int n = 0;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), n++) {
    bool found = false;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) found |= !strcmp(tok, ok[i]);
    if (!found) return false;
  }
  return n > 0 && list[strlen(list) - 1] != ',';
}

#ifndef FT_INJECT_RELDIR
#define FT_INJECT_RELDIR "../lib/flagtrace"
#endif

/* The injection library: FLAGTRACE_INJECT_LIBRARY, else beside this executable (a
 * build tree, the wheel's flagtrace/bin and flagtrace/lib), else where
 * `cmake --install` puts it: ${libdir}/flagtrace, FT_INJECT_RELDIR from bindir. */
static bool find_inject(char *out, size_t len) {
  const char *env = getenv("FLAGTRACE_INJECT_LIBRARY");
  if (env && *env) {
    snprintf(out, len, "%s", env);
    return access(out, R_OK) == 0;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  char *dir = dirname(exe);
  static const char *const rel[] = {"libflagtrace_inject.so", "../lib/libflagtrace_inject.so",
                                    FT_INJECT_RELDIR "/libflagtrace_inject.so"};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(out, len, "%s/%s", dir, rel[i]);
    if (access(out, R_OK) == 0) return true;
  }
  return false;
}

/* The output pattern made absolute (the program may change directory), and its
 * directory checked now rather than after a long run. */
static int resolve_output(const char *pattern, char *out, size_t len) {
  if (!*pattern) return ft_cli_usage_error("record", "empty output name");
  if (pattern[0] == '/') {
    snprintf(out, len, "%s", pattern);
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return ft_cli_usage_error("record", "cannot read the current directory: %s", strerror(errno));
    snprintf(out, len, "%s/%s", cwd, pattern);
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", out);
  char *slash = strrchr(dir, '/');
  if (slash == dir) slash[1] = '\0';
  else *slash = '\0';
  if (strchr(dir, '%')) return 0; /* a per-process directory: checked by each process */
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "flagtrace record: output directory '%s' does not exist\n", dir);
    return FT_CLI_USAGE;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "flagtrace record: output directory '%s' is not writable: %s\n", dir, strerror(errno));
    return FT_CLI_USAGE;
  }
  return 0;
}

static volatile sig_atomic_t child_pid;
static void forward_signal(int sig) {
  if (child_pid > 0) kill((pid_t)child_pid, sig);
}

int ft_cli_record(int argc, char **argv) {
  const char *output = "flagtrace-%p.json.gz", *trace = NULL, *capture = NULL;
  const ft_cli_option opts[] = {{'o', "output", &output}, {'t', "trace", &trace}, {0, "capture-range", &capture}, {0}};
  int i = ft_cli_parse("record", argc, argv, opts, usage);
  if (i == FT_CLI_HELP) return 0;
  if (i == FT_CLI_ERROR) return FT_CLI_USAGE;
  if (i >= argc) return ft_cli_usage_error("record", "no command to run");
  if (trace && !valid_trace_list(trace))
    return ft_cli_usage_error("record", "--trace takes a comma-separated subset of kernel,memcpy,memset,runtime,"
                                        "driver,nvtx, not '%s'", trace);
  if (capture && strcmp(capture, "cudaProfilerApi") && strcmp(capture, "none"))
    return ft_cli_usage_error("record", "--capture-range takes cudaProfilerApi or none, not '%s'", capture);
  char out[PATH_MAX + 256];
  int rc = resolve_output(output, out, sizeof out);
  if (rc) return rc;
  char inject[PATH_MAX];
#ifdef FT_NO_INJECTION
  (void)find_inject;
  fprintf(stderr, "flagtrace record: record injects into CUDA programs, and this flagtrace was built for "
                  "FLAGOS_ACCELERATOR=%s; use the C API or the PyTorch integration there\n", FT_NO_INJECTION);
  return FT_CLI_USAGE;
#endif
  if (!find_inject(inject, sizeof inject)) {
    fprintf(stderr, "flagtrace record: the injection library libflagtrace_inject.so was not found beside "
                    "this executable (set FLAGTRACE_INJECT_LIBRARY)\n");
    return FT_CLI_USAGE;
  }
  char report[] = "/tmp/flagtrace-record-XXXXXX";
  int rfd = mkstemp(report);
  if (rfd >= 0) close(rfd);

  const char *prev = getenv("CUDA_INJECTION64_PATH");
  if (prev && *prev && strcmp(prev, inject))
    fprintf(stderr, "flagtrace record: replacing CUDA_INJECTION64_PATH=%s\n", prev);
  bool nvtx = !trace || strstr(trace, "nvtx");
  setenv("CUDA_INJECTION64_PATH", inject, 1);
  if (nvtx) setenv("NVTX_INJECTION64_PATH", inject, 1);
  setenv("FLAGTRACE_OUTPUT", out, 1);
  if (trace) setenv("FLAGTRACE_TRACE", trace, 1);
  if (capture) setenv("FLAGTRACE_CAPTURE_RANGE", capture, 1);
  if (rfd >= 0) setenv("FLAGTRACE_REPORT_FILE", report, 1);

  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "flagtrace record: fork: %s\n", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    execvp(argv[i], argv + i);
    fprintf(stderr, "flagtrace record: cannot run '%s': %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  /* Ctrl-C reaches the whole process group: the program handles it, we outlive it
   * to report. A SIGTERM sent to us alone is passed on. */
  struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward_signal};
  sigaction(SIGINT, &ign, NULL);
  sigaction(SIGQUIT, &ign, NULL);
  sigaction(SIGTERM, &fwd, NULL);
  sigaction(SIGHUP, &fwd, NULL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  if (rfd >= 0) {
    struct stat st;
    if (stat(report, &st) == 0 && st.st_size == 0 && rc != 127) {
      if (WIFSIGNALED(status))
        fprintf(stderr, "flagtrace record: '%s' died of signal %d (%s) and wrote no trace (a crash leaves none, "
                        "never a partial one)\n", argv[i], WTERMSIG(status), strsignal(WTERMSIG(status)));
      else
        fprintf(stderr, "flagtrace record: '%s' wrote no trace (no process of it initialized CUDA)\n", argv[i]);
    }
    unlink(report);
  }
  return rc;
}
