"""A job's rank traces as a person reads them (issue 41's one-GPU part): `report` puts
every rank on one wall clock, and `diff` of rank 0 against rank 1 of the same program
aligns every kernel with equal counts.

  check_job_views.py FLAGTRACE DIR PREFIX OUT   DIR holds PREFIX-<rank>-<pid>.json.gz
"""
import glob
import json
import os
import re
import subprocess
import sys


def main():
    ft, d, prefix, out = sys.argv[1:5]
    ranks = {r: sorted(glob.glob(os.path.join(d, f"{prefix}-{r}-*.json.gz"))) for r in (0, 1)}
    assert all(len(v) == 1 for v in ranks.values()), ranks
    page = os.path.join(out, f"{prefix}-report.html")
    subprocess.run([ft, "report", "--force-overwrite", "-o", page, ranks[0][0], ranks[1][0]], check=True)
    text = open(page).read()
    data = json.loads(re.search(r'<script id="ft-data" type="application/json">(.*?)</script>', text, re.S).group(1))
    clock = data["tl"]["clock"]
    assert clock["aligned"] is True, clock
    assert [f["rank"] for f in data["files"]] == [0, 1], data["files"]
    r = subprocess.run([ft, "diff", "-q", "-f", "json", "--a", ranks[0][0], "--b", ranks[1][0]],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    kern = {s["metric"]: s for s in doc["summary"]}["kernels"]
    assert doc["unmatched"] == [] and kern["a"] == kern["b"] and kern["a"] > 0, (doc["unmatched"], kern)
    print(f"PASS {prefix}: report on one clock ({clock['why']}), diff rank 0 vs 1: {kern['a']} kernels each, "
          f"kernel time ratio {({s['metric']: s for s in doc['summary']}['kernel_time']['ratio'])}")


if __name__ == "__main__":
    main()
