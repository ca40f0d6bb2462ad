"""End-to-end (issue 52): inputs that are not traces get one line saying what they look like and
what flagtrace reads (SQLite, an nsys report, protobuf, gzip of something else, text, HTML, an empty
file) from stats, diff, report and advise, while a trace's own errors keep their byte offset; an
unknown -r name gets the nearest names; a directory's files that are not traces are skipped with a
note each and its traces read (stats, diff, advise, report), and report reads directories.
usage: test_not_traces.py FLAGTRACE DATA_DIR"""
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

flagtrace, data = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
SAMPLE, WORKLOAD = os.path.join(data, "sample_h200.json.gz"), os.path.join(data, "workload_h200.json.gz")
TODO = "flagtrace reads Chrome JSON traces (.json, .json.gz), as flagtrace record, torch.profiler and kineto write them"
results = Results()
case, tmp_case = results.case, results.tmp_case


def ft(*args, **kw):
    return subprocess.run([*WRAP, flagtrace, *args], capture_output=True, text=True, **kw)


def write(d, name, content):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode())
    return p


def sqlite_db(d, name):
    p = os.path.join(d, name)
    c = sqlite3.connect(p)
    c.execute("CREATE TABLE t (x)")
    c.commit()
    c.close()
    return p


def not_traces(d):
    """name -> (path, what the line says it is)"""
    return {
        "sqlite": (sqlite_db(d, "report.sqlite"), "an SQLite database (nsys export --type sqlite?)"),
        "nsys": (write(d, "run.nsys-rep", b"\x00\x01\x02nsys\xff\xfe" * 8),
                 "an Nsight Systems report (nsys's own format; record with flagtrace record)"),
        "protobuf": (write(d, "trace.pftrace", b"\x0a\x05hello\x12\x03abc\x00"),
                     "binary data, protobuf by its look (a Perfetto trace?)"),
        "gzip": (write(d, "log.json.gz", gzip.compress(b"hello world\nsecond line\n")),
                 'gzip data holding text, not JSON (it begins "hello world")'),
        "readme": (write(d, "README.md", "# flagtrace\n\nA profiler.\n"), 'text, not JSON (it begins "# flagtrace")'),
        "html": (write(d, "report.html", "<!DOCTYPE html>\n<html></html>\n"),
                 "HTML or XML (a report? flagtrace report writes HTML, it reads JSON)"),
        "zstd": (write(d, "t.json.zst", b"\x28\xb5\x2f\xfd" + b"\x00" * 20), "zstd data (decompress it first: zstd -d)"),
        "empty": (write(d, "empty.json", b""), "an empty file (was its writer still running, or stopped?)"),
    }


@tmp_case("stats: each input that is not a trace: one line, what it looks like and what is read, status 2")
def _(d):
    for kind, (p, what) in not_traces(d).items():
        r = ft("stats", p)
        assert (r.returncode, r.stdout) == (2, ""), (kind, r)
        assert r.stderr == f"flagtrace stats: {p}: {what}, not a trace: {TODO}\n", (kind, r.stderr)
    r = ft("stats", "-", input="")  # stdin has no file name: "empty input"
    assert r.stderr == f"flagtrace stats: -: empty input, not a trace: {TODO}\n", r.stderr


@tmp_case("diff, report, advise: the same line for an input that is not a trace")
def _(d):
    kinds = not_traces(d)
    for kind in ("sqlite", "readme", "protobuf"):
        p, what = kinds[kind]
        line = f"{p}: {what}, not a trace: {TODO}\n"
        r = ft("diff", SAMPLE, p)
        assert (r.returncode, r.stderr) == (2, f"flagtrace diff: B: {line}"), (kind, r)
        r = ft("report", "-o", os.path.join(d, "out.html"), p)
        assert (r.returncode, r.stderr) == (2, f"flagtrace report: {line}"), (kind, r)
        assert not os.path.exists(os.path.join(d, "out.html"))
        r = ft("advise", p)
        assert (r.returncode, r.stderr) == (2, f"flagtrace advise: {line}"), (kind, r)


@tmp_case("a trace's own errors keep their place (JSON that starts as a trace is not sniffed)")
def _(d):
    r = ft("stats", write(d, "bad.json", '{"traceEvents": [{"ph": "X",}]}'))
    assert r.returncode == 2 and r.stderr.endswith("expected a string key at byte 28\n") and "not a trace" not in r.stderr, r.stderr
    r = ft("stats", write(d, "other.json", '{"schemaVersion": 1}'))
    assert r.stderr == f"flagtrace stats: {d}/other.json: no \"traceEvents\" array: not a Chrome trace\n", r.stderr
    r = ft("stats", "-q", "-f", "json", SAMPLE)
    assert r.returncode == 0 and json.loads(r.stdout)["events"] == 139, r


@case("stats -r: an unknown name gets the nearest names; none when none is near")
def _():
    tail = ("; it takes a comma-separated subset of kernels,api,memops,memsize,ranges,gpu_ranges,ops,ops_shapes,"
            "ops_modules,gpu,ranks,trace,temporal,overlap,launch,queue,memory,advice or nsys's names (--help) "
            "(see flagtrace stats --help)\n")
    for given, bad, near in (("kernals", "kernals", " (did you mean 'kernels'?)"),
                             ("kernels,opps", "opps", " (did you mean 'ops'?)"),
                             ("kern", "kern", " (did you mean 'kernels'?)"),
                             ("ops_shape", "ops_shape", " (did you mean 'ops_shapes'?)"),
                             ("cuda_api_summ", "cuda_api_summ", " (did you mean 'cuda_api_sum'?)"),
                             ("memsiz", "memsiz", " (did you mean 'memsize'?)"),
                             ("xyz", "xyz", "")):
        r = ft("stats", "-r", given, SAMPLE)
        assert r.returncode == 2 and r.stdout == "", r
        assert r.stderr == f"flagtrace stats: --report: no report named '{bad}'{near}{tail}", (given, r.stderr)
    r = ft("stats", "-r", "mem", SAMPLE)  # the renamed report's own hint, not three guesses
    assert "(device memory is -r memory now; copies and sets by time are -r memops); it takes" in r.stderr, r.stderr


def job_dir(d):
    """A directory of two traces and three files that are not traces: the notes they get, sorted by name."""
    j = os.path.join(d, "job")
    os.mkdir(j)
    shutil.copy(SAMPLE, os.path.join(j, "rank0.json.gz"))
    shutil.copy(WORKLOAD, os.path.join(j, "rank1.json.gz"))
    write(j, "config.json", '{"lr": 0.1, "batch": 16, "steps": [1, 2], "model": {"d": 1}}')
    sqlite_db(j, "nsys.json")
    write(j, "notes.json", "see the run log\n")
    write(j, "README.md", "# not listed: not .json\n")
    notes = [f'note: skipped {j}/config.json: JSON, not a trace: an object without "traceEvents" (keys "lr", '
             f'"batch", "steps")',
             f"note: skipped {j}/notes.json: text, not JSON (it begins \"see the run log\"), not a trace",
             f"note: skipped {j}/nsys.json: an SQLite database (nsys export --type sqlite?), not a trace"]
    return j, notes


@tmp_case("stats DIR: the traces read, each file that is not a trace named in a note and skipped")
def _(d):
    j, notes = job_dir(d)
    r = ft("stats", "-f", "json", "-r", "kernels", j)
    assert r.returncode == 0, r
    got = json.loads(r.stdout)
    alone = json.loads(ft("stats", "-q", "-f", "json", "-r", "kernels", SAMPLE, WORKLOAD).stdout)
    assert [f["file"] for f in got["files"]] == [f"{j}/rank0.json.gz", f"{j}/rank1.json.gz"], got["files"]
    assert got["events"] == alone["events"] and got["kernels"] == alone["kernels"]
    lines = r.stderr.splitlines()
    assert lines[:3] == [f"flagtrace stats: {n}" for n in notes], r.stderr
    r = ft("stats", "-q", "-r", "kernels", j)  # -q: errors only
    assert r.returncode == 0 and r.stderr == "", r


@tmp_case("diff, advise and report on a directory: its traces, the same notes")
def _(d):
    j, notes = job_dir(d)
    r = ft("diff", "-f", "json", j, j)
    assert r.returncode == 0, r
    lines = r.stderr.splitlines()
    assert lines[:3] == [f"flagtrace diff: A: {n}" for n in notes], r.stderr
    assert [x for x in lines if x.startswith("flagtrace diff: B: note: skipped")] == \
        [f"flagtrace diff: B: {n}" for n in notes], r.stderr
    r = ft("advise", "-f", "json", j)
    assert r.returncode == 0, r
    assert r.stderr.splitlines()[:3] == [f"flagtrace advise: {n}" for n in notes], r.stderr
    assert len(json.loads(r.stdout)["files"]) == 2, r.stdout[:300]
    out = os.path.join(d, "r.html")
    r = ft("report", "-o", out, j)
    assert r.returncode == 0 and r.stdout == f"flagtrace report: wrote {out}\n", r
    assert r.stderr.splitlines()[:3] == [f"flagtrace report: {n}" for n in notes], r.stderr
    page = open(out).read()
    assert "rank0.json.gz" in page and "rank1.json.gz" in page and "config.json" not in page
    r = ft("report", "-o", os.path.join(d, "ab.html"), "--a", j, "--b", SAMPLE)
    assert r.returncode == 0, r


@tmp_case("a directory of files that are not traces: one line naming the first; stats --merge reads partials")
def _(d):
    j = os.path.join(d, "none")
    os.mkdir(j)
    write(j, "b.json", '{"x": 1}')
    write(j, "a.json", "")
    r = ft("report", "-o", os.path.join(d, "r.html"), j)
    assert r.returncode == 2 and r.stderr == (
        f"flagtrace report: {j}: no trace in the directory, 2 files not one ({j}/a.json: an empty file (was its "
        "writer still running, or stopped?), not a trace)\n"), r.stderr
    p = os.path.join(d, "parts")
    os.mkdir(p)
    for i, t in enumerate((SAMPLE, WORKLOAD)):  # partial summaries are JSON without "traceEvents": read, not skipped
        write(p, f"p{i}.json", ft("stats", "--partial", t).stdout)
    r = ft("stats", "--merge", "-q", "-f", "json", "-r", "kernels", p)
    alone = json.loads(ft("stats", "-q", "-f", "json", "-r", "kernels", SAMPLE, WORKLOAD).stdout)
    assert r.returncode == 0 and json.loads(r.stdout)["kernels"] == alone["kernels"], r


results.finish()
