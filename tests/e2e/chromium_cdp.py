"""A small Chrome DevTools Protocol client over --remote-debugging-pipe, standard library only:
Debian's headless chromium loads a page, clicks where a mouse would, and says what happened
(dialogs, navigations, downloads, exceptions, console and CSP messages). No browser download,
no npm: the same chromium the --dump-dom checks use."""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

def chromium_or_skip():
    """Debian's chromium, or exit 77 (a skip under ctest) without it."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        print("SKIP: no chromium (scripts/deps.sh test installs it)")
        sys.exit(77)
    return path


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Browser:
    def __init__(self, chromium, download_dir):
        self.profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        # chromium reads commands on fd 3 and writes replies and events on fd 4, each message NUL-terminated
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)
        self.proc = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={self.profile.name}", "--remote-debugging-pipe",
                                      "about:blank"], pass_fds=(3, 4, to_r, from_w), preexec_fn=fds,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)  # its own group: close() ends its helpers too
        os.close(to_r)
        os.close(from_w)
        self.buf, self.next_id, self.events = b"", 0, []
        self.call("Browser.setDownloadBehavior", {"behavior": "allowAndName", "downloadPath": download_dir,
                                                  "eventsEnabled": True})

    def _recv(self, timeout):
        end = time.monotonic() + timeout
        while b"\0" not in self.buf:
            ready, _, _ = select.select([self.from_r], [], [], max(0.0, end - time.monotonic()))
            chunk = os.read(self.from_r, 1 << 16) if ready else b""
            if not chunk:
                return None
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        m = json.loads(msg)
        if m.get("method") == "Page.javascriptDialogOpening":  # noted, then closed so that the page goes on
            self._send("Page.handleJavaScriptDialog", {"accept": True}, m.get("sessionId"))
        return m

    def _send(self, method, params, session):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.to_w, json.dumps(m).encode() + b"\0")
        return self.next_id

    def call(self, method, params=None, session=None, timeout=30):
        i = self._send(method, params, session)
        while True:
            m = self._recv(timeout)
            if m is None:
                raise RuntimeError(f"chromium gave no reply to {method}")
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def pump(self, seconds):
        """Collects events for a while (what a click set off)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            m = self._recv(end - time.monotonic())
            if m and "method" in m:
                self.events.append(m)

    def wait_for(self, pred, timeout=15, since=0):
        """The first event from index since on that pred accepts, or None after timeout seconds."""
        end = time.monotonic() + timeout
        while True:
            for e in self.events[since:]:
                if pred(e):
                    return e
            if time.monotonic() >= end:
                return None
            m = self._recv(end - time.monotonic())
            if m and "method" in m:
                self.events.append(m)

    def open(self, url):
        return Page(self, url)

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
            self.proc.wait(timeout=10)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)
        self.profile.cleanup()


class Page:
    def __init__(self, browser, url):
        self.b = browser
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.s = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):  # Network: every request the page makes is seen
            self.call(f"{domain}.enable")
        self.first = len(browser.events)
        self.goto(url)

    def goto(self, url):
        mark = len(self.b.events)
        self.call("Page.navigate", {"url": url})
        if not self.b.wait_for(lambda e: e.get("sessionId") == self.s and e["method"] == "Page.loadEventFired",
                               since=mark):
            raise RuntimeError(f"{url} did not load")

    def call(self, method, params=None):
        return self.b.call(method, params, self.s)

    def events(self, *methods):
        return [e for e in self.b.events[self.first:] if e["method"] in methods and e.get("sessionId") in (None, self.s)]

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def box(self, selector, index):
        """The element scrolled into view: its left, top, width and height in the viewport."""
        return self.eval(f"(function () {{ var e = document.querySelectorAll({json.dumps(selector)})[{index}];"
                         "e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect();"
                         "return [r.left, r.top, r.width, r.height]; })()")

    def mouse(self, kind, x, y, **extra):
        """One mouse event as the input device gives it (mouseMoved, mousePressed, mouseReleased, mouseWheel)."""
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    def click(self, selector, index, count=1):
        """A left click (count 2: a double-click) at the middle of the element, as the mouse gives it
        (not element.click())."""
        left, top, w, h = self.box(selector, index)
        x, y = left + w / 2, top + h / 2
        self.mouse("mouseMoved", x, y)
        for n in range(1, count + 1):
            for kind in ("mousePressed", "mouseReleased"):
                self.mouse(kind, x, y, button="left", clickCount=n)

    def ready(self):
        """The page once its script is done (body data-levels="1": the report's timeline is drawn
        after its columns inflate, past the load event, then its finest levels of detail made); self."""
        for _ in range(200):
            if self.eval("document.body && document.body.getAttribute('data-levels')") == "1":
                return self
            self.b.pump(0.05)
        raise AssertionError(f"the page did not get ready: {self.problems()}")

    def requests(self):
        """The URLs the page asked for, its own document included."""
        return [e["params"]["request"]["url"] for e in self.events("Network.requestWillBeSent")]

    def problems(self):
        """Whatever says script ran or was refused: dialogs, uncaught exceptions, console and log errors."""
        out = [f"dialog: {e['params']['message']!r}" for e in self.events("Page.javascriptDialogOpening")]
        out += [f"exception: {e['params']['exceptionDetails'].get('exception', {}).get('description')}"
                for e in self.events("Runtime.exceptionThrown")]
        out += [f"console.{e['params']['type']}" for e in self.events("Runtime.consoleAPICalled")
                if e["params"]["type"] in ("error", "warning", "assert")]
        out += [f"log {e['params']['entry']['level']}: {e['params']['entry']['text']}" for e in self.events("Log.entryAdded")
                if e["params"]["entry"]["level"] in ("error", "warning") or "Content Security Policy" in e["params"]["entry"]["text"]]
        return out
