"""Runs one torch workload twice, under torch.profiler (native torch-cuda, kineto's
CUPTI) and under flagtrace's C API (ctypes, no torch.profiler), in separate
processes, and compares what each reports for the same kernels and copies."""
import argparse
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_workload import workload  # noqa: E402
from trace_checks import check_flows_paired, check_window, load, xs  # noqa: E402

FIELDS = ("grid", "block", "registers per thread", "shared memory", "blocks per SM", "warps per SM",
          "est. achieved occupancy %")


def run_native(out):
    import torch
    from torch.profiler import ProfilerActivity, profile
    workload(torch)  # warm-up: handles, caches
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        workload(torch)
    p.export_chrome_trace(out)


def run_flagtrace(out, lib):
    import torch
    ft = ctypes.CDLL(lib)
    ft.ft_strerror.restype = ctypes.c_char_p
    ft.ft_session_last_error.restype = ctypes.c_char_p
    ft.ft_session_last_error.argtypes = [ctypes.c_void_p]
    for f in ("ft_session_start", "ft_session_stop", "ft_session_write", "ft_session_destroy"):
        getattr(ft, f).argtypes = [ctypes.c_void_p] + ([ctypes.c_char_p] if f == "ft_session_write" else [])
    workload(torch)
    s = ctypes.c_void_p()
    assert ft.ft_session_create(ctypes.byref(s), None) == 0
    why = ctypes.c_char_p()
    ft.ft_session_device_status.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]
    st = ft.ft_session_device_status(s, ctypes.byref(why))
    assert st == 0, f"device tracer unavailable: {why.value}"
    assert ft.ft_session_start(s) == 0
    workload(torch)
    assert ft.ft_session_stop(s) == 0, ft.ft_session_last_error(s)
    assert ft.ft_session_write(s, out.encode()) == 0, ft.ft_session_last_error(s)
    ft.ft_session_destroy(s)


def kernel_fields(doc):
    out = {}
    for e in xs(doc, ("kernel",)):
        a = e["args"]
        out.setdefault(e["name"], set()).add(tuple(
            tuple(a[f]) if isinstance(a.get(f), list) else a.get(f) for f in FIELDS))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("compare", "native", "flagtrace"), default="compare")
    ap.add_argument("--lib")
    ap.add_argument("--out-dir", default=".")
    args = ap.parse_args()
    native = os.path.join(args.out_dir, "torch_native_trace.json")
    ours = os.path.join(args.out_dir, "torch_flagtrace_trace.json.gz")
    if args.mode == "native":
        return run_native(native)
    if args.mode == "flagtrace":
        return run_flagtrace(ours, args.lib)
    me = os.path.abspath(__file__)
    subprocess.run([sys.executable, me, "--mode", "native", "--out-dir", args.out_dir], check=True)
    subprocess.run([sys.executable, me, "--mode", "flagtrace", "--lib", args.lib, "--out-dir", args.out_dir],
                   check=True, env=dict(os.environ, FLAGOS_TRACE="1"))
    a, b = load(native), load(ours)
    ka, kb = kernel_fields(a), kernel_fields(b)
    common = sorted(set(ka) & set(kb))
    failures = []

    def check(name, ok, detail=""):
        print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}")
        if not ok:
            failures.append(name)

    print(f"     kernels: torch {len(ka)} names, flagtrace {len(kb)} names, {len(common)} in common")
    check("the same kernel names", set(ka) == set(kb),
          f"only torch: {sorted(set(ka) - set(kb))[:3]}, only flagtrace: {sorted(set(kb) - set(ka))[:3]}")
    for name in common:
        short = name if len(name) < 70 else name[:67] + "..."
        check(f"kernel fields equal: {short}", ka[name] == kb[name], f"torch {ka[name]} flagtrace {kb[name]}")
    occ = sorted({v[-1] for name in common for v in kb[name]})
    print(f"     occupancy values seen: {occ}")
    ma = sorted((e["name"], e["args"]["bytes"]) for e in xs(a, ("gpu_memcpy",)))
    mb = sorted((e["name"], e["args"]["bytes"]) for e in xs(b, ("gpu_memcpy",)))
    check("memcpy names and bytes equal", ma == mb, f"torch {ma} flagtrace {mb}")
    try:
        check_flows_paired(b)
        check_window(b)
        check("flagtrace trace: flows paired, window held", True)
    except AssertionError as e:
        check("flagtrace trace: flows paired, window held", False, str(e))
    print(f"{len(common) + 3 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main() or 0)
