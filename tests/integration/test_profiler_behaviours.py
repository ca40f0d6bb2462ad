"""torch.profiler behaviours PyTorch's own profiler tests check, with flagtrace as the
device profiler, in both modes ([CPU, CUDA] and [CPU, PrivateUse1] renamed "flagos"):
the exported trace's own spans as torch-cuda's (no child span), toggle_collection_dynamic
inside a running profile, cuda_sync rows (both switches), and one-line refusals of the
options flagtrace does not offer."""
import collections
import json

import pytest

from conftest import DEVICE_CATS, MODE, activities, flow_halves, xs


def _export(p, tmp_path, name="t.json"):
    path = str(tmp_path / name)
    p.export_chrome_trace(path)
    with open(path) as f:
        return json.load(f)


def test_trace_spans_are_torch_cudas(ft_torch, tmp_path):
    """test_basic_chrome_trace's layout: the profiler's span is the fourth event from the
    end, its iteration marker and the record window end last; the only "Trace" slice is
    torch's (a child's trace buffer would add "flagtrace (-1)" and its marker)."""
    import torch
    from torch.profiler import profile
    x, y = (torch.rand(4, 4).to("cuda") for _ in range(2))
    with profile(activities=activities(), with_stack=True) as p:
        torch.add(x, y)
    ev = _export(p, tmp_path)["traceEvents"]
    assert ev[-4]["name"] == "PyTorch Profiler (0)", ev[-4]
    assert ev[-2]["name"] == "Iteration Start: PyTorch Profiler", ev[-2]
    assert ev[-1]["name"] == "Record Window End", ev[-1]
    spans = [e["name"] for e in ev if e.get("cat") == "Trace"]
    assert spans == ["PyTorch Profiler (0)"], spans
    assert not [e for e in ev if "flagtrace" in str(e.get("name", ""))]
    assert xs({"traceEvents": ev}, ("kernel",)), "the add's kernel is in the trace"
    lo, end = ev[-4]["ts"], ev[-1]["ts"]
    for e in ev[:-2]:
        if "ts" in e and e.get("ph") == "X":
            assert e["ts"] >= lo and e["ts"] + e.get("dur", 0) <= end, e


def test_dynamic_toggle(ft_torch):
    """test_dynamic_toggle with this mode's device activity: off before the work, no
    device event and no runtime call in the profile; on again, they come back."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function
    dev = activities()[1]
    with profile(activities=activities()) as p1:
        p1.toggle_collection_dynamic(False, [dev])
        with record_function("test_user_annotation"):
            x, y = (torch.rand(4, 4).to("cuda") for _ in range(2))
            torch.add(x, y)
        torch.cuda.synchronize()
    names = [e.name for e in p1.events()]
    assert any("aten" in n for n in names), names
    assert all("cuda" not in n.lower() and "kernel" not in n.lower() for n in names), names
    with profile(activities=activities()) as p2:
        p2.toggle_collection_dynamic(False, [dev])
        torch.add(x, y)
        torch.cuda.synchronize()
        p2.toggle_collection_dynamic(True, [dev])
        torch.mul(x, y)
        torch.cuda.synchronize()
    kernels = [e.name for e in p2.events() if e.device_type != torch.autograd.DeviceType.CPU]
    assert kernels and all("mul" in k.lower() for k in kernels), kernels
    with profile(activities=activities()) as p3:
        p3.toggle_collection_dynamic(False, [ProfilerActivity.CPU, dev])
        torch.add(x, y)
        torch.cuda.synchronize()
    assert len(p3.events()) == 0, [e.name for e in p3.events()]


def _sync_trace(tmp_path, exp, name):
    import torch
    from torch.profiler import profile
    t1, t2 = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    with profile(activities=activities(), experimental_config=exp) as p:
        torch.add(t1, t2)
        torch.cuda.synchronize()
        torch.add(t1, t2)
    return _export(p, tmp_path, name)


def test_cuda_sync_events(ft_torch, tmp_path):
    """test_profiler_cuda_sync_events, and the rows as torch-cuda writes them (measured on
    the H200): Context Sync on the device row with tid 1, kineto's keys in its order, and
    an arrow from cudaDeviceSynchronize, paired. Off by default."""
    import torch
    from torch._C._profiler import _ExperimentalConfig
    plain = _sync_trace(tmp_path, None, "plain.json")
    assert not xs(plain, ("cuda_sync",))
    for how in ("experimental_config", "_set_cuda_sync_enabled_val"):
        if how == "experimental_config":
            doc = _sync_trace(tmp_path, _ExperimentalConfig(enable_cuda_sync_events=True), "exp.json")
        else:
            torch._C._profiler._set_cuda_sync_enabled_val(True)
            try:
                doc = _sync_trace(tmp_path, None, "val.json")
            finally:
                torch._C._profiler._set_cuda_sync_enabled_val(False)
        syncs = xs(doc, ("cuda_sync",))
        ctx = [e for e in syncs if e["name"] == "Context Sync"]
        assert ctx, (how, [e["name"] for e in syncs])
        e = ctx[0]
        assert list(e["args"]) == ["External id", "cuda_sync_kind", "stream", "correlation", "device", "context"], e
        assert e["args"]["cuda_sync_kind"] == "Context Sync" and e["args"]["stream"] == -1 and e["tid"] == 1, e
        assert e["pid"] == e["args"]["device"] == 0, e
        call = [r for r in doc["traceEvents"] if r.get("ph") == "X" and r.get("args", {}).get("correlation") ==
                e["args"]["correlation"] and r["name"] == "cudaDeviceSynchronize"]
        assert len(call) == 1, call
        halves = flow_halves(doc).get(e["args"]["correlation"], [])
        assert sorted(h[0] for h in halves) == ["f", "s"], halves


def test_unsupported_options_say_so_in_one_line(ft_torch, capfd):
    """profiler_metrics (hardware counters) and custom_profiler_config are not offered:
    one line each, the profile still runs."""
    import torch
    from torch._C._profiler import _ExperimentalConfig
    from torch.profiler import profile
    x = torch.ones(8, device="cuda")
    for exp, option in ((_ExperimentalConfig(custom_profiler_config="anything"), "custom_profiler_config"),
                        (_ExperimentalConfig(profiler_metrics=["kineto__cuda_core_flops"]), "profiler_metrics")):
        capfd.readouterr()
        try:
            with profile(activities=activities(), experimental_config=exp):
                torch.add(x, x)
        except RuntimeError:
            pass  # torch itself may refuse a metrics request without CUPTI's range profiler
        err = capfd.readouterr().err
        lines = [l for l in err.splitlines() if option in l and l.startswith("flagtrace.torch:")]
        assert len(lines) == 1, err


def test_device_events_still_complete(ft_torch, tmp_path):
    """After the toggles above, a plain profile is whole again: every device event linked."""
    import torch
    from torch.profiler import profile
    x = torch.ones(256, 256, device="cuda")
    with profile(activities=activities()) as p:
        for _ in range(3):
            torch.mm(x, x)
        torch.cuda.synchronize()
    doc = _export(p, tmp_path)
    dev = xs(doc, DEVICE_CATS)
    assert len([e for e in dev if e["cat"] == "kernel"]) >= 3
    assert all("External id" in e["args"] for e in dev), [e["name"] for e in dev if "External id" not in e["args"]]
    counts = collections.Counter(h[0] for v in flow_halves(doc).values() for h in v)
    assert counts["s"] >= 3 and counts["f"] >= 3, counts
