"""flagtrace.analysis: every `flagtrace stats` report from Python, as rows (dicts) or pandas DataFrames.

The numbers are the CLI's by construction: load() runs `flagtrace stats -f json` and
reads its JSON (schema 2) from a pipe, so the same C code computes them and a report
or column added to the CLI appears here without a change to this module. Neither torch
nor pandas is imported unless asked for (pandas by Summary.df() only).

    from flagtrace import analysis
    s = analysis.load("tests/data/sample_h200.json.gz")
    s.rows("kernels")[0]["total_us"]        # 59.105
    s.df("kernels")                         # the same rows, a pandas.DataFrame

get_trace() gives the event model itself, one row per slice (HTA's get_trace() frame),
from `flagtrace columns` (raw arrays, no JSON per event; numpy and pandas needed);
advise() runs `flagtrace advise -f json` (steps and findings as rows).
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile

__all__ = ["Error", "Summary", "Advice", "find_exe", "load", "diff", "advise", "get_trace", "get_memory",
           "MEMORY_COLUMNS", "SCHEMAS",
           "DIFF_SCHEMAS", "ADVISE_SCHEMAS", "ENV"]

#: The versions of stats' JSON this module reads (its "schema" key).
SCHEMAS = (2,)
DIFF_SCHEMAS = (1,)  # `flagtrace diff -f json` (docs/diff.md)
ADVISE_SCHEMAS = (1,)  # `flagtrace advise -f json` (docs/advise.md)
#: The environment variable naming the flagtrace command to run.
ENV = "FLAGTRACE_EXE"
#: What a directory argument reads: its plain files with these endings (a name longer than
#: the ending), sorted by name, not recursively: the rule of the CLI's own directory argument.
TRACE_SUFFIXES = (".json", ".json.gz")


def _is_trace_name(name):
    return any(name.endswith(t) and len(name) > len(t) for t in TRACE_SUFFIXES)


class Error(Exception):
    """flagtrace stats failed or could not be run: str() is the one-line reason (the CLI's
    own line when it printed one). returncode and stderr are the CLI's, when it ran."""

    def __init__(self, message, *, returncode=None, stderr="", argv=None):
        super().__init__(message)
        self.message, self.returncode, self.stderr, self.argv = message, returncode, stderr, argv

    def __str__(self):
        return self.message


def _bundled_exe():
    # where the wheel puts the command (setup.py; flagtrace/_cli.py runs the same file)
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "flagtrace")


def _no_nul(what, value):
    """value as given, or Error: a NUL cannot pass to a command (Python's own ValueError
    would escape the one exception this module raises)."""
    text = os.fsdecode(value) if isinstance(value, bytes) else value
    if isinstance(text, str) and "\0" in text:
        raise Error(f"flagtrace.analysis: {what} holds a NUL byte, which no file name or argument can: "
                    f"{text[:200]!r}")
    return value


def find_exe(exe=None):
    """The flagtrace command load() runs: exe when given, else $FLAGTRACE_EXE, else the one
    the wheel ships beside this module, else `flagtrace` on PATH. The variable comes before
    the bundled command so that a fresh build can be tried under an installed package."""
    if exe is None:
        exe = os.environ.get(ENV) or None
        how = f"${ENV}"
    else:
        how = "exe="
    if exe is not None:
        exe = os.fsdecode(_no_nul(how, os.fspath(exe)))
        found = shutil.which(exe) if os.sep not in exe else (exe if os.access(exe, os.X_OK) and os.path.isfile(exe) else None)
        if not found:
            raise Error(f"flagtrace.analysis: {how} names '{exe}', which is not an executable file")
        return found
    bundled = _bundled_exe()
    if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
        return bundled
    found = shutil.which("flagtrace")
    if not found:
        raise Error(f"flagtrace.analysis: no flagtrace command: none bundled at {bundled}, ${ENV} unset, "
                    f"none on PATH; pass exe= or set {ENV} to the built flagtrace (build/flagtrace)")
    return found


def _expand(paths):
    """paths (one or a list; files, directories, globs) as the CLI's arguments: files, and
    directories that hold a trace (the CLI reads their traces by name and skips, with a
    note, the files there that are not traces). A name that exists is taken as it is,
    even with glob characters in it; a file that does not exist is passed on, so that the
    CLI reports it in its own words."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    files = []
    for p in paths:
        p = _no_nul("a path", os.fsdecode(os.fspath(p)))
        if os.path.isdir(p):
            found = sorted(os.path.join(p, n) for n in os.listdir(p)
                           if _is_trace_name(n) and os.path.isfile(os.path.join(p, n)))
            if not found:
                raise Error(f"flagtrace.analysis: directory '{p}' has no trace (*{', *'.join(TRACE_SUFFIXES)})")
            files.append(p)  # the CLI reads the same files, by name, and skips those that are not traces
        elif not os.path.lexists(p) and glob.has_magic(p):
            found = sorted(glob.glob(p, recursive=True))
            if not found:
                raise Error(f"flagtrace.analysis: '{p}' matches no file")
            files += _expand(found)
        else:
            files.append(p)
    return files


def load(paths, *, reports=None, by_rank=False, exe=None, args=()):
    """Runs `flagtrace stats -f json` over paths and returns its Summary.

    paths: a file, a directory (its *.json and *.json.gz files, by name), a glob, or a
    list of them. reports: a list of report names or a comma-separated string (None: the
    CLI's default, every report but trace). by_rank: per-rank rows (--by-rank). args:
    further stats options, passed as they are (for example ["-n", "0"], ["--sort", "name"]).
    exe: the flagtrace command (see find_exe). Raises Error with the CLI's message."""
    if isinstance(args, (str, bytes)):
        raise TypeError("flagtrace.analysis.load: args is a list of arguments, not one string")
    cmd = find_exe(exe)
    files = _expand(paths)
    if not files:
        raise Error("flagtrace.analysis: no trace given")
    argv = [cmd, "stats", *map(os.fsdecode, args)]
    if reports is not None:
        argv += ["--report", reports if isinstance(reports, str) else ",".join(reports)]
    if by_rank:
        argv.append("--by-rank")
    # last, so that no option in args changes the format this module reads; "--" so that
    # a file named like an option stays a file
    argv += ["--format", "json", "--", *files]
    return _run(cmd, argv, "stats", SCHEMAS)


def diff(a, b, *, args=(), exe=None):
    """Runs `flagtrace diff -f json` of side a (the baseline) against side b and returns
    its Summary (docs/diff.md): reports summary, steps, ops, unmatched, kernels, api,
    copies, and memory when either side has [memory] events (docs/memory.md); header["a"],
    header["b"] (files, steps) and header["alignment"].

    a, b: each a file, a directory or a glob pattern (the CLI's --a and --b; a name that
    exists is read as it is, never as a pattern). args:
    further diff options (["-n", "0"]: every op; ["--step", "train"], ["--shapes"]).
    Raises Error with the CLI's one line when the sides cannot be compared."""
    if isinstance(args, (str, bytes)):
        raise TypeError("flagtrace.analysis.diff: args is a list of arguments, not one string")
    cmd = find_exe(exe)
    argv = [cmd, "diff", *map(os.fsdecode, args), "--format", "json",
            "--a", os.fsdecode(os.fspath(a)), "--b", os.fsdecode(os.fspath(b))]
    return _run(cmd, argv, "diff", DIFF_SCHEMAS)


def advise(paths, *, step=None, args=(), exe=None):
    """Runs `flagtrace advise -f json -n 0` over paths (as load() takes them) and returns
    its Advice: .steps and .findings as rows (dicts), .df("steps") / .df("findings") as
    pandas DataFrames (the nested idle_by_cause / hta_idle objects flattened into columns
    named "idle_by_cause.sync_us" and so on), .files, .header (schema, step_name, ...).

    step: the range whose occurrences are the steps (--step; None: ProfilerStep#N, else
    the whole trace). args: further advise options (["--gap-us", "50"], ["--min-share",
    "0.05"], ["-n", "5"]). Two or more files are one job: stragglers come with them."""
    if isinstance(args, (str, bytes)):
        raise TypeError("flagtrace.analysis.advise: args is a list of arguments, not one string")
    cmd = find_exe(exe)
    files = _expand(paths)
    if not files:
        raise Error("flagtrace.analysis: no trace given")
    argv = [cmd, "advise", "-n", "0", *map(os.fsdecode, args)]
    if step is not None:
        argv += ["--step", os.fsdecode(step)]
    argv += ["--format", "json", "--", *files]
    data, notes = _run_json(cmd, argv, "advise", ADVISE_SCHEMAS)
    return Advice(data, notes=notes, argv=argv)


def _run(cmd, argv, what, schemas):
    """Runs argv (`flagtrace WHAT ... --format json`) and returns its Summary, or raises Error."""
    data, lines = _run_json(cmd, argv, what, schemas)
    return Summary(data, notes=lines, argv=argv)


def _run_cli(cmd, argv, what, stdout=None):
    """Runs argv; (stdout bytes, stderr text, its non-blank lines), or raises Error with the CLI's one line.
    stdout: a file to send the output to instead (then None comes back for it)."""
    for a in argv:
        _no_nul("an argument", a)
    try:
        # stdin closed: "-" would otherwise read the caller's terminal
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=stdout or subprocess.PIPE,
                              stderr=subprocess.PIPE)
    except OSError as e:
        raise Error(f"flagtrace.analysis: cannot run {cmd}: {e.strerror or e}", argv=argv) from None
    stderr = proc.stderr.decode("utf-8", "replace")
    lines = [line for line in stderr.splitlines() if line.strip()]
    if proc.returncode != 0:
        if lines:
            msg = lines[-1]  # the CLI's one-line reason comes last, after any notes
        elif proc.returncode < 0:
            msg = f"flagtrace {what}: killed by signal {-proc.returncode}"
        else:
            msg = f"flagtrace {what}: exited with status {proc.returncode} and said nothing"
        raise Error(msg, returncode=proc.returncode, stderr=stderr, argv=argv)
    return proc.stdout, stderr, lines


def _run_json(cmd, argv, what, schemas):
    """Runs argv (`flagtrace WHAT ... --format json`): (its JSON, its stderr lines), or raises Error."""
    out, stderr, lines = _run_cli(cmd, argv, what)
    try:
        # surrogateescape: a name that is not UTF-8 keeps its bytes (os.fsencode gives them back)
        data = json.loads(out.decode("utf-8", "surrogateescape"))
    except ValueError as e:
        raise Error(f"flagtrace.analysis: {cmd} {what} printed no JSON on stdout ({e}); "
                    "an -o/--output in args sends it elsewhere", returncode=0, stderr=stderr, argv=argv) from None
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema not in schemas:
        raise Error(f"flagtrace.analysis: {cmd} {what} printed JSON schema {schema!r}, this module reads schema "
                    f"{' or '.join(map(str, schemas))}: use a flagtrace command and Python package of the same version",
                    returncode=0, stderr=stderr, argv=argv)
    return data, lines


def _is_report(value):
    return isinstance(value, list) and all(isinstance(r, dict) for r in value)


class Summary:
    """What one `flagtrace stats -f json` run printed.

    files: the header's entry per file (file, rank, events, span_us, tracer, ...).
    reports: the names of the reports in it, in the CLI's order.
    header: the other top-level values (schema, events, skipped_events, unknown_categories...).
    notes: the lines the CLI wrote on stderr (skipped events, incomplete files, warnings).
    argv: the command that was run. data: the whole parsed JSON."""

    def __init__(self, data, *, notes=(), argv=None):
        self.data = data
        self.notes = list(notes)
        self.argv = argv
        self.files = [dict(f) for f in data.get("files", [])]
        self.reports = [k for k, v in data.items() if k != "files" and _is_report(v)]
        self.header = {k: v for k, v in data.items() if k != "files" and k not in self.reports}

    def __repr__(self):
        return f"<flagtrace.analysis.Summary: {len(self.files)} file(s), reports {', '.join(self.reports)}>"

    def rows(self, name):
        """The report's rows, each a dict with exactly the CLI's json keys in its order
        ("files" gives the header's file entries). Fresh dicts: changing them changes nothing here."""
        if name != "files" and name not in self.reports:
            raise Error(f"flagtrace.analysis: no report '{name}' in this summary (it has: "
                        f"{', '.join(self.reports) or 'none'}); load(..., reports=[...]) picks them")
        return [dict(r) for r in self.data.get(name, [])]

    def df(self, name):
        """The report as a pandas.DataFrame: one row per rows() entry, one column per key,
        in the CLI's order; pandas infers the dtypes (int64 for whole numbers, float64 for
        the rest, object for names). An empty report gives an empty frame without columns:
        the JSON names no columns for it."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("flagtrace.analysis: DataFrames need pandas (Debian: apt-get install python3-pandas; "
                              "or pip install pandas); rows() gives the same values without it") from e
        rows = self.rows(name)
        columns = list(dict.fromkeys(k for r in rows for k in r))  # every key, first-seen order
        return pandas.DataFrame.from_records(rows, columns=columns)


class Advice(Summary):
    """What one `flagtrace advise -f json` run printed (docs/advise.md "Output"): steps (one
    row per rank and step: wall, busy and idle times, the idle by cause) and findings (one
    row per finding, costliest first: rule, rank, cost_us per step, share, count, where,
    what, suggestion, occurrences)."""

    def __repr__(self):
        return (f"<flagtrace.analysis.Advice: {len(self.files)} file(s), {len(self.steps)} step(s), "
                f"{len(self.findings)} finding(s)>")

    @property
    def steps(self):
        return self.rows("steps") if "steps" in self.reports else []

    @property
    def findings(self):
        return self.rows("findings") if "findings" in self.reports else []

    def rows(self, name):
        if name in ("steps", "findings") and name not in self.reports:
            return []  # an empty list is no "report" to Summary: no rows
        return super().rows(name)

    def df(self, name):
        """As Summary.df, with each nested object's values as columns of their own
        ("idle_by_cause.sync_us", "hta_idle.host_wait_us"); occurrences stay a list per row."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("flagtrace.analysis: DataFrames need pandas (Debian: apt-get install python3-pandas; "
                              "or pip install pandas); rows() gives the same values without it") from e
        rows = self.rows(name)
        flat = []
        for r in rows:
            f = {}
            for k, v in r.items():
                if isinstance(v, dict):
                    f.update((f"{k}.{k2}", v2) for k2, v2 in v.items())
                else:
                    f[k] = v
            flat.append(f)
        columns = list(dict.fromkeys(k for r in flat for k in r))
        return pandas.DataFrame.from_records(flat, columns=columns)


#: get_trace()'s "kind" categories, in the model's order (enum ft_model_kind, model.h)
KINDS = ("kernel", "memcpy", "memset", "runtime", "driver", "cpu_op", "user_annotation", "gpu_user_annotation",
         "cuda_sync", "overhead", "python_function")
_NONE = 0xFFFFFFFF  # the model's "no such slice / step / op" (FT_MODEL_NONE)


def _columns(buf):
    """`flagtrace columns` output -> (header dict, {name: numpy array over buf})."""
    import numpy
    if len(buf) < 16 or bytes(buf[:8]) != b"FTCOLS1\n":
        raise Error("flagtrace.analysis: flagtrace columns printed no column data (wrong magic)")
    hlen = int(numpy.frombuffer(buf, "<u8", 1, 8)[0])
    header = json.loads(bytes(buf[16:16 + hlen]).decode("utf-8", "surrogateescape"))
    if header.get("version") != 1:
        raise Error(f"flagtrace.analysis: flagtrace columns version {header.get('version')!r}, this module reads 1")
    base = 16 + hlen
    cols = {c["name"]: numpy.frombuffer(buf, numpy.dtype(c["dtype"]), c["count"], base + c["offset"])
            for c in header["columns"]}
    return header, cols


def _own_categories(codes, cats):
    """A categorical of codes into cats (one table for several columns) with only the texts
    this column uses as its categories (a count per code: no sort of the rows)."""
    import numpy
    import pandas
    used = numpy.flatnonzero(numpy.bincount(codes + 1, minlength=len(cats) + 1)[1:])
    remap = numpy.full(len(cats) + 1, -1, numpy.int32)
    remap[used + 1] = numpy.arange(len(used), dtype=numpy.int32)
    return pandas.Categorical.from_codes(remap[codes + 1], categories=cats[used])


def _model_columns(path, step, exe):
    """`flagtrace columns` of one trace: (header, {name: numpy array})."""
    cmd = find_exe(exe)
    p = _no_nul("a path", os.fsdecode(os.fspath(path)))
    argv = [cmd, "columns", *(["--step", os.fsdecode(step)] if step is not None else []), "--", p]
    # through a temporary file, not a pipe: one copy of the arrays into Python (a pipe's reads
    # and joins cost more than the rest of the frame), into a bytearray: the arrays stay writable
    with tempfile.TemporaryFile() as f:
        _run_cli(cmd, argv, "columns", stdout=f)
        buf = bytearray(f.seek(0, os.SEEK_END))
        f.seek(0)
        f.readinto(buf)
    return _columns(buf)


def _string_table(c, prefix):
    """A string table of `flagtrace columns`: its texts in code order."""
    offs, blob = c[prefix + "_offsets"], bytes(c[prefix + "_bytes"])
    return [blob[offs[i]:offs[i + 1]].decode("utf-8", "surrogateescape") for i in range(len(offs) - 1)]


MEMORY_COLUMNS = ("ts", "device", "device_type", "bytes", "addr", "total_allocated", "total_reserved", "op", "call",
                  "step", "op_index", "call_index")


def get_memory(path, step=None, *, frame=True, exe=None):
    """One trace file's memory timeline (issue 51; docs/memory.md "Python"): one row per [memory]
    operation (torch's profile_memory=True instants or flagtrace record's), in time order, fed by
    `flagtrace columns` as raw arrays like get_trace() (no JSON per event).

    Columns (MEMORY_COLUMNS): ts (ns, the file's clock); device ("Device Id", -1 absent) and
    device_type (torch's DeviceType: 0 CPU, 1 CUDA, 20 PrivateUse1; -1 absent); bytes (> 0
    allocated, < 0 freed, 0 a pool's reserve/unreserve); addr; total_allocated, total_reserved
    (the device's after it, -1 absent); op (the innermost op or range open around it on its
    thread, else the op of the call that made it) and call (the runtime call that made it, by
    correlation id), names, None when none, with op_index and call_index their rows in
    get_trace()'s frame (-1 none); step (the ProfilerStep#N number it falls in, -1 none).

    frame=True: a pandas.DataFrame (op and call categoricals; attrs file, rank); False: a list of
    dicts, one per row (numpy only, no pandas). step: as get_trace()'s."""
    try:
        import numpy
    except ImportError as e:
        raise ImportError("flagtrace.analysis.get_memory needs numpy (Debian: apt-get install python3-numpy)") from e
    header, c = _model_columns(path, step, exe)
    names = _string_table(c, "string")
    name_of = c["name"]

    def rows_of(idx):
        return numpy.where(idx == _NONE, -1, idx.astype(numpy.int64))

    op_index, call_index = rows_of(c["mem_op"]), rows_of(c["mem_call"])
    step_idx = c["mem_step"]
    if len(c["step_number"]):
        step_no = numpy.where(step_idx == _NONE, -1,
                              c["step_number"][numpy.minimum(step_idx, len(c["step_number"]) - 1)])
    else:
        step_no = numpy.full(len(step_idx), -1, numpy.int64)
    op_code = numpy.where(op_index < 0, -1, name_of[numpy.maximum(op_index, 0)]) if len(name_of) else op_index
    call_code = numpy.where(call_index < 0, -1, name_of[numpy.maximum(call_index, 0)]) if len(name_of) else call_index
    cols = {"ts": c["mem_ts"], "device": c["mem_device"].astype(numpy.int64),
            "device_type": c["mem_device_type"].astype(numpy.int64), "bytes": c["mem_bytes"], "addr": c["mem_addr"],
            "total_allocated": c["mem_total_allocated"], "total_reserved": c["mem_total_reserved"]}
    if not frame:
        opn = [None if k < 0 else names[k] for k in op_code.tolist()]
        calln = [None if k < 0 else names[k] for k in call_code.tolist()]
        lists = {k: v.tolist() for k, v in cols.items()}
        steps, oi, ci = step_no.tolist(), op_index.tolist(), call_index.tolist()
        return [{**{k: lists[k][i] for k in lists}, "op": opn[i], "call": calln[i], "step": steps[i],
                 "op_index": oi[i], "call_index": ci[i]} for i in range(len(steps))]
    try:
        import pandas
    except ImportError as e:
        raise ImportError("flagtrace.analysis.get_memory(frame=True) needs pandas (Debian: apt-get install "
                          "python3-pandas; frame=False gives rows without it)") from e
    cats = pandas.Index(names, dtype=object)
    if not cats.is_unique:  # one text under two ids: one category
        uniq, inverse = numpy.unique(numpy.array(names, dtype=object), return_inverse=True)
        op_code = numpy.where(op_code < 0, -1, inverse[numpy.maximum(op_code, 0)])
        call_code = numpy.where(call_code < 0, -1, inverse[numpy.maximum(call_code, 0)])
        cats = pandas.Index(uniq, dtype=object)
    df = pandas.DataFrame({**cols,
                           "op": _own_categories(op_code.astype(numpy.int32), cats),
                           "call": _own_categories(call_code.astype(numpy.int32), cats),
                           "step": step_no, "op_index": op_index, "call_index": call_index}, copy=False)
    df.attrs.update(file=header["file"], rank=header["rank"])
    return df[list(MEMORY_COLUMNS)]


def get_trace(path, step=None, *, exe=None):
    """One trace file's event model as a pandas.DataFrame, one row per slice in start order
    (HTA's get_trace() frame), fed by `flagtrace columns` as raw arrays (no JSON per event).

    Columns: ts, dur (ns, the file's clock); name, kind (categoricals); pid, tid, stream
    (-1 on a CPU thread), device (-1 on a CPU thread), track (the model's track index);
    step (the ProfilerStep#N number the slice starts in, -1 when none); op (the name of the
    op or range that issued it: a launch's enclosing op, device work's launch's op) and
    op_index (its row, -1 when none); link (the row of the other side: a launch's device
    work, device work's launch; -1 when none); correlation, external_id (-1 when none);
    bytes (copies and memsets, else 0); grid, block (kernels: "[x, y, z]") and input_dims (ops
    recorded with shapes: Input Dims as the trace writes them), categoricals, NaN when absent. attrs: file, rank, device_name, peak_flops, steps
    (a list of {step, start_ns, end_ns}).

    step: the range whose occurrences are the steps (--step; None: ProfilerStep#N)."""
    try:
        import numpy
        import pandas
    except ImportError as e:
        raise ImportError("flagtrace.analysis.get_trace needs numpy and pandas (Debian: apt-get install "
                          "python3-pandas)") from e
    header, c = _model_columns(path, step, exe)
    def table(prefix):  # a string table: its texts in code order
        return _string_table(c, prefix)

    names = table("string")
    arg_cats = pandas.Index(table("arg_string"), dtype=object)  # distinct texts by construction
    codes = c["name"]
    cats = pandas.Index(names, dtype=object)
    if not cats.is_unique:  # one text under two ids: one category
        cats, inverse = numpy.unique(numpy.array(names, dtype=object), return_inverse=True)
        codes = numpy.where(codes < 0, -1, inverse[numpy.maximum(codes, 0)]).astype(numpy.int32)
        cats = pandas.Index(cats, dtype=object)

    def rows_of(idx):  # a u4 index column -> int64 rows, -1 for none
        return numpy.where(idx == _NONE, -1, idx.astype(numpy.int64))

    track = c["track"].astype(numpy.int64)
    stream_track = c["track_kind"][track] == 1 if len(track) else numpy.zeros(0, bool)
    tid = c["track_tid"][track]
    step_idx = c["step"]
    if len(c["step_number"]):
        step_no = numpy.where(step_idx == _NONE, -1, c["step_number"][numpy.minimum(step_idx, len(c["step_number"]) - 1)])
    else:
        step_no = numpy.full(len(step_idx), -1, numpy.int64)
    op_index = rows_of(c["op"])
    op_codes = numpy.where(op_index < 0, -1, codes[numpy.maximum(op_index, 0)]) if len(codes) else codes
    df = pandas.DataFrame({
        "ts": c["ts"], "dur": c["dur"],
        "name": pandas.Categorical.from_codes(codes, categories=cats),
        "kind": pandas.Categorical.from_codes(c["kind"].astype(numpy.int8), categories=list(KINDS)),
        "pid": c["track_pid"][track], "tid": tid,
        "stream": numpy.where(stream_track, tid, -1), "device": c["track_device"][track], "track": track,
        "step": step_no,
        "op": pandas.Categorical.from_codes(op_codes, categories=cats), "op_index": op_index,
        "link": rows_of(c["link"]),
        "correlation": c["corr"], "external_id": c["ext"], "bytes": c["arg"].view(numpy.int64),
        **{k: _own_categories(c[k], arg_cats) for k in ("grid", "block", "input_dims")},
    }, copy=False)
    df.attrs.update(file=header["file"], rank=header["rank"], device_name=header["device_name"],
                    peak_flops=header["peak_flops"],
                    steps=[{"step": int(n), "start_ns": int(a), "end_ns": int(b)} for n, a, b in
                           zip(c["step_number"], c["step_start"], c["step_end"])])
    return df
