#!/usr/bin/env python3
"""Regenerates the report's pictures in docs/ from the demo's trace (tests/data/sample_h200.json.gz)
with Debian's headless chromium: docs/report.png (the page's top: summary and timeline) and
docs/report-timeline.png (zoomed on the kernels, one hovered: its tooltip and launch arrow).
Usage: scripts/report-screenshot.py [BUILD]  (default: build; needs BUILD/flagtrace and chromium)."""
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from chromium_cdp import Browser  # noqa: E402

WIDTH, HEIGHT = 1280, 760


def shot(pg, path, clip):
    data = pg.call("Page.captureScreenshot", {"format": "png", "clip": {**clip, "scale": 1}})["data"]
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))
    print(f"report-screenshot: wrote {os.path.relpath(path, ROOT)}")


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    chromium = shutil.which("chromium")
    if not chromium:
        sys.exit("report-screenshot: no chromium (scripts/deps.sh test installs it)")
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "sample_h200.json.gz")  # a short name in the page, not this checkout's path
        shutil.copy(os.path.join(ROOT, "tests", "data", "sample_h200.json.gz"), trace)
        out = os.path.join(d, "report.html")
        subprocess.run([os.path.join(build, "flagtrace"), "report", "-o", out, os.path.basename(trace)], check=True, cwd=d,
                       stdout=subprocess.DEVNULL)
        browser = Browser(chromium, d)
        try:
            pg = browser.open("about:blank")
            pg.call("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1,
                                                           "mobile": False})
            pg.goto("file://" + urllib.parse.quote(out))
            for _ in range(200):
                if pg.eval("document.body.getAttribute('data-levels')") == "1":
                    break
                browser.pump(0.05)
            shot(pg, os.path.join(ROOT, "docs", "report.png"), {"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT})
            # the kernels' stretch: from the first device slice to the end, a kernel hovered
            lo, hi = pg.eval("(function () { var G = ftTimeline.TL.groups[0], F = G.files[0], lo = Infinity, hi = 0;"
                             "for (var k = 0; k < F.st.length; k++) if (ftTimeline.TL.tracks[F.track[k]].cls >= 2) {"
                             "lo = Math.min(lo, F.st[k]); hi = Math.max(hi, F.en[k]); } return [lo, hi]; })()")
            pad = (hi - lo) * 0.03
            pg.eval(f"ftTimeline.setView({lo - pad}, {hi + pad})")
            f, k = pg.eval("ftTimeline.find(0, 'scale_odd_block(float*, int)')")[0]
            p = pg.eval(f"ftTimeline.slicePos(0, {f}, {k})")
            left, top, _, _ = pg.box("canvas.tl-canvas", 0)
            pg.mouse("mouseMoved", left + (p["x"] + p["x1"]) / 2, top + p["y"] + 6)
            browser.pump(0.3)
            sl, st, sw, sh = pg.box("#timeline", 0)
            shot(pg, os.path.join(ROOT, "docs", "report-timeline.png"), {"x": sl, "y": st, "width": sw, "height": sh})
        finally:
            browser.close()


if __name__ == "__main__":
    main()
