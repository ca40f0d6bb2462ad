"""flagtrace diff --by-step end to end: step N of A against step N of B, each thread's
top-level ops aligned by name in call order, on synthetic traces whose answer is known
and on the committed H200 batch 8/16 pair.

usage: test_diff_step.py FLAGTRACE DATA_DIR
FT_TEST_ONLY: a regex of the tests to run."""
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

FT, DATA = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp()
passed = failed = 0


def run(*args):
    return subprocess.run([FT, "diff", "-q", "--by-step"] + list(args), capture_output=True, text=True)


def step_json(*args):
    r = run("-f", "json", "-n", "0", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def d(name):
    return os.path.join(DATA, name)


# one step: its top-level ops on thread 1 in call order, each (name, kernel us); a
# name "aten::linear" holds an aten::mm child that launches the kernel (the work is
# the top-level op's); thread 2 runs BACKWARD ops after them (torch's autograd thread)
STEP = [("aten::linear", 20), ("aten::add", 10), ("aten::softmax", 30), ("aten::linear", 20), ("aten::add", 10)]
BACKWARD = [("autograd::engine::evaluate_function: MmBackward0", 40), ("Optimizer.step#SGD.step", 5)]


def trace(name, steps, numbers=None, step_name=None):
    """steps: per step (thread 1's ops, thread 2's ops); numbers: ProfilerStep#N's N;
    step_name: the steps are user ranges of that name instead."""
    ev, t, ext = [], 0, 0
    numbers = numbers or list(range(len(steps)))

    def op(tid, name, kernel_us):
        nonlocal t, ext
        ext += 1
        start, corr = t, ext
        body = [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": start, "dur": 8,
                 "args": {"External id": ext}}]
        inner = name
        if name == "aten::linear":  # the launch under a child op
            ext += 1
            inner = "aten::mm"
            body.append({"ph": "X", "cat": "cpu_op", "name": inner, "pid": 1, "tid": tid, "ts": start + 1,
                         "dur": 6, "args": {"External id": ext}})
        body.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid,
                     "ts": start + 2, "dur": 3, "args": {"correlation": corr, "External id": ext}})
        body.append({"ph": "X", "cat": "kernel", "name": f"k_{inner}", "pid": 0, "tid": 7, "ts": start + 6,
                     "dur": kernel_us, "args": {"correlation": corr, "External id": ext, "stream": 7,
                                                "device": 0}})
        ev.extend(body)
        t += 10 + kernel_us

    for n, (fwd, bwd) in zip(numbers, steps):
        step_start = t
        t += 2
        for o in fwd:
            op(1, *o)
        for o in bwd:
            op(2, *o)
        ev.append({"ph": "X", "cat": "user_annotation", "name": step_name or f"ProfilerStep#{n}", "pid": 1, "tid": 1,
                   "ts": step_start, "dur": t - step_start})
        t += 3
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        json.dump({"traceEvents": ev}, f)
    return path


def test_one_op_slower_in_step_2():
    """B's softmax takes 3x in step 2 only: found in step 2 only, the rest unchanged."""
    a = trace("slow_a.json", [(STEP, BACKWARD)] * 3, [2, 3, 4])
    slow = [(n, 90 if n == "aten::softmax" else us) for n, us in STEP]
    b = trace("slow_b.json", [(STEP, BACKWARD), (slow, BACKWARD), (STEP, BACKWARD)], [2, 3, 4])
    doc = step_json(a, b)
    al = doc["alignment"]
    assert al["step"] == "ProfilerStep" and al["steps_by"] == "number" and al["steps_matched"] == 3, al
    assert al["ops_a"] == al["ops_b"] == al["ops_matched"] == 21 and al["resyncs"] == 0, al
    assert doc["unmatched"] == []
    assert [(s["a_name"], s["b_name"]) for s in doc["steps"]] == [(f"ProfilerStep#{n}",) * 2 for n in (2, 3, 4)]
    # step walls: the slow softmax adds 60 us to step 2's
    walls = [(s["a_us"], s["b_us"]) for s in doc["steps"]]
    assert walls[0] == walls[2] and walls[1][1] - walls[1][0] == 60.0, walls
    assert [s["device_b_us"] - s["device_a_us"] for s in doc["steps"]] == [0.0, 60.0, 0.0], doc["steps"]
    changed = [o for o in doc["ops"] if o["device_ratio"] != 1.0 or o["cpu_ratio"] != 1.0]
    assert len(changed) == 1, changed
    o = changed[0]
    assert (o["step"], o["name"], o["thread"], o["a_pos"], o["b_pos"]) == (2, "aten::softmax", 0, 3, 3), o
    assert (o["device_a_us"], o["device_b_us"], o["device_ratio"]) == (30.0, 90.0, 3.0), o
    # the largest change first in its step; every top-level op of the step aligned (-n 0)
    assert [x["name"] for x in doc["ops"] if x["step"] == 2][0] == "aten::softmax"
    assert sum(1 for x in doc["ops"] if x["step"] == 2) == 7
    # aten::linear's work is its child aten::mm's kernel: the top-level op carries it
    lin = [x for x in doc["ops"] if x["name"] == "aten::linear"]
    assert len(lin) == 6 and all(x["device_a_us"] == 20.0 and x["kernels_a"] == 1 for x in lin), lin
    # the backward thread aligned on its own (thread 1)
    bw = [x for x in doc["ops"] if x["thread"] == 1]
    assert sorted({x["name"] for x in bw}) == sorted(n for n, _ in BACKWARD) and len(bw) == 6, bw
    # -n 1: the one that changed most per step
    doc = json.loads(run("-f", "json", "-n", "1", a, b).stdout)
    assert [(x["step"], x["name"]) for x in doc["ops"]][1] == (2, "aten::softmax"), doc["ops"]
    assert len(doc["ops"]) == 3


def test_op_inserted_in_b():
    """B runs an extra aten::relu in step 1: reported as only in B, and the ops after it
    still aligned with A's (B's positions one further)."""
    a = trace("ins_a.json", [(STEP, BACKWARD)] * 2)
    ins = STEP[:2] + [("aten::relu", 5)] + STEP[2:]
    b = trace("ins_b.json", [(ins, BACKWARD), (STEP, BACKWARD)])
    doc = step_json(a, b)
    al = doc["alignment"]
    assert al["ops_a"] == 14 and al["ops_b"] == 15 and al["ops_matched"] == 14 and al["resyncs"] == 1, al
    assert [(u["step"], u["side"], u["name"], u["pos"], u["device_us"]) for u in doc["unmatched"]] == \
        [(1, "B", "aten::relu", 3, 5.0)], doc["unmatched"]
    s1 = {(x["a_pos"], x["b_pos"]): x["name"] for x in doc["ops"] if x["step"] == 1 and x["thread"] == 0}
    assert s1 == {(1, 1): "aten::linear", (2, 2): "aten::add", (3, 4): "aten::softmax", (4, 5): "aten::linear",
                  (5, 6): "aten::add"}, s1
    assert all(x["device_ratio"] == 1.0 for x in doc["ops"]), doc["ops"]
    assert [(s["ops_a"], s["ops_b"], s["ops_matched"], s["resyncs"]) for s in doc["steps"]] == [(7, 8, 7, 1), (7, 7, 7, 0)]
    # a renamed op: only in A and only in B at the same place, the rest aligned
    ren = [("aten::gelu", us) if n == "aten::softmax" else (n, us) for n, us in STEP]
    doc = step_json(a, trace("ren_b.json", [(ren, BACKWARD), (STEP, BACKWARD)]))
    assert sorted((u["side"], u["name"], u["pos"]) for u in doc["unmatched"]) == \
        [("A", "aten::softmax", 3), ("B", "aten::gelu", 3)], doc["unmatched"]
    assert doc["alignment"]["ops_matched"] == 13 and doc["alignment"]["resyncs"] == 1
    # the table says it per step
    r = run(a, b)
    assert r.returncode == 0 and "== step 1: ops only in A or only in B ==" in r.stdout, r.stdout
    assert "aten::relu" in r.stdout and "1 break (a name mismatch" in r.stdout, r.stdout


def test_many_edits():
    """300 distinct ops, B without every 7th and with a new op after every 11th: the
    shortest edit script keeps the 257 others aligned, each at its place; past 1024
    edits (1200 ops renamed) the rest is paired by position, where names agree."""
    fwd = [(f"op{i}", 1) for i in range(300)]
    ins = []
    for i, o in enumerate(fwd):
        if i % 7:
            ins.append(o)
        if i % 11 == 0:
            ins.append((f"new{i}", 1))
    doc = step_json(trace("edit_a.json", [(fwd, [])]), trace("edit_b.json", [(ins, [])]))
    al = doc["alignment"]
    assert (al["ops_a"], al["ops_b"], al["ops_matched"]) == (300, len(ins), 257), al
    assert sorted(u["name"] for u in doc["unmatched"] if u["side"] == "A") == sorted(f"op{i}" for i in range(0, 300, 7))
    assert sum(u["side"] == "B" for u in doc["unmatched"]) == 28
    assert all(ins[x["b_pos"] - 1][0] == x["name"] == f"op{x['a_pos'] - 1}" for x in doc["ops"]), doc["ops"][:3]
    big_a = [(f"a{i}", 1) for i in range(1200)]
    big_b = [(f"a{i}" if i % 2 else f"b{i}", 1) for i in range(1200)]
    doc = step_json(trace("big_a.json", [(big_a, [])]), trace("big_b.json", [(big_b, [])]))
    assert doc["alignment"]["ops_matched"] == 600 and len(doc["unmatched"]) == 1200, doc["alignment"]
    assert all(x["a_pos"] == x["b_pos"] for x in doc["ops"])


def test_step_numbers_differ():
    """A's steps 4, 5 against B's 10, 11: paired by position, and the output says so."""
    a = trace("num_a.json", [(STEP, [])] * 2, [4, 5])
    b = trace("num_b.json", [(STEP, [])] * 2, [10, 11])
    doc = step_json(a, b)
    assert doc["alignment"]["steps_by"] == "position" and doc["alignment"]["steps_matched"] == 2
    assert [(s["a_name"], s["b_name"]) for s in doc["steps"]] == [("ProfilerStep#4", "ProfilerStep#10"),
                                                                  ("ProfilerStep#5", "ProfilerStep#11")]
    assert "paired by position (the step numbers differ" in run(a, b).stdout
    # one more step on B, numbers shared: by number, B's extra step alone
    c = trace("num_c.json", [(STEP, [])] * 3, [4, 5, 6])
    doc = step_json(a, c)
    assert doc["alignment"]["steps_by"] == "number" and doc["alignment"]["steps_matched"] == 2
    assert doc["steps"][2]["a_name"] == "" and doc["steps"][2]["b_name"] == "ProfilerStep#6"
    assert doc["steps"][2]["ops_a"] == 0 and doc["steps"][2]["ops_b"] == 5
    assert [u["side"] for u in doc["unmatched"]] == ["B"] * 5
    # --step NAME: a user range's occurrences, the k-th with the k-th
    slow = [(n, 90 if n == "aten::add" else us) for n, us in STEP]
    doc = step_json("--step", "train", trace("u_a.json", [(STEP, [])] * 3, step_name="train"),
                    trace("u_b.json", [(STEP, []), (STEP, []), (slow, [])], step_name="train"))
    assert doc["alignment"]["step"] == "train" and doc["alignment"]["steps_by"] == "position", doc["alignment"]
    assert [s["a_name"] for s in doc["steps"]] == ["train"] * 3 and doc["alignment"]["ops_matched"] == 15
    changed = [(o["step"], o["name"], o["a_pos"], o["device_b_us"]) for o in doc["ops"] if o["device_ratio"] != 1]
    assert changed == [(3, "aten::add", 2, 90.0), (3, "aten::add", 5, 90.0)], changed
    # --step all: each trace whole, one step
    doc = step_json("--step", "all", a, c)
    assert doc["alignment"]["steps_by"] == "whole" and doc["alignment"]["step"] is None
    assert doc["steps"][0]["ops_a"] == 10 and doc["steps"][0]["ops_b"] == 15 and doc["steps"][0]["ops_matched"] == 10


def test_batch_pair():
    """H200 batch 8 against 16 (both captures): every step of A paired with B's of the same
    number; each step's wall time is the plain diff's steps report's; the device time of
    the steps grows as the plain diff's kernel time does; every top-level op aligned."""
    for cap in ("torch_cuda", "flagtrace"):
        a, b = d(f"batch8_{cap}.json.gz"), d(f"batch16_{cap}.json.gz")
        doc = step_json(a, b)
        plain = subprocess.run([FT, "diff", "-q", "-f", "json", "-n", "0", a, b], capture_output=True, text=True)
        assert plain.returncode == 0, plain.stderr
        plain = json.loads(plain.stdout)
        al = doc["alignment"]
        assert al["steps_by"] == "number" and al["steps_matched"] == doc["a"]["steps"] == doc["b"]["steps"] == 3, al
        assert [(s["a_name"], s["b_name"]) for s in doc["steps"]] == \
            [(p["a_name"], p["b_name"]) for p in plain["steps"]], (doc["steps"], plain["steps"])
        for s, p in zip(doc["steps"], plain["steps"]):
            assert abs(s["a_us"] - p["a_us"]) < 0.002 and abs(s["b_us"] - p["b_us"]) < 0.002, (s, p)
            assert s["ops_a"] == s["ops_b"] == s["ops_matched"] > 0 and s["resyncs"] == 0, s
        assert doc["unmatched"] == []
        summ = {m["metric"]: m for m in plain["summary"]}
        dev = [sum(s[f"device_{x}_us"] for s in doc["steps"]) for x in "ab"]
        assert abs(dev[1] / dev[0] - summ["kernel_time"]["ratio"]) < 0.05, (dev, summ["kernel_time"])
        # aten::mm and aten::addmm run under top-level ops: the steps' ops carry their work
        for s in doc["steps"]:
            ops = [o for o in doc["ops"] if o["step"] == s["step"]]
            assert len(ops) == s["ops_matched"]
            for x in "ab":
                total = sum(o[f"device_{x}_us"] for o in ops)
                assert total <= s[f"device_{x}_us"] + 0.01, (total, s)


def test_formats_and_refusals():
    a = trace("f_a.json", [(STEP, BACKWARD)] * 2)
    trace("f_b.json", [(STEP, BACKWARD)])
    empty, bad = os.path.join(TMP, "empty.json"), os.path.join(TMP, "bad.json")
    with open(empty, "w") as f:
        json.dump({"traceEvents": []}, f)
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "ts": ')
    r = run("-f", "csv", a, a)
    assert r.returncode == 0, r.stderr
    parts = r.stdout.split("\n\n")
    assert [p.splitlines()[0] for p in parts] == ["# steps", "# ops", "# unmatched"], parts
    rows = list(csv.DictReader(io.StringIO(parts[0].split("\n", 1)[1])))
    assert [x["ratio"] for x in rows] == ["1.000", "1.000"], rows
    for args, words in ((["-f", "html", a, a], "no -f html"), (["--shapes", a, a], "no --shapes"),
                        (["--a", os.path.join(TMP, "f_*.json"), "--b", a], "--by-step compares one trace a side"),
                        ([a, d("workload_h200.json.gz")], "ProfilerStep ranges and B none"),
                        (["--step", "train", a, a], "no range named 'train'"),
                        ([a, empty], "B ("), ([a, bad], "B: ")):
        r = run(*args)
        assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, (args, r.stderr)
        assert words in r.stderr, (words, r.stderr)


for name, fn in list(globals().items()):
    if name.startswith("test_") and callable(fn) and re.search(os.environ.get("FT_TEST_ONLY", ""), name):
        try:
            fn()
            passed += 1
        except AssertionError as e:
            failed += 1
            print(f"FAIL {name}: {e}"[:3000])
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
