"""Runs the PyTorch integration tests where they can run (torch with a CUDA device,
pytest, the flagtrace package), and says in one line why not elsewhere."""
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def why_not():
    for mod in ("pytest", "torch"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed"
    import torch
    if not torch.cuda.is_available():
        return "no CUDA device"
    return None


reason = why_not()
if reason:
    print(f"SKIPPED: PyTorch integration tests (tests/integration): {reason}; they run in scripts/gpu-check.sh")
    sys.exit(77)  # ctest's SKIP_RETURN_CODE: shown as skipped, never as passed
sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", HERE, *sys.argv[1:]]))
