// The report's Advice panel (issue 50) in Debian's chromium driven by Playwright: a trace with
// a known sync finding (tests/e2e/test_advise.py's sync_trace) shows it as the panel's first row
// with advise -f json's rule and cost; a click on the row frames its first occurrence on the
// timeline and pins its slice; a trace without findings says so in one line; no console error,
// no network request. Usage: node --test advice_panel.test.mjs (FLAGTRACE=path/to/flagtrace).
import {test} from "node:test";
import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {mkdtempSync, writeFileSync, rmSync} from "node:fs";
import {FLAGTRACE, launch, watch} from "./browser.mjs";
import {tmpdir} from "node:os";
import {join} from "node:path";

const STEP = 10000; // us

// test_advise.py's Trace: ProfilerStep#N on the CPU thread, ops and calls there, kernels on stream 7
function trace(sync) {
  const ev = [];
  let corr = 0, ext = 100;
  const x = (cat, name, ts, dur, pid, tid, args) => ev.push({ph: "X", cat, name, pid, tid, ts, dur, args});
  const call = (name, ts, dur, e) => { corr++; x("cuda_runtime", name, ts, dur, 1, 1, {correlation: corr, "External id": e || ext}); return corr; };
  const kernel = (name, callTs, ts, dur) => {
    const c = call("cudaLaunchKernel", callTs, 4);
    x("kernel", name, ts, dur, 0, 7, {correlation: c, stream: 7, device: 0, "External id": ext});
  };
  const fed = (s, start, end, n, prefix, at) => { const d = (end - start) / n; for (let i = 0; i < n; i++) kernel(`${prefix}_${i}`, at + 5 * i, s + start + i * d, d); };
  for (let k = 0; k < 3; k++) {
    const s = 1000 + k * STEP;
    ext++; x("user_annotation", `ProfilerStep#${k + 1}`, s, STEP, 1, 1, {"External id": ext});
    if (sync) {
      fed(s, 5, 5000, 5, "gemm", s);
      ext++; x("cpu_op", "aten::item", s + 4980, 2022, 1, 1, {"External id": ext});
      call("cudaDeviceSynchronize", s + 4990, 2010, ext);
      fed(s, 7005, 9995, 5, "elementwise", s + 7000);
    } else {
      fed(s, 5, 9995, 10, "gemm", s);
    }
  }
  return JSON.stringify({schemaVersion: 1, traceEvents: ev});
}

test("advice panel: advise's first finding, a click frames its occurrence; none: one line", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ft-pw-advice-"));
  const browser = await launch();
  try {
    const path = join(dir, "sync.json"), clean = join(dir, "clean.json");
    writeFileSync(path, trace(true));
    writeFileSync(clean, trace(false));
    const adv = JSON.parse(execFileSync(FLAGTRACE, ["advise", "-f", "json", "-n", "0", path], {encoding: "utf8"}));
    const want = adv.findings[0];
    assert.equal(want.rule, "sync");
    const out = join(dir, "report.html");
    execFileSync(FLAGTRACE, ["report", "-o", out, path]);
    const page = await browser.newPage({viewport: {width: 1200, height: 900}});
    const {problems, requests} = watch(page);
    await page.goto("file://" + out);
    await page.waitForSelector("body[data-levels='1']");
    assert.equal(await page.getAttribute("#advice", "data-rendered"), "1");
    const row = page.locator("#advice tbody tr").first();
    const cells = await row.locator("td").allTextContents();
    assert.equal(cells[1], want.rule);
    assert.equal(cells[3], "2.005 ms"); // the page's fmt of advise's cost_us
    assert.equal(want.cost_us, 2005);
    assert.equal(cells[5], String(want.count));
    // before the click the whole trace is shown; the occurrence is a small part of it
    const before = await page.evaluate(() => ftTimeline.TL.view.slice());
    await row.click();
    const after = await page.evaluate(() => {
      const TL = ftTimeline.TL, p = TL.pinned;
      return {view: TL.view.slice(), pinned: p ? {name: p.G.names[p.F.name[p.k]], st: p.F.st[p.k], en: p.F.en[p.k]} : null,
              shift: TL.groups[0].shift, on: document.querySelector("#advice tbody tr.on") !== null};
    });
    // the occurrence on the page's clock: its ts from the file's first slice (ProfilerStep#1 at 1000 us), in ns
    const occ = want.occurrences[0], t = (occ.ts_us - 1000) * 1000, d = occ.dur_us * 1000;
    assert.ok(after.view[0] <= t && t + d <= after.view[1], `view ${after.view} holds [${t}, ${t + d})`);
    assert.ok(after.view[1] - after.view[0] < (before[1] - before[0]) / 4, `zoomed in: ${after.view} from ${before}`);
    assert.ok(after.pinned, "the occurrence's slice pinned");
    assert.equal(after.pinned.st, t);
    assert.equal(after.on, true);
    // the clean trace: no finding, one line
    const out2 = join(dir, "clean.html");
    execFileSync(FLAGTRACE, ["report", "-o", out2, clean]);
    await page.goto("file://" + out2);
    await page.waitForSelector("body[data-levels='1']");
    assert.equal((await page.textContent("#advice-body")).trim(), "no finding above its threshold");
    assert.deepEqual(problems, []);
    assert.ok(requests.every((u) => u.startsWith("file://")), `requests: ${requests}`);
  } finally {
    await browser.close();
    rmSync(dir, {recursive: true, force: true});
  }
});
