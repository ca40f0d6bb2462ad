"""Checks what `flagtrace record` wrote for examples/sample.cu (whole run or its
cudaProfilerStart/Stop range)."""
import sys
from collections import Counter

from trace_checks import (DEVICE_CATS, Results, check_flows_paired, check_runtime_names, check_window, load, xs)

path, mode = sys.argv[1], sys.argv[2]
doc = load(path)
steps = 8 if mode == "whole" else 5
phases = 3 if mode == "whole" else 1
results = Results()
check = results.check

def kernels():
    got = Counter((e["name"], tuple(e["args"]["grid"]), tuple(e["args"]["block"])) for e in xs(doc, ("kernel",)))
    want = Counter({("saxpy(float, float const*, float*, int)", (4096, 1, 1), (256, 1, 1)): steps,
                    ("scale_odd_block(float*, int)", (10486, 1, 1), (100, 1, 1)): steps})
    assert got == want, dict(got)


def memory():
    got = Counter((e["name"], e["args"]["bytes"]) for e in xs(doc, ("gpu_memcpy", "gpu_memset")))
    want = Counter({("Memcpy HtoD (Pageable -> Device)", 4 << 20): phases,
                    ("Memcpy DtoH (Device -> Pageable)", 4 << 20): phases, ("Memset (Device)", 4 << 20): phases})
    assert got == want, dict(got)


def nvtx():
    names = Counter(e["name"] for e in xs(doc, ("user_annotation",)))
    want = Counter({"step": steps, "phase done": phases})
    want.update({"warmup": 1, "measured": 1, "cooldown": 1} if mode == "whole" else {"measured": 1})
    assert names == want, dict(names)
    ids = {e["args"]["External id"] for e in xs(doc, ("user_annotation",)) if e["name"] == "step"}
    for k in xs(doc, ("kernel",)):  # the innermost range is the step
        assert k["args"].get("External id") in ids, k["args"]
    proj = Counter(e["name"] for e in xs(doc, ("gpu_user_annotation",)))
    assert proj["step"] == steps and proj["measured"] == 1, dict(proj)


def flows():
    assert check_flows_paired(doc) == len(xs(doc, DEVICE_CATS))


check("every kernel once, demangled, with grid and block (block of 100)", kernels)
check("copies and memsets with exact bytes", memory)
check("NVTX ranges and marks; kernels attributed to the innermost range; projections", nvtx)
check("every flow paired, one per device event", flows)
check("every event inside the capture window", lambda: check_window(doc))
check("runtime names from the cbid table", lambda: check_runtime_names(doc))


def nothing_dropped():
    assert doc["flagtrace"]["dropped_records"] == 0, doc["flagtrace"]


check("0 dropped", nothing_dropped)
results.finish()
