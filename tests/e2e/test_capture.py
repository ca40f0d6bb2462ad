"""End-to-end: `flagtrace record --on-demand` and `flagtrace capture` with the build's fake
activity library behind a long-running fake program (preload_driver loop, a kernel every
2 ms, each launch's time logged): captures hold exactly their windows' kernels, a
3-process job is captured together, hostile socket input and ended programs are one line."""
import json
import os
import re
import signal
import socket
import select
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, Skip, check_flows_paired, check_window, killed_by, load, xs  # noqa: E402

flagtrace, driver, fake_runtime = (os.path.abspath(a) for a in sys.argv[1:4])
results = Results()
help_text = subprocess.run([flagtrace, "record", "--help"], capture_output=True, text=True).stdout
RUNTIME = re.findall(r"\b(lib[\w.-]+\.so)\b", help_text.split("preload:")[1].split("(default here")[0])[0]
NVTX = "FAKE_LIBCUDA" in os.environ  # a CUDA build: the driver's step ranges are NVTX ranges
KERNEL_NS = 2000  # the fake runtime's kernels last 2 us


def env_for(d, **extra):
    rt = os.path.join(d, RUNTIME)
    if not os.path.lexists(rt):
        os.symlink(fake_runtime, rt)
    ctl = os.path.join(d, "ctl")
    # the fake CUPTI's own clock 20 s behind: a capture after the first (CUPTI finalized
    # between them) must register our clock again, or its events fall outside its window
    env = dict(os.environ, FAKE_RUNTIME=rt, FLAGTRACE_CONTROL_DIR=ctl, FAKE_CUPTI_OWN_CLOCK_BEHIND_NS="20000000000",
               **extra)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "verify_asan_link_order=0"]))
    return env


def sockets(d):
    ctl = os.path.join(d, "ctl")
    return sorted(n for n in os.listdir(ctl) if n.endswith(".sock")) if os.path.isdir(ctl) else []


def start(d, secs=30, step=None, cmd=None, n=1, out="t-%p-%n.json", **env):
    """record --on-demand of the driver's loop (-o d/out, env_for(d, **env)); returned once n
    processes can be captured."""
    args = cmd or [driver, "loop", str(secs), os.path.join(d, "log"), *([step] if step else [])]
    p = subprocess.Popen([flagtrace, "record", "--on-demand", "-o", os.path.join(d, out), "--", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(d, **env))
    for _ in range(n):
        assert p.stdout.readline() == "preload_driver: ready\n"
    for _ in range(500):
        if len(sockets(d)) >= n:
            break
        time.sleep(0.01)
    assert len(sockets(d)) == n, sockets(d)
    return p


def stop(p):
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    return p.returncode, err


def capture(d, *args, timeout=60):
    return subprocess.run([flagtrace, "capture", *args], capture_output=True, text=True, env=env_for(d),
                          timeout=timeout, errors="surrogateescape")  # raw bytes fail an assertion, not the run


def wrote(r):
    """(pid, capture number, path) of each process's line."""
    return [(int(p), int(n), path) for p, n, path in
            re.findall(r"^pid (\d+): capture (\d+): wrote (\S+) \(\d+ events, 0 dropped\)$", r.stdout, re.M)]


def launches(log):
    time.sleep(0.05)  # the launch that straddled the window's end is logged after it returns
    with open(log) as f:
        return [tuple(map(int, line.split())) for line in f if line.count(" ") == 2]


def kernels(doc):
    return sorted(int(e["name"][1:]) for e in xs(doc, ("kernel",)))


def check_capture(path, log, least=10):
    """Exactly the window's kernels: every launch wholly inside it, none outside; a launch
    within a kernel's length of an edge may fall either way. Returns the kernel numbers."""
    doc = load(path)
    lo, hi = doc["flagtrace"]["capture_window_ns"]
    got = kernels(doc)
    inside = {n for n, a, b in log if a >= lo and b + KERNEL_NS <= hi}
    edge = {n for n, a, b in log if (a < lo <= b + KERNEL_NS) or (a < hi <= b + KERNEL_NS)}
    assert inside <= set(got) <= inside | edge, (sorted(inside)[:3], got[:3], sorted(set(got) - inside - edge)[:5])
    assert len(inside) >= least, f"the window holds {len(inside)} launches"
    assert got == list(range(got[0], got[-1] + 1)), "a gap in the window's kernels"
    check_window(doc)
    assert check_flows_paired(doc) == len(got), "every kernel linked to its launch"
    assert doc["flagtrace"]["dropped_records"] == 0, doc["flagtrace"]
    return got, doc


@results.tmp_case("capture: two captures of one process, two traces with exactly their windows' kernels")
def _(d):
    p = start(d, step="Step" if NVTX else None)
    pid = int(sockets(d)[0][:-5])
    r1 = capture(d, "--all", "--duration", "400ms")
    time.sleep(0.2)
    r2 = capture(d, "--pid", str(pid), "--duration", "0.3")
    rc, err = stop(p)
    # the socket goes with it, and nothing else was left (it is bound under another name, then renamed)
    left = os.listdir(os.path.join(d, "ctl"))
    assert killed_by(rc, signal.SIGTERM) and not left, (rc, left, err)
    assert r1.returncode == 0 and r2.returncode == 0, (r1, r2)
    (p1, n1, t1), = wrote(r1)
    (p2, n2, t2), = wrote(r2)
    assert p1 == p2 == pid and (n1, n2) == (1, 2), (r1.stdout, r2.stdout)
    assert os.path.basename(t1) == f"t-{p1}-1.json" and os.path.basename(t2) == f"t-{p1}-2.json"
    log = launches(os.path.join(d, "log"))
    k1, doc1 = check_capture(t1, log)
    k2, doc2 = check_capture(t2, log)
    assert k1[-1] < k2[0], "the second window starts after the first"
    assert k2[0] - k1[-1] > 5, "launches between the captures are in neither"
    # record's stderr: the waiting line, then each trace once, and nothing at exit
    # (the tracer's own notes aside: PPU's CUPTI refuses our clock, so each start says how
    # far its clock is from ours)
    lines = [ln for ln in err.splitlines() if ln.startswith("flagtrace") and not ln.startswith("flagtrace: cupti: ")]
    assert lines[0].startswith(f"flagtrace: pid {p1} waits for `flagtrace capture`"), lines
    assert [ln.split(" (")[0] for ln in lines[1:]] == [f"flagtrace: wrote {t1}", f"flagtrace: wrote {t2}"], lines
    assert "distributedInfo" not in doc1, "no rank in the environment: none written, as in record"


@results.tmp_case("record --on-demand: while it waits, no activity-API call but binding the library (CUPTI)")
def _(d):
    if not NVTX:
        raise Skip("the CUPTI tracer's log lines are checked")
    rec = subprocess.run([flagtrace, "record", "--on-demand", "-o", os.path.join(d, "t-%p-%n.json"), "--", driver, "loop",
                          "0.5", os.path.join(d, "log")], capture_output=True, text=True, env=env_for(d, FLAGOS_TRACE="1"))
    cupti = [ln for ln in rec.stderr.splitlines() if ln.startswith("flagtrace: cupti: ")]
    assert rec.returncode == 0 and len(cupti) == 1 and cupti[0].startswith("flagtrace: cupti: bound "), rec.stderr
    assert not os.listdir(os.path.join(d, "ctl")) and not [n for n in os.listdir(d) if n.startswith("t-")]
    p = start(d, FLAGOS_TRACE="1")
    r = capture(d, "--all", "--duration", "100ms")
    _, err = stop(p)
    assert r.returncode == 0, r
    # the capture armed and finalized CUPTI (so the test above could see a call had one been made)
    for what in ("register callbacks: ok", "enable kind", "cuptiFinalize: ok"):
        assert f"flagtrace: cupti: {what}" in err, (what, err)


@results.tmp_case("capture --steps: the window holds exactly N NVTX step ranges and their kernels (elsewhere: refused)")
def _(d):
    if not NVTX:  # refused in one line, the process still captured by duration
        p = start(d)
        r = capture(d, "--all", "--steps", "3", "--step-range", "Step")
        ok = capture(d, "--all", "--duration", "100ms")
        stop(p)
        assert r.returncode == 1 and re.fullmatch(r"flagtrace capture: pid \d+: counting steps needs NVTX ranges, which "
                                                  r"this accelerator's build does not take, or torch's ranges "
                                                  r"\(ProfilerStep#\), and this process has not loaded torch; use a "
                                                  r"duration\n", r.stderr), r
        assert ok.returncode == 0 and wrote(ok)[0][1] == 1, ok
        return
    p = start(d, step="Step")
    r = capture(d, "--all", "--steps", "3", "--step-range", "Step")
    t0 = time.monotonic()
    none = capture(d, "--all", "--steps", "3", "--step-range", "NoSuchStep", "--timeout", "1s")
    waited = time.monotonic() - t0
    stop(p)
    assert none.returncode == 1 and re.fullmatch(r"flagtrace capture: pid \d+: no step range began before the "
                                                 r"timeout\n", none.stderr) and waited < 10, (none, waited)
    assert r.returncode == 0, r
    (_, n, path), = wrote(r)
    got, doc = check_capture(path, launches(os.path.join(d, "log")), least=14)
    steps = sorted(int(e["name"][4:]) for e in xs(doc, ("user_annotation",)))
    assert len(steps) == 3 and steps == list(range(steps[0], steps[0] + 3)), steps
    assert got == list(range(5 * steps[0], 5 * steps[0] + 15)), (steps, got)  # five kernels a step
    # each step's kernels projected onto the device row under it (attribution by range)
    gua = sorted(e["name"] for e in xs(doc, ("gpu_user_annotation",)))
    assert gua == [f"Step{s}" for s in steps], gua


@results.tmp_case("capture --job: the three processes of one record run captured together, each its own trace")
def _(d):
    sh = 'for r in 0 1 2; do RANK=$r WORLD_SIZE=3 "$0" loop 30 "$1.$r" & done; wait'
    p = start(d, cmd=["sh", "-c", sh, driver, os.path.join(d, "log")], n=3)
    lst = capture(d, "--list")
    rows = [ln.split() for ln in lst.stdout.splitlines()[1:]]
    assert lst.returncode == 0 and len(rows) == 3, lst
    assert {r[1] for r in rows} == {str(p.pid)} and sorted(r[2] for r in rows) == ["0", "1", "2"], rows
    assert {r[3] for r in rows} == {"waiting"} and {r[4] for r in rows} == {"preload_driver"}, rows
    r = capture(d, "--job", str(p.pid), "--duration", "600ms")
    for row in rows:  # sh passes record's SIGTERM on to none of them
        os.kill(int(row[0]), signal.SIGTERM)
    stop(p)
    assert r.returncode == 0, r
    ws = wrote(r)
    assert sorted(w[0] for w in ws) == sorted(int(row[0]) for row in rows) and {w[1] for w in ws} == {1}, ws
    windows = []
    for pid, _, path in ws:
        rank = next(row[2] for row in rows if int(row[0]) == pid)
        _, doc = check_capture(path, launches(os.path.join(d, f"log.{rank}")))
        assert doc["distributedInfo"]["rank"] == int(rank) and doc["distributedInfo"]["world_size"] == 3, doc.get(
            "distributedInfo")
        windows.append(doc["flagtrace"]["capture_window_ns"])
    # armed together: the windows overlap by most of their length
    assert min(w[1] for w in windows) - max(w[0] for w in windows) > 300e6, windows


def raw(d, data, shut=True):
    """Sends data to the one process's socket; returns its answer."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(os.path.join(d, "ctl", sockets(d)[0]))
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before it was all read
    out = b""
    try:
        while chunk := s.recv(4096):
            out += chunk
    except ConnectionResetError:
        pass
    s.close()
    return out.decode()


@results.tmp_case("capture: garbage, a 10 MB request, a wrong version: one line each, logged, the program unharmed")
def _(d):
    p = start(d)
    assert raw(d, b"hello\n") == "error refused: not a FTCTL/1 request\n"
    assert raw(d, b"FTCTL/2 info\n") == "error refused: not a FTCTL/1 request\n"
    assert raw(d, b"FTCTL/1 capture ms=5 steps=3 range=41\n") == \
        "error refused: a capture takes either ms= or steps=\n"
    assert raw(d, b"FTCTL/1 capture ms=99999999999999999999999\n") == "error refused: bad or repeated argument 'ms'\n"
    assert raw(d, b"FTCTL/1 capture steps=2 range=4100\n") == "error refused: bad or repeated argument 'range'\n"
    assert raw(d, b"x" * (10 << 20)) == "error refused: request longer than 8192 bytes\n"
    assert raw(d, b"FTCTL/1 info") == "error refused: the request ended without a newline\n"
    assert re.fullmatch(r"ok pid=\d+ job=\d+ rank=- state=waiting comm=preload_driver\n", raw(d, b"FTCTL/1 info\n"))
    stale = socket.socket(socket.AF_UNIX)  # a process of the user that was killed: its socket left
    stale.bind(os.path.join(d, "ctl", "999998.sock"))
    stale.close()
    r = capture(d, "--all", "--duration", "200ms")  # still captures; the gone one is said, not a failure
    assert r.returncode == 0 and len(wrote(r)) == 1, r
    assert r.stderr == "flagtrace capture: pid 999998: gone (the process has ended; its stale socket was removed)\n", r
    rc, err = stop(p)
    refused = re.findall(r"^flagtrace: control socket: refused a request: (.*)$", err, re.M)
    assert refused == ["not a FTCTL/1 request"] * 2 + ["a capture takes either ms= or steps=",
                                                        "bad or repeated argument 'ms'", "bad or repeated argument 'range'",
                                                        "request longer than 8192 bytes",
                                                        "the request ended without a newline"], err


@results.tmp_case("capture: a connection from another uid is refused by the process (SO_PEERCRED)")
def _(d):
    if os.getuid() != 0:
        raise Skip("needs root to connect as another user")
    p = start(d)
    path = os.path.join(d, "ctl", sockets(d)[0])
    os.chmod(os.path.join(d, "ctl"), 0o711)  # let uid 65534 reach the socket: only the peer check is left
    os.chmod(path, 0o666)
    os.chmod(d, 0o755)
    child = os.fork()
    if child == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(10)
            s.connect(path)
            try:
                s.sendall(b"FTCTL/1 capture ms=100\n")
                answer = s.recv(100)
            except (BrokenPipeError, ConnectionResetError):  # closed with the request unread
                answer = b""
            os._exit(0 if answer == b"" else 1)
        except Exception as e:
            print(f"as uid 65534: {e!r}", file=sys.stderr)
            os._exit(2)
    _, status = os.waitpid(child, 0)
    rc, err = stop(p)
    assert os.waitstatus_to_exitcode(status) == 0, "the other user got an answer"
    assert "flagtrace: control socket: refused a connection from uid 65534 (only uid 0 may capture this process)" \
        in err, err
    assert not [n for n in os.listdir(d) if n.startswith("t-")], "another user armed a capture"


@results.tmp_case("capture: a control directory of another user, or open to others, is refused on both ends")
def _(d):
    ctl = os.path.join(d, "ctl")
    os.mkdir(ctl, 0o700)
    if os.getuid() == 0:
        os.chown(ctl, 65534, 65534)
        r = capture(d, "--list")
        assert r.returncode == 1 and r.stderr == f"flagtrace capture: the control directory {ctl} belongs to uid " \
                                                 f"65534, not to this user (uid 0)\n", r
        os.chown(ctl, 0, 0)
    os.chmod(ctl, 0o777)
    r = capture(d, "--all", "--duration", "1s")
    assert r.returncode == 1 and r.stderr == f"flagtrace capture: the control directory {ctl} is open to others " \
                                             f"(mode 777; it must be 0700)\n", r
    rec = subprocess.run([flagtrace, "record", "--on-demand", "--", driver, "exit"], capture_output=True, text=True,
                         env=env_for(d))
    assert rec.returncode == 2 and "is open to others" in rec.stderr and "preload_driver" not in rec.stdout, rec


@results.tmp_case("capture: a socket of another user, one served by another process, a stale one")
def _(d):
    ctl = os.path.join(d, "ctl")
    os.mkdir(ctl, 0o700)
    fake = socket.socket(socket.AF_UNIX)
    fake.bind(os.path.join(ctl, "1.sock"))  # pid 1 is not the process serving it
    fake.listen(1)
    r = capture(d, "--pid", "1", "--duration", "1s")
    assert r.returncode == 1 and r.stderr == f"flagtrace capture: pid 1: its socket is served by another process " \
                                             f"(uid 0, pid {os.getpid()}): not used\n".replace("uid 0", f"uid {os.getuid()}"), r
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(os.path.join(ctl, "999999.sock"))
    stale.close()  # the file stays, nobody listens: a process that was killed
    r = capture(d, "--pid", "999999", "--duration", "1s")
    assert r.returncode == 1 and r.stderr == "flagtrace capture: pid 999999: gone (the process has ended; its stale " \
                                             "socket was removed)\n", r
    assert not os.path.exists(os.path.join(ctl, "999999.sock"))
    if os.getuid() == 0:
        os.chown(os.path.join(ctl, "1.sock"), 65534, 65534)
        r = capture(d, "--pid", "1", "--duration", "1s")
        assert r.returncode == 1 and r.stderr == f"flagtrace capture: pid 1: {ctl}/1.sock is not a socket of this " \
                                                 "user: not used\n", r
    fake.close()


@results.tmp_case("capture: a second capture while one runs is 'busy'; the first completes")
def _(d):
    p = start(d)
    first = subprocess.Popen([flagtrace, "capture", "--all", "--duration", "3s"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env_for(d))
    time.sleep(1)  # armed by then, even on a loaded machine
    lst = capture(d, "--list")
    second = capture(d, "--all", "--duration", "1s")
    out, err = first.communicate(timeout=60)
    ended = p.poll()  # None: still running, as it must be (CI once saw this capture end without a line)
    rc, perr = stop(p)
    assert re.search(r"^\d+ +\d+ +- +capturing +preload_driver$", lst.stdout, re.M), lst
    assert second.returncode == 1 and re.fullmatch(r"flagtrace capture: pid \d+: busy: a capture of this process is "
                                                   r"running\n", second.stderr), second
    assert first.returncode == 0 and re.fullmatch(r"pid \d+: capture 1: wrote \S+ \(\d+ events, 0 dropped\)\n", out), \
        (out, err, f"program: {'running' if ended is None else ended}, then {rc}", perr[-3000:])
    assert ended is None and killed_by(rc, signal.SIGTERM), (ended, rc, perr[-3000:])


@results.tmp_case("capture: a program that exits mid-capture writes the window up to its exit; a killed one is one line")
def _(d):
    p = start(d, secs=1.5)
    t0 = time.monotonic()
    r = capture(d, "--all", "--duration", "20s")
    assert time.monotonic() - t0 < 15, "the capture waited out its window"
    p.communicate(timeout=60)
    assert p.returncode == 0, p.returncode
    m = re.fullmatch(r"pid \d+: capture 1: the process exited during the capture; wrote (\S+) \(\d+ events, 0 dropped\)\n",
                     r.stdout)
    assert r.returncode == 0 and m, r
    got, doc = check_capture(m.group(1), launches(os.path.join(d, "log")))
    assert got[-1] == launches(os.path.join(d, "log"))[-1][0], "the window reaches the last launch"
    p = start(d)
    c = subprocess.Popen([flagtrace, "capture", "--all", "--duration", "20s"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env_for(d))
    time.sleep(0.5)
    os.kill(int(sockets(d)[0][:-5]), signal.SIGKILL)  # no time to write: the client must not hang
    out, err = c.communicate(timeout=15)
    p.communicate(timeout=60)
    assert c.returncode == 1 and re.fullmatch(r"flagtrace capture: pid \d+: the process ended during the capture "
                                              r"\(no trace\)\n", err), (out, err)


def slow_client(path, request, gap, answers, key):
    """Connects to path and sends request a byte every gap seconds until answered; stores
    (answer, seconds from the connection to the answer) in answers[key]."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(path)
    t0 = time.monotonic()
    out = b""
    try:
        for b in request:
            s.sendall(bytes([b]))
            if select.select([s], [], [], gap)[0]:
                break
        while chunk := s.recv(4096):
            out += chunk
    except (BrokenPipeError, ConnectionResetError):
        pass
    answers[key] = (out.decode(), time.monotonic() - t0)
    s.close()


@results.tmp_case("capture: a client sending a byte every 1.5 s holds nothing: --list answered, a 500 ms window 500 ms")
def _(d):
    p = start(d)
    path = os.path.join(d, "ctl", sockets(d)[0])
    answers = {}
    slow = [threading.Thread(target=slow_client, args=(path, b"FTCTL/1 info\n", 1.5, answers, k)) for k in "ab"]
    slow[0].start()
    time.sleep(0.3)  # connected: the old control thread was then stuck reading it
    t0 = time.monotonic()
    lst = capture(d, "--list")
    listed = time.monotonic() - t0
    c = subprocess.Popen([flagtrace, "capture", "--all", "--duration", "500ms"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env_for(d))
    time.sleep(0.2)
    slow[1].start()  # arrives during the window
    out, err = c.communicate(timeout=90)
    took = time.monotonic() - t0
    for t in slow:
        t.join(60)
    rc, perr = stop(p)
    assert lst.returncode == 0 and lst.stderr == "" and re.search(r"^\d+ +\d+ +- +(waiting|capturing) +preload_driver$",
                                                                   lst.stdout, re.M), (lst, listed)
    # each slow client gets one deadline for its whole line: refused at 2 s, not served at 19 s
    for k in "ab":
        assert answers[k][0] == "error refused: no complete request within 2 s\n" and answers[k][1] < 8, answers
    (_, n, trace), = wrote(subprocess.CompletedProcess(c.args, c.returncode, out, err))
    assert c.returncode == 0 and n == 1 and took < 20, (out, err, took)
    lo, hi = load(trace)["flagtrace"]["capture_window_ns"]
    assert 0.5e9 <= hi - lo < 2.5e9, f"the 500 ms window lasted {(hi - lo) / 1e9:.3f} s"


@results.tmp_case("capture -o '/proc/self/fd/%n': refused in the process, nothing written into its descriptors")
def _(d):
    p = start(d)
    log = os.path.join(d, "log")
    os.symlink(log, os.path.join(d, "link-6"))  # capture 6's name: the log the program has open
    rs = [capture(d, "--all", "--duration", "100ms", "-o", "/proc/self/fd/%n") for _ in range(4)]
    rs.append(capture(d, "--all", "--duration", "100ms", "-o", "/dev/fd/%n"))
    rs.append(capture(d, "--all", "--duration", "100ms", "-o", os.path.join(d, "link-%n")))
    # out= checked by the process too: a client other than capture sends anything
    bad = [raw(d, b"FTCTL/1 capture ms=5 out=%s\n" % o.encode().hex().encode(), shut=False)
           for o in ("t-%n.json", "/t/x.json", "/t/x-%n-%d.json")]
    ok = capture(d, "--all", "--duration", "100ms")  # still captured, as capture 7
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    stream = "it names a descriptor, a device or a FIFO, not a regular file"
    for n, r in enumerate(rs, 1):
        path, why = {5: ("/dev/fd/5", stream), 6: (os.path.join(d, "link-6"), "it is a file this process has open")
                     }.get(n, (f"/proc/self/fd/{n}", stream))
        assert r.returncode == 1 and r.stdout == "" and re.fullmatch(
            rf"flagtrace capture: pid \d+: capture {n}: trace not written to {re.escape(path)}: {why}\n", r.stderr), \
            (n, r)
    assert bad == ["error refused: out= is not an absolute path (the client sends it resolved)\n",
                   "error refused: out= needs %n (the capture number)\n",
                   "error refused: out= has an unknown escape (valid: %p %h %r %n %%)\n"], bad
    assert ok.returncode == 0 and wrote(ok)[0][1] == 7, ok
    with open(log) as f:
        text = f.read()
    assert text and all(line.count(" ") == 2 for line in text.splitlines()), "a trace in the program's log"
    assert "traceEvents" not in err + out, (out[-2000:], err[-2000:])


@results.tmp_case("capture: ESC and BEL from a file name, or a socket, are printed escaped")
def _(d):
    p = start(d, out="t-\x1b]0;pwn\x07\x1b[2J-%p-%n.json")
    r = capture(d, "--all", "--duration", "100ms")
    # a server of this user answering --list with terminal escapes in every field
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(os.path.join(d, "ctl", f"{os.getpid()}.sock"))
    srv.listen(4)

    def answer():
        c, _ = srv.accept()
        c.recv(100)
        c.sendall(b"ok pid=1 job=\x1b]0;pwn\x07 rank=\x9b2J state=\x1b[2J comm=\x1b[31mred\n")
        c.close()
    th = threading.Thread(target=answer)
    th.start()
    lst = capture(d, "--list")
    th.join(30)
    srv.close()
    os.unlink(os.path.join(d, "ctl", f"{os.getpid()}.sock"))
    stop(p)
    assert r.returncode == 0 and re.fullmatch(r"pid \d+: capture 1: wrote \S+/t-\\x1b\]0;pwn\\x07\\x1b\[2J-\d+-1\.json "
                                              r"\(\d+ events, 0 dropped\)\n", r.stdout), r
    assert [n for n in os.listdir(d) if n.startswith("t-\x1b]0;pwn\x07")], os.listdir(d)
    row = [ln.split() for ln in lst.stdout.splitlines() if ln.startswith(f"{os.getpid()} ")]
    assert row == [[str(os.getpid()), "\\x1b]0;pwn\\x07", "\\x9b2J", "\\x1b[2J", "\\x1b[31mred"]], lst.stdout
    assert "\x1b" not in lst.stdout + r.stdout and "\x07" not in lst.stdout + r.stdout


@results.tmp_case("capture --job --steps: a process of the job that never steps (a launcher) holds nothing")
def _(d):
    if not NVTX:
        raise Skip("the ranks' steps are NVTX ranges")
    # the launcher: a process of the job that loads the runtime and never begins a step
    sh = ('"$0" wait & for r in 0 1; do RANK=$r WORLD_SIZE=2 "$0" loop 40 "$1.$r" Step & done; wait')
    p = start(d, cmd=["sh", "-c", sh, driver, os.path.join(d, "log")], n=3)
    lst = capture(d, "--list")
    rows = [ln.split() for ln in lst.stdout.splitlines()[1:]]
    launcher = next(int(r[0]) for r in rows if r[2] == "-")
    t0 = time.monotonic()
    r = capture(d, "--job", str(p.pid), "--steps", "3", "--step-range", "Step", "--timeout", "30s")
    took = time.monotonic() - t0
    after = capture(d, "--pid", str(launcher), "--duration", "100ms")  # not busy
    for row in rows:
        os.kill(int(row[0]), signal.SIGTERM)
    stop(p)
    assert r.returncode == 0 and took < 15, (r, took)
    ws = wrote(r)
    assert sorted(w[0] for w in ws) == sorted(int(row[0]) for row in rows if row[2] != "-"), (ws, rows)
    for pid, _, path in ws:
        steps = sorted(e["name"] for e in xs(load(path), ("user_annotation",)))
        assert len(steps) == 3, steps
    assert r.stderr == f"flagtrace capture: pid {launcher}: left out: it began no step while the others wrote theirs " \
                       "(a process without steps, as torchrun's launcher; its capture closed empty)\n", r.stderr
    assert after.returncode == 0 and wrote(after)[0][:2] == (launcher, 1), after


@results.tmp_case("capture --pid P,P: one capture of P, not a second one found 'busy'")
def _(d):
    p = start(d)
    pid = int(sockets(d)[0][:-5])
    r = capture(d, "--pid", f"{pid},{pid}", "--duration", "100ms")
    stop(p)
    assert r.returncode == 0 and len(wrote(r)) == 1 and r.stderr == "", r


@results.tmp_case("record --on-demand: a program killed by a signal is said, its socket removed")
def _(d):
    p = start(d)
    pid = int(sockets(d)[0][:-5])
    os.kill(pid, signal.SIGKILL)
    out, err = p.communicate(timeout=60)
    assert killed_by(p.returncode, signal.SIGKILL) or p.returncode == 128 + signal.SIGKILL, p.returncode
    assert err.splitlines()[-1] == f"flagtrace record: '{driver}' died of signal 9 (Killed); its control socket was " \
                                   "removed (a capture running then wrote no trace)", err[-2000:]
    assert sockets(d) == [], sockets(d)


@results.tmp_case("control directory: a link to this user's 0700 directory is followed; one too long is refused first")
def _(d):
    real = os.path.join(d, "real")
    os.mkdir(real, 0o700)
    os.symlink(real, os.path.join(d, "ctl"))
    p = start(d)
    assert os.listdir(real) == sockets(d), os.listdir(real)
    r = capture(d, "--all", "--duration", "100ms")
    stop(p)
    assert r.returncode == 0 and len(wrote(r)) == 1, r
    long_dir = os.path.join(d, "x" * (100 - len(d)))
    rec = subprocess.run([flagtrace, "record", "--on-demand", "--", driver, "exit"], capture_output=True, text=True,
                         env=dict(env_for(d), FLAGTRACE_CONTROL_DIR=long_dir))
    assert rec.returncode == 2 and rec.stdout == "" and rec.stderr == \
        f"flagtrace record: the control directory {long_dir} is too long for a socket path ({len(long_dir)} bytes; " \
        "at most 90): set FLAGTRACE_CONTROL_DIR to a shorter one\n", rec


@results.tmp_case("record --on-demand / capture: usage errors are one line")
def _(d):
    env = env_for(d)
    r = subprocess.run([flagtrace, "record", "--on-demand", "-o", "x.json", "--", "true"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 2 and "with --on-demand the output name needs %n (the capture number), not 'x.json'" in \
        r.stderr, r
    r = subprocess.run([flagtrace, "record", "--on-demand", "--capture-range=cudaProfilerApi", "--", "true"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "--on-demand and --capture-range each decide when to record" in r.stderr, r
    for args, why in ((["--duration", "1s"], "give one of --pid, --job and --all"),
                      (["--all"], "give one of --duration and --steps"),
                      (["--all", "--duration", "5x"], "--duration takes a time such as 500ms, 5s or 2m"),
                      (["--all", "--steps", "0"], "--steps takes a count from 1 to 1000000, not '0'"),
                      (["--all", "--duration", "1s", "-o", "x.json"], "the output name needs %n"),
                      (["--all", "--duration", "1s", "--step-range", "S"], "--step-range goes with --steps"),
                      (["--list", "--all"], "--list takes no other option")):
        r = capture(d, *args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and why in r.stderr, (args, r)
    r = capture(d, "--list")
    assert r.returncode == 0 and r.stdout == "no process of `flagtrace record --on-demand` to capture\n", r


results.finish()
