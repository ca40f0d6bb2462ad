"""Writes tests/data/profiler_cuda_baseline.json from native torch-cuda (kineto's own
CUPTI; this process never imports flagtrace): categories, args keys per category,
the runtime-category equivalents and the known gaps. No counts, no durations: they
drift run to run on a shared GPU (docs/design.md §10). Takes no arguments."""
import gzip
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from profiler_workload import run_traced_ops  # noqa: E402

OUT = os.path.join(HERE, "profiler_cuda_baseline.json")


def main():
    import torch
    from torch.profiler import ProfilerActivity, profile
    if not torch.cuda.is_available():
        sys.exit("gen_profiler_baseline: needs a CUDA device and a CUDA build of torch (the baseline must come from "
                 "native torch-cuda)")
    if "flagtrace" in sys.modules:
        sys.exit("gen_profiler_baseline: flagtrace is imported here; the baseline must come from native torch")
    run_traced_ops(torch)  # warm-up
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        run_traced_ops(torch)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        p.export_chrome_trace(path)
        doc = json.load(open(path))
    cats, keys = set(), {}
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cats.add(e.get("cat"))
        keys.setdefault(e.get("cat"), set()).update(e.get("args", {}).keys())
    baseline = {
        "source": f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}",
        "categories": sorted(cats),
        "args_keys": {c: sorted(k) for c, k in sorted(keys.items())},
        "runtime_equivalents": {"cuda_runtime": ["cuda_runtime", "privateuse1_runtime"],
                                "cuda_driver": ["cuda_driver", "privateuse1_driver"]},
        "categories_known_gap": {
            "overhead": "CUPTI's self-reported overhead (buffer requests): flagtrace never enables "
                        "CUPTI_ACTIVITY_KIND_OVERHEAD; it measures the profiler, not the workload (seed 6.1)",
        },
    }
    with open(OUT, "w") as f:
        json.dump(baseline, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"gen_profiler_baseline: wrote {OUT}: {len(cats)} categories")


if __name__ == "__main__":
    main()
