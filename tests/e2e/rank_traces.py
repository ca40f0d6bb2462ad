"""Small per-rank Chrome traces for the partial-summary tests: kernels (an NCCL one
among them), copies, sets, runtime calls and ops joined by External id, each rank's
own distributedInfo; deterministic per rank."""
import json
import os


def rank_trace(rank, kernels=12, with_rank=True):
    """One rank's trace as a dict: durations vary by rank so that rows merge unevenly."""
    ev, ts, ext = [], 1_000_000 + rank * 7, 1
    for i in range(kernels):
        name = ["gemm_kernel", "ncclDevKernel_AllReduce_Sum_f32", "elementwise<%d>" % (i % 3)][i % 3]
        dur = 1 + (rank * 31 + i * 17) % 97 + (i % 5) / 8  # ts/dur in us, with fractions
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::op%d" % (i % 4), "pid": 1, "tid": 1,
                   "ts": ts, "dur": dur + 3, "args": {"External id": ext}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": ts + 1, "dur": 1.5, "args": {"correlation": ext, "External id": ext}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": i % 2, "tid": 7, "ts": ts + 2, "dur": dur,
                   "args": {"External id": ext, "correlation": ext, "stream": 7, "grid": [4, 1, 1],
                            "block": [128, 1, 1], "registers per thread": 32}})
        ts += dur + 5
        ext += 1
    ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
               "ts": ts, "dur": 2.25, "args": {"bytes": 4096 * (rank % 5 + 1)}})
    ev.append({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
               "ts": ts + 3, "dur": 0.5, "args": {"bytes": 512}})
    ev.append({"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1,
               "ts": 1_000_000 + rank * 7, "dur": ts - 1_000_000 - rank * 7})
    doc = {"traceEvents": ev}
    if with_rank:
        doc["distributedInfo"] = {"rank": rank, "world_size": 0}
    return doc


def write_ranks(d, n, kernels=12, prefix="rank"):
    """n rank files in directory d; their paths in rank order."""
    paths = []
    for r in range(n):
        p = os.path.join(d, "%s%05d.json" % (prefix, r))
        with open(p, "w") as f:
            json.dump(rank_trace(r, kernels), f)
        paths.append(p)
    return paths
