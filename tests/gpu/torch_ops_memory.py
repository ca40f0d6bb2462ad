"""H200: `flagtrace stats -r ops` memory columns (issue 51) of a torch.profiler(profile_memory=True) trace against
key_averages() of the same profile, byte for byte: CPU Mem, Self CPU Mem, CUDA Mem, Self CUDA Mem of every row
(the "[memory]" row too), on a training step whose backward runs on autograd's own thread."""
import argparse
import json
import os
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("--flagtrace", required=True, help="the flagtrace binary")
p.add_argument("--out", required=True, help="where the trace and the tables go")
p.add_argument("--import-flagtrace", action="store_true", help="profile through flagtrace.torch (PrivateUse1 adaptor)")
a = p.parse_args()
if a.import_flagtrace:
    import flagtrace.torch  # noqa: F401
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function, schedule  # noqa: E402

os.makedirs(a.out, exist_ok=True)
tag = "flagtrace" if a.import_flagtrace else "native"
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []


def step(i):
    x = torch.randn(64, 512, device="cuda")
    loss = model(x).square().mean()
    loss.backward()  # autograd's thread: its allocations fall in the step range's interval
    opt.step()
    opt.zero_grad()
    kept.append(torch.empty(1 << 18, device="cuda"))  # 1 MiB a step that stays: a leak, for advise
    with record_function("host_side"):
        torch.randn(1 << 16).sum()  # CPU memory


for i in range(3):
    step(i)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True,
             schedule=schedule(wait=0, warmup=1, active=5)) as prof:
    for i in range(6):
        step(i)
        prof.step()
torch.cuda.synchronize()
trace = os.path.join(a.out, f"ops_memory_{tag}.json")
prof.export_chrome_trace(trace)
r = subprocess.run([a.flagtrace, "stats", "-r", "ops", "-f", "json", "-n", "0", trace], capture_output=True, text=True)
if r.returncode:
    sys.exit(f"stats failed: {r.stderr}")
ours = {}
for row in json.loads(r.stdout)["ops"]:  # key_averages() names every ProfilerStep#N "ProfilerStep*"
    name = "ProfilerStep*" if row["name"].startswith("ProfilerStep#") else row["name"]
    acc = ours.setdefault(name, {})
    for c, v in row.items():
        if c.endswith("_mem_bytes"):
            acc[c] = acc.get(c, 0) + v
avgs = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CPU]
want = {}
for e in avgs:  # one key per name among CPU rows (a runtime call's name is no op's)
    w = want.setdefault(e.key, [0, 0, 0, 0])
    for k, v in enumerate((e.cpu_memory_usage, e.self_cpu_memory_usage, e.device_memory_usage,
                           e.self_device_memory_usage)):
        w[k] += v
cols = ("cpu_mem_bytes", "self_cpu_mem_bytes", "device_mem_bytes", "self_device_mem_bytes")
bad, n = [], 0
for name, w in sorted(want.items()):
    row = ours.get(name)
    if row is None:
        if any(w):  # a runtime call's row (key_averages lists them; stats -r ops does not): docs/memory.md
            print("NOT AN OPS ROW", name, w)
        continue
    n += 1
    got = [row.get(c, 0) for c in cols]
    if got != w:
        bad.append(f"{name}: flagtrace {got} vs key_averages {w}")
with open(os.path.join(a.out, f"ops_memory_{tag}.txt"), "w") as f:
    f.write(prof.key_averages().table(sort_by="self_cuda_memory_usage", row_limit=40))
    f.write(subprocess.run([a.flagtrace, "stats", "-r", "ops", "-n", "40", "--name-width", "200", trace],
                           capture_output=True, text=True).stdout)
for line in bad[:60]:
    print("MISMATCH", line)
print(f"{tag}: {n} ops rows' memory columns compared with key_averages(): {len(bad)} mismatches")
adv = subprocess.run([a.flagtrace, "advise", "-f", "json", "-n", "0", trace], capture_output=True, text=True)
leaks = [f for f in json.loads(adv.stdout)["findings"] if f["rule"] == "leak"] if adv.returncode == 0 else []
print(f"{tag}: advise's leak findings: {[(f['where'], f['bytes']) for f in leaks]} (1 MiB a step kept by aten::empty)")
sys.exit(1 if bad or not n else 0)
