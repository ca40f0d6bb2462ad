"""End-to-end: `flagtrace advise` (and `stats -r advice`) on hand-made kineto-shaped traces,
one per rule, each planting one cause whose cost per step is worked out by hand in its
comment and checked to the ns in the JSON; a clean trace with no finding over its
threshold; the sync trace in each vendor's runtime names giving the same finding; bad
input in one line with exit 2; and every committed trace's steps adding up.

usage: test_advise.py FLAGTRACE DATA_DIR
FT_TEST_ONLY / FT_TEST_EXCLUDE: regexes of the checks to run."""
import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

FT, DATA = sys.argv[1], sys.argv[2]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
TMP = tempfile.mkdtemp(prefix="ft-advise-")
results = Results()
case = results.case

STEP = 10000  # us: every synthetic step is 10 ms
STEPS = 3     # ProfilerStep#1..#3, the same plant in each: mean cost = one step's
RULES = {"sync", "h2d-copy", "step-start", "launch-bound", "sync-memop", "gap", "straggler", "fuse", "low-flops",
         "alloc-call", "fragmentation", "leak"}


class Trace:
    """A kineto-shaped trace: ProfilerStep#N ranges (user_annotation) on the CPU thread,
    ops (cpu_op) and runtime calls (cuda_runtime) there, device work on device 0
    stream 7, launches paired by correlation id and ops by External id. Times in us."""

    def __init__(self, rank=None, runtime="cuda", device=None):
        self.ev, self.corr, self.ext, self.rank, self.device = [], 0, 100, rank, device
        self.launch_name = {"cuda": "cudaLaunchKernel", "ascend": "aclrtLaunchKernel", "hip": "hipLaunchKernel",
                            "metax": "mcLaunchKernel", "musa": "musaLaunchKernel", "tops": "topsLaunchKernel"}[runtime]

    def x(self, cat, name, ts, dur, pid=1, tid=1, **args):
        self.ev.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                        "args": args})

    def step(self, n, ts, dur=STEP):
        self.ext += 1
        self.x("user_annotation", f"ProfilerStep#{n}", ts, dur, **{"External id": self.ext})

    def op(self, name, ts, dur):
        self.ext += 1
        self.x("cpu_op", name, ts, dur, **{"External id": self.ext})
        return self.ext

    def call(self, name, ts, dur, ext=None):
        """A runtime call with nothing on the device (a sync, a blocking copy's call)."""
        self.corr += 1
        self.x("cuda_runtime", name, ts, dur, correlation=self.corr, **{"External id": ext or self.ext})
        return self.corr

    def kernel(self, name, call_ts, ts, dur, call_dur=4, cat="kernel", call=None, stream=7, **args):
        """A launch [call_ts, +call_dur) and its device work [ts, +dur)."""
        c = self.call(call or self.launch_name, call_ts, call_dur)
        self.x(cat, name, ts, dur, pid=0, tid=stream, correlation=c, stream=stream, device=0,
               **{"External id": self.ext}, **args)

    def write(self, name):
        doc = {"schemaVersion": 1, "traceEvents": self.ev}
        if self.rank is not None:
            doc["distributedInfo"] = {"rank": self.rank, "world_size": 2}
        if self.device:
            doc["deviceProperties"] = [{"id": 0, "name": self.device, "totalGlobalMem": 85520809984}]
        p = os.path.join(TMP, name)
        with open(p, "w") as f:
            json.dump(doc, f)
        return p


def step_starts():
    return [1000 + k * STEP for k in range(STEPS)]


def fed(t, s, start, end, n, prefix="gemm", launch_at=None):
    """n kernels back to back on [s+start, s+end) (end - start divisible by n), each
    launched well ahead, 5 us apart from launch_at (default: s + start - 5 - 5n... kept
    before its kernel): the device never waits for them."""
    d = (end - start) // n
    assert d * n == end - start
    at = s + start - 5 * n if launch_at is None else launch_at
    for i in range(n):
        t.kernel(f"{prefix}_{i}", at + 5 * i, s + start + i * d, d)


def advise(paths, *args, rc=0):
    r = subprocess.run([*WRAP, FT, "advise", *args, *paths], capture_output=True, text=True)
    assert r.returncode == rc, (r.returncode, r.stderr[-2000:])
    return r


def js(paths, *args):
    return json.loads(advise(paths, "-f", "json", "-n", "0", *args).stdout)


def check_steps(doc, where):
    """Structure: busy + idle = wall, the idle causes add up to idle, kinds within busy."""
    for s in doc["steps"]:
        ns = {k: round(v * 1000) for k, v in s.items() if k.endswith("_us")}
        causes = {k: round(v * 1000) for k, v in s["idle_by_cause"].items()}
        assert ns["wall_us"] == ns["end_us"] - ns["start_us"] >= 0, (where, s)
        assert ns["busy_us"] + ns["idle_us"] == ns["wall_us"], (where, s)
        assert sum(causes.values()) == ns["idle_us"], (where, s)
        for k in ("compute_us", "comm_us", "copy_us"):
            assert 0 <= ns[k] <= ns["busy_us"], (where, k, s)
        assert ns["busy_us"] <= ns["compute_us"] + ns["comm_us"] + ns["copy_us"], (where, s)
        assert 0 <= ns["critical_path_us"] <= ns["wall_us"], (where, s)


def first(doc):
    assert doc["findings"], doc
    return doc["findings"][0]


def finding(doc, rule):
    got = [f for f in doc["findings"] if f["rule"] == rule]
    assert got, (rule, [(f["rule"], f["cost_us"]) for f in doc["findings"]])
    return got[0]


# ---- the traces ----

def sync_trace(runtime="cuda", sync_name="cudaDeviceSynchronize", rank=None):
    """Per step s: 5 kernels [s+5, s+5000); aten::item [s+4980, s+7002) whose sync call
    runs [s+4990, s+7000); then 5 kernels launched from s+7000 run [s+7005, s+9995).
    The device idles [s+5000, s+7005): the sync holds from its start until the device
    work after it (a call that returns inside a gap holds to the gap's end: the device
    waits for the next launch because of it), so sync costs 2005 us per step; the
    other idle is 5 us at the step's start and 5 at its end (launch, or other after
    the last step)."""
    t = Trace(rank=rank, runtime=runtime)
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        fed(t, s, 5, 5000, 5, launch_at=s)
        e = t.op("aten::item", s + 4980, 2022)
        t.call(sync_name, s + 4990, 2010, ext=e)
        fed(t, s, 7005, 9995, 5, prefix="elementwise", launch_at=s + 7000)
    return t


def clean_trace():
    """Per step: 10 kernels back to back on [s+5, s+9995), launched from s: the device
    idles 5 us at the start and 5 at the end (0.1 % of the step)."""
    t = Trace()
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        fed(t, s, 5, 9995, 10, launch_at=s)
    return t


def h2d_trace():
    """Per step s: 5 kernels [s+5, s+5000); aten::copy_ [s+4980, s+7002) whose blocking
    cudaMemcpy runs [s+4990, s+7000) with its pageable host-to-device copy on the device
    [s+6900, s+7000); 5 kernels launched from s+7000 run [s+7005, s+9995). Idle under
    the call: [s+5000, s+6900) = 1900, and [s+7000, s+7005) = 5 (it returned inside
    that gap: it holds to the gap's end): h2d-copy 1905 us per step."""
    t = Trace()
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        fed(t, s, 5, 5000, 5, launch_at=s)
        t.op("aten::copy_", s + 4980, 2022)
        t.kernel("Memcpy HtoD (Pageable -> Device)", s + 4990, s + 6900, 100, call_dur=2010, cat="gpu_memcpy",
                 call="cudaMemcpy", bytes=1 << 26)
        fed(t, s, 7005, 9995, 5, prefix="elementwise", launch_at=s + 7000)
    return t


def step_start_trace():
    """Per step s: the data loader's op runs [s, s+2000), then 10 kernels launched from
    s+2000 run [s+2005, s+9995): the device idles 2005 us before the step's first
    device work, the data loader running: step-start 2005 us per step."""
    t = Trace()
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        t.op(LOADER, s, 2000)
        fed(t, s, 2005, 9995, 10, launch_at=s + 2000)
    return t


LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def launch_bound_trace():
    """Per step s: 5 kernels [s+5, s+5000); then under optimizer.step 100 kernels of 2 us
    (tiny_0..tiny_99, distinct names: no repeated sequence), each launched by a 10 us
    call [s+5000+10j, s+5010+10j) and run [s+5010+10j, s+5012+10j): each gap is the
    launch's (10 us before the first, 8 before the others) and its kernel is shorter
    than its launch: launch-bound 10 + 99 x 8 = 802 us per step; then 3 kernels of
    1331 us [s+6002, s+9995), launched by 1 us calls from s+6000."""
    t = Trace()
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        fed(t, s, 5, 5000, 5, launch_at=s)
        t.op("Optimizer.step#SGD.step", s + 4999, 1002)
        for j in range(100):
            t.kernel(f"tiny_{j}", s + 5000 + 10 * j, s + 5010 + 10 * j, 2, call_dur=10)
        for i in range(3):
            t.kernel(f"gemm_late_{i}", s + 6000 + i, s + 6002 + 1331 * i, 1331, call_dur=1)
    return t


def sync_memop_trace():
    """Per step s: 5 kernels [s+5, s+5000); aten::zero_ [s+4980, s+6002) whose
    synchronous cudaMemset runs [s+4990, s+6000) with its memset on the device
    [s+5990, s+6000); 5 kernels launched from s+6000 run [s+6005, s+9995). Idle under
    the call: [s+5000, s+5990) = 990 and [s+6000, s+6005) = 5: sync-memop 995 us per
    step (its idle counts as sync idle)."""
    t = Trace()
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        fed(t, s, 5, 5000, 5, launch_at=s)
        t.op("aten::zero_", s + 4980, 1022)
        t.kernel("Memset (Device)", s + 4990, s + 5990, 10, call_dur=1010, cat="gpu_memset", call="cudaMemset",
                 bytes=1 << 20)
        fed(t, s, 6005, 9995, 5, prefix="elementwise", launch_at=s + 6000)
    return t


def gap_trace():
    """Per step s: 5 kernels [s+5, s+5000); the CPU op my_cpu_work [s+4990, s+5500); the
    next 5 kernels launched from s+5500 run [s+5505, s+9995). The gap [s+5000, s+5505)
    is over 100 us: its launch part [s+5000, s+5504) and other [s+5504, s+5505) are the
    gap rule's, my_cpu_work running in it: gap 505 us per step."""
    t = Trace()
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        fed(t, s, 5, 5000, 5, launch_at=s)
        t.op("my_cpu_work", s + 4990, 510)
        fed(t, s, 5505, 9995, 5, prefix="elementwise", launch_at=s + 5500)
    return t


def fuse_trace():
    """Per step s: 5 kernels [s+5, s+5000); then add, mul, relu five times, each kernel
    100 us, one every 120 us from s+5000 (launched 6 us before it starts); then 5
    kernels [s+6780, s+9995) launched from s+6750. The sequence add > mul > relu runs 5
    times a step (4 at least: often), the idle inside each is its two 20 us gaps: fuse
    5 x 40 = 200 us per step. The gaps are the launches' (no kernel shorter than its
    launch, none over 100 us): no other finding."""
    t = Trace()
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        fed(t, s, 5, 5000, 5, launch_at=s)
        t.op("aten::gelu_chain", s + 4990, 1780)
        for q in range(15):
            k = s + 5000 + 120 * q
            t.kernel(("add", "mul", "relu")[q % 3], k - 6, k, 100)
        fed(t, s, 6780, 9995, 5, prefix="gemm_tail", launch_at=s + 6750)
    return t


def low_flops_trace():
    """An A100 (312 TFLOP/s dense bf16, in the model's peaks table). Per step
    s: aten::mm [s+1, s+10) with Input Dims [[1024, 4096], [4096, 4096]] (2 x 1024 x
    4096^2 FLOPs) launches its kernel [s+5, s+8005): 8 ms, 1.38 % of the peak, under 2 %.
    What 2 % would take: 2 x 1024 x 4096^2 / (312e12 x 0.02) s = 5506368 ns (whole ns,
    rounded down), so low-flops costs 8000000 - 5506368 = 2493632 ns: 2493.632 us per
    step. 2 kernels [s+8005, s+9995) after it."""
    t = Trace(device="NVIDIA A100-SXM4-80GB")
    for n, s in enumerate(step_starts(), 1):
        t.step(n, s)
        t.ext += 1
        t.x("cpu_op", "aten::mm", s + 1, 9, **{"External id": t.ext, "Input Dims": [[1024, 4096], [4096, 4096]],
                                                 "Input type": ["float", "float"]})
        t.kernel("sm80_xmma_gemm_f32f32", s + 2, s + 5, 8000)
        fed(t, s, 8005, 9995, 2, prefix="elementwise", launch_at=s + 20)
    return t


VENDORS = [("cuda", "cudaDeviceSynchronize"), ("cuda", "cudaStreamSynchronize"), ("ascend", "aclrtSynchronizeStream"),
           ("ascend", "aclrtSynchronizeDevice"), ("hip", "hipDeviceSynchronize"), ("hip", "hipStreamSynchronize"),
           ("metax", "mcDeviceSynchronize"), ("metax", "mcStreamSynchronize"), ("musa", "musaDeviceSynchronize"),
           ("musa", "musaStreamSynchronize"), ("tops", "topsDeviceSynchronize"), ("tops", "topsStreamSynchronize")]


@case("sync: the idle under a synchronizing call, 2005 us per step")
def _():
    doc = js([sync_trace().write("sync.json")])
    check_steps(doc, "sync")
    assert len(doc["steps"]) == STEPS and [s["step"] for s in doc["steps"]] == [1, 2, 3], doc["steps"]
    for k, s in enumerate(doc["steps"]):
        assert s["wall_us"] == STEP and s["busy_us"] == 7985.0 and s["idle_us"] == 2015.0, s
        assert s["idle_by_cause"] == {"step_start_us": 5.0, "sync_us": 2005.0, "h2d_us": 0.0,
                                      "launch_us": 5.0 if k < STEPS - 1 else 0.0,
                                      "other_us": 0.0 if k < STEPS - 1 else 5.0}, s
    assert [(f["rule"], f["cost_us"]) for f in doc["findings"]] == [("sync", 2005.0)], doc["findings"]
    f = first(doc)
    assert f["count"] == STEPS and f["share"] == 0.2005 and f["rank"] == 0, f
    assert f["where"] == "aten::item" and f["what"] == "cudaDeviceSynchronize under aten::item", f
    occ = f["occurrences"]  # each the call: its start and duration
    assert [(o["rank"], o["step"], o["ts_us"], o["dur_us"]) for o in occ] == \
        [(0, n + 1, s + 4990, 2010.0) for n, s in enumerate(step_starts())], occ


def only(doc, rule, cost, where, what=None, count=STEPS):
    """The one finding of the trace: its rule, cost to the ns, where, and count."""
    assert [(f["rule"], f["cost_us"]) for f in doc["findings"]] == [(rule, cost)], doc["findings"]
    f = doc["findings"][0]
    assert f["where"] == where and f["count"] == count and f["share"] == round(cost / STEP, 6), f
    assert what is None or f["what"] == what, f
    return f


@case("h2d-copy: a blocking pageable host-to-device copy, 1905 us per step")
def _():
    doc = js([h2d_trace().write("h2d.json")])
    check_steps(doc, "h2d")
    f = only(doc, "h2d-copy", 1905.0, "aten::copy_", "cudaMemcpy under aten::copy_")
    for s in doc["steps"]:
        assert s["idle_by_cause"]["h2d_us"] == 1905.0 and s["copy_us"] == 100.0, s
    assert [(o["ts_us"], o["dur_us"]) for o in f["occurrences"]] == [(s + 4990, 2010.0) for s in step_starts()]


@case("step-start: the device waits for the data loader, 2005 us per step")
def _():
    doc = js([step_start_trace().write("step_start.json")])
    check_steps(doc, "step_start")
    f = only(doc, "step-start", 2005.0, LOADER, f"device idle at the step's start while {LOADER} ran")
    for s in doc["steps"]:
        assert s["idle_by_cause"]["step_start_us"] == 2005.0, s
    assert [(o["ts_us"], o["dur_us"]) for o in f["occurrences"]] == [(s, 2005.0) for s in step_starts()]


@case("launch-bound: kernels shorter than their launch, back to back, 802 us per step")
def _():
    doc = js([launch_bound_trace().write("launch_bound.json")])
    check_steps(doc, "launch_bound")
    only(doc, "launch-bound", 802.0, "Optimizer.step#SGD.step",
         "kernels shorter than their launch (cudaLaunchKernel) under Optimizer.step#SGD.step", count=100 * STEPS)
    for s in doc["steps"]:
        assert s["idle_by_cause"]["launch_us"] >= 802.0, s


@case("sync-memop: a synchronous memset, 995 us per step")
def _():
    doc = js([sync_memop_trace().write("sync_memop.json")])
    check_steps(doc, "sync_memop")
    only(doc, "sync-memop", 995.0, "aten::zero_", "cudaMemset under aten::zero_")
    for s in doc["steps"]:
        assert s["idle_by_cause"]["sync_us"] == 995.0, s


@case("gap: a device gap over the threshold with the CPU op running, 505 us per step; --gap-us moves it")
def _():
    p = gap_trace().write("gap.json")
    doc = js([p])
    check_steps(doc, "gap")
    only(doc, "gap", 505.0, "my_cpu_work", "device idle over 100 us while my_cpu_work ran")
    # over the threshold only: at 600 us the gap is no finding
    assert js([p], "--gap-us", "600")["findings"] == []


@case("fuse: a kernel sequence repeated 5 times a step, 200 us per step")
def _():
    doc = js([fuse_trace().write("fuse.json")])
    check_steps(doc, "fuse")
    only(doc, "fuse", 200.0, "aten::gelu_chain", "add > mul > relu x5.0/step", count=5 * STEPS)


@case("low-flops: a GEMM at 1.38 % of the device's peak, 2493.632 us per step")
def _():
    doc = js([low_flops_trace().write("low_flops.json")])
    check_steps(doc, "low_flops")
    only(doc, "low-flops", 2493.632, "aten::mm", "aten::mm [[1024, 4096], [4096, 4096]] at 1.4% of 312 TFLOP/s")


@case("straggler: rank 1's steps 2000 us longer than rank 0's, by wall time")
def _():
    """Rank 0: the clean trace. Rank 1: the same with each step 12 ms (its steps from
    1000 us, 12 ms apart, its kernels stretched over [s+5, s+11995)). Rank 1's excess over the others' median (rank 0's
    10 ms) is 2000 us a step; the share is over the job's mean step, 11 ms."""
    r0 = clean_trace()
    r0.rank = 0
    r1 = Trace(rank=1)
    for n in range(1, STEPS + 1):
        s = 1000 + (n - 1) * 12000
        r1.step(n, s, 12000)
        fed(r1, s, 5, 11995, 10, launch_at=s)
    doc = js([r0.write("rank0.json"), r1.write("rank1.json")])
    check_steps(doc, "straggler")
    assert [(f["rule"], f["rank"], f["cost_us"]) for f in doc["findings"]] == [("straggler", 1, 2000.0)], doc
    f = doc["findings"][0]
    assert f["where"] == "rank 1" and f["count"] == STEPS and f["share"] == round(2000 / 11000, 6), f
    assert [(o["rank"], o["step"], o["ts_us"], o["dur_us"]) for o in f["occurrences"]] == \
        [(1, n, 1000 + (n - 1) * 12000, 12000.0) for n in range(1, STEPS + 1)], f


@case("clean: no finding over its threshold, the idle only the step's edges")
def _():
    doc = js([clean_trace().write("clean.json")])
    check_steps(doc, "clean")
    assert doc["findings"] == [], doc["findings"]
    for s in doc["steps"]:
        assert s["busy_us"] == 9990.0 and s["idle_us"] == 10.0 and s["idle_by_cause"]["step_start_us"] == 5.0, s
    # with no threshold the small things show, each under 1 % of the step
    doc = js([clean_trace().write("clean.json")], "--min-share", "0")
    assert all(f["share"] < 0.01 for f in doc["findings"]), doc["findings"]


@case("vendors: the sync trace in each vendor's runtime names gives the same finding")
def _():
    want = None
    for runtime, name in VENDORS:
        doc = js([sync_trace(runtime, name).write(f"sync_{name}.json")])
        f = first(doc)
        got = (f["rule"], f["cost_us"], f["count"], [(o["step"], o["ts_us"], o["dur_us"]) for o in f["occurrences"]])
        assert name in f["what"] + f["where"], (name, f)
        assert want is None or got == want, (name, got, want)
        want = got


@case("formats: the table fits its width, csv holds the findings, stats -r advice the same rows")
def _():
    p = sync_trace().write("sync_fmt.json")
    longdir = os.path.join(TMP, "a_directory_whose_name_is_longer_than_the_table_is_wide_" * 2)
    os.mkdir(longdir)
    shutil.copy(p, longdir)
    out = advise([os.path.join(longdir, "sync_fmt.json")], "--width", "60").stdout
    assert all(len(line) <= 60 for line in out.splitlines()), out  # the path cut in its middle
    assert re.search(r"^rank 0 \(/.*\.\.\..*sync_fmt\.json\): 3 steps$", out, re.M), out
    for w in (60, 80, 120):
        out = advise([p], "--width", str(w)).stdout
        assert all(len(line) <= w for line in out.splitlines()), (w, out)
        assert "sync" in out and "2005.000" in out, out
    # piped: whole lines; under each finding what, fix and where on the timeline (step-relative)
    out = advise([p]).stdout
    assert " 1. cudaDeviceSynchronize under aten::item\n    fix: " in out, out
    assert "    at: rank 0 step 1 +4990.000 us for 2010.000 us, rank 0 step 2 +4990.000 us for 2010.000 us, " \
        "rank 0 step 3 +4990.000 us for 2010.000 us\n" in out, out
    rows = list(csv.DictReader(io.StringIO(advise([p], "-f", "csv").stdout)))
    assert rows and rows[0]["rule"] == "sync" and rows[0]["cost_per_step_us"] == "2005.000", rows
    r = subprocess.run([*WRAP, FT, "stats", "-r", "advice", "-f", "csv", p], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert list(csv.DictReader(io.StringIO(r.stdout))) == rows, r.stdout
    r = subprocess.run([*WRAP, FT, "stats", "-r", "advice", "--timeunit", "ms", p], capture_output=True, text=True)
    assert r.returncode == 0 and re.search(r"^1 +0 sync +2\.005000 +20\.05 +3  aten::item$", r.stdout, re.M), r.stdout
    r = subprocess.run([*WRAP, FT, "stats", "-r", "advice", "-f", "json", p], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["advice"][0]["rule"] == "sync", r.stdout[-2000:]
    # -n: the costliest N; -o writes the same text
    out = os.path.join(TMP, "advice.json")
    advise([p], "-f", "json", "-n", "1", "-o", out)
    doc = json.load(open(out))
    assert doc["schema"] == 1 and len(doc["findings"]) == 1 and doc["findings_total"] >= 1, doc


@case("stats -r advice: one parse for the summary and the model, so stdin reads as a file does")
def _():
    p = sync_trace().write("sync_stdin.json")
    want = subprocess.run([*WRAP, FT, "stats", "-r", "kernels,advice", "-f", "json", p], capture_output=True,
                          text=True)
    assert want.returncode == 0, want.stderr
    with open(p) as f:
        r = subprocess.run([*WRAP, FT, "stats", "-r", "kernels,advice", "-f", "json", "-"], stdin=f,
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got, doc = json.loads(r.stdout), json.loads(want.stdout)
    assert got["advice"] == doc["advice"] and got["advice"][0]["rule"] == "sync", got["advice"]
    assert got["kernels"] == doc["kernels"], got["kernels"]


@case("table: past 4 steps, the mean column is the JSON's mean on every row (the critical path too)")
def _():
    t = Trace()
    starts = [1000 + k * STEP for k in range(6)]
    for n, s in enumerate(starts, 1):  # 6 steps: the table prints their mean and the slowest
        t.step(n, s)
        fed(t, s, 5, 9995, 10, launch_at=s)
    p = t.write("six_steps.json")
    doc = js([p])
    assert len(doc["steps"]) == 6, doc["steps"]
    out = advise([p], "--width", "120").stdout
    assert "mean of 6" in out, out
    for label, key in (("wall", "wall_us"), ("busy", "busy_us"), ("idle", "idle_us"),
                       ("critical path", "critical_path_us")):
        mean = sum(st[key] for st in doc["steps"]) / 6
        m = re.search(r"^ +%s +([0-9.]+) +([0-9.]+)$" % re.escape(label), out, re.M)
        assert m and abs(float(m.group(1)) - mean) < 0.001, (label, mean, out)
    assert doc["steps"][0]["critical_path_us"] > 0, doc["steps"][0]


@case("inputs: --step NAME (numbered from 0), a directory, stdin, a trace without steps")
def _():
    t = sync_trace()
    for n, s in enumerate(step_starts()):  # the same steps, as a user range of another name
        t.x("user_annotation", "train_step", s, STEP, **{"External id": 900 + n})
    p = t.write("sync_named.json")
    doc = js([p], "--step", "train_step")
    assert doc["step_name"] == "train_step" and [s["step"] for s in doc["steps"]] == [0, 1, 2], doc["steps"]
    f = first(doc)
    assert (f["rule"], f["cost_us"], [o["step"] for o in f["occurrences"]]) == ("sync", 2005.0, [0, 1, 2]), f
    # a directory stands for the traces in it, by name; stdin is "-"
    d = tempfile.mkdtemp(dir=TMP)
    for name in ("b.json", "a.json"):
        shutil.copy(p, os.path.join(d, name))
    doc = js([d])
    assert [os.path.basename(x["file"]) for x in doc["files"]] == ["a.json", "b.json"], doc["files"]
    assert [x["rank"] for x in doc["files"]] == [0, 1], doc["files"]  # no rank in them: their positions
    with open(p) as f:
        r = subprocess.run([*WRAP, FT, "advise", "-f", "json", "-"], stdin=f, capture_output=True, text=True)
    assert r.returncode == 0 and first(json.loads(r.stdout))["cost_us"] == 2005.0, r.stderr
    # no ProfilerStep#N: the whole trace is one step (number -1: its first start, the launch at 1000 us,
    # to its last end, the last kernel at 10995 us), said once on stderr
    t = Trace()
    fed(t, 1000, 5, 9995, 10, launch_at=1000)
    r = advise([t.write("no_steps.json")], "-f", "json")
    doc = json.loads(r.stdout)
    assert doc["step_name"] is None and [(s["step"], s["start_us"], s["wall_us"]) for s in doc["steps"]] == [(-1, 1000.0, 9995.0)], doc
    assert r.stderr == "flagtrace advise: note: no ProfilerStep#N range: each trace is one step\n", r.stderr
    # a trace with no device work: said, not advised on silently; -q: no notes
    t = Trace()
    t.op("aten::empty", 1000, 100)
    p = t.write("cpu_only.json")
    r = advise([p], "-f", "json")
    assert r.stderr.splitlines()[-1] == f"flagtrace advise: note: {p} has no device work in its steps: the device " \
        "reads as idle", r.stderr
    assert advise([p], "-q").stderr == ""


def one_line_error(args, want, rc=2):
    r = subprocess.run([*WRAP, FT, "advise", *args], capture_output=True, text=True)
    assert r.returncode == rc and r.stdout == "", (args, r.returncode, r.stdout[:500])
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flagtrace advise: ") and re.search(want, lines[0]), (args, lines)


@case("bad input: one line, exit 2")
def _():
    p = sync_trace().write("sync_bad.json")
    one_line_error([os.path.join(TMP, "missing.json")], "missing.json")
    notrace = os.path.join(TMP, "notrace.json")
    with open(notrace, "w") as f:
        f.write("this is not json\n")
    one_line_error([notrace], "notrace.json")
    one_line_error(["--step", "NoSuchRange", p], "NoSuchRange")
    empty = tempfile.mkdtemp(dir=TMP)
    one_line_error([empty], re.escape(empty))
    one_line_error([], "no trace file given")
    one_line_error(["-f", "xml", p], "--format takes table, json or csv")
    one_line_error(["--min-share", "2", p], "--min-share")
    one_line_error(["--gap-us", "x", p], "--gap-us")
    one_line_error(["--bogus", p], "unknown option '--bogus'")
    one_line_error(["-", "-"], "stdin")
    r = subprocess.run([*WRAP, FT, "advise", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("usage: flagtrace advise") and "--step NAME" in r.stdout, r


@case("the committed traces: every step's busy and idle add up to its wall time")
def _():
    paths = sorted(glob.glob(os.path.join(DATA, "*.json.gz")))
    assert len(paths) >= 6, paths
    for p in paths:
        doc = js([p])
        assert doc["steps"], p
        check_steps(doc, p)
        costs = [f["cost_us"] for f in doc["findings"]]
        assert costs == sorted(costs, reverse=True), (p, costs)
        for f in doc["findings"]:
            assert f["rule"] in RULES and f["count"] >= 1 and f["share"] >= 0.01, (p, f)
            assert len(f["occurrences"]) == min(f["count"], 64), (p, f)
    # the batch pair as one job of two ranks: each file's steps under its own rank
    pair = [os.path.join(DATA, n) for n in ("batch8_torch_cuda.json.gz", "batch16_torch_cuda.json.gz")]
    doc = js(pair)
    assert [f["rank"] for f in doc["files"]] == [0, 1], doc["files"]
    assert {s["rank"] for s in doc["steps"]} == {0, 1}, doc["steps"]

shutil.rmtree(TMP, ignore_errors=True)
results.finish()
