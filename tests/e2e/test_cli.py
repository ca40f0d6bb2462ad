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

r = run("record", "--", "true")
if accel == "cpu":  # every accelerator build can inject; the CPU-only one says why in one line
    assert r.returncode == 2 and "has no device to record" in r.stderr and r.stderr.count("\n") == 1, r
else:  # a program that never loads the runtime: its status, one line, no trace
    assert r.returncode == 0 and "wrote no trace" in r.stderr and r.stderr.count("\n") == 1, r
print("1 passed, 0 failed")
