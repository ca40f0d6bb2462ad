"""End-to-end: `flagtrace stats` tables that fit 80/100/120 columns (--width and a terminal), and nsys's
habits (report names, --timeunit, -f tsv, -o -, -q, a directory of traces)."""
import csv
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, on_pty  # noqa: E402

flagtrace, data = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
TRACES = ["torch_cuda_2.11_reference.json.gz", "workload_h200.json.gz", "sample_h200.json.gz"]
TORCH = os.path.join(data, TRACES[0])
WIDTHS = (80, 100, 120)
results = Results()
case = results.case


def stats(*args, **kw):
    return subprocess.run([*WRAP, flagtrace, "stats", *args], capture_output=True, text=True, **kw)


def write(d, name, content):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode())
    return p


def kernel(ts, dur, name="k", pid=0, cat="kernel", **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": 7, "args": args}


def trace(events):
    return json.dumps({"traceEvents": events})


def reports():
    """Every report --help lists (the lines of -r's list), so that new ones are checked too."""
    text = stats("--help").stdout
    block = text.split("-r, --report LIST")[1].split("\n  -")[0]
    return [line.split()[0] for line in block.splitlines()[1:] if line.startswith(" " * 24) and line[24] != " "]


def on_terminal(args, cols, env=None):
    """stdout a pty of cols columns (0: one that gives no size): what the command wrote there."""
    return on_pty([*WRAP, flagtrace, "stats", *args], cols, env)


def tables(text):
    """{title: (header, rows, lines after the rows)} of a table output."""
    out, lines = {}, text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("== "):
            j = i + 2
            while j < len(lines) and lines[j] and not lines[j].startswith("("):
                j += 1
            if lines[i + 2:j] == ["  (none)"]:
                lines[i + 2] = ""
            rest = [x for x in lines[j:] if x.startswith("(")][:1]
            out[line] = (lines[i + 1], [x for x in lines[i + 2:j] if x], rest)
    return out


def shown(s):
    """A name as the table shows it: control characters escaped."""
    def esc(c):
        if c in "\n\r\t":
            return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[c]
        if ord(c) < 0x20 or ord(c) == 0x7F:
            return "\\x%02x" % ord(c)
        if 0x80 <= ord(c) <= 0x9F:
            return "\\u%04x" % ord(c)
        return c
    return "".join(esc(c) for c in s)


def escapes(whole):
    """The (start, end) of each escape in a shown name."""
    import re
    return [m.span() for m in re.finditer(r"\\(?:[nrt]|x[0-9a-f]{2}|u[0-9a-f]{4})", whole)]


def is_elision(cut, whole):
    """cut reads as whole with parts left out: its pieces between "..." are, in order, the start, middle
    parts and the end of whole, and no cut falls inside an escape."""
    pieces = cut.split("...")
    if len(pieces) == 1:
        return cut == whole
    if not (whole.startswith(pieces[0]) and whole.endswith(pieces[-1])):
        return False
    at, cuts = len(pieces[0]), [len(pieces[0]), len(whole) - len(pieces[-1])]
    for p in pieces[1:-1]:
        at = whole.find(p, at)
        if at < 0:
            return False
        cuts += [at, at + len(p)]
        at += len(p)
    inside = [c for c in cuts for a, b in escapes(whole) if a < c < b]
    return at <= len(whole) - len(pieces[-1]) and not inside


def check_fit(text, width, want, what):
    """Lines fit width; the name column of each report reads as its rows' names, distinct where they are."""
    over = [line for line in text.split("\n") if len(line) > width]
    assert not over, (what, width, over[:3])
    got = tables(text)
    for key, names in want.items():
        title = next((t for t in got if key_of(t) == key), None)
        if title is None or None in names or not names:  # no table, a table without names, or no rows
            continue
        header, rows, _ = got[title]
        col = max(header.rfind("  Name"), header.rfind("  File")) + 2
        assert col >= 2 and len(rows) == len(names), (what, key, header, len(rows), len(names))
        cells = [row[col:] for row in rows]
        for c, n in zip(cells, names):
            assert is_elision(c, shown(n)), (what, width, key, c, n[:200])
        distinct = {}
        for c, n in zip(cells, names):
            assert distinct.setdefault(c, n) == n, (what, width, key, f"{c!r} is {n[:80]!r} and {distinct[c][:80]!r}")


TITLES = {}


def key_of(title):
    return TITLES.get(title)


def json_names(args):
    r = stats("-f", "json", *args)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    out = {}
    for k, rows in got.items():
        if isinstance(rows, list) and k != "files":
            out[k] = [x.get("name", x.get("file")) for x in rows]
    return out


def learn_titles(path):
    """Which title is which report (one --report at a time)."""
    for rep in reports():
        r = stats("-r", rep, path)
        for line in r.stdout.splitlines():
            if line.startswith("== "):
                TITLES[line] = rep


learn_titles(os.path.join(data, "sample_h200.json.gz"))
EVERY = ",".join(reports())


@case("stats tables: at 80, 100 and 120 columns (--width) no line is wider; names distinct; every report")
def _():
    for name in TRACES:
        path = os.path.join(data, name)
        want = json_names(["-r", EVERY, path])
        for w in WIDTHS:
            r = stats("-r", EVERY, "--width", str(w), path)
            assert r.returncode == 0, r.stderr
            check_fit(r.stdout, w, want, name)


@case("stats tables: on a terminal of 80, 100 and 120 columns (a pty), lines fit it; COLUMNS when it gives no size")
def _():
    want = json_names(["-r", EVERY, TORCH])
    for w in WIDTHS:
        check_fit(on_terminal(["-r", EVERY, TORCH], w), w, want, f"pty {w}")
    env = dict(os.environ, COLUMNS="70")
    check_fit(on_terminal(["-r", EVERY, TORCH], 0, env), 70, want, "COLUMNS=70")
    # --width wins over the terminal's
    check_fit(on_terminal(["-r", "kernels", "--width", "80", TORCH], 200), 80, {"kernels": want["kernels"]}, "pty 200")


@case("stats tables: piped or written to a file: whole names, every column; --width cuts them there too")
def _():
    want = json_names(["-r", EVERY, TORCH])
    r = stats("-r", EVERY, TORCH)
    got = tables(r.stdout)
    assert r.returncode == 0 and len(got) == len(want), (r.stderr, list(got))
    for title, (header, rows, rest) in got.items():
        names = want[key_of(title)]
        col = max(header.rfind("  Name"), header.rfind("  File")) + 2
        if None not in names:  # a table of names or files
            assert [row[col:] for row in rows] == [shown(n) for n in names], title
        assert not rest, (title, rest)  # nothing left out
    kern = got[next(t for t in got if key_of(t) == "kernels")][0].split()
    assert kern == ["Time(%)", "Total(us)", "Calls", "Avg(us)", "Med(us)", "Min(us)", "Max(us)", "StdDev(us)", "Name"]
    assert max(len(line) for line in r.stdout.splitlines()) > 5000  # the 5050-character torch name, whole
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.txt")
        assert stats("-r", "kernels", "-o", out, TORCH).returncode == 0
        assert open(out).read() == stats("-r", "kernels", TORCH).stdout
    r = stats("-r", "kernels", "--width", "80", TORCH)
    assert max(len(line) for line in r.stdout.splitlines()) <= 80


@case("stats tables: columns sized by content; left out StdDev, Min, Max, Med first, named under the table")
def _():
    r = stats("-r", "kernels", "--width", "80", TORCH)
    header, rows, rest = tables(r.stdout)["== GPU kernels =="]
    assert header.split() == ["Time(%)", "Total(us)", "Calls", "Avg(us)", "Name"], header
    assert rest == ["(not shown: Med(us) Min(us) Max(us) StdDev(us); see --width, -f csv)"], rest
    # the name column takes what is left: 80 less the four columns kept, less its two spaces
    assert max(len(row) for row in rows) == 80 and header.index("Name") == 80 - 47, (header, rows)
    header, _, rest = tables(stats("-r", "kernels", "--width", "100", TORCH).stdout)["== GPU kernels =="]
    assert header.split()[-2:] == ["Max(us)", "Name"] and rest == ["(not shown: StdDev(us); see --width, -f csv)"]
    header, _, rest = tables(stats("-r", "kernels", "--width", "120", TORCH).stdout)["== GPU kernels =="]
    assert "StdDev(us)" in header and not rest
    # csv keeps every column and whole names
    got = list(csv.DictReader(io.StringIO(stats("-f", "csv", "-r", "kernels", "--width", "80", TORCH).stdout)))
    assert "stddev_us" in got[0] and max(len(x["name"]) for x in got) == 5050


TORCH_NAMES = None


def torch_names():
    global TORCH_NAMES
    if TORCH_NAMES is None:
        TORCH_NAMES = json_names(["-r", "kernels", TORCH])["kernels"]
    return TORCH_NAMES


@case("stats tables: names that read the same elided are kept apart (real torch names, a middle difference)")
def _():
    base = torch_names()
    names = list(base)
    for n in base:  # variants of the real names: a character changed at the end, a third in, the middle
        for at in (len(n) - 2, len(n) // 3, len(n) // 2):
            v = n[:at] + ("Q" if n[at] != "Q" else "R") + n[at + 1:]
            if v not in names:
                names.append(v)
    with tempfile.TemporaryDirectory() as d:
        p = write(d, "t.json", trace([kernel(i * 10, 1 + i % 7, name=n) for i, n in enumerate(names)]))
        want = json_names(["-r", "kernels", p])
        assert len(set(want["kernels"])) == len(names)
        for w in (40, 60, *WIDTHS):
            r = stats("-r", "kernels", "--width", str(w), p)
            check_fit(r.stdout, w if w >= 50 else 10 ** 6, want, f"variants {w}")
        r = stats("-r", "kernels", "-w", "30", p)  # --name-width alone: the same cut, to 30
        _, rows, _ = tables(r.stdout)["== GPU kernels =="]
        assert max(len(row.split("  ")[-1]) for row in rows if "..." in row) <= 30


@case("stats tables: UTF-8 names are cut by characters; control characters stay escaped, an escape never split")
def _():
    names = ["caf\u00e9_" * 30 + "end1", "caf\u00e9_" * 30 + "end2", "k\x1b[2J" * 20 + "\x1b]0;pwn\x07",
             "tab\t" * 30 + "x", "\u4e2d\u6587" * 40]
    with tempfile.TemporaryDirectory() as d:
        p = write(d, "t.json", trace([kernel(i * 10, 10 - i, name=n) for i, n in enumerate(names)]))
        want = json_names(["-r", "kernels", p])
        for w in WIDTHS:
            r = subprocess.run([*WRAP, flagtrace, "stats", "-r", "kernels", "--width", str(w), p], capture_output=True)
            text = r.stdout.decode("utf-8")  # valid UTF-8: no character cut in two
            assert not [c for c in text if ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) <= 0x9f], repr(text)
            check_fit(text, w, want, f"utf-8 {w}")
            # a cut name fills its column, counted in characters (an escape may leave a few short)
            _, rows, _ = tables(text)["== GPU kernels =="]
            cut = [row for row in rows if "..." in row and "\\" not in row]
            assert len(cut) == 3 and all(len(row) == w for row in cut), (w, rows)


@case("stats --width/--name-width: values refused in one line")
def _():
    for args, text in ((["--width", "19", TORCH], "--width takes a width from 20"),
                       (["--width", "x", TORCH], "--width takes"), (["-w", "3", TORCH], "--name-width takes")):
        r = stats(*args)
        assert r.returncode == 2 and text in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


# ---- nsys habits ----

@case("stats: nsys's report names are the reports (json keys and csv files keep flagtrace's names)")
def _():
    for alias, rep in (("cuda_gpu_kern_sum", "kernels"), ("cuda_api_sum", "api"), ("cuda_gpu_mem_time_sum", "memops"),
                       ("cuda_gpu_mem_size_sum", "memsize"), ("nvtx_sum", "ranges"), ("nvtx_gpu_proj_sum", "gpu_ranges"),
                       ("cuda_gpu_trace", "trace")):
        p = os.path.join(data, "sample_h200.json.gz")
        a, b = stats("-f", "json", "-r", alias, p), stats("-f", "json", "-r", rep, p)
        assert a.returncode == 0 and a.stdout == b.stdout and json.loads(a.stdout)[rep], (alias, a.stderr)
    r = stats("-f", "json", "-r", "cuda_gpu_kern_sum,cuda_api_sum", p)
    assert list(json.loads(r.stdout))[-2:] == ["kernels", "api"], r.stdout[:200]
    r = stats("-r", "cuda_gpu_kern_sum,nope", p)  # the one name that is wrong, not the whole list
    assert r.returncode == 2 and r.stderr.startswith("flagtrace stats: --report: no report named 'nope'; it takes "), r.stderr
    assert "cuda_gpu_kern_sum,nope" not in r.stderr and r.stderr.count("\n") == 1, r.stderr


@case("stats --timeunit: keys and titles name the unit, values exact to the ns; us is the default, byte for byte")
def _():
    base = stats("-f", "json", "-r", EVERY, TORCH).stdout
    assert stats("-f", "json", "-r", EVERY, "--timeunit", "us", TORCH).stdout == base
    assert stats("--timeunit=us", TORCH).stdout == stats(TORCH).stdout
    assert stats("-f", "csv", "--timeunit", "us", TORCH).stdout == stats("-f", "csv", TORCH).stdout
    ref = json.loads(base)
    for unit, per_us, digits in (("ns", 1000, 0), ("ms", 1e-3, 6), ("s", 1e-6, 9)):
        r = stats("-f", "json", "-r", EVERY, "--timeunit", unit, TORCH)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        assert got["files"] == ref["files"]  # the header keeps span_us
        for rep, rows in ref.items():
            if not isinstance(rows, list) or rep == "files":
                continue
            for a, b in zip(rows, got[rep]):
                for k, v in a.items():
                    if "_us" in k.replace("_us_", "_us") and (k.endswith("_us") or "_us_" in k):
                        k2 = k.replace("_us", "_" + unit, 1)  # to the ns; an average's last digit may round apart
                        assert k2 in b and abs(b[k2] / per_us * 1000 - v * 1000) <= 1.0001, (unit, rep, k, v, b.get(k2))
                    else:
                        assert b[k] == v, (unit, rep, k)
        r = stats("-f", "csv", "-r", "kernels", "--timeunit", unit, TORCH)
        assert r.stdout.splitlines()[0] == ",".join(
            ["time_pct", f"total_{unit}", "calls", f"avg_{unit}", f"median_{unit}", f"min_{unit}", f"max_{unit}",
             f"stddev_{unit}", "name"]), r.stdout[:200]
        row = r.stdout.splitlines()[1].split(",")
        assert len(row[1].split(".")[1]) == digits if digits else "." not in row[1], row
        header = tables(stats("-r", "kernels", "--timeunit", unit, TORCH).stdout)["== GPU kernels =="][0]
        assert f"Total({unit})" in header and f"StdDev({unit})" in header, header
    r = stats("--timeunit", "h", TORCH)
    assert r.returncode == 2 and "--timeunit takes ns, us, ms or s, not 'h'" in r.stderr and r.stderr.count("\n") == 1


@case("stats -f tsv: csv's columns, tab-separated, names escaped not quoted; -o PREFIX writes PREFIX_*.tsv")
def _():
    c = list(csv.reader(io.StringIO(stats("-f", "csv", "-r", "kernels", TORCH).stdout)))
    t = [line.split("\t") for line in stats("-f", "tsv", "-r", "kernels", TORCH).stdout.splitlines()]
    assert t == c, (t[:2], c[:2])
    with tempfile.TemporaryDirectory() as d:
        p = write(d, "t.json", trace([kernel(0, 2, name="a\tb\nc,\"d\""), kernel(5, 1, name="plain")]))
        lines = stats("-f", "tsv", "-r", "kernels", p).stdout.splitlines()
        assert [line.split("\t")[-1] for line in lines] == ["name", 'a\\tb\\nc,"d"', "plain"], lines
        assert all(line.count("\t") == 8 for line in lines), lines
        r = stats("-f", "tsv", "-r", "kernels,gpu", p)
        blocks = r.stdout.split("\n\n")
        assert [b.splitlines()[0] for b in blocks] == ["# files", "# kernels", "# gpu"], r.stdout
        assert blocks[0].splitlines()[1].split("\t")[:3] == ["file", "rank", "events"]
        prefix = os.path.join(d, "out")
        r = stats("-f", "tsv", "-r", "kernels,gpu", "-o", prefix, p)
        assert r.returncode == 0 and r.stdout == "", r
        assert sorted(os.listdir(d)) == ["out_files.tsv", "out_gpu.tsv", "out_kernels.tsv", "t.json"]
        assert open(prefix + "_kernels.tsv").read() == stats("-f", "tsv", "-r", "kernels", p).stdout
    r = stats("-f", "xml", TORCH)
    assert r.returncode == 2 and "--format takes table, csv, tsv or json, not 'xml'" in r.stderr


@case("stats -o -: standard output; ./- is a file named -")
def _():
    want = stats("-f", "json", TORCH).stdout
    with tempfile.TemporaryDirectory() as d:
        r = stats("-f", "json", "-o", "-", TORCH, cwd=d)
        assert r.returncode == 0 and r.stdout == want and os.listdir(d) == [], (r.stderr, os.listdir(d))
        r = stats("-f", "csv", "-r", "kernels,api", "-o-", TORCH, cwd=d)  # several csv tables: one stream
        assert r.returncode == 0 and r.stdout == stats("-f", "csv", "-r", "kernels,api", TORCH).stdout
        assert os.listdir(d) == []
        r = stats("-f", "json", "-o", "./-", os.path.abspath(TORCH), cwd=d)
        assert r.returncode == 0 and r.stdout == "" and os.listdir(d) == ["-"], r
        assert json.load(open(os.path.join(d, "-")))["kernels"] == json.loads(want)["kernels"]


@case("stats -q: no notes or warnings on stderr; errors still one line")
def _():
    with tempfile.TemporaryDirectory() as d:
        p = write(d, "t.json", json.dumps({"flagtrace": {"version": "0.1.0", "tracer": "cupti", "device_activity": False,
                                                         "device_status": "off", "dropped_records": 3},
                                           "traceEvents": [kernel(1, 2), kernel(1, -2), kernel(1, 2, cat="odd")]}))
        loud, quiet = stats(p), stats("-q", p)
        assert loud.returncode == quiet.returncode == 0 and loud.stderr.count("\n") == 2, loud.stderr
        assert quiet.stderr == "" and quiet.stdout == loud.stdout, quiet.stderr
        assert stats("--quiet", "-f", "json", p).stderr == ""
        r = stats("-q", os.path.join(d, "missing.json"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot open" in r.stderr, r.stderr


@case("stats DIR: the .json/.json.gz files directly in it, by name; an empty one is a one-line error")
def _():
    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, "run")
        os.mkdir(run)
        body = gzip.open(TORCH).read()
        made = {"b.json": body, "a.pt.trace.json.gz": gzip.compress(body), "c.json.gz": gzip.compress(body)}
        for n, b in made.items():
            write(run, n, b)
        write(run, "notes.txt", "not a trace")
        os.mkdir(os.path.join(run, "sub.json"))  # a directory: not read, nor what is in it
        write(os.path.join(run, "sub.json"), "deep.json", body)
        order = [os.path.join(run, n) for n in sorted(made)]
        r = stats("-f", "json", run)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        assert [f["file"] for f in got["files"]] == order, got["files"]
        explicit = json.loads(stats("-f", "json", *order).stdout)
        assert got == explicit
        r = stats("-f", "json", run + "/", TORCH)  # with other files, in argument order
        assert [f["file"] for f in json.loads(r.stdout)["files"]] == [os.path.join(run, n) for n in sorted(made)] + [
            TORCH], r.stderr
        assert stats(run).stdout.startswith(
            "flagtrace stats: 681 trace entries from 3 files\n")
        empty = os.path.join(d, "empty")
        os.mkdir(empty)
        write(empty, "x.txt", "")
        r = stats(empty)
        assert r.returncode == 2 and r.stderr == (
            f"flagtrace stats: {empty}: no trace in the directory (.json or .json.gz files)\n"), r.stderr


@case("stats -r cuda_gpu_trace: stream, grid, block and registers per event (-1 and 0 where the trace has none)")
def _():
    with tempfile.TemporaryDirectory() as d:
        ev = [kernel(1, 2, name="gemm", pid=1, stream=7, grid=[120, 2, 1], block=[256, 1, 1],
                     **{"registers per thread": 96}),
              kernel(5, 1, name="Memcpy HtoD", cat="gpu_memcpy", stream=13, bytes=4096),
              kernel(9, 1, name="bare"),
              kernel(12, 1, name="odd", grid=[1, 2], block="x", stream=3, **{"registers per thread": 32})]
        p = write(d, "t.json", trace(ev))
        got = json.loads(stats("-f", "json", "-r", "cuda_gpu_trace", p).stdout)["trace"]
        cols = ["stream", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers"]
        assert [[e["name"], e["device"]] + [e[c] for c in cols] for e in got] == [
            ["gemm", 1, 7, 120, 2, 1, 256, 1, 1, 96], ["Memcpy HtoD", 0, 13, 0, 0, 0, 0, 0, 0, 0],
            ["bare", 0, -1, 0, 0, 0, 0, 0, 0, 0], ["odd", 0, 3, 0, 0, 0, 0, 0, 0, 32]], got
        header, rows, _ = tables(stats("-r", "cuda_gpu_trace", p).stdout)["== device events (the earliest, per file) =="]
        assert header.split()[-9:] == ["Strm", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Reg/Trd", "Name"], header
        assert rows[0].split()[-9:] == ["7", "120", "2", "1", "256", "1", "1", "96", "gemm"], rows
        r = stats("-f", "csv", "-r", "trace", p)
        assert r.stdout.splitlines()[0].endswith(",bytes,stream,grid_x,grid_y,grid_z,block_x,block_y,block_z,registers,name")


@case("stats --help names what it does: the new options, formats and nsys's names")
def _():
    text = stats("--help").stdout
    for word in ("--timeunit U", "--width N", "-q, --quiet", "tsv", "cuda_gpu_kern_sum", "cuda_gpu_trace",
                 "\"-\": stdout", "FILE|DIR...", "StdDev, Min, Max, Med"):
        assert word in text, word


results.finish()
