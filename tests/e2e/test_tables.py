"""End-to-end: the CLI's tables at narrow widths (issue 52): the columns people need (Calls, totals)
outlast the spare ones, pairs and axes (Calls A/B, BlkX/Y/Z) go together, Input Dims cut by whole
entries, diff's --width and COLUMNS, new/gone kernels, -n without unchanged filler, --by-rank files
that claim one rank. The real binary on the committed traces, its output parsed."""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, on_pty  # noqa: E402

flagtrace, data = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
MEM = "torch_memory_h100.json.gz"  # ops with memory columns and nested Input Dims
B8, B16 = "batch8_flagtrace.json.gz", "batch16_flagtrace.json.gz"
WIDTHS = (80, 100, 120, 200)
results = Results()


def case(name):
    """results.case, any error a failure (a column missing raises ValueError or StopIteration)."""
    def wrap(fn):
        def checked():
            try:
                fn()
            except AssertionError:
                raise
            except Exception as e:  # noqa: BLE001
                raise AssertionError(f"{type(e).__name__}: {e}") from e
        return results.case(name)(checked)
    return wrap


def ft(*args, cwd=data):
    r = subprocess.run([*WRAP, flagtrace, *args], capture_output=True, text=True, cwd=cwd)
    assert r.returncode == 0, (args, r.stderr)
    return r


def tables(text):
    """{title: (header, rows, the "(not shown" line or None)}."""
    out, lines = {}, text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("== ") and i + 1 < len(lines) and lines[i + 1] != "(none)":
            j = i + 2
            while j < len(lines) and lines[j] and not lines[j].startswith("("):
                j += 1
            rest = lines[j] if j < len(lines) and lines[j].startswith("(not shown") or \
                re.match(r"\(\d+ columns? not shown", lines[j] if j < len(lines) else "") else None
            out[line[3:-3]] = (lines[i + 1], [x for x in lines[i + 2:j] if x and x != "  (none)"], rest)
    return out


def titles(header):
    """A header's column titles (they hold single spaces: 'Self CPU(us)', 'Calls A')."""
    return [t for t in re.split(r" (?=\S)|  +", header.strip()) if t]


def table(text, start):
    t = tables(text)
    key = next(k for k in t if k.startswith(start))
    return t[key]


def fits(text, width):
    over = [line for line in text.split("\n") if len(line) > width]
    assert not over, (width, over[:3])


def write_trace(d, name, ops, api=()):
    """ops {name: (calls, kernel us each)} in one step: each call a cpu_op, its launch, its kernel;
    api: the names of one extra runtime call each."""
    ev, ts, ext = [], 1000, 1
    for op, (calls, us) in ops.items():
        for _ in range(calls):
            ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts, "dur": 5,
                       "args": {"External id": ext}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": ts + 1, "dur": 2, "args": {"correlation": ext, "External id": ext}})
            ev.append({"ph": "X", "cat": "kernel", "name": op.replace("aten::", "k_"), "pid": 0, "tid": 7,
                       "ts": ts + 3, "dur": us, "args": {"correlation": ext, "External id": ext, "stream": 7,
                                                         "device": 0}})
            ts += 10 + us
            ext += 1
    for n in api:
        if n != "cudaLaunchKernel":
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": 3,
                       "args": {"correlation": 100000 + ts}})
            ts += 5
    p = os.path.join(d, name)
    with open(p, "w") as f:
        json.dump({"traceEvents": ev}, f)
    return p


OPS = "ops and ranges as key_averages"
SHAPES = "ops by input shapes"


@case("stats -r ops,ops_shapes: Calls and the totals survive 80 columns; spare columns go first")
def _():
    for w in WIDTHS:
        out = ft("stats", "-q", "-r", "ops,ops_shapes", "-n", "5", "--width", str(w), MEM).stdout
        fits(out, w)
        for start in (OPS, SHAPES):
            header = table(out, start)[0]
            have = header.replace("  ", " | ")
            for need in ("Self CPU(us)", "Self device(us)", "Calls", "Name"):
                assert need in have, (w, start, header)
            if start == SHAPES:
                assert "Input Dims" in header, (w, header)
    out = ft("stats", "-q", "-r", "ops", "-n", "5", "--width", "80", MEM).stdout
    header, rows, rest = table(out, OPS)
    assert header.split("  ")[0].split(" ") == ["Self", "CPU(us)", "Self", "device(us)", "Device", "total(us)",
                                                "Calls"], header
    assert [r.split()[3] for r in rows] == ["6", "9", "3", "6", "3"], rows
    # the spare ones went, the needed stayed: CPU total, averages and memory before Device total
    out = ft("stats", "-q", "-r", "ops_shapes", "-n", "5", "--width", "120", MEM).stdout
    header, _, rest = table(out, SHAPES)
    assert "Calls" in header and "Device total(us)" in header and "Self CUDA Mem" in header, header
    assert rest == "(not shown: CPU total(us) CPU avg(us) Device avg(us) Self dev/call(us) CUDA Mem; " \
                   "see --width, -f csv)", rest


def dims_cut_ok(cell, whole):
    """cell is whole, or whole's first entries kept whole with ",...]" for the rest (at any depth):
    balanced brackets, never a number or a list split by the cut."""
    if cell == whole:
        return True
    depth = 0
    for c in cell:
        depth += (c == "[") - (c == "]")
        if depth < 0:
            return False
    if depth or not cell.startswith("[") or not cell.endswith("]") or "..." not in cell:
        return False
    pieces = cell.split("...")
    if not all(p.endswith(("[", ",")) for p in pieces[:-1]) or not all(p.startswith("]") for p in pieces[1:]):
        return False
    # each piece before a "..." is a start of the list it is in, up to a whole entry
    at = 0
    for p in pieces[:-1]:
        if not whole.startswith(p.rstrip(","), at) and not whole.startswith(p, at):
            return False
        # the rest of the list the cut is in: skip to its end in whole
        at += len(p.rstrip(","))
        depth = 1
        while depth and at < len(whole):
            depth += (whole[at] == "[") - (whole[at] == "]")
            at += 1
        at -= 1
    return True


@case("stats -r ops_shapes: Input Dims cut by whole entries, brackets balanced, at every width")
def _():
    for name in (MEM, "batch8_torch_cuda.json.gz", "torch_cuda_2.11_reference.json.gz"):
        rows = json.loads(ft("stats", "-q", "-f", "json", "-r", "ops_shapes", "-n", "8", name).stdout)["ops_shapes"]
        for w in (80, 100, 120):
            out = ft("stats", "-q", "-r", "ops_shapes", "-n", "8", "--width", str(w), name).stdout
            fits(out, w)
            header, trows, _ = table(out, SHAPES)
            at, nat = header.index("  Input Dims") + 2, header.index("  Name") + 2
            assert len(trows) == len(rows), (name, w)
            for tr, jr in zip(trows, rows):
                cell = tr[at:nat].rstrip()
                assert dims_cut_ok(cell, jr["input_dims"]), (name, w, cell, jr["input_dims"])
    # the nested one of torch_memory_h100: its first list kept whole where room allows
    out = ft("stats", "-q", "-r", "ops_shapes", "-n", "4", "--width", "80", MEM).stdout
    header, trows, _ = table(out, SHAPES)
    at = header.index("  Input Dims") + 2
    got = [r[at:].split("  ")[0] for r in trows]
    assert got == ["[[10], [64, 1024],...]", "[[1024], [64, 512],...]", "[[[1024, 512],...],...]",
                   "[[64, 10], [10, 1024]]"], got


@case("stats -r trace: grid and block columns go together (never BlkX dropped with BlkY/BlkZ kept)")
def _():
    for name in ("sample_h200.json.gz", MEM):
        for w in range(60, 161, 4):
            out = ft("stats", "-q", "-r", "trace", "-n", "4", "--width", str(w), name).stdout
            fits(out, w)
            cols = titles(table(out, "device events")[0])
            for fam in (["GrdX", "GrdY", "GrdZ"], ["BlkX", "BlkY", "BlkZ"]):
                assert sum(c in cols for c in fam) in (0, 3), (name, w, cols)
            assert "Name" in cols and "Kind" in cols and "Dur(us)" in cols, (name, w, cols)


PAIRS = [("Calls A", "Calls B"), ("Cnt A", "Cnt B"), ("Dev A(us)", "Dev B(us)"), ("CPU A(us)", "CPU B(us)"),
         ("Mean A(us)", "Mean B(us)"), ("Bytes A", "Bytes B"), ("GB/s A", "GB/s B"), ("A(us)", "B(us)"),
         ("Ops A", "Ops B"), ("Kern A", "Kern B"), ("A#", "B#")]


def has_col(header, title):
    """Whether the header has a column of that title (titles hold spaces: a match between separators)."""
    return re.search(r"(?:^| )" + re.escape(title) + r"(?= |$)", header) is not None


def diff(*args, **kw):
    return ft("diff", "-q", *args, **kw)


@case("diff --width N: every line fits; the kernels table's 105 columns at 80 fit; A and B columns in pairs")
def _():
    for w in WIDTHS:
        out = diff("-n", "5", "--width", str(w), B8, B16).stdout
        fits(out, w)
        t = tables(out)
        assert len(t) == 6, list(t)  # unmatched: (none)
        for title, (header, rows, rest) in t.items():
            for x, y in PAIRS:
                assert has_col(header, x) == has_col(header, y), (w, title, header, x, y)
        api = table(out, "runtime and driver calls")[0]
        assert has_col(api, "Calls A") and has_col(api, "Calls B") and has_col(api, "Name"), (w, api)
        kern = table(out, "kernels of each op")[0]
        assert kern.startswith("Cnt A Cnt B ") and re.search(r" B/A\b.*  Op +Kernel$", kern), (w, kern)
        assert all(has_col(kern, c) for c in ("A(us)", "B(us)")), (w, kern)
    h = ft("diff", "--help").stdout
    assert "--width N" in h, h
    r = subprocess.run([*WRAP, flagtrace, "diff", "--width", "19", B8, B16], capture_output=True, text=True, cwd=data)
    assert r.returncode == 2 and "--width takes a width from 20" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def on_terminal(args, cols, env):
    """stdout a pty of cols columns (0: one that gives no size): what the command wrote there."""
    return on_pty([*WRAP, flagtrace, *args], cols, env, data)


@case("diff on a terminal: its width, else COLUMNS where it gives none, as stats does; --by-step too")
def _():
    env = dict(os.environ, COLUMNS="80")
    for args in (["diff", "-q", "-n", "5", B8, B16], ["diff", "-q", "--by-step", "-n", "3", B8, B16]):
        fits(on_terminal(args, 0, env), 80)
        fits(on_terminal(args, 100, env), 100)
        wide = on_terminal(args, 0, dict(os.environ, COLUMNS="300"))
        assert max(len(line) for line in wide.split("\n")) > 100, args
    fits(on_terminal(["diff", "-q", "--width", "90", B8, B16], 200, env), 90)  # --width wins


@case("diff: a kernel only in B reads new, only in A gone (table); csv an empty ratio, json null; 'only' A/B")
def _():
    out = diff("-n", "0", B8, B16).stdout
    header, rows, _ = table(out, "kernels of each op")
    at = header.index("  B/A")
    ratio = {(r[header.index("  Op") + 2:].split("  ")[0].strip(), r[header.index("Kernel"):]):
             r[at:at + 5].strip() for r in rows}
    doc = json.loads(diff("-f", "json", "-n", "0", B8, B16).stdout)
    csvk = list(csv.DictReader(io.StringIO(diff("-f", "csv", "-n", "0", B8, B16).stdout.split("# kernels\n")[1]
                                           .split("\n\n")[0])))
    assert len(doc["kernels"]) == len(csvk) == len(rows)
    seen = {"new": 0, "gone": 0}
    for k, c in zip(doc["kernels"], csvk):
        word = ratio[(k["op"], k["kernel"])]
        if k["count_a"] and k["count_b"]:
            assert k["only"] is None and c["only"] == "" and float(c["ratio"]) == k["ratio"], (k, c)
            assert word == "%.3f" % k["ratio"], (word, k)
        else:
            side = "B" if k["count_b"] else "A"
            assert k["ratio"] is None and k["only"] == side and c["ratio"] == "" and c["only"] == side, (k, c)
            assert word == ("new" if side == "B" else "gone"), (word, k)
            seen[word] += 1
    assert seen == {"new": 2, "gone": 2}, seen
    # the api and copies reports: the same rule (none of the batch pair's calls is one-sided: a made pair)
    with tempfile.TemporaryDirectory() as d:
        a = write_trace(d, "a.json", {"aten::mm": (10, 10)}, api=["cudaLaunchKernel", "cudaMalloc"])
        b = write_trace(d, "b.json", {"aten::mm": (10, 12)}, api=["cudaLaunchKernel", "cudaFree"])
        doc = json.loads(diff("-f", "json", "-n", "0", a, b, cwd=d).stdout)
        got = {x["name"]: (x["ratio"], x["only"]) for x in doc["api"]}
        assert got["cudaMalloc"] == (None, "A") and got["cudaFree"] == (None, "B"), got
        assert got["cudaLaunchKernel"][1] is None and got["cudaLaunchKernel"][0] is not None, got
        header, rows, _ = table(diff(a, b, cwd=d).stdout, "runtime and driver calls")
        at = header.index("  B/A")
        words = {r.split()[-1]: r[at:at + 5].strip() for r in rows}
        assert words["cudaMalloc"] == "gone" and words["cudaFree"] == "new", words


@case("diff -n N: only ops that grew or shrank, never unchanged ones padding the improvements")
def _():
    with tempfile.TemporaryDirectory() as d:
        base = {f"aten::op{i}": (2, 10) for i in range(6)}
        slower = dict(base, **{"aten::op0": (2, 30), "aten::op1": (2, 20), "aten::op2": (2, 5)})
        a, b = write_trace(d, "a.json", base), write_trace(d, "b.json", slower)
        for n, want in (("2", ["aten::op0", "aten::op1", "aten::op2"]), ("1", ["aten::op0", "aten::op2"]),
                        ("5", ["aten::op0", "aten::op1", "aten::op2"])):
            doc = json.loads(diff("-f", "json", "-n", n, a, b, cwd=d).stdout)
            assert [o["name"] for o in doc["ops"]] == want, (n, doc["ops"])
            assert sorted({k["op"] for k in doc["kernels"]}) == sorted(want), (n, doc["kernels"])
            _, rows, _ = table(diff("-n", n, a, b, cwd=d).stdout, "ops, A vs B")
            assert [r.split()[-1] for r in rows] == want, (n, rows)
        # -n 0: every op, the unchanged too
        doc = json.loads(diff("-f", "json", "-n", "0", a, b, cwd=d).stdout)
        assert len(doc["ops"]) == 6, doc["ops"]


@case("stats --by-rank: two files that claim rank 0 get a File column (csv/json 'file'); one warning")
def _():
    with tempfile.TemporaryDirectory() as d:
        for n in ("a.json.gz", "b.json.gz"):  # workload_h200's distributedInfo says rank 0
            shutil.copy(os.path.join(data, "workload_h200.json.gz"), os.path.join(d, n))
        r = ft("stats", "--by-rank", "-r", "kernels,ops", "-n", "2", "--width", "120", "a.json.gz", "b.json.gz",
               cwd=d)
        assert r.stderr.count("files claim the same rank") == 1, r.stderr
        for start in ("GPU kernels", OPS):
            header, rows, _ = table(r.stdout, start)
            assert titles(header)[:2] == ["Rank", "File"], header
            assert [x.split()[:2] for x in rows] == [["0", "a.json.gz"]] * 2 + [["0", "b.json.gz"]] * 2, rows
        doc = json.loads(ft("stats", "-q", "--by-rank", "-f", "json", "-r", "kernels", "-n", "1", "a.json.gz",
                            "b.json.gz", cwd=d).stdout)
        assert [(k["rank"], k["file"]) for k in doc["kernels"]] == [(0, "a.json.gz"), (0, "b.json.gz")], doc
        # ranks apart: no File column, as before
        doc = json.loads(ft("stats", "-q", "--by-rank", "-f", "json", "-r", "kernels", "-n", "1", "a.json.gz",
                            cwd=d).stdout)
        assert "file" not in doc["kernels"][0], doc["kernels"][0]


sys.exit(results.finish())
