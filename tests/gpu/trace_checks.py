"""Structural checks of a flagtrace Chrome trace, shared by the GPU, end-to-end and
PyTorch integration tests (the one Python trace-checks module)."""
import gzip
import json
import os
import re
import sys
import tempfile
from collections import Counter, defaultdict

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME_CATS = ("cuda_runtime", "privateuse1_runtime")
API_CATS = RUNTIME_CATS + ("cuda_driver", "privateuse1_driver")
GENERIC_RUNTIME_NAMES = {"cudaRuntime"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def xs(doc, cats):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]


def runtime_events(doc):
    """The runtime and driver API rows."""
    return xs(doc, API_CATS)


def flow_halves(doc):
    """Each ac2g flow id's halves ("s"/"f"), in trace order."""
    halves = {}
    for e in doc["traceEvents"]:
        if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
            halves.setdefault(e["id"], []).append(e["ph"])
    return halves


def ns(doc, ts_us):
    return doc.get("baseTimeNanoseconds", 0) + round(ts_us * 1000)


def check_flows_paired(doc):
    """torch-cuda's arrows: every flow id has exactly one s (on the launch) and one f
    per device event it launched (a graph replay: one s, one f per node), ids below
    2^32; returns the number of linked device events (f halves)."""
    halves = defaultdict(Counter)
    for e in doc["traceEvents"]:
        if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
            assert 0 < e["id"] < 2**32, e
            halves[e["id"]][e["ph"]] += 1
    bad = {i: dict(c) for i, c in halves.items() if c["s"] != 1 or c["f"] < 1 or set(c) - {"s", "f"}}
    assert not bad, f"unpaired or duplicated flow ids: {list(bad.items())[:5]}"
    return sum(c["f"] for c in halves.values())


def check_window(doc):
    lo, hi = doc["flagtrace"]["capture_window_ns"]
    for e in xs(doc, DEVICE_CATS + RUNTIME_CATS + ("user_annotation",)):
        start = ns(doc, e["ts"])
        end = start + round(e["dur"] * 1000)
        # ts/dur are printed to the ns, so the rounding error is at most 1 ns each
        assert lo - 1 <= start and end <= hi + 2, f"{e['name']} [{start}, {end}] outside [{lo}, {hi}]"


def check_memory(doc):
    """flagtrace's [memory] instants (docs/memory.md; torch's own, without "Op", are not
    checked): inside the capture window; per device (the host: Device Id -1), in file
    order by ts, the written Bytes sum to Total Allocated and each reserve/unreserve's
    Pool Bytes moves Total Reserved; each has its Memory counter sample right after it
    with the same totals; the flagtrace block's memory object agrees (written, peaks).
    Returns {device id: [instants]}."""
    lo, hi = doc["flagtrace"]["capture_window_ns"]
    ev = doc["traceEvents"]
    per = defaultdict(list)
    for i, e in enumerate(ev):
        if e.get("name") != "[memory]" or "Op" not in e.get("args", {}):
            continue
        a = e["args"]
        assert lo - 1 <= ns(doc, e["ts"]) <= hi + 1, e
        c = ev[i + 1]
        assert c["ph"] == "C" and c["name"] == "Memory" and c["ts"] == e["ts"], (e, c)
        assert c["args"] == {"Allocated": a["Total Allocated"], "Reserved": a["Total Reserved"]}, (e, c)
        assert c["pid"] == (e["pid"] if a["Device Type"] == 0 else a["Device Id"]), (e, c)
        per[a["Device Id"]].append((e["ts"], i, a))
    block = doc["flagtrace"].get("memory")
    assert (block is not None) or not per, "memory instants without a flagtrace.memory object"
    if block is None:
        return {}
    assert block["written"] == sum(len(v) for v in per.values()), block
    peaks = {d["device"]: d for d in block["devices"]}
    strict = block["replaced_live"] == 0  # an allocation at a live address frees the older one unseen
    for dev, ops in per.items():
        ops.sort(key=lambda x: (x[0], x[1]))
        allocated = reserved = 0
        for _, _, a in ops:
            assert a["Total Reserved"] >= 0 and a["Total Allocated"] >= 0, a
            if a["Op"] in ("reserve", "unreserve"):
                assert a["Bytes"] == 0 and a["Total Reserved"] == reserved + a["Pool Bytes"], (dev, a)
            elif strict:  # an allocation reserves what it allocates, or its pool already did
                assert a["Total Reserved"] - reserved in (0, a["Bytes"]), (dev, a)
            allocated += a["Bytes"]
            assert a["Total Allocated"] == allocated or not strict, (dev, a)
            allocated, reserved = a["Total Allocated"], a["Total Reserved"]
        assert peaks[dev]["peak_allocated"] == max(a["Total Allocated"] for _, _, a in ops), (dev, peaks[dev])
        assert peaks[dev]["peak_reserved"] == max(a["Total Reserved"] for _, _, a in ops), (dev, peaks[dev])
        assert peaks[dev]["allocated_at_end"] == allocated and peaks[dev]["reserved_at_end"] == reserved, peaks[dev]
    return {dev: [a for _, _, a in ops] for dev, ops in per.items()}


def check_runtime_names(doc):
    rt = xs(doc, RUNTIME_CATS)
    assert rt, "no runtime events"
    generic = sum(1 for e in rt if e["name"] in GENERIC_RUNTIME_NAMES)
    assert generic < len(rt) / 2, f"{generic} of {len(rt)} runtime events carry the generic label"
    assert all("cbid" in e["args"] for e in rt)
    return Counter(e["name"] for e in rt)


def device_time_by_external_id(doc):
    total = defaultdict(int)
    for e in xs(doc, DEVICE_CATS):
        if "External id" in e["args"]:
            total[e["args"]["External id"]] += round(e["dur"] * 1000)
    return total


def killed_by(status, sig):
    """A shell status of 128 + sig. Under TSan (FT_TEST_TSAN=1: make test-tsan) a signal
    re-raised by flagtrace's handler once the trace is written is at times never
    delivered (TSan defers signals to its own safe points; seen in 1 of 4 runs of that
    test here), and the program runs to its end: there only the trace's
    own checks count. Every other build checks the status."""
    return status == 128 + int(sig) or os.environ.get("FT_TEST_TSAN") == "1"


def setuid_copy(d, prog="/bin/true"):
    """A copy of prog in d, setuid to another user (nobody), or Skip where this
    process cannot give a file away (not root)."""
    import shutil
    out = os.path.join(d, "suid")
    shutil.copy(prog, out)
    if os.geteuid() == 0:
        os.chown(out, 65534, -1)
    os.chmod(out, 0o4755)
    if os.stat(out).st_uid == os.getuid():
        raise Skip("cannot give the file another owner")
    return out


class small_tmpfs:
    """A 16 KiB tmpfs mounted at d/tiny for a `with` block (a full disk), or Skip
    where this process may not mount."""

    def __init__(self, d):
        self.mnt = os.path.join(d, "tiny")

    def __enter__(self):
        import subprocess
        os.mkdir(self.mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", self.mnt], capture_output=True).returncode:
            raise Skip("cannot mount a small tmpfs here")
        return self.mnt

    def __exit__(self, *exc):
        import subprocess
        subprocess.run(["umount", self.mnt])
        return False


class Skip(Exception):
    """Raised by a check that cannot run here, with the reason; counted apart from passes."""


class Results:
    """A minimal runner: PASS/FAIL/SKIP per check, then the closing 'N passed, M failed'.
    FT_TEST_ONLY / FT_TEST_EXCLUDE (regexes on the check's name) pick the checks, so a
    check that may skip runs as its own ctest (exit 77 when all it ran skipped)."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.only, self.exclude = os.environ.get("FT_TEST_ONLY"), os.environ.get("FT_TEST_EXCLUDE")

    def check(self, name, fn, *args):
        if (self.only and not re.search(self.only, name)) or (self.exclude and re.search(self.exclude, name)):
            return
        try:
            fn(*args)
            self.passed += 1
            print(f"PASS {name}")
        except Skip as e:
            self.skipped += 1
            print(f"SKIP {name}: {e}")
        except AssertionError as e:
            self.failed += 1
            print(f"FAIL {name}: {e}")

    def case(self, name):
        """Decorator form: runs the function at once."""
        def wrap(fn):
            self.check(name, fn)
            return fn
        return wrap

    def tmp_case(self, name):
        """Decorator form, the function given a fresh temporary directory."""
        def wrap(fn):
            def in_tmp():
                with tempfile.TemporaryDirectory() as d:
                    fn(d)
            self.check(name, in_tmp)
            return fn
        return wrap

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed" + (f", {self.skipped} skipped" if self.skipped else ""))
        if not (self.passed or self.failed or self.skipped):
            print("FAIL: no check ran (FT_TEST_ONLY / FT_TEST_EXCLUDE match nothing?)")
            sys.exit(1)
        sys.exit(1 if self.failed else 77 if not self.passed else 0)


def on_pty(cmd, cols, env=None, cwd=None):
    """What cmd writes to stdout when it is a terminal of cols columns (0: one that gives no size):
    the tests of tables that fit the terminal (stats, diff)."""
    import fcntl
    import pty
    import struct
    import subprocess
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    p = subprocess.Popen(cmd, stdout=slave, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait()
    os.close(master)
    assert p.returncode == 0, (cmd, p.returncode)
    return out.decode().replace("\r\n", "\n")
