"""End-to-end: `flagtrace diff` compares device memory when either side has [memory] events: each
device's peak allocated and reserved, and each op's self device memory (key_averages' Self CUDA
Mem), in the table and in -f json; no memory report when neither side has any."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

flagtrace = sys.argv[1]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
results = Results()
case = results.case


def op(name, ts, dur):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}


def mem(ts, nbytes, addr, alloc, res, dev=0):
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {"Device Type": 1, "Device Id": dev, "Addr": addr, "Bytes": nbytes, "Total Allocated": alloc,
                     "Total Reserved": res}}


def side(d, name, scale, memory=True):
    # aten::empty allocates 1000 * scale on device 0 and frees it in aten::add; aten::add's own 500
    ev = [op("aten::empty", 0, 10), op("aten::add", 20, 10), op("aten::mul", 40, 10)]
    if memory:
        ev += [mem(5, 1000 * scale, 64, 1000 * scale, 2097152 * scale),
               mem(25, 500, 128, 1000 * scale + 500, 2097152 * scale),
               mem(26, -1000 * scale, 64, 500, 2097152 * scale)]
    p = os.path.join(d, name)
    with open(p, "w") as f:
        json.dump({"traceEvents": ev}, f)
    return p


def diff(a, b, fmt="json"):
    r = subprocess.run([*WRAP, flagtrace, "diff", "-f", fmt, a, b], capture_output=True, text=True)
    assert r.returncode == 0, r
    return json.loads(r.stdout) if fmt == "json" else r.stdout


@case("diff: peaks per device and each op's self device memory, A vs B")
def _():
    with tempfile.TemporaryDirectory() as d:
        out = diff(side(d, "a.json", 1), side(d, "b.json", 3))
        rows = {(r["what"], r["device"], r["name"]): (r["a_bytes"], r["b_bytes"], r["delta_bytes"])
                for r in out["memory"]}
        assert rows == {
            ("peak allocated", "cuda:0", ""): (1500, 3500, 2000),
            ("peak reserved", "cuda:0", ""): (2097152, 6291456, 4194304),
            ("op self memory", "", "aten::empty"): (1000, 3000, 2000),
            ("op self memory", "", "aten::add"): (-500, -2500, -2000),
        }, rows
        ratio = {r["name"]: r["ratio"] for r in out["memory"] if r["name"]}
        assert ratio["aten::empty"] == 3.0, ratio
        names = [r["name"] for r in out["memory"] if r["what"] == "op self memory"]
        assert names == ["aten::empty", "aten::add"], names  # the largest growth first
        text = diff(os.path.join(d, "a.json"), os.path.join(d, "b.json"), "table")
        assert "== device memory, A vs B: peaks per device" in text and "peak reserved" in text, text


@case("diff: one side with memory is compared against zeros; neither: no memory report")
def _():
    with tempfile.TemporaryDirectory() as d:
        out = diff(side(d, "a.json", 1, memory=False), side(d, "b.json", 1))
        peak = [r for r in out["memory"] if r["what"] == "peak allocated"]
        assert [(r["a_bytes"], r["b_bytes"]) for r in peak] == [(0, 1500)], peak
        out = diff(side(d, "a.json", 1, memory=False), side(d, "b.json", 1, memory=False))
        assert "memory" not in out, list(out)
        text = diff(os.path.join(d, "a.json"), os.path.join(d, "b.json"), "table")
        assert "device memory" not in text, text


sys.exit(results.finish())
