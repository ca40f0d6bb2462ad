#!/usr/bin/env python3
"""flagtrace advise over many trace files on a Dask.distributed cluster.

The recipe of dask_stats.py: each task runs `flagtrace advise --partial` over a chunk
of the files on a worker (the per-rank part: steps, idle by cause, each rank's
findings) and returns its per-rank advice (JSON); the cross-rank part (stragglers, by
step time and by exposed communication) reduces on those results here, with
`flagtrace advise --merge`, which prints what one `flagtrace advise` over all the files
prints, byte for byte.

    python3 dask_advise.py traces/*.json.gz                 # a LocalCluster of 2 worker processes
    python3 dask_advise.py --workers 8 -f json -- traces/    # a directory: the traces in it
    python3 dask_advise.py --scheduler tcp://host:8786 --step train rank*.json

With --scheduler the workers read the trace paths themselves (a shared file system)
and need flagtrace on their PATH (or --flagtrace). Debian: apt install python3-distributed.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def run_advise(flagtrace, args):
    """flagtrace advise ARGS: its stdout, or an error naming its stderr."""
    r = subprocess.run([flagtrace, "advise", *args], capture_output=True)
    if r.returncode:
        raise RuntimeError("flagtrace advise failed (%d): %s" % (r.returncode, r.stderr.decode(errors="replace").strip()))
    return r.stdout


def partial_task(flagtrace, partial_args, files):
    """A chunk of trace files -> ({this worker's pid}, their per-rank advice)."""
    return frozenset({os.getpid()}), run_advise(flagtrace, ["--partial", "-q", *partial_args, "--", *files])


def chunks(xs, n):
    return [xs[i:i + n] for i in range(0, len(xs), n)]


def expand(paths):
    """Directories as their traces (by name, as the CLI reads a directory): the chunks need files."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, n) for n in os.listdir(p)
                          if n.endswith((".json", ".json.gz")) and os.path.isfile(os.path.join(p, n)))
        else:
            out.append(p)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="trace files (or directories of them), as flagtrace advise takes them")
    ap.add_argument("--scheduler", metavar="ADDR", help="a running scheduler (default: a LocalCluster)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    ap.add_argument("--chunk", type=int, default=0, help="files per --partial task (default: 4 tasks per worker)")
    ap.add_argument("--flagtrace", default=os.environ.get("FLAGTRACE") or shutil.which("flagtrace") or "flagtrace",
                    help="the flagtrace executable (default: $FLAGTRACE, else flagtrace on PATH)")
    ap.add_argument("-f", "--format", default="table", help="the output's format, as advise -f")
    ap.add_argument("-n", "--limit", help="as advise -n")
    ap.add_argument("--step", help="as advise --step (the per-rank part needs it)")
    ap.add_argument("--gap-us", help="as advise --gap-us")
    ap.add_argument("--min-share", help="as advise --min-share")
    ap.add_argument("-o", "--output", help="write the result there (advise's output rules)")
    a = ap.parse_args(argv)
    # the options the per-rank part is computed with travel in the partials; --merge reuses them
    partial_args = []
    for opt, v in (("--step", a.step), ("--gap-us", a.gap_us), ("--min-share", a.min_share)):
        if v is not None:
            partial_args += [opt, v]
    out_args = ["-f", a.format] + (["-n", a.limit] if a.limit else []) + (["-o", a.output] if a.output else [])
    files = expand(a.files)

    from dask.distributed import Client, LocalCluster  # Debian: python3-distributed

    cluster = None
    if a.scheduler:
        client = Client(a.scheduler)
    else:
        # processes, one thread each: flagtrace itself advises a chunk's files in parallel
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        n_workers = len(client.scheduler_info()["workers"])
        per = a.chunk or max(1, -(-len(files) // (4 * max(n_workers, 1))))
        futures = [client.submit(partial_task, a.flagtrace, partial_args, c, pure=False) for c in chunks(files, per)]
        results = client.gather(futures)  # in the files' order: the ranks keep it
    finally:
        client.close()
        if cluster:
            cluster.close()
    pids = frozenset().union(*(pid for pid, _ in results))
    print("dask_advise: %d files in %d partials on %d workers (%d worker processes ran tasks)"
          % (len(files), len(results), n_workers, len(pids)), file=sys.stderr)
    # the cross-rank part, here: per-rank results are small (steps and findings, not events)
    with tempfile.TemporaryDirectory(prefix="dask_advise_") as d:
        names = []
        for i, (_, text) in enumerate(results):
            names.append(os.path.join(d, "part%05d.json" % i))
            with open(names[-1], "wb") as f:
                f.write(text)
        r = subprocess.run([a.flagtrace, "advise", "--merge", *out_args, "--", *names])
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
