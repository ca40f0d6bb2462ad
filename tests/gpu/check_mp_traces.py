"""Checks the per-process traces of a torchrun job: one trace per rank with its rank and
the world size, and (--nccl) NCCL kernels on the rank's own device only.

  check_mp_traces.py DIR                      record -o DIR/mp-%r-%p.json.gz
  check_mp_traces.py DIR --prefix ddp --nccl  record -o DIR/ddp-%r-%p.json.gz of torch_ddp.py
  check_mp_traces.py DIR --prefix ddp-prof --nccl
                                              torch_ddp.py --profile DIR (torch.profiler)
"""
import argparse
import glob
import json
import os
import subprocess

from trace_checks import DEVICE_CATS, check_flows_paired, load, xs

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--prefix", default="mp")
ap.add_argument("--nccl", action="store_true", help="an NCCL job: kernels on the rank's own device")
ap.add_argument("--world", type=int, default=2)
ap.add_argument("--stats", metavar="FLAGTRACE", help="also run `flagtrace stats` over every rank's file")
a = ap.parse_args()

# torchrun's launcher initializes CUDA too (it counts devices): under record it writes
# its own trace, named without a rank since it has none, and with no distributedInfo
launcher = glob.glob(os.path.join(a.dir, f"{a.prefix}-norank-*.json.gz"))
assert len(launcher) <= 1, launcher
for f in launcher:
    assert "distributedInfo" not in load(f), f"{f}: the launcher has no rank but writes one"
files = sorted(set(glob.glob(os.path.join(a.dir, f"{a.prefix}-*.json.gz"))) - set(launcher))
ranks = {}
for f in files:
    doc = load(f)
    info = doc["distributedInfo"]
    assert os.path.basename(f).startswith(f"{a.prefix}-{info['rank']}"), (f, info)
    assert info["world_size"] == a.world, (f, info)
    kernels = xs(doc, ("kernel",))
    assert len(kernels) >= 6, f
    if a.nccl:
        nccl = [e for e in kernels if "nccl" in e["name"].lower()]
        assert nccl, f"{f}: no NCCL kernels"
        # one GPU per rank (torch.cuda.set_device(rank)): all its device work there
        devices = {e["pid"] for e in xs(doc, DEVICE_CATS)}
        assert devices == {info["rank"]}, f"{f}: rank {info['rank']} has device events on {devices}"
    check_flows_paired(doc)  # under torch.profiler too: the ac2g arrows are the adaptor's
    ranks[info["rank"]] = f
assert sorted(ranks) == list(range(a.world)) and len(files) == a.world, files
if a.stats:
    r = subprocess.run([a.stats, "stats", "--report", "kernels,gpu", "--format", "json", *files],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    calls = sum(k["calls"] for k in st["kernels"])
    want = sum(len(xs(load(f), ("kernel",))) for f in files)
    assert calls == want, f"stats counts {calls} kernels, the files hold {want}"
    assert any("nccl" in k["name"].lower() for k in st["kernels"]) or not a.nccl, st["kernels"][:5]
    assert sorted(g["device"] for g in st["gpu"]) == list(range(a.world)), st["gpu"]
    # per rank (issue 16): rank and device from the file itself, communication vs compute
    r = subprocess.run([a.stats, "stats", "--report", "ranks,gpu", "--format", "json", *files],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    per = json.loads(r.stdout)
    assert sorted((g["rank"], g["device"]) for g in per["gpu"]) == [(i, i) for i in range(a.world)], per["gpu"]
    for row in per["ranks"]:
        ks = xs(load(row["file"]), ("kernel",))
        comm = sum(round(e.get("dur", 0) * 1000) for e in ks if "nccl" in e["name"].lower()) / 1000
        assert row["rank"] == load(row["file"])["distributedInfo"]["rank"], row
        assert abs(row["comm_us"] - comm) <= 0.002 * len(ks), (row, comm)
        assert (row["comm_us"] > 0) == a.nccl, row
    report = os.path.join(a.dir, f"{a.prefix}-report.html")
    r = subprocess.run([a.stats, "report", "--force-overwrite", "-o", report, *files], capture_output=True, text=True)
    assert r.returncode == 0 and os.path.getsize(report) < 5 << 20, r.stderr
    print(f"PASS flagtrace stats over {len(files)} ranks: {calls} kernels, busy % for devices "
          f"{[g['device'] for g in st['gpu']]}, comm us per rank {[x['comm_us'] for x in per['ranks']]}; "
          f"report {report}")
print(f"PASS one trace per rank ({a.prefix}), rank and world size in distributedInfo"
      + (", NCCL kernels on each rank's own device" if a.nccl else ""))
print("1 passed, 0 failed")
