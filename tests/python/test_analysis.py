"""flagtrace.analysis against the CLI it runs: rows equal `flagtrace stats -f json` value for
value (types too) on the committed traces, several files and --by-rank, directories and
globs, the CLI's error lines, the command's lookup, a schema it does not know, no pandas;
and (the checks named "pandas: ...", a ctest of their own that skips without pandas) DataFrames
whose columns, dtypes and values are the rows'.
Usage: test_analysis.py PYTHON_DIR FLAGTRACE_EXE DATA_DIR"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

python_dir, cli, data = (os.path.abspath(a) for a in sys.argv[1:4])


def has_pandas(python):
    return subprocess.run([python, "-c", "import pandas"], capture_output=True).returncode == 0


# Debian's python3-pandas is /usr/bin/python3's: a pyenv or venv python3 that CMake found
# first does not see it, so the pandas checks run under the system one where it has pandas.
if (os.environ.get("FT_TEST_ONLY") == "^pandas:" and not has_pandas(sys.executable) and os.path.exists("/usr/bin/python3")
        and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and has_pandas("/usr/bin/python3")):
    print(f"pandas is not importable in {sys.executable}; running under /usr/bin/python3, which has it", flush=True)
    os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__), *sys.argv[1:]])

sys.path.insert(0, python_dir)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, Skip  # noqa: E402
from flagtrace import analysis  # noqa: E402

SAMPLE = os.path.join(data, "sample_h200.json.gz")
REFERENCE = os.path.join(data, "torch_cuda_2.11_reference.json.gz")
results = Results()
case = results.case


def cli_json(*args):
    """What the CLI itself prints with -f json, parsed here (the oracle)."""
    r = subprocess.run([cli, "stats", "-f", "json", *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def cli_error(*args):
    r = subprocess.run([cli, "stats", "-f", "json", *args], capture_output=True, text=True)
    assert r.returncode != 0 and r.stdout == "", r
    return r.returncode, r.stderr.strip().splitlines()[-1]


def same(a, b, where="value"):
    """Equal and of the same types all the way down (1 is not 1.0, True is not 1), keys in order."""
    assert type(a) is type(b), f"{where}: {a!r} ({type(a).__name__}) vs {b!r} ({type(b).__name__})"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} vs {list(b)}"
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def same_summary(s, want):
    """Summary s holds exactly the CLI's JSON want: every report, the files, the header."""
    reports = [k for k, v in want.items() if isinstance(v, list) and k != "files"]
    assert s.reports == reports, (s.reports, reports)
    for name in reports:
        same(s.rows(name), want[name], name)
    same(s.rows("files"), want["files"], "files")
    same(s.files, want["files"], "files")
    same(s.header, {k: v for k, v in want.items() if k != "files" and k not in reports}, "header")
    same(s.data, want, "json")


for trace in (SAMPLE, REFERENCE):
    @case(f"rows equal the CLI's json, every report and value: {os.path.basename(trace)}")
    def _(trace=trace):
        want, _ = cli_json(trace)
        s = analysis.load(trace, exe=cli)
        same_summary(s, want)
        assert {"kernels", "api", "ops", "gpu", "ranks"} <= set(s.reports), s.reports
        assert s.rows("kernels") and all(r["calls"] > 0 for r in s.rows("kernels"))
        # the trace report too, every row of it (-n 0), reports picked by list and by string
        want, _ = cli_json("--report", "trace,kernels", "-n", "0", trace)
        same_summary(analysis.load(trace, exe=cli, reports=["trace", "kernels"], args=["-n", "0"]), want)
        same_summary(analysis.load(trace, exe=cli, reports="trace,kernels", args=["-n", "0"]), want)
        # every device event: the kernels' and the copies' and sets' calls
        events = sum(r["calls"] for r in cli_json("-r", "kernels,memops", trace)[0]["kernels"]) + \
            sum(r["calls"] for r in cli_json("-r", "memops", trace)[0]["memops"])
        assert len(want["trace"]) == events, (len(want["trace"]), events)


@case("the sample's numbers are the known ones (not only whatever the CLI printed)")
def _():
    s = analysis.load(SAMPLE, exe=cli)
    k = s.rows("kernels")
    assert [(r["name"], r["calls"], r["total_us"]) for r in k] == [
        ("scale_odd_block(float*, int)", 8, 59.105), ("saxpy(float, float const*, float*, int)", 8, 29.568)], k
    assert s.files[0]["events"] == 139 and s.header["events"] == 139 and s.header["schema"] == 2
    assert s.notes == []


@case("several files, by_rank: the CLI's --by-rank rows, a rank on each")
def _():
    want, _ = cli_json("--by-rank", SAMPLE, REFERENCE)
    s = analysis.load([SAMPLE, pathlib.Path(REFERENCE)], exe=cli, by_rank=True)
    same_summary(s, want)
    assert [f["file"] for f in s.files] == [SAMPLE, REFERENCE]
    assert {r["rank"] for r in s.rows("kernels")} == {0, 1}
    joint = analysis.load([SAMPLE, REFERENCE], exe=cli)
    same_summary(joint, cli_json(SAMPLE, REFERENCE)[0])
    assert all("rank" not in r for r in joint.rows("kernels"))
    # rows merged by name across the files: the job's total is the sum of the ranks'
    total = {r["name"]: r["total_us"] for r in joint.rows("kernels")}
    per_rank = {}
    for r in s.rows("kernels"):
        per_rank[r["name"]] = round(per_rank.get(r["name"], 0) + r["total_us"], 3)
    assert total == per_rank


@results.tmp_case("a directory, a glob, a list of both: their traces by name, as the CLI given them")
def _(d):
    shutil.copy(REFERENCE, os.path.join(d, "b_rank1.json.gz"))
    shutil.copy(SAMPLE, os.path.join(d, "a_rank0.json.gz"))
    for junk in ("notes.txt", "a.json.gz.bak", ".json"):
        with open(os.path.join(d, junk), "w") as f:
            f.write("not a trace\n")
    os.mkdir(os.path.join(d, "sub.json"))  # a directory is not a trace, whatever its name
    files = [os.path.join(d, "a_rank0.json.gz"), os.path.join(d, "b_rank1.json.gz")]
    want, _ = cli_json("--by-rank", *files)
    for paths in (d, pathlib.Path(d), os.path.join(d, "*.json.gz"), [os.path.join(d, "b*"), os.path.join(d, "a*.gz")]):
        s = analysis.load(paths, exe=cli, by_rank=True)
        got = [f["file"] for f in s.files]
        if isinstance(paths, list):  # the list's order, each glob's matches by name
            assert got == files[::-1], got
        else:
            assert got == files, got
            same_summary(s, want)
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    for bad, msg in ((empty, f"flagtrace.analysis: directory '{empty}' has no trace (*.json, *.json.gz)"),
                     (os.path.join(d, "*.nothing"), f"flagtrace.analysis: '{os.path.join(d, '*.nothing')}' matches no file")):
        try:
            analysis.load(bad, exe=cli)
            raise AssertionError(f"{bad}: no Error")
        except analysis.Error as e:
            assert str(e) == msg, str(e)
    try:
        analysis.load([], exe=cli)
        raise AssertionError("no Error for no path")
    except analysis.Error as e:
        assert str(e) == "flagtrace.analysis: no trace given", str(e)


@results.tmp_case("a directory with a JSON file that is not a trace: its trace read, the other named in a note")
def _(d):
    shutil.copy(SAMPLE, os.path.join(d, "rank0.json.gz"))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{"lr": 0.1}')
    s = analysis.load(d, exe=cli)
    assert [f["file"] for f in s.files] == [os.path.join(d, "rank0.json.gz")], s.files
    assert s.notes[0] == (f'flagtrace stats: note: skipped {d}/config.json: JSON, not a trace: an object without '
                          f'"traceEvents" (keys "lr")'), s.notes


@results.tmp_case("a bad file, a missing one, one given twice: Error with the CLI's own line and status")
def _(d):
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "ts": 1,, }]}')
    missing = os.path.join(d, "missing.json")
    for args in ([bad], [SAMPLE, missing], [SAMPLE, SAMPLE]):
        rc, line = cli_error(*args)
        try:
            analysis.load(args, exe=cli)
            raise AssertionError(f"{args}: no Error")
        except analysis.Error as e:
            assert str(e) == line and e.returncode == rc == 2, (str(e), line, e.returncode)
            assert line.startswith("flagtrace stats: ") and e.argv[0] == cli, (line, e.argv)
    # a bad option in args: the CLI's usage line, the same way
    try:
        analysis.load(SAMPLE, exe=cli, args=["--no-such-option"])
        raise AssertionError("no Error for a bad option")
    except analysis.Error as e:
        assert e.returncode == 2 and "no-such-option" in str(e) and "\n" not in str(e), str(e)


@results.tmp_case("stderr notes kept: skipped events and unknown categories, the CLI's lines")
def _(d):
    t = os.path.join(d, "skip.json")
    with open(t, "w") as f:
        json.dump({"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k1", "ts": 10, "dur": 5, "pid": 0, "tid": 7, "args": {"device": 0}},
            {"ph": "X", "cat": "kernel", "name": "k2", "ts": 20, "dur": -3, "pid": 0, "tid": 7, "args": {"device": 0}},
            {"ph": "X", "cat": "weird", "name": "w", "ts": 20, "dur": 3, "pid": 0, "tid": 7}]}, f)
    want, err = cli_json(t)
    s = analysis.load(t, exe=cli)
    same_summary(s, want)
    assert s.notes == err.strip().splitlines() and len(s.notes) == 1, (s.notes, err)
    assert "2 events skipped" in s.notes[0] and s.header["skipped_events"] == 2, s.notes
    assert s.header["unknown_categories"] == {"weird": 1}


@case("args pass through; a format in them cannot change what is read")
def _():
    want, _ = cli_json("--sort", "name", "-n", "1", REFERENCE)
    s = analysis.load(REFERENCE, exe=cli, args=["--sort", "name", "-n", "1"])
    same_summary(s, want)
    assert len(s.rows("kernels")) == 1
    same_summary(analysis.load(REFERENCE, exe=cli, args=("-f", "csv")), cli_json(REFERENCE)[0])
    try:
        analysis.load(REFERENCE, exe=cli, args="-n 1")
        raise AssertionError("a string for args was taken")
    except TypeError as e:
        assert "list of arguments" in str(e)


@case('"-" reads nothing: the CLI is not left waiting on the caller\'s stdin')
def _():
    # the caller's stdin a pipe that stays open: reading it would never end
    code = (f"from flagtrace import analysis\ntry: analysis.load('-', exe={cli!r})\n"
            "except analysis.Error as e: print(e)\n")
    r, w = os.pipe()
    try:
        p = subprocess.Popen([sys.executable, "-c", code], stdin=r, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=python_dir))
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise AssertionError("load('-') waited on stdin") from None
    finally:
        os.close(r)
        os.close(w)
    assert out.startswith("flagtrace stats: -: "), out  # the CLI's complaint about an empty stdin
    assert p.returncode == 0, p.returncode


@case("an unknown report name: Error naming the ones there")
def _():
    s = analysis.load(SAMPLE, exe=cli, reports=["kernels"])
    assert s.reports == ["kernels"]
    try:
        s.rows("api")
        raise AssertionError("no Error")
    except analysis.Error as e:
        assert str(e) == ("flagtrace.analysis: no report 'api' in this summary (it has: kernels); "
                          "load(..., reports=[...]) picks them"), str(e)


def run_python(code, env=None, cwd=None):
    full = dict(os.environ, PYTHONPATH=python_dir, **(env or {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, cwd=cwd)


@results.tmp_case("the command: exe=, $FLAGTRACE_EXE, the bundled one, PATH, in that order; none: a clear Error")
def _(d):
    pkg = os.path.join(d, "pkg")
    shutil.copytree(os.path.join(python_dir, "flagtrace"), os.path.join(pkg, "flagtrace"),
                    ignore=shutil.ignore_patterns("bin", "lib", "__pycache__"))
    probe = ("import sys; from flagtrace import analysis as a\n"
             "try: print(a.find_exe(*sys.argv[1:])); print(a.load(%r).files[0]['events'])\n"
             "except a.Error as e: print('Error:', e)\n" % SAMPLE)
    nothing = os.path.join(d, "emptybin")
    os.mkdir(nothing)

    def lookup(env, *argv):
        full = {k: v for k, v in os.environ.items() if k != "FLAGTRACE_EXE"}
        full.update({"PYTHONPATH": pkg, "PATH": nothing}, **env)
        r = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=full)
        assert r.returncode == 0, r.stderr
        return r.stdout.splitlines()

    bundled = os.path.join(pkg, "flagtrace", "bin", "flagtrace")
    got = lookup({})
    assert got == [f"Error: flagtrace.analysis: no flagtrace command: none bundled at {bundled}, $FLAGTRACE_EXE unset, "
                   "none on PATH; pass exe= or set FLAGTRACE_EXE to the built flagtrace (build/flagtrace)"], got
    onpath = os.path.join(d, "pathbin")
    os.mkdir(onpath)
    os.symlink(cli, os.path.join(onpath, "flagtrace"))
    assert lookup({"PATH": onpath}) == [os.path.join(onpath, "flagtrace"), "139"]
    os.mkdir(os.path.dirname(bundled))
    os.symlink(cli, bundled)
    assert lookup({"PATH": onpath}) == [bundled, "139"]  # the bundled one before PATH
    assert lookup({"FLAGTRACE_EXE": cli}) == [cli, "139"]  # the variable before the bundled one
    assert lookup({"FLAGTRACE_EXE": cli}, bundled) == [bundled, "139"]  # exe= before the variable
    got = lookup({"FLAGTRACE_EXE": "/nonexistent/flagtrace"})
    assert got == ["Error: flagtrace.analysis: $FLAGTRACE_EXE names '/nonexistent/flagtrace', which is not an executable file"], got
    got = lookup({}, os.path.join(d, "no-such-flagtrace"))
    assert got == [f"Error: flagtrace.analysis: exe= names '{os.path.join(d, 'no-such-flagtrace')}', "
                   "which is not an executable file"], got
    got = lookup({}, "flagtrace-not-on-path")
    assert got == ["Error: flagtrace.analysis: exe= names 'flagtrace-not-on-path', which is not an executable file"], got


@results.tmp_case("a schema it does not know, or no JSON at all: Error saying so")
def _(d):
    cases = {"schema3": ('{"schema": 3, "files": []}', "printed JSON schema 3, this module reads schema 2: "
                         "use a flagtrace command and Python package of the same version"),
             "noschema": ('{"files": []}', "printed JSON schema None, this module reads schema 2"),
             "notjson": ("flagtrace 9\n", "stats printed no JSON on stdout (")}
    for name, (out, msg) in cases.items():
        fake = os.path.join(d, name)
        with open(fake, "w") as f:
            f.write(f"#!/bin/sh\ncat <<'EOF'\n{out}\nEOF\n")
        os.chmod(fake, 0o755)
        try:
            analysis.load(SAMPLE, exe=fake)
            raise AssertionError(f"{name}: no Error")
        except analysis.Error as e:
            assert str(e).startswith(f"flagtrace.analysis: {fake} ") and msg in str(e), str(e)
    # notes, then the reason: the reason is the message, the whole stderr is kept
    chatty = os.path.join(d, "chatty")
    with open(chatty, "w") as f:
        f.write("#!/bin/sh\necho 'flagtrace stats: 1 events skipped: 1 with a negative dur' >&2\n"
                "echo 'flagtrace stats: x.json: expected a value at byte 7' >&2\necho >&2\nexit 2\n")
    os.chmod(chatty, 0o755)
    try:
        analysis.load(SAMPLE, exe=chatty)
        raise AssertionError("chatty: no Error")
    except analysis.Error as e:
        assert str(e) == "flagtrace stats: x.json: expected a value at byte 7" and e.returncode == 2, str(e)
        assert e.stderr.startswith("flagtrace stats: 1 events skipped"), e.stderr
    killed = os.path.join(d, "killed")
    with open(killed, "w") as f:
        f.write("#!/bin/sh\nkill -9 $$\n")
    os.chmod(killed, 0o755)
    try:
        analysis.load(SAMPLE, exe=killed)
        raise AssertionError("killed: no Error")
    except analysis.Error as e:
        assert str(e) == "flagtrace stats: killed by signal 9" and e.returncode == -9, str(e)


@case("without pandas (and torch): import, load and rows work; df() says to install python3-pandas")
def _():
    code = ("import sys; sys.modules['pandas'] = None; sys.modules['torch'] = None\n"
            "from flagtrace import analysis\n"
            f"s = analysis.load({SAMPLE!r}, exe={cli!r})\n"
            "print(s.rows('kernels')[0]['total_us'])\n"
            "try: s.df('kernels')\n"
            "except ImportError as e: print(e)\n")
    r = run_python(code)
    assert r.returncode == 0 and r.stderr == "", r
    assert r.stdout == ("59.105\nflagtrace.analysis: DataFrames need pandas (Debian: apt-get install python3-pandas; "
                        "or pip install pandas); rows() gives the same values without it\n"), r.stdout
    # importing and reading rows pulls in neither, where they are installed
    r = run_python("import sys; from flagtrace import analysis\n"
                   f"analysis.load({SAMPLE!r}, exe={cli!r}).rows('ops')\n"
                   "print(sorted(m for m in ('pandas', 'numpy', 'torch') if m in sys.modules))")
    assert r.returncode == 0 and r.stdout == "[]\n", r


def need_pandas():
    try:
        import pandas
        return pandas
    except ImportError:
        raise Skip("pandas is not installed (apt-get install python3-pandas)") from None


def dtype_of(values):
    """The dtype a column of these JSON values must have."""
    if values and all(type(v) is bool for v in values):
        return "bool"
    if values and all(type(v) is int for v in values):
        return "int64"
    if values and all(type(v) in (int, float) for v in values):
        return "float64"
    return "object"


def same_frame(df, rows, where):
    assert len(df) == len(rows), (where, len(df), len(rows))
    columns = list(dict.fromkeys(k for r in rows for k in r))
    assert list(df.columns) == columns, (where, list(df.columns), columns)
    for c in columns:
        values = [r.get(c) for r in rows]
        assert str(df[c].dtype) == dtype_of(values), (where, c, str(df[c].dtype), dtype_of(values))
        # tolist(): numpy scalars back as Python ones, so the types compare too
        same(df[c].tolist(), [float(v) if dtype_of(values) == "float64" else v for v in values], f"{where}.{c}")


for trace in (SAMPLE, REFERENCE):
    @case(f"pandas: df() of every report, the trace's and the files' too: the rows' columns, dtypes, values: "
          f"{os.path.basename(trace)}")
    def _(trace=trace):
        need_pandas()
        s = analysis.load(trace, exe=cli, reports="kernels,api,memops,memsize,ranges,gpu_ranges,ops,gpu,ranks,trace")
        assert len(s.reports) == 10, s.reports
        for name in s.reports + ["files"]:
            same_frame(s.df(name), s.rows(name), name)
        k = s.df("kernels")
        assert str(k["calls"].dtype) == "int64" and str(k["total_us"].dtype) == "float64" and k["name"].dtype == object
        assert s.df("files")["complete"].dtype == bool


@case("pandas: several files by rank; a null in a column; an empty report: no columns")
def _():
    pandas = need_pandas()
    s = analysis.load([SAMPLE, REFERENCE], exe=cli, by_rank=True)
    for name in s.reports + ["files"]:
        same_frame(s.df(name), s.rows(name), name)
    f = s.df("files")
    assert f["tracer"].tolist() == ["cupti", None], f["tracer"].tolist()  # null stays None, not NaN or "None"
    assert f["device_activity"].tolist() == [True, None]
    assert s.df("kernels").groupby("rank")["calls"].sum().to_dict() == {
        rank: sum(r["calls"] for r in s.rows("kernels") if r["rank"] == rank) for rank in (0, 1)}
    empty = analysis.load(REFERENCE, exe=cli, reports=["ranges"])
    assert empty.rows("ranges") == []
    e = empty.df("ranges")
    assert isinstance(e, pandas.DataFrame) and len(e) == 0 and list(e.columns) == []


ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOC = os.path.join(ROOT, "docs", "python-analysis.md")


def doc_blocks():
    """docs/python-analysis.md's python blocks, each with the text block right after it
    (what it prints) or None."""
    blocks, fence, body, after_python = [], None, [], False
    with open(DOC) as f:
        lines = f.read().splitlines()
    for line in lines:
        if fence is None:
            if line.startswith("```"):
                fence, body = line[3:].strip(), []
            elif line.strip():
                after_python = False  # prose between: the next text block is not that output
        elif line == "```":
            text = "\n".join(body) + "\n"
            if fence == "python":
                blocks.append([text, None])
            elif fence == "text" and after_python:
                blocks[-1][1] = text
            after_python, fence = fence == "python", None
        else:
            body.append(line)
    assert fence is None, f"{DOC}: a block is not closed"
    return blocks


def run_doc(with_pandas):
    """Every python block in order, in one namespace, from the repository root with the
    CLI under test; the DataFrame blocks only with_pandas. Returns how many ran."""
    import contextlib
    import io
    ran, names, cwd, env = 0, {}, os.getcwd(), os.environ.get("FLAGTRACE_EXE")
    os.environ["FLAGTRACE_EXE"] = cli
    os.chdir(ROOT)
    try:
        for i, (code, want) in enumerate(doc_blocks()):
            if (".df(" in code or "get_trace(" in code) and not with_pandas:
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{DOC} python block {i + 1}", "exec"), names)
            if want is not None:
                assert out.getvalue() == want, f"block {i + 1} printed\n{out.getvalue()}instead of\n{want}"
            ran += 1
    finally:
        os.chdir(cwd)
        os.environ.pop("FLAGTRACE_EXE") if env is None else os.environ.__setitem__("FLAGTRACE_EXE", env)
    return ran


@case("diff(): exactly `flagtrace diff -f json` of the same sides; the CLI's one line on input it refuses")
def _():
    a, b = os.path.join(data, "batch8_torch_cuda.json.gz"), os.path.join(data, "batch16_torch_cuda.json.gz")
    s = analysis.diff(a, b, args=["-n", "0"], exe=cli)
    r = subprocess.run([cli, "diff", "-f", "json", "-n", "0", a, b], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)
    assert s.reports == ["summary", "steps", "ops", "unmatched", "kernels", "api", "copies"], s.reports
    for name in s.reports:
        same(s.rows(name), want[name], name)
    same(s.header, {k: v for k, v in want.items() if k not in s.reports}, "header")
    assert s.rows("ops")[0]["name"] == "aten::mm" and s.header["alignment"]["ops_matched"] == 60
    try:
        analysis.diff(a, SAMPLE, exe=cli)
        raise AssertionError("no Error")
    except analysis.Error as e:
        assert str(e).startswith("flagtrace diff: A has 3 ProfilerStep ranges and B none"), str(e)
        assert e.returncode == 2


@results.tmp_case("issue 49: a name that exists is never a glob in diff(); a NUL anywhere is an Error, not ValueError")
def _(d):
    plain, brackets = os.path.join(d, "t1.json.gz"), os.path.join(d, "t[1].json.gz")
    shutil.copy(os.path.join(data, "batch8_torch_cuda.json.gz"), plain)
    shutil.copy(os.path.join(data, "batch16_torch_cuda.json.gz"), brackets)
    s = analysis.diff(brackets, brackets, exe=cli)
    assert [f["file"] for f in s.header["a"]["files"]] == [brackets], s.header["a"]
    assert [f["file"] for f in s.header["b"]["files"]] == [brackets], s.header["b"]
    assert [f["file"] for f in analysis.load(brackets, exe=cli).files] == [brackets]
    calls = [lambda: analysis.load(SAMPLE + "\0x", exe=cli), lambda: analysis.load([SAMPLE, b"a\0b"], exe=cli),
             lambda: analysis.load(SAMPLE, args=["-n", "1\0"], exe=cli),
             lambda: analysis.load(SAMPLE, reports=["kernels\0"], exe=cli),
             lambda: analysis.diff(SAMPLE, "b\0", exe=cli), lambda: analysis.diff(SAMPLE, SAMPLE, args=["\0"], exe=cli),
             lambda: analysis.load(SAMPLE, exe=cli + "\0")]
    for i, call in enumerate(calls):
        try:
            call()
            raise AssertionError(f"call {i}: no Error")
        except analysis.Error as e:
            assert "NUL" in str(e) and "\0" not in str(e) and "\n" not in str(e), (i, str(e))
            assert e.returncode is None, (i, e.returncode)


@case("pandas: get_trace(): the model's slices, kernels' times as stats's, launches and device work linked both ways")
def _():
    need_pandas()
    t = analysis.get_trace(SAMPLE, exe=cli)
    assert len(t) == 79 and list(t.columns) == [
        "ts", "dur", "name", "kind", "pid", "tid", "stream", "device", "track", "step", "op", "op_index", "link",
        "correlation", "external_id", "bytes", "grid", "block", "input_dims"], list(t.columns)
    assert str(t["name"].dtype) == "category" and str(t["ts"].dtype) == "int64"
    assert (t["ts"].diff().fillna(0) >= 0).all()  # start order
    k = t[t["kind"] == "kernel"]
    want = {r["name"]: round(r["total_us"] * 1000) for r in cli_json("-r", "kernels", SAMPLE)[0]["kernels"]}
    assert k.groupby("name", observed=True)["dur"].sum().to_dict() == want, want
    linked = t[t["link"] >= 0]
    assert (t.loc[linked["link"], "link"].to_numpy() == linked.index.to_numpy()).all()  # both ways
    assert (t.loc[k["link"], "correlation"].to_numpy() == k["correlation"].to_numpy()).all()
    assert set(t.loc[k["link"], "name"]) == {"cudaLaunchKernel"} and (k["stream"] == 7).all()
    assert t[t["kind"] == "memcpy"]["bytes"].iloc[0] == 4194304
    assert (t[t["kind"] == "runtime"]["stream"] == -1).all()
    assert (t["grid"].notna() == (t["kind"] == "kernel")).all()  # launch configurations on kernels only
    assert t[k.index.min():].loc[k.index.min(), ["grid", "block"]].tolist() == ["[4096, 1, 1]", "[256, 1, 1]"]
    assert sorted(t["grid"].cat.categories) == ["[10486, 1, 1]", "[4096, 1, 1]"]  # its own texts only
    b8 = analysis.get_trace(os.path.join(data, "batch8_torch_cuda.json.gz"), exe=cli)
    assert b8[b8["name"] == "aten::mm"]["input_dims"].iloc[0] == "[[2048, 1024], [1024, 4096]]"


@case("pandas: get_trace() of a file that is not a trace: the CLI's one line as Error, exit status 2")
def _():
    need_pandas()
    bad = os.path.join(data, "profiler_cuda_baseline.json")
    try:
        analysis.get_trace(bad, exe=cli)
        raise AssertionError("no Error")
    except analysis.Error as e:
        assert str(e).startswith("flagtrace columns: ") and "traceEvents" in str(e), str(e)
        assert e.returncode == 2
    try:
        analysis.get_trace(SAMPLE, step="no such range", exe=cli)
        raise AssertionError("no Error")
    except analysis.Error as e:
        assert str(e) == f"flagtrace columns: {SAMPLE}: no range named 'no such range' (--step)", str(e)
    steps = analysis.get_trace(SAMPLE, step="step", exe=cli).attrs["steps"]
    assert [s["step"] for s in steps] == list(range(8)), steps  # the range's occurrences, from 0


@case("advise(): exactly `flagtrace advise -f json -n 0` of the same files, steps and findings as rows")
def _():
    pair = [os.path.join(data, "batch8_torch_cuda.json.gz"), os.path.join(data, "batch16_torch_cuda.json.gz")]
    a = analysis.advise(pair, exe=cli)
    r = subprocess.run([cli, "advise", "-f", "json", "-n", "0", *pair], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)
    same(a.steps, want["steps"], "steps")
    same(a.findings, want["findings"], "findings")
    assert a.findings[0]["rule"] == "straggler" and len(a.steps) == 6
    try:
        analysis.advise(pair[0], step="no such range", exe=cli)
        raise AssertionError("no Error")
    except analysis.Error as e:
        assert e.returncode == 2 and "no range named 'no such range'" in str(e), str(e)


@case("docs/python-analysis.md: its python blocks without DataFrames run and print what the page shows")
def _():
    blocks = doc_blocks()
    assert len(blocks) >= 6 and all(want for _, want in blocks), [want for _, want in blocks]
    assert run_doc(False) == sum(".df(" not in code and "get_trace(" not in code for code, _ in blocks) >= 4


@case("pandas: docs/python-analysis.md: every python block runs and prints what the page shows")
def _():
    need_pandas()
    assert run_doc(True) == len(doc_blocks())


results.finish()
