"""Two ranks under torchrun, one GPU: each process must write its own trace with
its rank and the world size in distributedInfo."""
import os

import torch

rank = int(os.environ["RANK"])
x = torch.full((1024,), float(rank), device="cuda")
for _ in range(3):
    x = x * 2 + 1
torch.cuda.synchronize()
print(f"rank {rank} of {os.environ['WORLD_SIZE']}: {x[0].item()}")
