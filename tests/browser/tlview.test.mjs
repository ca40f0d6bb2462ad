// The report timeline's drawing (issue 52), in Debian's chromium driven by Playwright: names kept on
// merged blocks at overview zoom and cut with "…"; the GPU ranges row bounded to 6 lanes; the time
// axis's 1-2-5 ticks and units, sticky over the canvas; rows named by the trace's thread_name /
// process_name events; the busy strip on the timeline's clock; busy % and queue counter tracks and a legend of
// what the page has; folding, pinning, ranks folded to summary rows above 8 ranks.
// Usage: node --test tlview.test.mjs (FLAGTRACE=path/to/flagtrace).
import {test} from "node:test";
import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {mkdtempSync, writeFileSync, rmSync} from "node:fs";
import {FLAGTRACE, launch, watch} from "./browser.mjs";
import {tmpdir} from "node:os";
import {join} from "node:path";

const x = (ev, cat, name, ts, dur, pid, tid, args) => ev.push({ph: "X", cat, name, pid, tid, ts, dur, args: args || {}});
const meta = (ev, what, pid, tid, name) => ev.push({name: what, ph: "M", ts: 0, pid, tid, args: {name}});
const LONG = "a_kernel_name_far_too_long_for_its_slice_at_this_zoom_level_of_the_timeline";

// one rank: two steps 50 us apart; a 124 ms cudaMalloc followed by 200 short calls 20 us apart (merged with it at overview
// zoom), 100 ops 100 us long 10 us apart (merged, none most of its block), kernels on stream 7, one
// with a long name; 20 GPU ranges each starting inside the previous and ending after it (20 deep)
function trace(rank, opts = {}) {
  const ev = [];
  if (opts.names) {
    meta(ev, "process_name", 1, 0, "trainer");
    meta(ev, "thread_name", 1, 1, "main thread");
    meta(ev, "thread_name", 0, 7, "stream 7 ");
    meta(ev, "process_name", 0, 0, "python3");
  }
  x(ev, "cuda_runtime", "cudaMalloc", 1000, 124000, 1, 1);
  for (let i = 0; i < 200; i++) x(ev, "cuda_runtime", "cudaLaunchKernel", 125010 + 20 * i, 4, 1, 1, {correlation: i + 1});
  for (let i = 0; i < 100; i++) x(ev, "cpu_op", "tiny_op", 1000 + 110 * i, 100, 1, 2);
  x(ev, "user_annotation", "ProfilerStep#551", 1000, 59000, 1, 3); x(ev, "user_annotation", "ProfilerStep#552", 60050, 64000, 1, 3);
  x(ev, "cpu_op", "outer_op", 15000, 50, 1, 2); x(ev, "cpu_op", "inner_op", 15010, 20, 1, 2);
  for (let i = 0; i < 200; i++) x(ev, "kernel", i === 0 ? LONG : "gemm", 125020 + 20 * i, i === 0 ? 6000 : 10, 0, 7, {correlation: i + 1, stream: 7, device: 0});
  for (let i = 0; i < 20; i++) x(ev, "gpu_user_annotation", "range" + i, 125020 + 10 * i, 100, 0, 7, {stream: 7});
  return JSON.stringify({schemaVersion: 1, distributedInfo: {rank}, traceEvents: ev});
}

async function open(browser, files, dir, name) {
  const out = join(dir, name + ".html");
  execFileSync(FLAGTRACE, ["report", "-q", "-o", out, ...files]);
  const page = await browser.newPage({viewport: {width: 1200, height: 900}});
  const w = watch(page);
  await page.goto("file://" + out);
  await page.waitForSelector("body[data-levels='1']");
  return {page, ...w};
}
// a click on the row labels' canvas at (px, py) of it, scrolled so that the point is in the viewport
async function clickLabel(page, px, py) {
  await page.evaluate((py) => { const r = ftTimeline.TL.labels.getBoundingClientRect(); window.scrollBy(0, r.top + py - 300); }, py);
  const o = await page.evaluate(() => { const r = ftTimeline.TL.labels.getBoundingClientRect(); return [r.left, r.top]; });
  await page.mouse.click(o[0] + px, o[1] + py);
}
const pixel = (page, sel, x, y) => page.evaluate(([s, x, y]) => Array.from(document.querySelector(s).getContext("2d").getImageData(x, y, 1, 1).data), [sel, x, y]);

test("timeline drawing: labels, lanes, axis, names, busy strip, counters, legend, folds and pins", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ft-pw-tlview-"));
  const browser = await launch();
  try {
    const one = join(dir, "one.json");
    writeFileSync(one, trace(0, {names: true}));
    const {page, problems, requests} = await open(browser, [one], dir, "one");
    const W = await page.evaluate(() => ftTimeline.TL.canvas.clientWidth);
    assert.ok(W > 800 && W < 1000, "the canvas's width: " + W);

    await t.test("4. rows named by the trace's thread_name / process_name", async () => {
      const rows = await page.evaluate(() => ftTimeline.TL.rows.map((r) => r.text));
      assert.deepEqual(rows, ["rank 0  one.json", "main thread runtime", "trainer thread 2 ops", "trainer thread 3 ops", "GPU 0 stream 7", "GPU 0 stream 7 queue", "GPU 0 ranges", "GPU 0 busy %"]);
    });

    // levels of detail: 1 and up made at load (1 from the slices), 0 in the background once drawn (data-levels);
    // each level's blocks as merging the level below gives, worked out here from level 0 (the definition)
    await t.test("8. levels of detail: each one the level below merged, level 0 made after the first frame", async () => {
      const got = await page.evaluate(() => {
        const TL = ftTimeline.TL, out = [];
        const merge = (F, S, E, R, C, L) => { // gaps under 1 us * 8^L merged, a slice 16 px long or longer alone
          const res = 1000 * 8 ** L, blocks = [];
          for (let i = 0; i < S.length; i++) {
            const len = F.en[R[i]] - F.st[R[i]], b = blocks[blocks.length - 1];
            if (b && S[i] - b.e < res && len < 16 * res && !b.long) {
              b.e = Math.max(b.e, E[i]); b.c += C[i]; if (len > b.len) { b.len = len; b.r = R[i]; }
            } else blocks.push({s: S[i], e: E[i], r: R[i], c: C[i], len, long: len >= 16 * res});
          }
          return blocks;
        };
        TL.tracks.forEach((T) => T.lanes.forEach((lane) => {
          const F = T.file, n = lane.s.length, raw = Array.from(lane.idx, (k) => F.en[k]), ones = new Array(n).fill(1);
          const lv = (L) => lane.lv[L] && {s: Array.from(lane.lv[L].s), e: Array.from(lane.lv[L].e), r: Array.from(lane.lv[L].rep), c: Array.from(lane.lv[L].cnt)};
          let want = merge(F, lane.s, raw, lane.idx, ones, 0), bad = "";
          for (let L = 0; L <= lane.top && !bad; L++) {
            const g = lv(L), w = {s: want.map((b) => b.s), e: want.map((b) => b.e), r: want.map((b) => b.r), c: want.map((b) => b.c)};
            if (JSON.stringify(g) !== JSON.stringify(w)) bad = "level " + L + " differs";
            want = merge(F, w.s, w.e, w.r, w.c, L + 1);
          }
          out.push({track: T.label, n, top: lane.top, last: lane.lv[lane.top].s.length, bad});
        }));
        return {lanes: out, marks: performance.getEntriesByName("ft-levels").length};
      });
      assert.equal(got.marks, 1, "level 0 made once, after the first frame");
      assert.ok(got.lanes.length >= 6 && got.lanes.some((l) => l.n >= 200), JSON.stringify(got.lanes));
      for (const l of got.lanes) {
        assert.equal(l.bad, "", l.track + ": " + l.bad);
        assert.ok(l.last === 1 || l.top === 15, l.track + ": the coarsest level is one block");
      }
    });

    // 1. the whole trace (~129 ms on ~940 px): cudaMalloc is merged with the calls after it and keeps its
    // name; tiny_op's blocks (none mostly one op) have none; the long kernel name is cut with "…"
    await t.test("1. names on merged blocks, cut with an ellipsis", async () => {
      // the name is drawn: dark text pixels inside cudaMalloc's block
      const mp = await page.evaluate(() => { const [f, k] = ftTimeline.find(0, "cudaMalloc")[0]; return ftTimeline.slicePos(0, f, k); });
      const dark = await page.evaluate((p) => { const d = ftTimeline.TL.canvas.getContext("2d").getImageData(Math.round(p.x) + 2, p.y + 1, 50, 10).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] < 90 && d[i + 1] < 90 && d[i + 2] < 90) n++; return n; }, mp);
      assert.ok(dark >= 20, "cudaMalloc's name is drawn: " + dark + " dark pixels");
      const lab = await page.evaluate(() => ftTimeline.labels());
      const malloc = lab.filter((l) => l.name === "cudaMalloc");
      assert.equal(malloc.length, 1);
      assert.equal(malloc[0].text, "cudaMalloc");
      assert.equal(lab.filter((l) => l.name === "tiny_op").length, 0);
      // two long slices 50 us apart (HTA's ProfilerStep#551, #552): each a block of its own, named
      assert.deepEqual(lab.filter((l) => /^ProfilerStep/.test(l.name)).map((l) => l.text), ["ProfilerStep#551", "ProfilerStep#552"]);
      // zoomed on the long kernel (6 ms wide of a 20 ms view: ~280 px): its name cut to fit, with an ellipsis
      await page.evaluate(() => ftTimeline.setView(120000000, 140000000));
      const cut = (await page.evaluate(() => ftTimeline.labels())).find((l) => l.name.startsWith("a_kernel"));
      assert.ok(cut.text.endsWith("\u2026") && cut.text.length > 10 && cut.text.length < 75, cut.text);
      assert.ok(cut.name.startsWith(cut.text.slice(0, -1)));
      const tw = await page.evaluate((t) => { const g = ftTimeline.TL.canvas.getContext("2d"); g.font = "10px system-ui,sans-serif"; return g.measureText(t).width; }, cut.text);
      assert.ok(tw <= cut.w, `the cut name fits: ${tw} <= ${cut.w}`);
    });

    // 2. the 20-deep GPU ranges: 6 lanes, the last holding the 15 deepest, said in the row
    await t.test("2. GPU ranges bounded to 6 lanes", async () => {
      const ranges = await page.evaluate(() => { const T = ftTimeline.TL.tracks.find((T) => T.cls === 3); return {lanes: T.lanes.length, h: T.h}; });
      assert.deepEqual(ranges, {lanes: 6, h: 6 * 15 + 3});
      const rr = (await page.evaluate(() => ftTimeline.rows())).find((r) => r.text === "GPU 0 ranges");
      assert.equal(rr.note, "20 deep, last 15 merged");
    });

    // 3. the axis: 1-2-5 steps at least 90 px apart, in the step's unit from the view's origin
    await t.test("3. the time axis", async () => {
      assert.ok(await page.$("div.tl-axis"), "an axis");
      await page.evaluate(() => ftTimeline.setView(0, 1e6));
      let ax = await page.evaluate(() => ftTimeline.axis());
      assert.equal(ax.step, 100000);
      assert.deepEqual(ax.ticks.map((t) => t.text), ["0 us", "100 us", "200 us", "300 us", "400 us", "500 us", "600 us", "700 us", "800 us", "900 us", "1000 us"]);
      assert.ok(Math.abs(ax.ticks[3].x - 0.3 * W) < 1e-6);
      await page.evaluate(() => ftTimeline.setView(2e6, 2e6 + 2e9 / 2));
      ax = await page.evaluate(() => ftTimeline.axis());
      assert.deepEqual([ax.step, ax.unit, ax.ticks[0].text, ax.ticks[1].text], [100000000, "ms", "100 ms", "200 ms"]);
      await page.evaluate(() => ftTimeline.setView(1234567000, 1234568000)); // 1 us deep in the second second
      ax = await page.evaluate(() => ftTimeline.axis());
      assert.deepEqual([ax.step, ax.relative, ax.ticks[0].text, ax.ticks[1].text, ax.ticks.length], [100, true, "1.2345670 s", "+100 ns", 11]);
      // drawn above the canvas, aligned with it, and sticky at the window's top while the timeline scrolls under it
      const axr = await page.evaluate(() => { const a0 = document.querySelector("div.tl-axis").getBoundingClientRect(), a = {left: a0.left, width: a0.width, bottom: document.querySelector("div.tl-axis").parentNode.getBoundingClientRect().bottom}, c = ftTimeline.TL.canvas.getBoundingClientRect(), w = ftTimeline.TL.canvas.parentNode.getBoundingClientRect(); return [a.left, a.width, a.bottom, c.left, c.width, w.top, getComputedStyle(document.querySelector("div.tl-axis").parentNode).position]; });
      assert.deepEqual([axr[0], axr[1], axr[2], axr[6]], [axr[3], axr[4], axr[5], "sticky"]);
      // each tick drawn: its mark at its x, its text above it
      const drawn = await page.evaluate(() => Array.from(document.querySelectorAll("div.tl-axis > span")).filter((s) => s.style.display !== "none").map((s) => [s.firstChild.nodeValue, Math.round(s.lastChild.getBoundingClientRect().left - ftTimeline.TL.canvas.getBoundingClientRect().left)]));
      assert.deepEqual(drawn, ax.ticks.map((k) => [k.text, Math.round(k.x)]));
    });

    // 5. the busy strip: the timeline's x and clock. Whole trace: busy where the kernels run, not before
    await t.test("5. the busy strip on the timeline's clock", async () => {
      await page.evaluate(() => new Promise((ok) => { ftTimeline.setView(0, 130000000); requestAnimationFrame(() => ok()); })); // (redrawn once a frame)
      const strip = await page.evaluate(() => { const b = document.querySelector("#busy-body canvas").getBoundingClientRect(), c = ftTimeline.TL.canvas.getBoundingClientRect(); return [b.left, b.width, c.left, c.width]; });
      assert.deepEqual([strip[0], strip[1]], [strip[2], strip[3]]);
      const kx = await page.evaluate(() => { const [f, k] = ftTimeline.find(0, "a_kernel_name_far_too_long_for_its_slice_at_this_zoom_level_of_the_timeline")[0]; const p = ftTimeline.slicePos(0, f, k); return Math.round((p.x + p.x1) / 2); });
      const busy = await page.evaluate((x) => ftTimeline.busyAt(0, x), kx), idle = await page.evaluate((x) => ftTimeline.busyAt(0, x), Math.round(W * 0.3));
      assert.ok(busy[1] < 200 && busy[3] === 255, "busy where the long kernel runs: " + busy);
      assert.ok(idle[1] > 240 || idle[3] === 0, "idle at 30 % of the view (in cudaMalloc): " + idle);
      assert.match(await page.textContent("#busy h2"), /timeline's clock/);
    });

    // 6. counter tracks: GPU 0 busy % under the stream; the legend names only what the page has
    await t.test("6. busy % counter track, the legend of what the page has", async () => {
      await page.evaluate(() => ftTimeline.setView(0, 130000000));
      const legend = await page.textContent("#timeline .legend");
      assert.ok(!/device memory/.test(legend), legend);
      assert.match(legend, /device work.*CPU ops.*runtime calls.*GPU ranges.*GPU busy %.*stream queue/);
      // the stream's queue: each kernel launched 10 us before it starts, one at a time: at most 1, drawn (orange) where they run
      const qt = await page.evaluate(() => { const T = ftTimeline.TL.tracks.find((T) => T.cls === 6); return {label: T.label, top: T.busy.top, max: Math.max(...T.busy.bins), y: T.y, h: T.h}; });
      assert.deepEqual([qt.label, qt.top, qt.max], ["GPU 0 stream 7 queue", "1 queued", 1]);
      const kx = await page.evaluate(() => { const [f, k] = ftTimeline.find(0, "a_kernel_name_far_too_long_for_its_slice_at_this_zoom_level_of_the_timeline")[0]; const p = ftTimeline.slicePos(0, f, k); return Math.round((p.x + p.x1) / 2); });
      const bt = await page.evaluate(() => { const T = ftTimeline.TL.tracks.find((T) => T.cls === 5); return {label: T.label, y: T.y, h: T.h}; });
      assert.equal(bt.label, "GPU 0 busy %");
      const bp = await pixel(page, "canvas.tl-canvas", kx, bt.y + bt.h - 4);
      assert.deepEqual(bp.slice(0, 3).map((v) => v > 0), [true, true, true]);
      assert.ok(bp[1] > bp[0] && bp[1] > bp[2], "green at the long kernel: " + bp);
      const qp = await pixel(page, "canvas.tl-canvas", kx, qt.y + qt.h - 4);
      assert.ok([217, 120, 6, 179].every((v, i) => Math.abs(qp[i] - v) <= 2), "the queue's orange (rgba(217,119,6,0.7)) where the kernels are queued: " + qp);
    });

    // 7. fold and pin: a click on a track's name folds it to one lane; on its dot pins it above the ranks
    await t.test("7. a track folded and pinned by clicks on its label", async () => {
      const opsRow = (await page.evaluate(() => ftTimeline.rows())).find((r) => r.text === "trainer thread 2 ops");
      assert.deepEqual([opsRow.lanes, opsRow.shown], [2, 2]);
      await clickLabel(page, 40, opsRow.y + 5);
      let r2 = (await page.evaluate(() => ftTimeline.rows())).find((r) => r.text === "trainer thread 2 ops");
      assert.deepEqual([r2.collapsed, r2.shown, r2.h], [true, 1, 18]);
      await clickLabel(page, 190 - 8, r2.y + 8);
      const pinned = await page.evaluate(() => ftTimeline.rows().map((r) => [r.text, r.pinned]));
      assert.deepEqual(pinned.slice(0, 3), [["pinned", false], ["rank 0: trainer thread 2 ops", true], ["rank 0  one.json", false]]);
      assert.ok(!pinned.slice(3).some((r) => r[0] === "trainer thread 2 ops"));
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(requests, ["file://" + join(dir, "one.html")]);
    await page.close();

    // ranks above 8: each folded to its summary row; a click on a rank's title unfolds it
    await t.test("7. ranks above 8 folded to summary rows", async () => {
      const files = [];
      for (let r = 0; r < 9; r++) { const f = join(dir, `r${r}.json`); writeFileSync(f, trace(r)); files.push(f); }
      const many = await open(browser, files, dir, "many");
      assert.equal(await many.page.evaluate(() => ftTimeline.TL.rows.length), 18);
      let mr = await many.page.evaluate(() => ftTimeline.rows());
      assert.deepEqual(mr.slice(0, 2).map((r) => [r.text, r.summary]), [["rank 0  r0.json", false], ["summary: GPU busy, 1 device", true]]);
      const head3 = mr.find((r) => r.text === "rank 3  r3.json");
      await clickLabel(many.page, 40, head3.y + 5);
      mr = await many.page.evaluate(() => ftTimeline.rows());
      const at = mr.findIndex((r) => r.text === "rank 3  r3.json");
      assert.deepEqual(mr.slice(at, at + 9).map((r) => r.text), ["rank 3  r3.json", "thread 1 runtime", "thread 2 ops", "thread 3 ops", "GPU 0 stream 7", "GPU 0 stream 7 queue", "GPU 0 ranges", "GPU 0 busy %", "rank 4  r4.json"]);
      assert.equal(mr.length, 18 - 1 + 7);
      // the axis stays at the window's top while the timeline scrolls under it
      const top = await many.page.evaluate(() => { const w = ftTimeline.TL.canvas.parentNode; window.scrollBy(0, w.getBoundingClientRect().top + 150); return [Math.round(w.getBoundingClientRect().top), document.querySelector("div.tl-axis").getBoundingClientRect().top]; });
      assert.deepEqual(top, [-150, 0]);
      // the summary row is drawn: green where rank 0's long kernel runs
      const s0 = mr[1], k0 = await many.page.evaluate(() => { const [f, k] = ftTimeline.find(0, "a_kernel_name_far_too_long_for_its_slice_at_this_zoom_level_of_the_timeline")[0]; const p = ftTimeline.slicePos(0, f, k); return Math.round((p.x + p.x1) / 2); });
      const sp = await pixel(many.page, "canvas.tl-canvas", k0, s0.y + 7);
      assert.ok(sp[1] > sp[0] && sp[1] > sp[2] && sp[1] < 200, "the summary row's busy: " + sp);
      assert.deepEqual(many.problems, []);
    });
  } finally {
    await browser.close();
    rmSync(dir, {recursive: true, force: true});
  }
});
