"""End-to-end: `flagtrace stats -r ops,ops_shapes` counts as torch's key_averages() does
(Self CPU, CPU total, Self device, device total over the calls' nesting per thread),
on hand-made traces with answers worked out by hand and on the committed torch traces
against an independent computation here."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

flagtrace, data = sys.argv[1], sys.argv[2]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
results = Results()
case = results.case


def ops(path, report="ops"):
    r = subprocess.run([*WRAP, flagtrace, "stats", "-r", report, "-f", "json", "-n", "0", path],
                       capture_output=True, text=True)
    assert r.returncode == 0, r
    return json.loads(r.stdout)[report]


def write(d, events):
    p = os.path.join(d, "t.json")
    with open(p, "w") as f:
        json.dump({"traceEvents": events}, f)
    return p


def op(name, ts, dur, ext=None, tid=1, cat="cpu_op", dims=None):
    a = {} if ext is None else {"External id": ext}
    if dims is not None:
        a["Input Dims"] = dims
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": a}


def kern(ts, dur, ext, name="k"):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"External id": ext, "stream": 7, "correlation": 100 + ext}}


def by_name(rows, *cols):
    return {r["name"]: tuple(r[c] for c in cols) for r in rows}


COLS = ("self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us", "calls")


@case("ops: nesting gives Self CPU and device total as key_averages does")
def _():
    # thread 1: step [0, 100) > relu [10, 40) > clamp_min [12, 30) > launch [14, 16)
    #                      > mm [50, 90) > launch [52, 53); a kernel of clamp_min (4 us),
    # one of mm read before mm itself (6 us), one of step's own (1 us)
    ev = [kern(60, 6, 5), op("step", 0, 100, ext=1, cat="user_annotation"), op("relu", 10, 30, ext=2),
          op("clamp_min", 12, 18, ext=3), op("cudaLaunchKernel", 14, 2, ext=3, cat="cuda_runtime"),
          kern(20, 4, 3), op("mm", 50, 40, ext=5), op("cudaLaunchKernel", 52, 1, ext=5, cat="cuda_runtime"),
          kern(95, 1, 1)]
    with tempfile.TemporaryDirectory() as d:
        got = by_name(ops(write(d, ev)), *COLS)
    assert got == {"step": (30, 100, 1, 11, 1), "relu": (12, 30, 0, 4, 1), "clamp_min": (16, 18, 4, 4, 1),
                   "mm": (39, 40, 6, 6, 1)}, got


@case("ops: a call that starts at its neighbour's end, or outlasts it, is not its child; threads apart")
def _():
    ev = [op("a", 0, 10, ext=1), op("b", 10, 5, ext=2),  # b starts where a ends: a sibling
          op("c", 20, 10, ext=3), op("d", 25, 10, ext=4),  # d outlasts c: not its child
          op("e", 0, 50, ext=5, tid=2), op("f", 1, 2, ext=6, tid=2),  # another thread: f is e's child only
          op("g", 30, 5, ext=7, tid="worker"), kern(40, 3, 6)]  # a named thread
    with tempfile.TemporaryDirectory() as d:
        got = by_name(ops(write(d, ev)), "self_cpu_us", "cpu_total_us", "device_total_us")
    assert got == {"a": (10, 10, 0), "b": (5, 5, 0), "c": (10, 10, 0), "d": (10, 10, 0), "e": (48, 50, 3),
                   "f": (2, 2, 3), "g": (5, 5, 0)}, got


@case("ops: a child that ends with its parent is nested (torch: end > parent's end pops)")
def _():
    ev = [op("p", 0, 10, ext=1), op("q", 5, 5, ext=2), kern(20, 2, 2)]
    with tempfile.TemporaryDirectory() as d:
        got = by_name(ops(write(d, ev)), *COLS)
    assert got == {"p": (5, 10, 0, 2, 1), "q": (5, 5, 2, 2, 1)}, got


@case("ops_shapes: grouped by name and Input Dims, as str() of the list; totals add up to ops")
def _():
    ev = [op("mm", 0, 10, ext=1, dims=[[16, 1024], [1024, 1024]]), op("mm", 20, 4, ext=2, dims=[[8, 2], [2, 2]]),
          op("mm", 30, 6, ext=3, dims=[[16, 1024], [1024, 1024]]), op("fill", 40, 1, ext=4, dims=[[3], [], ["x"]]),
          kern(50, 2, 1), kern(60, 3, 3)]
    with tempfile.TemporaryDirectory() as d:
        p = write(d, ev)
        got = {(r["name"], r["input_dims"]): (r["cpu_total_us"], r["calls"], r["self_device_us"])
               for r in ops(p, "ops_shapes")}
        total = by_name(ops(p), "cpu_total_us", "calls", "self_device_us")
    assert got == {("mm", "[[16, 1024], [1024, 1024]]"): (16, 2, 5), ("mm", "[[8, 2], [2, 2]]"): (4, 1, 0),
                   ("fill", "[[3], [], ['x']]"): (1, 1, 0)}, got
    assert total == {"mm": (20, 3, 5), "fill": (1, 1, 0)}, total


@case("ops: a lone child of its parent's name folds into it (torch's _remove_dup_nodes), its work in place of the parent's")
def _():
    # sort [0, 100) > sort [10, 90) > launch [20, 21); the outer sort's own kernel (ext 1) is
    # lost as torch loses it, the inner's (ext 2) becomes the outer's
    ev = [op("aten::sort", 0, 100, ext=1), op("aten::sort", 10, 80, ext=2),
          op("cudaLaunchKernel", 20, 1, ext=2, cat="cuda_runtime"), kern(30, 5, 2), kern(40, 7, 1),
          op("mm", 200, 10, ext=3), op("mm", 201, 2, ext=4), op("mm", 204, 2, ext=5)]  # two children: kept
    with tempfile.TemporaryDirectory() as d:
        got = by_name(ops(write(d, ev)), *COLS)
    assert got == {"aten::sort": (99, 100, 5, 5, 1), "mm": (10, 14, 0, 0, 3), "(no op)": (0, 0, 7, 7, 0)}, got


@case("ops: kineto's overhead events are rows and children of the op they ran in, on the earliest op's thread")
def _():
    ev = [op("later", 300, 10, ext=9, tid=3), op("aten::normal_", 0, 100, ext=1, tid=561), kern(200, 2, 1),
          {"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0, "ts": 10, "dur": 60}]
    with tempfile.TemporaryDirectory() as d:
        got = by_name(ops(write(d, ev)), *COLS)
    assert got == {"aten::normal_": (40, 100, 2, 2, 1), "Activity Buffer Request": (60, 60, 0, 0, 1),
                   "later": (10, 10, 0, 0, 1)}, got


@case("ops: the events' order in the file changes nothing (shuffled, reversed)")
def _():
    import random
    doc = json.load(gzip.open(os.path.join(data, "torch_cuda_2.11_reference.json.gz"), "rt"))
    with tempfile.TemporaryDirectory() as d:
        want = ops(write(d, doc["traceEvents"]), "ops_shapes")
        for how in ("shuffled", "reversed"):
            ev = list(doc["traceEvents"])
            random.Random(7).shuffle(ev) if how == "shuffled" else ev.reverse()
            assert ops(write(d, ev), "ops_shapes") == want, how


def module(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "python_function", "name": "nn.Module: " + name, "pid": 1, "tid": tid, "ts": ts,
            "dur": dur, "args": {}}


@case("ops_modules: each op under the innermost nn.Module around it on its thread; (no module) else")
def _():
    ev = [module("Sequential_0", 0, 100), module("Linear_0", 5, 40), op("aten::linear", 10, 30, ext=1),
          op("aten::addmm", 12, 20, ext=2), kern(60, 3, 2), module("ReLU_0", 50, 20), op("aten::relu", 55, 10, ext=3),
          op("aten::softmax", 120, 5, ext=4), op("aten::relu", 60, 4, ext=5, tid=2),  # another thread: no module
          {"ph": "X", "cat": "python_function", "name": "model.py(7): forward", "pid": 1, "tid": 1, "ts": 1, "dur": 99}]
    with tempfile.TemporaryDirectory() as d:
        p = write(d, ev)
        got = {(r["module"], r["name"]): (r["cpu_total_us"], r["self_cpu_us"], r["device_total_us"], r["calls"])
               for r in ops(p, "ops_modules")}
        plain = by_name(ops(p), "cpu_total_us", "calls")
    assert got == {("Linear_0", "aten::linear"): (30, 10, 3, 1), ("Linear_0", "aten::addmm"): (20, 20, 3, 1),
                   ("ReLU_0", "aten::relu"): (10, 10, 0, 1), ("(no module)", "aten::relu"): (4, 4, 0, 1),
                   ("(no module)", "aten::softmax"): (5, 5, 0, 1)}, got
    assert plain == {"aten::linear": (30, 1), "aten::addmm": (20, 1), "aten::relu": (14, 2),
                     "aten::softmax": (5, 1)}, plain  # modules change nothing else


@case("ops_modules: torch_with_modules.json.gz (with_stack, with_modules): modules by hand, totals equal ops'")
def _():
    path = os.path.join(data, "torch_with_modules.json.gz")
    rows = ops(path, "ops_modules")
    mods = {(r["module"], r["name"]) for r in rows}
    # the model is Sequential(Linear, ReLU, Linear): each addmm in its Linear, clamp_min in ReLU_0,
    # softmax and sum (called in step()) in none; Sequential_0 is never the innermost
    assert {("Linear_0", "aten::addmm"), ("Linear_1", "aten::addmm"), ("ReLU_0", "aten::clamp_min"),
            ("(no module)", "aten::softmax"), ("(no module)", "aten::sum")} <= mods, mods
    assert not any(m == "Sequential_0" for m, _ in mods), mods
    total = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in rows:
        for i, c in enumerate(COLS):
            total[r["name"]][i] += r[c]
    want = {r["name"]: [r[c] for c in COLS] for r in ops(path) if r["name"] != "(no op)"}
    for name, w in want.items():
        assert [round(x, 3) for x in total[name]] == [round(x, 3) for x in w], (name, total[name], w)


@case("rows of one name and equal totals keep one order: by kind (api), by Input Dims text (ops_shapes)")
def _():
    ev = [op("mm", 0, 5, ext=1, dims=[[9]]), op("mm", 10, 5, ext=2, dims=[[10]]), op("mm", 20, 5, ext=3, dims=[[1]]),
          op("cuLaunch", 30, 2, cat="cuda_driver"), op("cuLaunch", 40, 2, cat="cuda_runtime")]
    with tempfile.TemporaryDirectory() as d:
        p = write(d, ev)
        assert [r["input_dims"] for r in ops(p, "ops_shapes")] == ["[[10]]", "[[1]]", "[[9]]"]
        assert [r["kind"] for r in ops(p, "api")] == ["runtime", "driver"]


def key_averages(path):
    """key_averages()'s columns from the trace's JSON, computed here with no shared code:
    per thread, calls by (start, -end), each the child of the innermost open call it fits in."""
    doc = json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))
    dev = defaultdict(int)
    calls = []
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        ts, end = round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000)
        cat, a = e.get("cat", ""), e.get("args", {})
        if cat in ("kernel", "gpu_memcpy", "gpu_memset") and "External id" in a:
            dev[a["External id"]] += end - ts
        elif cat in ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "overhead"):
            calls.append([e.get("tid"), ts, end, e["name"], a.get("External id"),
                          cat in ("cpu_op", "user_annotation", "overhead"), cat == "overhead"])
    first = min((c for c in calls if c[5] and not c[6]), key=lambda c: c[1], default=[None])[0]
    for c in calls:
        if c[6]:
            c[0], c[4] = first, None  # the profiling thread's; no device work of its own
    calls.sort(key=lambda c: (str(c[0]), c[1], -c[2]))
    kids = defaultdict(list)
    stack, prev = [], None
    for i, c in enumerate(calls):
        if c[0] != prev:
            stack, prev = [], c[0]
        while stack and (c[1] >= calls[stack[-1]][2] or c[2] > calls[stack[-1]][2]):
            stack.pop()
        if stack:
            kids[stack[-1]].append(i)
        stack.append(i)
    own = [dev.get(c[4], 0) if c[5] else 0 for c in calls]
    # a lone child of its parent's name is dropped, its children and work lifted
    parent = {k: i for i, ks in kids.items() for k in ks}
    gone = set()
    for i in range(len(calls)):
        p = parent.get(i)
        if p is not None and calls[p][3] == calls[i][3] and kids[p] == [i]:
            gone.add(i)
            kids[p], own[p] = kids[i], own[i]
            for k in kids[i]:
                parent[k] = p
    total = {}

    def dev_total(i):
        if i not in total:
            total[i] = own[i] + sum(dev_total(k) for k in kids[i])
        return total[i]

    out = defaultdict(lambda: [0, 0, 0, 0, 0])
    for i, c in enumerate(calls):
        if not c[5] or i in gone:
            continue
        row = out[c[3]]
        row[0] += c[2] - c[1] - sum(calls[k][2] - calls[k][1] for k in kids[i])
        row[1] += c[2] - c[1]
        row[2] += own[i]
        row[3] += dev_total(i)
        row[4] += 1
    return out


for name in ("torch_cuda_2.11_reference.json.gz", "workload_h200.json.gz"):
    @case(f"ops: {name}: every column equals an independent key_averages computation")
    def _(name=name):
        want = key_averages(os.path.join(data, name))
        got = {r["name"]: r for r in ops(os.path.join(data, name))}
        got.pop("(no op)", None)
        assert set(got) == set(want), (set(got) ^ set(want))
        for n, w in want.items():
            g = got[n]
            have = [round(g[c] * 1000) for c in COLS[:4]] + [g["calls"]]
            assert have == w, (n, have, w)

sys.exit(results.finish())
