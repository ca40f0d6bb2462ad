"""End-to-end: the report's timeline in Debian's headless chromium, as a person checks it: slices at
the pixels their times give, ranks on one wall clock (rank 1 36 % slower, started 5 ms later), a
tooltip's text, names appearing as you zoom, the launch arrow drawn on hover, search, the step
selector, the A/B view aligned by step with a regression marked; no console error, no request but
the page. Skips (77) when chromium is missing."""
import contextlib
import gzip
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402
from chromium_cdp import Browser, chromium_or_skip  # noqa: E402

flagtrace = sys.argv[1]
CHROMIUM = chromium_or_skip()
results = Results()
case = results.case
BASE = 1795996800000000000


def rank_trace(path, rank, slow, base_ns, shift_us, base=True):
    """One rank's step: an op, its launch, its kernel (grid 4, block 128, stream 7) and a 5 us kernel;
    every time after the step's start times `slow`; ts shifted by shift_us."""
    t0 = 1000.0 + shift_us

    def at(us):
        return round(t0 + us * slow, 3)
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 100, "tid": 100, "ts": at(0), "dur": 1000 * slow, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": at(100), "dur": 500 * slow,
         "args": {"External id": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": at(150), "dur": 20,
         "args": {"External id": 7, "correlation": 11}},
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": at(300), "dur": 400 * slow,
         "args": {"External id": 7, "correlation": 11, "stream": 7, "grid": [4, 1, 1], "block": [128, 1, 1]}},
        {"ph": "X", "cat": "kernel", "name": "tiny_kernel", "pid": 0, "tid": 7, "ts": at(800), "dur": 2,
         "args": {"stream": 7}},
    ]
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": rank}, "traceEvents": ev}
    if base:
        doc["baseTimeNanoseconds"] = base_ns
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return {e["name"]: (base_ns * 1e-3 + e["ts"], e["dur"]) for e in ev}  # wall-clock us


@contextlib.contextmanager
def rank_pair(base=True):
    """A directory with the two ranks' traces (traces()) and a browser: (dir, files, r0, r1, browser)."""
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as dl:
        files, r0, r1 = traces(d, base)
        browser = Browser(CHROMIUM, dl)
        try:
            yield d, files, r0, r1, browser
        finally:
            browser.close()


def report(out, *args):
    r = subprocess.run([flagtrace, "report", "-o", out, *args], capture_output=True, text=True)
    assert r.returncode == 0, r
    return out


def pixel(pg, x, y):
    return pg.eval(f"Array.from(document.querySelector('canvas.tl-canvas').getContext('2d')"
                   f".getImageData({int(x)}, {int(y)}, 1, 1).data)")


def dark_pixels(pg, x, y, w, h):
    """Pixels of the name's text colour (#111) in a rectangle of the timeline."""
    return pg.eval(f"(function () {{ var d = document.querySelector('canvas.tl-canvas').getContext('2d')"
                   f".getImageData({int(x)}, {int(y)}, {max(1, int(w))}, {int(h)}).data, n = 0;"
                   "for (var i = 0; i < d.length; i += 4) if (d[i + 3] > 200 && d[i] < 60 && d[i + 1] < 60 && d[i + 2] < 60) n++; return n; })()")


def pos(pg, g, name, i=0):
    f, k = pg.eval(f"ftTimeline.find({g}, {json.dumps(name)})")[i]
    return pg.eval(f"ftTimeline.slicePos({g}, {f}, {k})")


def opened(browser, path):
    return browser.open("file://" + urllib.parse.quote(path)).ready()


def problems(pg):
    """The page's problems, less chromium's advice on the test's own pixel reads."""
    return [p for p in pg.problems() if "willReadFrequently" not in p]


def canvas_box(pg):
    return pg.box("canvas.tl-canvas", 0)


def hover(pg, browser, x, y):
    left, top, _, _ = canvas_box(pg)
    pg.mouse("mouseMoved", left + x, top + y)
    browser.pump(0.2)


def traces(d, base=True):
    r0 = rank_trace(os.path.join(d, "r0.json.gz"), 0, 1.0, BASE, 0, base)
    # rank 1: its base time 2 ms later and its ts 3 ms later: on the wall clock 5 ms after rank 0
    r1 = rank_trace(os.path.join(d, "r1.json.gz"), 1, 1.36, BASE + 2_000_000, 3000, base)
    return [os.path.join(d, n) for n in ("r0.json.gz", "r1.json.gz")], r0, r1


import traceback  # noqa: E402


def traced(fn):
    """Case bodies whose failure names its line (an assert without a message says nothing)."""
    def run():
        try:
            fn()
        except AssertionError as e:
            raise AssertionError(f"{e} (line {traceback.extract_tb(e.__traceback__)[-1].lineno})") from None
    return run


@case("timeline: two ranks on one wall clock: slices at the pixels their times give, rank 1 5 ms "
      "later and 36 % slower; tooltip, launch arrow on hover, names appear as you zoom; no error, no request")
@traced
def _():
    with rank_pair() as (d, files, r0, r1, browser):
        out = report(os.path.join(d, "report.html"), *files)
        pg = opened(browser, out)
        assert pg.eval("document.getElementById('tl-clock').textContent") == \
            "every trace states its base time (baseTimeNanoseconds): one wall clock"
        W = pg.eval("document.querySelector('canvas.tl-canvas').clientWidth")
        origin = r0["ProfilerStep#1"][0]
        end = max(t + dur for t, dur in list(r0.values()) + list(r1.values())) - origin
        view = pg.eval("ftTimeline.TL.view")
        assert abs(view[0]) < 1e-6 and abs(view[1] - end * 1000) < 1, (view, end)
        for g_rank, r in ((0, r0), (1, r1)):
            want = (r["gemm_kernel"][0] - origin) * W / end
            p = pos(pg, 0, "gemm_kernel", g_rank)
            assert abs(p["x"] - want) < 0.01 and abs(p["x1"] - p["x"] - r["gemm_kernel"][1] * W / end) < 0.01, (p, want)
            # drawn there: the kernel's colour inside it, the background just before it
            inside, before = pixel(pg, p["x"] + 2, p["y"] + 5), pixel(pg, p["x"] - 3, p["y"] + 5)
            assert inside[3] == 255 and inside[:3] != [255, 255, 255] and before[3] == 0, (inside, before)
        a, b = pos(pg, 0, "gemm_kernel", 0), pos(pg, 0, "gemm_kernel", 1)
        # relative offset: 5 ms plus the slower rank's 300 us * 0.36 before its kernel
        assert abs((b["x"] - a["x"]) - (5000 + 300 * 0.36) * W / end) < 0.01, (a, b)
        assert abs((b["x1"] - b["x"]) / (a["x1"] - a["x"]) - 1.36) < 1e-6
        # hover the kernel: its tooltip, and the arrow from its launch
        hover(pg, browser, a["x"] + 5, a["y"] + 5)
        tip = pg.eval("document.getElementById('tl-tip').textContent")
        assert tip.split("\n") == ["gemm_kernel", "duration 400.000 us, start 300.000 us", "rank 0, GPU 0 stream 7",
                                   "grid [4, 1, 1], block [128, 1, 1]", "stream 7", "launched by cudaLaunchKernel",
                                   "op aten::mm"], tip
        assert pg.eval("document.getElementById('tl-tip').className") == "tl-tip on"
        launch = pos(pg, 0, "cudaLaunchKernel", 0)
        flow = pg.eval("ftTimeline.TL.flow")
        assert flow == {"from": [launch["x"], launch["y"] + 13], "to": [a["x"], a["y"]]}, (flow, launch, a)
        mid = ((launch["x"] + a["x"]) / 2, (launch["y"] + 13 + a["y"]) / 2)
        assert pixel(pg, *mid)[3] > 0, "no arrow drawn between the launch and its kernel"
        hover(pg, browser, 2, 2)  # away: no arrow
        assert pg.eval("ftTimeline.TL.hover") is None
        # a 2 us kernel is under a pixel at this zoom: no name; zoomed to it, its name is written
        t = pos(pg, 0, "tiny_kernel", 0)
        assert t["x1"] - t["x"] < 1 and dark_pixels(pg, t["x"] - 1, t["y"], 3, 13) == 0
        lo = (r0["tiny_kernel"][0] - origin - 2) * 1000
        pg.eval(f"ftTimeline.setView({lo}, {lo + 10000})")
        t = pos(pg, 0, "tiny_kernel", 0)
        assert abs(t["x1"] - t["x"] - W / 5) < 0.01 and dark_pixels(pg, t["x"], t["y"], t["x1"] - t["x"], 13) > 10, t
        # search: matching names stay, the rest fade
        pg.eval("var s = document.getElementById('tl-search'); s.value = 'GEMM'; s.dispatchEvent(new Event('input'))")
        assert pg.eval("Object.keys(ftTimeline.TL.match)") == ["gemm_kernel"]
        # the step selector: step 1 of each rank from its own start (the ranks aligned on the step), the longer one whole
        pg.eval("var s = document.getElementById('tl-step'); s.value = '1'; s.dispatchEvent(new Event('change'))")
        assert pg.eval("ftTimeline.TL.view") == [0, 1360 * 1000]
        assert pg.eval("document.getElementById('axis-hi').textContent") == "1.360 ms"
        a, b = pos(pg, 0, "gemm_kernel", 0), pos(pg, 0, "gemm_kernel", 1)
        assert abs(a["x"] - 300 * W / 1360) < 0.01 and abs(b["x"] - 300 * 1.36 * W / 1360) < 0.01, (a, b)
        assert pg.requests() == ["file://" + urllib.parse.quote(out)], pg.requests()
        assert problems(pg) == [], problems(pg)


@case("timeline: traces without base times: each rank from its own start, and the page says why")
@traced
def _():
    with rank_pair(base=False) as (d, files, r0, r1, browser):
        out = report(os.path.join(d, "report.html"), *files)
        pg = opened(browser, out)
        assert pg.eval("document.getElementById('tl-clock').textContent") == \
            f"{files[0]} states no baseTimeNanoseconds: each rank is drawn from its own first event"
        assert pg.eval("document.getElementById('tl-clock').className") == "warn"
        a, b = pos(pg, 0, "gemm_kernel", 0), pos(pg, 0, "gemm_kernel", 1)
        W, view = pg.eval("document.querySelector('canvas.tl-canvas').clientWidth"), pg.eval("ftTimeline.TL.view")
        assert abs((b["x"] - a["x"]) - 300 * 0.36 * W / (view[1] / 1000)) < 0.01, (a, b, view)
        assert problems(pg) == [], problems(pg)


@case("timeline: A above B (--a/--b), aligned by step, the regression outlined in both; a diff "
      "document that is not JSON is refused")
@traced
def _():
    with rank_pair() as (d, files, r0, r1, browser):
        diff = os.path.join(d, "diff.json")
        open(diff, "w").write(json.dumps({"ops": [{"name": "aten::mm", "ratio": 1.36}, {"name": "x", "ratio": 1.0}]}))
        out = report(os.path.join(d, "ab.html"), "--a", files[0], "--b", files[1], "--diff-json", diff)
        pg = opened(browser, out)
        assert pg.eval("ftTimeline.TL.groups.map(function (G) { return G.label + ' ' + G.files.length; })") == ["A 1", "B 1"]
        assert pg.eval("Object.keys(ftTimeline.TL.regress)") == ["aten::mm"]
        pg.eval("var s = document.getElementById('tl-step'); s.value = '1'; s.dispatchEvent(new Event('change'))")
        W = pg.eval("document.querySelector('canvas.tl-canvas').clientWidth")
        a, b = pos(pg, 0, "gemm_kernel"), pos(pg, 1, "gemm_kernel")
        span = 1360.0  # the longer step (B's), us
        assert abs(a["x"] - 300 * W / span) < 0.01 and abs(b["x"] - 300 * 1.36 * W / span) < 0.01, (a, b)
        assert b["y"] > a["y"], "B is drawn below A"
        for g in (0, 1):  # the regression's outline: red at its edge
            m = pos(pg, g, "aten::mm")
            r, g_, b_, _ = pixel(pg, m["x"] + 1.5, m["y"] + 6)
            assert r > 180 and g_ < 80 and b_ < 80, (r, g_, b_)
        # the diff document's table: its rows, the regression's marked
        rows = pg.eval("Array.prototype.map.call(document.querySelectorAll('#table-diff-ops tr'), function (r) {"
                       " return [r.className, r.cells[0].textContent, r.cells[1].textContent]; })")
        assert rows == [["", "name", "ratio"], ["warn", "aten::mm", "1.36"], ["", "x", "1"]], rows
        assert problems(pg) == [], problems(pg)
        open(diff, "w").write("{not json")
        r = subprocess.run([flagtrace, "report", "-o", os.path.join(d, "bad.html"), "--a", files[0], "--b", files[1],
                            "--diff-json", diff], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr == f"flagtrace report: {diff}: not a JSON document\n", r
        assert not os.path.exists(os.path.join(d, "bad.html"))


results.finish()
