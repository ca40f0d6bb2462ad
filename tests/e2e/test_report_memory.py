"""End-to-end: the report's device memory data (issue 51), read from the page `flagtrace report`
writes: per file and device, allocated and reserved after every [memory] operation, its bytes, op
and call, and the peak (time on the page's clock, bytes, op), exactly; the host's rows not drawn;
rows without totals summed; devices past 16 a file counted, not drawn; no [memory]: no track."""
import base64
import gzip
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

flagtrace = sys.argv[1]
driver = sys.argv[2] if len(sys.argv) > 2 else None  # inject_driver, with the fake CUPTI in the environment
results = Results()
tmp_case = results.tmp_case
MiB = 1 << 20


def report_data(d, events):
    """The page's data (the JSON in its ft-data element) of a report of one trace of these events."""
    path, out = os.path.join(d, "t.json"), os.path.join(d, "r.html")
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "traceEvents": events}, f)
    subprocess.run([flagtrace, "report", "--force-overwrite", "-o", out, path], check=True, capture_output=True)
    with open(out) as f:
        page = f.read()
    return json.loads(re.search(r'<script id="ft-data" type="application/json">(.*?)</script>', page, re.S).group(1))


def column(text, n, running):
    """A column as the page reads it: base64 of gzip'd zigzag varints (each the running total when running)."""
    b, out, p, acc = gzip.decompress(base64.b64decode(text)), [], 0, 0
    for _ in range(n):
        z, shift = 0, 0
        while True:
            c = b[p]
            p += 1
            z |= (c & 127) << shift
            shift += 7
            if not c & 128:
                break
        v = (z >> 1) ^ -(z & 1)
        acc = acc + v if running else v
        out.append(acc)
    assert p == len(b), "the column holds n values"
    return out


def tracks(data):
    """Per file, its devices' tracks decoded: [(device, type, rows, peak)], rows (t_ns, allocated,
    reserved, bytes, op, call) with names; and the file's mem_more."""
    names = data["tl"]["names"]
    out = []
    for f in data["tl"]["files"]:
        devs = []
        for m in f["mem"]:
            n = m["n"]
            t, a, r = column(m["t"], n, True), column(m["a"], n, True), column(m["r"], n, True)
            b, w, k = column(m["b"], n, False), column(m["w"], n, False), column(m["k"], n, False)
            rows = [(t[i], a[i], r[i], b[i], names[w[i] - 1] if w[i] else None, names[k[i] - 1] if k[i] else None)
                    for i in range(n)]
            assert m["max_reserved"] == max(r), (m["max_reserved"], r)
            devs.append((m["device"], m["type"], rows, m["peak"]))
        out.append((devs, f["mem_more"]))
    return out


def op(name, ts, dur, ext):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 100, "tid": 1, "ts": ts, "dur": dur, "args": {"External id": ext}}


def mem(ts, nbytes, alloc=None, resv=None, dev=0, dtype=1, **extra):
    args = {"Device Type": dtype, "Device Id": dev, "Addr": 4096 + ts, "Bytes": nbytes}
    if alloc is not None:
        args["Total Allocated"] = alloc
    if resv is not None:
        args["Total Reserved"] = resv
    args.update(extra)
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 1, "ts": ts, "args": args}


@tmp_case("torch's [memory] and ours: each device's samples, op and call, and the peak, exactly")
def _(d):
    ev = [op("aten::empty", 10, 5, 1), mem(12, MiB, MiB, 2 * MiB, **{"External id": 1, "correlation": 9}),
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 100, "tid": 1, "ts": 11, "dur": 3,
           "args": {"correlation": 9, "External id": 1}},
          op("aten::mm", 20, 10, 2), mem(25, 3 * MiB, 4 * MiB, 8 * MiB),
          {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 20, "args": {"stream": 7}},
          op("aten::relu", 40, 10, 3), mem(45, -3 * MiB, MiB, 8 * MiB),
          mem(60, 0, MiB, 2 * MiB, Op="unreserve", **{"Pool Bytes": -6 * MiB}),
          mem(48, 512, 512, MiB, dev=1),
          mem(50, 64, 64, 0, dev=-1, dtype=0)]  # the host's: not drawn
    (devs, more), = tracks(report_data(d, ev))
    assert more == 0
    assert [(x[0], x[1]) for x in devs] == [(0, 1), (1, 1)], devs
    # the page's clock: ns from the file's first slice (aten::empty at 10 us)
    assert devs[0][2] == [(2000, MiB, 2 * MiB, MiB, "aten::empty", "cudaMalloc"),
                          (15000, 4 * MiB, 8 * MiB, 3 * MiB, "aten::mm", None),
                          (35000, MiB, 8 * MiB, -3 * MiB, "aten::relu", None),
                          (50000, MiB, 2 * MiB, 0, None, None)], devs[0][2]
    assert devs[0][3] == {"i": 1, "t_ns": 15000, "allocated": 4 * MiB, "reserved": 8 * MiB, "bytes": 3 * MiB,
                          "op": "aten::mm", "call": None}, devs[0][3]
    assert devs[1][2] == [(38000, 512, MiB, 512, "aten::relu", None)], devs[1][2]
    assert devs[1][3]["t_ns"] == 38000 and devs[1][3]["allocated"] == 512


@tmp_case("rows without totals: allocated is their bytes' running sum, reserved at least it; the first peak kept")
def _(d):
    ev = [op("aten::a", 0, 100, 1), mem(10, 100), mem(20, 50), mem(30, -30), mem(40, 30), mem(50, -500)]
    (devs, _more), = tracks(report_data(d, ev))
    (dev, typ, rows, peak), = devs
    assert [(t, a, r) for t, a, r, *_ in rows] == [(10000, 100, 100), (20000, 150, 150), (30000, 120, 150),
                                                   (40000, 150, 150), (50000, 0, 150)], rows
    assert (peak["i"], peak["t_ns"], peak["allocated"]) == (1, 20000, 150), peak  # the first at the highest


@tmp_case("20 devices: the first 16 seen drawn in id order, 4 counted; a trace without [memory]: no track")
def _(d):
    ev = [op("aten::a", 0, 100, 1)] + [mem(1 + i, 1000 + i, 1000 + i, 4096, dev=19 - i) for i in range(20)]
    (devs, more), = tracks(report_data(d, ev))
    assert [x[0] for x in devs] == list(range(4, 20)), [x[0] for x in devs]  # seen first: devices 19 down to 4
    assert more == 4
    assert [x[2][0][1] for x in devs] == [1000 + 19 - dv for dv in range(4, 20)]
    (devs, more), = tracks(report_data(d, [op("aten::a", 0, 100, 1)]))
    assert devs == [] and more == 0


@tmp_case("torch 2.11's profile_memory=True trace (H100): the peak is torch.cuda's max_memory_allocated")
def _(d):
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    with open(os.path.join(data, "torch_memory_h100_peaks.json")) as f:
        want = json.load(f)
    with gzip.open(os.path.join(data, "torch_memory_h100.json.gz"), "rt") as f:
        rows = [e for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]"]
    out = os.path.join(d, "r.html")
    subprocess.run([flagtrace, "report", "-o", out, os.path.join(data, "torch_memory_h100.json.gz")], check=True,
                   capture_output=True)
    with open(out) as f:
        page = json.loads(re.search(r'<script id="ft-data" type="application/json">(.*?)</script>', f.read(), re.S).group(1))
    (devs, more), = tracks(page)
    (dev, typ, got, peak), = devs
    assert (dev, typ, len(got), more) == (0, 1, len(rows), 0) == (0, 1, 90, 0), (dev, typ, len(got), more)
    assert peak["allocated"] == want["max_memory_allocated"] == 72837632, peak
    assert max(r for _t, _a, r, *_ in got) == want["max_memory_reserved"], got
    first = min(rows, key=lambda e: e["ts"])
    at = next(e for e in sorted(rows, key=lambda e: e["ts"]) if e["args"]["Total Allocated"] == want["max_memory_allocated"])
    assert peak["t_ns"] - got[0][0] == round(at["ts"] * 1000) - round(first["ts"] * 1000), (peak, got[0][0], at["ts"], first["ts"])
    assert peak["bytes"] == at["args"]["Bytes"], (peak, at)


if driver:
    @tmp_case("record's own (fake CUPTI's allocation calls and pools): the report's samples are the trace's device Memory counter")
    def _(d):
        path = os.path.join(d, "t.json")
        r = subprocess.run([flagtrace, "record", "-o", path, "--", driver, "memory"], capture_output=True, text=True)
        assert r.returncode == 0, r
        with open(path) as f:
            doc = json.load(f)
        # in time order: from CUPTI's callbacks a pool's growth is written after its allocation, timed just before it
        counter = [(e["pid"], e["args"]["Allocated"], e["args"]["Reserved"]) for e in sorted(
            (e for e in doc["traceEvents"] if e.get("ph") == "C" and e.get("name") == "Memory"), key=lambda e: e["ts"])]
        out = os.path.join(d, "r.html")
        subprocess.run([flagtrace, "report", "-o", out, path], check=True, capture_output=True)
        with open(out) as f:
            page = json.loads(re.search(r'<script id="ft-data" type="application/json">(.*?)</script>', f.read(), re.S).group(1))
        (devs, more), = tracks(page)
        got = [(dev, a, r) for dev, _typ, rows, _peak in devs for _t, a, r, *_ in rows]
        host = {e["pid"] for e in doc["traceEvents"] if e.get("ph") == "C" and e.get("name") == "Memory"} - \
            {dev for dev, *_ in devs}  # the pinned cudaHostAlloc's: the host's counter (the process), not drawn
        assert len(host) == 1 and len([c for c in counter if c[0] in host]) == 1, (host, counter)
        assert len(got) == 10 and got == [c for c in counter if c[0] not in host], (got, counter)
        top = max(a for _dev, a, _r in counter)
        peak = devs[0][3]
        assert (peak["allocated"], peak["call"], peak["op"]) == (top, "cudaMallocAsync", "allocating"), peak


results.finish()
