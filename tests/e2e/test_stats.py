"""End-to-end: `flagtrace stats` on committed traces (ours and torch.profiler's),
compared with totals computed here independently; and its errors on bad input."""
import csv
import gzip
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, on_pty  # noqa: E402

flagtrace, data = sys.argv[1], sys.argv[2]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()  # e.g. valgrind (scripts/valgrind.sh)
# default: the committed traces; the GPU check passes fresh ones (torch.profiler's too)
# committed traces some cases need whatever folder is checked (the GPU check passes its own)
REPO_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
TRACES = sys.argv[3:] or ["torch_cuda_2.11_reference.json.gz", "workload_h200.json.gz", "sample_h200.json.gz"]
results = Results()
case = results.case


def stats(*args):
    return subprocess.run([*WRAP, flagtrace, "stats", *args], capture_output=True, text=True)


def union_length(intervals):
    """The length of the union of (start, end) pairs."""
    xs = sorted(intervals)
    total, lo, hi = 0, xs[0][0], xs[0][1]
    for a, b in xs[1:]:
        if a > hi:
            total, lo, hi = total + hi - lo, a, b
        else:
            hi = max(hi, b)
    return total + hi - lo


def expected(path):
    """The summaries, computed from the parsed JSON with no shared code."""
    doc = json.load(gzip.open(path, "rt"))
    kern = defaultdict(list)
    api = defaultdict(list)
    mem = defaultdict(lambda: [0, 0, 0])
    ext_dev = defaultdict(int)
    ext_name = {}
    op_calls = defaultdict(int)
    op_spans = defaultdict(list)
    intervals = defaultdict(list)
    lo, hi = None, None
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        # integer ns: torch's ts (~5e12 µs) leaves floats no room for sums
        ts, dur = round(e["ts"] * 1000), max(round(e.get("dur", 0) * 1000), 0)
        lo = ts if lo is None else min(lo, ts)
        hi = ts + dur if hi is None else max(hi, ts + dur)
        cat, args = e.get("cat"), e.get("args", {})
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            if cat == "kernel":
                kern[e["name"]].append(dur)
            else:
                m = mem[e["name"]]
                m[0] += 1
                m[1] += args.get("bytes", 0)
                m[2] += dur
            if "External id" in args:
                ext_dev[args["External id"]] += dur
            intervals[e["pid"]].append((ts, ts + dur))
        elif cat in ("cuda_runtime", "cuda_driver", "privateuse1_runtime"):
            api[e["name"]].append(dur)
        elif cat in ("cpu_op", "user_annotation"):
            op_calls[e["name"]] += 1
            op_spans[(e["name"], e.get("tid"))].append((ts, ts + dur))
            if "External id" in args:
                ext_name[args["External id"]] = e["name"]
    ops = defaultdict(float)
    for ext, t in ext_dev.items():
        if ext in ext_name:
            ops[ext_name[ext]] += t / 1000
    # an op called inside a call of its own name may be folded into it as torch folds
    # it (test_stats_ops.py checks those): its self device time and calls are not
    # this plain sum's
    for (name, _), spans in op_spans.items():
        if any(a <= c and d <= b and (a, b) != (c, d) for a, b in spans for c, d in spans):
            ops.pop(name, None)
    busy = {dev: union_length(iv) / 1000 for dev, iv in intervals.items()}
    us = lambda d: {k: [x / 1000 for x in v] for k, v in d.items()}  # noqa: E731
    mem = {k: [c, b, t / 1000] for k, (c, b, t) in mem.items()}
    return us(kern), us(api), mem, ops, op_calls, busy, (hi - lo) / 1000


def close(a, b, what):
    assert abs(a - b) <= 0.002 + 1e-9 * abs(b), f"{what}: flagtrace {a}, expected {b}"


for name in TRACES:
    path = os.path.join(data, name)

    @case(f"stats --format json matches independent totals: {name}")
    def _():
        r = stats("--format", "json", path)
        assert r.returncode == 0, r
        got = json.loads(r.stdout)
        kern, api, mem, ops, op_calls, busy, span = expected(path)
        assert {k["name"] for k in got["kernels"]} == set(kern)
        total_kernel = sum(sum(v) for v in kern.values())
        for k in got["kernels"]:
            d = kern[k["name"]]
            assert k["calls"] == len(d), k
            close(k["total_us"], sum(d), k["name"])
            close(k["min_us"], min(d), k["name"])
            close(k["max_us"], max(d), k["name"])
            # exact up to 256 values, then within 0.4 % (README)
            med = statistics.median(d)
            assert abs(k["median_us"] - med) <= (0.0011 if len(d) <= 256 else 0.004 * med + 0.001), (k, med)
            close(k["stddev_us"], statistics.stdev(d) if len(d) > 1 else 0, k["name"])
            assert abs(k["time_pct"] - 100 * sum(d) / total_kernel) < 0.01
        assert got["kernels"] == sorted(got["kernels"], key=lambda k: -k["total_us"])
        assert {a["name"] for a in got["api"]} == set(api)
        for a in got["api"]:
            assert a["calls"] == len(api[a["name"]])
            close(a["total_us"], sum(api[a["name"]]), a["name"])
        for m in got["memops"]:
            count, nbytes, t = mem[m["name"]]
            assert m["calls"] == count, m
            close(m["total_us"], t, m["name"])
        assert {m["name"]: (m["calls"], m["total_bytes"]) for m in got["memsize"]} == {
            k: (c, b) for k, (c, b, t) in mem.items()}
        got_ops = {o["name"]: o for o in got["ops"]}
        for op, t in ops.items():
            close(got_ops[op]["self_device_us"], t, op)
            assert got_ops[op]["calls"] == op_calls[op]
        assert {g["device"] for g in got["gpu"]} == set(busy) and {g["rank"] for g in got["gpu"]} == {got["files"][0]["rank"]}
        for g in got["gpu"]:
            close(g["busy_us"], busy[g["device"]], "busy")
            close(g["span_us"], span, "span")


@case("stats: table and csv carry the same sections")
def _():
    path = os.path.join(data, TRACES[0])
    r = stats(path)
    assert r.returncode == 0, r
    titles = [line for line in r.stdout.splitlines() if line.startswith("== ")]
    assert titles == ["== GPU kernels ==", "== runtime and driver API ==",
                      "== memory operations by time (copies and sets) ==", "== memory operations by size ==",
                      "== user ranges (CPU time) ==", "== user ranges projected on the GPU ==",
                      "== ops and ranges as key_averages() shows them ==",
                      "== ops by input shapes (key_averages(group_by_input_shape=True)) ==",
                      "== GPU busy per rank and device ==",
                      "== ranks: kernel, communication and compute time =="], titles
    r = stats("--format=csv", "--report", "kernels,gpu", path)
    assert r.returncode == 0, r
    blocks = [b for b in r.stdout.split("\n\n") if b.strip()]
    assert [b.splitlines()[0] for b in blocks] == ["# files", "# kernels", "# gpu"], blocks
    rows = list(csv.DictReader(io.StringIO("\n".join(blocks[1].splitlines()[1:]))))
    assert rows and list(rows[0]) == ["time_pct", "total_us", "calls", "avg_us", "median_us", "min_us", "max_us",
                                      "stddev_us", "name"]


@case("stats: several files are summarized together")
def _():
    p = os.path.join(data, TRACES[0])
    with tempfile.TemporaryDirectory() as d:
        q = os.path.join(d, "copy.json.gz")  # the same bytes in another file: two ranks
        with open(p, "rb") as a, open(q, "wb") as b:
            b.write(a.read())
        one = json.loads(stats("--format", "json", p).stdout)
        two = json.loads(stats("--format", "json", p, q).stdout)
    assert two["events"] == 2 * one["events"]
    assert [k["calls"] for k in two["kernels"]] == [2 * k["calls"] for k in one["kernels"]]


@case("stats: bad input gets one line (file, problem, byte offset) and status 2")
def _():
    with tempfile.TemporaryDirectory() as d:
        good = gzip.open(os.path.join(data, TRACES[0])).read()
        files = {
            "empty.json": (b"", "empty file"),
            "truncated.json": (good[: len(good) // 2], "truncated JSON"),
            "garbage.json": (bytes(range(256)) * 4, "binary data, not a trace"),  # issue 52: what it looks like
            "notrace.json": (b'{"schemaVersion": 1}', "no \"traceEvents\" array"),
            "notarray.json": (b'{"traceEvents": 5}', "\"traceEvents\" is not an array at byte"),
            "badjson.json": (b'{"traceEvents": [{"ph": "X",}]}', "at byte"),
            "truncated.json.gz": (gzip.compress(good)[:-200], "truncated gzip"),
            "corrupt.json.gz": (None, "corrupt gzip"),
        }
        z = bytearray(gzip.compress(good))
        for i in range(40, 80):
            z[i] ^= 0x5A
        files["corrupt.json.gz"] = (bytes(z), "")
        for fname, (content, text) in files.items():
            p = os.path.join(d, fname)
            with open(p, "wb") as f:
                f.write(content)
            r = stats(p)
            assert r.returncode == 2, (fname, r)
            assert r.stderr.startswith(f"flagtrace stats: {p}: ") and r.stderr.count("\n") == 1, (fname, r.stderr)
            assert text in r.stderr, (fname, r.stderr)
        r = stats(os.path.join(d, "missing.json"))
        assert r.returncode == 2 and "cannot open" in r.stderr, r
    for args, text in ((["--format", "xml", "x"], "--format takes"), (["--report", "kernels,bogus", "x"],
                                                                     "--report: no report named 'bogus'; it takes"),
                       ([], "no trace file"), (["--bogus"], "unknown option")):
        r = stats(*args)
        assert r.returncode == 2 and text in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


# ---- hardening (issue 14): edge cases of the input, the output and the numbers ----

def write(d, name, content):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode())
    return p


def kernel(ts, dur, pid=0, name="k", cat="kernel", **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": 7, "args": args}


def trace(events):
    return json.dumps({"traceEvents": events})


@case("stats: error byte offsets point at the offending byte (0-based)")
def _():
    with tempfile.TemporaryDirectory() as d:
        # (a text that does not start as JSON does says what it looks like instead: test_not_traces.py)
        for text, at in (('{"traceEvents": [}', 17), ('{"traceEvents": 5}', 16),
                         ('{"traceEvents": [{"ph": "X",}]}', 28), ('{"traceEvents": [] x', 19),
                         ('{"traceEvents":[],"traceEvents":[]}', 18)):
            r = stats(write(d, "t.json", text))
            assert r.returncode == 2 and r.stderr.endswith(f" at byte {at}\n"), (text, r.stderr)
            assert text[at] in "}x5,\"", text  # the byte named is the bad one


@case("stats: nesting deeper than 10000 levels is refused in one line at its byte, without a crash")
def _():
    with tempfile.TemporaryDirectory() as d:
        # '{' is level 1, the 9999 '[' after "traceEvents": fill it to 10000; the next is byte 16 + 9999
        r = stats(write(d, "t.json", '{"traceEvents": ' + "[" * 100000))
        assert r.returncode == 2 and r.stderr.endswith(": nesting deeper than 10000 levels at byte 10015\n"), r.stderr
        r = stats(write(d, "t.json", '{"traceEvents": [' + "[" * 9998 + "]" * 9999 + "}"))
        assert r.returncode == 0 and "0 trace entries from 1 file" in r.stderr + r.stdout, (r.returncode, r.stderr[-300:])


@case("stats: a duplicated traceEvents key is refused, not summed")
def _():
    with tempfile.TemporaryDirectory() as d:
        r = stats(write(d, "t.json", '{"traceEvents":[%s],"traceEvents":[%s]}' % (
            json.dumps(kernel(1, 2)), json.dumps(kernel(1, 2)))))
        assert r.returncode == 2 and 'duplicate "traceEvents" key at byte' in r.stderr, r.stderr


@case("stats: gzip with trailing garbage is refused; concatenated members are read")
def _():
    with tempfile.TemporaryDirectory() as d:
        z = gzip.compress(trace([kernel(1, 2)]).encode())
        r = stats(write(d, "t.json.gz", z + b"garbage"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r
        assert f"trailing garbage after the gzip data at compressed byte {len(z)}" in r.stderr, r.stderr
        text = trace([kernel(1, 2)] * 3).encode()
        r = stats("-f", "json", write(d, "two.json.gz", gzip.compress(text[:20]) + gzip.compress(text[20:])))
        assert r.returncode == 0, r
        assert json.loads(r.stdout)["kernels"][0]["calls"] == 3


@case("stats: the array form may end without its ']' (Trace Event Format)")
def _():
    with tempfile.TemporaryDirectory() as d:
        body = "[" + ",".join(json.dumps(kernel(i * 10, 2)) for i in range(4))
        for text in (body, body + ",", body + ",\n  "):
            r = stats("-f", "json", write(d, "t.json", text))
            assert r.returncode == 0, (text[-5:], r.stderr)
            got = json.loads(r.stdout)
            assert (got["events"], got["kernels"][0]["calls"]) == (4, 4), got
        r = stats(write(d, "t.json", body + ', {"ph": "X", "ts"'))  # cut inside an event: still an error
        assert r.returncode == 2 and "truncated JSON" in r.stderr, r.stderr


@case("stats: ts/dur that are not numbers are counted once as skipped, never read as 0")
def _():
    with tempfile.TemporaryDirectory() as d:
        ev = [kernel(1, 2), kernel("5", 2), kernel(5, "2"), kernel(None, 2), {"ph": "X", "cat": "kernel", "name": "k"},
              kernel(7, [1]), {"ph": "i", "ts": "9", "name": "instant"}]
        r = stats("-f", "json", write(d, "t.json", trace(ev)))
        assert r.returncode == 0, r
        assert r.stderr == "flagtrace stats: 5 events skipped: 5 with ts missing or ts/dur not a number\n", r.stderr
        got = json.loads(r.stdout)
        assert got["skipped_events"] == 5 and got["kernels"][0]["calls"] == 1, got


@case("stats: extreme times are skipped and counted, in-range extremes are exact (no overflow)")
def _():
    with tempfile.TemporaryDirectory() as d:
        ev = [kernel(9223372036854779, 1), kernel(9e15, 9e15), kernel(-9e15, 1), kernel(1, 9e15),
              kernel(-4e15, 1, pid=1), kernel(4e15, 4e15, pid=1)]
        r = stats("-f", "json", write(d, "t.json", trace(ev)))
        assert r.returncode == 0, r
        assert r.stderr == "flagtrace stats: 4 events skipped: 4 with ts or dur beyond +-4e+15 us\n", r.stderr
        got = json.loads(r.stdout)
        assert [(g["device"], g["busy_us"], g["span_us"]) for g in got["gpu"]] == [(1, 4e15 + 1, 12e15)], got["gpu"]


@case("stats: more than 256 devices are all reported")
def _():
    with tempfile.TemporaryDirectory() as d:
        r = stats("-f", "json", "-r", "gpu", write(d, "t.json", trace([kernel(10, 2, pid=p) for p in range(300)])))
        assert r.returncode == 0, r
        assert [g["device"] for g in json.loads(r.stdout)["gpu"]] == list(range(300))


@case("stats: options may follow the files; after -- everything is a file")
def _():
    with tempfile.TemporaryDirectory() as d:
        p, q = write(d, "t.json", trace([kernel(1, 2)])), write(d, "u.json", trace([kernel(1, 2)]))
        r = stats(p, "--format", "json", q, "-r", "kernels")
        assert r.returncode == 0, r
        got = json.loads(r.stdout)
        assert [f["file"] for f in got["files"]] == [p, q], got
        assert list(got) == ["schema", "files", "events", "skipped_events", "unknown_categories", "kernels"], got
        r = stats(p, "--", "--format")
        assert r.returncode == 2 and r.stderr == "flagtrace stats: --format: cannot open: No such file or directory\n", r


@case("stats: older kineto spellings and MTIA categories are read")
def _():
    with tempfile.TemporaryDirectory() as d:
        ev = [{"ph": "X", "cat": "Operator", "name": "aten::mm", "ts": 0, "dur": 50, "args": {"external id": 3}},
              kernel(1, 2, cat="Kernel", name="gemm", **{"external id": 3}),
              kernel(4, 3, cat="mtia_ccp_events", name="mtia_k", **{"external id": 3}),
              kernel(8, 1, cat="Memcpy", name="Memcpy HtoD", bytes=1000),
              kernel(10, 1, cat="Memset", name="Memset", bytes=10),
              {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "ts": 0, "dur": 1},
              {"ph": "X", "cat": "mtia_runtime", "name": "mtiaLaunch", "ts": 2, "dur": 1}]
        r = stats("-f", "json", write(d, "t.json", trace(ev)))
        assert r.returncode == 0 and not r.stderr, r
        got = json.loads(r.stdout)
        assert {k["name"]: k["total_us"] for k in got["kernels"]} == {"gemm": 2, "mtia_k": 3}
        assert {m["name"]: (m["kind"], m["total_bytes"]) for m in got["memsize"]} == {
            "Memcpy HtoD": ("memcpy", 1000), "Memset": ("memset", 10)}
        assert {a["name"] for a in got["api"]} == {"cudaLaunchKernel", "mtiaLaunch"}
        assert {o["name"]: o["self_device_us"] for o in got["ops"]} == {"aten::mm": 5, "(no op)": 2}


@case("stats: a failed write is one line and status 1 (/dev/full, closed stdout)")
def _():
    p = os.path.join(data, TRACES[0])
    with open("/dev/full", "w") as full:
        r = subprocess.run([*WRAP, flagtrace, "stats", p], stdout=full, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 1 and r.stderr == "flagtrace: cannot write the output: No space left on device\n", r
    r = subprocess.run([*WRAP, flagtrace, "stats", p], stderr=subprocess.PIPE, text=True,
                       preexec_fn=lambda: os.close(1))
    assert r.returncode == 1 and r.stderr == "flagtrace: cannot write the output: Bad file descriptor\n", r
    r = subprocess.run([*WRAP, flagtrace, "--version"], stderr=subprocess.PIPE, text=True,
                       preexec_fn=lambda: os.close(1))
    assert r.returncode == 1 and r.stderr.startswith("flagtrace: cannot write the output"), r


def peak_kb(path, *args, command="stats", env=None):
    """Peak RSS of one `stats` run, in its own child (RUSAGE_CHILDREN is a max over children)."""
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL, check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(subprocess.run([sys.executable, "-c", code, flagtrace, command, *args, path], capture_output=True,
                              text=True, check=True, env=env).stdout)


def rss_means_nothing():
    ldd = subprocess.run(["ldd", flagtrace], capture_output=True, text=True).stdout
    return bool(WRAP) or "libasan" in ldd or "libtsan" in ldd


@case("stats: memory per device event is at most 16 B (busy intervals that never merge)")
def _():
    ldd = subprocess.run(["ldd", flagtrace], capture_output=True, text=True).stdout
    if WRAP or "libasan" in ldd or "libtsan" in ldd:
        return  # under valgrind or a sanitizer RSS means nothing
    with tempfile.TemporaryDirectory() as d:
        def make(n):  # kernels with gaps between them: no interval ever merges
            body = ",".join('{"ph":"X","cat":"kernel","name":"k","ts":%d,"dur":1,"pid":0}' % (3 * i)
                            for i in range(n))
            return write(d, f"t{n}.json", '{"traceEvents":[' + body + "]}")
        small, big = make(50000), make(650000)
        per_event = (peak_kb(big) - peak_kb(small)) * 1024 / 600000
        assert per_event <= 16, f"{per_event:.1f} B per device event"


@case("stats: busy % is the exact union for shuffled, overlapping and > 4.3 s device work")
def _():
    import random
    rnd = random.Random(14)
    ev, iv = [], defaultdict(list)
    for i in range(30000):
        dev = rnd.randrange(3)
        ts = rnd.randrange(0, 10 ** 9)  # ns
        dur = rnd.choice([rnd.randrange(0, 5000), rnd.randrange(0, 10 ** 6), 5 * 10 ** 9 + rnd.randrange(10 ** 6)])
        if i % 3:  # mostly in time order, as real traces are
            ts = i * 30000 + rnd.randrange(1000)
        ev.append('{"ph":"X","cat":"kernel","name":"k","ts":%d.%03d,"dur":%d.%03d,"pid":%d}' % (
            ts // 1000, ts % 1000, dur // 1000, dur % 1000, dev))
        iv[dev].append((ts, ts + dur))
    stretch = []  # 6 s of touching 1 ms kernels, shuffled: merged, they outgrow a 4.3 s interval
    for i in range(6000):
        stretch.append('{"ph":"X","cat":"kernel","name":"k","ts":%d,"dur":1000,"pid":3}' % (2 * 10 ** 6 + 1000 * i))
        iv[3].append((2 * 10 ** 9 + 10 ** 6 * i, 2 * 10 ** 9 + 10 ** 6 * (i + 1)))
    rnd.shuffle(stretch)
    ev += stretch
    rnd.shuffle(ev[: len(ev) // 2])
    busy = {dev: union_length(xs) for dev, xs in iv.items()}
    with tempfile.TemporaryDirectory() as d:
        r = stats("-f", "json", "-r", "gpu", write(d, "t.json", '{"traceEvents":[' + ",".join(ev) + "]}"))
        assert r.returncode == 0, r
        got = {g["device"]: round(g["busy_us"] * 1000) for g in json.loads(r.stdout)["gpu"]}
        assert got == busy, (got, busy)


# ---- issue 16: a job's files, nsys-grade summaries, options ----

def op(ts, dur, ext, name="op", cat="cpu_op"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 100, "tid": 1, "args": {"External id": ext}}


def ranked(events, rank, base=0, **flagtrace):
    doc = {"distributedInfo": {"rank": rank, "world_size": 2}, "baseTimeNanoseconds": base, "traceEvents": events}
    if flagtrace:
        doc = {"flagtrace": {"version": "0.1.0", "tracer": "cupti", **flagtrace}, **doc}
    return json.dumps(doc)


@case("stats: two ranks with the same External ids, devices and other clocks stay apart")
def _():
    with tempfile.TemporaryDirectory() as d:
        # both ranks number External ids from 1 and call their GPU device 0; rank 1's clock is far away
        a = write(d, "r0.json", ranked([op(0, 100, 1, "fwd0"), kernel(10, 20, name="gemm", **{"External id": 1}),
                                        kernel(40, 20, name="gemm", **{"External id": 1})], 0))
        b = write(d, "r1.json", ranked([op(9e9, 100, 1, "fwd1"), kernel(9e9 + 10, 50, name="ncclDevKernel_AllReduce",
                                                                      **{"External id": 1})], 1, base=652 * 10 ** 9))
        r = stats("-f", "json", a, b)
        assert r.returncode == 0, r
        got = json.loads(r.stdout)
        assert {o["name"]: o["self_device_us"] for o in got["ops"]} == {"fwd0": 40, "fwd1": 50}, got["ops"]
        # busy % per (rank, device) over that file's own span
        assert [(g["rank"], g["device"], g["busy_us"], g["span_us"], g["busy_pct"]) for g in got["gpu"]] == [
            (0, 0, 40, 100, 40), (1, 0, 50, 100, 50)], got["gpu"]
        assert [(k["rank"], k["kernel_us"], k["comm_us"], k["compute_us"], k["comm_pct"], k["busy_pct"])
                for k in got["ranks"]] == [(0, 40, 0, 40, 0, 40), (1, 50, 50, 0, 100, 50)], got["ranks"]
        r = stats("-f", "json", "--by-rank", "-r", "kernels", b, a)
        got = json.loads(r.stdout)
        assert [(k["rank"], k["name"], k["calls"]) for k in got["kernels"]] == [
            (1, "ncclDevKernel_AllReduce", 1), (0, "gemm", 2)], got["kernels"]
        assert [k["time_pct"] for k in got["kernels"]] == [100, 100]


@case("stats: a trace that says it is incomplete says so in every format")
def _():
    with tempfile.TemporaryDirectory() as d:
        p = write(d, "t.json", ranked([kernel(1, 2)], 3, device_activity=False,
                                      device_status="CUPTI unavailable: libcupti.so not found",
                                      dropped_records=7, window_discarded=2))
        ok = write(d, "ok.json", ranked([kernel(1, 2)], 4, device_activity=True, device_status="collected",
                                        dropped_records=0, window_discarded=0))
        note = (f"note: {p} (rank 3) is incomplete: no device activity (CUPTI unavailable: libcupti.so not found); "
                "7 records dropped; 2 events outside the capture window discarded")
        r = stats(p, ok)
        assert r.returncode == 0 and r.stderr == f"flagtrace stats: {note}\n", r.stderr
        assert r.stdout.splitlines()[1] == note, r.stdout
        files = json.loads(stats("-f", "json", p, ok).stdout)["files"]
        assert [(f["rank"], f["device_activity"], f["device_status"], f["dropped_records"], f["window_discarded"],
                 f["complete"]) for f in files] == [
            (3, False, "CUPTI unavailable: libcupti.so not found", 7, 2, False), (4, True, "collected", 0, 0, True)]
        prefix = os.path.join(d, "out")
        r = stats("-f", "csv", "-o", prefix, "-r", "kernels,gpu", p, ok)
        assert r.returncode == 0 and r.stdout == "", r
        assert sorted(os.listdir(d)) == ["ok.json", "out_files.csv", "out_gpu.csv", "out_kernels.csv", "t.json"]
        rows = list(csv.DictReader(open(prefix + "_files.csv")))
        assert [(x["rank"], x["device_activity"], x["device_status"], x["dropped_records"]) for x in rows] == [
            ("3", "false", "CUPTI unavailable: libcupti.so not found", "7"), ("4", "true", "collected", "0")]


@case("stats: privateuse1_driver is counted; unknown categories are named in one line")
def _():
    with tempfile.TemporaryDirectory() as d:
        ev = [kernel(1, 2, cat="privateuse1_driver", name="drvCall"), kernel(1, 2, cat="my_cat"),
              kernel(1, 2, cat="my_cat"), kernel(1, 2, cat="python_function", name="f"),
              {"ph": "X", "name": "nocat", "ts": 1, "dur": 1}]
        r = stats("-f", "json", write(d, "t.json", trace(ev)))
        assert r.returncode == 0, r
        assert r.stderr == 'flagtrace stats: 3 events skipped: unknown categories "my_cat" (2), "(none)" (1)\n' or \
            r.stderr == 'flagtrace stats: 3 events skipped: unknown categories "(none)" (1), "my_cat" (2)\n', r.stderr
        got = json.loads(r.stdout)
        assert [(a["name"], a["kind"], a["calls"]) for a in got["api"]] == [("drvCall", "driver", 1)]
        assert got["unknown_categories"] == {"my_cat": 2, "(none)": 1} and got["skipped_events"] == 3


@case("stats: median and stddev are exact to 256 values, the median within 0.4 % past that")
def _():
    import random
    rnd = random.Random(16)
    with tempfile.TemporaryDirectory() as d:
        for n in (1, 2, 7, 256, 5000):
            durs = [rnd.randrange(1000, 10 ** 7) for _ in range(n)]  # ns
            ev = [kernel(i * 20000, x / 1000, name="k") for i, x in enumerate(durs)]
            got = json.loads(stats("-f", "json", "-r", "kernels", write(d, "t.json", trace(ev))).stdout)["kernels"][0]
            med = statistics.median(durs)
            if n <= 256:
                assert got["median_us"] == round(int(med) / 1000, 3), (n, got, med)
            else:
                assert abs(got["median_us"] * 1000 - med) <= 0.004 * med, (n, got, med)
            sd = statistics.stdev(durs) if n > 1 else 0
            assert abs(got["stddev_us"] - sd / 1000) <= 0.0005, (n, got, sd)
            assert (got["min_us"], got["max_us"]) == (min(durs) / 1000, max(durs) / 1000)


@case("stats: csv and json share column names; one --report is one csv table; -o writes a file")
def _():
    p = os.path.join(REPO_DATA, "sample_h200.json.gz")  # has every report, user ranges too
    for rep in ("kernels", "api", "memops", "memsize", "ranges", "gpu_ranges", "ops", "gpu", "ranks", "trace"):
        j = json.loads(stats("-f", "json", "-r", rep, p).stdout)[rep]
        r = stats("-f", "csv", "-r", rep, p)
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        assert r.returncode == 0 and len(rows) == len(j), (rep, r.stderr)
        assert rows and list(rows[0]) == list(j[0]), (rep, rows[:1], j[:1])
        for c in j[0]:
            if isinstance(j[0][c], str):
                assert rows[0][c] == j[0][c]
            else:
                assert float(rows[0][c]) == j[0][c], (rep, c)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "s.json")
        r = stats("-f", "json", p, "-o", out)
        assert r.returncode == 0 and r.stdout == "" and json.load(open(out))["schema"] == 2, r
        assert os.listdir(d) == ["s.json"]


@case("stats: getopt_long conventions: abbreviations, -oFILE, --opt=value; '-' reads stdin")
def _():
    p = os.path.join(data, TRACES[0])
    want = json.loads(stats("--format", "json", "--report", "kernels", p).stdout)["kernels"]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "o.json")
        r = stats("--rep=kernels", "-fjson", f"-o{out}", p)
        assert r.returncode == 0, r
        assert json.load(open(out))["kernels"] == want
        r = subprocess.run([*WRAP, flagtrace, "stats", "--form", "json", "-r", "kernels", "-"],
                           stdin=open(p, "rb"), capture_output=True, text=True)
        assert r.returncode == 0 and json.loads(r.stdout)["kernels"] == want, r
        for args, text in ((["-", "-"], "can be read once"), (["--sort", "size", p], "--sort takes"),
                           (["--limit", "-1", p], "--limit takes"), (["--output"], "needs a value")):
            r = stats(*args)
            assert r.returncode == 2 and text in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


@case("stats: the 7th of 8 files malformed: one line naming it, status 2, nothing written")
def _():
    with tempfile.TemporaryDirectory() as d:
        files = [write(d, f"r{i}.json", ranked([kernel(1, 2)], i)) for i in range(8)]
        with open(files[6], "w") as f:
            f.write('{"traceEvents": [{"ph": "X",}]}')
        with open(files[7], "w") as f:  # the 8th too: the first in argument order is named
            f.write("x")
        out = os.path.join(d, "out.json")
        for fmt in ("json", "csv"):
            r = stats("-f", fmt, "-o", out, *files)
            assert r.returncode == 2 and r.stdout == "", r
            assert r.stderr.startswith(f"flagtrace stats: {files[6]}: ") and r.stderr.endswith(" at byte 28\n"), r
            assert r.stderr.count("\n") == 1, r.stderr
            assert sorted(os.listdir(d)) == [f"r{i}.json" for i in range(8)], os.listdir(d)


@case("stats: tables cut names to --name-width; csv/json keep them; --sort and --limit")
def _():
    with tempfile.TemporaryDirectory() as d:
        long_name = "void at::native::very_long_kernel_name<float, 128, 4>(float*, int)"
        p = write(d, "t.json", trace([kernel(0, 5, name=long_name), kernel(10, 1, name="b"), kernel(20, 1, name="b"),
                                      kernel(30, 3, name="a")]))
        r = stats("-r", "kernels", "-w", "20", p)
        lines = r.stdout.splitlines()
        # cut in the middle (the start and the end kept) to 20
        assert lines[4].endswith("  void at::...t*, int)") and len("void at::...t*, int)") == 20 and long_name not in r.stdout, lines
        assert long_name in stats("-f", "csv", "-r", "kernels", "-w", "20", p).stdout
        name_order = lambda *a: [k["name"] for k in json.loads(stats("-f", "json", "-r", "kernels", *a, p).stdout)["kernels"]]  # noqa: E731
        assert name_order() == [long_name, "a", "b"]
        assert name_order("--sort", "count") == ["b", "a", long_name]  # ties by name
        assert name_order("--sort", "calls") == ["b", "a", long_name]  # the tables' column name
        assert name_order("--sort=name") == ["a", "b", long_name]
        assert name_order("--sort", "name", "--limit", "2") == ["a", "b"]
        got = json.loads(stats("-f", "json", "-r", "trace", "-n", "3", p).stdout)["trace"]
        assert [(e["start_us"], e["duration_us"], e["name"]) for e in got] == [(0, 5, long_name), (10, 1, "b"),
                                                                            (20, 1, "b")], got


@case("stats: on a terminal, table lines fit its width (names cut in the middle with ...)")
def _():
    out = on_pty([*WRAP, flagtrace, "stats", "-r", "kernels", os.path.join(REPO_DATA, "torch_cuda_2.11_reference.json.gz")],
                 150)
    lines = out.splitlines()
    rows = [line for line in lines[3:] if line.strip()]
    assert rows, lines
    assert max(len(line) for line in rows) <= 150, max(rows, key=len)
    assert any("..." in line and line.endswith(")") for line in rows), rows  # torch's long template names are cut


@case("stats: medians and stddev merged over files (exact + exact, histogram + exact)")
def _():
    import random
    rnd = random.Random(161)
    with tempfile.TemporaryDirectory() as d:
        for sizes in ((200, 200), (300, 10), (10, 300), (100, 100, 56)):
            durs = [[rnd.randrange(1000, 10 ** 8) for _ in range(n)] for n in sizes]
            paths = [write(d, f"f{i}.json", trace([kernel(j * 200000, x / 1000) for j, x in enumerate(ds)]))
                     for i, ds in enumerate(durs)]
            got = json.loads(stats("-f", "json", "-r", "kernels", *paths).stdout)["kernels"][0]
            every = [x for ds in durs for x in ds]
            med = statistics.median(every)
            if len(every) <= 256:
                assert got["median_us"] == round(int(med) / 1000, 3), (sizes, got, med)
            else:
                assert abs(got["median_us"] * 1000 - med) <= 0.004 * med, (sizes, got, med)
            assert abs(got["stddev_us"] - statistics.stdev(every) / 1000) <= 0.0005, (sizes, got)
            assert (got["calls"], got["min_us"], got["max_us"]) == (len(every), min(every) / 1000, max(every) / 1000)



@case("stats: parse workers (FLAGTRACE_STATS_THREADS) print what one thread prints, errors included")
def _():
    import random
    rnd = random.Random(23)
    env0, env3 = dict(os.environ, FLAGTRACE_STATS_THREADS="0"), dict(os.environ, FLAGTRACE_STATS_THREADS="3")
    with tempfile.TemporaryDirectory() as d:
        # 3.5 MB in 1 MiB segments; names that look like a cut between events from inside a string
        evs = []
        for i in range(24000):
            name = rnd.choice(["gemm", "aten::mm", 'x"}, {"ph": "X", "cat": "kernel", "name": "fake"}, {', "nccl"])
            evs.append(kernel(i * 10.0, 3.0, pid=i % 2, name=name, cat=rnd.choice(["kernel", "cpu_op"]),
                              **{"External id": i // 3}))
        text = trace(evs)
        good = write(d, "big.json", text)
        bad = write(d, "bad.json", text[:2500000] + "]" + text[2500001:])
        gz = os.path.join(d, "big.json.gz")
        with gzip.open(gz, "wt") as f:
            f.write(text)
        for path in (good, bad, gz):
            one = subprocess.run([*WRAP, flagtrace, "stats", "-f", "json", path], capture_output=True, text=True,
                                 env=env0)
            par = subprocess.run([*WRAP, flagtrace, "stats", "-f", "json", path], capture_output=True, text=True,
                                 env=env3)
            assert (one.returncode, one.stdout, one.stderr) == (par.returncode, par.stdout, par.stderr), path
        assert one.returncode == 0, one.stderr
        names = {row["name"] for row in json.loads(one.stdout)["kernels"]}
        assert "fake" not in names and {"gemm", "aten::mm", "nccl"} <= names, names
        r = subprocess.run([*WRAP, flagtrace, "stats", bad], capture_output=True, text=True, env=env3)
        assert r.returncode == 2 and r.stderr.endswith(" at byte 2500000\n"), r.stderr
        r = subprocess.run([*WRAP, flagtrace, "stats", good], capture_output=True, text=True,
                           env=dict(os.environ, FLAGTRACE_STATS_THREADS="many"))
        assert r.returncode == 0 and "FLAGTRACE_STATS_THREADS='many' is not a count of threads" in r.stderr, r.stderr


@case("stats: tables and messages show control characters escaped; csv and json keep names exact")
def _():
    evil = "k\x1b[2J\x1b]0;pwn\x07"  # clears the screen and sets the window title when printed raw
    names = [evil, "two\nlines", "tab\there", "csi\u009b2J", 'quote",comma', "caf\u00e9"]
    shown = ["k\\x1b[2J\\x1b]0;pwn\\x07", "two\\nlines", "tab\\there", "csi\\u009b2J", 'quote",comma', "caf\u00e9"]
    with tempfile.TemporaryDirectory() as d:
        ev = [kernel(i * 10, 10 - i, name=n) for i, n in enumerate(names)]
        ev.append(kernel(100, 1, cat="odd\x1bcat"))
        p = write(d, "t.json", ranked(ev, 0, device_activity=False, device_status="off\x1b[31m\nred"))
        r = stats("-r", "kernels", p)
        assert r.returncode == 0, r
        for text in (r.stdout, r.stderr):  # nothing a terminal acts on, in the table or on stderr
            assert not [c for c in text if ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) <= 0x9f], repr(text)
        rows = r.stdout.splitlines()
        i = next(k for k, line in enumerate(rows) if line.startswith("== GPU kernels"))
        assert [line.split("  ")[-1] for line in rows[i + 2:i + 2 + len(names)]] == shown, rows  # one line each
        assert "no device activity (off\\x1b[31m\\nred)" in rows[1], rows[1]
        assert r.stderr.count("\n") == 2 and 'unknown categories "odd\\x1bcat" (1)' in r.stderr, r.stderr
        # cut by what the table shows: the escapes count as the characters they are shown with, never split
        r = stats("-r", "kernels", "-w", "8", p)
        assert [line for line in r.stdout.splitlines() if line.endswith("  k...\\x07")], r.stdout
        assert [k["name"] for k in json.loads(stats("-f", "json", "-r", "kernels", p).stdout)["kernels"]] == names
        got = list(csv.DictReader(io.StringIO(stats("-f", "csv", "-r", "kernels", p).stdout, newline="")))
        assert [row["name"] for row in got] == names, got


@case("stats: a file name with a newline or ESC: the error stays one line, shown escaped")
def _():
    with tempfile.TemporaryDirectory() as d:
        bad = write(d, "a\nb\x1b[2J.json", '{"traceEvents": [}')
        r = stats(bad)
        shown = bad.replace("\n", "\\n").replace("\x1b", "\\x1b")
        assert r.returncode == 2 and r.stderr == f"flagtrace stats: {shown}: " + r.stderr.split(": ", 2)[2], r
        assert r.stderr.count("\n") == 1 and "\x1b" not in r.stderr, r.stderr
        r = stats(os.path.join(d, "missing\n.json"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "missing\\n.json" in r.stderr, r.stderr
        r = stats("--sort", "x\ny", bad)  # a usage error quoting the value
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "'x\\ny'" in r.stderr, r.stderr


@case("stats --limit: no preallocation for the limit (-n 1000000000, 2^62); -n 0 is all rows")
def _():
    with tempfile.TemporaryDirectory() as d:
        ev = [kernel(i * 3, 1, name=f"k{i % 150}") for i in range(300)]
        p = write(d, "t.json", trace(ev))
        want = [i * 3 for i in range(300)]
        for n in ("1000000000", str(2 ** 62), str(2 ** 64 - 1), "0"):
            def limited():  # the old heap of n events (48 GB for 10^9) cannot be had under 4 GiB
                import resource
                resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
            ldd = subprocess.run(["ldd", flagtrace], capture_output=True, text=True).stdout
            sanitized = WRAP or "libasan" in ldd or "libtsan" in ldd  # they reserve more address space
            r = subprocess.run([*WRAP, flagtrace, "stats", "-f", "json", "-r", "trace,kernels", "-n", n, p],
                               capture_output=True, text=True, preexec_fn=None if sanitized else limited)
            assert r.returncode == 0 and r.stderr == "", (n, r.stderr)
            got = json.loads(r.stdout)
            assert [e["start_us"] for e in got["trace"]] == want, (n, len(got["trace"]))
            assert len(got["kernels"]) == 150, n
        # without -n the trace report keeps its 100 earliest, the other reports all rows
        got = json.loads(stats("-f", "json", "-r", "trace,kernels", p).stdout)
        assert [e["start_us"] for e in got["trace"]] == want[:100] and len(got["kernels"]) == 150
        got = json.loads(stats("-f", "json", "-r", "trace,kernels", "-n", "7", p).stdout)
        assert [e["start_us"] for e in got["trace"]] == want[:7] and len(got["kernels"]) == 7
        assert "0:\n                      all rows" in stats("--help").stdout


# ---- hardening, round 2 (issue 35) ----

def gzip_file(path, pieces):
    """A gzip file of the concatenated pieces (str or (str, count)), written as it is compressed."""
    z = __import__("zlib").compressobj(6, 8, 31)
    with open(path, "wb") as f:
        for p in pieces:
            text, count = p if isinstance(p, tuple) else (p, 1)
            block = text.encode()
            for _ in range(count):
                f.write(z.compress(block))
        f.write(z.flush())
    return path


@case("stats/report: a huge string costs neither memory nor output: kept ones cut to 64 KiB and counted, ignored ones never held")
def _():
    # 128 MiB of "a" in a ~130 KiB gzip: the old reader held it 1 to 3 times (138-400 MB RSS) and report
    # wrote it into a 134 MB page
    mib = 1 if rss_means_nothing() else 128  # under valgrind or a sanitizer: what is read, not its cost
    big = ("a" * (1 << 20), mib)
    with tempfile.TemporaryDirectory() as d:
        cases = {  # where the string is, and the kernel names stats must report
            "name": (['{"traceEvents":[{"ph":"X","cat":"kernel","name":"', big, '","ts":1,"dur":2,"pid":0},',
                      json.dumps(kernel(5, 1, name="b")), "]}"], {"a" * 65536: 1, "b": 1}),
            "unknown key": (['{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","junk":"', big, '","ts":1,"dur":2}',
                             "]}"], {"k": 1}),
            "args": (['{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"args":{"x":["', big,
                      '"]}}]}'], {"k": 1}),
            "skipped event": (['{"traceEvents":[{"ph":"X","cat":"python_function","name":"', big,
                               '","ts":1,"dur":2},', json.dumps(kernel(5, 1)), "]}"], {"k": 1}),
            "top-level key": (['{"other":"', big, '","traceEvents":[', json.dumps(kernel(5, 1)), "]}"], {"k": 1}),
            "number": (['{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"args":{"n":1',
                        ("0" * (1 << 20), mib), "}}]}"], {"k": 1}),
        }
        for what, (pieces, names) in cases.items():
            p = gzip_file(os.path.join(d, "t.json.gz"), pieces)
            assert os.path.getsize(p) < 400 << 10, os.path.getsize(p)
            for threads in ("0",) if WRAP else ("0", "3"):  # valgrind: one (the parse workers' path is unit-tested)
                env = dict(os.environ, FLAGTRACE_STATS_THREADS=threads)
                r = subprocess.run([*WRAP, flagtrace, "stats", "-f", "json", "-r", "kernels", p], capture_output=True,
                                   text=True, env=env)
                assert r.returncode == 0, (what, r.stderr)
                got = {k["name"]: k["calls"] for k in json.loads(r.stdout)["kernels"]}
                assert got == names, (what, {k[:20]: v for k, v in got.items()})
                note = f"flagtrace stats: note: {p}: 1 name longer than 64 KiB cut to their first 64 KiB\n"
                assert r.stderr == (note if what == "name" else ""), (what, r.stderr)
                if not rss_means_nothing():
                    kb = peak_kb(p, "-f", "json", env=env)
                    assert kb < 40 * 1024, f"{what}, {threads} threads: {kb} KiB peak RSS"
        out = os.path.join(d, "r.html")  # the report of the long name: one cut name, not 128 MiB of it
        p = gzip_file(os.path.join(d, "t.json.gz"), cases["name"][0])
        r = subprocess.run([*WRAP, flagtrace, "report", "-o", out, p], capture_output=True, text=True)
        assert r.returncode == 0 and "1 name longer than 64 KiB cut" in r.stderr, r
        assert os.path.getsize(out) < 2 << 20, os.path.getsize(out)
        if not rss_means_nothing():
            kb = peak_kb(p, "--force-overwrite", "-o", out, command="report")
            assert kb < 48 * 1024, f"report: {kb} KiB peak RSS"


@case("stats/report: devices past 1024 per file are left out of busy % with one note; memory stays small")
def _():
    n = 3000 if rss_means_nothing() else 20000  # the old reader took 46 KB a device: 0.9 GB for 20 000
    with tempfile.TemporaryDirectory() as d:
        p = gzip_file(os.path.join(d, "t.json.gz"), [
            '{"traceEvents":[' + ",".join('{"ph":"X","cat":"kernel","name":"k","ts":%d,"dur":1,"pid":%d}' % (i, i)
                                          for i in range(n)) + "]}"])
        r = stats("-f", "json", "-r", "gpu,kernels", p)
        assert r.returncode == 0, r
        got = json.loads(r.stdout)
        assert [g["device"] for g in got["gpu"]] == list(range(1024)), len(got["gpu"])
        assert got["kernels"][0]["calls"] == n  # every event is in the other reports
        assert r.stderr == (f"flagtrace stats: note: {p} has more than 1024 devices: busy % and the timeline leave "
                            f"out the {n - 1024} events of the others (every other report has them)\n"), r.stderr
        out = os.path.join(d, "r.html")
        r = subprocess.run([*WRAP, flagtrace, "report", "-o", out, p], capture_output=True, text=True)
        assert r.returncode == 0 and "has more than 1024 devices" in r.stderr, r
        if not rss_means_nothing():
            assert peak_kb(p) < 40 * 1024, peak_kb(p)
            assert peak_kb(p, "--force-overwrite", "-o", out, command="report") < 64 * 1024


@case("stats: dur, bytes and odd numbers are read right or skipped and counted in the one line")
def _():
    def ev(text):  # a raw event, so that the number's spelling is exactly what is written
        return text
    with tempfile.TemporaryDirectory() as d:
        events = [
            '{"ph":"X","cat":"kernel","name":"neg","ts":1,"dur":-5}',  # skipped: a negative dur
            '{"ph":"X","cat":"kernel","name":"nodur","ts":1}',  # skipped: no dur
            '{"ph":"X","cat":"kernel","name":"k","ts":100000000000000000000e-18,"dur":1e0}',  # ts 100 us, dur 1 us
            '{"ph":"X","cat":"kernel","name":"far","ts":68736979597913697320123,"dur":1}',  # 23 digits: beyond
            '{"ph":"X","cat":"gpu_memcpy","name":"big","ts":1,"dur":1,"args":{"bytes":1e12}}',
            '{"ph":"X","cat":"gpu_memcpy","name":"max","ts":1,"dur":1,"args":{"bytes":9223372036854775807}}',
            '{"ph":"X","cat":"gpu_memcpy","name":"whole","ts":1,"dur":1,"args":{"bytes":2048.000}}',
            '{"ph":"X","cat":"gpu_memcpy","name":"over","ts":1,"dur":1,"args":{"bytes":9223372036854775808}}',
            '{"ph":"X","cat":"gpu_memcpy","name":"negb","ts":1,"dur":1,"args":{"bytes":-1}}',
            '{"ph":"X","cat":"gpu_memset","name":"strb","ts":1,"dur":1,"args":{"bytes":"100"}}',
            '{"ph":"X","cat":"gpu_memset","name":"frac","ts":1,"dur":1,"args":{"bytes":1.5}}',
            '{"ph":"X","cat":"kernel","name":"kb","ts":1,"dur":1,"args":{"bytes":"n/a"}}',  # a kernel: bytes unread
            '{"ph":"X","cat":"kernel","name":"a\\u0000b","ts":1,"dur":1}',
            '{"ph":"X","cat":"kernel","name":"a\\u0000c","ts":1,"dur":1}',
            '{"ph":"X\\u0000","cat":"kernel","name":"notx","ts":1,"dur":1}',  # not "X": not a complete event
        ]
        r = stats("-f", "json", "-r", "kernels,memsize", write(d, "t.json", '{"traceEvents":[' + ",".join(events) + "]}"))
        assert r.returncode == 0, r
        assert r.stderr == ("flagtrace stats: 7 events skipped: 1 with no dur, 1 with a negative dur, 1 with ts or dur "
                            "beyond +-4e+15 us, 4 copies or sets whose bytes is not a whole number in [0, 2^63)\n"), r.stderr
        got = json.loads(r.stdout)
        assert got["skipped_events"] == 7 and got["events"] == len(events), got
        k = {x["name"]: x for x in got["kernels"]}
        assert set(k) == {"k", "kb", "a\ufffdb", "a\ufffdc"}, set(k)
        assert (k["k"]["total_us"], k["k"]["calls"]) == (1, 1)
        assert {m["name"]: m["total_bytes"] for m in got["memsize"]} == {
            "big": 10 ** 12, "max": 2 ** 63 - 1, "whole": 2048}, got["memsize"]
        r = stats("-f", "json", "-r", "trace", write(d, "t.json", '{"traceEvents":[%s,%s]}' % (
            json.dumps(kernel(0, 2)), events[2])))
        assert [(e["start_us"], e["duration_us"]) for e in json.loads(r.stdout)["trace"]] == [(0, 2), (100, 1)], r.stdout


@case("stats: a lone surrogate is U+FFFD, as invalid UTF-8 is")
def _():
    with tempfile.TemporaryDirectory() as d:
        body = '{"traceEvents":[{"ph":"X","cat":"kernel","name":"x\\ud800","ts":1,"dur":1},' \
               '{"ph":"X","cat":"kernel","name":"y\\udc00","ts":1,"dur":1}]}'
        p = write(d, "t.json", body.encode()[:-2] + b',{"ph":"X","cat":"kernel","name":"z\xff","ts":1,"dur":1}]}')
        r = stats("-f", "json", "-r", "kernels", p)
        assert r.returncode == 0, r
        assert sorted(k["name"] for k in json.loads(r.stdout)["kernels"]) == ["x\ufffd", "y\ufffd", "z\ufffd"], r.stdout
        r = subprocess.run([*WRAP, flagtrace, "stats", "-r", "kernels", p], capture_output=True)  # the table: bytes
        assert b"x\xef\xbf\xbd\n" in r.stdout and b"?" not in r.stdout, r.stdout


@case("stats/report: the same file twice is refused; files that claim one rank are named in one warning")
def _():
    with tempfile.TemporaryDirectory() as d:
        p = write(d, "t.json", trace([kernel(1, 2)]))
        os.symlink(p, os.path.join(d, "link.json"))
        os.link(p, os.path.join(d, "hard.json"))
        for other in (p, os.path.join(d, ".", "t.json"), os.path.join(d, "link.json"), os.path.join(d, "hard.json")):
            for cmd in ("stats", "report"):
                r = subprocess.run([*WRAP, flagtrace, cmd, "-o", os.path.join(d, "out"), p, other], capture_output=True,
                                   text=True)
                assert r.returncode == 2 and r.stderr == (
                    f"flagtrace {cmd}: {other}: the same file as {p}, given twice (its events would be counted "
                    "twice)\n"), (cmd, other, r.stderr)
                assert not os.path.exists(os.path.join(d, "out")), cmd
        r = subprocess.run([*WRAP, flagtrace, "stats", p, "-"], stdin=open(p), capture_output=True, text=True)
        assert r.returncode == 2 and "-: the same file as " + p in r.stderr, r.stderr
        # rank 1 by distributedInfo, and rank 1 by position (no distributedInfo): both kept, named once
        a = write(d, "a.json", ranked([kernel(1, 2, name="ka")], 1))
        b = write(d, "b.json", trace([kernel(1, 4, name="kb")]))
        c = write(d, "c.json", ranked([kernel(1, 8, name="kc")], 0))
        r = stats("-f", "json", "--by-rank", "-r", "kernels,ranks", a, b, c)
        assert r.returncode == 0, r
        assert r.stderr == (f"flagtrace stats: warning: files claim the same rank (their rows stay apart, by file): "
                            f"rank 1: {a}, {b}\n"), r.stderr
        got = json.loads(r.stdout)
        assert [(k["rank"], k["name"]) for k in got["kernels"]] == [(1, "ka"), (1, "kb"), (0, "kc")], got["kernels"]
        assert [(x["rank"], x["file"], x["kernel_us"]) for x in got["ranks"]] == [(1, a, 2), (1, b, 4), (0, c, 8)]
        r = stats(a, c)
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


@case("stats: gzip with a reserved header flag bit is refused, as gzip(1) refuses it")
def _():
    with tempfile.TemporaryDirectory() as d:
        good = gzip.compress(trace([kernel(1, 2)]).encode())
        for bit in (0x20, 0x40, 0x80):
            z = bytearray(good)
            z[3] |= bit
            r = stats(write(d, "t.json.gz", bytes(z)))
            assert r.returncode == 2 and r.stderr.endswith(
                ": corrupt gzip data (reserved header flags set) at compressed byte 0\n"), r.stderr
            assert subprocess.run(["gzip", "-t", os.path.join(d, "t.json.gz")], capture_output=True).returncode != 0
            text = trace([kernel(1, 2)] * 3).encode()
            second = bytearray(gzip.compress(text[20:]))
            second[3] |= bit
            first = gzip.compress(text[:20])
            r = stats(write(d, "t.json.gz", first + bytes(second)))
            assert r.returncode == 2 and r.stderr.endswith(
                f": corrupt gzip data (reserved header flags set) at compressed byte {len(first)}\n"), r.stderr


results.finish()
