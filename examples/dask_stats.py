#!/usr/bin/env python3
"""flagtrace stats over many trace files on a Dask.distributed cluster.

Each task runs `flagtrace stats --partial` over a chunk of the files on a worker and
returns the partial summary (exact counts, sums, min/max, sums of squares and the
median sketch of every row); groups of partials are merged on workers with
`flagtrace stats --partial --merge` (a tree), and the last merge prints what one
`flagtrace stats` over all the files prints, byte for byte.

    python3 dask_stats.py traces/*.json.gz                # a LocalCluster of 2 worker processes
    python3 dask_stats.py --workers 8 -f json -- traces/   # a directory: the traces in it
    python3 dask_stats.py --scheduler tcp://host:8786 --by-rank rank*.json

With --scheduler the workers read the trace paths themselves (a shared file system)
and need flagtrace on their PATH (or --flagtrace). Debian: apt install python3-distributed.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def run_stats(flagtrace, args):
    """flagtrace stats ARGS: its stdout, or an error naming its stderr."""
    r = subprocess.run([flagtrace, "stats", *args], capture_output=True)
    if r.returncode:
        raise RuntimeError("flagtrace stats failed (%d): %s" % (r.returncode, r.stderr.decode(errors="replace").strip()))
    return r.stdout


def partial_task(flagtrace, partial_args, files):
    """A chunk of trace files -> ({this worker's pid}, their partial summary)."""
    return frozenset({os.getpid()}), run_stats(flagtrace, ["--partial", *partial_args, "--", *files])


def merge_task(flagtrace, parts):
    """Partials -> (the pids that made them, their merged partial), through a temporary directory."""
    pids = frozenset().union(*(pid for pid, _ in parts))
    with tempfile.TemporaryDirectory(prefix="dask_stats_") as d:
        names = []
        for i, (_, text) in enumerate(parts):
            names.append(os.path.join(d, "part%05d.json" % i))
            with open(names[-1], "wb") as f:
                f.write(text)
        out = run_stats(flagtrace, ["--partial", "--merge", "--", *names])
    return pids | {os.getpid()}, out


def chunks(xs, n):
    return [xs[i:i + n] for i in range(0, len(xs), n)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="trace files (or directories of them), as flagtrace stats takes them")
    ap.add_argument("--scheduler", metavar="ADDR", help="a running scheduler (default: a LocalCluster)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    ap.add_argument("--chunk", type=int, default=0, help="files per --partial task (default: 4 tasks per worker)")
    ap.add_argument("--fan-in", type=int, default=16, help="partials per merge task (default 16)")
    ap.add_argument("--flagtrace", default=os.environ.get("FLAGTRACE") or shutil.which("flagtrace") or "flagtrace",
                    help="the flagtrace executable (default: $FLAGTRACE, else flagtrace on PATH)")
    ap.add_argument("-f", "--format", default="table", help="the output's format, as stats -f")
    ap.add_argument("-r", "--report", help="reports, as stats -r (trace: the partials keep --limit events)")
    ap.add_argument("-n", "--limit", help="as stats -n")
    ap.add_argument("-s", "--sort", help="as stats -s")
    ap.add_argument("--by-rank", action="store_true", help="per-rank rows, as stats --by-rank")
    ap.add_argument("-o", "--output", help="write the result there (stats' output rules)")
    a = ap.parse_args(argv)
    if a.fan_in < 2:
        ap.error("--fan-in takes 2 or more")
    # what the partials must keep for the output asked, and the output's own options
    partial_args, out_args = [], ["-f", a.format]
    if a.by_rank:
        partial_args.append("--by-rank")
        out_args.append("--by-rank")
    if a.report:
        out_args += ["-r", a.report]
        if "trace" in a.report.split(",") or "cuda_gpu_trace" in a.report.split(","):
            partial_args += ["-r", "trace"] + (["--limit", a.limit] if a.limit else [])
    if a.limit:
        out_args += ["--limit", a.limit]
    if a.sort:
        out_args += ["--sort", a.sort]
    if a.output:
        out_args += ["-o", a.output]

    from dask.distributed import Client, LocalCluster  # Debian: python3-distributed

    cluster = None
    if a.scheduler:
        client = Client(a.scheduler)
    else:
        # processes, one thread each: flagtrace itself reads a chunk's files in parallel
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        n_workers = len(client.scheduler_info()["workers"])
        per = a.chunk or max(1, -(-len(a.files) // (4 * max(n_workers, 1))))
        futures = [client.submit(partial_task, a.flagtrace, partial_args, c, pure=False) for c in chunks(a.files, per)]
        n_chunks = len(futures)
        # a tree of merges on the workers, fan_in partials at a time, in the files' order
        while len(futures) > a.fan_in:
            futures = [client.submit(merge_task, a.flagtrace, g, pure=False) for g in chunks(futures, a.fan_in)]
        results = client.gather(futures)
    finally:
        client.close()
        if cluster:
            cluster.close()
    pids = frozenset().union(*(pid for pid, _ in results))
    print("dask_stats: %d files in %d partials on %d workers (%d worker processes ran tasks)"
          % (len(a.files), n_chunks, n_workers, len(pids)), file=sys.stderr)
    # the last merge, here: its output is stats' own
    with tempfile.TemporaryDirectory(prefix="dask_stats_") as d:
        names = []
        for i, (_, text) in enumerate(results):
            names.append(os.path.join(d, "part%05d.json" % i))
            with open(names[-1], "wb") as f:
                f.write(text)
        r = subprocess.run([a.flagtrace, "stats", "--merge", *out_args, "--", *names])
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
