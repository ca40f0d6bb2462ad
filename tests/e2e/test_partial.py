"""End-to-end: `flagtrace stats --partial` summaries merged with `--merge` print
byte for byte what one `stats` over all the traces prints (every format, by rank,
merges of merges); hostile or foreign inputs are refused in one line, status 2."""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
sys.path.insert(0, HERE)
from trace_checks import Results  # noqa: E402
from rank_traces import rank_trace, write_ranks  # noqa: E402

flagtrace, data = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
COMMITTED = ["torch_cuda_2.11_reference.json.gz", "workload_h200.json.gz", "sample_h200.json.gz"]
ALL = "kernels,api,memops,memsize,ranges,gpu_ranges,ops,ops_shapes,gpu,ranks,temporal,overlap,launch,queue"
results = Results()
case, tmp_case = results.case, results.tmp_case


def stats(*args, cwd=None):
    return subprocess.run([*WRAP, flagtrace, "stats", *args], capture_output=True, cwd=cwd)


def ok(*args, cwd=None):
    r = stats(*args, cwd=cwd)
    assert r.returncode == 0, (args, r.stderr.decode(errors="replace"))
    return r


def partials(d, groups, *extra):
    """One partial per group of traces (paths relative to d); their names."""
    names = []
    for i, g in enumerate(groups):
        name = "part%03d.json" % i
        ok("--partial", "--force-overwrite", *extra, "-o", name, *g, cwd=d)
        names.append(name)
    return names


def same(d, traces, parts, *args, merge_args=()):
    """stats over traces and stats --merge over parts: identical stdout and stderr."""
    want = ok(*args, *traces, cwd=d)
    got = ok("--merge", *args, *merge_args, *parts, cwd=d)
    assert got.stdout == want.stdout, (args, want.stdout[:400], got.stdout[:400])
    assert got.stderr == want.stderr, (args, want.stderr, got.stderr)
    return want


def copy_committed(d):
    for t in COMMITTED:
        shutil.copy(os.path.join(data, t), d)
    return list(COMMITTED)


FORMATS = (["-f", "json"], ["-f", "csv"], ["-f", "table"], ["-f", "tsv"])


@tmp_case("partial: one trace, merged, prints what stats prints (json, csv, tsv, table; every report)")
def _(d):
    t = copy_committed(d)
    parts = partials(d, [[t[0]]], "-r", "trace")
    for fmt in FORMATS:
        same(d, [t[0]], parts, *fmt, "-r", ALL)
        same(d, [t[0]], parts, *fmt, "-r", "trace")
    same(d, [t[0]], parts, "-f", "json", "-r", "kernels,ops", "--sort", "median")


@tmp_case("partial: two and three traces, in partials of one or two, merged: identical output")
def _(d):
    t = copy_committed(d)
    for groups in ([t[:2]], [[t[0]], [t[1]]], [t[:2], [t[2]]], [[t[0]], t[1:]]):
        parts = partials(d, groups)
        flat = [x for g in groups for x in g]
        for fmt in FORMATS:
            same(d, flat, parts, *fmt)
        same(d, flat, parts, "-f", "json", "-r", ALL)


@tmp_case("partial: many generated ranks (histogram medians, unknown categories, a file without a rank)")
def _(d):
    paths = [os.path.basename(p) for p in write_ranks(d, 40, kernels=40)]
    doc = rank_trace(99, 300, with_rank=False)  # >256 launches of a name per file: histograms
    doc["traceEvents"].append({"ph": "X", "cat": "mystery", "name": "m", "pid": 0, "tid": 1, "ts": 5, "dur": 1})
    with open(os.path.join(d, "norank.json"), "w") as f:
        json.dump(doc, f)
    paths.insert(7, "norank.json")
    for i, cat in enumerate(["zeta", "alpha", "mid", "beta", "omega"]):  # categories met in other files, orders
        with open(os.path.join(d, paths[3 + 8 * i]), "r+") as f:
            doc = json.load(f)
            doc["traceEvents"] += [{"ph": "X", "cat": c, "name": "u", "pid": 0, "tid": 1, "ts": 9, "dur": 1}
                                   for c in (cat, "common")]
            f.seek(0)
            json.dump(doc, f)
    groups = [paths[i:i + 9] for i in range(0, len(paths), 9)]
    parts = partials(d, groups)
    for fmt in FORMATS:
        same(d, paths, parts, *fmt, "-r", ALL)
    want = same(d, paths, parts, "-f", "json")
    j = json.loads(want.stdout)
    assert [f["file"] for f in j["files"]] == paths  # the partials' order, then each one's
    assert j["files"][7]["rank"] == 7
    assert list(j["unknown_categories"].items()) == [("alpha", 1), ("beta", 1), ("common", 5), ("mid", 1),
                                                     ("mystery", 1), ("omega", 1), ("zeta", 1)]  # by name
    k = {r["name"]: r for r in j["kernels"]}
    assert k["gemm_kernel"]["calls"] == 40 * 14 + 100  # past 256: its median from the histogram


@tmp_case("partial: --by-rank partials merge into the per-rank rows (json, csv, table)")
def _(d):
    t = copy_committed(d)
    paths = t + [os.path.basename(p) for p in write_ranks(d, 6)]
    parts = partials(d, [paths[:4], paths[4:]], "--by-rank")
    for fmt in FORMATS:
        same(d, paths, parts, *fmt, "--by-rank", "-r", ALL)
    # and partials written without it cannot answer it
    plain = partials(d, [paths[:4]])
    r = stats("--merge", "--by-rank", *plain, cwd=d)
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"written without --by-rank" in r.stderr, r.stderr


@tmp_case("partial: merges of merges (--partial --merge, a tree of three levels) print the same")
def _(d):
    paths = [os.path.basename(p) for p in write_ranks(d, 24)]
    leaves = partials(d, [paths[i:i + 3] for i in range(0, 24, 3)], "--by-rank", "-r", "trace")
    mids = []
    for i in range(0, len(leaves), 2):
        ok("--partial", "--merge", "-o", "mid%d.json" % i, leaves[i], leaves[i + 1], cwd=d)
        mids.append("mid%d.json" % i)
    ok("--partial", "--merge", "-o", "root.json", *mids, cwd=d)
    for args in (["-f", "json", "-r", ALL], ["-f", "csv", "--by-rank"], ["-f", "json", "-r", "trace"]):
        same(d, paths, ["root.json"], *args)
        same(d, paths, mids, *args)
    # a merged partial is a fixed point: merged again, it is written the same
    ok("--partial", "--merge", "-o", "root2.json", "root.json", cwd=d)
    assert open(os.path.join(d, "root.json"), "rb").read() == open(os.path.join(d, "root2.json"), "rb").read()


@tmp_case("partial: the trace report needs partials that kept as many device events")
def _(d):
    paths = [os.path.basename(p) for p in write_ranks(d, 3)]
    parts = partials(d, [paths], "-r", "trace", "--limit", "5")
    same(d, paths, parts, "-f", "json", "-r", "trace", "--limit", "5")
    same(d, paths, parts, "-f", "json", "-r", "trace", "--limit", "3")
    for args in (["-r", "trace"], ["-r", "trace", "--limit", "0"]):
        r = stats("--merge", *args, *parts, cwd=d)
        assert r.returncode == 2 and b"keep the earliest 5 device events" in r.stderr, r.stderr
    r = stats("--merge", "-r", "trace", *partials(d, [paths]), cwd=d)
    assert r.returncode == 2 and b"keep no device events" in r.stderr, r.stderr
    # partials that kept 5 and 3 per file merge into one that keeps 3: the earliest
    ok("--partial", "-r", "trace", "--limit", "5", "-o", "five.json", paths[0], cwd=d)
    ok("--partial", "-r", "trace", "--limit", "3", "-o", "three.json", *paths[1:], cwd=d)
    ok("--partial", "--merge", "-o", "mixed.json", "five.json", "three.json", cwd=d)
    assert json.load(open(os.path.join(d, "mixed.json")))["trace_limit"] == 3
    for lim in ("3", "2"):
        same(d, paths, ["mixed.json"], "-f", "json", "-r", "trace", "--limit", lim)
        same(d, paths, ["five.json", "three.json"], "-f", "json", "-r", "trace", "--limit", lim)


@tmp_case("partial: refusals (a trace, another version, numbers that do not add up, twice) in one line, status 2")
def _(d):
    t = copy_committed(d)
    (part,) = partials(d, [[t[2]]])
    doc = json.load(open(os.path.join(d, part)))
    with gzip.open(os.path.join(d, t[2])) as g:
        open(os.path.join(d, "plain_trace.json"), "wb").write(g.read())

    def variant(name, change):
        x = json.loads(json.dumps(doc))
        change(x)
        with open(os.path.join(d, name), "w") as f:
            json.dump(x, f)
        return name

    kern = lambda x: x["total"]["kernels"][0]["t"]  # noqa: E731
    cases = [
        (t[2], "a gzip file, not a partial summary"),
        ("plain_trace.json", "not a partial summary"),
        (variant("v3.json", lambda x: x.update(flagtrace_partial=3)), "version 3; this flagtrace reads version 2"),
        (variant("type.json", lambda x: x["files"][0].update(events="3")), "a string where none belongs"),
        (variant("count.json", lambda x: kern(x).update(n=kern(x)["n"] + 1)), "values are not n"),
        (variant("huge.json", lambda x: x["files"][0].update(events=2 ** 64)), "not a whole number"),
        (variant("neg.json", lambda x: x["files"][0].update(span_ns=-5)), "not a whole number"),
        (variant("ref.json", lambda x: x["files"][0].update(path=10 ** 6)), "past the strings table"),
        (variant("member.json", lambda x: x["files"][0].update(extra=1)), "unknown member \"extra\""),
    ]
    for name, text in cases:
        r = stats("--merge", name, cwd=d)
        err = r.stderr.decode(errors="replace")
        assert r.returncode == 2 and err.count("\n") == 1 and err.startswith(f"flagtrace stats: {name}: "), (name, err)
        assert text in err, (name, err)
    r = stats("--merge", part, "./" + part, cwd=d)
    assert r.returncode == 2 and b"given twice" in r.stderr, r.stderr
    r = stats("--partial", "-f", "json", t[2], cwd=d)
    assert r.returncode == 2 and b"--partial writes its own JSON" in r.stderr, r.stderr
    # -o follows the output rules: an existing file is kept without --force-overwrite
    r = stats("--partial", "-o", part, t[2], cwd=d)
    assert r.returncode == 2 and b"exists" in r.stderr, r.stderr
    ok("--partial", "--force-overwrite", "-o", part, t[2], cwd=d)
    # no -o: the partial on stdout, and nothing on stderr (notes wait for the merge)
    r = ok("--partial", t[0], t[1], cwd=d)
    assert json.loads(r.stdout)["flagtrace_partial"] == 2 and r.stderr == b"", r.stderr


def refused(d, names, text):
    r = stats("--merge", *names, cwd=d)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 2 and r.stdout == b"" and err.count("\n") == 1, (names, r.returncode, err)
    assert err.startswith("flagtrace stats: ") and text in err, (names, text, err)


@tmp_case("partial: two partials of one trace (the same file, a copy, a merge of it) are refused, status 2")
def _(d):
    t = copy_committed(d)
    shutil.copy(os.path.join(d, t[2]), os.path.join(d, "copy.json.gz"))
    p = partials(d, [[t[2]], [t[2]], ["copy.json.gz"], [t[0], "copy.json.gz"], [t[0]], [t[1]]])
    digest = json.load(open(os.path.join(d, p[0])))["files"][0]["source"]["digest"]
    size = os.path.getsize(os.path.join(d, t[2]))
    refused(d, [p[0], p[1]], f"{p[1]}: its trace {t[2]} is the same file as {p[0]}'s {t[2]} ({size} bytes, "
                             f"digest {digest}): merged, its events would be counted twice")
    refused(d, [p[0], p[2]], f"{p[2]}: its trace copy.json.gz is a copy of {p[0]}'s {t[2]} ")
    refused(d, [p[4], p[0], p[3]], f"{p[3]}: its trace {t[0]} is the same file as {p[4]}'s {t[0]} ")
    # a merge of merges: the partial written from p[4] and p[5] holds t[0] too
    ok("--merge", "--partial", "-o", "tree.json", p[4], p[5], cwd=d)
    refused(d, ["tree.json", p[3]], f"{p[3]}: its trace {t[0]} is the same file as tree.json's {t[0]} ")
    # what stats takes in one run (a trace and its copy) its partial keeps; distinct traces merge
    same(d, [t[0], "copy.json.gz", t[1]], [p[3], p[5]], "-f", "json")
    # a partial of version 1 names no source: refused, saying why
    doc = json.load(open(os.path.join(d, p[0])))
    doc["flagtrace_partial"] = 1
    for f in doc["files"]:
        del f["source"]
    json.dump(doc, open(os.path.join(d, "v1.json"), "w"))
    refused(d, ["v1.json"], "version 1; this flagtrace reads version 2 (version 1 names no trace's source")


@tmp_case("partial: a record no read gives is refused (a rank past 2^31 - 1, busy past the span or below a kernel)")
def _(d):
    t = copy_committed(d)
    by_rank, total = "by_rank.json", "total.json"
    ok("--partial", "--by-rank", "-o", by_rank, t[2], cwd=d)
    ok("--partial", "-o", total, t[1], cwd=d)
    for base, name, change, text in (
            (total, "rank.json", lambda f: f["meta"].update(rank=2 ** 40), "a rank past 2^31 - 1"),
            (by_rank, "rank2.json", lambda f: f["meta"].update(rank=2 ** 31), "a rank past 2^31 - 1"),
            (total, "busy.json", lambda f: f.update(busy=[[0, f["span_ns"] + 1]]), "a device busy longer than its file's span"),
            (by_rank, "below.json", lambda f: f.update(busy=[[0, 1]]), "a kernel longer than its file's busiest device"),
            (total, "below2.json", lambda f: f.update(busy=[[0, 1]]), "a kernel longer than the busiest device"),
            (by_rank, "kern.json", lambda f: f.update(kernel_ns=f["kernel_ns"] + 1), "a file's kernel_ns or comm_ns is not its"),
            (total, "kern2.json", lambda f: f.update(kernel_ns=f["kernel_ns"] * 2), "the files' kernel_ns or comm_ns is not"),
            (total, "nosrc.json", lambda f: f.pop("source"), "a file without its source"),
            (total, "digest.json", lambda f: f["source"].update(digest="12"), "a source's digest is not 16 hex digits"),
            (total, "ino.json", lambda f: f["source"].pop("ino"), "a source with some of dev, ino and mtime_ns")):
        doc = json.load(open(os.path.join(d, base)))
        change(doc["files"][0])
        json.dump(doc, open(os.path.join(d, name), "w"))
        refused(d, [name], f"flagtrace stats: {name}: {text}")
    # a trace's own rank past 2^31 - 1 is none: the file takes its position, and its partial merges
    open(os.path.join(d, "big_rank.json"), "w").write(json.dumps(
        {"distributedInfo": {"rank": 2 ** 40}, "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]}))
    r = ok("-f", "json", "big_rank.json", cwd=d)
    assert json.loads(r.stdout)["files"][0]["rank"] == 0, r.stdout
    same(d, ["big_rank.json"], partials(d, [["big_rank.json"]]), "-f", "json")


@tmp_case("partial: names that are not UTF-8 come back byte for byte")
def _(d):
    raw = (b'{"traceEvents":[{"ph":"X","cat":"kernel","name":"bad\xff\xfe","pid":0,"tid":1,"ts":1,"dur":3},'
           b'{"ph":"X","cat":"kernel","name":"bad\xff\xfd","pid":0,"tid":1,"ts":5,"dur":4},'
           b'{"ph":"X","cat":"kernel","name":"ctl\\u0001\\n\\"","pid":0,"tid":1,"ts":9,"dur":1}]}')
    open(os.path.join(d, "raw.json"), "wb").write(raw)
    parts = partials(d, [["raw.json"]])
    for fmt in FORMATS:
        same(d, ["raw.json"], parts, *fmt)


results.finish()
