"""End-to-end: examples/dask_advise.py on a LocalCluster of 2 worker processes over
200 generated rank files prints what one `flagtrace advise` run prints (identical
JSON: every rank's steps, the stragglers reduced across ranks, the findings ranked),
whole traces as steps and with --step, in chunks of any size. Exits 77 (skipped)
where Dask.distributed is missing (python3-distributed)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
sys.path.insert(0, HERE)
from trace_checks import Results  # noqa: E402
from rank_traces import write_ranks  # noqa: E402

flagtrace = os.path.abspath(sys.argv[1])
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "dask_advise.py")


def python_with_distributed():
    """This interpreter, or Debian's, whichever imports distributed (CMake may have found another)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run([exe, "-c", "import distributed"], capture_output=True).returncode == 0:
            return exe
    return None


py = python_with_distributed()
if not py:
    print("SKIP: no Dask.distributed (apt install python3-distributed)")
    sys.exit(77)
results = Results()

with tempfile.TemporaryDirectory() as d:
    paths = write_ranks(d, 200, kernels=6)

    def direct(*args):
        r = subprocess.run([flagtrace, "advise", "-q", *args, *paths], capture_output=True)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def dask(*args):
        r = subprocess.run([py, EXAMPLE, "--flagtrace", flagtrace, "--workers", "2", *args, *paths],
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
        line = [x for x in r.stderr.decode().splitlines() if x.startswith("dask_advise: ")]
        assert line and "200 files" in line[0] and "on 2 workers" in line[0], r.stderr
        return r.stdout, line[0]

    @results.case("dask_advise: 200 rank files on 2 worker processes: the JSON of one advise run, stragglers included")
    def _():
        out, line = dask("-f", "json", "-n", "0", "--chunk", "5")  # 40 tasks: both workers get some
        want = direct("-f", "json", "-n", "0")
        assert out == want, (len(out), len(want), line)
        assert "(2 worker processes ran tasks)" in line, line
        doc = json.loads(want)
        assert len(doc["files"]) == 200 and len(doc["steps"]) == 200, (len(doc["files"]), len(doc["steps"]))
        rules = {f["rule"] for f in doc["findings"]}
        assert "straggler" in rules, rules  # the cross-rank part ran on the reduced side

    @results.case("dask_advise: --step step in chunks of 7 (29 partials): the table of one advise --step run")
    def _():
        out, line = dask("--step", "step", "--chunk", "7", "--min-share", "0.02")
        assert "in 29 partials" in line, line
        assert out == direct("--step", "step", "--min-share", "0.02"), line

results.finish()
