"""End-to-end: examples/dask_stats.py on a LocalCluster of 2 worker processes over
1000 generated rank files prints what one `flagtrace stats` run prints (identical
JSON), with the partials merged in one step and through a tree of merges on the
workers. Exits 77 (skipped) where Dask.distributed is missing (python3-distributed)."""
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
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "dask_stats.py")


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
    paths = write_ranks(d, 1000, kernels=4)

    def direct(*args):
        r = subprocess.run([flagtrace, "stats", *args, *paths], capture_output=True)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def dask(*args):
        r = subprocess.run([py, EXAMPLE, "--flagtrace", flagtrace, "--workers", "2", *args, *paths],
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
        line = [x for x in r.stderr.decode().splitlines() if x.startswith("dask_stats: ")]
        assert line and "1000 files" in line[0] and "on 2 workers" in line[0], r.stderr
        return r.stdout, line[0]

    @results.case("dask_stats: 1000 rank files on 2 worker processes, one merge: the JSON of one stats run")
    def _():
        out, line = dask("-f", "json")
        assert out == direct("-f", "json"), (len(out), line)
        assert "(2 worker processes ran tasks)" in line, line

    @results.case("dask_stats: by rank, through a tree of merges on the workers (25 partials, 4 at a time)")
    def _():
        out, line = dask("-f", "json", "--by-rank", "--chunk", "40", "--fan-in", "4")
        assert "in 25 partials" in line, line
        assert out == direct("-f", "json", "--by-rank"), line

results.finish()
