"""End-to-end: `flagtrace stats -r temporal,overlap,launch,queue` (HTA's analyses on HTA's
definitions, docs/analyses.md) on hand-made traces whose answers are worked out by hand
in the comments, in json, csv and table; they are not among the default reports."""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

flagtrace, data = sys.argv[1], sys.argv[2]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
results = Results()
case = results.case
HTA = ["temporal", "overlap", "launch", "queue"]


def stats(paths, *args):
    r = subprocess.run([*WRAP, flagtrace, "stats", *args, *paths], capture_output=True, text=True)
    assert r.returncode == 0, r
    return r.stdout


def js(paths, reports=",".join(HTA), *extra):
    return json.loads(stats(paths, "-r", reports, "-f", "json", "-n", "0", *extra))


def ev(cat, name, ts, dur, pid=0, tid=7, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


# Times in us. GPU events are those with an args.stream (HTA's stream != -1):
#   gemm       [1000, 1010) compute        s7  corr 1
#   nccl       [1005, 1020) communication  s7  corr 2
#   elementwise[1008, 1012) compute        s7  corr 3
#   Memcpy     [1025, 1030) memory         s8  corr 4
#   Memset     [1026, 1027) memory         s8  corr 6
#   Event Sync [1040, 1045) other (cuda_sync, "Sync")  s7  corr 5
# and a kernel without a stream [1100, 1200): not HTA's GPU event, in our busy % only.
# union of the GPU events: [1000,1020) + [1025,1030) + [1040,1045) = 30 us over the
# window [1000, 1045) = 45 us: idle 15; compute [1000,1012) = 12; non-compute 30-12 = 18;
# communication [1005,1020) = 15, of which compute ran [1005,1012) = 7: 46.67 %.
# Launch pairs (cudaLaunchKernel, cudaMemcpyAsync; cuLaunchKernel is not one of them):
#   corr 1: call [990,993) 3, kernel 10, delay 1000-993 = 7
#   corr 2: call [991,1051) 60 (over 50), kernel 15, delay 1005-1051 < 0: 0
#   corr 3: call [800,810) 10, kernel 4 (short: shorter than a call of 50 at most), delay 198 (over 100)
#   corr 4: call [1020,1022) 2, copy 5, delay 3
#   corr 7: a call whose kernel is not in the trace: no pair
# Queue (calls of the queue's names with a GPU event, +1 at the call's start, -1 at the
# event's): stream 7: 800 +1, 990 +1, 991 +1, 1000 -1, 1005 -1, 1008 -1: 1 2 3 2 1 0
# (mean 1.5, sample stddev sqrt(5.5/5), median 1.5); stream 8: 1020 +1, 1023 +1 (the
# driver's cuLaunchKernel, corr 6), 1025 -1, 1026 -1: 1 2 1 0.
EVENTS = [
    ev("kernel", "gemm", 1000, 10, stream=7, correlation=1),
    ev("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 1005, 15, stream=7, correlation=2),
    ev("kernel", "elementwise", 1008, 4, stream=7, correlation=3),
    ev("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 1025, 5, tid=8, stream=8, correlation=4, bytes=64),
    ev("gpu_memset", "Memset (Device)", 1026, 1, tid=8, stream=8, correlation=6, bytes=64),
    ev("cuda_sync", "Event Sync", 1040, 5, stream=7, correlation=5),
    ev("kernel", "triton_no_stream", 1100, 100, correlation=9),
    ev("cuda_runtime", "cudaLaunchKernel", 990, 3, pid=1, tid=1, correlation=1),
    ev("cuda_runtime", "cudaLaunchKernel", 991, 60, pid=1, tid=1, correlation=2),
    ev("cuda_runtime", "cudaLaunchKernel", 800, 10, pid=1, tid=1, correlation=3),
    ev("cuda_runtime", "cudaMemcpyAsync", 1020, 2, pid=1, tid=1, correlation=4),
    ev("cuda_runtime", "cudaEventSynchronize", 1039, 7, pid=1, tid=1, correlation=5),
    ev("cuda_driver", "cuLaunchKernel", 1023, 1, pid=1, tid=1, correlation=6),
    ev("cuda_runtime", "cudaLaunchKernel", 1200, 1, pid=1, tid=1, correlation=7),
]


def write(d, events, name="t.json", rank=None):
    p = os.path.join(d, name)
    doc = {"traceEvents": events}
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank}
    with open(p, "w") as f:
        json.dump(doc, f)
    return p


def near(a, b, eps=1e-3):
    return abs(a - b) <= eps


@case("temporal: idle, compute, non-compute over the GPU window; busy % over the span beside it")
def _():
    with tempfile.TemporaryDirectory() as d:
        t = js([write(d, EVENTS)], "temporal")["temporal"]
    assert len(t) == 1, t
    r = t[0]
    assert (r["gpu_events"], r["window_us"], r["idle_us"], r["compute_us"], r["non_compute_us"]) == \
        (6, 45.0, 15.0, 12.0, 18.0), r
    assert (r["idle_pct"], r["compute_pct"], r["non_compute_pct"]) == (33.33, 26.67, 40.0), r
    # ours: kernels, copies and sets of the device (not the sync) over the span [800, 1201):
    # [1000,1020) + [1025,1030) + [1100,1200) = 125 of 401 us
    assert (r["busy_pct"], r["span_us"]) == (31.17, 401.0), r


@case("overlap: the communication time compute kernels ran beside, % of communication")
def _():
    with tempfile.TemporaryDirectory() as d:
        o = js([write(d, EVENTS)], "overlap")["overlap"][0]
    assert (o["comm_us"], o["compute_us"], o["overlap_us"], o["overlap_pct"]) == (15.0, 12.0, 7.0, 46.67), o


@case("launch: pairs by correlation id, delay clipped at 0, HTA's three outlier counts")
def _():
    with tempfile.TemporaryDirectory() as d:
        r = js([write(d, EVENTS)], "launch")["launch"][0]
    assert r["launches"] == 4, r
    assert (r["cpu_avg_us"], r["cpu_median_us"]) == (18.75, 6.5), r
    assert (r["gpu_avg_us"], r["gpu_median_us"]) == (8.5, 7.5), r
    assert (r["delay_avg_us"], r["delay_median_us"], r["delay_max_us"]) == (52.0, 5.0, 198.0), r
    assert (r["short_kernels"], r["runtime_outliers"], r["delay_outliers"]) == (1, 1, 1), r


@case("queue: outstanding launches per stream, each change a sample")
def _():
    with tempfile.TemporaryDirectory() as d:
        q = js([write(d, EVENTS)], "queue")["queue"]
    assert [r["stream"] for r in q] == ["7", "8"], q
    s7, s8 = q
    assert (s7["samples"], s7["mean"], s7["min"], s7["median"], s7["max"], s7["kernels"]) == \
        (6, 1.5, 0, 1.5, 3, 3), s7
    assert near(s7["stddev"], (5.5 / 5) ** 0.5), s7
    assert (s8["samples"], s8["mean"], s8["min"], s8["median"], s8["max"], s8["kernels"]) == \
        (4, 1.0, 0, 1.0, 2, 2), s8
    assert s7["full_us"] == 0 and s8["full_us"] == 0


@case("queue: the time at 1024 outstanding launches or more")
def _():
    # 1030 calls at 0..1029 us on stream 7, their kernels from 2000 us: the queue is at
    # 1024 or more from the 1024th call (1023 us) to the 7th kernel's start (2006 us)
    evs = []
    for i in range(1030):
        evs.append(ev("cuda_runtime", "cudaLaunchKernel", i, 0.5, pid=1, tid=1, correlation=i + 1))
        evs.append(ev("kernel", "k", 2000 + i, 1, stream=7, correlation=i + 1))
    with tempfile.TemporaryDirectory() as d:
        q = js([write(d, evs)], "queue")["queue"]
    assert len(q) == 1 and q[0]["max"] == 1030 and q[0]["samples"] == 2060, q
    assert q[0]["full_us"] == 2006.0 - 1023.0, q


@case("queue: at one timestamp an event's start counts before a call's")
def _():
    # call 1 at 0, its kernel at 10; call 2 at 10, its kernel at 20: at 10 the kernel's
    # start comes first: 1, 0, 1, 0 (the call first would give 1, 2, 1, 0)
    evs = [ev("cuda_runtime", "cudaLaunchKernel", 0, 1, pid=1, tid=1, correlation=1),
           ev("kernel", "k", 10, 5, stream=7, correlation=1),
           ev("cuda_runtime", "cudaLaunchKernel", 10, 1, pid=1, tid=1, correlation=2),
           ev("kernel", "k", 20, 5, stream=7, correlation=2)]
    with tempfile.TemporaryDirectory() as d:
        q = js([write(d, evs)], "queue")["queue"]
    assert [(r["samples"], r["max"], r["mean"], r["median"]) for r in q] == [(4, 1, 0.5, 0.5)], q


@case("per rank with --by-rank; every rank's row without it; the queue's streams merged over ranks")
def _():
    with tempfile.TemporaryDirectory() as d:
        a = write(d, EVENTS, "a.json", rank=0)
        # rank 1: only the gemm and its launch: window 10, compute 10, nothing idle
        b = write(d, [EVENTS[0], EVENTS[7]], "b.json", rank=1)
        t = js([a, b], "temporal,queue")
        tb = js([a, b], "queue", "--by-rank")["queue"]
    assert [(r["rank"], r["window_us"], r["idle_us"], r["compute_us"]) for r in t["temporal"]] == \
        [(0, 45.0, 15.0, 12.0), (1, 10.0, 0.0, 10.0)], t["temporal"]
    # stream 7 merged: rank 0's six samples and rank 1's two (1, 0)
    assert [(r["stream"], r["samples"], r["kernels"]) for r in t["queue"]] == [("7", 8, 4), ("8", 4, 2)], t["queue"]
    assert [(r["rank"], r["stream"], r["samples"]) for r in tb] == [(0, "7", 6), (0, "8", 4), (1, "7", 2)], tb


@case("no GPU events: zeros, not an error; the reports are not among the defaults")
def _():
    with tempfile.TemporaryDirectory() as d:
        p = write(d, [ev("cuda_runtime", "cudaLaunchKernel", 0, 1, pid=1, tid=1, correlation=1)])
        t = js([p])
        default = json.loads(stats([p], "-f", "json"))
    assert t["temporal"][0]["window_us"] == 0 and t["temporal"][0]["idle_pct"] == 0, t
    assert t["overlap"][0]["overlap_pct"] == 0 and t["launch"][0]["launches"] == 0 and t["queue"] == [], t
    assert not set(HTA) & set(default), sorted(default)


@case("csv and table carry the same numbers, with unit-bearing keys and titles")
def _():
    with tempfile.TemporaryDirectory() as d:
        p = write(d, EVENTS)
        rows = list(csv.DictReader(io.StringIO(stats([p], "-r", "temporal", "-f", "csv"))))
        table = stats([p], "-r", "overlap")
    assert rows[0]["idle_us"] == "15.000" and rows[0]["compute_pct"] == "26.67", rows
    assert "Overlap(%)" in table and "46.67" in table, table


@case("the committed traces: the analyses' identities hold")
def _():
    for name in ("sample_h200.json.gz", "torch_cuda_2.11_reference.json.gz", "workload_h200.json.gz"):
        j = js([os.path.join(data, name)])
        t, o, lr = j["temporal"][0], j["overlap"][0], j["launch"][0]
        assert t["gpu_events"] > 0, (name, t)
        assert near(t["idle_us"] + t["compute_us"] + t["non_compute_us"], t["window_us"]), (name, t)
        assert o["overlap_us"] <= min(o["comm_us"], o["compute_us"]), (name, o)
        assert lr["launches"] > 0 and sum(q["kernels"] for q in j["queue"]) > 0, (name, lr, j["queue"])


results.finish()
