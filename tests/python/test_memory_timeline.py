"""flagtrace.analysis.get_memory(): a trace's memory timeline (issue 51) as rows and as a DataFrame,
fed by `flagtrace columns` like get_trace(), on a hand-made trace with known rows (ours with a
correlation id and torch's own keys); the rows' op_index/call_index point into get_trace()'s frame.
Usage: test_memory_timeline.py PYTHON_DIR FLAGTRACE_EXE"""
import json
import os
import subprocess
import sys
import tempfile

python_dir, cli = (os.path.abspath(a) for a in sys.argv[1:3])


def has(python, mod):
    return subprocess.run([python, "-c", f"import {mod}"], capture_output=True).returncode == 0


# numpy/pandas may be the system python's only (Debian's python3-pandas), as test_analysis.py finds them
if not has(sys.executable, "numpy") and os.path.exists("/usr/bin/python3") and has("/usr/bin/python3", "numpy") \
        and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
    os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__), *sys.argv[1:]])
if not has(sys.executable, "numpy"):
    print("skipped: no numpy")
    sys.exit(77)

sys.path.insert(0, python_dir)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402
from flagtrace import analysis  # noqa: E402

results = Results()
case = results.case


def x(cat, name, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def mem(ts, **args):
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": args}


EVENTS = [
    x("user_annotation", "ProfilerStep#1", 0, 1000),
    x("cpu_op", "aten::empty", 100, 100, **{"External id": 1}),
    x("cuda_runtime", "cudaMalloc", 110, 40, **{"External id": 1, "correlation": 5}),
    # ours: the call's correlation id, the op's External id, our keys after torch's
    mem(120, **{"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": 1024, "Total Allocated": 1024,
                "Total Reserved": 2097152, "correlation": 5, "External id": 1, "stream": 7, "Kind": "device",
                "Op": "alloc"}),
    # torch's own: its seven keys and Ev Idx
    mem(500, **{"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": -1024, "Total Allocated": 0,
                "Total Reserved": 2097152, "Ev Idx": 1}),
    mem(600, **{"Device Type": 0, "Device Id": -1, "Addr": 8192, "Bytes": 64, "Total Allocated": 64,
                "Total Reserved": 0, "Ev Idx": 2}),
]
WANT = [
    {"ts": 120000, "device": 0, "device_type": 1, "bytes": 1024, "addr": 4096, "total_allocated": 1024,
     "total_reserved": 2097152, "op": "aten::empty", "call": "cudaMalloc", "step": 1},
    {"ts": 500000, "device": 0, "device_type": 1, "bytes": -1024, "addr": 4096, "total_allocated": 0,
     "total_reserved": 2097152, "op": "ProfilerStep#1", "call": None, "step": 1},
    {"ts": 600000, "device": -1, "device_type": 0, "bytes": 64, "addr": 8192, "total_allocated": 64,
     "total_reserved": 0, "op": "ProfilerStep#1", "call": None, "step": 1},
]

tmp = tempfile.mkdtemp()
TRACE = os.path.join(tmp, "t.json")
with open(TRACE, "w") as f:
    json.dump({"traceEvents": EVENTS}, f)


@case("rows: one per operation in time order, op and call named, the step's number")
def _():
    rows = analysis.get_memory(TRACE, frame=False, exe=cli)
    assert [{k: r[k] for k in WANT[0]} for r in rows] == WANT, rows
    assert all(set(r) == set(analysis.MEMORY_COLUMNS) for r in rows), rows[0]
    assert all(type(v) in (int, str, type(None)) for r in rows for v in r.values()), rows


@case("pandas: a DataFrame of the same rows; op_index/call_index are get_trace()'s rows")
def _():
    if not has(sys.executable, "pandas"):
        print("  (skipped: no pandas)")
        return
    df = analysis.get_memory(TRACE, exe=cli)
    assert list(df.columns) == list(analysis.MEMORY_COLUMNS), list(df.columns)
    assert str(df["op"].dtype) == "category" and str(df["ts"].dtype) == "int64", df.dtypes
    rows = analysis.get_memory(TRACE, frame=False, exe=cli)
    for i, r in enumerate(rows):
        for k, v in r.items():
            got = df[k].iloc[i]
            assert (v is None and got != got) or got == v, (i, k, got, v)  # None: NaN in a categorical
    t = analysis.get_trace(TRACE, exe=cli)
    assert t["name"].iloc[df["op_index"].iloc[0]] == "aten::empty"
    assert t["name"].iloc[df["call_index"].iloc[0]] == "cudaMalloc"
    assert df.attrs["file"] == TRACE


@case("a trace without memory: no rows")
def _():
    p = os.path.join(tmp, "none.json")
    with open(p, "w") as f:
        json.dump({"traceEvents": EVENTS[:3]}, f)
    assert analysis.get_memory(p, frame=False, exe=cli) == []


sys.exit(results.finish())
