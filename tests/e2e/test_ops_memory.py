"""End-to-end: `flagtrace stats -r ops` memory columns equal torch's key_averages() (a call's memory:
the [memory] events in its [start, end] on any thread; self: that less its children's; the events
in no call make a "[memory]" row), on a hand-made trace with answers worked out by hand, and
against an independent implementation of torch's rules on a real torch trace when one is at hand."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

flagtrace = sys.argv[1]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
results = Results()
case = results.case


def stats(path, report="ops"):
    r = subprocess.run([*WRAP, flagtrace, "stats", "-r", report, "-f", "json", "-n", "0", path],
                       capture_output=True, text=True)
    assert r.returncode == 0, r
    return json.loads(r.stdout)[report]


def write(d, events, name="t.json"):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        json.dump({"traceEvents": events}, f)
    return p


def op(name, ts, dur, tid=1, cat="cpu_op"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def mem(ts, nbytes, tid=1, dtype=1):
    # torch's own keys (profile_memory=True): no Op, Kind or correlation
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts,
            "args": {"Device Type": dtype, "Device Id": 0 if dtype else -1, "Addr": 4096 + ts, "Bytes": nbytes,
                     "Total Allocated": 0, "Total Reserved": 0, "Ev Idx": 0}}


MEMCOLS = ("device_mem_bytes", "self_device_mem_bytes", "cpu_mem_bytes", "self_cpu_mem_bytes", "calls")


def by_name(rows, cols=MEMCOLS):
    return {r["name"]: tuple(r.get(c) for c in cols) for r in rows}


# thread 1: step [0, 1000] > linear [100, 400] > empty [110, 130], addmm [150, 350];
#           add [500, 600]; to [700, 800] > to [710, 790] (folded: torch's dup node) > _to_copy [720, 780]
# thread 2: mul [600, 700], starting where add ends: the event at 600 is in both (both ends count)
EVENTS = [op("ProfilerStep#1", 0, 1000, cat="user_annotation"), op("aten::linear", 100, 300),
          op("aten::empty", 110, 20), op("aten::addmm", 150, 200), op("aten::add", 500, 100),
          op("aten::mul", 600, 100, tid=2), op("aten::to", 700, 100), op("aten::to", 710, 80),
          op("aten::_to_copy", 720, 60),
          mem(50, 10), mem(120, 1000), mem(200, 4000), mem(350, 8, dtype=0), mem(380, -1000), mem(550, 2000),
          mem(600, 500, tid=2), mem(705, 64), mem(715, 128), mem(750, 256), mem(1500, 300)]


@case("ops memory: totals by interval, self less the children's, as key_averages() counts them")
def _():
    with tempfile.TemporaryDirectory() as d:
        got = by_name(stats(write(d, EVENTS)))
    want = {
        "aten::empty": (1000, 1000, 0, 0, 1),
        "aten::addmm": (4000, 4000, 8, 8, 1),           # the CPU event at its end is its own
        "aten::linear": (4000, -1000, 8, 0, 1),          # its free, less its children's allocations
        "aten::add": (2500, 2500, 0, 0, 1),              # 600 on thread 2 falls in its [500, 600] too
        "aten::mul": (500, 500, 0, 0, 1),
        "aten::to": (448, 192, 0, 0, 1),                 # the inner to folded: its 128 is the outer's self
        "aten::_to_copy": (256, 256, 0, 0, 1),
        "[memory]": (300, 300, 0, 0, 1),                 # in no call's interval
    }
    for k, v in want.items():
        assert got.get(k) == v, (k, got.get(k), v)
    step = [v for k, v in got.items() if k.startswith("ProfilerStep")]
    assert step == [(6958, 10, 8, 0, 1)], step


@case("ops memory: the columns are named as torch names them, and absent without [memory] events")
def _():
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([*WRAP, flagtrace, "stats", "-r", "ops", "-n", "0", "--width", "400", write(d, EVENTS)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r
        for t in ("CPU Mem", "Self CPU Mem", "CUDA Mem", "Self CUDA Mem"):
            assert t in r.stdout, (t, r.stdout)
        pu1 = [e for e in EVENTS if e["name"] != "[memory]"] + [mem(120, 1000, dtype=20)]
        rows = stats(write(d, pu1, "pu1.json"))
        assert by_name(rows)["aten::empty"] == (1000, 1000, None, None, 1), rows  # no CPU memory: no CPU columns
        r = subprocess.run([*WRAP, flagtrace, "stats", "-r", "ops", "-n", "0", "--width", "400",
                            os.path.join(d, "pu1.json")], capture_output=True, text=True)
        assert "Self Device Mem" in r.stdout and "CUDA Mem" not in r.stdout, r.stdout
        rows = stats(write(d, [e for e in EVENTS if e["name"] != "[memory]"], "none.json"))
        assert all("self_device_mem_bytes" not in x and "cpu_mem_bytes" not in x for x in rows), rows[0]


@case("ops memory: torch's bounds in doubles: an epoch clock's event at a call's very start or end is outside it")
def _():
    # key_averages() compares with float(ns / 1000) * 1000: at 1.7e18 ns the start 1669783687464181181 becomes
    # ...181248 and the end ...187500 becomes ...187392, so the events at exactly those ns are the parent's
    t0 = "1669783687464"
    lines = [f'{{"ph": "X", "cat": "user_annotation", "name": "outer", "pid": 1, "tid": 1, "ts": {t0}180.000, '
             f'"dur": 10.000, "args": {{}}}}',
             f'{{"ph": "X", "cat": "cpu_op", "name": "aten::edge", "pid": 1, "tid": 1, "ts": {t0}181.181, '
             f'"dur": 6.319, "args": {{}}}}']
    for ts, b in (("181.181", 1), ("184.300", 20), ("187.500", 300)):
        lines.append(f'{{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, '
                     f'"ts": {t0}{ts}, "args": {{"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": {b}, '
                     f'"Total Allocated": 0, "Total Reserved": 0}}}}')
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "epoch.json")
        with open(p, "w") as f:
            f.write('{"traceEvents": [' + ",\n".join(lines) + "]}")
        got = by_name(stats(p))
    assert got["aten::edge"] == (20, 20, None, None, 1), got
    assert got["outer"] == (321, 301, None, None, 1), got


@case("ops memory: hostile Bytes (2^63 - 1 twice, 1 - 2^63) wrap as two's complement, never a crash")
def _():
    ev = [op("aten::a", 0, 100), op("aten::b", 10, 10),
          mem(15, 2 ** 63 - 1), mem(16, 2 ** 63 - 1), mem(50, 1 - 2 ** 63), mem(200, 2 ** 63 - 1)]
    with tempfile.TemporaryDirectory() as d:
        p = write(d, ev)
        got = by_name(stats(p))
        wrap = lambda v: (v + 2 ** 63) % 2 ** 64 - 2 ** 63  # noqa: E731
        assert got["aten::b"][:2] == (wrap(2 ** 64 - 2), wrap(2 ** 64 - 2)), got
        assert got["aten::a"][:2] == (wrap(2 ** 63 - 1), wrap(2 ** 63 - 1 + 2)), got
        assert got["[memory]"][:2] == (2 ** 63 - 1, 2 ** 63 - 1), got
        for cmd in (["advise", "-f", "json"], ["stats", "-r", "ops,ops_shapes", "--engine=model"]):
            r = subprocess.run([*WRAP, flagtrace, *cmd, p], capture_output=True, text=True)
            assert r.returncode == 0, (cmd, r)


@case("ops memory: --engine=model and a --partial merged again give the columns of the streaming read")
def _():
    with tempfile.TemporaryDirectory() as d:
        t = write(d, EVENTS)
        want = stats(t)
        r = subprocess.run([*WRAP, flagtrace, "stats", "--engine=model", "-r", "ops", "-f", "json", "-n", "0", t],
                           capture_output=True, text=True)
        assert r.returncode == 0 and json.loads(r.stdout)["ops"] == want, r
        p = os.path.join(d, "p.json")
        r = subprocess.run([*WRAP, flagtrace, "stats", "--partial", "-o", p, t], capture_output=True, text=True)
        assert r.returncode == 0, r
        r = subprocess.run([*WRAP, flagtrace, "stats", "--merge", "-r", "ops", "-f", "json", "-n", "0", p],
                           capture_output=True, text=True)
        assert r.returncode == 0, r
        assert json.loads(r.stdout)["ops"] == want, (json.loads(r.stdout)["ops"], want)


# ---- torch's rules, written out again (torch/autograd/profiler.py _parse_kineto_results and
# profiler_util.py EventList._populate_cpu_children / _remove_dup_nodes), for a real trace ----

CPU_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver"}


def torch_rules(events):
    mems = sorted(((round(e["ts"] * 1000), e["args"]) for e in events  # ns: HTA's trace has whole us
                   if e.get("name") == "[memory]" and e.get("ph") == "i"), key=lambda m: m[0])
    import bisect
    ts = [m[0] for m in mems]
    calls = [e for e in events if e.get("ph") == "X" and e.get("cat") in CPU_CATS]
    # a runtime call sits on its op's thread (torch: f_evt.thread = fe.thread): our traces put it there too
    per = []
    for c in calls:
        # torch: in_interval(start_ns / 1000, end_ns / 1000), bisecting the events' ns with those times 1000
        s_ns, e_ns = round(c["ts"] * 1000), round(c["ts"] * 1000) + round(c["dur"] * 1000)
        lo, hi = bisect.bisect_left(ts, s_ns / 1000 * 1000), bisect.bisect_right(ts, e_ns / 1000 * 1000)
        dev = sum(a["Bytes"] for _, a in mems[lo:hi] if a["Device Type"] in (1, 6, 20))
        cpu = sum(a["Bytes"] for _, a in mems[lo:hi] if a["Device Type"] in (0, 2, 5))
        per.append({"name": c["name"], "tid": c["tid"], "s": c["ts"], "e": c["ts"] + c["dur"], "dev": dev,
                    "cpu": cpu, "ch": [], "parent": None, "rt": c["cat"] in ("cuda_runtime", "cuda_driver")})
    by_tid = defaultdict(list)
    for p in per:
        by_tid[p["tid"]].append(p)
    for evs in by_tid.values():
        evs.sort(key=lambda p: (p["s"], -p["e"]))
        stack = []
        for p in evs:
            while stack:
                q = stack[-1]
                if p["s"] >= q["e"] or p["e"] > q["e"]:
                    stack.pop()
                else:
                    q["ch"].append(p)
                    p["parent"] = q
                    break
            stack.append(p)
    while True:
        gone = [p for p in per if p["parent"] is not None and p["parent"]["name"] == p["name"]
                and len(p["parent"]["ch"]) == 1]
        if not gone:
            break
        ids = set(map(id, gone))
        for p in gone:
            p["parent"]["ch"] = p["ch"]
            for c in p["ch"]:
                c["parent"] = p["parent"]
        per = [p for p in per if id(p) not in ids]
    rows = defaultdict(lambda: [0, 0, 0, 0, 0])
    for p in per:
        if p["rt"]:
            continue
        r = rows[p["name"]]
        r[0] += p["dev"]
        r[1] += p["dev"] - sum(c["dev"] for c in p["ch"])
        r[2] += p["cpu"]
        r[3] += p["cpu"] - sum(c["cpu"] for c in p["ch"])
        r[4] += 1
    return {k: tuple(v) for k, v in rows.items()}


HTA = "/work/hta/tests/data/df_index_resolver/df_index_resolver.json.gz"


@case("ops memory: a real torch trace (HTA's, V100) equals torch's rules written out again")
def _():
    if not os.path.exists(HTA):
        print("  (skipped: no HTA trace here)")
        return
    with gzip.open(HTA, "rt") as f:
        events = json.load(f)["traceEvents"]
    want = torch_rules(events)
    got = by_name(stats(HTA))
    got = {k: tuple(x or 0 for x in v) for k, v in got.items()}  # a column not shown: no such memory
    bad = [(k, got.get(k), v) for k, v in want.items() if got.get(k, (0, 0, 0, 0, 0))[:4] != v[:4]]
    assert not bad, bad[:10]


sys.exit(results.finish())
