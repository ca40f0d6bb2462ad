"""torch.profiler features that must keep working with flagtrace installed, and the
one-line messages when it cannot be."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import DEVICE_CATS, flow_halves, xs
from profiler_workload import run_traced_ops

def mm_self_device(prof):
    return sum(a.self_device_time_total for a in prof.key_averages() if a.key == "aten::mm")


def test_schedule_and_tensorboard_handler(ft_torch, tmp_path):
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path))) as p:
        for _ in range(5):
            run_traced_ops(torch)
            p.step()
    files = glob.glob(str(tmp_path / "*.pt.trace.json*"))
    assert len(files) == 1, files
    doc = json.load(open(files[0]))
    assert xs(doc, ("kernel",))
    assert all(sorted(h) == ["f", "s"] for h in flow_halves(doc).values())
    steps = {e["name"] for e in xs(doc, ("user_annotation", "cpu_op")) if e["name"].startswith("ProfilerStep#")}
    assert len(steps) == 2, steps


def test_record_shapes_and_with_stack(ft_torch):
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, with_stack=True) as p:
        run_traced_ops(torch)
    assert mm_self_device(p) > 0
    shapes = [a.input_shapes for a in p.key_averages(group_by_input_shape=True) if a.key == "aten::mm"]
    assert [[256, 256], [256, 256]] in shapes, shapes


def test_repeated_profiling(ft_torch, tmp_path):
    import torch
    from torch.profiler import ProfilerActivity, profile
    times = []
    for i in range(3):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            run_traced_ops(torch)
        path = str(tmp_path / f"t{i}.json")
        p.export_chrome_trace(path)
        doc = json.load(open(path))
        assert xs(doc, DEVICE_CATS), f"profile {i}: no device events"
        times.append(mm_self_device(p))
    assert all(t > 0 for t in times), times


def run_py(code, env=None):
    e = dict(os.environ)  # the installed package, as users get it
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)


def test_kineto_already_initialized_is_left_alone(ft_torch):
    r = run_py("import torch\n"
               "from torch.profiler import profile, ProfilerActivity\n"
               "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]): torch.ones(1, device='cuda')\n"
               "import flagtrace.torch as ft\n"
               "print('available', ft.available)\n")
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("flagtrace.torch:")]
    assert len(lines) == 1 and "already initialized" in lines[0], r.stderr
    assert "available False" in r.stdout


def test_no_gpu_and_no_torch_give_one_line(ft_torch):
    r = run_py("import flagtrace.torch as ft; print(ft.available)", env={"CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "no CUDA device" in r.stderr, r.stderr
    r = run_py("import sys; sys.modules['torch'] = None\nimport flagtrace.torch as ft; print(ft.available)")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "PyTorch is not installed" in r.stderr, r.stderr
