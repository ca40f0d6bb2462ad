"""`import flagtrace.torch` before the first torch.profiler profile: kineto then runs
CPU-only and flagtrace supplies kernels, copies, memsets and runtime calls, linked to
the ops that issued them. Users keep calling torch.profiler.profile(...) unchanged.

Nothing raises here: without torch, without a GPU, or when kineto was already
initialized, one line on stderr says so and torch.profiler is left as it was."""
import sys

available = False
reason = ""


def _say(msg):
    sys.stderr.write(f"flagtrace.torch: {msg}\n")


def _install():
    global available, reason
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed: nothing to profile"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False): torch.profiler runs without flagtrace"
    try:
        from flagtrace import _C
    except ImportError as e:
        return f"the flagtrace extension could not be loaded ({e}); reinstall with pip install --no-build-isolation ./python"
    ok, msg = _C.install(True)
    if not ok:
        return msg
    available = True
    return ""


reason = _install()
if reason:
    _say(reason)
