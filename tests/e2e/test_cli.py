"""End-to-end: the flagtrace binary's --help, --version and its errors."""
import os
import re
import subprocess
import sys

exe, accel, tracer = sys.argv[1], sys.argv[2], sys.argv[3]


def run(*args, env=None):
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env)


r = run("--help")
assert r.returncode == 0, r
assert r.stdout.startswith("usage: flagtrace"), r.stdout
assert "FLAGOS_TRACE" in r.stdout and "FLAGOS_TRACER_LIBRARY" in r.stdout

# the version is CMakeLists.txt's project(VERSION); from a git checkout, the commit too
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
version = re.search(r"project\(flagtrace VERSION ([0-9.]+)", open(os.path.join(root, "CMakeLists.txt")).read())[1]
checkout = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True).returncode == 0
r = run("--version")
assert r.returncode == 0, r
m = re.fullmatch(rf"flagtrace {re.escape(version)} \(accelerator {accel}, tracer {tracer}, gzip (zlib|isa-l)"
                 rf"(, commit ([0-9a-f]{{12}})(-dirty)?)?\)\n", r.stdout)
assert m and bool(m[2]) == checkout, (r.stdout, checkout)
if checkout:  # a commit of this repository (HEAD may have moved since the build)
    assert subprocess.run(["git", "-C", root, "cat-file", "-e", m[3] + "^{commit}"]).returncode == 0, r.stdout
# the gzip backend it names is the one traces are written with: zlib when asked for
r = run("--version", env={**os.environ, "FLAGOS_TRACE_DEFLATE": "zlib"})
assert r.returncode == 0 and ", gzip zlib" in r.stdout, r

for bad, word in (("--bogus", "unknown option '--bogus'"), ("frobnicate", "unknown command 'frobnicate'")):
    r = run(bad)
    assert r.returncode == 2, r
    assert r.stderr.count("\n") == 1 and word in r.stderr, r.stderr

r = run()
assert r.returncode == 2 and "usage:" in r.stderr

# a mistyped command is answered with the nearest one the help lists (a prefix, or 1-2 edits)
for typo, near in (("stat", "stats"), ("recrod", "record"), ("reprot", "report"), ("rec", "record")):
    r = run(typo)
    assert r.returncode == 2 and r.stderr == (f"flagtrace: unknown command '{typo}'; did you mean '{near}'? "
                                              "(see flagtrace --help)\n"), r.stderr
for far in ("frobnicate", ""):  # nothing near: no guess
    r = run(far)
    assert r.returncode == 2 and f"unknown command '{far}' (see" in r.stderr and "did you mean" not in r.stderr, r.stderr

# "--" ends the options: never taken as -o's value (--output=-- still names a file "--")
for cmd in (["record", "-o", "--", "true"], ["record", "--output", "--", "true"], ["report", "-o", "--", "x.json"],
            ["stats", "-o", "--", "x.json"], ["stats", "x.json", "--output", "--", "y.json"]):
    r = run(*cmd)
    opt = cmd[cmd.index("--") - 1]
    assert r.returncode == 2 and r.stderr == (f"flagtrace {cmd[0]}: option '{opt}' needs a value before '--' "
                                              f"(see flagtrace {cmd[0]} --help)\n"), (cmd, r.stderr)

# every value record accepts for --capture-range is in its --help
r = run("record", "--help")
assert "--capture-range=cudaProfilerApi\n" in r.stdout and "--capture-range=none\n" in r.stdout, r.stdout

r = run("record", "--", "true")
if accel == "cpu":  # every accelerator build can inject; the CPU-only one says why in one line
    assert r.returncode == 2 and "has no device to record" in r.stderr and r.stderr.count("\n") == 1, r
else:  # a program that never loads the runtime: its status, one line, no trace
    assert r.returncode == 0 and "wrote no trace" in r.stderr and r.stderr.count("\n") == 1, r
print("1 passed, 0 failed")
