"""PyTorch side of the GPU benchmarks; one mode per process, JSON lines out.

loop MODE: a launch-bound `x.add_(1.0)` loop, REPS times, one JSON line (by hand).
  bare       no profiler, flagtrace not imported
  idle       `import flagtrace.torch`, no profiler
  kineto     torch.profiler [CPU, CUDA], kineto's own CUPTI
  flagtrace  `import flagtrace.torch`, then the same profile
serve SIDE: the loops of P1 and P3 on command, for bench/run.py's lockstep rounds.
  base       bare loops (P1's baseline) and kineto profiles (P3's)
  ft         the same after `import flagtrace.torch`
  After one plain loop it prints a "ready" JSON line, then for each line read from
  stdin runs one loop and prints its JSON line: `plain` (no profiler), `warm` (the
  first profile: profiler and CUPTI start; counts its kernels) or `prof`. bench/run.py
  sends every `plain` before the first profile, so P1 sees a process that has not
  profiled yet. With --pin CPU every thread is moved to that one CPU first; the
  unmeasured work (the warm-up profile, the exit at end of input) runs back on the
  CPUs the process started on, so that the sides' warm-ups and CUDA teardowns
  overlap instead of queueing on the one CPU. The
  layout offsets of bench/run.py's layout() (FT_BENCH_MMAP_PAD, FT_BENCH_HEAP_PAD) are
  taken before torch is imported.
exit-split MODE: one profile (kineto or flagtrace) after a warm-up, its exit under cProfile:
  where the profile's exit goes (P3 end to end), printed to stderr.
capture: kineto's own captures of about EVENTS events, timing export_chrome_trace
  (P4 baseline, once each) and key_averages (P5 baseline) on the first K."""
import argparse
import json
import os
import sys
import tempfile
import time


class Loop:
    """torch (and flagtrace.torch when asked) imported, CUDA initialized, one tensor."""

    def __init__(self, with_flagtrace):
        t0 = time.perf_counter()
        if with_flagtrace:
            import flagtrace.torch as ftt
            if not ftt.available:
                sys.exit(f"torch_bench: flagtrace.torch is not available: {ftt.reason}")
        import torch
        from torch.profiler import ProfilerActivity, profile
        self.torch, self.profile, self.acts = torch, profile, [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        self.x = torch.zeros(1024, device="cuda")
        self.import_s = time.perf_counter() - t0  # torch (and flagtrace) imported, CUDA initialized

    def body(self, iters):
        x = self.x
        t0 = time.perf_counter()
        for _ in range(iters):
            x.add_(1.0)
        self.torch.cuda.synchronize()
        return time.perf_counter() - t0

    def plain(self, iters):
        return {"us_per_op": self.body(iters) * 1e6 / iters}

    def prof(self, iters, count=False):
        """One profile around the loop: the loop's own time and enter-to-exit."""
        t0 = time.perf_counter()
        with self.profile(activities=self.acts) as p:
            t_loop = self.body(iters)
        out = {"us_per_op": t_loop * 1e6 / iters, "end_to_end_s": time.perf_counter() - t0}
        if count:  # kineto's own records: p.events() would build every FunctionEvent (seconds)
            out["device_events"] = sum(1 for e in p.profiler.kineto_results.events()
                                       if e.device_type() == self.torch.autograd.DeviceType.CUDA)
        return out


def loop(mode, iters, reps):
    lp = Loop(mode in ("idle", "flagtrace"))
    profiled = mode in ("kineto", "flagtrace")
    in_loop, end_to_end, warm = [], [], None
    for r in range(reps + 1):  # the first is a warm-up (profiler and CUPTI init)
        got = lp.prof(iters, count=not r) if profiled else lp.plain(iters)
        if not r:
            warm = got
            continue
        in_loop.append(got["us_per_op"])
        end_to_end.append(got.get("end_to_end_s", got["us_per_op"] * iters / 1e6))
    out = {"mode": mode, "iters": iters, "us_per_op": in_loop, "end_to_end_s": end_to_end, "import_s": lp.import_s}
    if profiled:
        out["device_events_first_rep"] = warm["device_events"]
    print(json.dumps(out))


def pin_all_threads(cpus):
    """Every thread of this process onto the CPU set (os.sched_setaffinity moves one thread)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:  # a thread that has just ended
            pass


def layout_pads():
    """Takes the mmap and heap offsets bench/run.py drew for this process's pair
    (FT_BENCH_MMAP_PAD, FT_BENCH_HEAP_PAD bytes; see its layout()) before torch is
    imported, so that with ASLR off every later mapping and allocation moves with them.
    Returns what must stay alive."""
    keep = []
    size = int(os.environ.get("FT_BENCH_MMAP_PAD", "0"))
    if size > 0:
        import mmap
        keep.append(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ))
    size = int(os.environ.get("FT_BENCH_HEAP_PAD", "0"))
    if size > 0:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        keep.append(libc.malloc(size))  # never freed: the heap's later chunks sit above it
    return keep


def serve(side, iters, pin):
    pads = layout_pads()  # noqa: F841 (kept alive for the process's life)
    started_on = os.sched_getaffinity(0)
    lp = Loop(side == "ft")
    lp.plain(iters)
    measured_on = started_on if pin is None else {pin}
    pin_all_threads(measured_on)

    def warm(n):  # not measured: on the start CPUs, so every side's warm-up runs at once
        pin_all_threads(started_on)
        got = lp.prof(n, count=True)
        pin_all_threads(measured_on)  # again: the profiler's start added threads
        return got

    print(json.dumps({"ready": side, "iters": iters, "import_s": lp.import_s}), flush=True)
    run = {"plain": lp.plain, "prof": lp.prof, "warm": warm}
    for line in sys.stdin:
        cmd = line.strip()
        if cmd not in run:
            sys.exit(f"torch_bench serve: unknown command {cmd!r} (plain, warm, prof)")
        print(json.dumps(run[cmd](iters)), flush=True)
    pin_all_threads(started_on)  # the exit (CUDA's teardown) is not measured either


def exit_split(mode, iters):
    import cProfile
    import io
    import pstats
    if mode == "flagtrace":
        import flagtrace.torch  # noqa: F401
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.zeros(1024, device="cuda")
    out = {"mode": "exit-split:" + mode}
    for r in range(2):  # the first is the warm-up
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
        for _ in range(iters):
            x.add_(1.0)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        if r:
            cp = cProfile.Profile()
            cp.enable()
        prof.__exit__(None, None, None)
        if r:
            cp.disable()
            out["exit_s"] = time.perf_counter() - t0
            out["kineto_events"] = len(prof.profiler.kineto_results.events())
            out["function_events"] = len(prof.events())
            text = io.StringIO()
            st = pstats.Stats(cp, stream=text)
            st.sort_stats("cumulative").print_stats(14)
            st.sort_stats("tottime").print_stats(10)
            print(f"--- exit-split {mode}: exit {out['exit_s']:.3f} s", file=sys.stderr)
            print(text.getvalue(), file=sys.stderr)
    print(json.dumps(out))


def capture(events, reps, key_averages):
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.zeros(1024, device="cuda")
    iters = events // 3  # aten::add_, its cudaLaunchKernel, its kernel
    export_s, key_avg_s, counts = [], [], []
    with tempfile.TemporaryDirectory() as d:
        for r in range(reps + 1):
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(iters):
                    x.add_(1.0)
                torch.cuda.synchronize()
            if not r:  # the warm-up: its export and key_averages would only cost time
                continue
            path = os.path.join(d, f"t{r}.json")
            t0 = time.perf_counter()  # once: torch 2.11 saves a profile once ("Trace is already saved")
            prof.export_chrome_trace(path)
            export_s.append(time.perf_counter() - t0)
            if r <= key_averages:  # 6-12 s each on the H200 host
                t0 = time.perf_counter()
                prof.key_averages()
                key_avg_s.append(time.perf_counter() - t0)
            with open(path) as f:
                doc = json.load(f)
            counts.append(sum(1 for e in doc["traceEvents"] if e.get("ph") == "X"))
    print(json.dumps({"mode": "capture", "slices": counts, "export_chrome_trace_s": export_s,
                      "key_averages_s": key_avg_s}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("loop")
    lp.add_argument("mode", choices=["bare", "idle", "kineto", "flagtrace"])
    lp.add_argument("--iters", type=int, default=20000)
    lp.add_argument("--reps", type=int, default=3)
    sp = sub.add_parser("serve")
    sp.add_argument("side", choices=["base", "ft"])
    sp.add_argument("--iters", type=int, default=10000)
    sp.add_argument("--pin", type=int, default=None, help="the CPU every thread moves to once warmed up")
    xp = sub.add_parser("exit-split")
    xp.add_argument("mode", choices=["kineto", "flagtrace"])
    xp.add_argument("--iters", type=int, default=20000)
    cp = sub.add_parser("capture")
    cp.add_argument("--events", type=int, default=100000)
    cp.add_argument("--reps", type=int, default=5, help="captures after the warm-up")
    cp.add_argument("--key-averages", type=int, default=None, metavar="K",
                    help="time key_averages() on the first K captures only (default: all)")
    a = ap.parse_args()
    if a.cmd == "loop":
        loop(a.mode, a.iters, a.reps)
    elif a.cmd == "serve":
        serve(a.side, a.iters, a.pin)
    elif a.cmd == "exit-split":
        exit_split(a.mode, a.iters)
    else:
        capture(a.events, a.reps, a.reps if a.key_averages is None else a.key_averages)


if __name__ == "__main__":
    main()
