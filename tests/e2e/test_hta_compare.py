"""tests/gpu/hta_compare.py on committed traces: the torch-cuda reference against itself
passes, against another workload's trace fails, and a trace whose user annotation
took three times as long fails only the annotation breakdown. Needs HTA's source
(FT_HTA_PATH, fetched outside the repository) and a python with pandas; skips (77)
without them."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
TOOL = os.path.join(HERE, "..", "gpu", "hta_compare.py")
hta = os.environ.get("FT_HTA_PATH", "")
if not os.path.isfile(os.path.join(hta, "hta", "trace_analysis.py")):
    print("SKIPPED: hta_compare: set FT_HTA_PATH to HolisticTraceAnalysis's source")
    sys.exit(77)
python = next((p for p in (sys.executable, "/usr/bin/python3") if os.path.exists(p) and subprocess.run(
    [p, "-c", "import pandas, plotly, networkx"], capture_output=True).returncode == 0), None)
if not python:
    print("SKIPPED: hta_compare: no python with pandas, plotly and networkx")
    sys.exit(77)


def run(a, b):
    r = subprocess.run([python, TOOL, "--hta", hta, "--pair", a, b], capture_output=True, text=True)
    return r.returncode, [line for line in r.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]


ref = os.path.join(DATA, "torch_cuda_2.11_reference.json.gz")
rc, lines = run(ref, ref)
assert rc == 0 and len(lines) == 4 and all(x.startswith("PASS") for x in lines), lines
rc, lines = run(ref, os.path.join(DATA, "workload_h200.json.gz"))
assert rc == 1 and [x.split()[0] for x in lines] == ["FAIL", "FAIL", "PASS", "FAIL"], lines
sample = os.path.join(DATA, "sample_h200.json.gz")
doc = json.load(gzip.open(sample, "rt"))
ann = [e for e in doc["traceEvents"] if e.get("cat") == "gpu_user_annotation"]
ann[0]["dur"] *= 3
with tempfile.TemporaryDirectory() as d:
    slow = os.path.join(d, "slow.json")
    with open(slow, "w") as f:
        json.dump(doc, f)
    rc, lines = run(sample, slow)
assert rc == 1 and [x.split()[0] for x in lines] == ["PASS", "PASS", "FAIL", "PASS"], lines
print("1 passed, 0 failed")
