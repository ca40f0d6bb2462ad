"""One training step (AdamW, ProfilerStep via schedule) profiled twice, in two processes:
native torch-cuda, and torch.profiler with `import flagtrace.torch`. The two traces
feed tests/gpu/hta_compare.py (Holistic Trace Analysis) and the parity checks below.

  torch_train_step.py --out DIR        writes DIR/torch_cuda.json.gz and DIR/flagtrace.json.gz
                                       (HTA reads one folder per trace: see hta_compare.py)
                                       and compares them
  torch_train_step.py native|flagtrace TRACE   one of the two (what --out runs)
"""
import argparse
import os
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_checks import DEVICE_CATS, check_flows_paired, load, xs  # noqa: E402

# wait 1, warmup 1, active 3: ProfilerStep#2..#4 are recorded. HTA leaves the last
# iteration out and its temporal breakdown needs more than one (with a single step it
# asserted on torch-cuda's own trace: a negative non-compute time after ns rounding).
STEPS = 5


def train(out, with_flagtrace):
    if with_flagtrace:
        import flagtrace.torch  # noqa: F401  (before the first profile)
        assert flagtrace.torch.available, flagtrace.torch.reason
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule
    torch.manual_seed(0)
    # GPU-bound (milliseconds of matmuls per step), so that the temporal breakdown
    # measures the device rather than the host's launch pace, which varies by process
    model = torch.nn.Sequential(torch.nn.Linear(2048, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 2048),
                                torch.nn.LayerNorm(2048), torch.nn.Linear(2048, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(4096, 2048, device="cuda"), torch.randint(0, 10, (4096,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    step()  # cuBLAS handles, AdamW state
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(STEPS):
            step()
            torch.cuda.synchronize()
            prof.step()


def compare(native, ours):
    """Parity beyond HTA: the same device work, user annotations and API rows."""
    nk, ok = Counter(e["name"] for e in xs(native, DEVICE_CATS)), Counter(e["name"] for e in xs(ours, DEVICE_CATS))
    assert nk == ok, f"device events differ: torch-cuda only {nk - ok}, flagtrace only {ok - nk}"
    na = Counter((e["name"], e["pid"]) for e in xs(native, ("gpu_user_annotation",)))
    oa = Counter((e["name"], e["pid"]) for e in xs(ours, ("gpu_user_annotation",)))
    assert na, "torch-cuda wrote no gpu_user_annotation"
    assert set(na) == set(oa), f"gpu_user_annotation: torch-cuda {sorted(na)}, flagtrace {sorted(oa)}"
    nr, orr = Counter(e["name"] for e in xs(native, ("cuda_runtime",))), Counter(e["name"] for e in xs(ours, ("cuda_runtime",)))
    extra = set(orr) - set(nr)
    assert not extra, f"API rows torch-cuda leaves out: {sorted(extra)}"
    total_n, total_o = sum(nr.values()), sum(orr.values())
    assert 0.9 * total_n <= total_o <= 1.1 * total_n, f"{total_o} runtime rows, torch-cuda {total_n}"
    linked = check_flows_paired(ours)
    assert linked == sum(ok.values()), f"{linked} of {sum(ok.values())} device events linked"
    print(f"PASS training step: {sum(ok.values())} device events, gpu_user_annotation {sorted(oa)}, "
          f"{total_o} runtime rows (torch-cuda {total_n})")


def main():
    if len(sys.argv) == 3 and sys.argv[1] in ("native", "flagtrace"):
        return train(sys.argv[2], sys.argv[1] == "flagtrace")
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    paths = {m: os.path.join(a.out, f"{name}.json.gz") for m, name in (("native", "torch_cuda"),
                                                                        ("flagtrace", "flagtrace"))}
    for m, path in paths.items():
        subprocess.run([sys.executable, __file__, m, path], check=True)
    compare(load(paths["native"]), load(paths["flagtrace"]))


if __name__ == "__main__":
    main()
