"""`flagtrace record` on an unmodified PyTorch script using emit_nvtx: per-op self
device time from `flagtrace stats` against torch.profiler's key_averages() for the
same workload in a separate process (no flagtrace there): within 5 % (1 µs floor)."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_workload import workload  # noqa: E402


def run_recorded():
    import torch
    workload(torch)  # warm-up, outside the capture range
    torch.cuda.profiler.start()
    with torch.autograd.profiler.emit_nvtx():
        workload(torch)
    torch.cuda.profiler.stop()


def run_native(out):
    import torch
    from torch.profiler import ProfilerActivity, profile
    workload(torch)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        workload(torch)
    # CPU ops only: key_averages also lists each kernel and copy under its own name
    ops = {e.key: e.self_device_time_total for e in p.key_averages()
           if e.self_device_time_total > 0 and e.device_type == torch.autograd.DeviceType.CPU}
    with open(out, "w") as f:
        json.dump(ops, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("compare", "recorded", "native"), default="compare")
    ap.add_argument("--flagtrace")
    ap.add_argument("--out-dir", default=".")
    args = ap.parse_args()
    native = os.path.join(args.out_dir, "emit_nvtx_native_ops.json")
    if args.mode == "recorded":
        return run_recorded()
    if args.mode == "native":
        return run_native(native)
    me = os.path.abspath(__file__)
    trace = os.path.join(args.out_dir, "emit_nvtx_trace.json.gz")
    subprocess.run([sys.executable, me, "--mode", "native", "--out-dir", args.out_dir], check=True)
    subprocess.run([args.flagtrace, "record", "--force-overwrite", "--capture-range=cudaProfilerApi", "-o", trace, "--",
                    sys.executable, me, "--mode", "recorded"], check=True)
    stats = json.loads(subprocess.run([args.flagtrace, "stats", "--format", "json", "--report", "ops,kernels", trace],
                                      check=True, capture_output=True, text=True).stdout)
    ours = {o["name"]: o["self_device_us"] for o in stats["ops"]}
    theirs = json.load(open(native))
    failures = 0
    for op, t in sorted(theirs.items(), key=lambda kv: -kv[1]):
        if t < 5.0:  # a few µs: launch jitter dominates; listed, not judged
            print(f"     {op}: torch {t:.1f} us, flagtrace {ours.get(op, 0):.1f} us (not judged: < 5 us)")
            continue
        # Two processes, two runs: a few-µs op (a 64 KiB pageable copy) varies by
        # more than 5 % between them (measured 8.0 vs 8.5 µs), hence the 1 µs floor.
        ok = op in ours and abs(ours[op] - t) <= max(0.05 * t, 1.0)
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {op}: torch {t:.1f} us, flagtrace {ours.get(op, 0):.1f} us")
    unattributed = ours.get("(no op)", 0)
    print(f"     device time not under any NVTX op range: {unattributed:.1f} us")
    print(f"{sum(1 for t in theirs.values() if t >= 5.0) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main() or 0)
