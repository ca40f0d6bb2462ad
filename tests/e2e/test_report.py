"""End-to-end: `flagtrace report` writes one self-contained HTML file that Debian's headless
chromium renders with every section and no JavaScript error; names are escaped; the CSP runs
only the page's own script and style (by hash); its size grows with distinct kernels and
ranks, not events. Skips (77) when chromium is missing."""
import base64
import gzip
import hashlib
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402

flagtrace, data = sys.argv[1], sys.argv[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    print("SKIP: no chromium (scripts/deps.sh test installs it)")
    sys.exit(77)
results = Results()
case = results.case
SECTIONS = ["summary", "timeline", "busy", "top-kernels", "top-ops", "copies", "tables"]


def report(out, *files):
    return subprocess.run([flagtrace, "report", "-o", out, *files], capture_output=True, text=True)


def render(path):
    """The DOM after the page's scripts ran, and chromium's console errors."""
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
                            "--dump-dom", "file://" + os.path.abspath(path)],
                           capture_output=True, text=True, timeout=120)
    # chromium logs a script error or a CSP refusal as a CONSOLE line
    errors = [line for line in r.stderr.splitlines()
              if "Uncaught" in line or "CONSOLE" in line and ("rror" in line or "Content Security Policy" in line)]
    return r.stdout, errors


class Dom(html.parser.HTMLParser):
    """Elements by id, attributes of each, and element counts by tag and class."""

    def __init__(self, text):
        super().__init__()
        self.ids, self.tags, self.classes, self.text = {}, {}, {}, []
        self.stack = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for c in (a.get("class") or "").split():
            self.classes[c] = self.classes.get(c, 0) + 1
        if "id" in a:
            self.ids[a["id"]] = a
        self.stack.append(a)

    def handle_data(self, d):
        self.text.append(d)


def check_page(path):
    dom_text, errors = render(path)
    dom = Dom(dom_text)
    assert not errors, errors
    assert "ft-errors" not in dom.ids, "JavaScript error shown in the page"
    body_ready = 'data-ready="1"' in dom_text.split("<body", 1)[1].split(">", 1)[0]
    assert body_ready, "the page's script did not run to its end"
    missing = [s for s in SECTIONS if dom.ids.get(s, {}).get("data-rendered") != "1"]
    assert not missing, f"sections not rendered: {missing}"
    return dom, dom_text


def csp_hash(page, open_tag, close_tag):
    """The CSP source of the one element's text (what chromium hashes)."""
    body = page.split(open_tag, 1)[1].split(close_tag, 1)[0]
    return "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"


def policy(page):
    content = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page).group(1)
    return {d.split()[0]: d.split()[1:] for d in content.split(";") if d.strip()}


def resign(page):
    """The page with its CSP naming its (changed) script's hash, as the build would."""
    old = policy(page)["script-src"][0]
    return page.replace(f"script-src {old}", f"script-src {csp_hash(page, '<script>', '</script>')}", 1)


def stats_json(*files):
    r = subprocess.run([flagtrace, "stats", "-f", "json", *files], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


@case("report: chromium renders every section of two H200 traces, no JavaScript error")
def _():
    files = [os.path.join(data, n) for n in ("sample_h200.json.gz", "workload_h200.json.gz")]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "report.html")
        r = report(out, *files)
        assert r.returncode == 0 and r.stdout == f"flagtrace report: wrote {out}\n", r
        assert os.listdir(d) == ["report.html"]
        page = open(out).read()
        # self-contained: nothing loaded from elsewhere; only the page's own script and style run
        for bad in ("<script src", "<link", "@import", "url(http", "<iframe"):
            assert bad not in page, bad
        assert policy(page) == {"default-src": ["'none'"], "script-src": [csp_hash(page, "<script>", "</script>")],
                                "style-src": [csp_hash(page, "<style>", "</style>")], "base-uri": ["'none'"],
                                "form-action": ["'none'"]}, policy(page)
        dom, _ = check_page(out)
        st = stats_json(*files)
        assert dom.tags.get("canvas") == len(st["gpu"]) + len({g["rank"] for g in st["gpu"]}), dom.tags
        kernels = {k["name"] for k in st["kernels"]}
        assert dom.classes.get("bar") == min(15, len(st["kernels"])) + min(15, sum(
            o["self_device_us"] > 0 for o in st["ops"])) + min(15, len(st["memsize"])), dom.classes
        for k in list(kernels)[:5]:
            assert any(k in t for t in dom.text), k
        for key in ("kernels", "api", "memory", "memsize", "ranges", "gpu_ranges", "ops", "gpu", "ranks"):
            assert f"table-{key}" in dom.ids, key
        assert dom.classes.get("open-trace") == 2 and dom.classes.get("perfetto") == 2, dom.classes
        # the links to the traces are relative to the page: they hold when both are copied together
        data_json = json.loads(page.split('type="application/json">', 1)[1].split("</script>", 1)[0])
        assert data_json["hrefs"] == [os.path.relpath(os.path.realpath(f), os.path.realpath(d)) for f in files]


@case("report: the test sees a JavaScript error and a missing section (it can fail)")
def _():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "report.html")
        assert report(out, os.path.join(data, "sample_h200.json.gz")).returncode == 0
        page = open(out).read()
        # a changed script is re-signed (resign) to run; unsigned, the CSP refuses it all
        for broken, why in ((resign(page.replace('bars("top-ops"', 'null.x; bars("top-ops"')), "Uncaught"),
                            (resign(page.replace('done("tables");', "")), "sections not rendered: ['tables']"),
                            (page.replace('done("tables");', ""), "Content Security Policy")):
            open(out, "w").write(broken)
            try:
                check_page(out)
            except AssertionError as e:
                assert why in str(e), e
            else:
                raise AssertionError("a broken page passed")


@case("report: every name is escaped: a kernel named </script><img onerror=...> stays text")
def _():
    evil = ['</script><img src=x onerror="document.title=\'pwned\'">', "<!-- x", "]]> & \u2028 \"q\" </SCRIPT >"]
    ev = [{"ph": "X", "cat": "kernel", "name": n, "ts": i * 10, "dur": 5, "pid": 0, "args": {}}
          for i, n in enumerate(evil)]
    ev.append({"ph": "X", "cat": "cpu_op", "name": "<b>op</b>", "ts": 0, "dur": 50, "pid": 1, "args": {}})
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "<evil>.json")
        open(src, "w").write(json.dumps({"traceEvents": ev}))
        out = os.path.join(d, "report.html")
        assert report(out, src).returncode == 0
        page = open(out).read()
        assert page.count("</script>") == 2 and page.lower().count("<script") == 2, "a name closed a script element"
        dom, dom_text = check_page(out)
        assert "img" not in dom.tags, dom.tags
        for n in evil + ["<b>op</b>"]:
            assert any(n in t for t in dom.text), n
        assert "<title>flagtrace report</title>" in dom_text


@case("report: size grows with distinct kernels and ranks, not with events")
def _():
    def make(d, n, names):
        ev = [{"ph": "X", "cat": "kernel", "name": names[i % len(names)], "ts": i * 3, "dur": 2, "pid": 0}
              for i in range(n)]
        p = os.path.join(d, f"t{n}-{len(names)}.json.gz")
        with gzip.open(p, "wt") as f:
            json.dump({"traceEvents": ev}, f)
        out = p + ".html"
        assert report(out, p).returncode == 0
        return os.path.getsize(out)
    with tempfile.TemporaryDirectory() as d:
        small, big = make(d, 2000, ["a", "b", "c"]), make(d, 60000, ["a", "b", "c"])
        assert abs(big - small) < 3000, (small, big)
        more = make(d, 2000, [f"kernel_{i}" for i in range(300)])
        assert more > small + 300 * 100, (small, more)


@case("report: a malformed file is one line, status 2, and no report file")
def _():
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad.json")
        open(bad, "w").write('{"traceEvents": [}')
        out = os.path.join(d, "r.html")
        r = report(out, os.path.join(data, "sample_h200.json.gz"), bad)
        assert r.returncode == 2 and r.stderr.startswith(f"flagtrace report: {bad}: ") and r.stderr.count("\n") == 1, r
        assert r.stderr.endswith(" at byte 17\n"), r.stderr
        assert os.listdir(d) == ["bad.json"], os.listdir(d)


results.finish()
