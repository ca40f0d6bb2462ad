"""One process using two GPUs (issue 13): kernels on each device's rows, peer-to-peer
copies as torch-cuda writes them, flows paired, every device's rows named, and
deviceProperties per device.

  torch_two_gpus.py workload                 the workload alone (for flagtrace record)
  torch_two_gpus.py check-record TRACE       checks a `flagtrace record` trace of it
  torch_two_gpus.py compare OUT_DIR          torch.profiler natively and with
                                             `import flagtrace.torch`, in two processes,
                                             then compares the two traces
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_checks import DEVICE_CATS, check_flows_paired, load, xs  # noqa: E402

P2P = "Memcpy PtoP (Device -> Device)"
MIB16 = 16 << 20


def workload(torch):
    a = torch.randn(2048, 2048, device="cuda:0")
    b = torch.randn(2048, 2048, device="cuda:1")
    for _ in range(3):
        a = a @ a.clamp(-1, 1)
        b = b @ b.clamp(-1, 1)
    x = torch.ones(MIB16 // 4, device="cuda:0")  # 16 MiB of float32
    y = x.to("cuda:1")                             # device 0 -> device 1
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    return float(y[0].item())


def check_trace(doc, torch_path, ours=True, runs=1):
    kernels = xs(doc, ("kernel",))
    pids = {e["pid"] for e in kernels}
    assert pids == {0, 1}, f"kernels on devices {pids}, want both"
    for e in kernels:
        assert e["args"]["device"] == e["pid"], e
    p2p = [e for e in xs(doc, ("gpu_memcpy",)) if e["name"] == P2P]
    assert p2p, "no peer-to-peer copies"
    for e in p2p:
        a = e["args"]
        assert a["fromDevice"] == 0 and a["toDevice"] == 1, a
        assert a["bytes"] > 0 and a["memory bandwidth (GB/s)"] > 0, a
        assert {"inDevice", "fromContext", "inContext", "toContext", "correlation", "stream"} <= set(a), a
    total = sum(e["args"]["bytes"] for e in p2p)
    assert total == runs * MIB16, f"{total} bytes copied peer to peer, want {runs} x 16 MiB"
    if not ours:  # torch-cuda's own trace: only the copies are compared
        return len(p2p)
    linked = check_flows_paired(doc)
    n_dev = len(xs(doc, DEVICE_CATS))
    ends = {(e["pid"], e["tid"], e["ts"]) for e in doc["traceEvents"] if e.get("ph") == "f"}
    unlinked = sorted({e["name"] for e in xs(doc, DEVICE_CATS) if (e["pid"], e["tid"], e["ts"]) not in ends})
    assert linked == n_dev, f"{linked} of {n_dev} device events linked; unlinked: {unlinked[:5]}"
    named = {(e["pid"], e["name"]) for e in doc["traceEvents"] if e.get("ph") == "M"}
    for d in (0, 1):
        assert (d, "process_name") in named and (d, "process_sort_index") in named, f"device {d} rows unnamed"
    streams = {(e["pid"], e["tid"]) for e in xs(doc, DEVICE_CATS)}
    thread_names = {(e["pid"], e["tid"]) for e in doc["traceEvents"]
                    if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert streams <= thread_names, f"unnamed stream rows: {streams - thread_names}"
    props = doc.get("deviceProperties", [])
    if not torch_path:  # kineto writes its own under torch.profiler
        import torch
        assert len(props) == torch.cuda.device_count(), props
        for d, p in enumerate(props):
            t = torch.cuda.get_device_properties(d)
            assert p["id"] == d and p["name"] == t.name, (p, t.name)
            assert p["numSms"] == t.multi_processor_count and p["totalGlobalMem"] == t.total_memory, (p, t)
            assert (p["computeMajor"], p["computeMinor"]) == (t.major, t.minor), p
    return len(p2p)


def profile(out, with_flagtrace):
    if with_flagtrace:
        import flagtrace.torch  # noqa: F401  (before the first profile)
        assert flagtrace.torch.available, flagtrace.torch.reason
    import torch
    from torch.profiler import ProfilerActivity, profile as prof
    workload(torch)  # warm-up: peer access, cuBLAS handles
    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        workload(torch)
    p.export_chrome_trace(out)


def main():
    mode = sys.argv[1]
    if mode == "workload":
        import torch
        assert torch.cuda.device_count() >= 2, "needs two GPUs"
        workload(torch)
        workload(torch)
    elif mode == "check-record":
        n = check_trace(load(sys.argv[2]), torch_path=False, runs=2)
        print(f"PASS record, one process on two GPUs: kernels on both rows, {n} PtoP copies, rows and "
              "deviceProperties for both")
    elif mode in ("native", "flagtrace"):
        profile(sys.argv[2], mode == "flagtrace")
    elif mode == "compare":
        d = sys.argv[2]
        paths = {m: os.path.join(d, f"two_gpus_{m}.json") for m in ("native", "flagtrace")}
        for m, path in paths.items():
            subprocess.run([sys.executable, __file__, m, path], check=True)
        native, ours = load(paths["native"]), load(paths["flagtrace"])
        n_native = check_trace(native, torch_path=True, ours=False)
        n_ours = check_trace(ours, torch_path=True)
        assert n_ours == n_native, f"{n_ours} PtoP copies, torch-cuda {n_native}"
        sizes = [sorted(e["args"]["bytes"] for e in xs(d, ("gpu_memcpy",)) if e["name"] == P2P) for d in (ours, native)]
        assert sizes[0] == sizes[1], sizes
        # under torch.profiler kineto writes deviceProperties itself (CUDA builds query
        # the runtime even CPU-only): the same objects as torch-cuda's
        assert ours.get("deviceProperties") == native.get("deviceProperties"), \
            (ours.get("deviceProperties"), native.get("deviceProperties"))
        print(f"PASS torch.profiler + flagtrace on two GPUs: {n_ours} PtoP copies as torch-cuda's")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
