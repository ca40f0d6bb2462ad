"""Writes torch_memory_h100.json.gz (torch 2.11, profile_memory=True, 3 training steps of a small MLP) and its key_averages() memory columns into $OUT (issue 51 reference data; run on the GPU, never in CI)."""
import gzip, json, os, sys, shutil
import torch
from torch.profiler import profile, ProfilerActivity
out = os.environ["OUT"]
print("torch", torch.__version__)
for m in ("cupy", "jax"):
    try:
        __import__(m); print(m, "present")
    except Exception as e:
        print(m, "absent", e)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 512, device="cuda"); y = torch.randint(0, 10, (64,), device="cuda")
def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward(); opt.step()
step(); torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats()
base_alloc = torch.cuda.memory_allocated()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True, record_shapes=True) as p:
    for i in range(3):
        with torch.profiler.record_function(f"ProfilerStep#{i}"):
            step()
    torch.cuda.synchronize()
print("max_memory_allocated", torch.cuda.max_memory_allocated(), "base", base_alloc,
      "max_reserved", torch.cuda.max_memory_reserved())
json.dump({"max_memory_allocated": torch.cuda.max_memory_allocated(), "max_memory_reserved": torch.cuda.max_memory_reserved(),
           "memory_allocated_before_window": base_alloc}, open(os.path.join(out, "torch_memory_h100_peaks.json"), "w"))
p.export_chrome_trace(os.path.join(out, "mem.json"))
with open(os.path.join(out, "mem.json"), "rb") as f, gzip.open(os.path.join(out, "torch_memory_h100.json.gz"), "wb") as g:
    shutil.copyfileobj(f, g)
os.remove(os.path.join(out, "mem.json"))
rows = []
ka = p.key_averages()
attrs = [a for a in dir(ka[0]) if "memory" in a]
print("memory attrs", attrs)
for e in ka:
    rows.append({"key": e.key, "count": e.count, **{a: getattr(e, a) for a in attrs if not callable(getattr(e, a))}})
json.dump(rows, open(os.path.join(out, "torch_memory_h100_key_averages.json"), "w"), indent=1)
print(ka.table(sort_by="self_cuda_memory_usage", row_limit=8))
segs = torch.cuda.memory_snapshot()
print("segments", [(s["address"], s["total_size"]) for s in segs][:10])
