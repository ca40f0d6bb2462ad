"""The Makefile's entry points (issue 52): `make test` ends with ctest's summary (the build, the code
check and the benchmarks' smoke run before it, each quiet unless it fails: scripts/quiet.sh), the
smoke run's expected note not printed, and `make install` with DESTDIR and PREFIX as
docs/install.md says: it installs the build, whose installed command runs, and `make uninstall`
removes what it wrote.
usage: test_make.py SOURCE_DIR BUILD_DIR"""
import os
import shlex
import subprocess
import sys
import tempfile

src, build = sys.argv[1], os.path.abspath(sys.argv[2])
# a make inside ctest inside `make test`: not the outer make's jobserver or flags
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "DESTDIR", "PREFIX")}
passed = 0


def make(*args, check=True):
    r = subprocess.run(["make", "--no-print-directory", "-C", src, *args], capture_output=True, text=True, env=ENV)
    if check and r.returncode:
        sys.exit(f"FAIL: make {' '.join(args)}: exit {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r


def ok(cond, what):
    global passed
    if not cond:
        sys.exit(f"FAIL: {what}")
    passed += 1


# 1. `make test`'s commands in order (make -n: printed, not run): ctest is the last; every build step
# before it goes through scripts/quiet.sh (its output to the log); the smoke run is before ctest
text = make("-n", "test", f"BUILD={build}").stdout.replace("\\\n", " ")  # a recipe's continued lines
lines = [shlex.split(x) for x in text.splitlines() if x.strip()]
cmds = [x for x in lines if x and not x[0].startswith("echo")]
ok(cmds[-1][:3] == ["cd", build, "&&"] and cmds[-1][3] == "ctest", f"make test's last command is ctest: {cmds[-1]}")
for c in cmds:
    if "cmake" in c or "bench/run.py" in c or "scripts/codegen/gen_cupti_runtime_cbid.py" in c:
        ok(c[0] == "scripts/quiet.sh" and c[1] == f"{build}/make.log", f"a build step that is not quiet: {c}")
ok(any("bench/run.py" in c for c in cmds), "make test runs the benchmarks' smoke run")

# 2. scripts/quiet.sh: silent on success; on failure the log's tail, then one line naming the step and the log
with tempfile.TemporaryDirectory() as tmp:
    log, quiet = os.path.join(tmp, "make.log"), os.path.join(src, "scripts", "quiet.sh")
    r = subprocess.run([quiet, log, "the step", "sh", "-c", "echo chatter; echo more >&2"], capture_output=True,
                       text=True)
    ok((r.returncode, r.stdout, r.stderr) == (0, "", ""), f"quiet.sh printed on success: {r}")
    ok(open(log).read() == "$ sh -c echo chatter; echo more >&2\nchatter\nmore\n", "quiet.sh's log")
    r = subprocess.run([quiet, log, "the build", "sh", "-c", "echo compiling x.c; echo 'x.c:1: error' >&2; exit 3"],
                       capture_output=True, text=True, env=dict(os.environ, QUIET_TAIL="2"))
    ok(r.returncode == 3 and r.stdout == "", f"quiet.sh's failure: {r}")
    ok(r.stderr == f"compiling x.c\nx.c:1: error\nmake: the build failed (exit 3): its last lines above, the whole "
                   f"output in {log}\n", f"quiet.sh's failure lines: {r.stderr!r}")

# 2b. through the Makefile: a build step that fails (a configure refused) prints the log's tail, its line, status 2
with tempfile.TemporaryDirectory() as tmp:
    b = os.path.join(tmp, "b")
    r = make(f"BUILD={b}", "CMAKE_FLAGS=-DFLAGOS_ACCELERATOR=bogus", check=False)
    err = r.stderr.splitlines()
    ok(r.returncode == 2 and r.stdout == "", f"make with a failing configure: {r}")
    ok("  FLAGOS_ACCELERATOR='bogus' is not one of:" in err, f"the log's tail is not shown: {r.stderr}")
    ok(f"make: configuring {b} failed (exit 1): its last lines above, the whole output in {b}/make.log" in err,
       f"no line naming the failed step: {r.stderr}")

# 3. the smoke run's expected note (a synthetic trace written without a tracer) is not printed: every
# flagtrace stats run of bench/run.py on its synthetic traces passes -q
with open(os.path.join(src, "bench", "run.py")) as f:
    bench = f.read()
ok('sh([ft, "stats", "-r", "temporal"' not in bench, "bench/run.py reads the synthetic trace without -q")

# 4. make install DESTDIR=D PREFIX=P: the build installed under D/P; the installed command runs from there
with tempfile.TemporaryDirectory() as dest:
    r = make("install", f"BUILD={build}", f"DESTDIR={dest}", "PREFIX=/opt/ft")
    root = os.path.join(dest, "opt", "ft")
    ok(r.stdout.splitlines()[-1] == f"make: installed into {dest}/opt/ft (the file list: {build}/install_manifest.txt;"
                                    " make uninstall removes them)", f"make install's last line: {r.stdout!r}")
    for rel in ("bin/flagtrace", "include/flagtrace/flagtrace.h", "share/man/man1/flagtrace.1",
                "share/bash-completion/completions/flagtrace"):
        ok(os.path.isfile(os.path.join(root, rel)), f"make install wrote no {rel}")
    libdir = next(d for d in ("lib", "lib64") if os.path.isdir(os.path.join(root, d)))
    ok(os.path.isfile(os.path.join(root, libdir, "libflagtrace.so.0")), "make install wrote no libflagtrace.so.0")
    ok(os.path.isfile(os.path.join(root, libdir, "pkgconfig", "flagtrace.pc")), "no flagtrace.pc")
    with open(os.path.join(root, libdir, "pkgconfig", "flagtrace.pc")) as f:  # PREFIX, not DESTDIR
        ok("prefix=/opt/ft\n" in f.read(), "flagtrace.pc's prefix is not PREFIX")
    exe = os.path.join(root, "bin", "flagtrace")
    v = subprocess.run([exe, "--version"], capture_output=True, text=True)
    ok(v.returncode == 0 and v.stdout.startswith("flagtrace "), f"the installed flagtrace --version: {v}")
    s = subprocess.run([exe, "stats", "-q", "-r", "gpu", "-f", "csv", os.path.join(src, "tests/data/sample_h200.json.gz")],
                       capture_output=True, text=True)
    ok(s.returncode == 0 and s.stdout.splitlines()[0].startswith("rank,device,busy_us"), f"the installed flagtrace stats: {s}")
    with open(os.path.join(build, "install_manifest.txt")) as f:
        manifest = f.read().split()
    ok(manifest and all(p.startswith("/opt/ft/") for p in manifest), "the manifest names files outside P")
    make("uninstall", f"BUILD={build}", f"DESTDIR={dest}")  # under DESTDIR too
    left = [os.path.join(d, n) for d, _, ns in os.walk(dest) for n in ns]
    ok(left == [], f"make uninstall left {left[:5]}")
print(f"{passed} passed, 0 failed")
