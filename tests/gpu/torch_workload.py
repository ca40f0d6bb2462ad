"""The torch workload the GPU checks share, so every process runs the same kernels."""


def workload(torch):
    dev = "cuda"
    x = torch.randn(256, 256, device=dev)
    y = torch.randn(256, 256, device=dev)
    for _ in range(5):
        torch.relu(torch.mm(x, y))
    torch.sort(torch.randn(4096, device=dev))
    torch.randn(16384).to(dev)  # 64 KiB host -> device
    torch.zeros(1 << 20, device=dev)
    big = torch.randn(4096, 4096, device=dev)
    big @ big  # a gemm whose occupancy is bound by registers/shared memory
    big.sum(dim=1)
    torch.softmax(big, dim=1)
    torch.cuda.synchronize()
