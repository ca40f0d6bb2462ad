"""Checks the trace gpu_workload wrote against what it launched (issue: CUPTI tracer)."""
import sys
from collections import Counter

from trace_checks import (DEVICE_CATS, Results, check_flows_paired, check_runtime_names, check_window,
                          device_time_by_external_id, load, xs)

trace_path, expect_path = sys.argv[1], sys.argv[2]
doc = load(trace_path)
exp = load(expect_path)
results = Results()
check = results.check


def kernels_once():
    got = Counter((e["name"], tuple(e["args"]["grid"]), tuple(e["args"]["block"])) for e in xs(doc, ("kernel",)))
    want = Counter()
    for k in exp["kernels"]:
        want[(k["name"], tuple(k["grid"]), tuple(k["block"]))] += k["count"]
    assert got == want, f"kernels differ:\n got  {dict(got)}\n want {dict(want)}"
    for e in xs(doc, ("kernel",)):
        assert not e["name"].startswith("_Z"), e["name"]
        assert len(e["args"]) == 13, sorted(e["args"])


def copies_exact():
    got = Counter((e["name"].split()[1], e["args"]["bytes"]) for e in xs(doc, ("gpu_memcpy",)))
    want = Counter()
    for m in exp["memcpy"]:
        want[(m["kind"], m["bytes"])] += m["count"]
    assert got == want, f"memcpy differ: got {dict(got)} want {dict(want)}"
    sets = Counter(e["args"]["bytes"] for e in xs(doc, ("gpu_memset",)))
    assert sets == Counter({m["bytes"]: m["count"] for m in exp["memset"]}), dict(sets)


def runtime_names():
    names = check_runtime_names(doc)
    print(f"     runtime names: {dict(names)}")
    assert names["cudaLaunchKernel"] >= 6, names


def flows():
    pairs = check_flows_paired(doc)
    n_dev = len(xs(doc, DEVICE_CATS))
    assert pairs == n_dev, f"{pairs} flow pairs for {n_dev} device events"


def attribution():
    by_ext = device_time_by_external_id(doc)
    for name, (ext, ns, count) in exp["ranges"].items():
        assert by_ext.get(ext, 0) == ns, f"range {name}: trace says {by_ext.get(ext, 0)} ns, API says {ns}"
    assert exp["ranges"]["kernels"][2] == 6, exp["ranges"]["kernels"]
    assert exp["ranges"]["copies"][2] == 3, exp["ranges"]["copies"]
    assert exp["ranges"]["setup"][2] == 2, exp["ranges"]["setup"]


def runtime_on_range_threads():
    tids = {e["tid"] for e in xs(doc, ("user_annotation",))}
    rt = {e["tid"] for e in xs(doc, ("cuda_runtime",))}
    assert rt <= tids, f"runtime tids {rt} are not the range threads {tids}"


def nothing_dropped():
    assert exp["dropped"] == 0 and doc["flagtrace"]["dropped_records"] == 0


check("every launched kernel once, demangled, with its grid and block", kernels_once)
check("copy and memset bytes exact", copies_exact)
check("runtime names from the cbid table", runtime_names)
check("every flow paired, one per device event", flows)
check("every event inside the capture window", lambda: check_window(doc))
check("range device time = sum of its device events", attribution)
check("runtime events on the ranges' thread rows", runtime_on_range_threads)
check("0 dropped", nothing_dropped)
results.finish()
