"""End-to-end, device memory (issue 51): `flagtrace record` of a stand-in CUDA program whose
fake libcupti makes the calls of tests/fake_cupti/fake_memory_script.h, delivering each to
CUPTI's callback subscriber (the default path) and handing back CUDA 13's MEMORY2 and
MEMORY_POOL records (FLAGTRACE_CUPTI_MEMORY=records); either way the trace holds exactly the
expected [memory] instants, each on its runtime call's correlation and attributed to the
NVTX range open around it, and the per-device Memory counter."""
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, load, xs  # noqa: E402

flagtrace, driver = sys.argv[1], sys.argv[2]
results = Results()
signal.signal(signal.SIGINT, signal.SIG_DFL)

MIB = 1 << 20
DEV_A, POOL, HOST = 0x7F0000000000, 0x7E0000000000, 0x7D0000000000
POOL_B = POOL + 4 * MIB
# (call, device, op, kind, address, bytes, pool, stream or None for none); in recording order
WANT = [
    ("cudaMalloc", 0, "alloc", "device", DEV_A, MIB, 0, None),
    ("cudaMemPoolCreate", 0, "reserve", "device", POOL, 0, POOL, None),
    ("cudaMallocAsync", 0, "reserve", "device", POOL, 32 * MIB, POOL, 7),
    ("cudaMallocAsync", 0, "alloc", "device", POOL, 4 * MIB, POOL, 7),
    ("cudaMallocAsync", 0, "alloc", "device", POOL_B, 8 * MIB, POOL, 7),
    ("cudaFreeAsync", 0, "free", "device", POOL, 4 * MIB, POOL, 7),
    ("cudaFreeAsync", 0, "free", "device", POOL_B, 8 * MIB, POOL, 7),
    ("cudaMemPoolTrimTo", 0, "unreserve", "device", POOL, 32 * MIB, POOL, None),
    ("cudaFree", 0, "free", "device", DEV_A, MIB, 0, None),
    ("cudaMemPoolDestroy", 0, "unreserve", "device", POOL, 0, POOL, None),
    ("cudaHostAlloc", 1, "alloc", "pinned", HOST, 65536, 0, None),
]


def record(*args, env=None):
    return subprocess.run([flagtrace, "record", *args], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


def totals():
    """Each operation's device totals after it: an allocation outside a pool reserves
    what it allocates; a pool's bytes are reserved by its reserve/unreserve events."""
    alloc, reserved, out = {}, {}, []
    for call, dev, op, kind, addr, nbytes, pool, stream in WANT:
        a, r = alloc.get(dev, 0), reserved.get(dev, 0)
        if op in ("alloc", "free"):
            sign = 1 if op == "alloc" else -1
            a += sign * nbytes
            if not pool:
                r += sign * nbytes
        else:
            r += nbytes if op == "reserve" else -nbytes
        alloc[dev], reserved[dev] = a, r
        out.append((a, r))
    return out


def exact_instants(d, path_name):
    path = os.path.join(d, "t.json")
    r = record("-o", path, "--", driver, "memory", env={"FLAGTRACE_CUPTI_MEMORY": path_name})
    assert r.returncode == 0 and r.stdout == "inject_driver: memory done\n", r
    # a record naming no operation (INVALID) is dropped, counted; no call makes one
    dropped = 1 if path_name == "records" else 0
    assert re.search(rf"^flagtrace: wrote \S+ \(\d+ events, {dropped} dropped\)$", r.stderr, re.M), r.stderr
    doc = load(path)
    calls = {e["args"]["correlation"]: e["name"] for e in xs(doc, ("cuda_runtime",))}
    ranges = {e["name"]: e for e in xs(doc, ("user_annotation",))}
    ext = ranges["allocating"]["args"]["External id"]
    # in time order: from callbacks a pool's growth is found later than its allocation and timed just before it
    mem = sorted((e for e in doc["traceEvents"] if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    assert len(mem) == len(WANT), [e["args"] for e in mem]
    pid = os.getpid()
    for e, want, (total_alloc, total_reserved) in zip(mem, WANT, totals()):
        call, dev, op, kind, addr, nbytes, pool, stream = want
        a = e["args"]
        assert e["ph"] == "i" and e["cat"] == "cpu_instant_event" and e["s"] == "t", e
        assert e["pid"] != pid and isinstance(e["tid"], int), e
        assert calls[a["correlation"]] == call, (a, call)
        # host memory is written as torch writes CPU memory (docs/memory.md "What the trace holds")
        host = kind in ("pinned", "pageable")
        assert (a["Device Type"], a["Device Id"]) == ((0, -1) if host else (1, dev)), a
        assert a["Addr"] == addr and a["Op"] == op and a["Kind"] == kind, (a, want)
        signed = nbytes if op == "alloc" else -nbytes if op == "free" else 0
        assert a["Bytes"] == signed, (a, want)
        if op in ("reserve", "unreserve"):
            assert a["Pool Bytes"] == (nbytes if op == "reserve" else -nbytes), (a, want)
        assert a.get("Pool", 0) == pool, (a, want)
        if stream is not None:
            assert a["stream"] == stream, (a, want)
        assert a["External id"] == ext, (a, ext)
        if dev == 0:  # the pinned host allocation's totals are the writer's choice
            assert (a["Total Allocated"], a["Total Reserved"]) == (total_alloc, total_reserved), (a, want)
    counters = sorted((e for e in doc["traceEvents"] if e.get("ph") == "C" and e.get("name") == "Memory"),
                      key=lambda e: e["ts"])
    on0 = [c for c in counters if c["pid"] == 0]
    assert len(on0) == sum(1 for w in WANT if w[1] == 0), counters
    assert on0[-1]["args"] == {"Allocated": 0, "Reserved": 0}, on0[-1]
    assert max(c["args"]["Reserved"] for c in on0) == 33 * MIB


@results.tmp_case("record: the allocation calls, seen by CUPTI's callbacks, become exactly the expected [memory] "
                  "instants")
def _(d):
    exact_instants(d, "callbacks")


@results.tmp_case("record: CUPTI's memory records (FLAGTRACE_CUPTI_MEMORY=records) become exactly the same instants")
def _(d):
    exact_instants(d, "records")


@results.tmp_case("stats -r memory reads the recorded trace: the peaks and live bytes the flagtrace block states, "
                  "each peak under its call (correlation) and its range")
def _(d):
    import json
    path = os.path.join(d, "t.json")
    r = record("-o", path, "--", driver, "memory")
    assert r.returncode == 0, r
    block = load(path)["flagtrace"]["memory"]["devices"]
    s = subprocess.run([flagtrace, "stats", "-r", "memory", "-n", "0", "-f", "json", path], capture_output=True, text=True)
    assert s.returncode == 0, s.stderr
    rows = json.loads(s.stdout)["memory"]

    def row(dev, what):
        got = [x for x in rows if x["device"] == dev and x["what"] == what]
        assert len(got) == 1, (dev, what, rows)
        return got[0]
    for b in block:
        dev = "cpu" if b["device"] == -1 else f"cuda:{b['device']}"
        assert row(dev, "peak_allocated")["mem_bytes"] == b["peak_allocated"], (dev, b)
        assert row(dev, "peak_reserved")["mem_bytes"] == b["peak_reserved"], (dev, b)
        assert row(dev, "live_at_end")["mem_bytes"] == b["allocated_at_end"], (dev, b)
    p = row("cuda:0", "peak_allocated")
    assert (p["call"], p["op"]) == ("cudaMallocAsync", "allocating"), p
    live = [(x["mem_bytes"], x["call"]) for x in rows if x["what"] == "live"]
    assert live == [(65536, "cudaHostAlloc")], live


@results.tmp_case("record --memory=off: no [memory] instant, the calls still recorded")
def _(d):
    path = os.path.join(d, "t.json")
    r = record("--memory=off", "-o", path, "--", driver, "memory")
    assert r.returncode == 0, r
    doc = load(path)
    assert not [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    # the script's 11 calls: WANT's (one cudaMallocAsync made two events) and the record naming no operation
    assert [e["name"] for e in xs(doc, ("cuda_runtime",))] == [
        "cudaMalloc", "cudaMemPoolCreate", "cudaMallocAsync", "cudaMallocAsync", "cudaFreeAsync", "cudaFreeAsync",
        "cudaMemPoolTrimTo", "cudaFree", "cudaMemPoolDestroy", "cudaHostAlloc", "cudaMalloc"]


results.finish()
