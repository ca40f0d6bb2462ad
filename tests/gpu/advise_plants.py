"""`flagtrace advise` on torch programs with one bottleneck planted on purpose (issue 50's H200 test).

One program, a well-fed bf16 GEMM loop (LAYERS layers of relu(h @ w), a device synchronize at the
step's end), and four plants, each added to it alone and timed beside its clean twin:

  item      `.item()` after every layer (a device-to-host read: the host waits, the queue drains)
  pageable  a batch of COPIES small tensors copied halfway through from pageable memory, blocking
            (torch's default `.to()`/`.copy_()`); its twin, "pinned", copies them from pinned memory
            with non_blocking=True (the fix). The other plants' twin has no copies: behind a queue
            that `.item()` drained, their host time would be idle that no rule could name.
  tiny      a loop of TINY one-element kernels at the step's start, HOST_US of Python between them
  loader    a sleep of SLEEP_S at the step's start (a slow data loader), in a range "load_batch"

Each is recorded twice: through torch.profiler with `import flagtrace.torch` (one process, one
profile per variant, ProfilerStep#N steps; each plant profiled between two profiles of its twin)
and through `flagtrace record` (one process per plant, its planted steps in NVTX ranges "step" and
its twin's in ranges "clean", taking turns; `advise --step step`). Checks, one PASS/FAIL line each:
  - the planted cause is advise's first finding (sync, h2d-copy, launch-bound, step-start);
  - its cost per step is within 20 % of what the plant costs: the mean step wall time of the
    planted steps less that of its twin's (profiler: the twin's profiles before and after it). The
    mean, not the median: advise's cost per step is the occurrences' total over the steps, a mean,
    and a plant whose steps have a long tail (the pageable copies' staging under the profiler: steps
    of 4 049-5 139 us on the H100) has a mean well above its median, which the median-based figure
    read as advise over-claiming (x1.258 on de00410).
  - the clean loop (its own profile; its own recorded process) and the pinned twin have no finding
    over 5 % of their step.

  advise_plants.py --flagtrace FT --out-dir DIR            record, profile, advise, check (~1-2 min)
  advise_plants.py --flagtrace FT --out-dir DIR --check    advise and check the traces already in DIR
  advise_plants.py prog-profiler DIR | prog-record VARIANT  the programs themselves (what the above runs)
  advise_plants.py synth DIR      traces in the programs' shape written by hand, for --check without a GPU
"""
import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import time

# bf16 GEMMs of 4096 x 4096 x 4096: ~0.2 ms each on an H100/H200, several times what the host
# takes to launch a layer even under the profiler: the clean loop keeps the device fed
LAYERS, BATCH, DIM = 16, 4096, 4096
COPIES, COPY_ELEMS = 32, 16384  # the batch: 32 tensors of 64 KiB (their DMA ~2 us: the host's part dominates)
TINY = 100  # one-element kernels (~1.5 us each on the device) per step
HOST_US = 30  # the Python between two of them
SLEEP_S = 0.001
# plant: (the rule advise must put first, the clean twin it is timed beside)
PLANTS = {"item": ("sync", "none"), "pageable": ("h2d-copy", "pinned"), "tiny": ("launch-bound", "none"),
          "loader": ("step-start", "none")}
VARIANTS = ["none", "pinned"] + list(PLANTS)
STEPS = 20  # profiled (active) steps per profile; recorded steps per kind in each process
WARMUP = 3
# the profiles' order: every plant between two profiles of its twin (drift of the device's clocks
# over the run is taken out by comparing with both)
PROFILE_ORDER = ["none", "item", "none", "tiny", "none", "loader", "none", "pinned", "pageable", "pinned"]
COST_TOLERANCE = 0.20
CLEAN_MAX_SHARE = 0.05
ME = os.path.abspath(__file__)


def host_logic(i):
    """The loop's own Python between two tiny kernels, HOST_US of it: a launch-bound loop is one whose
    host side, not its kernels, sets the pace. Much more than the kernel (~1.5 us) and than the launch's
    latency after its call returns (~3 us, which advise counts as "other", not launch-bound), so that
    the idle advise can name is most of what the loop costs."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < HOST_US * 1e-6:
        pass
    return i * 1e-9


class Work:
    def __init__(self, torch, mark):
        self.torch, self.mark = torch, mark
        torch.manual_seed(0)
        scale = (2.0 / DIM) ** 0.5  # keeps relu(h @ w)'s scale from layer to layer
        self.w = [(torch.randn(DIM, DIM, device="cuda") * scale).to(torch.bfloat16) for _ in range(LAYERS)]
        self.x = torch.randn(BATCH, DIM, device="cuda").to(torch.bfloat16)
        self.pinned = [torch.randn(COPY_ELEMS).pin_memory() for _ in range(COPIES)]
        self.pageable = [torch.randn(COPY_ELEMS) for _ in range(COPIES)]
        assert all(p.is_pinned() for p in self.pinned) and not any(p.is_pinned() for p in self.pageable)
        self.dev = [torch.empty(COPY_ELEMS, device="cuda") for _ in range(COPIES)]
        self.s = torch.zeros(1, device="cuda")
        torch.cuda.synchronize()

    def step(self, plant):
        torch = self.torch
        if plant == "loader":
            with self.mark("load_batch"):
                time.sleep(SLEEP_S)
        if plant == "tiny":
            for i in range(TINY):
                self.s.add_(host_logic(i))
        h = self.x
        for k, w in enumerate(self.w):
            h = torch.relu(torch.mm(h, w))
            if plant == "item":
                h[0, 0].item()
            if k == LAYERS // 2 - 1 and plant == "pageable":  # the batch, halfway: layers queued ahead of it
                for d, src in zip(self.dev, self.pageable):
                    d.copy_(src)  # pageable and blocking: cudaMemcpyAsync, then the stream's sync
            elif k == LAYERS // 2 - 1 and plant == "pinned":
                for d, src in zip(self.dev, self.pinned):
                    d.copy_(src, non_blocking=True)
        torch.cuda.synchronize()


def prog_profiler(out):
    """One process: a torch.profiler profile per entry of PROFILE_ORDER, ProfilerStep#N steps."""
    import flagtrace.torch  # noqa: F401  (before the first profile)
    assert flagtrace.torch.available, flagtrace.torch.reason
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule
    work = Work(torch, record_function)
    for v in VARIANTS:
        for _ in range(WARMUP):
            work.step(v)
    sessions = []
    for k, v in enumerate(PROFILE_ORDER):
        path = os.path.join(out, f"prof-{k}-{v}.json.gz")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=1, warmup=1, active=STEPS, repeat=1),
                     on_trace_ready=lambda p, path=path: p.export_chrome_trace(path)) as prof:
            for _ in range(STEPS + 2):
                work.step(v)
                prof.step()
        assert os.path.exists(path), f"the profile of {v} wrote no {path}"
        sessions.append({"variant": v, "trace": path})
    with open(os.path.join(out, "prof-sessions.json"), "w") as f:
        json.dump(sessions, f)


def prog_record(variant):
    """One process under `flagtrace record`: the plant's steps in NVTX ranges "step", its twin's in
    ranges "clean", taking turns (variant none: the clean loop alone, in ranges "step")."""
    import torch
    nvtx = torch.cuda.nvtx
    work = Work(torch, nvtx.range)
    twin = PLANTS[variant][1] if variant in PLANTS else variant
    for v in (twin, variant):
        for _ in range(WARMUP):
            work.step(v)
    turns = [("step", variant)] if variant == twin else [("step", variant), ("clean", twin)]
    for i in range(STEPS):
        for name, v in (turns if i % 2 == 0 else turns[::-1]):
            nvtx.range_push(name)
            work.step(v)
            nvtx.range_pop()


# ---- the checks ----

def load_events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def step_walls_us(path, match):
    """Wall time (us) of each host range whose name match() accepts (ProfilerStep#N, NVTX "step")."""
    return [float(e["dur"]) for e in load_events(path)
            if e.get("ph") == "X" and e.get("cat") == "user_annotation" and match(str(e.get("name", "")))]


def is_profiler_step(name):
    return re.fullmatch(r"ProfilerStep#\d+", name) is not None


def advise(ft, trace, step, keep):
    cmd = [ft, "advise", "-f", "json"] + (["--step", step] if step else []) + [trace]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    doc = json.loads(r.stdout)
    with open(keep, "w") as f:
        f.write(r.stdout)
    if doc.get("schema") != 1 or not isinstance(doc.get("findings"), list):
        raise RuntimeError(f"{' '.join(cmd)}: not advise's schema 1 ({r.stdout[:200]})")
    return doc["findings"]


def cost_us(f):
    """A finding's cost per step in us (the CLI's JSON writes cost_us)."""
    return float(f["cost_us"]) if "cost_us" in f else f["cost_ns"] / 1e3


def summary(findings, wall_us, n=4):
    out = [f"{f['rule']} {cost_us(f):.1f} us {100 * share(f, wall_us):.1f} %" + (
        f" at {f['where']}" if f.get("where") else "") for f in findings[:n]]
    return "; ".join(out) or "none"


def share(f, wall_us):
    """A finding's share of its step: advise's own, else its cost over the median step wall time."""
    s = f.get("share")
    return float(s) if isinstance(s, (int, float)) else cost_us(f) / wall_us


class Checks:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def say(self, ok, text):
        print(f"{'PASS' if ok else 'FAIL'} {text}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def check_plant(c, ft, mode, plant, trace, step, planted_us, clean_us, out):
    rule = PLANTS[plant][0]
    walls = statistics.mean(planted_us)
    plant_cost = walls - clean_us
    try:
        findings = advise(ft, trace, step, os.path.join(out, f"advise-{mode}-{plant}.json"))
    except (RuntimeError, ValueError, KeyError) as e:
        c.say(False, f"[{mode}] {plant}: advise failed: {e}")
        c.say(False, f"[{mode}] {plant}: no cost to compare (advise failed)")
        return
    first = findings[0]["rule"] if findings else None
    c.say(first == rule, f"[{mode}] {plant}: first finding {first or 'none'}, expected {rule} "
          f"(findings: {summary(findings, walls)})")
    mine = [f for f in findings if f["rule"] == rule]
    cost = cost_us(mine[0]) if mine else 0.0
    ratio = cost / plant_cost if plant_cost > 0 else float("inf")
    ok = plant_cost > 0 and abs(ratio - 1) <= COST_TOLERANCE
    c.say(ok, f"[{mode}] {plant}: {rule} costs {cost:.1f} us/step, the plant {plant_cost:.1f} us/step "
          f"(mean step {clean_us:.1f} us clean -> {walls:.1f} us planted, {len(planted_us)} steps; median "
          f"{statistics.median(planted_us):.1f}): "
          f"x{ratio:.3f}, bound {1 - COST_TOLERANCE:.2f}-{1 + COST_TOLERANCE:.2f}")


def check_clean(c, ft, mode, trace, step, walls_us, out, what="clean"):
    wall = statistics.median(walls_us)
    try:
        findings = advise(ft, trace, step, os.path.join(out, f"advise-{mode}-{what.split()[0]}.json"))
    except (RuntimeError, ValueError, KeyError) as e:
        c.say(False, f"[{mode}] {what}: advise failed: {e}")
        return
    worst = max(findings, key=lambda f: share(f, wall), default=None)
    top = share(worst, wall) if worst else 0.0
    c.say(top <= CLEAN_MAX_SHARE, f"[{mode}] {what}: no finding over {100 * CLEAN_MAX_SHARE:.0f} % of its "
          f"{wall:.1f} us step (largest: {worst['rule'] + f' {100 * top:.1f} %' if worst else 'none'}; "
          f"findings: {summary(findings, wall)})")


def check_profiles(c, ft, out):
    with open(os.path.join(out, "prof-sessions.json")) as f:
        sessions = json.load(f)
    walls = [step_walls_us(s["trace"], is_profiler_step) for s in sessions]
    for s, w in zip(sessions, walls):
        print(f"     [profiler] {os.path.basename(s['trace'])}: {len(w)} steps, median "
              f"{statistics.median(w) if w else float('nan'):.1f} us, mean {statistics.mean(w) if w else 0:.1f}, "
              f"min {min(w, default=0):.1f}, max {max(w, default=0):.1f}")
        if len(w) != STEPS:
            c.say(False, f"[profiler] {s['trace']}: {len(w)} ProfilerStep# ranges, expected {STEPS}")
            return
    for twin, what in (("none", "clean"), ("pinned", "pinned twin")):
        i = next(i for i, s in enumerate(sessions) if s["variant"] == twin)
        check_clean(c, ft, "profiler", sessions[i]["trace"], None, walls[i], out, what)
    for i, s in enumerate(sessions):
        if s["variant"] not in PLANTS:
            continue
        twin = PLANTS[s["variant"]][1]
        around = [statistics.mean(walls[j]) for j in (i - 1, i + 1) if 0 <= j < len(sessions)
                  and sessions[j]["variant"] == twin]
        check_plant(c, ft, "profiler", s["variant"], s["trace"], None, walls[i], statistics.mean(around), out)


def check_records(c, ft, out, plants):
    for v in ["none"] + plants:
        trace = os.path.join(out, f"rec-{v}.json.gz")
        planted = step_walls_us(trace, lambda n: n == "step")
        clean = step_walls_us(trace, lambda n: n == "clean")
        print(f"     [record] {os.path.basename(trace)}: {len(planted)} 'step' ranges, median "
              f"{statistics.median(planted) if planted else float('nan'):.1f} us; {len(clean)} 'clean' ranges, "
              f"median {statistics.median(clean) if clean else float('nan'):.1f} us (means "
              f"{statistics.mean(planted) if planted else 0:.1f} and {statistics.mean(clean) if clean else 0:.1f})")
        want_clean = 0 if v == "none" else STEPS
        if len(planted) != STEPS or len(clean) != want_clean:
            c.say(False, f"[record] {trace}: {len(planted)} 'step' and {len(clean)} 'clean' ranges, expected "
                  f"{STEPS} and {want_clean}")
            continue
        if v == "none":
            check_clean(c, ft, "record", trace, "step", planted, out)
        else:
            if PLANTS[v][1] == "pinned":  # its twin's steps, the fix: clean too
                check_clean(c, ft, "record", trace, "clean", clean, out, "pinned twin")
            check_plant(c, ft, "record", v, trace, "step", planted, statistics.mean(clean), out)


# ---- synthetic traces shaped like the programs' (the checks above without a GPU) ----

class SynthTrace:
    """A record-style trace written by hand: one host thread's runtime calls, one stream's device work
    (each starts 5 us after its call, or when the stream is free), the launch paced by the host."""

    def __init__(self):
        self.ev, self.corr, self.dev_end, self.h = [], 0, 0.0, 1000.0

    def call(self, name, dur):
        self.corr += 1
        self.ev.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": self.h, "dur": dur,
                        "args": {"correlation": self.corr}})
        self.h += dur
        return self.h - dur

    def work(self, cat, name, dur, call_start):
        start = max(self.dev_end, call_start + 5)
        self.ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": start, "dur": dur,
                        "args": {"correlation": self.corr, "device": 0, "stream": 7}})
        # the launch's flow, as record writes it (ac2g: call to device work)
        self.ev.append({"ph": "s", "id": self.corr, "pid": 1, "tid": 1, "ts": call_start, "cat": "ac2g", "name": "ac2g"})
        self.ev.append({"ph": "f", "id": self.corr, "pid": 0, "tid": 7, "ts": start, "cat": "ac2g", "name": "ac2g",
                        "bp": "e"})
        self.dev_end = start + dur

    def launch(self, name, dur, py=7):
        self.h += py
        self.work("kernel", name, dur, self.call("cudaLaunchKernel", 3))

    def sync(self, name="cudaStreamSynchronize", after=5):
        self.call(name, max(2, self.dev_end + after - self.h))

    def copy(self, name, call_us, dur, then_sync):
        self.work("gpu_memcpy", name, dur, self.call("cudaMemcpyAsync", call_us))
        if then_sync:
            self.sync(after=4)

    def step(self, plant, name):
        t0 = self.h
        if plant == "loader":
            self.ev.append({"ph": "X", "cat": "user_annotation", "name": "load_batch", "pid": 1, "tid": 1,
                            "ts": self.h, "dur": SLEEP_S * 1e6})
            self.h += SLEEP_S * 1e6
        for _ in range(TINY if plant == "tiny" else 0):
            self.h += HOST_US
            self.launch("vectorized_elementwise_kernel<add>", 1.5, py=2)
        for k in range(LAYERS):
            self.launch("gemm_bf16", 200)
            self.launch("relu_kernel", 20)
            if plant == "item":
                self.copy("Memcpy DtoH (Device -> Pageable)", 3, 2, True)
                self.h += 15
            if k == LAYERS // 2 - 1 and plant in ("pinned", "pageable"):
                for _ in range(COPIES):
                    self.h += 8
                    self.copy(f"Memcpy HtoD ({'Pageable' if plant == 'pageable' else 'Pinned'} -> Device)",
                              8 if plant == "pageable" else 4, 3, plant == "pageable")
        self.sync("cudaDeviceSynchronize")
        self.h += 1
        self.ev.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": t0,
                        "dur": self.h - t0})
        self.h += 2

    def write(self, path):
        with gzip.open(path, "wt") as f:
            json.dump({"traceEvents": self.ev, "distributedInfo": {"rank": 0}}, f)


def synth(out):
    """The traces --check reads, written by hand in the programs' shape (the device's and the host's
    times made up: a GEMM 200 us, a launch call 3 us, Python between calls 7 us, ...)."""
    sessions = []
    for k, v in enumerate(PROFILE_ORDER):
        t = SynthTrace()
        for i in range(STEPS):
            t.step(v, f"ProfilerStep#{i + 2}")
        sessions.append({"variant": v, "trace": os.path.join(out, f"prof-{k}-{v}.json.gz")})
        t.write(sessions[-1]["trace"])
    with open(os.path.join(out, "prof-sessions.json"), "w") as f:
        json.dump(sessions, f)
    for v in ["none"] + list(PLANTS):
        t, twin = SynthTrace(), PLANTS[v][1] if v in PLANTS else v
        turns = [("step", v)] if v == twin else [("step", v), ("clean", twin)]
        for i in range(STEPS):
            for name, tv in (turns if i % 2 == 0 else turns[::-1]):
                t.step(tv, name)
        t.write(os.path.join(out, f"rec-{v}.json.gz"))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "prog-profiler":
        return prog_profiler(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "prog-record" and sys.argv[2] in VARIANTS:
        return prog_record(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "synth":
        os.makedirs(sys.argv[2], exist_ok=True)
        return synth(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flagtrace", required=True, help="the flagtrace binary")
    ap.add_argument("--out-dir", required=True, help="traces and advise's JSON go here")
    ap.add_argument("--check", action="store_true", help="only advise and check the traces already in --out-dir")
    ap.add_argument("--mode", choices=("both", "profiler", "record"), default="both")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    out = os.path.abspath(a.out_dir)
    ft = os.path.abspath(a.flagtrace)
    plants = list(PLANTS)
    t0 = time.perf_counter()
    if not a.check:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if a.mode in ("both", "profiler"):
            subprocess.run([sys.executable, ME, "prog-profiler", out], check=True, env=env)
            print(f"     profiled {len(PROFILE_ORDER)} variants in {time.perf_counter() - t0:.0f} s", flush=True)
        if a.mode in ("both", "record"):
            for v in ["none"] + plants:
                t1 = time.perf_counter()
                subprocess.run([ft, "record", "--force-overwrite", "-o", os.path.join(out, f"rec-{v}.json.gz"), "--",
                                sys.executable, ME, "prog-record", v], check=True, env=env)
                print(f"     recorded {v} in {time.perf_counter() - t1:.0f} s", flush=True)
    c = Checks()
    if a.mode in ("both", "profiler"):
        check_profiles(c, ft, out)
    if a.mode in ("both", "record"):
        check_records(c, ft, out, plants)
    print(f"advise plants: {c.passed} passed, {c.failed} failed ({time.perf_counter() - t0:.0f} s)")
    return 1 if c.failed or not c.passed else 0


if __name__ == "__main__":
    sys.exit(main() or 0)
