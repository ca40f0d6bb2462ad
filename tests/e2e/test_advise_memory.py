"""End-to-end: `flagtrace advise -f json`'s memory findings (issue 51) on a hand-made torch-shaped trace:
alloc-call's cost per step, fragmentation's and leak's bytes and where, read through the event model's
memory rows; and none on the same trace without the leak, the cudaMalloc calls and the excess reserve."""
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
MIB, GIB = 1 << 20, 1 << 30


def x(cat, name, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def kern(ts, dur):
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"stream": 7, "device": 0}}


def mem(ts, nbytes, addr, alloc, res):
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {"Device Type": 1, "Device Id": 0, "Addr": addr, "Bytes": nbytes, "Total Allocated": alloc,
                     "Total Reserved": res}}


def trace(d, dirty):
    """5 steps of 1000 us, the device busy throughout; with dirty: aten::cat keeps 8 MiB a step,
    cudaMalloc (50 us) under aten::empty in every step, 4 GiB reserved for 1 GiB allocated."""
    ev, live = [], 512 * MIB
    res = 4 * GIB if dirty else 768 * MIB
    ev.append(mem(1, 512 * MIB, 1, live, res))
    for s in range(5):
        t = s * 1000
        ev += [x("user_annotation", f"ProfilerStep#{s + 1}", t, 1000), kern(t, 1000),
               x("cpu_op", "aten::mm", t + 100, 100), x("cpu_op", "aten::cat", t + 300, 100),
               x("cpu_op", "aten::empty", t + 500, 100)]
        ev += [mem(t + 110, 64 * MIB, 2, live + 64 * MIB, res), mem(t + 150, -64 * MIB, 2, live, res)]
        if dirty:
            live += 8 * MIB
            ev += [mem(t + 310, 8 * MIB, 100 + s, live, res), x("cuda_runtime", "cudaMalloc", t + 510, 50)]
    p = os.path.join(d, "dirty.json" if dirty else "clean.json")
    with open(p, "w") as f:
        json.dump({"traceEvents": ev}, f)
    return p


def advise(path):
    r = subprocess.run([*WRAP, flagtrace, "advise", "-f", "json", "-n", "0", path], capture_output=True, text=True)
    assert r.returncode == 0, r
    return json.loads(r.stdout)["findings"]


@case("advise: alloc-call, fragmentation and leak with their costs and sizes")
def _():
    with tempfile.TemporaryDirectory() as d:
        got = {f["rule"]: f for f in advise(trace(d, True))}
    assert set(got) == {"alloc-call", "fragmentation", "leak"}, list(got)
    a = got["alloc-call"]
    assert (a["where"], a["cost_us"], a["count"]) == ("aten::empty", 40.0, 4), a  # 4 steady steps x 50 us / 5
    f = got["fragmentation"]
    assert (f["where"], f["bytes"], f["cost_us"]) == ("device 0", 4 * GIB - (576 * MIB + 32 * MIB), 0.0), f
    lk = got["leak"]
    assert (lk["where"], lk["bytes"], lk["count"]) == ("aten::cat", 8 * MIB, 4), lk
    assert "grows 8.00 MiB a step over 4 steps; 32.00 MiB still live from aten::cat" in lk["what"], lk


@case("advise: none of them on the clean trace")
def _():
    with tempfile.TemporaryDirectory() as d:
        got = [f["rule"] for f in advise(trace(d, False))]
    assert not {"alloc-call", "fragmentation", "leak"} & set(got), got


sys.exit(results.finish())
