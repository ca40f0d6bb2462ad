"""End-to-end: `flagtrace advise --partial` / `--merge` give what one advise run gives
(the committed batch 8/16 pair as a two-rank job: stragglers reduced on the per-rank
results), bad partials refused in one line; `flagtrace diff A.json B.json` of two advise
results says which findings appeared, grew, shrank, stayed or went away (exact table
and JSON on hand-written results), a trace beside an advise result refused.

usage: test_advise_jobs.py FLAGTRACE DATA_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

FT, DATA = os.path.abspath(sys.argv[1]), sys.argv[2]
TMP = tempfile.mkdtemp(prefix="ft-advise-jobs-")
results = Results()
PAIR = [os.path.join(DATA, "batch8_torch_cuda.json.gz"), os.path.join(DATA, "batch16_torch_cuda.json.gz")]


def ft(*args, rc=0):
    r = subprocess.run([FT, *args], capture_output=True, text=True)
    assert r.returncode == rc, (args, r.returncode, r.stderr[-2000:])
    return r.stdout, r.stderr


def tmp(name):
    return os.path.join(TMP, name)


@results.case("advise --partial per file, --merge: the JSON and the table of one advise run over both")
def _():
    for i, p in enumerate(PAIR):
        ft("advise", "--partial", "-o", tmp(f"p{i}.json"), p)
    for fmt in ("json", "table", "csv"):
        want, _ = ft("advise", "-n", "0", "-f", fmt, *PAIR)
        got, _ = ft("advise", "--merge", "-n", "0", "-f", fmt, tmp("p0.json"), tmp("p1.json"))
        assert got == want, (fmt, got[:400], want[:400])
    doc = json.loads(want if fmt == "json" else ft("advise", "-n", "0", "-f", "json", *PAIR)[0])
    assert [f["rank"] for f in doc["files"]] == [0, 1], doc["files"]


@results.case("advise --partial over two files at once: one partial, two ranks, the same merge")
def _():
    ft("advise", "--partial", "-o", tmp("both.json"), *PAIR)
    doc = json.load(open(tmp("both.json")))
    assert doc["schema"] == 1 and doc["partial"] is True and len(doc["ranks"]) == 2, list(doc)
    assert [r["file"] for r in doc["ranks"]] == PAIR
    want, _ = ft("advise", "-n", "0", "-f", "json", *PAIR)
    assert ft("advise", "--merge", "-n", "0", "-f", "json", tmp("both.json"))[0] == want


@results.case("advise --merge refuses a trace, partials of other options, --partial with --merge (exit 2, one line)")
def _():
    _, err = ft("advise", "--merge", PAIR[0], rc=2)
    assert err.strip().endswith(PAIR[0] + ": a gzip file, not advice"), err
    ft("advise", "--partial", "--gap-us", "50", "-o", tmp("g50.json"), PAIR[1])
    _, err = ft("advise", "--merge", tmp("p0.json"), tmp("g50.json"), rc=2)
    assert err.strip() == f"flagtrace advise: {tmp('g50.json')}: advised with other options than the files before it", err
    _, err = ft("advise", "--partial", "--merge", tmp("p0.json"), rc=2)
    assert "--partial and --merge: one or the other" in err, err


def finding(rule, where, cost_us, count=1, share=0.1):
    return {"rule": rule, "rank": 0, "cost_us": cost_us, "share": share, "count": count, "where": where,
            "what": "w", "suggestion": "s", "occurrences": []}


A = {"schema": 1, "steps": [], "findings": [finding("sync", "cudaDeviceSynchronize", 100.0, 4),
                                            finding("gap", "aten::linear", 50.0), finding("fuse", "k1 k2 k3", 20.0),
                                            finding("step-start", "enumerate(DataLoader)", 10.0)]}
B = {"schema": 1, "steps": [], "findings": [finding("sync", "cudaDeviceSynchronize", 180.5, 8),
                                            finding("gap", "aten::linear", 30.0), finding("fuse", "k1 k2 k3", 20.5),
                                            finding("h2d-copy", "cudaMemcpy", 7.25)]}


@results.case("diff A.json B.json of two advise results: new, grew, shrank, same, gone (exact table)")
def _():
    for name, doc in (("a.json", A), ("b.json", B)):
        with open(tmp(name), "w") as f:
            json.dump(doc, f)
    out, _ = ft("diff", tmp("a.json"), tmp("b.json"))
    want = (f"advice A: {tmp('a.json')} (4 findings)\nadvice B: {tmp('b.json')} (4 findings)\n\n"
            "change  rule               A us/step      B us/step          delta  A count  B count  where\n"
            "new     h2d-copy                   -          7.250         +7.250        0        1  cudaMemcpy\n"
            "grew    sync                 100.000        180.500        +80.500        4        8  cudaDeviceSynchronize\n"
            "shrank  gap                   50.000         30.000        -20.000        1        1  aten::linear\n"
            "same    fuse                  20.000         20.500         +0.500        1        1  k1 k2 k3\n"
            "gone    step-start            10.000              -        -10.000        1        0  enumerate(DataLoader)\n")
    assert out == want, out


@results.case("diff -f json of two advise results, and analysis.diff() reading it")
def _():
    out, _ = ft("diff", "-f", "json", "--a", tmp("a.json"), "--b", tmp("b.json"))
    doc = json.loads(out)
    assert doc["schema"] == 1 and doc["compare"] == "advice", doc
    got = [(c["change"], c["rule"], c["delta_us"]) for c in doc["changes"]]
    assert got == [("new", "h2d-copy", 7.25), ("grew", "sync", 80.5), ("shrank", "gap", -20.0),
                   ("same", "fuse", 0.5), ("gone", "step-start", -10.0)], got
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    from flagtrace import analysis
    d = analysis.diff(tmp("a.json"), tmp("b.json"), exe=FT)
    assert [r["change"] for r in d.rows("changes")] == ["new", "grew", "shrank", "same", "gone"], d.reports


@results.case("diff of an advise result and a trace: exit 2, the trace named; two traces: diff as before")
def _():
    _, err = ft("diff", tmp("a.json"), PAIR[1], rc=2)
    assert err.strip() == f"flagtrace diff: {tmp('a.json')} is advise JSON, {PAIR[1]}: a gzip file, not advice", err
    out, _ = ft("diff", *PAIR)
    assert out.startswith("flagtrace diff: A is the baseline"), out[:200]
    # a pipe is never looked into for advice: diff's own read gets every byte of it
    r = subprocess.run(["bash", "-c", f'"{FT}" diff <(gzip -dc "{PAIR[0]}") "{PAIR[1]}"'], capture_output=True, text=True)
    assert r.returncode == 0 and re.sub(r"/dev/fd/\d+|/proc/self/fd/\d+", PAIR[0], r.stdout) == out, r.stderr


results.finish()
