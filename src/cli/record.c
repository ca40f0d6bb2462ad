/* flagtrace record: run any accelerator program under the injection library, no code change. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli.h"
#include "control.h"
#include "out_file.h"
#include "inject.h"
#include "rank.h"

#ifndef FT_ACCELERATOR_NAME
#define FT_ACCELERATOR_NAME "unknown"
#endif

/* %s: the injection default and the runtime libraries of this build */
static const char usage_fmt[] =
    "usage: flagtrace record [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with flagtrace's injection library: every process it starts that\n"
    "uses the accelerator writes its own trace when it exits, or when SIGINT/SIGTERM\n"
    "ends it. The program is not changed. COMMAND's stdin, stdout and stderr pass\n"
    "through; each written trace is reported on stderr with its event and\n"
    "dropped-record counts (events: calls, ranges and device work; stats counts\n"
    "every entry of the trace, flows and metadata too).\n"
    "\n"
    "options:\n"
    "  -o, --output PATTERN   trace file (default flagtrace-%%p.json.gz); %%p = pid,\n"
    "                         %%h = host, %%r = RANK (else LOCAL_RANK, else norank),\n"
    "                         %%%% = %%; a name ending in .gz is gzip-compressed;\n"
    "                         escapes belong in the file name, not the directory;\n"
    "                         written under a temporary name and renamed when\n"
    "                         complete (a replaced file's mode kept), a symlink\n"
    "                         followed, a device or FIFO (/dev/null) written through\n"
    "      --force-overwrite  replace an existing trace file (default: refuse)\n"
    "  -t, --trace LIST       what to record, a comma-separated subset of\n"
    "                         kernel,memcpy,memset,runtime,driver,nvtx,sync (default:\n"
    "                         all but sync; sync: the device's synchronization waits,\n"
    "                         torch-cuda's cuda_sync rows)\n"
    "      --memory=on|off    record device memory allocations, frees and pool\n"
    "                         reservations: [memory] instants and a Memory counter\n"
    "                         per device (default on, whatever --trace lists;\n"
    "                         FLAGOS_TRACE_MEMORY=0 in the environment turns it off)\n"
    "      --inject=HOW       cuda: the CUDA driver loads the library at cuInit\n"
    "                         (CUDA_INJECTION64_PATH; CUDA builds only);\n"
    "                         preload: LD_PRELOAD, armed when a process loads\n"
    "                         %s\n"
    "                         (default here: %s)\n"
    "      --capture-range=cudaProfilerApi\n"
    "                         write only what happens between the program's first\n"
    "                         cudaProfilerStart and cudaProfilerStop. Device tracing\n"
    "                         starts there; %s\n"
    "      --capture-range=none\n"
    "                         the whole run (the default)\n"
    "      --on-demand        record nothing until `flagtrace capture` asks: each\n"
    "                         process waits as under --capture-range (no activity\n"
    "                         API call), its control thread blocked on a private\n"
    "                         Unix socket, and writes one trace per capture; -o\n"
    "                         must then hold %%n, the capture number (default\n"
    "                         flagtrace-%%p-%%n.json.gz); see flagtrace capture --help\n"
    "  -h, --help             show this help\n"
    "\n"
    "A PyTorch process's own torch.profiler keeps working: its profiles get their\n"
    "device activity from this recording (flagtrace's kineto adaptor), and the trace\n"
    "written here still holds the whole run. If another client takes the vendor's\n"
    "activity API (JAX's profiler, a hand-written CUPTI tool), flagtrace steps aside\n"
    "so the program keeps running, and the line above says from when device activity\n"
    "is missing.\n"
    "\n"
    "Signals sent to record (INT, TERM, HUP, QUIT, USR1, USR2, PIPE) are passed on\n"
    "to COMMAND; if record itself is killed, COMMAND gets SIGTERM (PR_SET_PDEATHSIG).\n"
    "\n"
    "exit status: COMMAND's own; 128+N if it died of signal N; 127 if it could not be\n"
    "run; 2 for a usage error; 74 if COMMAND succeeded but a trace could not be\n"
    "written (its line above says why).\n"
    "\n"
    "example: flagtrace record -o run-%%p.json.gz -- python train.py\n";

static bool valid_trace_list(const char *list) {
  static const char *const ok[] = {"kernel", "memcpy", "memset", "runtime", "driver", "nvtx", "sync"};
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

/* The pattern's escapes are checked now, not when a process writes after a long
 * run: only %p %h %r %% anywhere, and only %% in the directory (a per-process
 * directory would not exist: nothing creates it). */
static int check_pattern(const char *pattern, bool numbered) {
  if (!*pattern) return ft_cli_usage_error("record", "empty output name");
  const char *slash = strrchr(pattern, '/');
  for (const char *p = pattern; *p; p++) {
    if (*p == '\n' || *p == '\r') return ft_cli_usage_error("record", "the output name may not contain a line break");
    if (*p != '%') continue;
    if (!p[1] || !strchr(numbered ? "phrn%" : "phr%", p[1]))
      return ft_cli_usage_error("record", "unknown escape '%%%.1s' in output name '%s' (valid: %%p %%h %%r%s %%%%)",
                                p[1] ? p + 1 : "", pattern, numbered ? " %n" : "");
    if (slash && p < slash && p[1] != '%')
      return ft_cli_usage_error("record", "'%%%c' in the output directory of '%s': escapes belong in the file name",
                                p[1], pattern);
    p++;
  }
  return 0;
}

/* The output pattern made absolute (the program may change directory), its
 * directory checked now rather than after a long run, and an existing file
 * refused unless force (nsys's convention). */
static int resolve_output(const char *pattern, bool force, bool numbered, char *out, size_t len) {
  int rc = check_pattern(pattern, numbered);
  if (rc) return rc;
  char abs[PATH_MAX + 256];
  if (pattern[0] == '/') {
    snprintf(abs, sizeof abs, "%s", pattern);
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
      return ft_cli_usage_error("record", "cannot read the current directory: %s", strerror(errno));
    snprintf(abs, sizeof abs, "%s/%s", cwd, pattern);
  }
  snprintf(out, len, "%s", abs);
  /* what a process will write, %p and %r aside: they differ per process */
  char path[PATH_MAX + 256];
  ft__inject_expand(abs, path, sizeof path);
  char *base = strrchr(path, '/') + 1;
  if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
    return ft_cli_usage_error("record", "output '%s' names a directory, not a file", pattern);
  /* The longest name a process can make of it (%p up to 7 digits, %r up to 10), with
   * the writer's temporary suffix (".tmp.PID.N"): a name the system refuses would
   * otherwise fail only after the run. */
  size_t grow = 0;
  for (const char *q = strrchr(pattern, '/') ? strrchr(pattern, '/') + 1 : pattern; *q; q++)
    if (q[0] == '%' && (q[1] == 'p' || q[1] == 'r' || q[1] == 'n')) grow += q[1] == 'p' ? 7 : 10, q++;
  size_t longest = strlen(base) + grow + FT__OFILE_TMP_SUFFIX_MAX;
  if (longest > NAME_MAX)
    return ft_cli_usage_error("record",
                              "output name '%s' can be %zu bytes long with the writer's temporary "
                              "suffix; a file name holds at most %d",
                              base, longest, NAME_MAX);
  if (strlen(path) + grow + FT__OFILE_TMP_SUFFIX_MAX + 1 > PATH_MAX)
    return ft_cli_usage_error("record", "output path '%s' is longer than the system's %d bytes", path, PATH_MAX);
  char dir[PATH_MAX + 256];
  snprintf(dir, sizeof dir, "%.*s", base - path > 1 ? (int)(base - path - 1) : 1, path);
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    ft_cli_error("record", "output directory '%s' does not exist", dir);
    return FT_CLI_USAGE;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    ft_cli_error("record", "output directory '%s' is not writable: %s", dir, strerror(errno));
    return FT_CLI_USAGE;
  }
  if (strstr(pattern, "%p") || strstr(pattern, "%r") || strstr(pattern, "%n")) return 0;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return ft_cli_usage_error("record", "output '%s' is a directory, not a file", path);
  /* the writer refuses a dangling link (it never replaces a link): say so before the run */
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && stat(path, &st) != 0)
    return ft_cli_usage_error("record", "output '%s' is a symbolic link to a missing file", path);
  /* the rest of what the writer would refuse (a socket, a read-only file), and an
   * existing regular file: a device or FIFO (/dev/null) is written through, not replaced */
  bool replaces;
  char why[PATH_MAX + 128];
  if (ft__ofile_check(path, "trace file ", &replaces, why, sizeof why)) {
    ft_cli_error("record", "%s", why);
    return FT_CLI_USAGE;
  }
  if (!force && replaces) return ft_cli_usage_error("record", "'%s' exists; --force-overwrite replaces it", path);
  return 0;
}

/* name in the directory of path (which has a '/') into out. */
static void beside(const char *path, const char *name, char *out, size_t len) {
  snprintf(out, len, "%.*s%s", (int)(strrchr(path, '/') + 1 - path), path, name);
}

/* Where execvp would find prog, or false. */
static bool find_program(const char *prog, char *out, size_t len) {
  if (strchr(prog, '/')) {
    snprintf(out, len, "%s", prog);
    return access(out, X_OK) == 0;
  }
  const char *path = getenv("PATH");
  if (!path) path = "/bin:/usr/bin";
  for (const char *p = path;; p = strchr(p, ':') + 1) {
    size_t n = strcspn(p, ":");
    snprintf(out, len, "%.*s%s%s", (int)n, n ? p : ".", n && p[n - 1] == '/' ? "" : "/", prog);
    struct stat st;
    if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) return true;
    if (!p[n]) return false;
  }
}

/* Why the loader will ignore LD_PRELOAD for prog, or NULL: a program without an
 * ELF interpreter (statically linked) has no loader; a setuid/setgid one that
 * changes our ids runs in secure mode, which drops LD_PRELOAD of a path. */
static const char *preload_ignored(const char *prog) {
  char path[PATH_MAX];
  struct stat st;
  if (!find_program(prog, path, sizeof path) || stat(path, &st) != 0) return NULL; /* exec reports it */
  if ((st.st_mode & S_ISUID) && st.st_uid != getuid()) return "is setuid";
  if ((st.st_mode & S_ISGID) && st.st_gid != getgid()) return "is setgid";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  Elf64_Ehdr eh;
  const char *why = NULL;
  if (read(fd, &eh, sizeof eh) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
      eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
    bool interp = false;
    for (unsigned i = 0; i < eh.e_phnum && !interp; i++) {
      Elf64_Phdr ph;
      if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph) break;
      interp = ph.p_type == PT_INTERP;
    }
    if (!interp) why = "is statically linked";
  }
  close(fd);
  return why;
}

/* Appends lib to LD_PRELOAD (after the user's: theirs come first). The preload library
 * needs only libc and intercepts no allocation, so ASan's check that its runtime comes
 * first (which would end a sanitized program at start) is turned off for it. False
 * when out of memory. */
static bool add_preload(const char *lib) {
  const char *prev = getenv("LD_PRELOAD");
  char *value = malloc((prev ? strlen(prev) : 0) + strlen(lib) + 2);
  if (!value) return false;
  sprintf(value, "%s%s%s", prev && *prev ? prev : "", prev && *prev ? ":" : "", lib);
  setenv("LD_PRELOAD", value, 1);
  free(value);
  const char *asan = getenv("ASAN_OPTIONS");
  if (!asan || !strstr(asan, "verify_asan_link_order")) {
    char *opts = malloc((asan ? strlen(asan) : 0) + 32);
    if (!opts) return false;
    sprintf(opts, "%s%sverify_asan_link_order=0", asan && *asan ? asan : "", asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    free(opts);
  }
  return true;
}

/* Waits for the program, passing on the signals in fwd that a process sends to
 * record. A terminal's (SI_KERNEL) already reached the program, which shares our
 * process group. Signals are taken synchronously (sigwaitinfo, everything in fwd
 * and SIGCHLD blocked since before fork): none is lost before the pid is known,
 * and nothing runs in a signal handler. Returns the program's wait status. */
static int wait_forwarding(pid_t pid, const sigset_t *fwd) {
  sigset_t set = *fwd;
  sigaddset(&set, SIGCHLD);
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return status;
    siginfo_t si;
    int sig = sigwaitinfo(&set, &si);
    if (sig <= 0 || sig == SIGCHLD || si.si_code == SI_KERNEL || si.si_pid == getpid()) continue;
    kill(pid, sig);
  }
}

/* record's exit status when the program succeeded but a trace was not written
 * (sysexits' EX_IOERR): distinct from any status a program's own success gives. */
enum { FT_CLI_TRACE_LOST = 74 };

/* The report file's lines (inject.c): "+ " a trace written, "- " one that was not. */
static void read_report(const char *path, size_t *written, size_t *failed) {
  FILE *f = fopen(path, "r");
  char line[8192];
  while (f && fgets(line, sizeof line, f)) {
    if (line[0] == '+') ++*written;
    else if (line[0] == '-') ++*failed;
  }
  if (f) fclose(f);
}

/* Why a process that died of sig wrote nothing. The injection library writes the
 * trace on INT, TERM, HUP, USR1, USR2, ALRM and PIPE when the program left them at
 * their default; a crash or SIGKILL leaves no time to. */
static const char *death_why(int sig) {
  switch (sig) {
  case SIGKILL: return "SIGKILL leaves no time to write one";
  case SIGSEGV:
  case SIGBUS:
  case SIGILL:
  case SIGFPE:
  case SIGABRT:
  case SIGTRAP:
  case SIGSYS:
  case SIGQUIT:
  case SIGXCPU:
  case SIGXFSZ: return "a crash leaves none, never a partial one";
  default: return "the signal ended it before it could write; a program's own handler that exits at once does that";
  }
}

/* The writer's temporary files (out_file.c: NAME.tmp.PID.N beside NAME) whose
 * process is gone: a process killed while writing leaves one. pattern is the absolute
 * output pattern; its escapes match anything. Only our own files are removed. */
static size_t remove_partial(const char *pattern) {
  const char *slash = strrchr(pattern, '/');
  char dir[PATH_MAX], glob[NAME_MAX + 64];
  snprintf(dir, sizeof dir, "%.*s", slash > pattern ? (int)(slash - pattern) : 1, pattern);
  size_t g = 0;
  for (const char *p = slash + 1; *p && g + 2 < sizeof glob; p++) {
    if (p[0] == '%' && p[1] == '%') glob[g++] = '%', p++;
    else if (p[0] == '%' && p[1]) glob[g++] = '*', p++;
    else glob[g++] = *p;
  }
  glob[g] = '\0';
  DIR *d = opendir(dir);
  size_t n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    const char *t = strstr(e->d_name, ".tmp.");
    char *end;
    long pid;
    while (t && strstr(t + 1, ".tmp.")) t = strstr(t + 1, ".tmp."); /* the last one */
    if (!t || (pid = strtol(t + 5, &end, 10)) <= 0 || *end != '.' || !end[1]) continue;
    char name[NAME_MAX + 1];
    snprintf(name, sizeof name, "%.*s", (int)(t - e->d_name), e->d_name);
    if (fnmatch(glob, name, 0) != 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
        unlinkat(dirfd(d), e->d_name, 0) == 0)
      n++;
  }
  if (d) closedir(d);
  return n;
}

int ft_cli_record(int argc, char **argv) {
  const char *output = NULL, *trace = NULL, *capture = NULL, *inject_how = NULL, *memory = NULL;
  const char *force_arg = ft_cli_off, *on_demand_arg = ft_cli_off;
  const ft_cli_option opts[] = {{'o', "output", &output},         {'t', "trace", &trace},
                                {0, "memory", &memory},           {0, "capture-range", &capture},
                                {0, "inject", &inject_how},       {0, "force-overwrite", &force_arg},
                                {0, "on-demand", &on_demand_arg}, {0}};
  bool cuda_build = !strcmp(FT_ACCELERATOR_NAME, "cuda");
  const ft__runtime_set *runtimes = ft__runtime_set_for(FT_ACCELERATOR_NAME);
  char libs[256] = "(no runtime library: this build has no accelerator)";
  if (runtimes) ft__runtime_list(runtimes, libs, sizeof libs);
  char usage[sizeof usage_fmt + 1024];
  snprintf(usage, sizeof usage, usage_fmt, libs,
           cuda_build ? "cuda, preload with --capture-range or --on-demand" : "preload",
           cuda_build ? "with preload, until then the program runs\n"
                        "                         as it would untraced (the libcuda it dlopens is\n"
                        "                         handed a shim that reports the range); with\n"
                        "                         --inject=cuda, CUPTI watches for it (launches cost\n"
                        "                         ~3 % more while it waits)"
                      : "until then only a callback waits for it");
  int i = ft_cli_parse("record", argc, argv, opts, usage);
  if (i == FT_CLI_HELP) return 0;
  if (i == FT_CLI_ERROR) return FT_CLI_USAGE;
  bool force = force_arg == ft_cli_on, on_demand = on_demand_arg == ft_cli_on;
  if (!runtimes) {
    fprintf(stderr,
            "flagtrace record: this flagtrace was built for FLAGOS_ACCELERATOR=%s, which has no device "
            "to record; build for an accelerator (see README)\n",
            FT_ACCELERATOR_NAME);
    return FT_CLI_USAGE;
  }
  if (i >= argc) return ft_cli_usage_error("record", "no command to run");
  if (trace && !valid_trace_list(trace))
    return ft_cli_usage_error("record",
                              "--trace takes a comma-separated subset of kernel,memcpy,memset,runtime,"
                              "driver,nvtx,sync, not '%s'",
                              trace);
  bool memory_on = !memory || !strcmp(memory, "on");
  if (memory && !memory_on && strcmp(memory, "off"))
    return ft_cli_usage_error("record", "--memory takes on or off, not '%s'", memory);
  if (capture && strcmp(capture, "cudaProfilerApi") && strcmp(capture, "none"))
    return ft_cli_usage_error("record", "--capture-range takes cudaProfilerApi or none, not '%s'", capture);
  /* a capture range waits for free only with the preload library's libcuda shim */
  bool range = capture && !strcmp(capture, "cudaProfilerApi");
  if (on_demand && range)
    return ft_cli_usage_error("record", "--on-demand and --capture-range each decide when to record: give one");
  if (!output) output = on_demand ? "flagtrace-%p-%n.json.gz" : "flagtrace-%p.json.gz";
  if (on_demand) {
    if (!strstr(output, "%n"))
      return ft_cli_usage_error("record", "with --on-demand the output name needs %%n (the capture number), not '%s'",
                                output);
  }
  /* on demand, the preload library loads the session without any activity API call */
  bool preload = !cuda_build || range || on_demand;
  if (inject_how) {
    if (cuda_build && (!strcmp(inject_how, "cuda") || !strcmp(inject_how, "preload")))
      preload = !strcmp(inject_how, "preload");
    else if (!cuda_build && !strcmp(inject_how, "preload")) preload = true;
    else if (cuda_build) return ft_cli_usage_error("record", "--inject takes cuda or preload, not '%s'", inject_how);
    else
      return ft_cli_usage_error("record",
                                "--inject takes preload (cuda needs a CUDA build; this one is for %s), "
                                "not '%s'",
                                FT_ACCELERATOR_NAME, inject_how);
  }
  char out[PATH_MAX + 256];
  int rc = resolve_output(output, force, on_demand, out, sizeof out);
  if (rc) return rc;
  char ctl_dir[PATH_MAX], ctl_why[PATH_MAX + 200];
  if (on_demand && !ft__ctl_dir(ctl_dir, sizeof ctl_dir, true, ctl_why, sizeof ctl_why)) {
    ft_cli_error("record", "%s", ctl_why);
    return FT_CLI_USAGE;
  }
  if (strstr(output, "%r")) { /* said once, here: every process would read it the same way */
    int r, w;
    char why[160];
    ft__env_rank(&r, &w, why, sizeof why);
    const char *text = ft__env_rank_text();
    if (why[0]) ft_cli_error("record", "%s; %%r reads '%s'", why, text ? text : "norank");
  }
  char inject[PATH_MAX];
  if (!find_inject(inject, sizeof inject)) {
    const char *env = getenv("FLAGTRACE_INJECT_LIBRARY");
    if (env && *env) /* the variable is what failed, not the search beside us */
      ft_cli_error("record", "FLAGTRACE_INJECT_LIBRARY=%s cannot be read: %s", env, strerror(errno));
    else
      ft_cli_error("record",
                   "the injection library libflagtrace_inject.so was not found beside "
                   "this executable (set FLAGTRACE_INJECT_LIBRARY)");
    return FT_CLI_USAGE;
  }
  /* the libraries beside the injection library are named absolutely (LD_PRELOAD, the guards) */
  char abs_inject[PATH_MAX];
  bool have_abs = realpath(inject, abs_inject) != NULL;
  const char *ignored = preload_ignored(argv[i]); /* the program's modes and ELF header, read once */
  char preload_lib[PATH_MAX + 32] = "";
  const char *untraceable = NULL;
  if (preload) {
    if (have_abs) snprintf(inject, sizeof inject, "%s", abs_inject);
    beside(inject, "libflagtrace_preload.so", preload_lib, sizeof preload_lib);
    untraceable = ignored;
    /* the capture range's default falls back to CUDA injection (CUPTI then watches) */
    bool fallback = cuda_build && !inject_how;
    if (fallback && (access(preload_lib, R_OK) != 0 || strpbrk(preload_lib, " :") || untraceable)) {
      preload = false;
      preload_lib[0] = '\0';
      untraceable = NULL;
    } else if (access(preload_lib, R_OK) != 0) {
      ft_cli_error("record", "the preload library %s was not found beside the injection library", preload_lib);
      return FT_CLI_USAGE;
    }
    /* LD_PRELOAD splits at spaces and colons and has no quoting */
    if (preload && strpbrk(preload_lib, " :"))
      return ft_cli_usage_error("record", "LD_PRELOAD cannot name '%s' (a space or colon in the path)", preload_lib);
  }
  if (untraceable)
    ft_cli_error("record",
                 "'%s' %s, so the loader ignores LD_PRELOAD: no trace can be injected "
                 "(it runs untraced)",
                 argv[i], untraceable);
  /* a setuid/setgid program runs as another user: with CUDA injection it is traced,
   * but cannot tell record (the report file is ours, 0600) whether it wrote */
  bool other_user = !untraceable && ignored && !strncmp(ignored, "is set", 6);
  if (other_user)
    ft_cli_error("record", "'%s' %s: it runs as another user, so record cannot learn whether it wrote a trace", argv[i],
                 ignored);
  char report[] = "/tmp/flagtrace-record-XXXXXX";
  int rfd = mkstemp(report);
  if (rfd >= 0) close(rfd);

  bool nvtx = cuda_build && (!trace || strstr(trace, "nvtx"));
  if (preload) {
    if (!add_preload(preload_lib)) return 1;
    setenv("FLAGTRACE_PRELOAD", inject, 1);
    unsetenv("FLAGTRACE_PRELOAD_GUARD"); /* an outer record's: this one arms itself */
    char shim[PATH_MAX + 32];
    beside(inject, "libflagtrace_cuda_shim.so", shim, sizeof shim);
    if (range && cuda_build && access(shim, R_OK) == 0) setenv("FLAGTRACE_PRELOAD_SHIM", shim, 1);
    else unsetenv("FLAGTRACE_PRELOAD_SHIM");
  } else {
    unsetenv("FLAGTRACE_PRELOAD_SHIM"); /* an outer record's: not for this injection */
    unsetenv("FLAGTRACE_RANGE_FROM_LOADER");
    unsetenv("FLAGTRACE_PRELOAD");
    const char *prev = getenv("CUDA_INJECTION64_PATH");
    if (prev && *prev && strcmp(prev, inject)) ft_cli_error("record", "replacing CUDA_INJECTION64_PATH=%s", prev);
    setenv("CUDA_INJECTION64_PATH", inject, 1);
    /* The preload library still comes, in guard mode (it arms nothing): it hands a
     * torch process's profiler to the injection library and guards CUPTI against
     * other clients. A program the loader will not preload into goes without. */
    char guard_lib[PATH_MAX + 32];
    beside(have_abs ? abs_inject : inject, "libflagtrace_preload.so", guard_lib, sizeof guard_lib);
    if (have_abs) setenv("FLAGTRACE_PRELOAD_GUARD", abs_inject, 1);
    if (access(guard_lib, R_OK) == 0 && !strpbrk(guard_lib, " :") && !ignored) {
      if (!add_preload(guard_lib)) return 1;
    } else {
      unsetenv("FLAGTRACE_PRELOAD_GUARD");
    }
  }
  if (cuda_build) { /* a libcupti another library dlopens is handed through this shim */
    char guard_shim[PATH_MAX + 32];
    beside(have_abs ? abs_inject : inject, "libflagtrace_cupti_guard.so", guard_shim, sizeof guard_shim);
    if (guard_shim[0] == '/' && access(guard_shim, R_OK) == 0) setenv("FLAGTRACE_CUPTI_GUARD", guard_shim, 1);
    else unsetenv("FLAGTRACE_CUPTI_GUARD");
  }
  if (nvtx) setenv("NVTX_INJECTION64_PATH", inject, 1);
  setenv("FLAGTRACE_OUTPUT", out, 1);
  if (force) setenv("FLAGTRACE_FORCE_OVERWRITE", "1", 1);
  if (trace) setenv("FLAGTRACE_TRACE", trace, 1);
  if (memory) setenv("FLAGOS_TRACE_MEMORY", memory_on ? "1" : "0", 1); /* unset: the environment's, else on */
  if (capture) setenv("FLAGTRACE_CAPTURE_RANGE", capture, 1);
  else unsetenv("FLAGTRACE_CAPTURE_RANGE");
  if (on_demand) {
    char job[32];
    snprintf(job, sizeof job, "%ld", (long)getpid()); /* `capture --job` takes every process of this run */
    setenv("FLAGTRACE_ON_DEMAND", "1", 1);
    setenv("FLAGTRACE_CUPTI_FINALIZE", "1", 0); /* CUPTI detached between captures (0 keeps it) */
    setenv("FLAGTRACE_JOB", job, 1);
  } else {
    unsetenv("FLAGTRACE_ON_DEMAND"); /* an outer record's */
    unsetenv("FLAGTRACE_JOB");
  }
  if (rfd >= 0) setenv("FLAGTRACE_REPORT_FILE", report, 1);

  /* Ignored dispositions we inherited stay ignored (and pass to the program on
   * exec); the others are forwarded. SIGCHLD must not be ignored here, or the
   * program would be reaped before we could read its status. */
  static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE};
  sigset_t fwd, blocked, unblocked;
  sigemptyset(&fwd);
  for (size_t s = 0; s < sizeof forwarded / sizeof forwarded[0]; s++) {
    struct sigaction old;
    if (sigaction(forwarded[s], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&fwd, forwarded[s]);
  }
  struct sigaction dfl = {.sa_handler = SIG_DFL}, old_chld;
  sigaction(SIGCHLD, &dfl, &old_chld);
  blocked = fwd;
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, &unblocked);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    ft_cli_error("record", "fork: %s", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    sigaction(SIGCHLD, &old_chld, NULL);
    sigprocmask(SIG_SETMASK, &unblocked, NULL);
    /* record killed (SIGKILL): the program is told to end and still writes its trace */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) raise(SIGTERM);
    execvp(argv[i], argv + i);
    ft_cli_error("record", "cannot run '%s': %s", argv[i], strerror(errno));
    _exit(127);
  }
  /* the signals stay blocked until we exit: one arriving late would otherwise end
   * record with its default action and lose the program's status */
  int status = wait_forwarding(pid, &fwd);
  rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  size_t written = 0, failed = 0;
  if (rfd >= 0) {
    read_report(report, &written, &failed);
    if (!written && !failed && rc != 127 && !untraceable && !on_demand) {
      if (other_user) ft_cli_error("record", "'%s' wrote no trace record could see (it runs as another user)", argv[i]);
      else if (WIFSIGNALED(status))
        ft_cli_error("record", "'%s' died of signal %d (%s) and wrote no trace (%s)", argv[i], WTERMSIG(status),
                     strsignal(WTERMSIG(status)), death_why(WTERMSIG(status)));
      else if (preload) ft_cli_error("record", "'%s' wrote no trace (no process of it loaded %s)", argv[i], libs);
      else ft_cli_error("record", "'%s' wrote no trace (no process of it initialized CUDA)", argv[i]);
    }
    unlink(report);
  }
  if (on_demand && WIFSIGNALED(status)) {
    /* a crash or SIGKILL: no exit path ran, so its socket is left (a stop by INT,
     * TERM... ran it and is no news) */
    int sig = WTERMSIG(status);
    char sock[PATH_MAX + 32];
    snprintf(sock, sizeof sock, "%s/%ld.sock", ctl_dir, (long)pid);
    bool left = ft__ctl_socket_ours(sock) && unlink(sock) == 0;
    bool stopped = sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGUSR1 || sig == SIGUSR2 ||
                   sig == SIGALRM || sig == SIGPIPE;
    if (left || !stopped)
      ft_cli_error("record", "'%s' died of signal %d (%s)%s", argv[i], sig, strsignal(sig),
                   left ? "; its control socket was removed (a capture running then wrote no trace)" : "");
  }
  size_t removed = remove_partial(out);
  if (removed)
    fprintf(stderr, "flagtrace record: removed %zu partial trace file%s a killed process left (NAME.tmp.PID.N)\n",
            removed, removed == 1 ? "" : "s");
  if (rc == 0 && failed) { /* the program did its part; the trace, its reason to run here, is lost */
    fprintf(stderr, "flagtrace record: %zu trace%s could not be written (above): exit status %d\n", failed,
            failed == 1 ? "" : "s", FT_CLI_TRACE_LOST);
    rc = FT_CLI_TRACE_LOST;
  }
  return rc;
}
