// The diff page (`flagtrace diff A B -f html`) in Debian's chromium driven by Playwright: both sides
// everywhere the report shows one (the summary's numbers equal to `stats -f json`'s of each side, the
// busy strip, the bars, the tables) and the slower kernels outlined on the timeline (by name: time
// per call on B over 1.1 times A's; and the kernels under a regressed op), read from the page's own
// flags (ftTimeline.outlined), the outline's pixel and the tables' marked rows.
// Usage: node diffpage.test.mjs (FLAGTRACE=path/to/flagtrace); exits 77 without playwright-core or chromium.
import {test} from "node:test";
import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {mkdtempSync, writeFileSync, rmSync} from "node:fs";
import {FLAGTRACE, launch, watch} from "./browser.mjs";
import {tmpdir} from "node:os";
import {join} from "node:path";

// One side: four ops, each a launch and its kernels (us). On B: k_slow twice as long a call and
// k_fast shorter (aten::foo's device time 110 -> 100 us: no regression), aten::bar's k_more once
// more at the same length a call (its op 100 -> 150 us: a regression), the others the same.
function side(path, b) {
  const ev = [];
  let t = 0, corr = 0;
  const op = (name, ext, kernels) => {
    const start = t;
    kernels.forEach(([k, dur]) => {
      corr++;
      ev.push({ph: "X", cat: "cuda_runtime", name: "cudaLaunchKernel", pid: 1, tid: 1, ts: t + 1, dur: 2,
               args: {"External id": ext, correlation: corr}});
      ev.push({ph: "X", cat: "kernel", name: k, pid: 0, tid: 7, ts: t + 5, dur,
               args: {"External id": ext, correlation: corr, stream: 7}});
      t += dur + 10;
    });
    ev.push({ph: "X", cat: "cpu_op", name, pid: 1, tid: 1, ts: start, dur: t - start, args: {"External id": ext}});
    t += 20;
  };
  op("aten::mm", 1, [["gemm_k", 100]]);
  op("aten::foo", 2, [["k_slow", b ? 20 : 10], ["k_fast", b ? 80 : 100]]);
  op("aten::bar", 3, b ? [["k_more", 50], ["k_more", 50], ["k_more", 50]] : [["k_more", 50], ["k_more", 50]]);
  op("aten::baz", 4, [["k_same", 40]]);
  writeFileSync(path, JSON.stringify({traceEvents: ev}));
}

// the page's number formats (base.js fmt) for a span in us
const us = (v) => v >= 1e6 ? (v / 1e6).toFixed(3) + " s" : v >= 1e3 ? (v / 1e3).toFixed(3) + " ms" : v.toFixed(3) + " us";

test("diff -f html: A and B side by side, the slower kernels outlined", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ft-pw-diff-"));
  const browser = await launch();
  try {
    const A = join(dir, "a.json"), B = join(dir, "b.json"), out = join(dir, "diff.html");
    side(A, false); side(B, true);
    execFileSync(FLAGTRACE, ["diff", "-q", "-n", "0", "-f", "html", "-o", out, A, B]); // -n 0: every op and kernel, unchanged ones too
    const stats = [A, B].map((p) => JSON.parse(execFileSync(FLAGTRACE, ["stats", "-q", "-f", "json", p], {encoding: "utf8"})));
    const page = await browser.newPage({viewport: {width: 1200, height: 900}});
    const {problems, requests} = watch(page);
    await page.goto("file://" + out);
    await page.waitForSelector("body[data-levels='1']");

    // the summary: each side's numbers, shown and as data, equal to stats -f json's of that side
    const cells = await page.evaluate(() => Array.from(document.querySelectorAll("#summary-ab td[data-group]"))
      .map((c) => [c.getAttribute("data-group"), c.getAttribute("data-key"), c.getAttribute("data-value"), c.textContent]));
    const want = [];
    stats.forEach((s, i) => {
      const g = "ab"[i], kt = s.kernels.reduce((x, k) => x + k.total_us, 0);
      want.push([g, "files", String(s.files.length), String(s.files.length)], [g, "events", String(s.events), String(s.events)],
                [g, "skipped", String(s.skipped_events), String(s.skipped_events)], [g, "kernel time", String(kt), us(kt)]);
    });
    const order = (x, y) => (x[0] + x[1] < y[0] + y[1] ? -1 : 1);
    assert.deepEqual(cells.slice().sort(order), want.sort(order));
    assert.deepEqual(stats.map((s) => s.events), [16, 18]); // 4 ops, then a launch and a kernel each: 6 on A, 7 on B
    for (const [i, g] of [[0, "a"], [1, "b"]]) { // each side's traces: file, rank, dropped, outside window, span
      const rows = await page.evaluate((g) => Array.from(document.querySelectorAll(`#summary-${g} tr`)).slice(1)
        .map((r) => Array.from(r.cells).slice(0, 7).map((c) => c.textContent)), g);
      const f = stats[i].files[0];
      assert.deepEqual(rows, [[f.file, String(f.rank), "(not flagtrace: torch/kineto or another)", "(the trace does not say)",
        String(f.dropped_records), String(f.window_discarded), us(f.span_us)]]);
    }
    // the busy strip: a row for each side
    const busy = await page.evaluate(() => Array.from(document.querySelectorAll("#busy-body .label")).map((l) => l.textContent));
    assert.deepEqual(busy.map((l) => l.replace(/ \(.*/, "")), ["A rank 0", "B rank 0"]);
    // the tables: A's, B's (every kernel of stats B's), then A vs B
    const names = await page.evaluate(() => Array.from(document.querySelectorAll("#table-b-kernels tbody tr"))
      .map((r) => [r.className, r.cells[r.cells.length - 1].textContent]));
    assert.deepEqual(names, stats[1].kernels.map((k) => [k.name === "k_slow" ? "warn" : "", k.name])); // by name: k_slow only
    const diffRows = await page.evaluate(() => { const t = document.querySelector("#table-diff-kernels table"),
      c = Array.from(t.querySelectorAll("th")).map((h) => h.title);
      return Array.from(t.querySelectorAll("tbody tr")).map((r) => [r.className, r.cells[c.indexOf("op")].textContent, r.cells[c.indexOf("kernel")].textContent]); });
    assert.deepEqual(diffRows.filter((r) => r[0] === "warn").map((r) => r[1] + " " + r[2]).sort(), ["aten::bar k_more", "aten::foo k_slow"]);
    assert.equal(diffRows.length, 5);
    const titles = await page.evaluate(() => Array.from(document.querySelectorAll("#tables-body > details > summary"))
      .map((s) => s.textContent).filter((t) => /kernels/.test(t)));
    assert.deepEqual(titles, ["A: GPU kernels (5)", "B: GPU kernels (5)", "A vs B: kernels (5)"]);
    // the bars: both sides' values for each name
    const bar = await page.evaluate(() => Array.from(document.querySelectorAll("#top-kernels-body .row"))
      .map((r) => [r.children[0].textContent, r.querySelectorAll(".bar").length, r.children[2].textContent]));
    assert.deepEqual(bar.find((r) => r[0] === "k_slow"), ["k_slow", 2, "A 10.000 us \u00b7 B 20.000 us"]);

    // the outlines: k_slow (20 us a call on B, 10 on A) and k_more (under aten::bar, 1.5 times A), on both sides
    for (const [g, n] of [[0, 2], [1, 3]]) {
      const got = await page.evaluate((g) => ftTimeline.outlined(g).map((x) => x[2]), g);
      assert.deepEqual(got.slice().sort(), ["k_slow"].concat(Array(n).fill("k_more")).sort(), `group ${g}`);
    }
    // drawn: the slow kernel's outline red at its edge, the unchanged one's not
    const pixel = (x, y) => page.evaluate(([x, y]) => Array.from(document.querySelector("canvas.tl-canvas")
      .getContext("2d").getImageData(Math.floor(x), Math.floor(y), 1, 1).data), [x, y]);
    const pos = (g, name) => page.evaluate(([g, name]) => { const [f, k] = ftTimeline.find(g, name)[0]; return ftTimeline.slicePos(g, f, k); }, [g, name]);
    const red = ([r, gg, b]) => r > 180 && gg < 80 && b < 80;
    const slow = await pos(1, "k_slow"), same = await pos(1, "k_same");
    assert.ok(red(await pixel(slow.x + 1.5, slow.y + 6)), "k_slow outlined");
    assert.ok(!red(await pixel(same.x + 1.5, same.y + 6)), "k_same not outlined");
    assert.deepEqual(problems, []);
    assert.deepEqual(requests, ["file://" + out]);
  } finally {
    await browser.close();
    rmSync(dir, {recursive: true, force: true});
  }
});
