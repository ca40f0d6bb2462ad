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
on stderr says so and torch.profiler is left as it was. Under `flagtrace record` the
injection library installed the same child profiler already (profiles then attach to
record's whole-run session); importing this module changes nothing but the device
choice.

What kineto 2.11 does not hand a child profiler, this module does (torch's own
functions wrapped, their behaviour kept):
- toggle_collection_dynamic(enabled, [CUDA or PrivateUse1]) stops and resumes device
  collection in the running profile (kineto would disable its own CUPTI);
- _ExperimentalConfig(enable_cuda_sync_events=True) and _set_cuda_sync_enabled_val(True)
  give cuda_sync rows with [CPU, PrivateUse1] too (torch passes them on for CUDA only).
The other _ExperimentalConfig options are torch's own (CPU side) or refused in one line
by the adaptor (profiler_metrics, profiler_measure_per_kernel, custom_profiler_config)."""
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
    try:
        _patch_torch(_C)
    except (ImportError, AttributeError) as e:  # a torch without these functions
        _say(f"toggle_collection_dynamic and sync events are not wired for flagtrace ({e})")
    return ""


_sync_global = False  # torch._C._profiler._set_cuda_sync_enabled_val's last value
_exp_names = None  # _ExperimentalConfig's fields, in its constructor's (= __getstate__'s) order


def _exp_field(exp, name):
    """A field of an _ExperimentalConfig (pybind: no attributes), by its constructor's
    signature and __getstate__; None when this torch has no such field."""
    global _exp_names
    if exp is None:
        return None
    if _exp_names is None:
        import re
        doc = type(exp).__init__.__doc__ or ""
        head = doc.split("->", 1)[0]
        _exp_names = re.findall(r"(\w+)\s*:", head.split("(", 1)[1] if "(" in head else "")[1:]  # after self
    try:
        state = exp.__getstate__()
    except Exception:  # noqa: BLE001
        return None
    fields = dict(zip(_exp_names, state))
    return fields.get(name)


def _patch_torch(_C):
    """Wraps torch's toggle and profile preparation (see the module docstring); once."""
    import torch
    import torch.autograd.profiler as ap
    if getattr(ap, "_flagtrace_patched", False):
        return
    from torch.profiler import ProfilerActivity as PA
    devices = {PA.CUDA, getattr(PA, "PrivateUse1", PA.CUDA)}
    torch_toggle = ap._toggle_collection_dynamic

    def _toggle_collection_dynamic(enabled, activities):
        acts = set(activities)
        # torch keeps CPU (and whatever else it knows); the device kinds are ours: for
        # CUDA torch would call kineto's own toggle, whose CUPTI code runs even with
        # kineto CPU-only (kineto 2.11's CuptiActivityProfiler: it disables CUPTI's kinds,
        # and on enable registers its own buffer callbacks, taking CUPTI from flagtrace:
        # measured on the H200, no device event after a toggle back on); for
        # PrivateUse1 torch would only warn that it cannot
        rest = acts - devices
        device = bool(acts & devices)
        if device:
            _C.set_collecting(bool(enabled))
        if rest:
            torch_toggle(enabled, rest)

    ap._toggle_collection_dynamic = _toggle_collection_dynamic

    prof_mod = torch._C._profiler
    torch_set_sync = getattr(prof_mod, "_set_cuda_sync_enabled_val", None)
    if torch_set_sync is not None:
        def _set_cuda_sync_enabled_val(val):
            global _sync_global
            _sync_global = bool(val)
            return torch_set_sync(val)
        prof_mod._set_cuda_sync_enabled_val = _set_cuda_sync_enabled_val

    torch_prepare = ap.profile._prepare_trace

    def _prepare_trace(self):
        want = _sync_global or bool(_exp_field(getattr(self, "experimental_config", None), "enable_cuda_sync_events"))
        _C.set_sync_requested(want)
        return torch_prepare(self)

    ap.profile._prepare_trace = _prepare_trace
    ap._flagtrace_patched = True


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
