"""torch.profiler features that must keep working with flagtrace installed (in the
mode's activities, conftest.py), how the device type is chosen in a fresh process, and
the one-line messages when flagtrace cannot be installed."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import DEVICE_CATS, activities, cuda_mode_only, flow_halves, xs
from profiler_workload import run_traced_ops


def mm_self_device(prof):
    return sum(a.self_device_time_total for a in prof.key_averages() if a.key == "aten::mm")


def test_schedule_and_tensorboard_handler(ft_torch, tmp_path):
    import torch
    from torch.profiler import profile, schedule, tensorboard_trace_handler
    with profile(activities=activities(),
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
    from torch.profiler import profile
    with profile(activities=activities(), record_shapes=True, with_stack=True) as p:
        run_traced_ops(torch)
    assert mm_self_device(p) > 0
    shapes = [a.input_shapes for a in p.key_averages(group_by_input_shape=True) if a.key == "aten::mm"]
    assert [[256, 256], [256, 256]] in shapes, shapes


def test_repeated_profiling(ft_torch, tmp_path):
    import torch
    from torch.profiler import profile
    times = []
    for i in range(3):
        with profile(activities=activities()) as p:
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


def flagtrace_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("flagtrace.torch:")]


def test_kineto_already_initialized_is_left_alone(ft_torch):
    cuda_mode_only()
    r = run_py("import torch\n"
               "from torch.profiler import profile, ProfilerActivity\n"
               "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]): torch.ones(1, device='cuda')\n"
               "import flagtrace.torch as ft\n"
               "print('available', ft.available)\n")
    assert r.returncode == 0, r.stderr
    lines = flagtrace_lines(r.stderr)
    assert len(lines) == 1 and "already initialized" in lines[0], r.stderr
    assert "available False" in r.stdout


def test_no_gpu_and_no_torch_give_one_line(ft_torch):
    cuda_mode_only()
    # no GPU: installed (kineto is CPU-only there anyway) and silent; the device is
    # chosen at the first profile, and nothing qualifies
    r = run_py("import flagtrace.torch as ft; print(ft.available, ft.resolve()[0])", env={"CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert not flagtrace_lines(r.stderr) and r.stdout == "True None\n", (r.stdout, r.stderr)
    r = run_py("import sys; sys.modules['torch'] = None\nimport flagtrace.torch as ft; print(ft.available)")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "PyTorch is not installed" in r.stderr, r.stderr


# A child process: flagtrace imported first, then {setup}, then one matmul profiled
# with [CPU, {activity}]; prints the trace's categories and the device configured.
CHILD = """import json, os, tempfile
import flagtrace.torch as ft
import torch
from torch.profiler import ProfilerActivity, profile
{setup}
x = torch.randn(256, 256, device="cuda")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.{activity}]) as p:
    torch.mm(x, x)
    torch.cuda.synchronize()
fd, path = tempfile.mkstemp(suffix=".json")
os.close(fd)
p.export_chrome_trace(path)
doc = json.load(open(path))
os.unlink(path)
from flagtrace import _C
cats = sorted({{e.get("cat") for e in doc["traceEvents"] if e.get("ph") == "X"}})
print(json.dumps({{"available": ft.available, "cats": cats, "configured": _C.configured_device()}}))
"""


def profile_in_child(setup="", activity="CUDA", env=None):
    r = run_py(CHILD.format(setup=setup, activity=activity), env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1]), flagtrace_lines(r.stderr)


def runtime_cats(cats):
    return {c for c in cats if c.endswith(("_runtime", "_driver"))}


def test_env_names_the_rows(ft_torch):
    cuda_mode_only()
    # FLAGTRACE_TORCH_DEVICE beats the automatic choice (cuda here: no rename)
    out, lines = profile_in_child(env={"FLAGTRACE_TORCH_DEVICE": "privateuse1"})
    assert not lines and out["configured"] == "privateuse1", (out, lines)
    assert "kernel" in out["cats"] and runtime_cats(out["cats"]) <= {"privateuse1_runtime", "privateuse1_driver"}
    assert "privateuse1_runtime" in out["cats"], out


def test_install_device_beats_env_and_rename(ft_torch):
    cuda_mode_only()
    out, lines = profile_in_child(setup="torch.utils.rename_privateuse1_backend('flagos')\nft.install(device='cuda')",
                                  activity="PrivateUse1", env={"FLAGTRACE_TORCH_DEVICE": "privateuse1"})
    assert not lines and out["configured"] == "cuda", (out, lines)
    assert "kernel" in out["cats"] and runtime_cats(out["cats"]) <= {"cuda_runtime", "cuda_driver"}
    assert "cuda_runtime" in out["cats"], out


def test_bad_env_is_one_line_and_torch_profiler_stays_native(ft_torch):
    cuda_mode_only()
    out, lines = profile_in_child(env={"FLAGTRACE_TORCH_DEVICE": "npu"})
    assert len(lines) == 1, lines
    assert "FLAGTRACE_TORCH_DEVICE='npu'" in lines[0] and "use cuda or privateuse1" in lines[0], lines
    # kineto's own CUPTI profiled: flagtrace never configured a session
    assert out["available"] is False and out["configured"] == "", out
    assert "kernel" in out["cats"] and "cuda_runtime" in out["cats"], out
