"""PyTorch side of the GPU benchmarks; one mode per process, one JSON line out.

loop MODE: a launch-bound `x.add_(1.0)` loop (P1, P3).
  bare       no profiler, flagtrace not imported            (P1 baseline)
  idle       `import flagtrace.torch`, no profiler          (P1)
  kineto     torch.profiler [CPU, CUDA], kineto's own CUPTI (P3 baseline)
  flagtrace  `import flagtrace.torch`, then the same profile (P3)
  base       bare, then kineto, in one process (one P1 and one P3 sample per process:
             bench/run.py pairs it with an `ft` process, half the process starts)
  ft         idle, then flagtrace, in one process
exit-split MODE: one profile (kineto or flagtrace) after a warm-up, its exit under cProfile:
  where the profile's exit goes (P3 end to end), printed to stderr.
capture: kineto's own captures of about EVENTS events, timing export_chrome_trace
  (P4 baseline, EXPORTS times each) and key_averages (P5 baseline) on each."""
import argparse
import json
import os
import sys
import tempfile
import time

T_START = time.perf_counter()  # the process's own phases (import, warm-up) go in its JSON line


def loop(mode, iters, reps, plain_reps):
    if mode in ("base", "ft"):  # the plain loop first, then the profiled one
        # plain loops cost ~0.1 s against the process's ~9 s of import and CUPTI start:
        # more of them make each process's P1 figure steadier for nothing
        plain = loop_once("bare" if mode == "base" else "idle", iters, plain_reps or reps)
        prof = loop_once("kineto" if mode == "base" else "flagtrace", iters, reps)
        prof["mode"] = mode
        prof["plain_us_per_op"] = plain["us_per_op"]
        prof["import_s"] = plain["import_s"]
        prof["plain_warm_up_s"] = plain["warm_up_s"]
        prof["process_s"] = time.perf_counter() - T_START
        print(json.dumps(prof))
    else:
        print(json.dumps(loop_once(mode, iters, reps)))


def loop_once(mode, iters, reps):
    t_import = time.perf_counter()
    if mode in ("idle", "flagtrace"):
        import flagtrace.torch as ftt
        if not ftt.available:
            sys.exit(f"torch_bench: flagtrace.torch is not available: {ftt.reason}")
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.zeros(1024, device="cuda")
    t_import = time.perf_counter() - t_import  # torch (and flagtrace) imported, CUDA initialized
    in_loop, end_to_end = [], []

    def body():
        t0 = time.perf_counter()
        for _ in range(iters):
            x.add_(1.0)
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    for r in range(reps + 1):  # the first is a warm-up (profiler and CUPTI init)
        if mode in ("bare", "idle"):
            t_loop = body()
            t_all = t_loop
        else:
            t0 = time.perf_counter()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                t_loop = body()
            t_all = time.perf_counter() - t0
            if r == 0:  # kineto's own records: prof.events() would build every FunctionEvent (seconds)
                kernels = sum(1 for e in prof.profiler.kineto_results.events()
                              if e.device_type() == torch.autograd.DeviceType.CUDA)
        if not r:
            warm_s = t_all
        if r:
            in_loop.append(t_loop * 1e6 / iters)
            end_to_end.append(t_all)
    out = {"mode": mode, "iters": iters, "us_per_op": in_loop, "end_to_end_s": end_to_end, "import_s": t_import,
           "warm_up_s": warm_s}
    if mode in ("kineto", "flagtrace"):
        out["device_events_first_rep"] = kernels
    return out


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


def capture(events, reps, exports):
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
            for _ in range(exports):  # each export renders the whole trace again
                t0 = time.perf_counter()
                prof.export_chrome_trace(path)
                export_s.append(time.perf_counter() - t0)
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
    lp.add_argument("mode", choices=["bare", "idle", "kineto", "flagtrace", "base", "ft"])
    lp.add_argument("--iters", type=int, default=20000)
    lp.add_argument("--reps", type=int, default=3)
    lp.add_argument("--plain-reps", type=int, default=0, help="base/ft: plain loops (default: --reps)")
    xp = sub.add_parser("exit-split")
    xp.add_argument("mode", choices=["kineto", "flagtrace"])
    xp.add_argument("--iters", type=int, default=20000)
    cp = sub.add_parser("capture")
    cp.add_argument("--events", type=int, default=100000)
    cp.add_argument("--reps", type=int, default=5, help="captures after the warm-up")
    cp.add_argument("--exports", type=int, default=1, choices=[1],
                    help="export_chrome_trace calls per capture (torch 2.11 saves a profile once: 'Trace is already saved')")
    a = ap.parse_args()
    if a.cmd == "loop":
        loop(a.mode, a.iters, a.reps, a.plain_reps)
    elif a.cmd == "exit-split":
        exit_split(a.mode, a.iters)
    else:
        capture(a.events, a.reps, a.exports)


if __name__ == "__main__":
    main()
