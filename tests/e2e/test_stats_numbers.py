"""End-to-end: hostile numbers and ids (issue 49): a number's cost bounded by its length,
a correlation id shared by thousands of launches paired linearly, External ids that are
not whole numbers counted, in `stats` (table, json, --partial/--merge) and `diff`."""
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

flagtrace, data = sys.argv[1], sys.argv[2]
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()
results = Results()
case = results.case


def run(*args, cwd=None):
    """The command's result and its seconds."""
    t0 = time.monotonic()
    r = subprocess.run([*WRAP, flagtrace, *args], capture_output=True, text=True, cwd=cwd)
    return r, time.monotonic() - t0


def write(d, name, content):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode())
    return p


def ev(cat, name, ts, dur, pid=0, tid=7, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


@case("numbers: zeros under a huge exponent (0e10000000000) cost what their length costs, in stats and diff")
def _():
    with tempfile.TemporaryDirectory() as d:
        # 1.1 KB: 8 events whose ts is zero spelled with an exponent of 10^10 (seconds each before)
        raw = ['{"ph":"X","cat":"%s","name":"%s","ts":%s,"dur":2,"pid":0,"tid":1,"args":{"External id":%d}}' % (
            cat, name, ts, i) for i, (cat, name, ts) in enumerate(
            [("cpu_op", "aten::mm", "0e10000000000"), ("kernel", "gemm", "-0.000e+10000000000"),
             ("cpu_op", "aten::add", "0.0E9999999999"), ("kernel", "add", "0e99999999999999999999")] * 2)]
        text = '{"traceEvents":[' + ",".join(raw) + "]}"
        p = write(d, "t.json", text)
        r, secs = run("stats", "-f", "json", "-r", "kernels", p)
        assert r.returncode == 0 and r.stderr == "", r
        assert secs < 2, secs
        got = json.loads(r.stdout)
        assert sorted((k["name"], k["calls"], k["total_us"]) for k in got["kernels"]) == [
            ("add", 2, 4), ("gemm", 2, 4)], got["kernels"]
        assert (got["events"], got["skipped_events"]) == (8, 0), got
        r, secs = run("diff", "-f", "json", p, p)
        assert r.returncode == 0, r
        assert secs < 4, secs
        s = {m["metric"]: m for m in json.loads(r.stdout)["summary"]}
        assert (s["kernel_time"]["a"], s["kernel_time"]["b"]) == (8, 8), s


def shared_id(n_calls, n_kernels, corr=1):
    """n_calls launch calls, then n_kernels kernels on stream 7, every one of correlation corr:
    call i at 10 i us (2 us), kernel k at 10 k + 5 us (3 us)."""
    return ([ev("cuda_runtime", "cudaLaunchKernel", i * 10, 2, pid=1, tid=1, correlation=corr)
             for i in range(n_calls)] +
            [ev("kernel", "k", i * 10 + 5, 3, stream=7, correlation=corr) for i in range(n_kernels)])


def r0_stdout(p):
    r, _ = run("stats", "-f", "json", "-r", "launch,queue", p)
    return r.stdout


def peak_kb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


@case("launch/queue: 8000 calls and 8000 kernels of one correlation id pair one to one, at once (stats, --partial)")
def _():
    with tempfile.TemporaryDirectory() as d:
        p = write(d, "t.json.gz", gzip.compress(json.dumps({"traceEvents": shared_id(8000, 8000)}).encode(), 9))
        assert os.path.getsize(p) < 60000  # ~46 KB of gzip (was 64 000 000 pairs, ~1 GB, many seconds)
        r, secs = run("stats", "-f", "json", "-r", "launch,queue", p)
        assert r.returncode == 0 and r.stderr == "", r
        assert secs < 5, secs
        assert WRAP or peak_kb() < 100000, peak_kb()  # was ~1 GB: every call with every kernel
        got = json.loads(r.stdout)
        (lr,) = got["launch"]
        # each kernel with the call 3 us before it: delay 5 - 2 = 3 us
        assert (lr["launches"], lr["cpu_avg_us"], lr["gpu_avg_us"], lr["delay_avg_us"], lr["delay_max_us"]) == (
            8000, 2, 3, 3, 3), lr
        (q,) = got["queue"]
        assert (q["stream"], q["samples"], q["kernels"], q["max"], q["mean"]) == ("7", 16000, 8000, 1, 0.5), q
        # the same through partial summaries, merged
        part = os.path.join(d, "p.json")
        r, _ = run("stats", "--partial", "-r", "launch,queue", "-o", part, p)
        assert r.returncode == 0, r
        m, _ = run("stats", "--merge", "-f", "json", "-r", "launch,queue", part)
        assert m.returncode == 0 and m.stdout == r0_stdout(p) and m.stderr == "", m


@case("launch/queue: calls or kernels beyond one per correlation id are left unpaired and counted in the one line")
def _():
    with tempfile.TemporaryDirectory() as d:
        # id 1: 3 calls (0, 10, 20), 1 kernel at 5: it pairs with the call at 0, 2 calls left;
        # id 2: 1 call at 1000, 4 kernels (1005, 1015, 1025, 1035): the first pairs, 3 kernels left;
        # id 3: a kernel at 1995 before its call at 2000 (clock skew): still the pair (delay 0)
        events = (shared_id(3, 1) +
                  [ev("cuda_runtime", "cudaLaunchKernel", 1000, 2, pid=1, tid=1, correlation=2)] +
                  [ev("kernel", "k", 1005 + 10 * i, 3, stream=7, correlation=2) for i in range(4)] +
                  [ev("cuda_runtime", "cudaLaunchKernel", 2000, 2, pid=1, tid=1, correlation=3),
                   ev("kernel", "k", 1995, 3, stream=7, correlation=3)])
        p = write(d, "t.json", json.dumps({"traceEvents": events}))
        line = ("flagtrace stats: 5 events skipped: 5 launch calls or GPU events left unpaired (their correlation "
                "id names one launch)\n")
        outs = {}
        for reports in ("launch", "queue", "launch,queue"):
            r, _ = run("stats", "-f", "json", "-r", reports, p)
            assert r.returncode == 0 and r.stderr == line, (reports, r.stderr)
            outs[reports] = got = json.loads(r.stdout)
            assert got["skipped_events"] == 5, got
        lr = outs["launch"]["launch"][0]
        # delays: 5 - 2 = 3, 1005 - 1002 = 3, and 1995 - 2002 < 0: 0
        assert (lr["launches"], lr["delay_avg_us"], lr["delay_max_us"]) == (3, 2, 3), lr
        q = outs["queue"]["queue"][0]
        assert (q["samples"], q["kernels"]) == (6, 3), q
        assert outs["launch,queue"]["launch"] == outs["launch"]["launch"]
        assert outs["launch,queue"]["queue"] == outs["queue"]["queue"]
        # the table says it too, and --partial/--merge print what one run prints
        r, _ = run("stats", "-r", "launch", p)
        assert r.returncode == 0 and r.stderr == line, r.stderr
        part = os.path.join(d, "p.json")
        w, _ = run("stats", "--partial", "-r", "launch,queue", "-o", part, p)
        assert w.returncode == 0, w
        m, _ = run("stats", "--merge", "-f", "json", "-r", "launch,queue", part)
        r, _ = run("stats", "-f", "json", "-r", "launch,queue", p)
        assert (m.returncode, m.stdout, m.stderr) == (0, r.stdout, r.stderr), (m.stderr, r.stderr)


@case("stats: an External id that is not a whole number in +-2^63 is skipped and counted, not put under (no op)")
def _():
    with tempfile.TemporaryDirectory() as d:
        raw = ['{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":0,"dur":100,"pid":1,"tid":1,"args":{"External id":5}}',
               '{"ph":"X","cat":"kernel","name":"good","ts":10,"dur":4,"pid":0,"tid":7,"args":{"External id":5}}',
               '{"ph":"X","cat":"kernel","name":"whole","ts":10,"dur":4,"pid":0,"tid":7,"args":{"External id":5.0}}']
        for bad in ('"5"', "5.5", "null", "18446744073709551621", "9223372036854775808", "[5]", "true"):
            raw.append('{"ph":"X","cat":"kernel","name":"bad","ts":20,"dur":8,"pid":0,"tid":7,'
                       '"args":{"External id":%s}}' % bad)
        raw.append('{"ph":"X","cat":"cpu_op","name":"aten::add","ts":200,"dur":10,"pid":1,"tid":1,'
                   '"args":{"External id":"x"}}')
        p = write(d, "t.json", '{"traceEvents":[' + ",".join(raw) + "]}")
        r, _ = run("stats", "-f", "json", "-r", "kernels,ops", p)
        assert r.returncode == 0, r
        assert r.stderr == ("flagtrace stats: 8 events skipped: 8 with an External id that is not a whole number in "
                            "+-2^63\n"), r.stderr
        got = json.loads(r.stdout)
        assert got["skipped_events"] == 8 and got["events"] == 11, got
        assert sorted(k["name"] for k in got["kernels"]) == ["good", "whole"], got["kernels"]
        ops = {o["name"]: o for o in got["ops"]}
        assert set(ops) == {"aten::mm"}, ops
        assert ops["aten::mm"]["self_device_us"] == 8, ops


def diff_json(a, b):
    r, _ = run("diff", "-f", "json", "-n", "0", a, b)
    assert r.returncode == 0, r
    return json.loads(r.stdout)


def steps_trace(d, name, steps, kernels=1):
    """Step ranges (name, ts) of 100 us, each with an op and `kernels` kernels of 1 us, and a 16-byte copy."""
    events = []
    for i, (step, ts) in enumerate(steps):
        events.append(ev("user_annotation", step, ts, 100, pid=1, tid=1))
        events.append(ev("cpu_op", "aten::mm", ts + 1, 10, pid=1, tid=1, **{"External id": i + 1}))
        events += [ev("kernel", "gemm", ts + 20 + k, 1, **{"External id": i + 1}) for k in range(kernels)]
        events.append(ev("gpu_memcpy", "Memcpy HtoD", ts + 50, 1, bytes=16, **{"External id": i + 1}))
    return write(d, name, json.dumps({"traceEvents": events}))


@case("diff: the summary's counts are whole numbers (81, not 81.000), in the table and as JSON integers")
def _():
    with tempfile.TemporaryDirectory() as d:
        a = steps_trace(d, "a.json", [("ProfilerStep#%d" % i, i * 1000) for i in range(3)], kernels=27)
        b = steps_trace(d, "b.json", [("ProfilerStep#%d" % i, i * 1000) for i in range(3)], kernels=30)
        s = {m["metric"]: m for m in diff_json(a, b)["summary"]}
        for metric, want in (("steps", (3, 3, 0)), ("kernels", (81, 90, 9)), ("copies", (3, 3, 0)),
                             ("copy_bytes", (48, 48, 0)), ("api_calls", (0, 0, 0))):
            got = (s[metric]["a"], s[metric]["b"], s[metric]["delta"])
            assert got == want and all(type(x) is int for x in got), (metric, got)
        assert type(s["kernel_time"]["a"]) is float and s["kernels"]["ratio"] == 1.111, s
        r, _ = run("diff", a, b)
        assert r.returncode == 0, r
        table = r.stdout.split("== steps,")[0]
        lines = {x.split()[0]: x.split()[2:] for x in table.splitlines() if x.split()[:1] != []}
        assert lines["kernels"] == ["81", "90", "1.111", "9"], lines["kernels"]
        assert lines["kernel_time"] == ["81.000", "90.000", "1.111", "9.000"], lines["kernel_time"]
        r, _ = run("diff", "-f", "csv", a, b)
        assert "\"kernels\",\"count\",81,90,1.111,9\n" in r.stdout, r.stdout
        # per step (2 steps against 3): counts are means, three decimals; the steps whole
        c = steps_trace(d, "c.json", [("ProfilerStep#%d" % i, i * 1000) for i in range(2)], kernels=27)
        s = {m["metric"]: m for m in diff_json(c, b)["summary"]}
        assert (s["steps"]["a"], s["steps"]["b"], s["steps"]["delta"]) == (2, 3, 1), s["steps"]
        assert (s["kernels"]["a"], s["kernels"]["b"]) == (27.0, 30.0), s["kernels"]


@case("diff: a step name repeated in one file is one step (its times summed): the summary and steps report agree")
def _():
    with tempfile.TemporaryDirectory() as d:
        a = steps_trace(d, "a.json", [("ProfilerStep#1", 0), ("ProfilerStep#1", 1000), ("ProfilerStep#1", 2000)])
        b = steps_trace(d, "b.json", [("ProfilerStep#%d" % (i + 1), i * 1000) for i in range(3)])
        doc = diff_json(a, b)
        assert (doc["a"]["steps"], doc["b"]["steps"], doc["alignment"]["per_step"]) == (1, 3, True), doc["a"]
        s = {m["metric"]: m for m in doc["summary"]}
        assert (s["steps"]["a"], s["steps"]["b"], s["step_time"]["a"], s["step_time"]["b"]) == (1, 3, 300, 100), s
        assert [(x["step"], x["a_name"], x["a_us"], x["b_name"], x["b_us"]) for x in doc["steps"]] == [
            (1, "ProfilerStep#1", 300, "ProfilerStep#1", 100), (2, "", 0, "ProfilerStep#2", 100),
            (3, "", 0, "ProfilerStep#3", 100)], doc["steps"]
        # two rank files of one step each are still two steps (each file's own), their mean the step time
        a2 = steps_trace(d, "a2.json", [("ProfilerStep#1", 0)])
        r, _ = run("diff", "-f", "json", "--a", os.path.join(d, "a*.json"), "--b", b)
        assert r.returncode == 0, r
        doc = json.loads(r.stdout)
        assert doc["a"]["steps"] == 2 and doc["steps"][0]["a_us"] == 200, (doc["a"], doc["steps"])
        assert a2


@case("diff: step numbers past 2^63 and 2^64 keep their order")
def _():
    with tempfile.TemporaryDirectory() as d:
        big = ["18446744073709551617", "18446744073709551616", "9223372036854775808", "9223372036854775807", "5"]
        a = steps_trace(d, "a.json", [("ProfilerStep#" + n, i * 1000) for i, n in enumerate(big)])
        b = steps_trace(d, "b.json", [("ProfilerStep#%d" % (i + 1), i * 1000) for i in range(5)])
        doc = diff_json(a, b)
        assert [x["a_name"] for x in doc["steps"]] == ["ProfilerStep#" + n for n in reversed(big)], doc["steps"]
        assert [x["b_name"] for x in doc["steps"]] == ["ProfilerStep#%d" % (i + 1) for i in range(5)], doc["steps"]


results.finish()
