"""tests/gpu/hta_advise_compare.py: `flagtrace _hta`'s idle-time breakdown (host wait, kernel
wait, other per stream) and critical path length against Holistic Trace Analysis itself, on
HTA's own test traces and on our committed ones: every number equal but for the known
differences docs/advise.md "Against HTA" lists (and exactly those). Needs HTA's source
(FT_HTA_PATH, fetched outside the repository) and a python with pandas; skips (77) without them."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
TOOL = os.path.join(HERE, "..", "gpu", "hta_advise_compare.py")
flagtrace = sys.argv[1]
hta = os.environ.get("FT_HTA_PATH", "")
if not os.path.isfile(os.path.join(hta, "hta", "trace_analysis.py")):
    print("SKIPPED: hta_advise: set FT_HTA_PATH to HolisticTraceAnalysis's source")
    sys.exit(77)
python = next((p for p in (sys.executable, "/usr/bin/python3") if os.path.exists(p) and subprocess.run(
    [p, "-c", "import pandas, plotly, networkx"], capture_output=True).returncode == 0), None)
if not python:
    print("SKIPPED: hta_advise: no python with pandas, plotly and networkx")
    sys.exit(77)

# HTA's test traces with device work (those its checkout holds: some are Git LFS objects);
# the critical_path ones through the windows HTA's tests use
HTA_TRACES = ["amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
              "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
              "critical_path/cuda_event_sync/event_sync_trace.json.gz",
              "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
              "critical_path/end_to_end/simple_add/input/trace.json.gz",
              "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
              "execution_trace/benchmark_simple_add_trace.json.gz",
              "mtia_inference_trace/mtia_inference_rank_0.json.gz",
              "nccl_parser_config/nccl_data.json.gz",
              "negative_queue_length_values_check/rank0.json.gz",
              "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
              "timeline_analysis/sampled_rank-0.json.gz",
              "trace_compare/base/base.json.gz",
              "trace_diff/test/test.json.gz",
              "triton_example/triton_example.json.gz"]
# the critical path's known differences (docs/advise.md "Against HTA")
KNOWN = {"critical_path/alexnet/", "critical_path/cuda_event_sync/", "mtia_inference_trace/"}
traces = [p for p in (os.path.join(hta, "tests", "data", t) for t in HTA_TRACES) if os.path.isfile(p)]
traces += [os.path.join(DATA, n) for n in ("sample_h200.json.gz", "torch_cuda_2.11_reference.json.gz",
                                           "workload_h200.json.gz")]

r = subprocess.run([python, TOOL, "--hta", hta, "--flagtrace", flagtrace, *traces], capture_output=True, text=True)
out = r.stdout
assert r.returncode == 0, out + r.stderr
blocks = out.split("\n== ")[1:]
assert len(blocks) == len(traces), out
numbers = 0
for b in blocks:
    path = b.splitlines()[0]
    lines = [x.strip() for x in b.splitlines()[1:]]
    fails = [x for x in lines if x.startswith("FAIL ")]
    idle = [x for x in lines if x.startswith(("PASS idle", "FAIL idle"))]
    assert idle and all(x.startswith("PASS") for x in idle), b  # every stream's breakdown equal
    cp = [x for x in lines if "critical path," in x]
    assert len(cp) == 1, b
    if any(k in path.replace(os.sep, "/") for k in KNOWN):
        assert fails == cp and "known difference" in cp[0], b
    else:
        assert not fails and cp[0].startswith("PASS"), b
    numbers += len(idle) + 1
print(f"1 passed, 0 failed ({len(traces)} traces, {numbers} numbers)")
