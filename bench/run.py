#!/usr/bin/env python3
"""Runs flagtrace's benchmarks (P1-P6, README: Performance) and writes one dated markdown table.

  bench/run.py --build BUILD --out DIR          CPU only: P4 synthetic, P5 synthetic, P6 synthetic
  bench/run.py --gpu --build BUILD --out DIR    + P1..P6 on the GPU (scripts/gpu-check.sh does this)

Every figure is a ratio against a baseline measured in this same run on this machine;
targets are judged here and written next to the figure (pass / MISS), never asserted.
Processes that are compared are interleaved (A B A B ...) so that drift of a shared
machine hits both sides. Ratios compare medians (a single lucky process moves a
minimum by 5 % on the H200 host, more than the 1 % P1 asks about); the minima are
printed beside them."""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def sh(cmd, env=None, check=True):
    """Runs cmd; returns its stdout. Its stderr passes through (progress, diagnostics)."""
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=e)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-2000:]}")
    return r.stdout


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON line in: {text[-500:]}")


def mm(xs):
    return min(xs), statistics.median(xs)


def verdict(ok, quick):
    return "(quick mode, not judged)" if quick else ("pass" if ok else "MISS")


def machine(gpu):
    lines = [f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"]
    try:
        commit = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).strip()
        dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).strip()
        lines.append(f"- flagtrace commit: {commit}{' (with uncommitted changes)' if dirty else ''}")
    except (RuntimeError, OSError):
        lines.append("- flagtrace commit: unknown (not a git checkout)")
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
        lines.append(f"- GPU: {smi or 'none'}; driver as above")
        lines.append(f"- CUDA toolkit: {nvcc[-1] if nvcc else 'unknown'}")
        lines.append(f"- torch: {torch_v or 'not importable'}")
    return lines


# ---- CPU: the synthetic writer and stats benches (their own markdown) ----

def cpu_part(build, quick):
    flag = ["--quick"] if quick else []

    def run(exe, *extra):  # its "# title" line becomes a plain sentence under our heading
        text = sh([os.path.join(build, "bench", exe)] + flag + list(extra)).strip()
        text = re.sub(r"^# ", "", text, flags=re.M)
        return re.sub(r"^([^|\n].*)\n\|", r"\1\n\n|", text, flags=re.M)  # a table needs a blank line before it

    # P4 on a real capture without a GPU: an H200 trace's slices replayed to 1 M events
    replay = ["--replay", os.path.join(ROOT, "tests", "data", "sample_h200.json.gz")]
    return ["## P4 / P6 synthetic: trace writer (bench/bench_writer.c)", "", run("bench_writer", *replay), "",
            "## P5 synthetic: stats reader (bench/bench_stats.c)", "", run("bench_stats"), ""] + stats_memory(build, quick)


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
    device event between the sizes. Target (issue 14): at most 16 B per device event."""
    ft = os.path.join(build, "flagtrace")
    if not os.path.exists(ft):
        return ["## P5 memory: `flagtrace stats` peak RSS", "", f"skipped: {ft} is not built", ""]
    sizes = [100000, 400000] if quick else [400000, 2000000, 4000000]
    rows = ["## P5 memory: `flagtrace stats` peak RSS (synthetic gzip traces, bench_stats --write)", "",
            "| slices | kernels (device events) | peak RSS | B per device event over the previous size | target |",
            "|---|---|---|---|---|"]
    tmp = tempfile.mkdtemp(prefix="ftbench.")
    try:
        prev = None
        env = {"FLAGOS_TRACER_LIBRARY": "/nonexistent"}
        for n in sizes:
            path = os.path.join(tmp, f"t{n}.json.gz")
            sh([os.path.join(build, "bench", "bench_stats"), "--write", path, str(n)], env=env)
            kb = min(peak_rss_kb([ft, "stats", path]) for _ in range(1 if quick else 3))
            kernels = n // 2
            slope = "" if prev is None else (kb - prev[1]) * 1024 / (kernels - prev[0])
            cell = "" if prev is None else f"{slope:.1f}"
            judged = "" if prev is None else f"≤ 16 B: {verdict(slope <= 16, quick)}"
            rows.append(f"| {n:,} | {kernels:,} | {kb / 1024:.1f} MiB | {cell} | {judged} |")
            prev = (kernels, kb)
            os.unlink(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows + [""]


# ---- GPU ----

class Gpu:
    def __init__(self, build, tmp, reps):
        self.build, self.tmp, self.reps = build, tmp, reps
        self.ft = os.path.join(build, "flagtrace")
        self.loop = os.path.join(build, "bench", "gpu", "launch_loop")
        self.floor = os.path.join(build, "bench", "gpu", "libcupti_floor.so")
        self.capture = os.path.join(build, "bench", "gpu", "capture_bench")
        self.torch_bench = os.path.join(HERE, "gpu", "torch_bench.py")
        self.raw = []

    def note(self, what, data):
        self.raw.append({"what": what, **data})
        print(f"bench: {what}: {json.dumps(data)[:300]}", file=sys.stderr)

    def record(self, *args, env=None):
        out = os.path.join(self.tmp, "rec.json.gz")
        return sh([self.ft, "record", "--force-overwrite", "-o", out, *args], env=env)

    def launch_variants(self, variants, launches, rounds):
        """variants: name -> argv prefix and env. Interleaved, one process per round."""
        best = {k: [] for k in variants}
        for _ in range(rounds):
            for name, (prefix, env) in variants.items():
                r = last_json(sh(prefix + [self.loop, str(launches), "3"], env=env))
                best[name].append(r["best"])
        self.note("launch loop µs/launch (best of 3 per process)", best)
        return best

    def p1_p2(self, launches):
        # the same file every round: replaced (record refuses that by default)
        rec = [self.ft, "record", "--force-overwrite", "-o", os.path.join(self.tmp, "rec.json.gz"), "--"]
        idle = [self.ft, "record", "--force-overwrite", "--capture-range=cudaProfilerApi", "-o",
                os.path.join(self.tmp, "idle.json.gz"), "--"]
        v = self.launch_variants({
            "bare": ([], None),
            "idle": (idle, None),
            "floor": ([], {"CUDA_INJECTION64_PATH": self.floor}),
            "record": (rec, None),
            "idle_preload": ([self.ft, "record", "--inject=preload"] + idle[2:], None),
        }, launches, 2 * self.reps)  # twice the rounds: 1 % is within this machine's noise
        rows = []
        b, i = mm(v["bare"]), mm(v["idle"])
        r1 = i[1] / b[1]
        rows.append(("P1", "CUDA C launch loop, injection loaded, no capture (`record --capture-range=cudaProfilerApi`, "
                     "no cudaProfilerStart)", f"{b[0]:.3f} / {b[1]:.3f} µs", f"{i[0]:.3f} / {i[1]:.3f} µs",
                     f"{r1:.3f}", "≤ 1.01", r1 <= 1.01))
        ip = mm(v["idle_preload"])
        r1p = ip[1] / b[1]
        rows.append(("P1", "the same under `record --inject=preload` (LD_PRELOAD, armed when libcuda loads)",
                     f"{b[0]:.3f} / {b[1]:.3f} µs", f"{ip[0]:.3f} / {ip[1]:.3f} µs", f"{r1p:.3f}", "≤ 1.01",
                     r1p <= 1.01))
        f, rc = mm(v["floor"]), mm(v["record"])
        o_floor, o_ft = f[1] / b[1] - 1, rc[1] / b[1] - 1
        r2 = o_ft / o_floor if o_floor > 0 else float("inf")
        rows.append(("P2", f"launch loop under `flagtrace record` (overhead {o_ft * 100:.1f} %) vs the raw-CUPTI floor "
                     f"(overhead {o_floor * 100:.1f} %), same kinds", f"{f[0]:.3f} / {f[1]:.3f} µs (floor)",
                     f"{rc[0]:.3f} / {rc[1]:.3f} µs", f"{r2:.3f} (overhead ratio)", "≤ 1.10", r2 <= 1.10))
        return rows

    def torch_loops(self, modes, per_process_reps=3, processes=3):
        got = {m: {"us_per_op": [], "end_to_end_s": []} for m in modes}
        for _ in range(processes):
            for m in modes:
                r = last_json(sh([sys.executable, self.torch_bench, "loop", m, "--reps", str(per_process_reps)]))
                got[m]["us_per_op"] += r["us_per_op"]
                got[m]["end_to_end_s"] += r["end_to_end_s"]
                if "device_events_first_rep" in r:
                    got[m]["device_events"] = r["device_events_first_rep"]
        self.note("torch add_ loop", got)
        return got

    def p1_p3_torch(self):
        g = self.torch_loops(["bare", "idle", "kineto", "flagtrace"])
        rows = []
        b, i = mm(g["bare"]["us_per_op"]), mm(g["idle"]["us_per_op"])
        r = i[1] / b[1]
        rows.append(("P1", "torch `x.add_(1.0)` × 20 000 after `import flagtrace.torch`, not profiling",
                     f"{b[0]:.3f} / {b[1]:.3f} µs/op", f"{i[0]:.3f} / {i[1]:.3f} µs/op", f"{r:.3f}", "≤ 1.01",
                     r <= 1.01))
        k, f = mm(g["kineto"]["us_per_op"]), mm(g["flagtrace"]["us_per_op"])
        r = f[1] / k[1]
        rows.append(("P3", "the same loop in `torch.profiler.profile([CPU, CUDA])`, in-loop",
                     f"{k[0]:.3f} / {k[1]:.3f} µs/op (kineto)", f"{f[0]:.3f} / {f[1]:.3f} µs/op", f"{r:.3f}",
                     "≤ 1.00", r <= 1.00))
        k, f = mm(g["kineto"]["end_to_end_s"]), mm(g["flagtrace"]["end_to_end_s"])
        r = f[1] / k[1]
        rows.append(("P3", "the same, end to end (enter to profile exit, incl. collection)",
                     f"{k[0]:.3f} / {k[1]:.3f} s (kineto)", f"{f[0]:.3f} / {f[1]:.3f} s", f"{r:.3f}", "≤ 1.00",
                     r <= 1.00))
        return rows

    def stats_times(self, path):
        t = []
        for _ in range(self.reps):
            t0 = time.perf_counter()
            sh([self.ft, "stats", path])
            t.append(time.perf_counter() - t0)
        return t

    def p4_p5_p6(self, kernels_small, kernels_big):
        rows = []
        kin = last_json(sh([sys.executable, self.torch_bench, "capture", "--events", "100000",
                            "--reps", str(self.reps)]))
        self.note("kineto capture", kin)
        small = last_json(sh([self.capture, str(kernels_small), os.path.join(self.tmp, "cap100k"), str(self.reps)]))
        self.note("flagtrace capture (100 k)", small)
        n_k = statistics.median(kin["slices"])
        ex = mm(kin["export_chrome_trace_s"])
        k_rate = n_k / ex[1]
        for key, label, target in (("write_json_s", "JSON", 3e6), ("write_gzip_s", "gzip", 1e6)):
            w = mm(small[key])
            rate = small["events"] / w[1]
            ok = rate >= target and rate >= 10 * k_rate
            rows.append(("P4", f"real capture, {small['events']:,} events ({small['kernels']:,} kernels), written as "
                         f"{label}; baseline torch `export_chrome_trace` on {int(n_k):,} slices",
                         f"{ex[0]:.3f} / {ex[1]:.3f} s = {k_rate / 1e6:.2f} M ev/s",
                         f"{w[0]:.3f} / {w[1]:.3f} s = {rate / 1e6:.2f} M ev/s", f"{rate / k_rate:.1f}× kineto",
                         f"≥ {target / 1e6:.0f} M ev/s and ≥ 10×", ok))
        ka = mm(kin["key_averages_s"])
        st_small = mm(self.stats_times(os.path.join(self.tmp, "cap100k.json.gz")))
        r = ka[1] / st_small[1]
        rows.append(("P5", f"`flagtrace stats` on the {small['events']:,}-event trace (gzip, whole process) vs "
                     f"`key_averages()` on kineto's {int(n_k):,}-slice capture", f"{ka[0]:.3f} / {ka[1]:.3f} s",
                     f"{st_small[0]:.3f} / {st_small[1]:.3f} s", f"{r:.1f}× faster", "≥ 10×", r >= 10))
        big = last_json(sh([self.capture, str(kernels_big), os.path.join(self.tmp, "cap1m"), "1"]))
        self.note("flagtrace capture (1 M)", big)
        floor = last_json(sh([self.capture, str(kernels_big), "-"],
                             env={"CAPTURE_BENCH_NO_FLAGTRACE": "1", "CUDA_INJECTION64_PATH": self.floor}))
        self.note("raw-CUPTI floor, same launches", floor)
        st_big = mm(self.stats_times(os.path.join(self.tmp, "cap1m.json.gz")))
        rows.append(("P5", f"`flagtrace stats` on a real {big['events']:,}-event trace (gzip, "
                     f"{big['bytes_gzip'] / 1e6:.0f} MB, whole process)", "-",
                     f"{st_big[0]:.3f} / {st_big[1]:.3f} s", "-", "< 1 s", st_big[1] < 1.0))
        grow = big["peak_rss"] - big["rss_before"]
        grow_floor = floor["peak_rss"] - floor["rss_before"]
        per = (grow - grow_floor) / big["events"]
        rows.append(("P6", f"peak RSS growth over a real capture of {big['events']:,} events, less what the "
                     "raw-CUPTI floor grows by for the same launches (CUPTI's own memory); includes the fixed "
                     "activity buffers", f"{grow_floor / 1e6:.0f} MB (floor)",
                     f"{grow / 1e6:.0f} MB ({grow / big['events']:.1f} B/event)",
                     f"{per:.1f} B/event", "≤ 64 B + interned names", per <= 64))
        # The cost of one more event, free of the fixed part (buffers, tables): the
        # slope between the two captures, each in its own fresh process.
        small_grow = small["peak_rss"] - small["rss_before"]
        slope = (grow - small_grow) / (big["events"] - small["events"])
        rows.append(("P6", f"the same, per additional event: slope between the {small['events']:,}- and "
                     f"{big['events']:,}-event captures", f"{small_grow / 1e6:.0f} MB at {small['events']:,}",
                     f"{grow / 1e6:.0f} MB at {big['events']:,}", f"{slope:.1f} B/event", "≤ 64 B + interned names",
                     slope <= 64))
        return rows


def table(rows, quick):
    out = ["| id | what | baseline (min / median) | flagtrace (min / median) | ratio | target | verdict |",
           "|---|---|---|---|---|---|---|"]
    for pid, what, base, ours, ratio, target, ok in rows:
        out.append(f"| {pid} | {what} | {base} | {ours} | {ratio} | {target} | {verdict(ok, quick)} |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the CMake build folder (default: build)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"),
                    help="where the dated markdown goes (default: bench/results)")
    ap.add_argument("--gpu", action="store_true", help="also run P1..P6 on the GPU (needs the GPU build)")
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition: checks it runs, judges nothing")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per figure (default 5)")
    a = ap.parse_args()
    if a.reps < 1:
        ap.error("--reps must be at least 1")
    for exe in ("bench_writer", "bench_stats"):
        if not os.path.exists(os.path.join(a.build, "bench", exe)):
            ap.error(f"{a.build}/bench/{exe} is missing: build first (make test, or cmake --build {a.build})")
    if a.gpu:
        for exe in ("gpu/launch_loop", "gpu/capture_bench", "gpu/libcupti_floor.so"):
            if not os.path.exists(os.path.join(a.build, "bench", exe)):
                ap.error(f"{a.build}/bench/{exe} is missing: --gpu needs a build configured with "
                         "-DFT_BUILD_GPU_TESTS=ON on a machine with nvcc (scripts/gpu-check.sh does that)")
        if not os.path.exists(os.path.join(a.build, "flagtrace")):
            ap.error(f"{a.build}/flagtrace is missing: --gpu runs `flagtrace record`")
    os.makedirs(a.out, exist_ok=True)
    reps = 1 if a.quick else a.reps
    doc = ["# flagtrace benchmarks" + (" (quick mode: nothing judged)" if a.quick else ""), ""]
    doc += machine(a.gpu) + [f"- repetitions: {reps} per figure", ""]
    if a.gpu:
        tmp = tempfile.mkdtemp(prefix="ftbench.")
        try:
            g = Gpu(a.build, tmp, reps)
            rows = g.p1_p2(20000 if a.quick else 200000)
            rows += g.p1_p3_torch()
            rows += g.p4_p5_p6(5000 if a.quick else 45000, 50000 if a.quick else 500000)
            doc += ["## GPU: P1–P6", ""] + table(rows, a.quick) + [""]
            with open(os.path.join(a.out, "bench-raw.jsonl"), "w") as f:
                for r in g.raw:
                    f.write(json.dumps(r) + "\n")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    doc += cpu_part(a.build, a.quick)
    kind = "gpu" if a.gpu else "cpu"
    path = os.path.join(a.out, f"{datetime.date.today():%Y-%m-%d}-{kind}.md")
    with open(path, "w") as f:
        f.write("\n".join(doc) + "\n")
    print("\n".join(doc))
    print(f"bench: wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
