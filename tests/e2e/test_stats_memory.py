"""End-to-end: `flagtrace stats -r memory` (issue 51) on hand-made traces whose peaks, live bytes,
ops and calls are worked out by hand: torch's [memory] instants (its seven keys) and ours (the
kineto keys, then Op, Kind, correlation, External id, Pool Bytes); hostile values counted in
the skipped row; both engines alike; parse workers alike; --partial/--merge equal to one read;
and, when FT_HTA_PATH names HolisticTraceAnalysis's source, its df_index_resolver trace
(torch-written, 28 010 [memory] events): each device's peaks equal the largest "Total
Allocated"/"Total Reserved" in the file, computed here with python's json."""
import gzip
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, Skip  # noqa: E402

flagtrace = sys.argv[1]
DATA = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
results = Results()
case, tmp_case = results.case, results.tmp_case


def x(name, cat, ts, dur, tid, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def mem(ts, tid, addr, nbytes, total=None, reserved=None, dev=0, dtype=1, **ours):
    args = {"Device Type": dtype, "Device Id": dev, "Addr": addr, "Bytes": nbytes}
    if total is not None:
        args["Total Allocated"] = total
    if reserved is not None:
        args["Total Reserved"] = reserved
    args.update(ours)
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts,
            "args": args}


# torch's: a step with two ops on thread 10; totals given by each event
TORCH = {"traceEvents": [
    x("ProfilerStep#0", "user_annotation", 0, 1000, 10),
    x("aten::empty", "cpu_op", 100, 100, 10),
    x("aten::mm", "cpu_op", 300, 200, 10),
    mem(120, 10, 77, 8, 8, 0, dev=-1, dtype=0),
    mem(130, 10, 77, -8, 0, 0, dev=-1, dtype=0),
    mem(150, 10, 0x7f0000001000, 1000, 1000, 2097152),
    mem(350, 10, 0x7f0000002000, 4000, 5000, 2097152),
    mem(360, 10, 0x7f0000001000, -1000, 4000, 2097152),
    mem(400, 10, 0x7f0000003000, 500, 4500, 2097152),
    mem(600, 10, 0x7f0000009000, -700, 3800, 2097152),  # a free of an allocation before the window
]}

# ours: no totals (running sums), a reserve, the call by correlation id, the op by External id;
# and hostile ones: an alloc of negative bytes, Bytes as a string, Addr null, no ts
OURS = {"traceEvents": [
    x("my_op", "cpu_op", 50, 200, 20, **{"External id": 3}),
    x("cudaMalloc", "cuda_runtime", 100, 10, 20, correlation=7, **{"External id": 3}),
    mem(106, 99, 4096, 0, Op="reserve", Kind="device", correlation=7, **{"Pool Bytes": 2097152}),
    mem(107, 99, 4096, 1024, Op="alloc", Kind="device", correlation=7, stream=7),
    mem(300, 99, 8192, 2048, Op="alloc", Kind="device", correlation=8, **{"External id": 3}),
    mem(400, 99, 4096, -1024, Op="free", Kind="device"),
    mem(410, 99, 1, -5, Op="alloc"),
    mem(420, 99, "12", 5),
    mem(430, 99, None, 5),
    {k: v for k, v in mem(440, 99, 2, 5).items() if k != "ts"},
]}


def write(d, name, doc):
    p = os.path.join(d, name)
    with gzip.open(p, "wt") as f:
        json.dump(doc, f)
    return p


def stats(*args, env=None):
    r = subprocess.run([*WRAP, flagtrace, "stats", *args], capture_output=True, env=env)
    assert r.returncode == 0, (args, r.stderr.decode()[-2000:])
    return r.stdout.decode()


def rows(*args, env=None):
    return json.loads(stats("-r", "memory", "-n", "0", "-f", "json", *args, env=env))["memory"]


def pick(rs, device, what):
    got = [r for r in rs if r["device"] == device and r["what"] == what]
    assert len(got) == 1, (device, what, rs)
    return got[0]


@tmp_case("torch's [memory] events: peaks with their time, step and op; allocations, frees, live bytes")
def _(d):
    rs = rows(write(d, "t.json.gz", TORCH))
    p = pick(rs, "cuda:0", "peak_allocated")
    assert (p["mem_bytes"], p["ts_us"], p["step"], p["op"], p["call"]) == (5000, 350.0, 0, "aten::mm", ""), p
    p = pick(rs, "cuda:0", "peak_reserved")
    assert (p["mem_bytes"], p["ts_us"], p["step"], p["op"]) == (2097152, 150.0, 0, "aten::empty"), p
    a = pick(rs, "cuda:0", "allocations")
    assert (a["count"], a["mem_bytes"], a["min_bytes"], a["median_bytes"], a["max_bytes"]) == (3, 5500, 500, 1000, 4000), a
    f = pick(rs, "cuda:0", "frees")
    assert (f["count"], f["mem_bytes"], f["min_bytes"], f["max_bytes"]) == (2, 1700, 700, 1000), f
    live = pick(rs, "cuda:0", "live_at_end")
    assert (live["count"], live["mem_bytes"]) == (2, 4500), live
    each = [(r["mem_bytes"], r["ts_us"], r["op"]) for r in rs if r["what"] == "live"]
    assert each == [(4000, 350.0, "aten::mm"), (500, 400.0, "aten::mm")], each
    cpu = pick(rs, "cpu", "peak_allocated")
    assert (cpu["mem_bytes"], cpu["ts_us"], cpu["op"]) == (8, 120.0, "aten::empty"), cpu
    assert pick(rs, "cpu", "live_at_end")["count"] == 0
    sk = [r for r in rs if r["what"] == "skipped"]
    assert len(sk) == 1 and sk[0]["count"] == 1 and "1 frees of no live allocation" in sk[0]["op"], sk
    # -n limits the live rows per device, largest first
    limited = json.loads(stats("-r", "memory", "-n", "1", "-f", "json", os.path.join(d, "t.json.gz")))["memory"]
    assert [r["mem_bytes"] for r in limited if r["what"] == "live"] == [4000], limited


@tmp_case("ours: running sums without totals, reserve by Pool Bytes, call by correlation, op by External id; "
          "hostile values in the skipped row")
def _(d):
    rs = rows(write(d, "o.json.gz", OURS))
    p = pick(rs, "cuda:0", "peak_allocated")  # first_ns: my_op's start, 50 us
    assert (p["mem_bytes"], p["ts_us"], p["step"], p["op"], p["call"]) == (3072, 250.0, None, "my_op", ""), p
    p = pick(rs, "cuda:0", "peak_reserved")
    assert (p["mem_bytes"], p["ts_us"], p["op"], p["call"]) == (2097152, 56.0, "my_op", "cudaMalloc"), p
    assert (pick(rs, "cuda:0", "allocations")["count"], pick(rs, "cuda:0", "allocations")["mem_bytes"]) == (2, 3072)
    assert (pick(rs, "cuda:0", "frees")["count"], pick(rs, "cuda:0", "frees")["mem_bytes"]) == (1, 1024)
    assert (pick(rs, "cuda:0", "live_at_end")["count"], pick(rs, "cuda:0", "live_at_end")["mem_bytes"]) == (1, 2048)
    each = [(r["mem_bytes"], r["op"], r["call"]) for r in rs if r["what"] == "live"]
    assert each == [(2048, "my_op", "")], each
    sk = [r for r in rs if r["what"] == "skipped"]
    assert len(sk) == 1 and sk[0]["count"] == 4, sk
    assert sk[0]["op"].startswith("3 bad fields, 1 bad signs, 0 frees"), sk


@tmp_case("a table: one row per measure, the skipped line; the default reports do not read memory")
def _(d):
    p = write(d, "t.json.gz", TORCH)
    table = stats("-r", "memory", p)
    assert "== device memory ([memory] events)" in table and "peak_allocated" in table, table
    assert "memory" not in json.loads(stats("-f", "json", p)), "memory is asked for only"
    # issue 51's rename: the copies and sets by time are memops; mem is no report, and says where it went
    assert "memops" in json.loads(stats("-f", "json", p)) and "memops" in json.loads(stats("-r", "memops", "-f", "json", p))
    r = subprocess.run([*WRAP, flagtrace, "stats", "-r", "kernels,mem", p], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r
    assert "no report named 'mem' (device memory is -r memory now; copies and sets by time are -r memops)" in r.stderr, \
        r.stderr
    r = subprocess.run([*WRAP, flagtrace, "stats", "-r", "kernels", p], capture_output=True, text=True)
    assert "flagtrace stats: 7 [memory] events (device memory): -r memory summarizes them\n" in r.stderr, r.stderr
    r = subprocess.run([*WRAP, flagtrace, "stats", "-r", "kernels,memory", p], capture_output=True, text=True)
    assert "[memory] events" not in r.stderr, r.stderr
    csv = stats("-r", "memory", "-f", "csv", p).splitlines()
    assert csv[0] == "rank,device,what,mem_bytes,count,min_bytes,median_bytes,max_bytes,ts_us,step,call,op", csv[0]
    assert '0,"cuda:0","allocations",5500,3,500,1000,4000,,,"",""' in csv, csv  # no value: empty
    a = pick(json.loads(stats("-r", "memory", "-f", "json", p))["memory"], "cuda:0", "allocations")
    assert (a["ts_us"], a["step"], a["op"]) == (None, None, ""), a  # no value: null (text: "")


@tmp_case("both engines (stream, event model) print the same memory report")
def _(d):
    for name, doc in (("t.json.gz", TORCH), ("o.json.gz", OURS)):
        p = write(d, name, doc)
        outs = [stats(f"--engine={e}", "-r", "memory,ops,api", "-n", "0", "-f", "json", p) for e in ("stream", "model")]
        assert outs[0] == outs[1], name


@tmp_case("parse workers: a large trace read by 3 workers equals one thread, peak as computed here")
def _(d):
    rnd = random.Random(51)
    ev, live, total, peak = [x("ProfilerStep#3", "user_annotation", 0, 10 ** 7, 10)], {}, 0, 0
    for i in range(30000):
        ts = 10 + i * 100
        if live and (rnd.random() < 0.45 or len(live) > 500):
            addr = rnd.choice(sorted(live))
            size = live.pop(addr)
            total -= size
            ev.append(mem(ts, 10, addr, -size, total, 1 << 30))
        else:
            addr, size = 0x1000 * (i + 1), rnd.randrange(1, 1 << 20)
            live[addr] = size
            total += size
            ev.append(mem(ts, 10, addr, size, total, 1 << 30))
        peak = max(peak, total)
    p = write(d, "big.json.gz", {"traceEvents": ev})
    one = stats("-r", "memory", "-n", "0", "-f", "json", p, env={**os.environ, "FLAGTRACE_STATS_THREADS": "0"})
    three = stats("-r", "memory", "-n", "0", "-f", "json", p, env={**os.environ, "FLAGTRACE_STATS_THREADS": "3"})
    assert one == three
    rs = json.loads(one)["memory"]
    assert pick(rs, "cuda:0", "peak_allocated")["mem_bytes"] == peak
    assert pick(rs, "cuda:0", "peak_allocated")["step"] == 3
    live_row = pick(rs, "cuda:0", "live_at_end")
    assert (live_row["count"], live_row["mem_bytes"]) == (len(live), sum(live.values())), live_row
    assert [r["mem_bytes"] for r in rs if r["what"] == "live"] == sorted(live.values(), reverse=True)


@tmp_case("--partial of each file, then --merge: the memory report of one read of both, per rank")
def _(d):
    t = write(d, "t.json.gz", {**TORCH, "distributedInfo": {"rank": 0}})
    o = write(d, "o.json.gz", {**OURS, "distributedInfo": {"rank": 1}})
    for src, part in ((t, "t.part"), (o, "o.part")):
        stats("--partial", "-o", os.path.join(d, part), src)
    merged = rows("--merge", os.path.join(d, "t.part"), os.path.join(d, "o.part"))
    assert merged == rows(t, o), (merged, rows(t, o))
    assert sorted({r["rank"] for r in merged}) == [0, 1]
    both = os.path.join(d, "both.part")
    stats("--partial", "-o", both, t, o)
    assert rows("--merge", both) == merged


@tmp_case("a partial's memory that does not add up is refused in one line, naming what")
def _(d):
    part = os.path.join(d, "o.part")
    stats("--partial", "-o", part, write(d, "o.json.gz", OURS))
    doc = json.load(open(part))
    bad = [
        (lambda m: m.update(counts=[1, 2, 3]), "a memory record of other than 6 values"),
        (lambda m: m["devs"][0]["dev"].__setitem__(0, -5), "a memory device id is not in [-1, 2^31)"),
        (lambda m: m["devs"][0]["peak_alloc"].__setitem__(4, 99999), "a string index past the strings table"),
        (lambda m: m["devs"][0].update(live=[[1, 2, 3, 4, 0, 0]] * 5), "more live allocations listed than are live"),
        (lambda m: m["devs"][0]["peak_alloc"].__setitem__(3, -1), "a negative address"),
        (lambda m: m.pop("devs"), "a file's memory without its counts and devices"),
        (lambda m: m["devs"][0]["peak_alloc"].__setitem__(2, -3), "a step below -1"),
    ]
    for change, why in bad:
        x = json.loads(json.dumps(doc))
        change(x["files"][0]["mem"])
        p = os.path.join(d, "bad.part")
        with open(p, "w") as f:
            json.dump(x, f)
        r = subprocess.run([*WRAP, flagtrace, "stats", "--merge", "-r", "memory", p], capture_output=True, text=True)
        assert r.returncode == 2 and why in r.stderr and r.stderr.count("\n") == 1, (why, r.stderr)


@case("torch_memory_h100 (torch 2.11, H100, profile_memory=True): peaks equal torch.cuda.max_memory_allocated() "
      "and max_memory_reserved() over the window; live bytes and unmatched frees as python counts them")
def _():
    path = os.path.join(DATA, "torch_memory_h100.json.gz")
    with open(os.path.join(DATA, "torch_memory_h100_peaks.json")) as f:
        torch_peaks = json.load(f)
    with gzip.open(path, "rt") as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]" and e.get("ph") == "i"]
    live, unmatched, allocs = {}, 0, 0
    for e in sorted(ev, key=lambda e: e["ts"]):  # the order stats reads them in: the file's, by time here
        a = e["args"]
        if a["Bytes"] > 0:
            live[a["Addr"]] = a["Bytes"]
            allocs += 1
        elif a["Addr"] in live:
            del live[a["Addr"]]
        else:
            unmatched += 1
    rs = rows(path)
    p = pick(rs, "cuda:0", "peak_allocated")
    assert p["mem_bytes"] == torch_peaks["max_memory_allocated"] == max(e["args"]["Total Allocated"] for e in ev), p
    r = pick(rs, "cuda:0", "peak_reserved")
    assert r["mem_bytes"] == torch_peaks["max_memory_reserved"] == max(e["args"]["Total Reserved"] for e in ev), r
    assert p["step"] in (0, 1, 2) and p["op"].startswith("aten::"), p
    assert pick(rs, "cuda:0", "allocations")["count"] == allocs
    end = pick(rs, "cuda:0", "live_at_end")
    assert (end["count"], end["mem_bytes"]) == (len(live), sum(live.values())), (end, live)
    assert [r["count"] for r in rs if r["what"] == "skipped"] == [unmatched], unmatched
    assert rows("--engine=model", path) == rs


@case("HTA's df_index_resolver trace (torch-written): peaks equal the largest totals in the file")
def _():
    hta = os.environ.get("FT_HTA_PATH", "")
    path = os.path.join(hta, "tests", "data", "df_index_resolver", "df_index_resolver.json.gz")
    if not hta or not os.path.isfile(path):
        raise Skip("set FT_HTA_PATH to HolisticTraceAnalysis's source")
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    peaks = {}
    for e in doc["traceEvents"]:
        if e.get("name") == "[memory]" and e.get("ph") == "i":
            a = e["args"]
            key = "cpu" if a["Device Type"] == 0 else f"cuda:{a['Device Id']}"
            pa, pr = peaks.get(key, (0, 0))
            peaks[key] = (max(pa, a["Total Allocated"]), max(pr, a["Total Reserved"]))
    assert len(peaks) == 2, peaks
    rs = rows(path)
    for dev, (pa, pr) in peaks.items():
        assert pick(rs, dev, "peak_allocated")["mem_bytes"] == pa, (dev, pa)
        assert pick(rs, dev, "peak_reserved")["mem_bytes"] == pr, (dev, pr)
    assert rows("--engine=model", path) == rs


results.finish()
