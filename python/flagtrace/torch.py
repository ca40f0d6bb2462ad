"""`import flagtrace.torch` before the first torch.profiler profile: kineto then runs
CPU-only and flagtrace supplies kernels, copies, memsets and runtime calls, linked to
the ops that issued them. Users keep calling torch.profiler.profile(...) unchanged,
with [CPU, CUDA] or [CPU, PrivateUse1].

The device type the rows are named for (cuda_runtime or privateuse1_runtime, and the
device torch attributes device time to) is decided at each profile, so a vendor
extension (torch_npu, torch_musa, ...) may be imported after this module: see
install() and flagtrace/_device.py for the rules.

Nothing raises at import: without torch, when this build's tracer cannot run, when
FLAGTRACE_TORCH_DEVICE is not valid, or when kineto was already initialized, one line
on stderr says so and torch.profiler is left as it was."""
import os
import sys

from flagtrace._device import DEVICES, ENV, UNNAMED, check_device, resolve_device

__all__ = ["install", "resolve", "available", "reason", "DEVICES"]

available = False  # flagtrace is torch.profiler's device profiler in this process
reason = ""  # why not, when available is False
_explicit = None  # install(device=...), normalized
_env = None  # FLAGTRACE_TORCH_DEVICE as read by the last install()


def _say(msg):
    sys.stderr.write(f"flagtrace.torch: {msg}\n")


def _cuda_available():
    import torch
    return torch.cuda.is_available()


def resolve():
    """(device, why): the device type the next profile names its rows for, "cuda" or
    "privateuse1", and the rule that chose it; or (None, reason) when no device
    activity would be recorded. FLAGTRACE_TORCH_DEVICE is the value the last install()
    (the import) read. Raises ValueError for an invalid one."""
    import torch
    return resolve_device(_explicit, _env, torch._C._get_privateuse1_backend_name(), _cuda_available)


def _publish_choice(_C):
    """Hands the extension the decision for both states of torch's privateuse1 backend
    name, the one input that changes between import and the first profile (a vendor
    extension renames the backend when it is imported); configure() reads that name in
    C++ and picks one. Deciding here keeps the rules in one Python function without
    taking the GIL inside kineto's configure (see flagtrace_kineto.cpp)."""
    global _env
    _env = os.environ.get(ENV)
    unnamed = resolve_device(_explicit, _env, UNNAMED, _cuda_available)
    named = resolve_device(_explicit, _env, "any name but privateuseone", _cuda_available)
    _C.set_device_choice(unnamed[0] or "", unnamed[1], named[0] or "", named[1])


def _install():
    global available
    try:
        import torch  # noqa: F401
    except ImportError:
        return "PyTorch is not installed: nothing to profile"
    try:
        from flagtrace import _C
    except ImportError as e:
        return f"the flagtrace extension could not be loaded ({e}); reinstall with pip install --no-build-isolation ./python"
    try:
        _publish_choice(_C)  # before kineto is touched: a bad value leaves it as it was
    except ValueError as e:
        return f"{e}; torch.profiler runs without flagtrace"
    ok, msg = _C.install()
    if not ok:
        return msg
    available = True
    return ""


def install(device=None):
    """Makes flagtrace torch.profiler's device profiler; `import flagtrace.torch` already
    did, and calling it again changes nothing but the device choice. Returns available.

    device: "cuda" or "privateuse1" fixes the device type the rows are named for, before
    FLAGTRACE_TORCH_DEVICE and the automatic choice (privateuse1 once torch's privateuse1
    backend has a name, else cuda when torch.cuda.is_available()); None leaves the choice
    to those. An unknown value raises ValueError naming the valid ones."""
    global reason, _explicit
    if device is not None:
        device = check_device(device, "install(device=...)")
    if available:
        from flagtrace import _C
        previous, _explicit = _explicit, device if device is not None else _explicit
        try:
            _publish_choice(_C)
        except ValueError:
            _explicit = previous
            raise
        return True
    if device is not None:
        _explicit = device
    reason = _install()
    if reason:
        _say(reason)
    return available


install()
