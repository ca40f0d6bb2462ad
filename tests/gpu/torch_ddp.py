"""A 2-rank NCCL DDP job under torchrun (issue 13), one GPU per rank.

  torchrun --nproc_per_node=2 torch_ddp.py                  (under flagtrace record)
  torchrun --nproc_per_node=2 torch_ddp.py --profile DIR    torch.profiler with
                                                            `import flagtrace.torch`:
                                                            DIR/ddp-prof-RANK.json.gz
"""
import argparse
import os

ap = argparse.ArgumentParser()
ap.add_argument("--profile", metavar="DIR")
args = ap.parse_args()
if args.profile:
    import flagtrace.torch  # noqa: F401  (before the first profile)
    assert flagtrace.torch.available, flagtrace.torch.reason

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
model = DDP(torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda(),
            device_ids=[rank])
opt = torch.optim.AdamW(model.parameters())
x, y = torch.randn(64, 1024, device="cuda"), torch.randint(0, 10, (64,), device="cuda")


def step():
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()  # the all-reduce runs here
    opt.step()


step()  # NCCL communicators and DDP buckets are set up here
if args.profile:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    p.export_chrome_trace(os.path.join(args.profile, f"ddp-prof-{rank}.json.gz"))
else:
    for _ in range(3):
        step()
    torch.cuda.synchronize()
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} of {world}: done")
