"""The HTML report's timeline in headless chromium (issue 38): a 1 M-event, 8-rank report's time to
open (navigation to the page's script done: data parsed, levels of detail built, first frame drawn)
and the time of a pan or zoom frame (the page's own drawing, performance.now() around it) at zoom
levels from the whole job to 1/10000 of it. Rows with targets, never a timed test.
Standalone: python3 bench/report_view.py BUILD [--quick] (20 000 slices, not judged)."""
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))

BASE = 1795996800000000000
KERNELS = ["gemm_bf16_128x128", "flash_fwd_kernel", "layer_norm_fwd", "elementwise_add", "nccl_allreduce_ring",
           "softmax_fwd", "reduce_sum_kernel", "copy_kernel"]
OPS = ["aten::mm", "aten::add", "aten::layer_norm", "aten::softmax", "aten::sum", "aten::copy_"]


def rank_trace(path, rank, events):
    """events slices on one rank: steps of ops, each op a launch, its kernel and a memset (4 slices an
    op), lengths and gaps with random ns (seeded); rank r 5 % slower per rank; base times 1 ms apart."""
    slow, rnd = 1 + 0.05 * rank, random.Random(rank)
    ev, t, ext, step = [], 0.0, 0, 0
    while len(ev) < events:
        ev.append({"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": round(t, 3),
                   "dur": 0})
        first, t = len(ev) - 1, t + 1
        for i in range(200):
            ext += 1
            op, k = OPS[i % len(OPS)], KERNELS[(i * 7 + step) % len(KERNELS)]
            d = (3 + (i % 5) + rnd.random()) * slow  # ns-precise lengths, as real traces have
            ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": round(t, 3), "dur": round(d, 3),
                       "args": {"External id": ext}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": round(t + 1, 3), "dur": 1.5, "args": {"External id": ext, "correlation": ext}})
            ev.append({"ph": "X", "cat": "kernel", "name": k, "pid": 0, "tid": 7, "ts": round(t + 2, 3),
                       "dur": round(d * 0.8, 3), "args": {"External id": ext, "correlation": ext, "stream": 7,
                                                          "grid": [132, 1, 1], "block": [256, 1, 1]}})
            ev.append({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 8,
                       "ts": round(t + 2.5, 3), "dur": 0.4, "args": {"stream": 8, "bytes": 4096}})
            t += d + 0.5 + rnd.random()
        ev[first]["dur"] = round(t - ev[first]["ts"], 3)
        step += 1
    with gzip.open(path, "wt", compresslevel=1) as f:
        json.dump({"distributedInfo": {"rank": rank}, "baseTimeNanoseconds": BASE + rank * 1000000,
                   "traceEvents": ev}, f)
    return len(ev)


def measure(build, events=1_000_000, ranks=8):
    """(events, page MB, open s [3 loads], frame ms list); None without chromium."""
    chromium = shutil.which("chromium")
    if not chromium:
        return None
    from chromium_cdp import Browser
    tmp = tempfile.mkdtemp(prefix="ftbench.")
    try:
        files = [os.path.join(tmp, f"rank{r}.json.gz") for r in range(ranks)]
        n = sum(rank_trace(p, r, events // ranks) for r, p in enumerate(files))
        out = os.path.join(tmp, "report.html")
        subprocess.run([os.path.join(build, "flagtrace"), "report", "-o", out] + files, check=True, capture_output=True)
        size = os.path.getsize(out)
        opens, frames = [], []
        with tempfile.TemporaryDirectory() as dl:
            browser = Browser(chromium, dl)
            try:
                for _ in range(3):  # each a fresh tab: the whole load again
                    pg = browser.open("file://" + urllib.parse.quote(out))
                    for _ in range(600):
                        if pg.eval("document.body && document.body.getAttribute('data-ready')") == "1":
                            break
                        browser.pump(0.05)
                    opens.append(pg.eval("window.ftReadyMs") / 1000)
                frames = pg.eval("""(function () {
                  var TL = ftTimeline.TL, end = TL.view[1], out = [];
                  [1, 0.1, 0.01, 0.001, 0.0001].forEach(function (f) {
                    for (var i = 0; i < 8; i++) { /* a zoom to f of the job, then pans across it */
                      var lo = (end - end * f) * i / 7, t0 = performance.now();
                      ftTimeline.setView(lo, lo + end * f); out.push(performance.now() - t0);
                    }
                  });
                  return out; })()""")
            finally:
                browser.close()
        return n, size / 1e6, opens, frames
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sort_clicks(build, rows=100_000, clicks=3, cap_s=600):
    """A header click on the kernels table of a trace of `rows` distinct kernels: the page's handler
    (a sort of all rows) and the frame after it (style, layout, paint of the rows shown: a window of
    1 000), in ms, `clicks` times (descending, ascending, ...). None without chromium."""
    chromium = shutil.which("chromium")
    if not chromium:
        return None
    from chromium_cdp import Browser
    tmp = tempfile.mkdtemp(prefix="ftbench.")
    try:
        trace, out = os.path.join(tmp, "kernels.json"), os.path.join(tmp, "report.html")
        with open(trace, "w") as f:
            json.dump({"traceEvents": [{"ph": "X", "cat": "kernel", "name": f"kernel_{i:06d}", "pid": 0, "tid": 7,
                                        "ts": 1000 + 20 * i, "dur": 1 + (i * 7919) % 13, "args": {"stream": 7}}
                                       for i in range(rows)]}, f)
        subprocess.run([os.path.join(build, "flagtrace"), "report", "-o", out, trace], check=True, capture_output=True)
        times = []
        with tempfile.TemporaryDirectory() as dl:
            browser = Browser(chromium, dl)
            try:
                pg = browser.open("about:blank")  # then the report, waited for past open()'s 15 s

                def run(expr):  # a promise's value; the page may be busy for minutes (the quadratic page)
                    r = browser.call("Runtime.evaluate",
                                     {"expression": expr, "awaitPromise": True, "returnByValue": True},
                                     pg.s, timeout=cap_s)
                    return r["result"].get("value")
                pg.call("Page.navigate", {"url": "file://" + urllib.parse.quote(out)})
                for _ in range(600):  # about:blank until the navigation commits; a context lost is tried again
                    try:
                        if run("""location.protocol !== 'file:' ? 0 : new Promise(function (ok) { (function wait() {
                          if (document.body && document.body.getAttribute('data-ready') === '1') ok(1);
                          else setTimeout(wait, 50); })(); })"""):
                            break
                    except RuntimeError:
                        pass
                    browser.pump(0.1)
                for _ in range(clicks):
                    times.append(run("""new Promise(function (ok) {
                      var th = document.querySelector("#table-kernels th[title='total_us']"), t0 = performance.now();
                      th.click();
                      requestAnimationFrame(function () { setTimeout(function () { ok(performance.now() - t0); }); });
                    })"""))
            finally:
                browser.close()
        return times
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def section(build, quick):
    """The bench's markdown section (two rows)."""
    got = measure(build, 20_000 if quick else 1_000_000)
    head = ["## Report viewer: the timeline in headless chromium (bench/report_view.py)", ""]
    if not got:
        return head + ["(skipped: no chromium)", ""]
    n, mb, opens, frames = got
    o, f = statistics.median(opens), statistics.median(frames)
    verdict = (lambda v, t: "(quick mode, not judged)" if quick else "pass" if v < t else "MISS")
    return head + [
        f"{n:,} slices on 8 ranks, a page of {mb:.1f} MB ({mb * 1e6 / n:.1f} B per slice); open: navigation to the "
        "page's script done (parse, levels of detail, first frame), 3 loads; frame: one setView() at 5 zoom "
        "levels (whole job to 1/10000) x 8 pans, the page's drawing alone.", "",
        "| row | measured (min / median / max) | target | ratio to target | verdict |", "|---|---|---|---|---|",
        f"| 1 M-event 8-rank report opens | {min(opens):.2f} / {o:.2f} / {max(opens):.2f} s | < 3 s | {o / 3:.2f} | "
        f"{verdict(max(opens), 3)} |",
        f"| pan/zoom frame | {min(frames):.1f} / {f:.1f} / {max(frames):.1f} ms | < 50 ms | {max(frames) / 50:.2f} "
        f"(max) | {verdict(max(frames), 50)} |"] + sort_row(build, quick) + [""]


def sort_row(build, quick):
    """The table row: a header click on a 100 000-row table (10 000 quick)."""
    rows = 10_000 if quick else 100_000
    clicks = sort_clicks(build, rows)
    if not clicks:
        return []
    m = statistics.median(clicks)
    verdict = "(quick mode, not judged)" if quick else "pass" if max(clicks) < 5000 else "MISS"
    return [f"| header click sorts a {rows:,}-row table, 1,000 shown (handler and next frame, 3 clicks) | "
            f"{min(clicks) / 1000:.2f} / "
            f"{m / 1000:.2f} / {max(clicks) / 1000:.2f} s | < 5 s | {max(clicks) / 5000:.2f} (max) | {verdict} |"]


if __name__ == "__main__":
    print("\n".join(section(sys.argv[1], "--quick" in sys.argv)))
