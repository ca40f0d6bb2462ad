"""The same training model profiled at two batch sizes (issue 37's `diff` test data):
a compute-bound transformer-style MLP block whose matmuls scale with the batch, so
batch 16 should take about twice batch 8's device time on the matmul ops with the
same call counts.

  torch_batch_pair.py --out DIR      writes DIR/batch{8,16}_{torch_cuda,flagtrace}.json.gz
                                     (native torch-cuda, and `import flagtrace.torch`)
  torch_batch_pair.py native|flagtrace BATCH TRACE   one of them (what --out runs)
"""
import os
import subprocess
import sys

SEQ, HIDDEN, FFN = 256, 1024, 4096


def train(batch, out, with_flagtrace):
    if with_flagtrace:
        import flagtrace.torch  # noqa: F401  (before the first profile)
        assert flagtrace.torch.available, flagtrace.torch.reason
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.LayerNorm(HIDDEN), torch.nn.Linear(HIDDEN, FFN), torch.nn.GELU(),
                                torch.nn.Linear(FFN, HIDDEN)).cuda()
    opt = torch.optim.AdamW(block.parameters(), lr=1e-3)
    x = torch.randn(batch, SEQ, HIDDEN, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = block(x).float().pow(2).mean()
        loss.backward()
        opt.step()

    step()
    torch.cuda.synchronize()
    # wait 1, warmup 1, active 3: ProfilerStep#2..#4 recorded
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(5):
            step()
            torch.cuda.synchronize()
            prof.step()


def main():
    if len(sys.argv) == 4 and sys.argv[1] in ("native", "flagtrace"):
        return train(int(sys.argv[2]), sys.argv[3], sys.argv[1] == "flagtrace")
    if len(sys.argv) != 3 or sys.argv[1] != "--out":
        sys.exit(__doc__)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for batch in (8, 16):
        for mode, tag in (("native", "torch_cuda"), ("flagtrace", "flagtrace")):
            path = os.path.join(out, f"batch{batch}_{tag}.json.gz")
            subprocess.run([sys.executable, __file__, mode, str(batch), path], check=True)
            print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
