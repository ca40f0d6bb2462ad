"""A torch process under `record --inject=preload`: torch dlopens libcudart from its own
RUNPATH, and the preload library must arm there (one trace, with the add_ kernel).
`range`: under `record --capture-range`, torch.cuda.profiler.start/stop around three
add_ with a mul_ before and after: the libcuda shim must open the range at the start
(check-range: the three add kernels, no mul)."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_checks import load, xs  # noqa: E402


def run():
    import torch
    x = torch.ones(1 << 20, device="cuda")
    x.add_(1)
    torch.cuda.synchronize()


def run_range():
    import torch
    x = torch.ones(1 << 20, device="cuda")
    x.mul_(2)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(3):
        x.add_(1)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    x.mul_(3)
    torch.cuda.synchronize()


def check_range(path):
    doc = load(path)
    names = [e["name"] for e in xs(doc, ("kernel",))]
    assert len(names) == 3 and all("add" in n.lower() and "mul" not in n.lower() for n in names), names
    assert doc["flagtrace"]["device_activity"] is True, doc["flagtrace"]
    print(f"PASS the range only: {len(names)} kernels, e.g. {names[0][:70]}")


def check(folder):
    files = glob.glob(folder + "/t-*.json.gz")
    assert len(files) == 1, f"one trace expected, got {files}"
    kernels = xs(load(files[0]), ("kernel",))
    names = [e["name"] for e in kernels]
    assert any("elementwise" in n or "add" in n.lower() for n in names), names
    print(f"PASS one trace, {len(kernels)} kernels, e.g. {names[-1][:70]}")


if __name__ == "__main__":
    {"run": run, "range": run_range}[sys.argv[1]]() if len(sys.argv) == 2 else \
        {"check": check, "check-range": check_range}[sys.argv[1]](sys.argv[2])
