"""tests/gpu/hta_analyses.py: `flagtrace stats -r temporal,overlap,launch,queue` against
Holistic Trace Analysis itself on HTA's own test traces and on our committed ones, number
by number; and with HTA's iteration filter kept, a trace of two ProfilerSteps differs (the
comparison can fail). Needs HTA's source (FT_HTA_PATH, fetched outside the repository) and
a python with pandas; skips (77) without them."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
TOOL = os.path.join(HERE, "..", "gpu", "hta_analyses.py")
flagtrace = sys.argv[1]
hta = os.environ.get("FT_HTA_PATH", "")
if not os.path.isfile(os.path.join(hta, "hta", "trace_analysis.py")):
    print("SKIPPED: hta_analyses: set FT_HTA_PATH to HolisticTraceAnalysis's source")
    sys.exit(77)
python = next((p for p in (sys.executable, "/usr/bin/python3") if os.path.exists(p) and subprocess.run(
    [p, "-c", "import pandas, plotly, networkx"], capture_output=True).returncode == 0), None)
if not python:
    print("SKIPPED: hta_analyses: no python with pandas, plotly and networkx")
    sys.exit(77)

# HTA's test traces with GPU events (those its checkout holds: some are Git LFS objects)
HTA_TRACES = ["amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
              "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
              "critical_path/cuda_event_sync/event_sync_trace.json.gz",
              "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
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
traces = [p for p in (os.path.join(hta, "tests", "data", t) for t in HTA_TRACES) if os.path.isfile(p)]
traces += [os.path.join(DATA, n) for n in ("sample_h200.json.gz", "torch_cuda_2.11_reference.json.gz",
                                           "workload_h200.json.gz")]


def run(*args):
    r = subprocess.run([python, TOOL, "--hta", hta, "--flagtrace", flagtrace, *args], capture_output=True, text=True)
    verdicts = [line.split()[0] for line in r.stdout.splitlines() if line.strip().startswith(("PASS:", "FAIL:"))]
    return r.returncode, verdicts, r.stdout


rc, verdicts, out = run(*traces)
assert rc == 0 and verdicts == ["PASS:"] * len(traces), out
filtered = os.path.join(hta, "tests", "data", "trace_filter", "sampled_rank-0.json.gz")
if os.path.isfile(filtered):  # two ProfilerSteps: HTA then drops the last step's GPU events, we do not
    rc, verdicts, out = run("--hta-filter", filtered)
    assert rc == 1 and verdicts == ["FAIL:"], out
print(f"1 passed, 0 failed ({len(traces)} traces)")
