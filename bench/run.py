#!/usr/bin/env python3
"""Runs flagtrace's benchmarks (P1-P7, docs/performance.md) and writes one dated markdown table.

  bench/run.py --build BUILD --out DIR          CPU only: P4 synthetic, P5 synthetic, P6 synthetic
  bench/run.py --gpu --build BUILD --out DIR    + P1..P7 on the GPU (scripts/gpu-check.sh does this)
  bench/run.py --gpu --only P3 ...              only the rows named (P1..P7, comma-separated)
  bench/run.py --readme-from FILE.json          docs/performance.md's latest table from a run's rows

Every figure is a ratio against a baseline measured in this same run on this machine;
targets are judged here and written next to the figure, never asserted.

Method for P1-P3, "lockstep": the processes compared are started together and kept
alive; each, pinned to the same one CPU, runs one loop when told and waits in read()
meanwhile, and they take turns: a round runs every side once, the order rotated and
reversed from round to round. A round's sides are a fraction of a second apart, so
the host's slow spells (this VM's launch and Python costs change by 20-40 % from one
second to the next and from one CPU to the next) hit both sides of a pair alike,
which separate processes run one after the other could not give. The C launch loop's
sides are each measured against the bare turns right before and after their own (the
bare side runs between every two others): a side further from its reference turn
scattered more. Torch runs several (base, ft) process pairs per group, each pair's
turns side by side: a process keeps a speed offset of its own from its start, mostly
its memory layout, so pairs are the samples. Layout blocking: P1-P3's processes run
with ASLR off, and the processes compared with each other (a torch pair, a launch-loop
group) share one layout drawn for them (layout()), different from pair to pair; the
figure still averages over layouts, but a pair's two processes no longer differ by
two independent ones (--aslr: as before). The figure is the median of the per-round
ratios; its 95 % interval is bootstrapped over process groups (torch: pairs) and then
over rounds within each drawn one, so that what a group's processes share (their
start, and their layout where ASLR is on) counts as well as the round-to-round noise.
P4-P6 repeat whole processes. Verdict: "pass" only when the whole interval meets the target, "MISS"
when the whole interval misses it, "within noise" when it straddles it."""
import argparse
import datetime
import json
import os
import platform
import random
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import report_view  # noqa: E402  (the report viewer's rows: bench/report_view.py)
IDS = ("P1", "P2", "P3", "P4", "P5", "P6", "P7")
# P7 (issue 51): iterations of the allocation loop per turn (~20 ms bare on an H100, ~10 us each)
ALLOC_ITERS = 2000
# the raw-CUPTI floor's buffers when it measures CUPTI's own memory for P6
P6_FLOOR_BUFFER = 256 * 1024
# ops per torch loop: 10 000 keep a plain loop ~0.1 s and a profiled one (with its
# exit) ~0.4 s, so that a lockstep round is ~1 s and a group's start (torch's import
# and CUDA init, ~9 s) stays the larger part
TORCH_ITERS = 10000
README_BEGIN = "<!-- bench/run.py: latest GPU table (begin) -->"
README_END = "<!-- bench/run.py: latest GPU table (end) -->"


def sh(cmd, env=None, check=True, stderr=False):
    """Runs cmd; returns its stdout. Its stderr passes through (progress, diagnostics),
    or with stderr, is returned too: (stdout, stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE if stderr else None, text=True, env=e)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-2000:]}{(r.stderr or '')[-2000:]}")
    return (r.stdout, r.stderr) if stderr else r.stdout


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON line in: {text[-500:]}")


def mm(xs):
    return min(xs), statistics.median(xs)


def _resampled(est, draw, stat, n, seed):
    """est, and the 95 % interval of stat over n draws (draw(rnd) -> one resample);
    draws stat cannot take (a zero, an empty median) are skipped."""
    rnd = random.Random(seed)
    vals = []
    for _ in range(n):
        try:
            vals.append(stat(draw(rnd)))
        except (ZeroDivisionError, ValueError):
            continue
    vals.sort()
    if not vals:
        return est, est, est
    return est, vals[int(0.025 * (len(vals) - 1))], vals[int(0.975 * (len(vals) - 1) + 0.5)]


def bootstrap(samples, stat, n=2000, seed=17):
    """stat over samples, and its bootstrap 95 % interval. samples is one list of
    paired rounds (resampled together) or a tuple of independent lists (each
    resampled on its own). Seeded: the same data give the same interval."""
    if isinstance(samples, tuple):
        def draw(rnd):
            return tuple([xs[rnd.randrange(len(xs))] for _ in xs] for xs in samples)
    else:
        def draw(rnd):
            return [samples[rnd.randrange(len(samples))] for _ in samples]
    return _resampled(stat(samples), draw, stat, n, seed)


def flanked_order(names, ref, r):
    """Round r's turns when every side is measured against one reference side: the others
    in turn_order with the reference before, between and after them (ref, a, ref, b, ...,
    ref), so that each side's turn has a reference turn right before and right after it.
    With one reference turn per round of six, a side's per-round ratios spread more the
    further its turn was from the reference's: IQR of the log ratio 0.041 one turn away,
    0.069-0.073 four or five turns away (the run on 853113e)."""
    out = [ref]
    for n in turn_order([x for x in names if x != ref], r):
        out += [n, ref]
    return out


def pair_order(npairs, r):
    """Round r's turns over npairs (base, ft) process pairs, as (pair, side): the pairs in
    turn_order, each pair's two turns next to each other, ab or ba as turn_order gives
    for two sides at round r + pair (no side always first)."""
    return [(i, side) for i in turn_order(list(range(npairs)), r) for side in turn_order(["base", "ft"], r + i)]


def layout(key):
    """The memory layout drawn for one process pair (torch) or group (launch loop), key:
    environment that every process of it gets, so that with ASLR off they share it (a
    stack offset from the environment's size, mmap and heap offsets that torch_bench.py
    and launch_loop take before anything else, Python's hash seed) while pairs differ.
    A process's speed offset is mostly its layout: 12 processes of one kind had offsets
    of SD 0.85 % with ASLR and 0.29 % without; 6 (base, ft) pairs' ratios SD 1.08 %
    with it and 0.38 % with ASLR off and a seed per pair (the run on 256f475). Drawn
    from the key alone: a run's layouts are the same every time."""
    rnd = random.Random(f"flagtrace bench layout {key}")
    return {"PYTHONHASHSEED": str(rnd.randrange(1, 2 ** 32)), "FT_BENCH_STACK_PAD": "x" * rnd.randrange(32768),
            "FT_BENCH_MMAP_PAD": str(4096 * rnd.randrange(1024)), "FT_BENCH_HEAP_PAD": str(16 * rnd.randrange(4096))}


def no_aslr_prefix():
    """The command prefix that starts a program with ASLR off (setarch -R; the setting
    is inherited by its children, so `flagtrace record`'s program has it too), or []
    where setarch is missing or refused."""
    cmd = ["setarch", platform.machine(), "-R"]
    try:
        ok = shutil.which("setarch") and subprocess.run(cmd + ["true"], capture_output=True).returncode == 0
    except OSError:
        ok = False
    return cmd if ok else []


def group_bootstrap(groups, stat, n=2000, seed=17):
    """stat over the rounds of every group, and its 95 % interval from a two-stage
    bootstrap: groups drawn with replacement, then rounds within each drawn group.
    Seeded: the same data give the same interval."""
    def draw(rnd):
        out = []
        for _ in groups:
            g = groups[rnd.randrange(len(groups))]
            out += [g[rnd.randrange(len(g))] for _ in g]
        return out
    return _resampled(stat([x for g in groups for x in g]), draw, stat, n, seed)


def judge(ci, target, at_most, quick):
    """pass only when the whole interval meets the target; MISS when the whole
    interval misses it; otherwise the data cannot tell (within noise). No target:
    a row shown for comparison only."""
    if quick:
        return "(quick mode, not judged)"
    if target is None:
        return "not judged"
    _, lo, hi = ci
    if at_most:
        return "pass" if hi <= target else "MISS" if lo > target else "within noise"
    return "pass" if lo >= target else "MISS" if hi < target else "within noise"


def fmt_ci(ci, digits=3, suffix=""):
    est, lo, hi = ci
    if lo == hi == est:  # a single figure (one process): no interval to show
        return f"{est:.{digits}f}{suffix}"
    return f"{est:.{digits}f}{suffix} [{lo:.{digits}f}, {hi:.{digits}f}]"


def row(pid, what, peer, ours, ci, target_text, target, at_most, quick, digits=3, suffix=""):
    """One table row; ci is (estimate, low, high), all three equal for a single figure."""
    return {"id": pid, "what": what, "peer": peer, "flagtrace": ours, "ratio": fmt_ci(ci, digits, suffix),
            "target": target_text, "verdict": judge(ci, target, at_most, quick), "estimate": ci[0],
            "low": ci[1], "high": ci[2]}


def whole_run_overhead(group, k):
    """A launch-loop side's overhead over a group's rounds: the sum of its turns (item
    k + 1 of each round) over the sum of the bare turns around them (item k), less 1."""
    return sum(r[k + 1] for r in group) / sum(r[k] for r in group) - 1


def overhead_ratio(groups):
    """P2's statistic over launch-loop groups, each a list of rounds (floor's bare, floor,
    record's bare, record): per group each side's overhead over its whole run (the sum of
    its turns over the sum of the bare turns around them, less 1), the group's ratio ours /
    floor's; the median over groups. Sums, not per-round medians: a CUPTI tracer pays
    for a full buffer every few turns (the floor's 8 MiB, ~3 turns of 10,000 launches:
    1.8 against 1.5 times bare in the 9c3989c run, period 3), so a per-round median
    leaves out whichever side's buffer turns fall outside the middle; per-round medians
    said 0.977 [0.891, 1.128] on that run's data, these sums 1.023 [0.974, 1.089]."""
    ratios = []
    for g in groups:
        o_floor = whole_run_overhead(g, 0)
        if o_floor <= 0:
            raise ValueError("no floor overhead")
        ratios.append(whole_run_overhead(g, 2) / o_floor)
    return statistics.median(ratios)


def pair_ratio(pairs):
    """The median of per-pair ratios b / a."""
    return statistics.median(b / a for a, b in pairs)


def turn_order(names, r):
    """Round r's order: rotated every second round, reversed in odd rounds (ab, ba,
    ba, ab, ...), so that no side is always first or always right after the same
    other side."""
    k = (r // 2) % len(names)
    order = list(names[k:]) + list(names[:k])
    return order[::-1] if r % 2 else order


class Server:
    """A measured process kept alive for lockstep rounds: it prints a ready line, then
    answers each command line on stdin with one result line (launch_loop serve,
    torch_bench.py serve). Its stderr passes through."""

    def __init__(self, cmd, env=None, timeout=300):
        e = dict(os.environ)
        e.update(env or {})
        self.cmd, self.timeout = cmd, timeout
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=e, bufsize=1)
        self.pid = self.p.pid  # taskset and setarch exec: record's own (capture --job takes it)

    def _line(self):
        ready, _, _ = select.select([self.p.stdout], [], [], self.timeout)
        line = self.p.stdout.readline() if ready else None
        if not line:
            self.p.kill()
            rc = self.p.wait()
            self.p.stdout.close()
            raise RuntimeError(f"{' '.join(self.cmd)}: " + (f"exit {rc} before answering" if line == "" else
                                                            f"no answer in {self.timeout} s"))
        return line.strip()

    def ready(self):
        """The first line (launch_loop: "ready"; torch_bench: a JSON object)."""
        return self._line()

    def send(self, cmd):
        """One command, its answer read later (answer()): several sides can work at once.
        A side that has ended already is said by the read of its answer ("exit N before
        answering"), not by a broken pipe here: which one comes first is a race."""
        try:
            self.p.stdin.write(cmd + "\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            pass

    def answer(self):
        return self._line()

    def ask(self, cmd):
        self.send(cmd)
        return self._line()

    def end_input(self):
        """End of input: the process ends (a `flagtrace record` writes its trace)."""
        try:
            self.p.stdin.close()
        except BrokenPipeError:  # it had already ended
            pass

    def close(self):
        """end_input(), then its exit status."""
        self.end_input()
        rc = self.p.wait()
        self.p.stdout.close()
        return rc


def machine(gpu, commit, dirty):
    lines = [f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"- flagtrace commit: {commit}{' (with uncommitted changes)' if dirty else ''}"]
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    lines.append(f"- host: {platform.node()}, {os.cpu_count()} CPUs ({cpu}), {platform.platform()}")
    if gpu:
        smi = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], check=False).strip()
        nvcc = sh(["nvcc", "--version"], check=False).strip().splitlines()
        torch_v = sh([sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
                     check=False).strip()
        gpus = smi.splitlines()
        smi = (f"{len(gpus)} x {gpus[0]}" if len(set(gpus)) == 1 else "; ".join(gpus)) if gpus else "none"
        lines.append(f"- GPU: {smi} (name, driver)")
        lines.append(f"- CUDA toolkit: {nvcc[-1] if nvcc else 'unknown'}")
        lines.append(f"- torch: {torch_v or 'not importable'}")
    return lines


def gzip_backend(build):
    """The deflate the build's traces are written with (zlib or isa-l), from --version."""
    exe = os.path.join(build, "flagtrace")
    if not os.path.exists(exe):
        return "unknown (no flagtrace binary)"
    m = re.search(r"gzip ([\w-]+)", sh([exe, "--version"], check=False))
    return m[1] if m else "unknown"


# ---- CPU: the synthetic writer and stats benches (their own markdown) ----

def cpu_part(build, quick, gpu=False):
    """On the GPU host (gpu) only what the GPU table needs from that host: the writer's
    synthetic and replayed throughput (P4), 2 repetitions, without the old writer's rows
    (time). The reader, its memory and the fake-CUPTI capture are judged in the CPU-only
    run (the GPU table has their real rows)."""
    flag = ["--quick"] if quick else ["--reps", "2", "--no-old"] if gpu else []

    def run(exe, *extra):  # its "# title" line becomes a plain sentence under our heading
        text = sh([os.path.join(build, "bench", exe)] + flag + list(extra)).strip()
        text = re.sub(r"^# ", "", text, flags=re.M)
        return re.sub(r"^([^|\n].*)\n\|", r"\1\n\n|", text, flags=re.M)  # a table needs a blank line before it

    # P4 on a real capture without a GPU: an H200 trace's slices replayed to 1 M events
    replay = ["--replay", os.path.join(ROOT, "tests", "data", "sample_h200.json.gz")]
    doc = ["## P4 / P6 synthetic: trace writer (bench/bench_writer.c)", "", run("bench_writer", *replay), ""]
    if gpu:
        return doc
    doc += ["## P5 synthetic: stats reader (bench/bench_stats.c)", "", run("bench_stats"), ""]
    doc += ["## P5 join: crafted External ids against sequential ones (bench/bench_stats.c --join)", "",
            run("bench_stats", "--join"), ""]
    doc += stats_memory(build, quick) + stats_split(build, quick) + stats_merge(build, quick) + stats_hta(build, quick)
    doc += stats_ops(build, quick) + stats_model(build, quick) + stats_diff(build, quick) + stats_advise(build, quick)
    doc += python_get_trace(build, quick)
    doc += fake_capture(build, quick)
    doc += report_view.section(build, quick)  # the HTML report's timeline in headless chromium
    if os.path.exists(os.path.join(build, "bench", "bench_kineto")):  # built with -DFT_KINETO_SRC
        doc += ["## P3: the kineto adaptor's per-event export cost, no torch (bench/bench_kineto.cpp)", "",
                run("bench_kineto"), ""]
    return doc


def stats_split(build, quick, path=None):
    """P5 split: where reading a ~1 M-entry gzip trace goes (inflate zlib / ISA-L, yajl alone, our parser alone, the
    reader, the whole pipelined read), bench_stats --split; on a synthetic trace unless path is given."""
    if quick and not path:
        return []
    exe = os.path.join(build, "bench", "bench_stats")
    tmp = tempfile.mkdtemp(prefix="ftbench.")
    try:
        if not path:
            path = os.path.join(tmp, "split.json.gz")
            sh([exe, "--write", path, "500000"], env={"FLAGOS_TRACER_LIBRARY": "/nonexistent"})
        text = re.sub(r"^# ", "", sh([exe, "--split", path]).strip(), flags=re.M)
        return ["## P5 split: reading a gzip trace", "", re.sub(r"^([^|\n].*)\n\|", r"\1\n\n|", text, flags=re.M), ""]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stats_merge(build, quick):
    """P5 merge (issue 36): `flagtrace stats --merge` over 10 000 partial summaries, one rank file each
    (tests/e2e/rank_traces.py: 12 launches, copies, sets, ops), whole process, median of 5 runs; beside it
    one `flagtrace stats` over the 10 000 traces themselves. The partials are 50 written by `stats
    --partial`, each copied under 200 names, ranks and sources (the merge's work depends on their contents only).
    Target: < 1 s."""
    ft = os.path.join(build, "flagtrace")
    if not os.path.exists(ft):
        return []
    sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
    from rank_traces import rank_trace  # noqa: E402
    n, reps = (2000, 1) if quick else (10000, 5)
    tmp = tempfile.mkdtemp(prefix="ftbench.")
    try:
        templates = []
        for r in range(50):
            src = os.path.join(tmp, f"t{r}.json")
            with open(src, "w") as f:
                json.dump(rank_trace(r), f)
            templates.append(json.loads(sh([ft, "stats", "--partial", src])))
        traces, parts = [], []
        for i in range(n):
            doc = json.loads(json.dumps(templates[i % 50]))
            trace = os.path.join(tmp, f"rank{i:05d}.json")
            doc["strings"][doc["files"][0]["path"]] = trace
            doc["files"][0]["meta"]["rank"] = i
            # a source of its own: a merge refuses two partials of one trace (issue 49)
            doc["files"][0]["source"].update(digest="%016x" % (i + 1), ino=i + 1)
            parts.append(os.path.join(tmp, f"part{i:05d}.json"))
            with open(parts[-1], "w") as f:
                json.dump(doc, f)
            with open(trace, "w") as f:
                json.dump(dict(rank_trace(i % 50), distributedInfo={"rank": i}), f)
            traces.append(trace)

        def timed(args):
            t0 = time.perf_counter()
            out = sh([ft, "stats", "-f", "json", *args])
            return time.perf_counter() - t0, out

        merge = [timed(["--merge", *parts]) for _ in range(reps)]
        direct = [timed(traces) for _ in range(reps)]
        same = merge[0][1] == direct[0][1]
        tm, td = sorted(t for t, _ in merge), sorted(t for t, _ in direct)
        med_m, med_d = statistics.median(tm), statistics.median(td)
        verdict = "(quick mode, not judged)" if quick else "pass" if med_m < 1 else "MISS"
        size = sum(os.path.getsize(p) for p in parts)
        return ["## P5 merge: `flagtrace stats --merge` over partial summaries (whole process)", "",
                f"{n:,} partials of one rank file each ({size / 1e6:.1f} MB of JSON), {reps} runs; the merged JSON "
                f"{'equals' if same else 'DIFFERS from'} one `stats` over the {n:,} traces.", "",
                "| command | min s | median s | median vs stats over the traces | target |", "|---|---|---|---|---|",
                f"| `stats --merge` {n:,} partials | {tm[0]:.3f} | {med_m:.3f} | {med_m / med_d:.2f}x | "
                f"< 1 s: {verdict} |",
                f"| `stats` over the {n:,} traces (baseline) | {td[0]:.3f} | {med_d:.3f} | - | - |", ""]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


HTA_SCRIPT = r"""
import io, os, sys, tempfile, time
from contextlib import redirect_stderr, redirect_stdout
os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
with tempfile.TemporaryDirectory() as d:
    os.symlink(os.path.abspath(sys.argv[2]), os.path.join(d, os.path.basename(sys.argv[2])))
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        t1 = time.perf_counter()
        a = TraceAnalysis(trace_dir=d)
        t2 = time.perf_counter()
        a.get_temporal_breakdown(visualize=False)
        t3 = time.perf_counter()
        a.get_comm_comp_overlap(visualize=False)
        t4 = time.perf_counter()
        a.get_cuda_kernel_launch_stats(visualize=False)
        t5 = time.perf_counter()
        a.get_queue_length_summary(ranks=[0])
        t6 = time.perf_counter()
print(t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t6 - t0)
"""


def synthetic_1m(build):
    """(flagtrace, a temporary directory, the 1 M-event synthetic gzip trace in it: bench_stats --write 476190,
    2.1 events a launch), or (None, None, None) when they are not built; the caller removes the directory."""
    ft, exe = os.path.join(build, "flagtrace"), os.path.join(build, "bench", "bench_stats")
    if not os.path.exists(ft) or not os.path.exists(exe):
        return None, None, None
    tmp = tempfile.mkdtemp(prefix="ftbench.")
    big = os.path.join(tmp, "t1m.json.gz")
    sh([exe, "--write", big, "476190"], env={"FLAGOS_TRACER_LIBRARY": "/nonexistent"})
    return ft, tmp, big


def stats_timed(ft, args, trace, reps, rss_reps):
    """`flagtrace stats -f json ARGS TRACE`: the median wall time of reps runs (whole process) and
    the least peak RSS (KiB) of rss_reps more."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sh([ft, "stats", "-q", "-f", "json", *args, trace])
        out.append(time.perf_counter() - t0)
    return statistics.median(out), min(peak_rss_kb([ft, "stats", "-q", "-f", "json", *args, trace])
                                       for _ in range(rss_reps))


def stats_hta(build, quick):
    """P5 HTA (issue 36): `flagtrace stats -r temporal,overlap,launch,queue` on the 1 M-event synthetic
    trace (bench_stats --write: a runtime call and a kernel per launch, correlation ids and streams, two
    devices), whole process, median of 5, and its peak RSS, beside the default reports on the same trace;
    HTA's equivalents (get_temporal_breakdown, get_comm_comp_overlap, get_cuda_kernel_launch_stats,
    get_queue_length_summary, its trace load apart) once on the same trace, when FT_HTA_PATH names HTA's
    source and /usr/bin/python3 has pandas."""
    ft, tmp, big = synthetic_1m(build)
    if not ft:
        return []
    reps = 1 if quick else 5
    try:

        def timed(args):
            return stats_timed(ft, args, big, reps, 1 if quick else 3)

        base, hta = timed([]), timed(["-r", "temporal,overlap,launch,queue"])
        both = timed(["-r", "all,temporal,overlap,launch,queue"])
        each = {r: timed(["-r", r]) for r in ("temporal", "overlap", "launch", "queue")}
        # -q: the synthetic trace's note (no device activity: written without a tracer) is expected
        events = json.loads(sh([ft, "stats", "-q", "-r", "temporal", "-f", "json", big]))["events"]
        rows = ["## P5 HTA: HTA's analyses in `flagtrace stats` (whole process) and in HTA", "",
                f"Synthetic gzip trace of {events:,} events (bench_stats --write 476190); median of {reps}.", "",
                "| what | time (s) | peak RSS (MiB) |", "|---|---|---|",
                f"| `stats` (default reports) | {base[0]:.3f} | {base[1] / 1024:.1f} |",
                f"| `stats -r temporal,overlap,launch,queue` | {hta[0]:.3f} | {hta[1] / 1024:.1f} |",
                f"| `stats -r all,temporal,overlap,launch,queue` | {both[0]:.3f} | {both[1] / 1024:.1f} |"]
        rows += [f"| `stats -r {r}` | {v[0]:.3f} | {v[1] / 1024:.1f} |" for r, v in each.items()]
        rows += ["", "(One switch keeps the state of all four: any one of them costs what the four cost.)", ""]
        path = os.environ.get("FT_HTA_PATH", "")
        if os.path.isfile(os.path.join(path, "hta", "trace_analysis.py")) and subprocess.run(
                ["/usr/bin/python3", "-c", "import pandas"], capture_output=True).returncode == 0:
            t = [float(x) for x in sh(["/usr/bin/python3", "-c", HTA_SCRIPT, path, big]).split()]
            rows += ["HTA (its source at FT_HTA_PATH, Debian's pandas) on the same trace, once, beside the"
                     " flagtrace process that answers the same (whole process: its read included):", "",
                     "| HTA | time (s) | flagtrace's equivalent | its time (s) |", "|---|---|---|---|"]
            rows.append(f"| trace load (TraceAnalysis) | {t[0]:.3f} | the read | - |")
            for name, v, r in zip(("get_temporal_breakdown", "get_comm_comp_overlap", "get_cuda_kernel_launch_stats",
                                   "get_queue_length_summary"), t[1:5], ("temporal", "overlap", "launch", "queue")):
                rows.append(f"| {name} (load excluded) | {v:.3f} | `-r {r}` | {each[r][0]:.3f} |")
            rows += [f"| the four analyses, load excluded | {sum(t[1:5]):.3f} | - | - |",
                     f"| whole process (python start, import, load, the four) | {t[5]:.3f} | "
                     f"`-r temporal,overlap,launch,queue` | {hta[0]:.3f} |", ""]
        else:
            rows += ["HTA not measured: set FT_HTA_PATH to its source (and install python3-pandas).", ""]
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


HTA_ADVISE_SCRIPT = r"""
import io, json, os, sys, tempfile, time
from contextlib import redirect_stderr, redirect_stdout
os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
sys.path.insert(0, sys.argv[1])
say = lambda **kv: (sys.__stdout__.write(json.dumps(kv) + "\n"), sys.__stdout__.flush())
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
with tempfile.TemporaryDirectory() as d:
    os.symlink(os.path.abspath(sys.argv[2]), os.path.join(d, os.path.basename(sys.argv[2])))
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        t1 = time.perf_counter()
        a = TraceAnalysis(trace_dir=d)
        say(load_s=time.perf_counter() - t1)
        rank = sorted(a.t.traces)[0]
        t2 = time.perf_counter()
        try:
            a.get_idle_time_breakdown(ranks=[rank], visualize=False)
            say(idle_s=time.perf_counter() - t2)
        except Exception as e:
            say(idle_error=f"{type(e).__name__}: {e}"[:160])
        t3 = time.perf_counter()
        try:
            got = a.critical_path_analysis(rank=rank, annotation="", instance_id=None)  # "": the whole trace
            say(**({"critical_path_s": time.perf_counter() - t3} if got and got[1] else
                   {"critical_path_error": "no critical path (returned None or not successful)"}))
        except Exception as e:
            say(critical_path_error=f"{type(e).__name__}: {e}"[:160])
say(whole_s=time.perf_counter() - t0)
"""


def has_advise(ft, pin=()):
    """Whether this flagtrace has the advise command (issue 50)."""
    try:
        sh(list(pin) + [ft, "advise", "--help"])
        return True
    except (RuntimeError, OSError):
        return False


def advise_timed(ft, trace, reps, rss_reps, pin=()):
    """`flagtrace advise -q -f json TRACE`, whole process: reps wall times (s) and the least peak RSS (KiB) of
    rss_reps more runs (None when rss_reps is 0)."""
    cmd = list(pin) + [ft, "advise", "-q", "-f", "json", trace]
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sh(cmd)
        t.append(time.perf_counter() - t0)
    return t, (min(peak_rss_kb(cmd) for _ in range(rss_reps)) if rss_reps else None)


def hta_idle_critical_path(trace, timeout=None):
    """HTA's get_idle_time_breakdown and critical_path_analysis (the whole trace: annotation "") on trace,
    once, with its trace load apart: a dict of seconds (load_s, idle_s, critical_path_s, whole_s) and of
    *_error where HTA raised; parts it had not reached at the time limit (FT_HTA_TIMEOUT, default 600 s)
    are missing and timed_out_s is set. None when FT_HTA_PATH does not name HTA's source or
    /usr/bin/python3 has no pandas."""
    path = os.environ.get("FT_HTA_PATH", "")
    if not os.path.isfile(os.path.join(path, "hta", "trace_analysis.py")) or subprocess.run(
            ["/usr/bin/python3", "-c", "import pandas"], capture_output=True).returncode:
        return None
    timeout = timeout or float(os.environ.get("FT_HTA_TIMEOUT", "600"))
    got = {}
    try:
        text = subprocess.run(["/usr/bin/python3", "-c", HTA_ADVISE_SCRIPT, path, trace], capture_output=True,
                              text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired as e:
        text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        got["timed_out_s"] = timeout
    for line in text.splitlines():
        if line.startswith("{"):
            got.update(json.loads(line))
    return got


def advise_rows(what, times, rss_kb, hta, quick):
    """P5 advise's markdown: advise's whole-process time (target < 1 s) and peak RSS, HTA's idle-time
    breakdown and critical path on the same trace beside it (or why not)."""
    mn, med = mm(times)
    verdict = "(quick mode, not judged)" if quick else "pass" if med < 1 else "MISS"
    rows = ["## P5 advise: `flagtrace advise` (whole process) and HTA's idle time and critical path", "",
            f"{what}; advise: {len(times)} run{'s' if len(times) != 1 else ''}.", "",
            "| what | min s | median s | peak RSS (MiB) | target |", "|---|---|---|---|---|",
            f"| `flagtrace advise -f json` | {mn:.3f} | {med:.3f} | {'-' if rss_kb is None else f'{rss_kb / 1024:.1f}'} | "
            f"< 1 s: {verdict} |", ""]
    if hta is None:
        return rows + ["HTA not measured: set FT_HTA_PATH to its source (and install python3-pandas).", ""]

    def cell(key):
        if key in hta:
            return f"{hta[key]:.3f}"
        if key.replace("_s", "_error") in hta:
            return "failed: " + hta[key.replace("_s", "_error")].replace("|", "/")
        return f"not reached in {hta['timed_out_s']:.0f} s" if "timed_out_s" in hta else "-"

    rows += ["HTA (its source at FT_HTA_PATH, Debian's pandas) on the same trace, once; advise gives both "
             "(its steps' idle by cause with HTA's host wait / kernel wait / other, and the critical path) in the "
             "process above, its read included:", "",
             "| HTA | time (s) |", "|---|---|",
             f"| trace load (TraceAnalysis) | {cell('load_s')} |",
             f"| get_idle_time_breakdown (load excluded) | {cell('idle_s')} |",
             f"| critical_path_analysis, the whole trace (load excluded) | {cell('critical_path_s')} |",
             f"| whole process (python start, import, load, the two) | {cell('whole_s')} |", ""]
    if "whole_s" in hta and not quick:
        rows += [f"advise's median against HTA's whole process: {hta['whole_s'] / med:.0f}x faster.", ""]
    return rows


def stats_advise(build, quick):
    """P5 advise (issue 50): `flagtrace advise -f json` on the 1 M-event synthetic trace (bench_stats --write
    476190; quick: 50 000 launches), whole process, median of 5, with its peak RSS; HTA's idle-time breakdown
    and critical path on the same trace beside it when FT_HTA_PATH names HTA's source. Target: < 1 s."""
    ft, exe = os.path.join(build, "flagtrace"), os.path.join(build, "bench", "bench_stats")
    if not os.path.exists(ft) or not os.path.exists(exe):
        return []
    if not has_advise(ft):
        return ["## P5 advise", "", f"skipped: {ft} has no advise command", ""]
    tmp = tempfile.mkdtemp(prefix="ftbench.")
    try:
        launches = 50000 if quick else 476190
        trace = os.path.join(tmp, "advise.json.gz")
        sh([exe, "--write", trace, str(launches)], env={"FLAGOS_TRACER_LIBRARY": "/nonexistent"})
        times, rss = advise_timed(ft, trace, 1 if quick else 5, 1 if quick else 3)
        hta = None if quick else hta_idle_critical_path(trace)
        return advise_rows(f"Synthetic gzip trace, bench_stats --write {launches} ({2.1 * launches / 1e6:.1f} M "
                           "events: a runtime call and a kernel per launch, an op range per 10 launches)",
                           times, rss, hta, quick)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stats_ops(build, quick):
    """P5 ops (issue 36): `flagtrace stats -r ops,ops_shapes` (key_averages' columns: every op, range and runtime
    call nested per thread at the file's end) against `-r kernels,api` on the same 1 M-event synthetic trace
    (bench_stats --write: 476 190 launches, a range around every tenth), whole process, median of 5, with peak
    RSS: what the nesting costs. torch's key_averages() works on a live profile, not a trace: no peer row."""
    ft, tmp, big = synthetic_1m(build)
    if not ft:
        return []
    reps = 1 if quick else 5
    try:

        base, ops = (stats_timed(ft, ["-r", r], big, reps, 1) for r in ("kernels,api", "ops,ops_shapes"))
        return ["## P5 ops: key_averages' columns in `flagtrace stats` (whole process)", "",
                f"Synthetic gzip trace, bench_stats --write 476190 (1 M events); median of {reps}.", "",
                "| what | time (s) | peak RSS (MiB) | vs kernels,api |", "|---|---|---|---|",
                f"| `stats -r kernels,api` (baseline) | {base[0]:.3f} | {base[1] / 1024:.1f} | - |",
                f"| `stats -r ops,ops_shapes` | {ops[0]:.3f} | {ops[1] / 1024:.1f} | {ops[0] / base[0]:.2f}x |", ""]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stats_model(build, quick):
    """P5 model (issue 50): `flagtrace stats --engine=model` (each file read into the event model, then replayed
    into the summary) against the default streaming read on the 1 M-event synthetic trace (bench_stats --write
    476190), whole process, median of 5, peak RSS: what holding the model costs."""
    ft, tmp, big = synthetic_1m(build)
    if not ft:
        return []
    reps = 1 if quick else 5
    try:
        base, model = (stats_timed(ft, [f"--engine={e}"], big, reps, 1) for e in ("stream", "model"))
        return ["## P5 model: `flagtrace stats --engine=model` against the streaming read (whole process)", "",
                f"Synthetic gzip trace, bench_stats --write 476190 (1 M events); median of {reps}.", "",
                "| what | time (s) | peak RSS (MiB) | vs stream |", "|---|---|---|---|",
                f"| `stats` (stream, baseline) | {base[0]:.3f} | {base[1] / 1024:.1f} | - |",
                f"| `stats --engine=model` | {model[0]:.3f} | {model[1] / 1024:.1f} | {model[0] / base[0]:.2f}x |", ""]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stats_diff(build, quick):
    """P5 diff (issue 37): `flagtrace diff A B` of two 1 M-event synthetic traces (bench_stats --write 476190, written
    twice) against `flagtrace stats -r ops A B`, which reads the same two files with the same ops' nesting in one
    process: what the alignment and the per-op kernels cost on top of the read. Whole process, median of 5, peak RSS.
    Issue 37's bound: under 2 s, memory bounded by distinct ops and kernels (the RSS is that of stats' read)."""
    ft, tmp, big = synthetic_1m(build)
    if not ft:
        return []
    reps = 1 if quick else 5
    try:
        other = os.path.join(tmp, "t1m_b.json.gz")
        sh([os.path.join(build, "bench", "bench_stats"), "--write", other, "476190"],
           env={"FLAGOS_TRACER_LIBRARY": "/nonexistent"})

        def timed(cmd):
            out = []
            for _ in range(reps):
                t0 = time.perf_counter()
                sh(cmd)
                out.append(time.perf_counter() - t0)
            return statistics.median(out), min(peak_rss_kb(cmd) for _ in range(1 if quick else 3))

        base = timed([ft, "stats", "-q", "-f", "json", "-r", "ops", big, other])
        diff = timed([ft, "diff", "-q", "-f", "json", big, other])
        verdict = "PASS" if diff[0] < 2.0 else "FAIL"
        return ["## P5 diff: `flagtrace diff` of two 1 M-event traces (whole process)", "",
                f"Two synthetic gzip traces, bench_stats --write 476190 each (1 M events); median of {reps}.", "",
                "| what | time (s) | peak RSS (MiB) | vs stats -r ops |", "|---|---|---|---|",
                f"| `stats -r ops A B` (baseline: the same read) | {base[0]:.3f} | {base[1] / 1024:.1f} | - |",
                f"| `diff A B` | {diff[0]:.3f} | {diff[1] / 1024:.1f} | {diff[0] / base[0]:.2f}x |", "",
                f"Issue 37's bound, under 2 s: {verdict} ({diff[0]:.3f} s).", ""]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


GET_TRACE_SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from flagtrace import analysis
import pandas
t1 = time.perf_counter()
df = analysis.get_trace(sys.argv[2])
t2 = time.perf_counter()
print(len(df), t1 - t0, t2 - t1)
"""


def python_get_trace(build, quick):
    """P5 get_trace (issue 50): flagtrace.analysis.get_trace() of the 1 M-event synthetic trace into a pandas
    DataFrame, one row per slice (`flagtrace columns` as raw arrays, numpy.frombuffer; the read into the model
    included), the imports apart; median of 5, with /usr/bin/python3 (Debian's numpy and pandas). Target < 2 s."""
    ft, tmp, big = synthetic_1m(build)
    if not ft or subprocess.run(["/usr/bin/python3", "-c", "import pandas"], capture_output=True).returncode:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        return ["## P5 get_trace: not measured (no build, or no pandas in /usr/bin/python3)", ""]
    reps = 1 if quick else 5
    try:
        env = dict(os.environ, FLAGTRACE_EXE=ft)
        runs = [sh(["/usr/bin/python3", "-c", GET_TRACE_SCRIPT, os.path.join(ROOT, "python"), big], env=env).split()
                for _ in range(reps)]
        rows, imp, t = int(runs[0][0]), statistics.median(float(r[1]) for r in runs), \
            statistics.median(float(r[2]) for r in runs)
        return ["## P5 get_trace: the event model into pandas (flagtrace.analysis.get_trace)", "",
                f"Synthetic gzip trace, bench_stats --write 476190 (1 M events, {rows:,} slices); median of {reps}.", "",
                "| what | time (s) | target |", "|---|---|---|",
                f"| `get_trace()`: `flagtrace columns` (read, model) + numpy/pandas frame | {t:.3f} | < 2 s "
                f"({'pass' if t < 2 else 'MISS'}) |",
                f"| `import flagtrace.analysis, pandas` (apart) | {imp:.3f} | - |", ""]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def peak_rss_kb(cmd):
    """Peak RSS of cmd in KiB: /usr/bin/time's (a small C parent), else wait4's, which also
    counts the Python child before its exec (a few MiB more, the same for every size)."""
    if os.path.exists("/usr/bin/time"):
        r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, check=True)
        return int(r.stderr.strip().splitlines()[-1])
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        raise RuntimeError(f"{' '.join(cmd)}: status {status}")
    return ru.ru_maxrss


def stats_memory(build, quick):
    """P5 memory: `flagtrace stats` peak RSS on synthetic traces of a few sizes (bench_stats --write:
    per launch a runtime call and a kernel on two devices, an op range per 10 launches), as bytes per
    device event between the sizes. Target (issue 14): at most 16 B per device event, for what grows with
    device events (busy %, the External id join: every report but the ops'); the ops' columns (issue 36) cost
    64 B per op and 16-43 B per External id, here one op per 10 launches: the default run, beside it, is
    not judged against the per-device-event bound."""
    ft = os.path.join(build, "flagtrace")
    if not os.path.exists(ft):
        return ["## P5 memory: `flagtrace stats` peak RSS", "", f"skipped: {ft} is not built", ""]
    sizes = [100000, 400000] if quick else [400000, 2000000, 4000000]
    rows = ["## P5 memory: `flagtrace stats` peak RSS (synthetic gzip traces, bench_stats --write)", "",
            "| slices | kernels (device events) | peak RSS | B per device event over the previous size | target |"
            " default reports (ops too): peak RSS | B per device event |",
            "|---|---|---|---|---|---|---|"]
    no_ops = ["-r", "kernels,api,memops,memsize,ranges,gpu_ranges,gpu,ranks"]
    tmp = tempfile.mkdtemp(prefix="ftbench.")
    try:
        prev = None
        env = {"FLAGOS_TRACER_LIBRARY": "/nonexistent"}
        for n in sizes:
            path = os.path.join(tmp, f"t{n}.json.gz")
            sh([os.path.join(build, "bench", "bench_stats"), "--write", path, str(n)], env=env)
            kb = min(peak_rss_kb([ft, "stats", *no_ops, path]) for _ in range(1 if quick else 3))
            kb_all = min(peak_rss_kb([ft, "stats", path]) for _ in range(1 if quick else 3))
            kernels = n // 2
            slope = "" if prev is None else (kb - prev[1]) * 1024 / (kernels - prev[0])
            slope_all = "" if prev is None else f"{(kb_all - prev[2]) * 1024 / (kernels - prev[0]):.1f}"
            cell = "" if prev is None else f"{slope:.1f}"
            judged = "" if prev is None else "≤ 16 B: " + ("(quick mode, not judged)" if quick else "pass" if slope <= 16 else "MISS")
            rows.append(f"| {n:,} | {kernels:,} | {kb / 1024:.1f} MiB | {cell} | {judged} | {kb_all / 1024:.1f} MiB | "
                        f"{slope_all} |")
            prev = (kernels, kb, kb_all)
            os.unlink(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows + [""]


def fake_capture(build, quick):
    """P6 and the exit's own costs through the real CUPTI tracer against the fake
    libcupti: two captures, each in its own process (a peak is measurable once)."""
    exe = os.path.join(build, "bench", "bench_capture")
    lib = os.path.join(build, "tests", "libfake_cupti.so")
    if not (os.path.exists(exe) and os.path.exists(lib)):
        return []
    got = [last_json(sh([exe, str(n)], env={"FLAGOS_TRACER_LIBRARY": lib}))
           for n in ((10000, 50000) if quick else (50000, 500000))]
    out = ["## P6 and the profile exit with the fake CUPTI (bench/bench_capture.c)", "",
           "The CUPTI tracer's own code against tests/fake_cupti (kernel launches in ranges of 10, as "
           "bench/gpu/capture_bench.cu), its two activity buffers in flight included.", "",
           "| events | peak RSS growth MB | B per event (total) | stop ms | counts ms | rows ms | "
           "foreach ns/event | target |", "|---|---|---|---|---|---|---|---|"]
    for r in got:
        grow = r["peak_rss"] - r["rss_before"]
        per = grow / r["events"]
        ok = "(quick mode, not judged)" if quick else ("pass" if per <= 64 else "MISS") if r is got[-1] else "-"
        out.append(f"| {r['events']:,} | {grow / 1e6:.1f} | {per:.1f} | {r['stop_s'] * 1e3:.1f} | "
                   f"{r['counts_s'] * 1e3:.1f} | {r['streams_s'] * 1e3:.1f} | {r['foreach_ns_per_event']:.1f} | "
                   f"≤ 64 B at the larger: {ok} |")
    a, b = got
    slope = ((b["peak_rss"] - b["rss_before"]) - (a["peak_rss"] - a["rss_before"])) / (b["events"] - a["events"])
    out += ["", f"Per additional event (slope between the two): {slope:.1f} B.", ""]
    return out


# ---- GPU ----

def first_cpu(cores):
    """The first CPU of a taskset list ("2,3,4,5", "2-5"), or None for ""."""
    m = re.match(r"\s*(\d+)", cores or "")
    return int(m.group(1)) if m else None


class Gpu:
    def __init__(self, build, tmp, reps, shape, cores, quick, io_cores=None, aslr=False):
        """shape: {groups, pairs, rounds, prof_rounds, loop_groups, loop_rounds} (main's
        options); io_cores: the CPUs of P4-P6's captures, writes and reads, and of the torch
        processes' start (default: cores); aslr: leave ASLR on and draw no layouts."""
        self.build, self.tmp, self.reps, self.quick = build, tmp, reps, quick
        # P1-P3's processes: ASLR off, each pair or group in a layout of its own (layout())
        self.norand = [] if aslr else no_aslr_prefix()
        self.shape = dict(shape)
        self.pin = ["taskset", "-c", cores] if cores else []
        io_cores = cores if io_cores is None else io_cores
        self.pin_io = ["taskset", "-c", io_cores] if io_cores else []
        self.cpu = first_cpu(cores)  # lockstep: every side on this one CPU
        self.pin1 = ["taskset", "-c", str(self.cpu)] if self.cpu is not None else []
        self.spawn = Server  # a stand-in in the tests
        self.ft = os.path.join(build, "flagtrace")
        self.loop = os.path.join(build, "bench", "gpu", "launch_loop")
        self.alloc_loop = os.path.join(build, "bench", "gpu", "alloc_loop")
        self.floor = os.path.join(build, "bench", "gpu", "libcupti_floor.so")
        self.capture = os.path.join(build, "bench", "gpu", "capture_bench")
        self.torch_bench = os.path.join(HERE, "gpu", "torch_bench.py")
        self.raw = []

    def note(self, what, data):
        self.raw.append({"what": what, **data})
        print(f"bench: {what}: {json.dumps(data)[:300]}", file=sys.stderr)

    def layout(self, key):
        """layout(key)'s environment when ASLR is off, else none (pads alone would be noise)."""
        return layout(key) if self.norand else {}

    @staticmethod
    def lockstep(servers, rounds, order, ask):
        """rounds of turns over live servers ({name: Server}), round r's in order(r) (a list
        of names, one may come more than once): per round, its (name, ask(name, server))
        turns as taken."""
        return [[(n, ask(n, servers[n])) for n in order(r)] for r in range(rounds)]

    @staticmethod
    def flanked(servers, rounds, ref, ask):
        """lockstep in flanked_order: per round {side: value} for every side but ref, ref: its
        values in turn order, and "around": {side: the mean of the ref turns right before
        and right after its own}."""
        out = []
        for turns in Gpu.lockstep(servers, rounds, lambda r: flanked_order(list(servers), ref, r), ask):
            refs, sides = [v for _, v in turns[::2]], turns[1::2]  # ref, side, ref, side, ..., ref
            got = dict(sides)
            got[ref] = refs
            got["around"] = {n: (refs[k] + refs[k + 1]) / 2 for k, (n, _) in enumerate(sides)}
            out.append(got)
        return out

    @staticmethod
    def pairs_lockstep(servers, npairs, rounds, ask):
        """lockstep over npairs process pairs (servers base0, ft0, base1, ...) in pair_order:
        a list of {name: value} per round."""
        def order(r):
            return [f"{side}{i}" for i, side in pair_order(npairs, r)]

        return [dict(turns) for turns in Gpu.lockstep(servers, rounds, order, ask)]

    def group(self, start, ready, body):
        """One process group: start() -> {name: Server}, all started before any is
        waited for; ready(name, server) reads its first line; body(servers) -> result.
        Every process is ended, and must exit 0."""
        t0 = time.perf_counter()
        servers = start()
        ok = False
        try:
            for name, srv in servers.items():
                ready(name, srv)
            t_ready = time.perf_counter()
            got = body(servers)
            ok = True
        finally:
            t_end = time.perf_counter()
            for srv in servers.values():  # all told first: their exits (CUDA's teardown) overlap
                srv.end_input()
            for name, srv in servers.items():
                rc = srv.close()
                if ok and rc != 0:
                    raise RuntimeError(f"bench: lockstep side {name} exited {rc}")
        t = time.perf_counter()
        print(f"bench: group of {', '.join(servers)}: {t - t0:.1f} s (start {t_ready - t0:.1f}, "
              f"rounds {t_end - t_ready:.1f}, exit {t - t_end:.1f})", file=sys.stderr)
        return got

    def p1_p2(self, launches, want):
        def record(name, *opts):  # a file per side, the same for every group: replaced (record
            # refuses that by default); the sides of a group end together
            return [self.ft, "record", *opts, "--force-overwrite", "-o", os.path.join(self.tmp, name + ".json.gz"),
                    "--"]

        variants = {"bare": ([], None)}
        if "P1" in want:
            variants["idle"] = (record("idle", "--capture-range=cudaProfilerApi"), None)
            variants["idle_preload"] = (record("idle_preload", "--inject=preload", "--capture-range=cudaProfilerApi"),
                                        None)
            variants["idle_cupti"] = (record("idle_cupti", "--inject=cuda", "--capture-range=cudaProfilerApi"), None)
            # record --on-demand (issue 39): waiting before any capture, and after one
            for name in ("on_demand", "on_demand_after"):
                variants[name] = ([self.ft, "record", "--on-demand", "--force-overwrite", "-o",
                                   os.path.join(self.tmp, name + "-%p-%n.json.gz"), "--"], None)
        if "P2" in want:
            variants["floor"] = ([], {"CUDA_INJECTION64_PATH": self.floor})
            variants["record"] = (record("record"), None)

        def start(g):  # every side of a group in the group's layout
            lay = self.layout(("loop", g))
            return {n: self.spawn(self.pin1 + self.norand + spec[0] + [self.loop, str(launches), "serve"],
                                  {**lay, **(spec[1] or {})})
                    for n, spec in variants.items()}

        def ready(n, sv):
            if sv.ready() != "ready":
                raise RuntimeError(f"bench: launch_loop ({n}) did not say ready")
            if n == "on_demand_after":  # one capture of the idle loop: what waits after it is measured
                sh(self.pin_io + [self.ft, "capture", "--job", str(sv.pid), "--duration", "200ms"])

        groups = [self.group(lambda g=g: start(g), ready,
                             lambda srv: self.flanked(srv, self.shape["loop_rounds"], "bare",
                                                      lambda n, sv: float(sv.ask("go"))))
                  for g in range(self.shape["loop_groups"])]
        self.note("launch loop µs/launch, by group and round", {"groups": groups})
        every = {n: [r[n] for g in groups for r in g] for n in variants if n != "bare"}
        rows = []
        b = mm([x for g in groups for r in g for x in r["bare"]])

        def pairs(side):  # each turn against the bare turns on either side of it
            return [[(r["around"][side], r[side]) for r in g] for g in groups]

        if "P1" in want:
            for side, what, target in (
                    ("idle", "CUDA C launch loop under `record --capture-range=cudaProfilerApi`, no "
                             "cudaProfilerStart (preload: the libcuda shim waits, no CUPTI call)", 1.01),
                    ("idle_preload", "the same with `--inject=preload` said explicitly", 1.01),
                    ("idle_cupti", "the same with `--inject=cuda`: CUPTI's callbacks wait (any CUPTI call costs "
                                   "this), for comparison", None),
                    ("on_demand", "the same under `record --on-demand`, before any capture (a control thread "
                                  "blocked in accept, no CUPTI call)", 1.01),
                    ("on_demand_after", "the same under `record --on-demand` after one 200 ms `flagtrace capture` "
                                        "(CUPTI finalized after it)", 1.01)):
                i = mm(every[side])
                rows.append(row("P1", what, f"{b[0]:.3f} / {b[1]:.3f} µs bare", f"{i[0]:.3f} / {i[1]:.3f} µs",
                                group_bootstrap(pairs(side), pair_ratio), "≤ 1.01" if target else "—", target, True,
                                self.quick))
        if "P2" in want:
            f, rc = mm(every["floor"]), mm(every["record"])

            rounds = [[(r["around"]["floor"], r["floor"], r["around"]["record"], r["record"]) for r in g]
                      for g in groups]
            # the overheads shown: medians over groups of each group's whole-run overhead
            o_floor, o_ft = (statistics.median(whole_run_overhead(g, k) for g in rounds) for k in (0, 2))
            rows.append(row("P2", f"launch loop under `flagtrace record` (overhead {o_ft * 100:.1f} %) vs the "
                            f"raw-CUPTI floor (overhead {o_floor * 100:.1f} %), same kinds; ratio of the overheads",
                            f"{f[0]:.3f} / {f[1]:.3f} µs (floor)", f"{rc[0]:.3f} / {rc[1]:.3f} µs",
                            bootstrap(rounds, overhead_ratio), "≤ 1.10", 1.10, True, self.quick))
        return rows

    def p7_memory(self, iters):
        """P7 (issue 51): the allocation loop (bench/gpu/alloc_loop.cu: cudaMallocAsync/cudaFreeAsync
        pairs, a cudaMalloc/cudaFree pair every 64) bare and under `record --memory=on` and
        `--memory=off`, in lockstep as the launch loop's P1 (each turn against the bare turns right
        before and after it, mem_groups groups of loop_rounds rounds). The judged figure: per round
        memory on's ratio to bare over memory off's, so that what record costs without memory
        (its API and kernel records) cancels."""
        def record(name, mem):
            return [self.ft, "record", f"--memory={mem}", "--force-overwrite", "-o",
                    os.path.join(self.tmp, name + ".json.gz"), "--"]

        # the floor's two sides: what CUPTI itself costs an allocation with memory records on
        # (bench/gpu/cupti_floor.c, CUPTI_FLOOR_MEMORY), whatever a tracer then does with them
        floor = {"CUDA_INJECTION64_PATH": self.floor}
        variants = {"bare": ([], None), "mem_off": (record("mem_off", "off"), None),
                    "mem_on": (record("mem_on", "on"), None), "floor_off": ([], floor),
                    "floor_on": ([], {**floor, "CUPTI_FLOOR_MEMORY": "1"})}
        # FT_BENCH_P7_PARTS=1: where the floor's cost lies (MEMORY2 alone, MEMORY_POOL alone, or
        # callbacks on the allocation calls instead of records); rows not judged
        parts = ("records", "pool", "callbacks") if os.environ.get("FT_BENCH_P7_PARTS") == "1" else ()
        for p in parts:
            variants["floor_" + p] = ([], {**floor, "CUPTI_FLOOR_MEMORY": p})

        def start(g):
            lay = self.layout(("alloc", g))
            return {n: self.spawn(self.pin1 + self.norand + pre + [self.alloc_loop, str(iters), "serve"],
                                  {**lay, **(env or {})})
                    for n, (pre, env) in variants.items()}

        def ready(n, sv):
            if sv.ready() != "ready":
                raise RuntimeError(f"bench: alloc_loop ({n}) did not say ready")

        groups = [self.group(lambda g=g: start(g), ready,
                             lambda srv: self.flanked(srv, self.shape["loop_rounds"], "bare",
                                                      lambda n, sv: float(sv.ask("go"))))
                  for g in range(self.shape.get("mem_groups", 8))]
        self.note("alloc loop µs/iteration, by group and round", {"groups": groups})
        b = mm([x for g in groups for r in g for x in r["bare"]])
        on, off = mm([r["mem_on"] for g in groups for r in g]), mm([r["mem_off"] for g in groups for r in g])

        def vs_bare(side):
            return [[(r["around"][side], r[side]) for r in g] for g in groups]

        # per round: (off / its bare, on / its bare); the pair ratio is on's over off's
        def on_off(off, on):
            return [[(r[off] / r["around"][off], r[on] / r["around"][on]) for r in g] for g in groups]

        pairs = on_off("mem_off", "mem_on")
        fl_on, fl_off = mm([r["floor_on"] for g in groups for r in g]), mm([r["floor_off"] for g in groups for r in g])
        unit = "µs/iter"
        return [row("P7", f"allocation loop ({iters:,} cudaMallocAsync/cudaFreeAsync pairs a turn, a cudaMalloc/"
                          "cudaFree pair every 64) under `record --memory=on` vs `--memory=off`, each against the "
                          "bare turns around it", f"{off[0]:.3f} / {off[1]:.3f} {unit} (memory off)",
                    f"{on[0]:.3f} / {on[1]:.3f} {unit}", group_bootstrap(pairs, pair_ratio), "≤ 1.05", 1.05, True,
                    self.quick),
                row("P7", "the same, `record --memory=on` vs bare", f"{b[0]:.3f} / {b[1]:.3f} {unit} bare",
                    f"{on[0]:.3f} / {on[1]:.3f} {unit}", group_bootstrap(vs_bare("mem_on"), pair_ratio), "—", None,
                    True, self.quick),
                row("P7", "the same, `record --memory=off` vs bare", f"{b[0]:.3f} / {b[1]:.3f} {unit} bare",
                    f"{off[0]:.3f} / {off[1]:.3f} {unit}", group_bootstrap(vs_bare("mem_off"), pair_ratio), "—",
                    None, True, self.quick),
                row("P7", "the floor: a CUPTI tracer that counts records, MEMORY2 and MEMORY_POOL on vs off "
                          "(what CUPTI itself costs; no tracer built on its records can do better)",
                    f"{fl_off[0]:.3f} / {fl_off[1]:.3f} {unit} (floor, memory off)",
                    f"{fl_on[0]:.3f} / {fl_on[1]:.3f} {unit}", group_bootstrap(on_off("floor_off", "floor_on"),
                                                                               pair_ratio), "—", None, True,
                    self.quick)] + [
                row("P7", f"the floor with `CUPTI_FLOOR_MEMORY={p}` vs memory off (where its cost lies)",
                    f"{fl_off[0]:.3f} / {fl_off[1]:.3f} {unit} (floor, memory off)",
                    "{0:.3f} / {1:.3f} {2}".format(*mm([r["floor_" + p] for g in groups for r in g]), unit),
                    group_bootstrap(on_off("floor_off", "floor_" + p), pair_ratio), "—", None, True, self.quick)
                for p in parts]

    def p1_p3_torch(self, want):
        """Process groups of `pairs` pairs of torch processes, `base` (bare loops, then kineto
        profiles) and `ft` (the same after `import flagtrace.torch`), all started together.
        Each pair is one sample of what a process's start gives it (layout, placement: one
        pair's median ratio ranged 0.95-1.03 between pairs in one run with ASLR on), so the
        interval is over pairs, then rounds; a pair's processes share a layout (layout()).
        Every plain round (P1) comes before any profile; then one warm-up profile each, all
        at once, then the profiled rounds (P3)."""
        npairs = self.shape["pairs"]
        pin = ["--pin", str(self.cpu)] if self.cpu is not None else []

        def start(g):
            # started on the io cores (imports in parallel), moved to the one CPU when ready;
            # a pair's two processes in the pair's layout
            return {f"{side}{i}": self.spawn(self.pin_io + self.norand + [sys.executable, self.torch_bench, "serve",
                                                                          side, "--iters", str(TORCH_ITERS)] + pin,
                                             self.layout(("torch", g, i)))
                    for i in range(npairs) for side in ("base", "ft")}

        def body(srv):
            got = {"phase_s": {}}  # where a group's wall time goes (the run must stay short)
            t0 = time.perf_counter()
            if "P1" in want:
                got["plain"] = self.pairs_lockstep(srv, npairs, self.shape["rounds"],
                                                   lambda n, sv: json.loads(sv.ask("plain"))["us_per_op"])
                got["phase_s"]["plain"] = round(time.perf_counter() - t0, 2)
            if "P3" in want:
                # the warm-ups are not measured: all at once (each side runs its own off the
                # measuring CPU), their waits (profiler and CUPTI start, the GPU) overlap
                t0 = time.perf_counter()
                for sv in srv.values():
                    sv.send("warm")
                for n, sv in srv.items():
                    warm = json.loads(sv.answer())
                    # a profile that missed the kernels would make P3 a comparison of nothing
                    if warm["device_events"] < TORCH_ITERS:
                        raise RuntimeError(f"bench: the {n} side's first profile has {warm['device_events']} device "
                                           f"events, fewer than its {TORCH_ITERS} kernels")
                got["phase_s"]["warm"] = round(time.perf_counter() - t0, 2)
                t0 = time.perf_counter()
                got["prof"] = self.pairs_lockstep(srv, npairs, self.shape["prof_rounds"],
                                                  lambda n, sv: json.loads(sv.ask("prof")))
                got["phase_s"]["prof"] = round(time.perf_counter() - t0, 2)
            return got

        groups = [self.group(lambda g=g: start(g), lambda n, sv: self.note("torch side ready", json.loads(sv.ready())),
                             body)
                  for g in range(self.shape["groups"])]
        self.note("torch add_ loop, by group and round", {"groups": groups, "pairs": npairs})
        rows = []

        def add(pid, phase, key, what, unit, target_text, target):
            pairs = [[(r[f"base{i}"], r[f"ft{i}"]) if key is None else (r[f"base{i}"][key], r[f"ft{i}"][key])
                      for r in g[phase]] for g in groups for i in range(npairs)]
            b = mm([p[0] for g in pairs for p in g])
            f = mm([p[1] for g in pairs for p in g])
            peer = "bare" if pid == "P1" else "kineto"
            rows.append(row(pid, what, f"{b[0]:.3f} / {b[1]:.3f} {unit} {peer}", f"{f[0]:.3f} / {f[1]:.3f} {unit}",
                            group_bootstrap(pairs, pair_ratio), target_text, target, True, self.quick))

        if "P1" in want:
            add("P1", "plain", None, f"torch `x.add_(1.0)` × {TORCH_ITERS:,} after `import flagtrace.torch`, not "
                "profiling", "µs/op", "≤ 1.01", 1.01)
        if "P3" in want:
            add("P3", "prof", "us_per_op", "the same loop in `torch.profiler.profile([CPU, CUDA])`, in-loop", "µs/op",
                "≤ 1.00", 1.00)
            add("P3", "prof", "end_to_end_s", "the same, end to end (enter to profile exit, incl. collection)", "s",
                "≤ 1.00", 1.00)
        return rows

    def exit_split(self):
        """Where each profile exit goes: cProfile of torch's exit and the adaptor's own
        stage times (FLAGOS_TRACE=1), for kineto and for flagtrace; stderr only."""
        for mode in ("kineto", "flagtrace"):
            got = last_json(sh(self.pin + [sys.executable, self.torch_bench, "exit-split", mode],
                               env={"FLAGOS_TRACE": "1"} if mode == "flagtrace" else None))
            self.note("exit split", got)

    def stats_times(self, path, reps, engine="stream"):
        """Whole-process `flagtrace stats` times. The capture before it leaves a 381 MB
        JSON twin of the trace being written back to disk: it is deleted and the page
        cache flushed first, so that the kernel's writeback is not timed as ours (the
        suspected, unverified cause of bimodal stats times on the H200 host)."""
        twin = path[:-3] if path.endswith(".json.gz") else None
        if twin and os.path.exists(twin):
            os.unlink(twin)
        os.sync()
        t = []
        for _ in range(reps):
            t0 = time.perf_counter()
            sh(self.pin_io + [self.ft, "stats", f"--engine={engine}", path])
            t.append(time.perf_counter() - t0)
        return t

    def p4_p5_p6(self, kernels_small, kernels_big, want):
        rows = []
        q = self.quick
        kin = None
        if "P4" in want or "P5" in want:
            # key_averages() takes 6-12 s a capture on the H200 host: on 2 of them; the
            # export, ~0.3 s, on 6 (one each), for an interval P4's 10x can be judged by
            # kineto's exports go where our captures do (TMPDIR: torch_bench's temporary directory)
            kin = last_json(sh(self.pin_io + [sys.executable, self.torch_bench, "capture", "--events", "100000",
                                              "--reps", str(2 if self.quick else max(6, 2 * self.reps)),
                                              "--key-averages", str(min(self.reps, 2))], env={"TMPDIR": self.tmp}))
            self.note("kineto capture", kin)
        # its writes take tens of ms each: 10x the repetitions (30 to capture_bench's 32) for a stable median
        small = last_json(sh(self.pin_io + [self.capture, str(kernels_small), os.path.join(self.tmp, "cap100k"),
                                            str(1 if self.quick else min(32, max(30, 10 * self.reps)))]))
        self.note("flagtrace capture (100 k)", small)
        if "P4" in want:
            n_k = statistics.median(kin["slices"])
            ex = mm(kin["export_chrome_trace_s"])
            k_rate = n_k / ex[1]
            for key, label, target in (("write_json_s", "JSON", 3e6), ("write_gzip_s", "gzip", 1e6)):
                w = mm(small[key])
                rate = small["events"] / w[1]
                ci_rate = bootstrap(small[key], lambda ts: small["events"] / statistics.median(ts) / 1e6)
                ci_x = bootstrap((kin["export_chrome_trace_s"], small[key]),
                                 lambda d: (small["events"] / statistics.median(d[1])) /
                                           (n_k / statistics.median(d[0])))
                what = (f"real capture, {small['events']:,} events ({small['kernels']:,} kernels), written as {label}; "
                        f"peer torch `export_chrome_trace` on {int(n_k):,} slices")
                peer = f"{ex[0]:.3f} / {ex[1]:.3f} s = {k_rate / 1e6:.2f} M ev/s"
                ours = f"{w[0]:.3f} / {w[1]:.3f} s = {rate / 1e6:.2f} M ev/s"
                rows.append(row("P4", what + " (rate)", peer, ours, ci_rate, f"≥ {target / 1e6:.0f} M ev/s",
                                target / 1e6, False, q, 2, " M ev/s"))
                rows.append(row("P4", what + " (× kineto)", peer, ours, ci_x, "≥ 10× kineto", 10, False, q, 1, "×"))
        if "P5" in want:
            ka = mm(kin["key_averages_s"])
            n_k = statistics.median(kin["slices"])
            st = self.stats_times(os.path.join(self.tmp, "cap100k.json.gz"), self.reps)
            s_mm = mm(st)
            ci = bootstrap((kin["key_averages_s"], st), lambda d: statistics.median(d[0]) / statistics.median(d[1]))
            rows.append(row("P5", f"`flagtrace stats` on the {small['events']:,}-event trace (gzip, whole process) vs "
                            f"`key_averages()` on kineto's {int(n_k):,}-slice capture", f"{ka[0]:.3f} / {ka[1]:.3f} s",
                            f"{s_mm[0]:.3f} / {s_mm[1]:.3f} s", ci, "≥ 10× faster", 10, False, q, 1, "× faster"))
        big = None
        if "P5" in want or "P6" in want:
            big = last_json(sh(self.pin_io + [self.capture, str(kernels_big), os.path.join(self.tmp, "cap1m"), "1"]))
            self.note("flagtrace capture (1 M)", big)
        if "P5" in want:
            # ~0.6-1 s each, and bimodal on the H200 host (0.62 / 1.04 s in one run): 7 runs
            st = self.stats_times(os.path.join(self.tmp, "cap1m.json.gz"), 1 if self.quick else max(7, self.reps))
            self.split = stats_split(self.build, False, os.path.join(self.tmp, "cap1m.json.gz"))
            s_mm = mm(st)
            ci = bootstrap(st, statistics.median)
            rows.append(row("P5", f"`flagtrace stats` on a real {big['events']:,}-event trace (gzip, "
                            f"{big['bytes_gzip'] / 1e6:.0f} MB, whole process), seconds", "-",
                            f"{s_mm[0]:.3f} / {s_mm[1]:.3f} s", ci, "< 1 s", 1.0, True, q, 3, " s"))
            # P5 model: the same trace through the event model (read into it, then replayed into the
            # summary: `stats --engine=model`, docs/stats.md); its ratio to the row above beside it
            sm = self.stats_times(os.path.join(self.tmp, "cap1m.json.gz"), 1 if self.quick else max(7, self.reps),
                                  "model")
            m_mm = mm(sm)
            ci_m = bootstrap(sm, statistics.median)
            rows.append(row("P5", f"P5 model: `flagtrace stats --engine=model` on the same trace, seconds "
                            f"({statistics.median(sm) / statistics.median(st):.2f}x the row above)", "-",
                            f"{m_mm[0]:.3f} / {m_mm[1]:.3f} s", ci_m, "< 1 s", 1.0, True, q, 3, " s"))
            # issue 50: advise on the same trace (whole process), HTA's idle time and critical path beside it
            cap = os.path.join(self.tmp, "cap1m.json.gz")
            if has_advise(self.ft, self.pin_io):
                # its peak RSS is the CPU part's (bench/run.py without --gpu: the synthetic 1 M-event trace)
                at, a_rss = advise_timed(self.ft, cap, 1 if self.quick else max(7, self.reps), 0, self.pin_io)
                self.note("advise (1 M)", {"s": at})
                a_mm = mm(at)
                rows.append(row("P5", f"`flagtrace advise` on the same {big['events']:,}-event trace (whole process), "
                                "seconds", "-", f"{a_mm[0]:.3f} / {a_mm[1]:.3f} s", bootstrap(at, statistics.median),
                                "< 1 s", 1.0, True, q, 3, " s"))
                hta = None if q else hta_idle_critical_path(cap)
                if hta is not None:
                    self.note("HTA idle time and critical path (1 M)", hta)
                self.split += advise_rows(f"The real {big['events']:,}-event capture of P5 (gzip)", at, a_rss, hta, q)
            else:
                self.split += ["## P5 advise", "", f"skipped: {self.ft} has no advise command", ""]
        if "P6" in want:
            # CUPTI's own memory is the floor's growth with small buffers: with its 8 MiB ones
            # (P2's floor), 1 or 2 in flight made it 13 or 21 MB, and subtracting those counted
            # a tracer's buffers as CUPTI's. So ours, our 2 MiB buffers included, is all that
            # flagtrace adds. Two floors: the interval spans them (ours: one capture, its
            # allocations are deterministic: 70.17 / 70.18 MB in two runs on the H200).
            floors, held = [], []
            for _ in range(1 if self.quick else 2):
                out, err = sh(self.pin_io + [self.capture, str(kernels_big), "-"], stderr=True,
                              env={"CAPTURE_BENCH_NO_FLAGTRACE": "1", "CUDA_INJECTION64_PATH": self.floor,
                                   "CUPTI_FLOOR_BUFFER_BYTES": str(P6_FLOOR_BUFFER)})
                m = re.search(r"at most (\d+) buffers of (\d+) KiB held at once", err)
                f = last_json(out)
                self.note(f"raw-CUPTI floor, same launches, {P6_FLOOR_BUFFER >> 10} KiB buffers", f)
                floors.append(f["peak_rss"] - f["rss_before"])
                held.append(int(m.group(1)) * int(m.group(2)) * 1024 if m else 0)
            grow = big["peak_rss"] - big["rss_before"]
            n_ev = big["events"]
            ci = ((grow - statistics.median(floors)) / n_ev, (grow - max(floors)) / n_ev, (grow - min(floors)) / n_ev)
            at_create = big.get("rss_at_create", big["rss_before"])
            rows.append(row("P6", f"peak RSS growth over a real capture of {n_ev:,} events from the armed session "
                            "(our activity buffers included), less CUPTI's own: the raw-CUPTI floor's growth from "
                            f"its armed state for the same launches, {P6_FLOOR_BUFFER >> 10} KiB buffers (at most "
                            f"{max(held) / 1e6:.1f} MB of them held)",
                            " / ".join(f"{x / 1e6:.1f}" for x in floors) + " MB (floor)",
                            f"{grow / 1e6:.1f} MB ({grow / n_ev:.1f} B/event; {(big['peak_rss'] - at_create) / 1e6:.0f} "
                            "MB counting libcupti's load and arming)", ci, "≤ 64 B/event", 64, True, q, 1, " B/event"))
            # The cost of one more event, free of the fixed part (buffers, tables): the
            # slope between the two captures, each in its own fresh process (CUPTI's own
            # growth per event not taken off).
            small_grow = small["peak_rss"] - small["rss_before"]
            slope = (grow - small_grow) / (n_ev - small["events"])
            rows.append(row("P6", f"the same, per additional event: slope between the {small['events']:,}- and "
                            f"{n_ev:,}-event captures", f"{small_grow / 1e6:.1f} MB at {small['events']:,}",
                            f"{grow / 1e6:.1f} MB at {n_ev:,}", (slope, slope, slope), "≤ 64 B/event", 64,
                            True, q, 1, " B/event"))
        return rows


def table(rows):
    out = ["| id | what | peer / baseline (min / median) | flagtrace (min / median) | ratio [95 % CI] | target | verdict |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['id']} | {r['what']} | {r['peer']} | {r['flagtrace']} | {r['ratio']} | {r['target']} | "
                   f"{r['verdict']} |")
    return out


def readme_table(result):
    """docs/performance.md's block: the run's source, then peer and flagtrace side by side per row."""
    out = [README_BEGIN, "",
           f"Latest on the GPU (`bench/results/{result['name']}.md`: {result['date']}, commit {result['commit']}, "
           f"{result['gpu']}; P1-P3 lockstep: median of per-round ratios, bootstrap 95 % interval over process "
           "groups (torch: process pairs) then rounds; P2: per process group, whole-run overheads)"
           + (": partial, the run stopped at its time limit; the rows it measured:" if result.get("partial") else ":"),
           "",
           "| id | what | peer | flagtrace | ratio [95 % CI] | target | verdict |", "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        out.append(f"| {r['id']} | {r['what']} | {r['peer']} | {r['flagtrace']} | {r['ratio']} | {r['target']} | "
                   f"{r['verdict']} |")
    return out + ["", README_END]


# the page whose latest table --readme-from rewrites (the README links to it)
PERFORMANCE_PAGE = os.path.join(ROOT, "docs", "performance.md")


def update_readme(json_path, readme=PERFORMANCE_PAGE):
    with open(json_path) as f:
        result = json.load(f)
    with open(readme) as f:
        text = f.read()
    if README_BEGIN not in text or README_END not in text:
        sys.exit(f"bench: {readme} has no {README_BEGIN} ... {README_END} block")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    with open(readme, "w") as f:
        f.write(head + "\n".join(readme_table(result)) + tail)
    print(f"bench: {os.path.relpath(readme, ROOT)}'s table now shows {json_path}", file=sys.stderr)


def git_commit():
    # the device machine's copy of the tree may carry a stale .git: the caller names the commit
    if os.environ.get("FT_BENCH_COMMIT"):
        return os.environ["FT_BENCH_COMMIT"], False
    try:
        commit = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).strip()
        dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).strip()
        return commit, bool(dirty)
    except (RuntimeError, OSError):
        return "unknown", False


def default_cores(count=4):
    """count of the CPUs this process may use, skipping the first two (interrupts,
    housekeeping), on a machine with count + 4 or more; "" (no pinning) otherwise."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(allowed) < count + 4 or not shutil.which("taskset"):
        return ""
    return ",".join(str(c) for c in allowed[2:2 + count])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the CMake build folder (default: build)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"),
                    help="where the dated markdown and its rows (.json) go (default: bench/results)")
    ap.add_argument("--gpu", action="store_true", help="also run P1..P7 on the GPU (needs the GPU build)")
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions: checks it runs, judges nothing")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions of the capture, write and stats figures (P4-P6; default 3)")
    ap.add_argument("--groups", type=int, default=4,
                    help="P1/P3 torch: process groups, each started afresh (default 4)")
    ap.add_argument("--pairs", type=int, default=3,
                    help="P1/P3 torch: pairs of processes (bare or kineto, flagtrace) per group (default 3)")
    ap.add_argument("--rounds", type=int, default=15,
                    help="P1 torch: lockstep rounds of plain loops per group (default 15)")
    ap.add_argument("--prof-rounds", type=int, default=12,
                    help="P3: lockstep rounds of profiles per group (default 12)")
    ap.add_argument("--loop-groups", type=int, default=24,
                    help="P1/P2 C launch loop: process groups, each started afresh (default 24)")
    ap.add_argument("--loop-rounds", type=int, default=12,
                    help="P1/P2 C launch loop: lockstep rounds per group, bare turns between the others (default 12)")
    ap.add_argument("--mem-groups", type=int, default=8,
                    help="P7 allocation loop: process groups (bare, memory off, memory on), each started afresh "
                         "(default 8; --loop-rounds rounds each)")
    ap.add_argument("--cores", default=None,
                    help="taskset CPU list every measured process is pinned to (default: the 3rd to 6th allowed CPU on "
                         ">= 8; '' = none)")
    ap.add_argument("--io-cores", default=None,
                    help="taskset CPU list for P4-P6 (captures, writes with their workers, stats; default: the 3rd to "
                         "10th allowed CPU on >= 12, else --cores)")
    ap.add_argument("--aslr", action="store_true",
                    help="P1-P3: leave ASLR on and give each process its own layout (no layout blocking)")
    ap.add_argument("--only", default="", help="comma-separated row ids to run, e.g. P3 or P1,P2 (default: all)")
    ap.add_argument("--exit-split", action="store_true",
                    help="with P3: also profile one kineto and one flagtrace profile exit (cProfile, the adaptor's "
                         "stage times) to stderr")
    ap.add_argument("--readme-from", metavar="JSON",
                    help="rewrite docs/performance.md's latest table from a run's .json and exit")
    a = ap.parse_args()
    if a.readme_from:
        update_readme(a.readme_from)
        return
    want = set(x.strip().upper() for x in a.only.split(",") if x.strip()) or set(IDS)
    if not want <= set(IDS):
        ap.error(f"--only takes {', '.join(IDS)}")
    if a.reps < 1 or a.pairs < 1 or min(a.groups, a.rounds, a.prof_rounds, a.loop_groups, a.loop_rounds,
                                        a.mem_groups) < 2:
        ap.error("--reps and --pairs must be at least 1, --groups, --rounds, --prof-rounds, --loop-groups, "
                 "--loop-rounds and --mem-groups at least 2")
    for exe in ("bench_writer", "bench_stats"):
        if not os.path.exists(os.path.join(a.build, "bench", exe)):
            ap.error(f"{a.build}/bench/{exe} is missing: build first (make test, or cmake --build {a.build})")
    if a.gpu:
        for exe in ("gpu/launch_loop", "gpu/capture_bench", "gpu/libcupti_floor.so") + (("gpu/alloc_loop",)
                                                                                       if "P7" in want else ()):
            if not os.path.exists(os.path.join(a.build, "bench", exe)):
                ap.error(f"{a.build}/bench/{exe} is missing: --gpu needs a build configured with "
                         "-DFT_BUILD_GPU_TESTS=ON on a machine with nvcc (scripts/gpu-check.sh does that)")
        if not os.path.exists(os.path.join(a.build, "flagtrace")):
            ap.error(f"{a.build}/flagtrace is missing: --gpu runs `flagtrace record`")
    os.makedirs(a.out, exist_ok=True)
    t_start = time.perf_counter()
    reps = 1 if a.quick else a.reps
    shape = ({"groups": 2, "pairs": 1, "rounds": 2, "prof_rounds": 2, "loop_groups": 2, "loop_rounds": 2,
              "mem_groups": 2}
             if a.quick else {"groups": a.groups, "pairs": a.pairs, "rounds": a.rounds, "prof_rounds": a.prof_rounds,
                              "loop_groups": a.loop_groups, "loop_rounds": a.loop_rounds, "mem_groups": a.mem_groups})
    cores = default_cores() if a.cores is None else a.cores
    io_cores = (default_cores(8) or cores) if a.io_cores is None else a.io_cores
    commit, dirty = git_commit()
    doc = ["# flagtrace benchmarks" + (" (quick mode: nothing judged)" if a.quick else ""), ""]
    doc += machine(a.gpu, commit, dirty)
    gz = gzip_backend(a.build)
    doc.append(f"- gzip backend (`flagtrace --version`): {gz}")
    if a.gpu and gz != "isa-l" and want & {"P4", "P5"}:
        # a zlib run is a valid measurement of zlib, not of what a packaged build ships
        print(f"bench: warning: gzip is {gz}, not ISA-L: the P4 gzip and P5 rows measure zlib "
              "(build with libisal-dev; libisal.so.2 must load at run time)", file=sys.stderr)
    method_line = len(doc)
    doc += [f"- method: P1-P3 lockstep, all sides on CPU {first_cpu(cores) if cores else '(not pinned)'}; "
            f"the C launch loop {shape['loop_groups']} process groups x {shape['loop_rounds']} rounds, each turn "
            f"against the bare turns before and after it; torch {shape['groups']} groups of {shape['pairs']} "
            f"process pairs, {shape['rounds']} plain and {shape['prof_rounds']} profiled rounds; median of "
            f"per-round ratios, bootstrap 95 % interval over groups (torch: pairs) then rounds; P2 the median over "
            f"groups of each group's whole-run overhead ratio, its interval over groups; P4-P6 {reps} "
            f"repetitions on cores {io_cores or '(not pinned)'}; P7 lockstep as the launch loop, "
            f"{shape['mem_groups']} groups (bare, memory off, memory on) x {shape['loop_rounds']} rounds, memory on's "
            f"per-round ratio to its bare turns over memory off's",
            f"- rows: {', '.join(sorted(want))}", ""]
    rows, timings, extra = [], [], []
    kind = "gpu" if a.gpu else "cpu"
    now = datetime.datetime.now(datetime.timezone.utc)
    name = f"{now:%Y-%m-%d}-{commit}{'-dirty' if dirty else ''}-{kind}"
    path = os.path.join(a.out, name + ".md")
    gpu_name = next((ln.split(": ", 1)[1].split(" (name")[0] for ln in doc if ln.startswith("- GPU: ")), "no GPU")

    def write(final):
        """The table so far: rewritten after every section, so that a run stopped at a
        time limit still leaves what it measured (marked partial)."""
        wall = time.perf_counter() - t_start
        body = list(doc)
        if rows:
            body += ["## GPU: P1–P7", ""] + table(sorted(rows, key=lambda r: IDS.index(r["id"]))) + [""]
        body += extra
        body += [f"Wall time of this run: {wall:.0f} s ({', '.join(timings)})."
                 + ("" if final else " PARTIAL: the run had not finished when this was written.")]
        with open(path, "w") as f:
            f.write("\n".join(body) + "\n")
        with open(os.path.join(a.out, name + ".json"), "w") as f:
            json.dump({"name": name, "date": f"{now:%Y-%m-%d %H:%M} UTC",
                       "commit": commit + (" (dirty)" if dirty else ""), "gpu": gpu_name, "wall_s": round(wall, 1),
                       "partial": not final, "rows": sorted(rows, key=lambda r: IDS.index(r["id"]))},
                      f, indent=1, ensure_ascii=False)
            f.write("\n")
        return body, wall

    def section(label, fn, *args):
        t0 = time.perf_counter()
        got = fn(*args)
        timings.append(f"{label} {time.perf_counter() - t0:.0f} s")
        print(f"bench: {timings[-1]}", file=sys.stderr)
        return got

    if a.gpu:
        tmp = tempfile.mkdtemp(prefix="ftbench.")
        try:
            g = Gpu(a.build, tmp, reps, shape, cores, a.quick, io_cores, a.aslr)
            if not a.aslr and not g.norand:
                print("bench: setarch -R is not available here: P1-P3 run with ASLR on, no layout blocking",
                      file=sys.stderr)
            doc[method_line] += ("; ASLR on, a layout per process" if not g.norand else
                                 "; ASLR off, a layout per torch pair and per launch-loop group")
            if want & {"P1", "P2"}:
                rows += section("P1/P2 launch loop", g.p1_p2, 5000 if a.quick else 10000, want)
                write(False)
            if want & {"P1", "P3"}:
                rows += section("P1/P3 torch", g.p1_p3_torch, want)
                write(False)
            if "P3" in want and a.exit_split:
                section("P3 exit split", g.exit_split)
            if "P7" in want:
                rows += section("P7 allocation loop", g.p7_memory, 500 if a.quick else ALLOC_ITERS)
                write(False)
            if want & {"P4", "P5", "P6"}:
                rows += section("P4-P6 captures", g.p4_p5_p6, 5000 if a.quick else 45000,
                                50000 if a.quick else 500000, want)
                extra += getattr(g, "split", [])  # P5 split on the real 1 M-event capture
                write(False)
            with open(os.path.join(a.out, "bench-raw.jsonl"), "w") as f:
                for r in g.raw:
                    f.write(json.dumps(r) + "\n")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if want & {"P4", "P5", "P6"}:
        extra += section("CPU part", cpu_part, a.build, a.quick, a.gpu)
    body, wall = write(True)
    print("\n".join(body))
    print(f"bench: wrote {path} and {name}.json ({wall:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
