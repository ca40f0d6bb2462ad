"""Shared fixtures: flagtrace installed into torch.profiler once per process, and one
capture of the shared workload that the parity and contract tests both read.

FLAGTRACE_TEST_MODE picks the profile's device type, one per pytest process (torch's
privateuse1 backend can be renamed only before the first profile):
  cuda (default)  activities [CPU, CUDA]
  privateuse1     activities [CPU, PrivateUse1] with the backend renamed "flagos" after
                  `import flagtrace.torch`; the CUDA device stands in for a CUDA-compatible
                  vendor device, as on MetaX and PPU."""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
from profiler_workload import run_traced_ops  # noqa: E402
from trace_checks import DEVICE_CATS, flow_halves, runtime_events, xs  # noqa: E402,F401 (the tests import them from here)

MODES = ("cuda", "privateuse1")
MODE = os.environ.get("FLAGTRACE_TEST_MODE", "cuda")
RENAMED = "flagos"  # the privateuse1 backend's name in privateuse1 mode
# the device torch attributes device time to (FunctionEventAvg.use_device)
USE_DEVICE = "cuda" if MODE == "cuda" else RENAMED


def pytest_configure(config):
    if MODE not in MODES:
        raise pytest.UsageError(f"FLAGTRACE_TEST_MODE={MODE!r}: use one of {', '.join(MODES)}")


def activities():
    from torch.profiler import ProfilerActivity
    return [ProfilerActivity.CPU, ProfilerActivity.CUDA if MODE == "cuda" else ProfilerActivity.PrivateUse1]


def cuda_mode_only():
    """For tests whose subject does not depend on the mode (they run child processes):
    run once, in the cuda process."""
    if MODE != "cuda":
        pytest.skip("independent of the mode: runs in the FLAGTRACE_TEST_MODE=cuda process")


def _torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: GPU integration tests skipped")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: GPU integration tests skipped")
    return torch


@pytest.fixture(scope="session")
def ft_torch():
    torch = _torch()
    # imported before the rename, as a user may: the device type is chosen at the
    # first profile, not here
    import flagtrace.torch as ft
    # with torch and a GPU present, an install failure is a failure, not a skip
    assert ft.available, ft.reason
    if MODE == "privateuse1":
        torch.utils.rename_privateuse1_backend(RENAMED)
        from torch.profiler import ProfilerActivity
        assert ProfilerActivity.PrivateUse1 in torch._C._autograd._supported_activities()
    assert ft.resolve()[0] == MODE, ft.resolve()
    return ft


@pytest.fixture(scope="session")
def capture(ft_torch, tmp_path_factory):
    torch = _torch()
    from torch.profiler import profile
    run_traced_ops(torch)  # warm-up: handles, caches, module loads
    with profile(activities=activities()) as p:
        run_traced_ops(torch)
    path = str(tmp_path_factory.mktemp("trace") / "trace.json")
    p.export_chrome_trace(path)
    with open(path) as f:
        doc = json.load(f)
    from flagtrace import _C
    return {"doc": doc, "averages": p.key_averages(), "path": path, "configured": _C.configured_device()}
