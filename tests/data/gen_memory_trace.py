"""Writes a small torch.profiler trace with profile_memory=True from native torch-cuda (this process
never imports flagtrace), for CI's readers of torch's [memory] events: OUTDIR/torch_memory_<gpu>.json.gz
(a few hundred [memory] instants, gzip, under 30 kB; commit it as tests/data/torch_memory_h100.json.gz
or _h200) and OUTDIR/torch_memory_<gpu>.expect.json (what torch itself says of the same profile:
key_averages()' memory columns per op, torch.cuda.max_memory_allocated() over the window, reset before
it). An MLP training loop, the most steps (5 at most) whose trace fits.

  python3 tests/data/gen_memory_trace.py OUTDIR"""
import gzip
import json
import os
import sys
import tempfile

MAX_BYTES = 30 * 1024


def profile_once(torch, steps):
    from torch.profiler import ProfilerActivity, profile, record_function
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(32, 256, device="cuda"), torch.randint(0, 10, (32,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()  # warm-up: cuBLAS's workspace, the momentum buffers
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
        for i in range(steps):
            with record_function(f"ProfilerStep#{i}"):
                step()
        torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    rows = [{"key": e.key, "count": e.count, "device_type": str(e.device_type),
             "self_device_memory_usage": getattr(e, "self_device_memory_usage", None),
             "device_memory_usage": getattr(e, "device_memory_usage", None),
             "self_cpu_memory_usage": e.self_cpu_memory_usage, "cpu_memory_usage": e.cpu_memory_usage}
            for e in prof.key_averages()]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        prof.export_chrome_trace(path)
        with open(path, "rb") as f:
            raw = f.read()
    expect = {"source": f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}",
              "steps": steps, "max_memory_allocated": peak, "allocated_at_start": start,
              "max_memory_reserved": torch.cuda.max_memory_reserved(), "key_averages": rows}
    return gzip.compress(raw, 9, mtime=0), raw, expect


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    import torch
    if not torch.cuda.is_available():
        sys.exit("gen_memory_trace: needs a CUDA device and a CUDA build of torch")
    if "flagtrace" in sys.modules:
        sys.exit("gen_memory_trace: flagtrace is imported here; the trace must come from native torch")
    name = torch.cuda.get_device_name(0).lower()
    tag = "h200" if "h200" in name else "h100" if "h100" in name else "gpu"
    for steps in (5, 4, 3, 2, 1):  # the most steps that fit
        gz, raw, expect = profile_once(torch, steps)
        doc = json.loads(raw)
        n_mem = sum(1 for e in doc["traceEvents"] if e.get("name") == "[memory]")
        print(f"gen_memory_trace: {steps} steps: {len(doc['traceEvents'])} events, {n_mem} [memory], "
              f"{len(raw)} bytes, {len(gz)} gzipped")
        if len(gz) <= MAX_BYTES:
            break
    expect["memory_events"] = n_mem
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"torch_memory_{tag}.json.gz"), "wb") as f:
        f.write(gz)
    with open(os.path.join(out, f"torch_memory_{tag}.expect.json"), "w") as f:
        json.dump(expect, f, indent=1)
    ok = len(gz) <= MAX_BYTES and n_mem >= 100
    print(f"gen_memory_trace: wrote torch_memory_{tag}.json.gz ({len(gz)} bytes, {n_mem} [memory] events) and its "
          f".expect.json; peak allocated {expect['max_memory_allocated']}: {'ok' if ok else 'OVER 30 kB or too few'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
