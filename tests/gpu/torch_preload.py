"""A torch process under `record --inject=preload`: torch dlopens libcudart from its own
RUNPATH, and the preload library must arm there (one trace, with the add_ kernel)."""
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


def check(folder):
    files = glob.glob(folder + "/t-*.json.gz")
    assert len(files) == 1, f"one trace expected, got {files}"
    kernels = xs(load(files[0]), ("kernel",))
    names = [e["name"] for e in kernels]
    assert any("elementwise" in n or "add" in n.lower() for n in names), names
    print(f"PASS one trace, {len(kernels)} kernels, e.g. {names[-1][:70]}")


if __name__ == "__main__":
    run() if sys.argv[1] == "run" else check(sys.argv[2])
