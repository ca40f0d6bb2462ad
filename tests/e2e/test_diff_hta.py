"""flagtrace diff against HTA's TraceDiff on HTA's own trace_diff test traces: per-op
and per-kernel call counts and times, A and B. HTA counts only the events inside a
ProfilerStep (a GPU event by its launch's step); diff counts the whole trace, so both
read the traces cut to their steps (docs/diff.md). Needs HTA's source (FT_HTA_PATH)
and a python with pandas; skips (77) without them.

usage: test_diff_hta.py FLAGTRACE"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

hta = os.environ.get("FT_HTA_PATH", "")
DATA = os.path.join(hta, "tests", "data", "trace_diff")
if not os.path.isfile(os.path.join(hta, "hta", "trace_diff.py")) or not os.path.isdir(DATA):
    print("SKIPPED: diff vs HTA: set FT_HTA_PATH to HolisticTraceAnalysis's source")
    sys.exit(77)
python = next((p for p in (sys.executable, "/usr/bin/python3") if os.path.exists(p) and subprocess.run(
    [p, "-c", "import pandas, plotly"], capture_output=True).returncode == 0), None)
if not python:
    print("SKIPPED: diff vs HTA: no python with pandas and plotly")
    sys.exit(77)
FT = sys.argv[1]

HTA_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff
c = LabeledTrace("A", trace_dir=sys.argv[2])
t = LabeledTrace("B", trace_dir=sys.argv[3])
df = TraceDiff.compare_traces(c, t, control_iteration=c.iterations(), test_iteration=t.iterations(),
                              device_type=DeviceType.ALL)
out = {n: [r["A_counts"], r["B_counts"], r["A_total_duration"], r["B_total_duration"], r["diff_counts"],
           r["diff_duration"]] for n, r in df.iterrows()}
json.dump(out, sys.stdout)
"""


def in_steps(doc):
    """The trace as HTA's iterations see it: CPU events starting inside a step, GPU
    events whose launch (same correlation id) does; metadata kept."""
    ev = doc["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")]
    inside = lambda ts: any(lo <= ts < hi for lo, hi in steps)
    gpu = lambda e: e.get("args", {}).get("stream", -1) not in (-1, 0) and e.get("cat") != "cpu_op"
    launched = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in
                e.get("args", {}) and inside(e["ts"])}
    keep = [e for e in ev if e.get("ph") != "X" or (gpu(e) and e["args"].get("correlation") in launched) or
            (not gpu(e) and inside(e["ts"]))]
    return dict(doc, traceEvents=keep)


def self_nesting(doc):
    """Names of ops with a call of the same name inside them on their thread: torch's
    key_averages() (and diff, which counts as it does) folds such a lone child into
    its parent; HTA counts both."""
    by_tid = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            by_tid.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    names = set()
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and not (e["ts"] < stack[-1]["ts"] + stack[-1]["dur"] and
                                 e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"]):
                stack.pop()
            if stack and stack[-1]["name"] == e["name"]:
                names.add(e["name"])
            stack.append(e)
    return names


nesting = set()
with tempfile.TemporaryDirectory() as tmp:
    dirs = []
    for side in ("control", "test"):
        doc = json.load(gzip.open(os.path.join(DATA, side, side + ".json.gz"), "rt"))
        d = os.path.join(tmp, side)
        os.mkdir(d)
        with gzip.open(os.path.join(d, side + ".json.gz"), "wt") as f:
            cut = in_steps(doc)
            json.dump(cut, f)
        nesting |= self_nesting(cut)
        dirs.append(d)
    r = subprocess.run([python, "-c", HTA_SCRIPT, hta] + dirs, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = json.loads(r.stdout)
    r = subprocess.run([FT, "diff", "-q", "-n", "0", "-f", "json"] + dirs, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ours = json.loads(r.stdout)

# ours per name: ops (matched and one-sided) and kernels, copies and sets summed over their ops
mine = {}
for o in ours["ops"]:
    mine[o["name"]] = [o["calls_a"], o["calls_b"], o["cpu_a_us"], o["cpu_b_us"]]
for o in ours["unmatched"]:
    a = o["side"] == "A"
    mine[o["name"]] = [o["calls"] if a else 0, 0 if a else o["calls"], o["cpu_us"] if a else 0, 0 if a else o["cpu_us"]]
for o in ours["api"]:
    mine[o["name"]] = [o["calls_a"], o["calls_b"], o["a_us"], o["b_us"]]
for k in ours["kernels"]:
    if k["kernel"] == "(all kernels)":
        continue
    m = mine.setdefault(k["kernel"], [0, 0, 0.0, 0.0])
    m[0] += k["count_a"]
    m[1] += k["count_b"]
    m[2] += k["a_us"]
    m[3] += k["b_us"]

counts = times = 0
only_theirs, differ, folded = [], [], []
for name, (ca, cb, ta, tb, dc, dt) in theirs.items():
    if name.startswith("ProfilerStep#"):
        continue  # diff's steps: summary's steps and step_time
    if name not in mine:
        only_theirs.append(name)
        continue
    m = mine[name]
    if name in nesting and (m[0], m[1]) != (ca, cb):  # torch's folding of a lone child of one name
        folded.append(name)
        assert m[0] <= ca and m[1] <= cb, (name, (ca, cb), m)
        continue
    if (m[0], m[1]) == (ca, cb) and m[1] - m[0] == dc:
        counts += 1
    else:
        differ.append((name, "calls", (ca, cb), (m[0], m[1])))
    # HTA's durations are whole microseconds per event (it reads ts and dur as integers)
    if abs(m[2] - ta) <= max(1.0, ca) and abs(m[3] - tb) <= max(1.0, cb) and abs(m[3] - m[2] - dt) <= max(1.0, ca + cb):
        times += 1
    else:
        differ.append((name, "time", (ta, tb), (m[2], m[3])))
print(f"HTA TraceDiff: {len(theirs)} names; diff agrees on calls for {counts}, on time for {times}; "
      f"folded as torch folds them: {sorted(folded)}; HTA only: {only_theirs}; differ: {differ[:10]}")
assert not differ, differ
# the names HTA has and diff has not: HTA's placeholder for events without a name
assert set(only_theirs) <= {"INVALID"}, only_theirs
assert counts >= 400, counts
print("1 passed, 0 failed")
