"""`flagtrace record` on a torch program that runs torch.profiler itself (issue 34): the
program profiles ten tanh(x @ x) with [CPU, CUDA] and exports its trace; under record
its profile must get device activity from flagtrace (the kineto adaptor the injection
installs) and record's own trace must hold every kernel of the whole run.

  prog OUT.json            the program (run natively, under `import flagtrace.torch`, or under record)
  check RECORD.json.gz PROFILE.json REFERENCE.json STDERR
                           record's trace has every kernel (20 in the profile, 2 before it),
                           the profile equals the one `import flagtrace.torch` gives
                           (the same kernels, runtime calls and linkage), nothing lost"""
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_checks import DEVICE_CATS, check_flows_paired, load, runtime_events, xs  # noqa: E402


def prog(out):
    if os.environ.get("FT_IMPORT_FLAGTRACE") == "1":
        import flagtrace.torch  # noqa: F401  (the reference: the adaptor through Python)
    import torch
    from torch.profiler import ProfilerActivity, profile
    x = torch.randn(512, 512, device="cuda")
    y = torch.tanh(x @ x)  # warm-up (cuBLAS handle, module loads): 2 kernels before the profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(10):
            y = torch.tanh(x @ x)
        torch.cuda.synchronize()
    p.export_chrome_trace(out)
    print("device events in the profile:", sum(1 for e in p.events() if e.device_type != torch.autograd.DeviceType.CPU))


def shape(doc):
    """What two profiles of the same program share: kernels and API calls by name, and
    which aten op each kernel's time went to."""
    ops = {e["args"]["External id"]: e["name"] for e in xs(doc, ("cpu_op",)) if "External id" in e.get("args", {})}
    kern = collections.Counter((e["name"], ops.get(e["args"].get("External id"))) for e in xs(doc, DEVICE_CATS))
    api = collections.Counter(e["name"] for e in runtime_events(doc))
    return kern, api


def check(record_path, profile_path, reference_path, stderr_path):
    err = open(stderr_path).read()
    assert "missing" not in err and "cannot take device activity" not in err, err
    w = re.findall(r"^flagtrace: wrote \S+ \((\d+) events, (\d+) dropped\)$", err, re.M)
    assert len(w) == 1 and w[0][1] == "0", err
    rec = load(record_path)
    rk = [e["name"] for e in xs(rec, ("kernel",))]
    gemm = [n for n in rk if "gemm" in n.lower() or "sgemm" in n.lower() or "cutlass" in n.lower() or "xmma" in n.lower()]
    tanh = [n for n in rk if "tanh" in n.lower()]
    assert len(tanh) >= 11 and len(gemm) >= 11, (len(tanh), len(gemm), collections.Counter(rk))
    check_flows_paired(rec)
    with open(profile_path) as f:
        prof = json.load(f)
    with open(reference_path) as f:
        ref = json.load(f)
    pk, pa = shape(prof)
    rk2, ra = shape(ref)
    assert sum(1 for e in xs(prof, ("kernel",)) if "tanh" in e["name"].lower()) == 10, pk
    assert pk == rk2, f"profile under record {pk} != under import flagtrace.torch {rk2}"
    assert pa == ra, f"API calls {pa} != {ra}"
    assert all(op for (_, op) in pk), f"a kernel without its op: {pk}"
    assert not [e for e in prof["traceEvents"] if e.get("cat") == "Trace" and "flagtrace" in e["name"]]
    print(f"PASS record's trace: {len(rk)} kernels ({len(tanh)} tanh, {len(gemm)} matmul); the program's own "
          f"profile: {sum(pk.values())} device events, equal to import flagtrace.torch's, every one linked")


if __name__ == "__main__":
    {"prog": lambda: prog(sys.argv[2]), "check": lambda: check(*sys.argv[2:6])}[sys.argv[1]]()
