"""End-to-end: `flagtrace record` with its injection library and the fake libcupti;
the traces it writes are parsed as JSON and checked structurally."""
import glob
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import (Results, killed_by, check_flows_paired, check_memory, check_window, load,  # noqa: E402
                          setuid_copy, small_tmpfs, xs)

flagtrace, driver = sys.argv[1], sys.argv[2]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()  # e.g. valgrind (scripts/valgrind.sh)
results = Results()
# A SIGINT ignored by whoever started us (a background job) would pass to the programs
# under test, and record rightly keeps an inherited ignore: start them from the default.
signal.signal(signal.SIGINT, signal.SIG_DFL)




def record(*args, cwd=None, env=None):
    return subprocess.run([*WRAP, flagtrace, "record", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, **(env or {})))


def written(r):
    return re.findall(r"^flagtrace: wrote (\S+) \((\d+) events, (\d+) dropped\)$", r.stderr, re.M)


@results.tmp_case("record: trace written at exit, %p expanded, stdout and status pass through")
def _(d):
    r = record("-o", os.path.join(d, "run-%p.json.gz"), "--", driver, "exit")
    assert r.returncode == 0, r
    assert r.stdout == "inject_driver: exit done\n", r.stdout
    w = written(r)
    assert len(w) == 1, r.stderr
    path, events, dropped = w[0]
    assert re.fullmatch(re.escape(d) + r"/run-\d+\.json\.gz", path), path
    assert dropped == "0"
    doc = load(path)
    assert len(xs(doc, ("kernel",))) == 2
    assert [e["name"] for e in xs(doc, ("kernel",))][0] == "saxpy(float, float const*, float*, int)"
    assert check_flows_paired(doc) == 2
    check_window(doc)
    check_memory(doc)
    assert int(events) == len(doc["traceEvents"]) - sum(1 for e in doc["traceEvents"] if e["ph"] != "X") \
        - len(xs(doc, ("gpu_user_annotation",))) + sum(1 for e in doc["traceEvents"] if e["name"] == "[memory]"), events


@results.tmp_case("record: NVTX push/pop, marks, domains, registered strings; attribution to the innermost range")
def _(d):
    r = record("-o", os.path.join(d, "t.json"), "--", driver, "exit")
    assert r.returncode == 0, r
    doc = load(os.path.join(d, "t.json"))
    ranges = {e["name"]: e for e in xs(doc, ("user_annotation",))}
    assert set(ranges) == {"outer", "inner", "mark", "registered"}, set(ranges)
    k1, k2 = xs(doc, ("kernel",))
    assert k1["args"]["External id"] == ranges["inner"]["args"]["External id"]
    assert k2["args"]["External id"] == ranges["outer"]["args"]["External id"]
    proj = {e["name"]: e for e in xs(doc, ("gpu_user_annotation",))}
    assert set(proj) >= {"outer", "inner"}, set(proj)
    assert proj["outer"]["ts"] <= k1["ts"] and proj["outer"]["ts"] + proj["outer"]["dur"] >= k2["ts"] + k2["dur"] - 0.002
    assert "inject_driver: pop returned" not in r.stderr, r.stderr


@results.tmp_case("record: distributedInfo only when a rank is known (RANK), never rank 0 by default")
def _(d):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    r = subprocess.run([*WRAP, flagtrace, "record", "-o", os.path.join(d, "none.json"), "--", driver, "exit"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r
    assert "distributedInfo" not in load(os.path.join(d, "none.json"))
    r = record("-o", os.path.join(d, "r%r.json"), "--", driver, "exit", env={"RANK": "1", "WORLD_SIZE": "2"})
    assert r.returncode == 0, r
    assert load(os.path.join(d, "r1.json"))["distributedInfo"] == {"rank": 1, "world_size": 2}


@results.tmp_case("record --trace=kernel,nvtx: no API rows, no flows")
def _(d):
    r = record("--trace=kernel,nvtx", "-o", os.path.join(d, "t.json"), "--", driver, "exit")
    assert r.returncode == 0, r
    doc = load(os.path.join(d, "t.json"))
    assert len(xs(doc, ("kernel",))) == 2 and not xs(doc, ("cuda_runtime",))
    assert not [e for e in doc["traceEvents"] if e["ph"] in ("s", "f")]
    assert xs(doc, ("user_annotation",))


@results.tmp_case("record --memory: on by default whatever --trace lists, off by --memory=off or FLAGOS_TRACE_MEMORY=0")
def _(d):
    runs = [("on", ["--trace=kernel,nvtx"], {}, True), ("off", ["--memory=off"], {}, False),
            ("env0", [], {"FLAGOS_TRACE_MEMORY": "0"}, False),
            ("flag-wins", ["--memory=on"], {"FLAGOS_TRACE_MEMORY": "0"}, True)]
    for name, args, env, on in runs:
        path = os.path.join(d, name + ".json")
        r = record(*args, "-o", path, "--", driver, "exit", env=env)
        assert r.returncode == 0, (name, r)
        block = load(path)["flagtrace"]
        assert ("memory" in block) == on, (name, block)
        check_memory(load(path))
        if on:  # the fake records no memory: nothing counted, nothing written
            assert block["memory"]["operations"] == 0 and block["memory"]["devices"] == [], block


@results.tmp_case("record: an NVTX wide-string range is UTF-8 in the trace, a lone surrogate U+FFFD")
def _(d):
    r = record("-o", os.path.join(d, "t.json"), "--", driver, "wide")
    assert r.returncode == 0, r
    doc = load(os.path.join(d, "t.json"))
    assert [e["name"] for e in xs(doc, ("user_annotation",))] == ["w\u00e9\u20ac\U0001F600\uFFFD"], doc
    with open(os.path.join(d, "t.json"), "rb") as f:
        assert "w\u00e9\u20ac\U0001F600".encode() in f.read()  # raw UTF-8 bytes, not \u escapes


@results.tmp_case("record --inject=cuda --capture-range=cudaProfilerApi: only what ran between start and stop")
def _(d):
    r = record("--inject=cuda", "--capture-range=cudaProfilerApi", "-o", os.path.join(d, "t.json"), "--", driver, "range")
    assert r.returncode == 0, r
    doc = load(os.path.join(d, "t.json"))
    assert [e["name"] for e in xs(doc, ("kernel",))] == ["inside_range"], xs(doc, ("kernel",))
    # Activity is enabled at cudaProfilerStart, not before (nothing of before_range
    # reached flagtrace), and kept after the stop: after_range's kernel and launch
    # arrive and are discarded as outside the window.
    assert doc["flagtrace"]["window_discarded"] == 2, doc["flagtrace"]


@results.tmp_case("FLAGTRACE_CUPTI_RANGE_CALLBACKS: driver watches only cuProfilerStart/Stop, a bad value both")
def _(d):
    # the fake's cudaProfilerStart makes runtime callbacks only, as the runtime's own
    r = record("--inject=cuda", "--capture-range=cudaProfilerApi", "-o", os.path.join(d, "t.json"), "--", driver, "range",
               env={"FLAGTRACE_CUPTI_RANGE_CALLBACKS": "driver"})
    assert r.returncode == 0, r
    assert [w[1] for w in written(r)] == ["0"], r.stderr
    assert xs(load(os.path.join(d, "t.json")), ("kernel",)) == []
    r = record("--inject=cuda", "--capture-range=cudaProfilerApi", "-o", os.path.join(d, "u.json"), "--", driver, "range",
               env={"FLAGTRACE_CUPTI_RANGE_CALLBACKS": "bogus"})
    assert r.returncode == 0, r
    assert "FLAGTRACE_CUPTI_RANGE_CALLBACKS='bogus' is not driver, runtime or both" in r.stderr, r.stderr
    assert [e["name"] for e in xs(load(os.path.join(d, "u.json")), ("kernel",))] == ["inside_range"]


@results.tmp_case("record: SIGTERM still leaves a complete trace; status 128+15")
def _(d):
    r = record("-o", os.path.join(d, "t.json.gz"), "--", driver, "sigterm")
    assert killed_by(r.returncode, signal.SIGTERM), r
    assert len(written(r)) == 1, r.stderr
    doc = load(os.path.join(d, "t.json.gz"))
    assert len(xs(doc, ("kernel",))) == 2
    assert not glob.glob(os.path.join(d, "*.tmp.*"))


@results.tmp_case("record: SIGINT as well; a crash leaves no trace and no partial file")
def _(d):
    r = record("-o", os.path.join(d, "t.json"), "--", driver, "sigint")
    assert killed_by(r.returncode, signal.SIGINT), r
    assert len(xs(load(os.path.join(d, "t.json")), ("kernel",))) == 2
    os.remove(os.path.join(d, "t.json"))
    # under ASan/TSan the crash must still be a crash, not the sanitizer's report and exit 1
    r = record("-o", os.path.join(d, "t.json"), "--", driver, "segv", env={"ASAN_OPTIONS": "handle_segv=0", "TSAN_OPTIONS": "handle_segv=0"})
    assert r.returncode == 128 + 11, r
    assert "died of signal 11" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert os.listdir(d) == [], os.listdir(d)


@results.tmp_case("record: a full disk: its line, record's exit status 74 (the program succeeded), and no file")
def _(d):
    with small_tmpfs(d) as mnt:
        r = record("-o", os.path.join(mnt, "t.json"), "--", driver, "many")
        assert r.returncode == 74, r
        lines = [line for line in r.stderr.splitlines() if line.startswith("flagtrace")]
        assert len(lines) == 2 and "No space left on device" in lines[0], r.stderr
        assert lines[1] == "flagtrace record: 1 trace could not be written (above): exit status 74", lines
        assert os.listdir(mnt) == [], os.listdir(mnt)


@results.tmp_case("record: a CUPTI of another major version: warning, CPU trace still written")
def _(d):
    r = subprocess.run([*WRAP, flagtrace, "record", "-o", os.path.join(d, "t.json"), "--", driver, "exit"],
                       capture_output=True, text=True, env=dict(os.environ, FAKE_CUPTI_VERSION="120000"))
    assert r.returncode == 0, r
    assert "reports API version 120000" in r.stderr, r.stderr
    doc = load(os.path.join(d, "t.json"))
    assert doc["flagtrace"]["device_activity"] is False and "layout mismatch" in doc["flagtrace"]["device_status"]
    assert xs(doc, ("user_annotation",)) and not xs(doc, ("kernel",))


@results.tmp_case("record: FLAGOS_TRACE=maybe warns once and changes nothing else")
def _(d):
    r = subprocess.run([*WRAP, flagtrace, "record", "-o", os.path.join(d, "t.json"), "--", driver, "exit"],
                       capture_output=True, text=True, env=dict(os.environ, FLAGOS_TRACE="maybe"))
    assert r.returncode == 0, r
    assert r.stderr.count("FLAGOS_TRACE='maybe' is not a boolean") == 1, r.stderr
    assert len(xs(load(os.path.join(d, "t.json")), ("kernel",))) == 2


@results.tmp_case("record: fork without exec writes one trace, the parent's")
def _(d):
    r = record("-o", os.path.join(d, "t-%p.json"), "--", driver, "fork")
    assert r.returncode == 0, r
    assert len(glob.glob(os.path.join(d, "t-*.json"))) == 1, os.listdir(d)
    assert len(written(r)) == 1, r.stderr


@results.tmp_case("record: a relative output lands in the caller's directory")
def _(d):
    r = record("-o", "rel.json", "--", driver, "exit", cwd=d)
    assert r.returncode == 0, r
    assert os.path.exists(os.path.join(d, "rel.json"))


@results.tmp_case("record: exit status and signals of a program that never uses CUDA")
def _(d):
    r = record("-o", os.path.join(d, "x.json"), "--", "sh", "-c", "exit 3")
    assert r.returncode == 3, r
    assert "wrote no trace" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = record("--", "sh", "-c", "kill -KILL $$")
    assert r.returncode == 128 + 9, r


@results.tmp_case("record: bad input gets one line naming the problem and a non-zero status")
def _(d):
    bad = [
        (["--bogus", "true"], 2, "unknown option '--bogus'"),
        (["-o"], 2, "option '-o' needs a value"),
        ([], 2, "no command to run"),
        (["--"], 2, "no command to run"),
        (["--trace=kernel,gpu", "true"], 2, "--trace takes"),
        (["--trace=", "true"], 2, "--trace takes"),
        (["--capture-range=nvtx", "true"], 2, "--capture-range takes"),
        (["--memory=maybe", "true"], 2, "--memory takes on or off"),
        (["-o", os.path.join(d, "missing", "t.json"), "true"], 2, "does not exist"),
        (["-o", "", "true"], 2, "empty output name"),
        (["--", os.path.join(d, "no-such-program")], 127, "cannot run"),
    ]
    for args, code, text in bad:
        r = record(*args)
        assert r.returncode == code, (args, r)
        assert text in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    ro = os.path.join(d, "ro")
    os.mkdir(ro, 0o555)
    if os.geteuid() != 0:  # root writes anywhere
        r = record("-o", os.path.join(ro, "t.json"), "true")
        assert r.returncode == 2 and "not writable" in r.stderr, r
    r = record("--help")
    assert r.returncode == 0 and "--capture-range=cudaProfilerApi" in r.stdout


@results.tmp_case("record: an output name too long for the system is refused before the program starts")
def _(d):
    marker = os.path.join(d, "started")
    for name in ("x" * 300 + ".json", "x" * 230 + "-%p-%r.json"):  # the second fits only before %p, %r, .tmp.PID.N
        r = record("-o", os.path.join(d, name), "--", "sh", "-c", f"touch {marker}")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "a file name holds at most 255" in r.stderr, r
        assert not os.path.exists(marker)


@results.tmp_case("record: a trace that cannot be written after the program succeeded: exit status 74, the reason above")
def _(d):
    r = record("--force-overwrite", "-o", "/dev/full", "--", driver, "exit")
    assert r.returncode == 74 and r.stdout == "inject_driver: exit done\n", r
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and "/dev/full" in lines[0] and lines[1].endswith("exit status 74"), lines
    r = record("--force-overwrite", "-o", "/dev/full", "--", "sh", "-c", f"{driver} exit; exit 3")
    assert r.returncode == 3, r  # the program's own failure stays its status


@results.tmp_case("record: %r is RANK's digits only (RANK=../x, a line break, text, a rank not below WORLD_SIZE: norank)")
def _(d):
    os.mkdir(os.path.join(d, "out"))
    for env, name, why in (({"RANK": "../escaped"}, "norank", "RANK='../escaped' is not a rank"),
                           ({"RANK": "a\nb"}, "norank", "RANK='a?b' is not a rank"),  # one line
                           ({"RANK": "abc", "LOCAL_RANK": "1"}, "1", "RANK='abc' is not a rank"),
                           ({"RANK": "1073741824"}, "norank",  # a decimal number: the message says the limit
                            "RANK=1073741824 is not a rank: flagtrace takes ranks below 2^30 (1073741824)"),
                           ({"RANK": "3", "WORLD_SIZE": "2"}, "norank", "RANK=3 is not below WORLD_SIZE=2"),
                           ({"RANK": "1", "WORLD_SIZE": "2"}, "1", None)):
        r = record("--force-overwrite", "-o", os.path.join(d, "out", "t-%r.json"), "--", driver, "exit",
                   env={"LOCAL_RANK": "", **env})
        assert r.returncode == 0, (env, r)
        assert os.listdir(os.path.join(d, "out")) == [f"t-{name}.json"], (env, os.listdir(os.path.join(d, "out")))
        assert os.listdir(d) == ["out"], os.listdir(d)  # nothing outside the directory
        doc = load(os.path.join(d, "out", f"t-{name}.json"))
        if why:
            assert [l for l in r.stderr.splitlines() if why in l][:1], (env, r.stderr)
            assert "rank" not in doc.get("distributedInfo", {}), (env, doc.get("distributedInfo"))
        else:
            assert doc["distributedInfo"] == {"rank": 1, "world_size": 2}, doc.get("distributedInfo")
        os.unlink(os.path.join(d, "out", f"t-{name}.json"))


@results.tmp_case("record: FLAGTRACE_INJECT_LIBRARY naming nothing is said as such, in one line")
def _(d):
    r = record("--", "true", env={"FLAGTRACE_INJECT_LIBRARY": "/nonexistent/libx.so"})
    assert r.returncode == 2 and r.stderr == "flagtrace record: FLAGTRACE_INJECT_LIBRARY=/nonexistent/libx.so " \
        "cannot be read: No such file or directory\n", r


@results.tmp_case("record: a partial trace a killed process left (NAME.tmp.PID.N) is removed; others' files are kept")
def _(d):
    gone = subprocess.Popen(["true"])
    gone.wait()
    alive = subprocess.Popen(["sleep", "30"])
    try:
        left = os.path.join(d, f"run-7.json.tmp.{gone.pid}.0")
        busy = os.path.join(d, f"run-8.json.tmp.{alive.pid}.0")
        other = os.path.join(d, f"notes.txt.tmp.{gone.pid}.0")
        for p in (left, busy, other):
            open(p, "w").write("partial")
        r = record("-o", os.path.join(d, "run-%p.json"), "--", driver, "exit")
        assert r.returncode == 0, r
        assert not os.path.exists(left) and os.path.exists(busy) and os.path.exists(other), os.listdir(d)
        assert "removed 1 partial trace file a killed process left" in r.stderr, r.stderr
    finally:
        alive.kill()
        alive.wait()


@results.tmp_case("record --inject=cuda: a setuid program is said to run as another user, before and after")
def _(d):
    prog = setuid_copy(d)
    r = record("--inject=cuda", "-o", os.path.join(d, "t.json"), "--", prog)
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and "runs as another user, so record cannot learn whether it wrote" in lines[0], lines
    assert lines[1] == f"flagtrace record: '{prog}' wrote no trace record could see (it runs as another user)", lines


results.finish()
