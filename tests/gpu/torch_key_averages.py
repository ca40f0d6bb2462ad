"""H200: `flagtrace stats -r ops,ops_shapes,api` of a torch.profiler trace against key_averages() of the same profile,
column by column (Self CPU, CPU total, Self device, device total, calls), plain and by input shapes."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_workload import workload  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--flagtrace", required=True, help="the flagtrace binary")
p.add_argument("--out", required=True, help="where the trace and the tables go")
p.add_argument("--import-flagtrace", action="store_true", help="profile through flagtrace.torch (PrivateUse1 adaptor)")
a = p.parse_args()
if a.import_flagtrace:
    import flagtrace.torch  # noqa: F401
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

os.makedirs(a.out, exist_ok=True)
tag = "flagtrace" if a.import_flagtrace else "native"
workload(torch)  # warm-up: the profiled run sees no first-call costs
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    with record_function("step"):
        workload(torch)
trace = os.path.join(a.out, f"key_averages_{tag}.json")
prof.export_chrome_trace(trace)
r = subprocess.run([a.flagtrace, "stats", "-r", "ops,ops_shapes,api", "-f", "json", "-n", "0", trace],
                   capture_output=True, text=True)
if r.returncode:
    sys.exit(f"stats failed: {r.stderr}")
ours = json.loads(r.stdout)
US = 0.0015  # per call: both count whole ns; the trace writes ts and dur to the ns
with open(trace) as f:
    overhead = {e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "overhead"}
documented = []


def cpu_rows(avgs):
    """key_averages() keys a name per device type: a record_function's GPU projection is a row of its own."""
    return [e for e in avgs if e.device_type == torch.autograd.DeviceType.CPU]


def compare(avgs, rows, key, label):
    bad, n = [], 0
    avgs = cpu_rows(avgs)
    # torch hands a kineto overhead event (its own CUPTI buffer request) a copy of the
    # device work of the op it runs in (the event's id is that op's External id); the
    # ops around it count that work twice in key_averages, once in flagtrace (docs)
    extra = sum(e.self_device_time_total for e in avgs if e.key in overhead)
    want = {key(e): e for e in avgs}
    for row in rows:
        k = (row["name"], row.get("input_dims"))
        k = k if "input_dims" in row else row["name"]
        e = want.get(k)
        if e is None:
            if row["name"] != "(no op)":
                bad.append(f"{label}: {k} not in key_averages")
            continue
        n += 1
        pairs = [("calls", row["calls"], e.count), ("self_cpu_us", row["self_cpu_us"], e.self_cpu_time_total),
                 ("cpu_total_us", row["cpu_total_us"], e.cpu_time_total),
                 ("self_device_us", row["self_device_us"], e.self_device_time_total),
                 ("device_total_us", row["device_total_us"], e.device_time_total)]
        for col, got, exp in pairs:
            if abs(got - exp) <= US * max(e.count, 1):
                continue
            if col in ("self_device_us", "device_total_us") and 0 < exp - got <= extra + US * e.count:
                documented.append(f"{label}: {k}: {col} {got} vs key_averages {exp} (overhead's copy, {extra:.3f})")
            else:
                bad.append(f"{label}: {k}: {col} {got} vs key_averages {exp}")
    return n, bad


plain = prof.key_averages()
shaped = prof.key_averages(group_by_input_shape=True)
n1, bad1 = compare(plain, ours["ops"], lambda e: e.key, "ops")
n2, bad2 = compare(shaped, ours["ops_shapes"], lambda e: (e.key, str(e.input_shapes)), "ops_shapes")
# runtime calls: key_averages' calls and CPU total are the api report's
api = {x["name"]: x for x in ours["api"]}
bad3, n3 = [], 0
for e in cpu_rows(plain):
    if e.key in api:
        n3 += 1
        x = api[e.key]
        if x["calls"] != e.count or abs(x["total_us"] - e.cpu_time_total) > US * e.count:
            bad3.append(f"api: {e.key}: calls {x['calls']} vs {e.count}, total {x['total_us']} vs {e.cpu_time_total}")
with open(os.path.join(a.out, f"key_averages_{tag}.txt"), "w") as f:
    f.write(plain.table(sort_by="self_cuda_time_total", row_limit=30))
    f.write(subprocess.run([a.flagtrace, "stats", "-r", "ops", "-n", "30", "--name-width", "200", trace],
                           capture_output=True, text=True).stdout)
bad = bad1 + bad2 + bad3
for line in bad[:60]:
    print("MISMATCH", line)
for line in documented:
    print("DOCUMENTED", line)
print(f"{tag}: ops {n1} rows, ops_shapes {n2} rows, api {n3} rows compared with key_averages(): {len(bad)} mismatches, "
      f"{len(documented)} documented differences (kineto overhead's device copy)")
sys.exit(1 if bad or not n1 or not n2 else 0)
