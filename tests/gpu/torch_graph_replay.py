"""CUDA-graph replays (issue 13): five replays of a five-kernel graph; every one of the
25 device events must be linked to its cudaGraphLaunch (one flow start per launch,
one end per node, the launch's correlation id), as torch-cuda links them.

  torch_graph_replay.py workload            the workload alone (for flagtrace record)
  torch_graph_replay.py check TRACE         checks a trace of it (record or torch.profiler)
  torch_graph_replay.py profile TRACE       torch.profiler with `import flagtrace.torch`
"""
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_checks import DEVICE_CATS, RUNTIME_CATS, check_flows_paired, load, xs  # noqa: E402

REPLAYS, NODES = 5, 5


def build_graph(torch):
    x = torch.ones(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside the capture, as torch asks
        for _ in range(2):
            y = (((x * 2 + 1).relu() * 3) - 1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2      # 1
        y = y + 1      # 2
        y = y.relu()   # 3
        y = y * 3      # 4
        y = y - 1      # 5
    torch.cuda.synchronize()
    return g, y


def replay(torch, g):
    for _ in range(REPLAYS):
        g.replay()
    torch.cuda.synchronize()


def check(doc):
    launches = [e for e in xs(doc, RUNTIME_CATS + ("cuda_driver",)) if e["name"].startswith("cudaGraphLaunch")]
    assert len(launches) == REPLAYS, f"{len(launches)} cudaGraphLaunch rows, want {REPLAYS}"
    ids = {e["args"]["correlation"] for e in launches}
    assert len(ids) == REPLAYS and all(0 < i < 2**32 for i in ids), ids
    nodes = [e for e in xs(doc, DEVICE_CATS) if e["args"].get("correlation") in ids]
    per_launch = Counter(e["args"]["correlation"] for e in nodes)
    assert len(nodes) == REPLAYS * NODES and set(per_launch.values()) == {NODES}, per_launch
    check_flows_paired(doc)
    halves = Counter((e["ph"], e["id"]) for e in doc["traceEvents"]
                     if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g")
    linked = sum(halves[("f", i)] for i in ids)
    assert linked == REPLAYS * NODES, f"{linked} of {REPLAYS * NODES} graph nodes linked"
    assert all(halves[("s", i)] == 1 for i in ids), "one flow start per launch"
    # attributed to the op that replayed them, when ops are recorded (torch.profiler)
    ext = {e["args"].get("External id") for e in launches}
    for e in nodes:
        assert e["args"].get("External id") in ext, e
    return linked


def main():
    mode = sys.argv[1]
    if mode == "workload":
        import torch
        g, _ = build_graph(torch)
        replay(torch, g)
    elif mode == "check":
        n = check(load(sys.argv[2]))
        print(f"PASS CUDA-graph replays: {n} of {REPLAYS * NODES} nodes linked to their launch")
    elif mode == "profile":
        import flagtrace.torch  # noqa: F401
        assert flagtrace.torch.available, flagtrace.torch.reason
        import torch
        from torch.profiler import ProfilerActivity, profile
        g, _ = build_graph(torch)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            replay(torch, g)
        p.export_chrome_trace(sys.argv[2])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
