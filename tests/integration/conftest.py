"""Shared fixtures: flagtrace installed into torch.profiler once per process, and one
capture of the shared workload that the parity and contract tests both read."""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from profiler_workload import run_traced_ops  # noqa: E402

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: GPU integration tests skipped")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: GPU integration tests skipped")
    return torch


@pytest.fixture(scope="session")
def ft_torch():
    _torch()
    import flagtrace.torch as ft
    # with torch and a GPU present, an install failure is a failure, not a skip
    assert ft.available, ft.reason
    return ft


@pytest.fixture(scope="session")
def capture(ft_torch, tmp_path_factory):
    torch = _torch()
    from torch.profiler import ProfilerActivity, profile
    run_traced_ops(torch)  # warm-up: handles, caches, module loads
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        run_traced_ops(torch)
    path = str(tmp_path_factory.mktemp("trace") / "trace.json")
    p.export_chrome_trace(path)
    with open(path) as f:
        doc = json.load(f)
    return {"doc": doc, "averages": p.key_averages(), "path": path}


def xs(doc, cats):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]


def runtime_events(doc):
    return xs(doc, ("cuda_runtime", "privateuse1_runtime", "cuda_driver", "privateuse1_driver"))


def flow_halves(doc):
    halves = {}
    for e in doc["traceEvents"]:
        if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
            halves.setdefault(e["id"], []).append(e["ph"])
    return halves
