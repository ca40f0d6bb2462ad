"""End-to-end: `flagtrace stats --engine=model` (each file read into the event model,
src/analysis/model, then replayed into the summary in file order) prints byte for byte
what the streaming read prints, for every report, on every committed trace; and the
model holds at most 64 B a slice for what grows with slices (ft_model_bytes less the
names', launch configurations' and tracks' tables) on every committed trace, and at
most 64 B a slice in all on a generated 1 M-event trace (bench_stats --write, P5's)."""
import glob
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, Skip  # noqa: E402

flagtrace, data = sys.argv[1], sys.argv[2]
bench_stats = sys.argv[3] if len(sys.argv) > 3 else ""
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
results = Results()
case = results.case
TRACES = sorted(glob.glob(os.path.join(data, "*.json.gz")))
EVERY = ("kernels,api,memops,memsize,ranges,gpu_ranges,ops,ops_shapes,ops_modules,gpu,ranks,trace,"
         "temporal,overlap,launch,queue,memory")
NOTE = re.compile(r"^flagtrace stats: (.*): event model of (\d+) slices held (\d+) bytes "
                  r"\([\d.]+ B a slice; (\d+) of them not per slice: names, launch configurations, tracks, "
                  r"memory rows\)$", re.M)


def stats(args, engine):
    r = subprocess.run([*WRAP, flagtrace, "stats", f"--engine={engine}", *args], capture_output=True)
    assert r.returncode == 0, (engine, args, r.stderr.decode()[-2000:])
    return r.stdout, r.stderr.decode()


def same(args):
    """Both engines' stdout, byte for byte; their stderr but for the model's own note."""
    out_s, err_s = stats(args, "stream")
    out_m, err_m = stats(args, "model")
    assert out_s == out_m, (args, len(out_s), len(out_m))
    assert err_s.splitlines() == [line for line in err_m.splitlines() if not NOTE.match(line)], (err_s, err_m)
    return out_s, err_m


@case("the committed traces are all here")
def _():
    names = {os.path.basename(t) for t in TRACES}
    assert len(TRACES) == 9, names
    assert "torch_with_modules.json.gz" in names and "batch16_torch_cuda.json.gz" in names, names
    assert "torch_memory_h100.json.gz" in names, names


for t in TRACES:
    name = os.path.basename(t)

    @case(f"{name}: every report as JSON, every row, equal both ways")
    def _(t=t):
        out, _ = same(["-r", EVERY, "-n", "0", "-f", "json", t])
        d = json.loads(out)
        assert d["events"] > 0 and "trace" in d and "queue" in d, sorted(d)

    @case(f"{name}: default reports as tables and csv equal both ways")
    def _(t=t):
        same([t])
        same(["-f", "csv", "-r", "kernels,api,ops", t])


@case("all traces at once, by rank, every report: equal both ways")
def _():
    same(["-r", EVERY, "-n", "0", "-f", "json", "--by-rank", *TRACES])


for t in TRACES:
    name = os.path.basename(t)

    # one file each: a job's total merges its files as their threads finish, so the
    # names of a partial over several files come in no fixed order (either engine)
    @case(f"{name}: the partial summary (its source, the file's record, every row) equal both ways")
    def _(t=t):
        with tempfile.TemporaryDirectory() as d:
            outs = []
            for engine in ("stream", "model"):
                p = os.path.join(d, f"{engine}.json")
                stats(["--partial", "-r", "all,trace,temporal", "-o", p, t], engine)
                outs.append(open(p, "rb").read())
            assert outs[0] == outs[1]
            assert b'"digest"' in outs[0] or b'"source"' in outs[0], outs[0][:300]


@case("--engine takes stream or model; model with --merge is refused")
def _():
    r = subprocess.run([*WRAP, flagtrace, "stats", "--engine=fast", TRACES[0]], capture_output=True, text=True)
    assert r.returncode == 2 and "--engine takes stream or model, not 'fast'" in r.stderr, r
    r = subprocess.run([*WRAP, flagtrace, "stats", "--engine=model", "--merge", TRACES[0]], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "--merge reads partial summaries" in r.stderr, r


# the model's slices: every complete event of a category the reader summarizes
# (stats_summary.c's list; python_function too: the model holds them all)
KNOWN = {"kernel", "mtia_ccp_events", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "cuda_runtime",
         "privateuse1_runtime", "runtime", "mtia_runtime", "xpu_runtime", "glow_runtime", "cuda_driver",
         "privateuse1_driver", "xpu_driver", "cpu_op", "operator", "hpu_op", "user_annotation",
         "gpu_user_annotation", "python_function", "overhead", "cuda_sync"}


def slices_of(path):
    with gzip.open(path, "rt") as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    return sum(1 for e in ev if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))
               and isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0
               and str(e.get("cat", "")).lower() in KNOWN)


def mems_of(path):
    """The [memory] instants the model holds a row for (132 B each, beside the slices' bound)."""
    with gzip.open(path, "rt") as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    return sum(1 for e in ev if e.get("ph") in ("i", "I") and e.get("name") == "[memory]"
               and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("args", {}).get("Bytes"), int))


def held(err):
    m = NOTE.findall(err)
    assert m, err
    return [(int(n), int(b), int(dist)) for _, n, b, dist in m]


for t in TRACES:
    name = os.path.basename(t)

    @case(f"{name}: the model holds every slice, at most 64 B a slice for what grows with slices")
    def _(t=t):
        (n, b, dist), = held(stats(["-r", "kernels", t], "model")[1])
        assert n == slices_of(t), (n, slices_of(t))
        rows = 132 * mems_of(t)  # memory rows: not slices, counted with what is held once (docs/memory.md "Reading")
        assert 61 * n <= b - dist <= 64 * n and dist >= rows, (n, b, dist, rows, (b - dist) / n)


def memory_trace(path, with_memory=True):
    """A synthetic trace with [memory] instants (issue 51): torch's under ops in steps, ours by a
    runtime call's correlation id on another thread, a reserve, hostile ones; 2 devices."""
    ev, n_mem = [], 0
    for step in range(3):
        t0 = step * 1000
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 10,
                   "ts": t0, "dur": 900, "args": {}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 10, "ts": t0 + 10,
                   "dur": 100, "args": {"External id": 100 + step}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 1, "tid": 10, "ts": t0 + 20,
                   "dur": 30, "args": {"External id": 100 + step, "correlation": 500 + step}})
        for k in range(4):
            args = {"Device Type": 1, "Device Id": k % 2, "Addr": 4096 * (10 * step + k + 1), "Bytes": 512 * (k + 1),
                    "Total Allocated": 512 * (k + 1) * (step + 1), "Total Reserved": 1 << 21}
            if k == 3:  # ours: the call's thread differs, keys after torch's
                args.update({"correlation": 500 + step, "External id": 100 + step, "stream": 7, "Kind": "device",
                             "Op": "alloc"})
            ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1,
                       "tid": 10 if k < 3 else 99, "ts": t0 + 30 + k, "args": args})
            n_mem += 1
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 10,
                   "ts": t0 + 500, "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096 * (10 * step + 1),
                                            "Bytes": -512, "Total Allocated": 0, "Total Reserved": 1 << 21}})
        n_mem += 1
    ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 10, "ts": 5,
               "args": {"Device Type": 1, "Device Id": 0, "Addr": "x", "Bytes": 8}})  # skipped: not a number
    if not with_memory:  # the same slices alone
        ev = [e for e in ev if e["name"] != "[memory]"]
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)
    return n_mem


@case("a synthetic [memory] trace: every report and the partial equal both ways; memory rows held at 132 B each")
def _():
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "mem.json.gz")
        n_mem = memory_trace(p)
        memory_trace(os.path.join(d, "nomem.json.gz"), with_memory=False)
        out, err = same(["-r", EVERY, "-n", "0", "-f", "json", p])
        rows = json.loads(out)["memory"]
        peaks = [(r["device"], r["mem_bytes"], r["step"], r["op"]) for r in rows if r["what"] == "peak_allocated"]
        assert peaks == [("cuda:0", 4608, 2, "aten::empty"), ("cuda:1", 6144, 2, "aten::empty")], peaks  # step 2: k 2, k 3
        assert [r["count"] for r in rows if r["what"] == "skipped"] == [1], rows
        (n, b, dist), = held(err)
        assert n == slices_of(p) == 9, n
        # slices and 3 steps grow with slices; the memory rows (132 B each) are of what does not
        (n0, b0, dist0), = held(stats(["-r", "kernels", p.replace("mem.json.gz", "nomem.json.gz")], "model")[1])
        # (and the thread track, tid 99, that only our [memory] events name: at most 64 B)
        assert b - dist == 61 * n + 32 * 3 and 0 <= dist - dist0 - 132 * n_mem <= 64, (n, n_mem, b, dist, dist0)
        outs = []
        for engine in ("stream", "model"):
            q = os.path.join(d, f"{engine}.part")
            stats(["--partial", "-o", q, p], engine)
            outs.append(open(q, "rb").read())
        assert outs[0] == outs[1] and b'"mem"' in outs[0]


@case("a generated 1 M-event trace (bench_stats --write 476190): at most 64 B a slice in all")
def _():
    if not bench_stats or not os.path.exists(bench_stats):
        raise Skip("bench_stats is not built (FT_BUILD_BENCH=OFF)")
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t1m.json.gz")
        subprocess.run([bench_stats, "--write", p, "476190"], check=True,
                       env=dict(os.environ, FLAGOS_TRACER_LIBRARY="/nonexistent"))
        out, err = same(["-f", "json", p])
        assert json.loads(out)["events"] >= 1000000
        (n, b, dist), = held(err)
        assert n == 523810, n  # a runtime call and a kernel per launch, a range per 10
        assert b <= 64 * n, (n, b, b / n)


sys.exit(results.finish())
