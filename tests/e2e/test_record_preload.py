"""End-to-end: `flagtrace record --inject=preload` on every accelerator build, with the
build's fake activity library and a fake runtime named like the vendor's; the traces
are parsed as JSON and checked structurally. One harness for every vendor."""
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, killed_by, check_flows_paired, check_window, load, setuid_copy, xs  # noqa: E402

flagtrace, driver, fake_runtime = (os.path.abspath(a) for a in sys.argv[1:4])
tracer = sys.argv[4]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()  # e.g. valgrind (scripts/valgrind.sh)
results = Results()
signal.signal(signal.SIGINT, signal.SIG_DFL)  # see test_record.py; a background job also
signal.signal(signal.SIGQUIT, signal.SIG_DFL)  # inherits SIGQUIT ignored, which record keeps

help_text = subprocess.run([flagtrace, "record", "--help"], capture_output=True, text=True).stdout
RUNTIMES = re.findall(r"\b(lib[\w.-]+\.so)\b", help_text.split("preload:")[1].split("(default here")[0])
assert RUNTIMES, help_text
DEFAULT = "cuda" if "(default here: cuda" in help_text else "preload"
RUNTIME_CAT = "cuda_runtime" if tracer in ("cupti", "mcpti") else "privateuse1_runtime"
# MSPTI records copies and sets only when libmspti was loaded at process start: the
# user preloads it, and record keeps their LD_PRELOAD ahead of its own
EXTRA_ENV = {"LD_PRELOAD": os.environ["FLAGOS_TRACER_LIBRARY"]} if tracer == "mspti" else {}
# under ASan (make test-sanitize) the preloaded library comes before the ASan runtime
EXTRA_ENV["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "verify_asan_link_order=0"]))




def runtime_in(d, name=RUNTIMES[0]):
    """The fake runtime under a vendor runtime's file name, as a program would load it."""
    path = os.path.join(d, name)
    if not os.path.lexists(path):
        os.symlink(fake_runtime, path)
    return path


def env_for(d, name=RUNTIMES[0], **extra):
    return dict(os.environ, FAKE_RUNTIME=runtime_in(d, name), **EXTRA_ENV, **extra)


def record(d, *args, name=RUNTIMES[0], env=None, inject=True):
    opts = ["--inject=preload"] if inject else []
    return subprocess.run([*WRAP, flagtrace, "record", *opts, *args], capture_output=True, text=True,
                          env=env or env_for(d, name))


def written(r):
    return re.findall(r"^flagtrace: wrote (\S+) \((\d+) events, (\d+) dropped\)$", r.stderr, re.M)


def start_waiting(d, out, **popen):
    """record with the driver in "wait" mode, returned once the program is armed and waiting."""
    p = subprocess.Popen([*WRAP, flagtrace, "record", "--inject=preload", "-o", out, "--", driver, "wait"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(d), **popen)
    assert p.stdout.readline() == "preload_driver: ready\n"
    return p


def signalled(d, out, *sigs, **popen):
    """Sends sigs to record mid-run; returns record's status and stderr."""
    p = start_waiting(d, out, **popen)
    for sig in sigs:
        p.send_signal(sig)
        time.sleep(0.1)
    _, stderr = p.communicate(timeout=60)
    return p.returncode, stderr


def check_trace(path):
    """One kernel, one copy, one memset, each launched by one runtime call, flows paired."""
    assert os.path.exists(path), f"{path} was not written: {os.listdir(os.path.dirname(path))}"
    doc = load(path)
    assert [e["name"] for e in xs(doc, ("kernel",))] == ["fake_kernel"], xs(doc, ("kernel",))
    assert len(xs(doc, ("gpu_memcpy",))) == 1 and len(xs(doc, ("gpu_memset",))) == 1, doc["traceEvents"]
    assert len(xs(doc, (RUNTIME_CAT,))) == 3, [e["name"] for e in xs(doc, (RUNTIME_CAT,))]
    assert check_flows_paired(doc) == 3
    check_window(doc)
    assert doc["flagtrace"]["device_activity"] is True, doc["flagtrace"]
    return doc


@results.tmp_case("record --inject=preload: armed at the runtime's dlopen; trace, stdout and status pass through")
def _(d):
    r = record(d, "-o", os.path.join(d, "run-%p.json.gz"), "--", driver, "status")
    assert r.returncode == 3, r
    assert r.stdout == "preload_driver: status done\n", r.stdout
    w = written(r)
    assert len(w) == 1 and w[0][2] == "0", r.stderr
    assert re.fullmatch(re.escape(d) + r"/run-\d+\.json\.gz", w[0][0]), w
    check_trace(w[0][0])
    assert "not armed" not in r.stderr, r.stderr


@results.tmp_case("record --inject=preload --memory=off: the preloaded session records no memory; on by default")
def _(d):
    for args, on in ((["--memory=off", "-t", "kernel"], False), (["-t", "kernel"], True)):
        path = os.path.join(d, "off.json" if not on else "on.json")
        r = record(d, *args, "-o", path, "--", driver, "status")
        assert r.returncode == 3, r
        assert ("memory" in load(path)["flagtrace"]) == on, (args, load(path)["flagtrace"])


@results.tmp_case("record --inject=preload: every runtime name of this build arms it")
def _(d):
    for name in RUNTIMES:
        out = os.path.join(d, name + ".json")
        r = record(d, "-o", out, "--", driver, "exit", name=name)
        assert r.returncode == 0 and len(written(r)) == 1, (name, r)
        check_trace(out)


@results.tmp_case("record --inject=preload: a runtime already loaded at start (LD_PRELOAD) arms it at the constructor")
def _(d):
    env = env_for(d)
    env["LD_PRELOAD"] = ":".join(filter(None, [EXTRA_ENV.get("LD_PRELOAD"), env["FAKE_RUNTIME"]]))
    r = record(d, "-o", os.path.join(d, "t.json"), "--", driver, "exit", env=env)
    assert r.returncode == 0 and len(written(r)) == 1, r
    check_trace(os.path.join(d, "t.json"))


FAKE_LIBCUDA = os.environ.get("FAKE_LIBCUDA")  # CUDA builds: --capture-range's libcuda shim
LOADER_WAIT = "capture range: waiting for cudaProfilerStart through the loader (no CUPTI call before it)"
CUPTI_WAIT = "flagtrace: capture range: waiting for cudaProfilerStart\n"


def range_record(d, mode, **extra):
    """record --capture-range (preload by default on CUDA) of the driver's cudart-like range."""
    env = dict(env_for(d, "libcudart.so", FAKE_LIBCUDA=FAKE_LIBCUDA, FLAGOS_TRACE="1"), **extra)
    out = os.path.join(d, mode + ".json")
    r = record(d, "--capture-range=cudaProfilerApi", "-o", out, "--", driver, mode, env=env, inject=False)
    assert r.returncode == 0 and r.stdout == f"preload_driver: {mode} done\n", r
    return r, load(out)


if FAKE_LIBCUDA:
    @results.tmp_case("record --capture-range: preload by default; the libcuda shim opens the range, no CUPTI before it")
    def _(d):
        r, doc = range_record(d, "range")
        assert [e["name"] for e in xs(doc, ("kernel",))] == ["inside_range"], xs(doc, ("kernel",))
        # the session started at cudaProfilerStart: before_range never reached the fake
        # CUPTI's enabled kinds; after_range's kernel and launch arrive and are discarded
        assert doc["flagtrace"]["window_discarded"] == 2, doc["flagtrace"]
        assert LOADER_WAIT in r.stderr and CUPTI_WAIT not in r.stderr, r.stderr
        assert "[shim] wrapped cuProfilerStart" in r.stderr and "[shim] wrapped cuProfilerStop" in r.stderr, r.stderr

    @results.tmp_case("record --capture-range: a program with libcuda loaded from its start keeps CUPTI's watch")
    def _(d):
        # linked (here: preloaded by the user, ahead of record's) before any dlopen: a
        # direct cuProfilerStart would never meet the shim
        r, doc = range_record(d, "range", LD_PRELOAD=FAKE_LIBCUDA)
        assert [e["name"] for e in xs(doc, ("kernel",))] == ["inside_range"], xs(doc, ("kernel",))
        assert CUPTI_WAIT in r.stderr and LOADER_WAIT not in r.stderr and "[shim]" not in r.stderr, r.stderr

    @results.tmp_case("record --capture-range: no cudaProfilerStart: an empty trace that says why, CUPTI never armed")
    def _(d):
        r, doc = range_record(d, "range_none")
        assert written(r) and written(r)[0][1] == "0", r.stderr
        assert xs(doc, ("kernel",)) == [] and doc["flagtrace"]["device_activity"] is False, doc["flagtrace"]
        assert doc["flagtrace"]["device_status"] == "no cudaProfilerStart opened the capture range", doc["flagtrace"]
        assert "activity enabled" not in r.stderr and "enable kind" not in r.stderr, r.stderr

    @results.tmp_case("record --capture-range: a shim that cannot load: one line, and CUPTI watches the range")
    def _(d):
        import shutil
        libs = os.path.join(d, "libs")
        os.mkdir(libs)
        inject = os.environ["FLAGTRACE_INJECT_LIBRARY"]
        for name in ("libflagtrace_inject.so", "libflagtrace_preload.so"):  # copies: record resolves links
            shutil.copy(os.path.join(os.path.dirname(inject), name), libs)
        with open(os.path.join(libs, "libflagtrace_cuda_shim.so"), "w") as f:
            f.write("not an ELF file\n")
        r, doc = range_record(d, "range", FLAGTRACE_INJECT_LIBRARY=os.path.join(libs, "libflagtrace_inject.so"))
        assert re.search(r"^flagtrace: \S+/libflagtrace_cuda_shim\.so could not be loaded \(.*\); the capture range is "
                         r"watched through CUPTI$", r.stderr, re.M), r.stderr
        assert [e["name"] for e in xs(doc, ("kernel",))] == ["inside_range"], xs(doc, ("kernel",))
        assert "the loader cannot watch it; watching through the tracer" in r.stderr, r.stderr

    @results.tmp_case("record --inject=cuda --capture-range: CUDA injection arms; the preload library only guards")
    def _(d):
        # the preload library comes in guard mode (FLAGTRACE_PRELOAD_GUARD, never
        # FLAGTRACE_PRELOAD): it arms nothing and hands no libcuda shim
        r = record(d, "--inject=cuda", "--capture-range=cudaProfilerApi", "--", "sh", "-c",
                   'echo "[$LD_PRELOAD][$CUDA_INJECTION64_PATH][$FLAGTRACE_PRELOAD_SHIM][$FLAGTRACE_PRELOAD]'
                   '[$FLAGTRACE_PRELOAD_GUARD]"', inject=False)
        assert re.fullmatch(r"\[/\S+/libflagtrace_preload\.so\]\[(/\S+)/libflagtrace_inject\.so\]\[\]\[\]"
                            r"\[\1/libflagtrace_inject\.so\]\n", r.stdout), r


@results.tmp_case("record --inject=preload: a program that never loads the runtime writes nothing")
def _(d):
    r = record(d, "-o", os.path.join(d, "t-%p.json"), "--", driver, "none")
    assert r.returncode == 0 and r.stdout == "preload_driver: none done\n", r
    assert os.listdir(d) == [RUNTIMES[0]], os.listdir(d)
    assert r.stderr == f"flagtrace record: '{driver}' wrote no trace (no process of it loaded " + \
        " or ".join(RUNTIMES) + ")\n", r.stderr
    r = record(d, "--", "sh", "-c", "exit 5")  # and a shell wrapper likewise
    assert r.returncode == 5 and "wrote no trace" in r.stderr and r.stderr.count("\n") == 1, r
    assert os.listdir(d) == [RUNTIMES[0]], os.listdir(d)


@results.tmp_case("record --inject=preload: a child that execs inherits it; one trace per process, named by %p")
def _(d):
    r = record(d, "-o", os.path.join(d, "t-%p.json"), "--", driver, "spawn")
    assert r.returncode == 0, r
    pids = re.fullmatch(r"preload_driver: pids (\d+) (\d+)\n", r.stdout.split("exit done\n")[-1])
    assert pids, r.stdout
    want = sorted(os.path.join(d, f"t-{p}.json") for p in pids.groups())
    assert sorted(glob.glob(os.path.join(d, "t-*.json"))) == want, os.listdir(d)
    assert sorted(w[0] for w in written(r)) == want, r.stderr
    for p in want:
        check_trace(p)


@results.tmp_case("record --inject=preload: a bare-name dlopen still searches the caller's RUNPATH")
def _(d):
    # preload_driver's RUNPATH is $ORIGIN/preload_rt; through the dlopen wrapper the
    # loader would search the wrapper's (none)
    rt_dir = os.path.join(os.path.dirname(driver), "preload_rt")
    os.makedirs(rt_dir, exist_ok=True)
    runtime_in(rt_dir)
    out = os.path.join(d, "t.json")
    r = record(d, "-o", out, "--", driver, "exit", env=dict(env_for(d), FAKE_RUNTIME=RUNTIMES[0]))
    assert r.returncode == 0 and len(written(r)) == 1, r
    check_trace(out)
    r = subprocess.run([driver, "exit"], capture_output=True, text=True, env=dict(env_for(d), FAKE_RUNTIME="libnone.so"))
    assert r.returncode == 3 and "libnone.so: cannot open shared object file" in r.stderr, r  # no wrapper: as ever
    r = record(d, "--", driver, "exit", env=dict(env_for(d), FAKE_RUNTIME="libnone.so"))
    assert r.returncode == 3 and "libnone.so: cannot open shared object file" in r.stderr, r  # the loader's error


@results.tmp_case("record --inject=preload: %h and %r expand in the process, as with CUDA injection")
def _(d):
    r = record(d, "-o", os.path.join(d, "t-%h-%r-%%.json"), "--", driver, "exit", env=env_for(d, RANK="3"))
    out = os.path.join(d, f"t-{socket.gethostname()}-3-%.json")
    assert r.returncode == 0 and [w[0] for w in written(r)] == [out], r
    check_trace(out)


@results.tmp_case("record --inject=preload: fork without exec writes one trace, the parent's")
def _(d):
    r = record(d, "-o", os.path.join(d, "t-%p.json"), "--", driver, "fork")
    assert r.returncode == 0, r
    assert len(glob.glob(os.path.join(d, "t-*.json"))) == 1 and len(written(r)) == 1, (os.listdir(d), r.stderr)


@results.tmp_case("record --inject=preload: SIGTERM to record mid-run reaches the program; the trace is complete")
def _(d):
    out = os.path.join(d, "t.json.gz")
    rc, stderr = signalled(d, out, signal.SIGTERM)
    assert killed_by(rc, signal.SIGTERM), (rc, stderr)
    assert len(re.findall(r"^flagtrace: wrote ", stderr, re.M)) == 1, stderr
    check_trace(out)
    assert not glob.glob(os.path.join(d, "*.tmp.*"))


@results.tmp_case("record --inject=preload: record killed (SIGKILL): the program gets SIGTERM and still writes")
def _(d):
    out = os.path.join(d, "t.json")
    p = start_waiting(d, out)
    p.kill()
    p.wait()
    for _ in range(200):  # the orphan ends on its own (PR_SET_PDEATHSIG), not after 30 s
        if os.path.exists(out):
            break
        time.sleep(0.05)
    check_trace(out)


@results.tmp_case("record --inject=preload: a statically linked program gets one line and runs untraced")
def _(d):
    static = os.path.join(d, "static")
    src = os.path.join(d, "s.c")
    with open(src, "w") as f:
        f.write("int main(void) { return 7; }\n")
    if subprocess.run(["cc", "-static", "-o", static, src], capture_output=True).returncode:
        print("     (skipped: no static libc here)")
        return
    r = record(d, "--", static)
    assert r.returncode == 7, r
    assert r.stderr == f"flagtrace record: '{static}' is statically linked, so the loader ignores LD_PRELOAD: " \
        "no trace can be injected (it runs untraced)\n", r.stderr


@results.tmp_case("record --inject: bad values get one line naming the valid ones, status 2")
def _(d):
    valid = "cuda or preload" if DEFAULT == "cuda" else "preload"
    for bad in ("bogus", "", "cuda" if DEFAULT != "cuda" else "PRELOAD"):
        r = subprocess.run([flagtrace, "record", f"--inject={bad}", "--", "true"], capture_output=True, text=True)
        assert r.returncode == 2 and f"--inject takes {valid}" in r.stderr and r.stderr.count("\n") == 1, (bad, r)


@results.tmp_case("record: SIGINT sent to record alone (not its group) reaches the program, which writes its trace")
def _(d):
    out = os.path.join(d, "t.json")
    rc, stderr = signalled(d, out, signal.SIGINT)
    assert killed_by(rc, signal.SIGINT), (rc, stderr)
    check_trace(out)


@results.tmp_case("record: SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGPIPE sent to record are passed on; all but QUIT let it write")
def _(d):
    for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT, signal.SIGPIPE):
        # record passes on only what it did not inherit as ignored (the next case): a
        # runner started under nohup (SIGHUP ignored) must not decide this one
        rc, stderr = signalled(d, os.path.join(d, f"t{sig}.json"), sig,
                               preexec_fn=lambda s=sig: signal.signal(s, signal.SIG_DFL))
        # the default action ends the program; HUP, USR1, USR2 and PIPE write the trace first
        # (as INT and TERM) and are re-raised by our handler, which TSan at times never
        # delivers (killed_by); QUIT has no handler of ours, dumps core and leaves none
        if sig == signal.SIGQUIT:
            assert rc == 128 + sig, (sig, rc, stderr)
            assert f"died of signal {int(sig)}" in stderr and "a crash leaves none" in stderr, (sig, stderr)
        else:
            assert killed_by(rc, sig), (sig, rc, stderr)
            assert "died of signal" not in stderr and "flagtrace: wrote" in stderr, (sig, stderr)
            check_trace(os.path.join(d, f"t{sig}.json"))


@results.tmp_case("record: a signal record inherited as ignored stays ignored by the program")
def _(d):
    out = os.path.join(d, "t.json")
    rc, stderr = signalled(d, out, signal.SIGUSR1, signal.SIGTERM,
                           preexec_fn=lambda: signal.signal(signal.SIGUSR1, signal.SIG_IGN))
    assert killed_by(rc, signal.SIGTERM), (rc, stderr)
    check_trace(out)


@results.tmp_case("record: bad output names are refused before the program starts (one line, status 2)")
def _(d):
    marker = os.path.join(d, "started")
    os.mkdir(os.path.join(d, "sub%p"))
    bad = [
        (".", "names a directory"),
        ("/", "names a directory"),
        (d + "/", "names a directory"),
        (d + "/..", "names a directory"),
        (d, "is a directory"),
        (os.path.join(d, "sub%p", "t.json"), "escapes belong in the file name"),
        (os.path.join(d, "t-%q.json"), "unknown escape '%q'"),
        (os.path.join(d, "t-%"), "unknown escape '%'"),
        (os.path.join(d, "a\nb.json"), "line break"),
    ]
    for out, text in bad:
        r = subprocess.run([flagtrace, "record", "-o", out, "--", "sh", "-c", f"touch {marker}"],
                           capture_output=True, text=True, cwd=d)
        assert r.returncode == 2 and text in r.stderr and r.stderr.count("\n") == 1, (out, r)
        assert not os.path.exists(marker), out
    # %% is a literal % anywhere, the directory included
    os.mkdir(os.path.join(d, "50%"))
    r = record(d, "-o", os.path.join(d, "50%%", "t-%p.json"), "--", driver, "exit")
    assert r.returncode == 0 and len(glob.glob(os.path.join(d, "50%", "t-*.json"))) == 1, r


@results.tmp_case("record -o a symlink: its target written and the link kept; a dangling link refused before the run")
def _(d):
    target, link = os.path.join(d, "real.json"), os.path.join(d, "link.json")
    os.symlink(target, link)
    marker = os.path.join(d, "ran")
    r = record(d, "--force-overwrite", "-o", link, "--", "sh", "-c", f"touch {marker}")
    assert r.returncode == 2 and r.stderr == f"flagtrace record: output '{link}' is a symbolic link to a missing " \
        "file (see flagtrace record --help)\n", r
    assert not os.path.exists(marker) and os.path.islink(link), "refused after the program ran"
    with open(target, "w") as f:
        f.write("old")
    r = record(d, "--force-overwrite", "-o", link, "--", driver, "exit")
    assert r.returncode == 0 and len(written(r)) == 1, r
    assert os.path.islink(link) and os.readlink(link) == target
    check_trace(target)


@results.tmp_case("record -o over an existing file: refused unless --force-overwrite (nsys's convention)")
def _(d):
    out = os.path.join(d, "t.json")
    with open(out, "w") as f:
        f.write("precious")
    r = record(d, "-o", out, "--", driver, "exit")
    assert r.returncode == 2 and r.stderr == f"flagtrace record: '{out}' exists; --force-overwrite replaces it " \
        "(see flagtrace record --help)\n", r
    assert r.stdout == "" and open(out).read() == "precious"
    r = record(d, "--force-overwrite=yes", "-o", out, "--", driver, "exit")
    assert r.returncode == 2 and "takes no value" in r.stderr, r
    r = record(d, "--force-overwrite", "-o", out, "--", driver, "exit")
    assert r.returncode == 0 and len(written(r)) == 1, r
    check_trace(out)
    # a name only the process can expand (%r: its RANK) is checked where it writes
    ranked = os.path.join(d, "r-%r.json")
    with open(os.path.join(d, "r-norank.json"), "w") as f:
        f.write("precious")
    r = record(d, "-o", ranked, "--", driver, "exit")
    assert r.returncode == 74 and not written(r), r  # the program succeeded, its trace is lost: 74
    assert r.stderr == f"flagtrace: {d}/r-norank.json exists: trace not written (record --force-overwrite " \
        "replaces it)\nflagtrace record: 1 trace could not be written (above): exit status 74\n", r.stderr
    assert open(os.path.join(d, "r-norank.json")).read() == "precious"
    r = record(d, "--force-overwrite", "-o", ranked, "--", driver, "exit")
    assert r.returncode == 0 and len(written(r)) == 1, r
    check_trace(os.path.join(d, "r-norank.json"))
    # a device is written through, not replaced: no --force-overwrite needed, nothing created
    r = record(d, "-o", "/dev/null", "--", driver, "exit")
    assert r.returncode == 0 and [w[0] for w in written(r)] == ["/dev/null"], r
    assert not [n for n in os.listdir("/dev") if n.startswith("null.")], "a file appeared beside /dev/null"


@results.tmp_case("record --inject=preload: a setuid program that changes our ids gets one line")
def _(d):
    prog = setuid_copy(d)
    r = record(d, "--", prog)
    assert r.stderr.startswith(f"flagtrace record: '{prog}' is setuid, so the loader ignores LD_PRELOAD"), r
    assert r.stderr.count("\n") == 1, r.stderr


results.finish()
