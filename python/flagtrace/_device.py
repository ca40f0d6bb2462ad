"""Which device type torch.profiler's rows are named for ("cuda" or "privateuse1"): the
rules in one pure function, callable without torch (tests/python/test_device_rules.py)."""

DEVICES = ("cuda", "privateuse1")
ENV = "FLAGTRACE_TORCH_DEVICE"
# torch's name for the privateuse1 backend until a vendor extension renames it
UNNAMED = "privateuseone"


def check_device(value, source):
    """value as one of DEVICES (any case), or ValueError with one line naming them."""
    v = value.strip().lower() if isinstance(value, str) else None
    if v not in DEVICES:
        raise ValueError(f"{source}={value!r} is not a device type flagtrace.torch knows: use "
                         f"{' or '.join(DEVICES)} (or leave it unset to choose automatically)")
    return v


def resolve_device(explicit, env, privateuse1_name, cuda_available):
    """The device type for the next profile, as (device, why).

    In this order: explicit (install(device=...); None = not given), then env (the
    FLAGTRACE_TORCH_DEVICE value; None or "" = unset), then automatic: "privateuse1" when
    torch's privateuse1 backend has been given a name (a vendor extension such as
    torch_npu registered itself), else "cuda" when cuda_available. cuda_available is a
    bool or a callable returning one, called only when that rule is reached.

    device is "cuda" or "privateuse1" and why names the rule that chose it; or device
    is None and why is a one-line reason (then no device activity is recorded).
    An unknown explicit or env value raises ValueError (one line, naming the valid
    values); an env value is not looked at when explicit decides."""
    if explicit is not None:
        return check_device(explicit, "install(device=...)"), "chosen by install(device=...)"
    if env:
        return check_device(env, ENV), f"chosen by {ENV}"
    if privateuse1_name and privateuse1_name != UNNAMED:
        return "privateuse1", "torch's privateuse1 backend has been given a name"
    if cuda_available() if callable(cuda_available) else cuda_available:
        return "cuda", "torch.cuda.is_available() and torch's privateuse1 backend has no name"
    return None, ("no device for torch.profiler: torch's privateuse1 backend has no name (import the vendor's "
                  f"torch extension before profiling) and torch.cuda.is_available() is False; set {ENV} or call "
                  "flagtrace.torch.install(device=...) to choose")
