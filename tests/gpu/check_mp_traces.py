"""Checks the per-process traces of a torchrun job recorded with -o DIR/mp-%r-%p.json.gz."""
import glob
import os
import sys

from trace_checks import check_flows_paired, load, xs

d = sys.argv[1]
# torchrun's launcher initializes CUDA too (it counts devices): it writes its own
# trace, named without a rank since it has none
launcher = glob.glob(os.path.join(d, "mp-norank-*.json.gz"))
assert len(launcher) <= 1, launcher
files = sorted(set(glob.glob(os.path.join(d, "mp-*.json.gz"))) - set(launcher))
ranks = {}
for f in files:
    doc = load(f)
    info = doc["distributedInfo"]
    assert os.path.basename(f).startswith(f"mp-{info['rank']}-"), (f, info)
    assert info["world_size"] == 2, (f, info)
    assert len(xs(doc, ("kernel",))) >= 6, f
    check_flows_paired(doc)
    ranks[info["rank"]] = f
assert sorted(ranks) == [0, 1] and len(files) == 2, files
print("PASS one trace per rank, rank and world size in distributedInfo")
print("1 passed, 0 failed")
