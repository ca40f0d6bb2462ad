"""flagtrace diff end to end: a trace against itself, torch-cuda against flagtrace.torch
of the same step, H200 batch 8 against 16, synthetic cross-vendor pairs, the formats,
and hostile or mismatched input (one line, exit 2, never a table).

usage: test_diff.py FLAGTRACE DATA_DIR
FT_DIFF_PAIR_DIR: the batch{8,16}_{torch_cuda,flagtrace}.json.gz to use instead of DATA_DIR's
(scripts/gpu-check.sh: a pair recorded now); FT_TEST_ONLY: a regex of the tests to run."""
import csv
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tempfile

FT, DATA = sys.argv[1], sys.argv[2]
PAIR = os.environ.get("FT_DIFF_PAIR_DIR", DATA)
TMP = tempfile.mkdtemp()
passed = failed = 0


def run(*args):
    return subprocess.run([FT, "diff", "-q"] + list(args), capture_output=True, text=True)


def diff_json(*args):
    r = run("-f", "json", "-n", "0", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def d(name):
    return os.path.join(DATA, name)


def summary(doc):
    return {m["metric"]: m for m in doc["summary"]}


def test_self():
    """A trace against itself: every ratio 1 (or 0 where A is 0), every delta 0, nothing unmatched."""
    for t in ("batch8_torch_cuda.json.gz", "torch_cuda_2.11_reference.json.gz", "workload_h200.json.gz"):
        doc = diff_json(d(t), d(t))
        assert doc["unmatched"] == [], t
        assert doc["alignment"]["ops_a"] == doc["alignment"]["ops_b"] == doc["alignment"]["ops_matched"] > 0
        assert doc["ops"], t
        for rows, a, b in (("ops", "device_a_us", "device_b_us"), ("kernels", "a_us", "b_us"),
                           ("copies", "a_us", "b_us"), ("api", "a_us", "b_us")):
            for r in doc[rows]:
                assert r[a] == r[b] and r["ratio"] == (1.0 if r[a] else 0.0), (t, rows, r)
        for m in doc["summary"]:
            assert m["a"] == m["b"] and m["delta"] == 0, (t, m)
        for k in doc["kernels"]:
            assert k["count_a"] == k["count_b"], k


def test_same_step_two_captures():
    """torch-cuda and flagtrace.torch recording one training step (H200, batch 8): op for
    op the same names and calls, the same kernels by name and count in each op; device
    time within 5 % per op with 100 us or more."""
    doc = diff_json(os.path.join(PAIR, "batch8_torch_cuda.json.gz"), os.path.join(PAIR, "batch8_flagtrace.json.gz"))
    al = doc["alignment"]
    assert al["step"] == "ProfilerStep" and doc["a"]["steps"] == doc["b"]["steps"] == 3
    assert al["ops_a"] == al["ops_b"] == al["ops_matched"] == 60 and doc["unmatched"] == []
    assert al["kernels"] == "name" and al["kernel_names_shared"] == al["kernel_names_a"] == al["kernel_names_b"]
    for o in doc["ops"]:
        assert o["calls_a"] == o["calls_b"], o
        if o["device_a_us"] >= 100:
            assert 0.95 < o["ratio"] < 1.05, o
    for k in doc["kernels"]:
        assert k["count_a"] == k["count_b"], k
    s = summary(doc)
    assert s["kernels"]["a"] == s["kernels"]["b"] and s["api_calls"]["a"] == s["api_calls"]["b"]
    assert PAIR != DATA or s["kernels"]["a"] == 81


def test_batch_8_vs_16():
    """H200, one model at batch 8 and 16 (both captures): about twice the device time on the
    matmul ops with equal calls; the summary's kernel time grows as much."""
    for cap in ("torch_cuda", "flagtrace"):
        doc = diff_json(os.path.join(PAIR, f"batch8_{cap}.json.gz"), os.path.join(PAIR, f"batch16_{cap}.json.gz"))
        ops = {o["name"]: o for o in doc["ops"]}
        assert doc["unmatched"] == [] and doc["alignment"]["per_step"] is False
        for name, calls in (("aten::mm", 12), ("aten::addmm", 6)):
            o = ops[name]
            assert o["calls_a"] == o["calls_b"] == calls, o
            assert 1.8 < o["ratio"] < 2.2, o
        for name in ("aten::linear", "aten::matmul"):  # their work is their children's: no self device time
            if name in ops:
                assert ops[name]["calls_a"] == ops[name]["calls_b"], ops[name]
        assert doc["ops"][0]["name"] == "aten::mm"  # the largest regression first
        s = summary(doc)
        assert 1.7 < s["kernel_time"]["ratio"] < 2.1 and s["copy_bytes"]["ratio"] == 2.0, s
        # the steps side by side in their order; their mean is the summary's step time
        assert [(x["step"], x["a_name"], x["b_name"]) for x in doc["steps"]] == \
            [(k + 1, f"ProfilerStep#{k + 2}", f"ProfilerStep#{k + 2}") for k in range(3)], doc["steps"]
        for side in "ab":
            mean = sum(x[f"{side}_us"] for x in doc["steps"]) / 3
            assert abs(mean - s["step_time"][side]) < 0.01, (mean, s["step_time"])
        # a step's wall time also holds host time that does not grow with the batch (H200, fresh
        # captures: 1.36-1.60, the committed ones 1.75-1.81), so only its direction and bound
        assert all(1.2 < x["ratio"] < 2.1 for x in doc["steps"]), doc["steps"]


# ---- synthetic cross-vendor traces: one op sequence, each vendor's kernel names ----
VENDORS = {
    "cuda": ("cuda_runtime", "cudaLaunchKernel",
             {"aten::mm": ["sm90_xmma_gemm_f32f32_tn_n_tilesize128x128x8_kernel"],
              "aten::add": ["void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>"],
              "aten::softmax": ["void cunn_SoftMaxForward<4, float>", "void reduce_max_kernel<float>"]}),
    "metax": ("cuda_runtime", "mcLaunchKernel",
              {"aten::mm": ["mcblas_sgemm_nt_128x64_kernel"], "aten::add": ["mc_elementwise_add_f32"],
               "aten::softmax": ["mcdnn_softmax_fwd_f32"]}),
    "musa": ("privateuse1_runtime", "musaLaunchKernel",
             {"aten::mm": ["mublas_gemm_f32_tn", "mublas_gemm_splitk_reduce"], "aten::add": ["musa_add_kernel_f32"],
              "aten::softmax": ["mudnn_softmax_f32"]}),
    "ascend": ("privateuse1_runtime", "aclrtLaunchKernel",
               {"aten::mm": ["MatMulV2_f32_high_precision"], "aten::add": ["Add_kernel"],
                "aten::softmax": ["SoftmaxV2_f32"]}),
}
SEQ = ["aten::mm", "aten::add", "aten::softmax", "aten::mm", "aten::add"]


def synthetic(vendor, steps=2, scale=1.0):
    cat, launch, kernels = VENDORS[vendor]
    ev, t, ext = [], 0, 0
    for s in range(steps):
        step_start = t
        t += 5
        for op in SEQ:
            ext += 1
            op_start = t
            names = kernels[op]
            for i, k in enumerate(names):
                corr = ext * 10 + i
                ev.append({"ph": "X", "cat": cat, "name": launch, "pid": 1, "tid": 1, "ts": t + 1, "dur": 3,
                           "args": {"correlation": corr, "External id": ext}})
                ev.append({"ph": "X", "cat": "kernel", "name": k, "pid": 0, "tid": 7, "ts": t + 10,
                           "dur": 20 * scale / len(names),
                           "args": {"correlation": corr, "External id": ext, "stream": 7, "device": 0}})
                t += 5
            # the op after its work in even steps, before it in odd ones: diff joins both ways
            at = len(ev) if s % 2 == 0 else len(ev) - 2 * len(names)
            ev.insert(at, {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": op_start,
                           "dur": t - op_start, "args": {"External id": ext}})
            t += 40
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 4}", "pid": 1, "tid": 1,
                   "ts": step_start, "dur": t - step_start, "args": {"External id": 10000 + s}})
        t += 5
    path = os.path.join(TMP, f"{vendor}_{steps}_{scale}.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": ev}, f)
    return path


def test_cross_vendor():
    """CUDA against each vendor: 100 % of ops aligned, kernels compared per op as a group
    (count, total, mean), never by name; the same against itself matches by name."""
    a = synthetic("cuda")
    for v in ("metax", "musa", "ascend"):
        b = synthetic(v, scale=1.5)
        doc = diff_json(a, b)
        al = doc["alignment"]
        assert al["ops_a"] == al["ops_b"] == al["ops_matched"] == 3 and doc["unmatched"] == [], (v, al)
        assert al["kernels"] == "group" and al["kernel_names_shared"] == 0, al
        groups = {k["op"]: k for k in doc["kernels"] if k["kernel"] == "(all kernels)"}
        assert sorted(groups) == ["aten::add", "aten::mm", "aten::softmax"], groups
        for op, g in groups.items():
            n = SEQ.count(op) * 2  # 2 steps
            assert g["count_a"] == n * len(VENDORS["cuda"][2][op]) and g["count_b"] == n * len(VENDORS[v][2][op])
            assert g["a_us"] == 20 * n and g["b_us"] == 30 * n and g["ratio"] == 1.5, (v, g)
        ops = {o["name"]: o for o in doc["ops"]}
        assert ops["aten::mm"]["calls_a"] == ops["aten::mm"]["calls_b"] == 4
        assert ops["aten::mm"]["ratio"] == 1.5 and ops["aten::mm"]["delta_us"] == 40.0
        # the other vendor's kernel names are listed under the group, on their side only
        names_b = {k["kernel"] for k in doc["kernels"] if k["count_b"] and not k["count_a"]}
        assert set(VENDORS[v][2]["aten::mm"]) <= names_b, names_b
    doc = diff_json(a, synthetic("cuda", scale=2.0))
    assert doc["alignment"]["kernels"] == "name"
    mm = [k for k in doc["kernels"] if k["op"] == "aten::mm"]
    assert len(mm) == 1 and mm[0]["count_a"] == mm[0]["count_b"] == 4 and mm[0]["ratio"] == 2.0, mm
    # --kernels name across vendors: nothing matches, each kernel on its own side
    doc = diff_json("--kernels", "name", a, synthetic("ascend"))
    assert all(not (k["count_a"] and k["count_b"]) for k in doc["kernels"])


def test_per_step():
    """Different numbers of steps: values per step, said in the output."""
    doc = diff_json(synthetic("cuda", steps=2), synthetic("cuda", steps=4))
    assert doc["alignment"]["per_step"] is True and doc["a"]["steps"] == 2 and doc["b"]["steps"] == 4
    # steps 3 and 4 of B have no A step beside them
    assert [(x["step"], x["a_name"], x["b_name"]) for x in doc["steps"]] == \
        [(1, "ProfilerStep#4", "ProfilerStep#4"), (2, "ProfilerStep#5", "ProfilerStep#5"),
         (3, "", "ProfilerStep#6"), (4, "", "ProfilerStep#7")], doc["steps"]
    for o in doc["ops"]:
        assert o["calls_a"] == o["calls_b"] and o["ratio"] == 1.0, o
    r = run(synthetic("cuda", steps=2), synthetic("cuda", steps=4))
    assert "values are per step" in r.stdout, r.stdout


def test_formats_and_limit():
    a, b = d("batch8_torch_cuda.json.gz"), d("batch16_torch_cuda.json.gz")
    r = run("-f", "csv", a, b)
    assert r.returncode == 0, r.stderr
    parts = r.stdout.split("\n\n")
    assert [p.splitlines()[0] for p in parts] == ["# summary", "# steps", "# ops", "# unmatched", "# kernels", "# api", "# copies"]
    ops = list(csv.DictReader(io.StringIO(parts[2].split("\n", 1)[1])))
    assert ops[0]["name"] == "aten::mm" and ops[0]["calls_a"] == "12", ops[0]
    r = run("-n", "2", a, b)
    assert r.returncode == 0 and "ops aligned by name: 60 of 60 (100.0 %)" in r.stdout, r.stdout
    doc = json.loads(run("-f", "json", "-n", "2", a, b).stdout)
    assert [o["name"] for o in doc["ops"]][:2] == ["aten::mm", "aten::addmm"] and len(doc["ops"]) == 4
    doc = diff_json("--a", os.path.join(DATA, "batch8_torch*.json.gz"), "--b", os.path.join(DATA, "batch16_torch*"))
    assert doc["a"]["files"][0]["file"].endswith("batch8_torch_cuda.json.gz")
    out = os.path.join(TMP, "d.json")
    assert run("-f", "json", "-o", out, a, b).returncode == 0 and json.load(open(out))["schema"] == 1
    r = run("-o", out, a, b)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    h = subprocess.run([FT, "diff", "--help"], capture_output=True, text=True)
    assert h.returncode == 0 and h.stdout.startswith("usage: flagtrace diff") and "--kernels MODE" in h.stdout


def page_data(page):
    """The report page's data block (JSON, '<' '>' '&' as \\u escapes) and its CSP."""
    m = re.search(r'<script id="ft-data" type="application/json">(.*?)</script>', page, re.S)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert m and csp, page[:400]
    return json.loads(m.group(1)), csp.group(1)


def test_html():
    """-f html: the report's viewer with A above B, the diff's json whole as its tables; every
    trace text data, never markup; stdin refused (each side is read twice)."""
    a, b = d("batch8_torch_cuda.json.gz"), d("batch16_torch_cuda.json.gz")
    r = run("-q", "-f", "html", "-n", "0", a, b)
    assert r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>"), r.stderr
    data, csp = page_data(r.stdout)
    assert data["diff"] == diff_json(a, b), "the page's diff is not diff -f json's document"
    assert [f["file"] for f in data["files"]] == [a] and [f["file"] for f in data["b"]["files"]] == [b]
    assert "'unsafe-inline'" not in csp and "script-src 'sha256-" in csp, csp
    # a hostile op and kernel name: escaped data in the page, never markup
    evil = synthetic("cuda")
    doc = json.load(open(evil))
    for e in doc["traceEvents"]:
        if e["name"] == "aten::add":
            e["name"] = "<script>alert(1)</script>"
        elif e["name"].startswith("void at::native"):
            e["name"] = "k\x1b[31m\"'&"
    with open(evil, "w") as f:
        json.dump(doc, f)
    r = run("-q", "-f", "html", "-n", "0", evil, evil)  # -n 0: unchanged ops too (a trace against itself)
    assert r.returncode == 0, r.stderr
    assert "<script>alert" not in r.stdout and r.stdout.count("<script") == 2, "a name became markup"
    data, _ = page_data(r.stdout)
    assert "<script>alert(1)</script>" in [o["name"] for o in data["diff"]["ops"]]
    with open(a, "rb") as f:
        r = subprocess.run([FT, "diff", "-f", "html", "-", b], stdin=f, capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and "stdin cannot be one" in r.stderr, r.stderr


def one_line_error(args, words):
    r = run(*args)
    assert r.returncode == 2, (args, r.returncode, r.stdout)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("flagtrace diff: "), r.stderr
    assert words in r.stderr, (words, r.stderr)


def test_hostile():
    empty = os.path.join(TMP, "empty.json")
    with open(empty, "w") as f:
        json.dump({"traceEvents": []}, f)
    bad = os.path.join(TMP, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "ts": ')
    ref = d("batch8_torch_cuda.json.gz")
    one_line_error([ref, empty], "B (")
    one_line_error([empty, ref], "has no ops, kernels or copies")
    one_line_error([ref, bad], "B: ")
    one_line_error([ref, d("workload_h200.json.gz")], "ProfilerStep ranges and B none")
    one_line_error(["--step", "all", ref, d("workload_h200.json.gz")], "do not look like one workload")
    one_line_error(["--step", "train", ref, ref], "no range named 'train'")
    one_line_error(["--shapes", synthetic("cuda"), synthetic("cuda")], "no Input Dims")
    one_line_error([ref], "two traces")
    one_line_error(["-", "-"], "can be read once")
    one_line_error(["--a", ref, "--b", ref, ref], "not both")
    one_line_error(["--a", ref, ref], "go together")
    one_line_error(["--a", os.path.join(TMP, "nothing*.json"), "--b", ref], "no file matches")
    one_line_error(["--kernels", "vendor", ref, ref], "--kernels takes")
    # --force: two workloads compared anyway, everything unmatched said so
    r = run("--force", "--step", "all", "-f", "json", ref, d("workload_h200.json.gz"))
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["alignment"]["ops_matched"] == 0 and len(doc["unmatched"]) > 0


def test_shapes():
    """--shapes: ops by name and Input Dims (the batch pair was recorded with record_shapes):
    against itself all 93 (op, dims) keys match; batch 8 against 16 the matmuls' dims differ."""
    t = d("batch8_torch_cuda.json.gz")
    doc = diff_json("--shapes", t, t)
    assert doc["alignment"]["ops_matched"] == 93 and doc["unmatched"] == []
    assert {"input_dims", "name"} <= set(doc["ops"][0]), doc["ops"][0]
    doc = diff_json("--shapes", "--force", t, d("batch16_torch_cuda.json.gz"))
    mm = [o for o in doc["unmatched"] if o["name"] == "aten::mm"]
    # batch 8 runs 8 x 256 = 2048 rows through the matmuls, batch 16 4096
    assert sorted(o["side"] for o in mm) == ["A"] * 4 + ["B"] * 3, mm
    assert all(("2048" in o["input_dims"]) == (o["side"] == "A") for o in mm), mm


def test_names_that_exist():
    """Issue 49: a name that exists is read as it is, never as a glob ('t[1].json' is not
    t1.json, which the pattern matches); "-o --" is refused, not a file named "--"."""
    plain, brackets = os.path.join(TMP, "t1.json.gz"), os.path.join(TMP, "t[1].json.gz")
    for src, dst in ((d("batch8_torch_cuda.json.gz"), plain), (d("batch16_torch_cuda.json.gz"), brackets)):
        with open(src, "rb") as i, open(dst, "wb") as o:
            o.write(i.read())
    for args in ([brackets, brackets], ["--a", brackets, "--b", brackets]):
        doc = diff_json(*args)
        assert [f["file"] for f in doc["a"]["files"]] == [brackets], doc["a"]["files"]
        assert [f["file"] for f in doc["b"]["files"]] == [brackets], doc["b"]["files"]
    # a pattern that names no file is still one
    doc = diff_json("--a", os.path.join(TMP, "t?.json.gz"), "--b", plain)
    assert [f["file"] for f in doc["a"]["files"]] == [plain], doc["a"]["files"]
    cwd = os.getcwd()
    os.chdir(TMP)
    try:
        one_line_error(["-o", "--", plain, plain], "option '-o' needs a value before '--'")
        assert not os.path.exists(os.path.join(TMP, "--")), "diff -o -- wrote a file named --"
    finally:
        os.chdir(cwd)


def test_html_read_once_inputs():
    """Issue 49: -f html reads each trace twice: a FIFO (whose second open waited for a
    writer for good) or a pipe (<(cat A): "empty file") is refused before any reading,
    in one line that says why."""
    a = d("batch8_torch_cuda.json.gz")
    fifo = os.path.join(TMP, "side.fifo")
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'exec cat "$0" > "$1"', a, fifo])
    try:
        r = subprocess.run([FT, "diff", "-q", "-f", "html", fifo, a], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        assert False, "diff -f html with a FIFO side hung"
    finally:
        writer.kill()
        writer.wait()
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith(f"flagtrace diff: {fifo}: -f html reads each trace twice") and "not a regular file" in r.stderr, r.stderr
    # a pipe, as bash's <(cat A) gives it (/dev/fd/N)
    rd, wr = os.pipe()
    r = subprocess.run([FT, "diff", "-q", "-f", "html", a, f"/dev/fd/{rd}"], capture_output=True, text=True,
                       timeout=60, pass_fds=(rd,))
    os.close(rd)
    os.close(wr)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "not a regular file" in r.stderr, r.stderr


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
