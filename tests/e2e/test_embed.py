"""End-to-end: the C API example writes a gzip Chrome trace that parses and is complete."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

exe, tracer = sys.argv[1], sys.argv[2]
env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
env["FLAGOS_TRACER_LIBRARY"] = "/nonexistent/libcupti.so"
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "embed.json.gz")
    r = subprocess.run([exe, path], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r
    assert "device activity: not collected" in r.stdout, r.stdout
    doc = json.load(gzip.open(path, "rt"))
    assert os.listdir(d) == ["embed.json.gz"], os.listdir(d)

assert doc["schemaVersion"] == 1 and doc["displayTimeUnit"] == "ms"
assert "distributedInfo" not in doc, doc["distributedInfo"]  # no rank known: none written
ft = doc["flagtrace"]
assert ft["tracer"] == tracer and ft["device_activity"] is False and ft["device_status"], ft
lo, hi = ft["capture_window_ns"]
base = doc["baseTimeNanoseconds"]
ranges = [e for e in doc["traceEvents"] if e["ph"] == "X"]
assert sorted(e["name"] for e in ranges) == ["compute"] * 3 + ["step"] * 3, ranges
assert all(e["cat"] == "user_annotation" for e in ranges)
ids = [e["args"]["External id"] for e in ranges]
assert len(set(ids)) == 6, ids
for e in ranges:  # every range lies in the window (ts/dur are µs after base)
    start = base + round(e["ts"] * 1000)
    assert lo <= start and start + round(e["dur"] * 1000) <= hi + 1, (e, lo, hi)
names = {(e["name"], e["args"].get("labels") or e["args"].get("name")) for e in doc["traceEvents"] if e["ph"] == "M"}
assert ("process_labels", "CPU") in names, names
print("1 passed, 0 failed")
