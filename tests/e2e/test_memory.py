"""End-to-end: the peak memory of every reader of traces (stats, --by-rank, -r kernels, -r api,
--partial, --merge, report, diff) against docs/guarantees.md's one formula, on crafted inputs:
many small rank files, many calls of one name, many distinct names (issue 49)."""
import gzip
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
sys.path.insert(0, HERE)
from trace_checks import Results, Skip  # noqa: E402
from rank_traces import rank_trace  # noqa: E402

flagtrace = os.path.abspath(sys.argv[1])
sanitized = len(sys.argv) > 2 and sys.argv[2] != ""
results = Results()
tmp_case = results.tmp_case
KiB, MiB = 1024, 1024 * 1024
CPUS = len(os.sched_getaffinity(0))

# docs/guarantees.md's constants, as measured: the bound, and what each thing adds to it
BASE, PER_READ, PER_WORKER = 16 * MiB, 8 * MiB, 2.5 * MiB
PER_FILE, PER_ROW, PER_DEVICE_EVENT, PER_EXT, PER_HOST_CALL, PER_SLICE = 2 * KiB, 600, 16, 43, 64, 144
PER_DEVICE, PER_DEVICE_REPORT, PER_ROW_DIFF = 32, 3.2 * KiB, 1 * KiB
PER_EARLY_CALL = 32 + 8  # a runtime call before the file's first op: 32 B, and the read's slack


def bound(files=1, rows=0, names=0, device_events=0, ext_ids=0, host_calls=0, slices=0, devices=0, report=False,
          diff=False):
    """The formula: files read at once (J) and parse workers (W) as this machine gives them."""
    j = min(files, CPUS)
    w = min(8, CPUS)
    return (BASE + PER_READ * j + PER_WORKER * w + PER_FILE * files + (PER_ROW_DIFF if diff else PER_ROW) * rows + names +
            PER_DEVICE_EVENT * device_events + PER_EXT * ext_ids + PER_HOST_CALL * host_calls +
            PER_SLICE * slices + (PER_DEVICE_REPORT if report else PER_DEVICE) * devices)


def peak(*args):
    """The command's own peak RSS in bytes (wait4's rusage: this child alone)."""
    p = subprocess.Popen([flagtrace, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0, (args, err.decode(errors="replace"))
    return ru.ru_maxrss * KiB


def check(what, measured, limit):
    print(f"  {what}: {measured / MiB:.1f} MiB, bound {limit / MiB:.1f} MiB")
    assert measured <= limit, f"{what}: {measured / MiB:.1f} MiB over the bound {limit / MiB:.1f} MiB"


def slope(what, small, large, n_small, n_large, limit_each):
    """Memory per added item (file, name, call) between two runs: the formula's constant."""
    each = (large - small) / (n_large - n_small)
    print(f"  {what}: {each:.0f} B each (bound {limit_each:.0f} B)")
    assert each <= limit_each, f"{what}: {each:.0f} B each, over {limit_each:.0f} B"


def need_plain_build():
    if sanitized:
        raise Skip("a sanitizer build: its allocator's memory is not the program's")


def write_ranks(d, n, name="rank"):
    """n rank files of 42 events (6 KB each); their paths."""
    paths = []
    for r in range(n):
        p = os.path.join(d, "%s%05d.json" % (name, r))
        with open(p, "w") as f:
            json.dump(rank_trace(r, kernels=13), f)
        paths.append(p)
    return paths


ROWS_PER_RANK = 2 * 16  # its 16 distinct names (4 ops, 1 call, 5 kernels, 1 copy, 1 set, 1 range, ...), two rows each
SLICES_PER_RANK = 42


@tmp_case("1000 rank files: memory grows with what each holds, not ~1 MB a file (issue 49 item 3)")
def _(d):
    need_plain_build()
    small, large = write_ranks(d, 200, "a"), write_ranks(d, 1000, "b")
    parts = os.path.join(d, "parts")
    os.mkdir(parts)
    one = subprocess.run([flagtrace, "stats", "--partial", "--by-rank", large[0]], capture_output=True, check=True)
    src = json.loads(one.stdout)["files"][0]["source"]
    for i in range(1000):  # one by-rank partial per rank, as a job's ranks write them (copies, each
        # named a source of its own: a merge refuses two partials of one trace)
        with open(os.path.join(parts, "p%05d.json" % i), "wb") as f:
            f.write(one.stdout.replace(b'"digest": "%s"' % src["digest"].encode(), b'"digest": "%016x"' % (i + 1))
                    .replace(b'"ino": %d' % src["ino"], b'"ino": %d' % (i + 1)))
    partials = sorted(os.path.join(parts, p) for p in os.listdir(parts))
    out = os.path.join(d, "r.html")
    for what, args, report in [("stats --by-rank", ["stats", "--by-rank"], False),
                               ("stats -r kernels --by-rank", ["stats", "-r", "kernels", "--by-rank"], False),
                               ("stats --partial --by-rank", ["stats", "--partial", "--by-rank"], False),
                               ("report", ["report", "--force-overwrite", "-o", out], True)]:
        a, b = peak(*args, *small), peak(*args, *large)
        per_file = PER_FILE + PER_ROW * ROWS_PER_RANK + (PER_SLICE * SLICES_PER_RANK if report else 0) + \
            (PER_DEVICE_REPORT if report else PER_DEVICE) * 2
        check(what + " of 1000 files", b,
              bound(1000, rows=ROWS_PER_RANK * 1000, slices=SLICES_PER_RANK * 1000 if report else 0,
                    devices=2000, report=report))
        slope(what + " per file", a, b, 200, 1000, per_file)
    check("stats --merge --by-rank of 1000 partials", peak("stats", "--merge", "--by-rank", *partials),
          bound(1000, rows=ROWS_PER_RANK * 1000, devices=2000))


def calls(path, n):
    """n runtime calls of one name, no op: a trace of `record` (issue 49 item 12's 4 M of them, scaled)."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"traceEvents":[\n')
        for i in range(n):
            f.write('%s{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d,"dur":1}\n'
                    % ("," if i else "", 2 * i))
        f.write("]}\n")


def kernel_names(path, n):
    """n kernels, each of its own name (8 bytes)."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"traceEvents":[\n')
        for i in range(n):
            f.write('%s{"ph":"X","cat":"kernel","name":"k%07d","pid":0,"tid":7,"ts":%d,"dur":1}\n'
                    % ("," if i else "", i, 2 * i))
        f.write("]}\n")


@tmp_case("many calls of one name: stats and report within the formula (issue 49 item 12)")
def _(d):
    need_plain_build()
    n1, n2 = 200_000, 1_000_000
    a, b = os.path.join(d, "a.json.gz"), os.path.join(d, "b.json.gz")
    calls(a, n1)
    calls(b, n2)
    out = os.path.join(d, "r.html")
    sa, sb = peak("stats", a), peak("stats", b)
    check("stats of %d calls" % n2, sb, bound(1, rows=1, host_calls=n2))
    slope("stats per call of a file with no op", sa, sb, n1, n2, PER_EARLY_CALL)
    ra, rb = peak("report", "--force-overwrite", "-o", out, a), peak("report", "--force-overwrite", "-o", out, b)
    check("report of %d calls" % n2, rb, bound(1, rows=1, host_calls=n2, slices=n2, report=True))
    slope("report per call", ra, rb, n1, n2, PER_HOST_CALL + PER_SLICE)
    ka = peak("stats", "-r", "kernels", b)  # no ops report: the calls are not kept
    check("stats -r kernels of %d calls" % n2, ka, bound(1, rows=1))


def kernels(path, n):
    """n kernels of one name with their launches (grid, block) and correlation ids: the report's
    costliest slices."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"traceEvents":[\n')
        for i in range(n):
            f.write('%s{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":%d,"dur":%d,"args":{"stream":7,'
                    '"correlation":%d,"grid":[%d,1,1],"block":[128,1,1]}}\n'
                    % ("," if i else "", 3 * i + i * 7919 % 3, 1 + i * 31 % 5, i + 1, 1 + i % 1000))
        f.write("]}\n")


@tmp_case("many kernel slices with launches: report within the formula (issue 49 item 12)")
def _(d):
    need_plain_build()
    n1, n2 = 50_000, 250_000
    a, b = os.path.join(d, "a.json.gz"), os.path.join(d, "b.json.gz")
    kernels(a, n1)
    kernels(b, n2)
    out = os.path.join(d, "r.html")
    ra, rb = peak("report", "--force-overwrite", "-o", out, a), peak("report", "--force-overwrite", "-o", out, b)
    check("report of %d kernels" % n2, rb, bound(1, rows=1, device_events=n2, slices=n2, devices=1, report=True))
    slope("report per kernel", ra, rb, n1, n2, PER_SLICE + PER_DEVICE_EVENT)


@tmp_case("runtime calls kept at 32 B before the first op nest in it exactly as at 64 B")
def _(d):
    ev = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaFree", "pid": 1, "tid": 1, "ts": 30, "dur": 7},
          {"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaFree", "pid": 1, "tid": 1, "ts": 60, "dur": 1},
          {"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": 1, "tid": 1, "ts": 55, "dur": 10}]
    p = os.path.join(d, "t.json")
    with open(p, "w") as f:
        json.dump({"traceEvents": ev}, f)
    r = subprocess.run([flagtrace, "stats", "-f", "json", "-r", "ops,api", p], capture_output=True, check=True)
    doc = json.loads(r.stdout)
    assert [(o["name"], o["calls"], o["self_cpu_us"], o["cpu_total_us"]) for o in doc["ops"]] == \
        [("aten::op", 2, 47.0, 60.0)], doc["ops"]
    assert sorted((a["name"], a["calls"]) for a in doc["api"]) == [("cudaFree", 2), ("cudaMalloc", 1)], doc["api"]


@tmp_case("many distinct names: -r api, -r kernels within the formula (issue 49 item 12)")
def _(d):
    need_plain_build()
    n1, n2 = 30_000, 150_000
    a, b = os.path.join(d, "a.json.gz"), os.path.join(d, "b.json.gz")
    kernel_names(a, n1)
    kernel_names(b, n2)
    for what in ["api", "kernels"]:
        pa, pb = peak("stats", "-r", what, a), peak("stats", "-r", what, b)
        check("-r %s of %d names" % (what, n2), pb, bound(1, rows=n2, names=8 * n2, device_events=n2))
        slope("-r %s per name" % what, pa, pb, n1, n2, PER_ROW + 8 + PER_DEVICE_EVENT)
    check("diff of %d and %d names" % (n1, n2), peak("diff", a, b),
          bound(2, rows=n1 + n2, names=8 * (n1 + n2), device_events=n2, diff=True))


results.finish()
