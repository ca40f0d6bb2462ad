"""Checks the per-process traces of a torchrun job recorded with -o DIR/mp-%r-%p.json.gz."""
import glob
import os
import sys

from trace_checks import check_flows_paired, load, xs

d = sys.argv[1]
files = sorted(glob.glob(os.path.join(d, "mp-*.json.gz")))
ranks = {}
for f in files:
    doc = load(f)
    info = doc["distributedInfo"]
    assert os.path.basename(f).startswith(f"mp-{info['rank']}-"), (f, info)
    assert info["world_size"] == 2, info
    assert len(xs(doc, ("kernel",))) >= 6, f
    check_flows_paired(doc)
    ranks[info["rank"]] = f
assert sorted(ranks) == [0, 1] and len(files) == 2, files
print("PASS one trace per rank, rank and world size in distributedInfo")
print("1 passed, 0 failed")
