"""End-to-end: `flagtrace report` writes one self-contained HTML file that Debian's headless
chromium renders with every section and no JavaScript error; names are escaped; the CSP runs
only the page's own script and style (by hash); a trace's link is a relative path whose click,
whatever the file is named, runs nothing; used with the mouse (wheel, drag, double-click, a
header click, hover) it does what its legend says and asks for nothing but itself; its size
grows with distinct kernels and ranks, not events. Skips (77) when chromium is missing."""
import base64
import gzip
import hashlib
import html.parser
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results  # noqa: E402
from chromium_cdp import Browser, chromium_or_skip  # noqa: E402

flagtrace, data = sys.argv[1], sys.argv[2]
CHROMIUM = chromium_or_skip()
results = Results()
case = results.case
SECTIONS = ["summary", "advice", "timeline", "busy", "top-kernels", "top-ops", "copies", "tables"]


def report(out, *files, cwd=None):
    return subprocess.run([flagtrace, "report", "-o", out, *files], capture_output=True, text=True, cwd=cwd)


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


def page_data(page):
    return json.loads(page.split('type="application/json">', 1)[1].split("</script>", 1)[0])


def expected_href(report_dir, trace):
    """The link report.c must write: the real path from the report's real directory, %-encoded."""
    rel = os.path.relpath(os.path.realpath(trace), os.path.realpath(report_dir))
    href = urllib.parse.quote(rel, safe="/")  # all but A-Z a-z 0-9 - . _ ~ and /
    return href if href.startswith("../") else "./" + href


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
        # the timeline and its labels, and a busy strip per rank
        assert dom.tags.get("canvas") == 2 + len({g["rank"] for g in st["gpu"]}), dom.tags
        kernels = {k["name"] for k in st["kernels"]}
        assert dom.classes.get("bar") == min(15, len(st["kernels"])) + min(15, sum(
            o["self_device_us"] > 0 for o in st["ops"])) + min(15, len(st["memsize"])), dom.classes
        for k in list(kernels)[:5]:
            assert any(k in t for t in dom.text), k
        for key in ("kernels", "api", "memops", "memsize", "ranges", "gpu_ranges", "ops", "gpu", "ranks"):
            assert f"table-{key}" in dom.ids, key
        assert dom.classes.get("open-trace") == 2 and dom.classes.get("perfetto") == 2, dom.classes
        # the links to the traces are relative to the page: they hold when both are copied together
        assert page_data(page)["hrefs"] == [expected_href(d, f) for f in files]
        assert all(h.startswith("../") for h in page_data(page)["hrefs"])


@case("report: the test sees a JavaScript error and a missing section (it can fail)")
def _():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "report.html")
        assert report(out, os.path.join(data, "sample_h200.json.gz")).returncode == 0
        page = open(out).read()
        # a changed script is re-signed (resign) to run; unsigned, the CSP refuses it all
        for broken, why in ((resign(page.replace('topBars("top-ops"', 'null.x; topBars("top-ops"')), "Uncaught"),
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


# File names a page could take for script, markup, a scheme, a host, a query or an escape
# ("/" makes directories); run as script, each would open a dialog or change the title.
# Each is linked (no dot, or .json): ft__report_linkable's other names get no link at all.
HOSTILE = [
    "javascript:alert(1)",
    "javascript:void(document['title']='pwned')",
    "JaVaScRiPt:void(document['title']='case')",
    " javascript:alert('space')",
    "\njavascript:alert('newline')",
    "data:text/html,<script>alert('data')</script>",
    "<img src=x onerror=\"document.title='img'\">.json",
    "\"><script>document.title='quote'</script>.json",
    "100% %2e%2e%2f %41.json",
    "x?y#z.json",
    "back\\slash:.json",
    "line\nbreak\ttab.json",
    "caf\u00e9 \u2713 \u2028.json",
]


def hostile_traces(d, names=HOSTILE):
    """A trace under each name in d (one kernel named after its index: the bytes differ), gzipped
    unless the name ends in .json: chromium downloads the one and shows the other as text."""
    for i, name in enumerate(names):
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with (open if name.endswith(".json") else gzip.open)(path, "wt") as f:
            json.dump({"traceEvents": [{"ph": "X", "cat": "kernel", "name": f"kernel_{i}", "ts": 0, "dur": 5, "pid": 0}]}, f)
    return list(names)


def click_links(browser, path, wait=10):
    """Loads the page and clicks each trace link as a mouse does. Returns the page, the links'
    resolved URLs and what each click led to: ("download", its event), ("page", URL, content
    type, text, title) when chromium showed the file instead (it ignores "download" on file: pages;
    the report is then loaded again), or None when nothing began within wait s."""
    url = "file://" + urllib.parse.quote(os.path.abspath(path))
    pg = browser.open(url)
    urls = pg.eval("Array.prototype.map.call(document.querySelectorAll('a.open-trace'), function (a) { return a.href; })")
    led = []
    for i in range(len(urls)):
        mark = len(browser.events)
        pg.click("a.open-trace", i)
        e = browser.wait_for(lambda e: e["method"] == "Browser.downloadWillBegin" or
                             e["method"] == "Page.frameNavigated" and e.get("sessionId") == pg.s, wait, mark)
        if e and e["method"] == "Page.frameNavigated":
            browser.wait_for(lambda e: e["method"] == "Page.loadEventFired" and e.get("sessionId") == pg.s, wait, mark)
            led.append(("page", e["params"]["frame"]["url"], pg.eval("document.contentType"),
                        pg.eval("document.body ? document.body.innerText : ''"), pg.eval("document.title")))
            pg.goto(url)
        else:
            led.append(e and ("download", e))
    browser.pump(0.5)  # time for anything a click set off to run and be reported
    return pg, urls, led


@case("report: hostile file names: relative %-encoded links, hashed CSP, a click on each runs nothing")
def _():
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as downloads:
        names = hostile_traces(d)
        os.mkdir(os.path.join(d, "out"))
        # the names as given from their directory (the command), from below it, and absolute
        # (clicked in the first two: the third's links are the second's)
        outs = [(os.path.join(d, "report.html"), names, "./"), (os.path.join(d, "out", "report.html"), names, "../"),
                (os.path.join(d, "out", "abs.html"), [os.path.join(d, n) for n in names], "../")]
        browser = Browser(CHROMIUM, downloads)
        try:
            for out, given, prefix in outs:
                r = report(out, *given, cwd=d)
                assert r.returncode == 0, r
                page = open(out).read()
                csp = policy(page)
                assert "'unsafe-inline'" not in csp["script-src"] and "'unsafe-inline'" not in csp["style-src"], csp
                assert csp == {"default-src": ["'none'"], "script-src": [csp_hash(page, "<script>", "</script>")],
                               "style-src": [csp_hash(page, "<style>", "</style>")], "base-uri": ["'none'"],
                               "form-action": ["'none'"]}, csp
                assert page.count("</script>") == 2 and page.lower().count("<script") == 2
                hrefs = page_data(page)["hrefs"]
                traces = [os.path.join(d, n) for n in names]
                assert hrefs == [expected_href(os.path.dirname(out), t) for t in traces], hrefs
                for h, t in zip(hrefs, traces):
                    assert h.startswith(prefix) and re.fullmatch(r"\.\.?/(?:[A-Za-z0-9._~/-]|%[0-9A-F]{2})*", h), h
                    u = urllib.parse.urlsplit(h)
                    assert (u.scheme, u.netloc, u.query, u.fragment) == ("", "", "", ""), h
                    back = os.path.join(os.path.realpath(os.path.dirname(out)).encode(), urllib.parse.unquote_to_bytes(h))
                    assert os.path.normpath(back) == os.path.realpath(t).encode(), h
                # rendered: every section, no error, every name as text, no element of theirs
                dom, dom_text = check_page(out)
                assert "<title>flagtrace report</title>" in dom_text and "img" not in dom.tags, dom.tags
                assert dom.tags.get("script") == 2, dom.tags
                for n in given:
                    assert any(n in t for t in dom.text), n
                if given is not names:
                    continue
                # clicked: each link downloads or shows its own trace; nothing runs, nothing is refused
                pg, urls, led = click_links(browser, out)
                assert len(urls) == len(traces), urls
                shown = downloaded = 0
                for url, t, how in zip(urls, traces, led):
                    u = urllib.parse.urlsplit(url)
                    assert (u.scheme, u.netloc, u.query, u.fragment) == ("file", "", "", ""), url
                    assert urllib.parse.unquote_to_bytes(u.path) == os.path.realpath(t).encode(), url
                    assert how, f"clicking {url} did nothing"
                    if how[0] == "page":  # shown as text: the trace's own bytes, no document of its own
                        assert how[1:3] == (url, "application/json") or how[1:3] == (url, "text/plain"), how
                        assert json.loads(how[3]) == json.load(open(t)), how
                        shown += 1
                        continue
                    b = how[1]
                    assert b["params"]["url"] == url, (url, b)
                    guid = b["params"]["guid"]
                    done = browser.wait_for(lambda e: e["method"] == "Browser.downloadProgress" and
                                            e["params"]["guid"] == guid and e["params"]["state"] != "inProgress")
                    assert done and done["params"]["state"] == "completed", done
                    assert open(os.path.join(downloads, guid), "rb").read() == open(t, "rb").read(), t
                    downloaded += 1
                assert shown and downloaded, (shown, downloaded)  # both ways a click can go were seen
                assert pg.problems() == [], pg.problems()
                assert pg.eval("document.title") == "flagtrace report"
                assert pg.eval("location.href") == "file://" + urllib.parse.quote(os.path.abspath(out))
                assert pg.eval("document.querySelectorAll('script').length + document.querySelectorAll('img').length") == 2
                pg.ready()
        finally:
            browser.close()


@case("report: the click test sees a javascript: link run; the hashed CSP alone refuses it (it can fail)")
def _():
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as downloads:
        names = hostile_traces(d, ["javascript:alert(1)", "javascript:void(document['title']='pwned')"])
        out = os.path.join(d, "report.html")
        assert report(out, *names, cwd=d).returncode == 0
        page = open(out).read()
        # the page as it was before issue 35: the name itself as the link, taken as it is
        raw = page.replace(json.dumps(page_data(page)["hrefs"]), json.dumps(names))
        raw = raw.replace("if (linkable(href))", "if (href !== null)")
        assert page_data(raw)["hrefs"] == names and "linkable(href))" not in raw
        old = raw.replace(policy(page)["script-src"][0], "'unsafe-inline'", 1)
        browser = Browser(CHROMIUM, downloads)
        try:
            for path, text in ((os.path.join(d, "old.html"), old), (os.path.join(d, "raw.html"), resign(raw))):
                open(path, "w").write(text)
                pg, urls, led = click_links(browser, path, wait=0.3)
                assert urls == names and led == [None, None], (urls, led)
                old_page = path.endswith("old.html")
                for _ in range(100):  # what ran or was refused is reported within 10 s
                    if (pg.problems() and pg.eval("document.title") == "pwned") if old_page else len(pg.problems()) >= 2:
                        break
                    browser.pump(0.1)
                if old_page:  # unsafe-inline: both run, and the test sees it
                    assert pg.problems() == ["dialog: '1'"], pg.problems()
                    assert pg.eval("document.title") == "pwned", pg.eval("document.title")
                else:  # only the page's script by its hash: the links are refused, in the log
                    refused = [p for p in pg.problems() if "Content Security Policy" in p]
                    assert len(refused) == 2 and len(pg.problems()) == 2, pg.problems()
                    assert pg.eval("document.title") == "flagtrace report"
        finally:
            browser.close()


@case("report: no link to stdin or to a trace a browser could open as a page; the page refuses edited links")
def _():
    script = "<script>document.title='trace ran'</script>"
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as downloads:
        names = ["evil.html", "evil.SVG", "javascript:alert(1)"]
        for n in names:  # valid traces whose kernel, shown as a page of its own, would be a script
            open(os.path.join(d, n), "w").write(json.dumps({"traceEvents": [
                {"ph": "X", "cat": "kernel", "name": script, "ts": 0, "dur": 5, "pid": 0}]}))
        out, edited_out, stdin_out = (os.path.join(d, n) for n in ("report.html", "edited.html", "stdin.html"))
        assert report(out, *names, cwd=d).returncode == 0
        page = open(out).read()
        why = "only .json, .gz and names without a dot are linked: a browser may open another file as a page"
        assert page_data(page)["hrefs"] == [None, None, "./javascript%3Aalert%281%29"], page_data(page)["hrefs"]
        assert page_data(page)["no_link"] == [why, why, None], page_data(page)["no_link"]
        # the data edited to links report.c never writes; the page's script as built (its hash holds)
        bad = ["javascript:alert(1)", "./evil.html", "./evil%2Ehtml", "//example.com/x.json", "./x.json?a"]
        edited = page.replace(json.dumps(page_data(page)["hrefs"]), json.dumps(bad[:3]))
        assert page_data(edited)["hrefs"] == bad[:3] and policy(edited) == policy(page)
        open(edited_out, "w").write(edited)
        with open(os.path.join(data, "sample_h200.json.gz"), "rb") as f:
            r = subprocess.run([flagtrace, "report", "-o", stdin_out, "-"], stdin=f, capture_output=True, text=True)
        assert r.returncode == 0 and page_data(open(stdin_out).read())["hrefs"] == [None], r
        # and the page as it would be with a link to evil.html: its click runs the trace's script
        linked = resign(edited.replace("if (linkable(href))", "if (href !== null)").replace(
            json.dumps(bad[:3]), json.dumps(["./evil.html", None, None])))
        linked_out = os.path.join(d, "linked.html")
        open(linked_out, "w").write(linked)
        browser = Browser(CHROMIUM, downloads)
        try:
            for path, notes, links in ((out, [why, why], 1), (edited_out, [why, why, "not a relative path to a trace"], 0),
                                       (stdin_out, ["read from stdin, there is no file to link"], 0)):
                pg = browser.open("file://" + urllib.parse.quote(path)).ready()
                assert pg.eval("document.querySelectorAll('a.open-trace').length") == links, path
                shown = pg.eval("Array.prototype.map.call(document.querySelectorAll('.no-link'), "
                                "function (e) { return e.textContent; })")
                assert shown == [f"(no link: {n})" for n in notes], shown
                assert pg.problems() == [], pg.problems()
            for b in bad:  # what else the page refuses, asked of its own check
                assert pg.eval(f"linkable({json.dumps(b)})") is False, b
            assert pg.eval("linkable('./a%20b.json.gz') && linkable('../x/javascript%3Aalert%281%29')") is True
            pg, urls, led = click_links(browser, linked_out)
            assert len(urls) == 1 and led[0][0] == "page" and led[0][1].endswith("/evil.html"), led
            assert led[0][2] == "text/html" and led[0][4] == "trace ran", led
        finally:
            browser.close()


@case("report: a FIFO or a pipe is read once (its base time is not re-read), never waited on for good")
def _():
    trace = os.path.join(data, "sample_h200.json.gz")
    with tempfile.TemporaryDirectory() as d:
        fifo, out = os.path.join(d, "rank.fifo"), os.path.join(d, "report.html")
        os.mkfifo(fifo)
        writer = subprocess.Popen(["sh", "-c", 'exec cat "$0" > "$1"', trace, fifo])
        try:
            r = subprocess.run([flagtrace, "report", "-q", "-o", out, fifo, trace], capture_output=True, text=True,
                               timeout=60)
        except subprocess.TimeoutExpired:
            assert False, "report of a FIFO waited for a second writer"
        finally:
            writer.kill()
            writer.wait()
        assert r.returncode == 0 and r.stderr == "", r.stderr
        got = page_data(open(out).read())
        want = stats_json(trace)["files"][0]["events"]
        assert [f["events"] for f in got["files"]] == [want, want], got["files"]
        assert got["tl"]["clock"]["why"] == (f"{fifo} was read once (stdin, a FIFO or a pipe): no base time: "
                                             "each rank is drawn from its own first event"), got["tl"]["clock"]
        # a pipe as bash's <(cat trace) gives it: read once, not "empty file"
        rd, wr = os.pipe()
        feeder = subprocess.Popen(["cat", trace], stdout=wr)
        os.close(wr)
        r = subprocess.run([flagtrace, "report", "-q", "--force-overwrite", "-o", out, f"/dev/fd/{rd}"],
                           capture_output=True, text=True, timeout=60, pass_fds=(rd,))
        os.close(rd)
        feeder.wait()
        assert r.returncode == 0 and r.stderr == "", r.stderr
        assert [f["events"] for f in page_data(open(out).read())["files"]] == [want]


def seconds(label):
    """An axis label ("132.648 ms") in seconds."""
    v, unit = label.split()
    return float(v) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


@case("report: used as a person does: wheel zooms, a drag selects (F zooms to it), a double-click resets, a header "
      "sorts, a name hovered shows in full; no request but the page's own, no console error")
def _():
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as downloads:
        out = os.path.join(d, "report.html")
        assert report(out, os.path.join(data, "sample_h200.json.gz")).returncode == 0
        browser = Browser(CHROMIUM, downloads)
        try:
            pg = browser.open("file://" + out).ready()
            axis = "[document.getElementById('axis-lo').textContent, document.getElementById('axis-hi').textContent]"
            picture = "document.querySelector('#timeline-body canvas').toDataURL()"
            lo0, hi0 = pg.eval(axis)
            span = seconds(hi0)
            assert seconds(lo0) == 0 and span > 0, (lo0, hi0)
            pic0 = pg.eval(picture)
            left, top, w, h = pg.box("#timeline-body canvas", 0)
            y = top + h / 2
            # wheel up at the middle: a fifth narrower, about the pointer (it stays at 50 %)
            pg.mouse("mouseMoved", left + w / 2, y)
            pg.mouse("mouseWheel", left + w / 2, y, deltaX=0, deltaY=-100)
            browser.pump(0.2)
            lo, hi = map(seconds, pg.eval(axis))
            assert abs((hi - lo) - 0.8 * span) < 0.002 * span and abs((lo + hi) / 2 - span / 2) < 0.002 * span, (lo, hi)
            assert pg.eval(picture) != pic0, "the timeline was not redrawn after the wheel"
            pg.click("#timeline-body canvas", 0, count=2)  # double-click: the whole span again
            browser.pump(0.2)
            assert pg.eval(axis) == [lo0, hi0], pg.eval(axis)
            assert pg.eval(picture) == pic0
            # a drag from a quarter to three quarters of the row selects that stretch (the view stays); F zooms to it
            pg.mouse("mouseMoved", left + w / 4, y)
            pg.mouse("mousePressed", left + w / 4, y, button="left", clickCount=1)
            pg.mouse("mouseMoved", left + 3 * w / 4, y, button="left", buttons=1)
            pg.mouse("mouseReleased", left + 3 * w / 4, y, button="left", clickCount=1)
            browser.pump(0.2)
            assert pg.eval(axis) == [lo0, hi0], pg.eval(axis)
            pg.eval("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'f', bubbles: true}))")
            browser.pump(0.2)
            lo, hi = map(seconds, pg.eval(axis))
            assert abs(lo - span / 4) < 0.01 * span and abs(hi - 3 * span / 4) < 0.01 * span, (lo, hi, span)
            # a header click sorts the kernels table by that column, a second one reverses it
            col = pg.eval("Array.prototype.map.call(document.querySelectorAll('#table-kernels th'), "
                          "function (t) { return t.textContent; }).indexOf('total time')")
            assert col >= 0
            cells = (f"Array.prototype.map.call(document.querySelectorAll('#table-kernels tr'), function (r) "
                     f"{{ return r.cells[{col}].textContent; }}).slice(1)")
            pg.click("#table-kernels th", col)
            desc = [seconds(c) for c in pg.eval(cells)]
            pg.click("#table-kernels th", col)
            asc = [seconds(c) for c in pg.eval(cells)]
            assert len(desc) == 2 and desc == sorted(desc, reverse=True) and asc == desc[::-1] and desc[0] > desc[1], desc
            # hovering a top kernel's name: the pointer is on it, and its tooltip is the whole name
            nl, nt, nw, nh = pg.box("#top-kernels-body .name", 1)
            pg.mouse("mouseMoved", nl + nw / 2, nt + nh / 2)
            hovered = pg.eval(f"(function () {{ var e = document.elementFromPoint({nl + nw / 2}, {nt + nh / 2});"
                              "return [e.matches(':hover'), e.title, e.textContent]; })()")
            assert hovered == [True, "saxpy(float, float const*, float*, int)",
                               "saxpy(float, float const*, float*, int)"], hovered
            assert pg.requests() == ["file://" + urllib.parse.quote(out)], pg.requests()
            assert pg.problems() == [], pg.problems()
        finally:
            browser.close()


@case("report: size: a few bytes of page per slice (docs/report.md), a name's bytes once")
def _():
    def make(d, n, names):
        # irregular times (what a real trace has): ns-precise gaps and lengths from 1 ns to 50 us
        rnd, t, ev = random.Random(n), 0.0, []
        for i in range(n):
            dur = rnd.randint(1, 50000) / 1000
            ev.append({"ph": "X", "cat": "kernel", "name": names[i % len(names)], "ts": round(t, 3), "dur": dur, "pid": 0})
            t += dur + rnd.randint(1, 20000) / 1000
        p = os.path.join(d, f"t{n}-{len(names)}.json.gz")
        with gzip.open(p, "wt") as f:
            json.dump({"traceEvents": ev}, f)
        out = p + ".html"
        assert report(out, p).returncode == 0
        return os.path.getsize(out)
    with tempfile.TemporaryDirectory() as d:
        small, big = make(d, 2000, ["a", "b", "c"]), make(d, 60000, ["a", "b", "c"])
        per_slice = (big - small) / 58000
        assert 4 < per_slice < 10, (small, big, per_slice)
        more = make(d, 2000, [f"kernel_{i}" for i in range(300)])
        assert small + 300 * 100 < more < small + 300 * 300, (small, more)


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


@case("report -q: the notes and the wrote line go, the page and the errors stay")
def _():
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.json")
        json.dump({"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 7,
             "args": {"device": 0, "stream": 7, "correlation": 1}},
            {"ph": "X", "cat": "bogus_cat", "name": "z", "ts": 1, "dur": 2, "pid": 0, "tid": 7}],
            "flagtrace": {"dropped_records": 3, "device_status": "collected"}}, open(trace, "w"))
        loud, quiet = os.path.join(d, "loud.html"), os.path.join(d, "quiet.html")
        r = report(loud, trace)
        assert r.returncode == 0 and r.stdout == f"flagtrace report: wrote {loud}\n", r
        assert r.stderr == ('flagtrace report: 1 events skipped: unknown categories "bogus_cat" (1)\n'
                            f"flagtrace report: note: {trace} (rank 0) is incomplete: 3 records dropped\n"), r.stderr
        r = subprocess.run([flagtrace, "report", "-q", "-o", quiet, trace], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r
        assert open(quiet).read() == open(loud).read()  # the same page either way
        r = subprocess.run([flagtrace, "report", "--quiet", "-o", quiet, trace], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "exists" in r.stderr, r  # errors still shown


@case("report: the Advice panel's data is advise -f json's findings for the same files (one file, and a job of two)")
def _():
    sets = [["batch16_torch_cuda.json.gz"], ["sample_h200.json.gz"], ["batch8_torch_cuda.json.gz", "batch16_torch_cuda.json.gz"]]
    with tempfile.TemporaryDirectory() as d:
        for names in sets:
            files = [os.path.join(data, n) for n in names]
            out = os.path.join(d, "r.html")
            if os.path.exists(out):
                os.remove(out)
            r = report(out, *files)
            assert r.returncode == 0, r
            got = page_data(open(out).read())["advice"]
            a = subprocess.run([flagtrace, "advise", "-f", "json", "-n", "0", *files], capture_output=True, text=True,
                               check=True)
            want = json.loads(a.stdout)["findings"]
            assert want, names  # each set has findings: the check compares something
            key = ("rule", "rank", "cost_us", "share", "count", "where", "what", "suggestion")
            assert [[f[k] for k in key] for f in got["findings"]] == [[f[k] for k in key] for f in want], names
            for g, w in zip(got["findings"], want):  # the first occurrence, in ns on the page's clock
                assert g["at"] and 0 <= g["at"]["file"] < len(files), (names, g)
                assert g["at"]["dur_ns"] == round(w["occurrences"][0]["dur_us"] * 1000), (names, g, w)


results.finish()
