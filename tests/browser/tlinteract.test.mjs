// The timeline's interaction in Debian's chromium driven by Playwright (issue 52): the details panel
// and its links as jumps, a drag's totals, following the launch arrow, search (count, next/previous,
// the list), the step selector aligning every rank, the keyboard. Each part a test of its own.
// Usage: node --test tlinteract.test.mjs (FLAGTRACE=path/to/flagtrace); exits 77 without chromium.
import {test, before, after} from "node:test";
import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {mkdtempSync, writeFileSync, rmSync} from "node:fs";
import {FLAGTRACE, launch, watch} from "./browser.mjs";
import {tmpdir} from "node:os";
import {join} from "node:path";

// one rank (times in us; no base time: each rank from its own first slice, ProfilerStep#1 at 0):
// step 1 lasts 1000 us on rank 0 and `s1` on rank 1, so step 2 starts 500 us later on rank 1
function rank(path, r, s1) {
  const d = s1 - 1000, X = (cat, name, pid, tid, ts, dur, args) => ({ph: "X", cat, name, pid, tid, ts, dur, args: args || {}});
  const ev = [
    X("user_annotation", "ProfilerStep#1", 100, 100, 1000, s1),
    X("cpu_op", "aten::mm", 100, 100, 1100, 500, {"External id": 7, "Input Dims": [[4, 4], [4, 4]]}),
    X("cuda_runtime", "cudaLaunchKernel", 100, 100, 1150, 20, {"External id": 7, correlation: 11}),
    X("kernel", "gemm_kernel", 0, 7, 1800, 100, {"External id": 7, correlation: 11, stream: 7, grid: [4, 1, 1], block: [128, 1, 1], "registers per thread": 32}),
    X("user_annotation", "ProfilerStep#2", 100, 100, 2000 + d, 1000),
    X("cuda_runtime", "cudaMemcpyAsync", 100, 100, 2100 + d, 10, {correlation: 12}),
    X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 7, 2200 + d, 50, {correlation: 12, stream: 7, bytes: 4096}),
    X("cpu_op", "aten::mm", 100, 100, 2390 + d, 150, {"External id": 8}),
    X("cuda_runtime", "cudaLaunchKernel", 100, 100, 2400 + d, 20, {"External id": 8, correlation: 13}),
    X("kernel", "gemm_kernel", 0, 7, 2500 + d, 100, {"External id": 8, correlation: 13, stream: 7, grid: [8, 1, 1], block: [256, 1, 1]}),
  ];
  writeFileSync(path, JSON.stringify({distributedInfo: {rank: r}, traceEvents: ev}));
}

let dir, browser, url;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "ft-pw-"));
  rank(join(dir, "r0.json"), 0, 1000);
  rank(join(dir, "r1.json"), 1, 1500);
  const out = join(dir, "report.html");
  execFileSync(FLAGTRACE, ["report", "-q", "-o", out, join(dir, "r0.json"), join(dir, "r1.json")]);
  url = "file://" + out;
  browser = await launch();
});
after(async () => { await browser.close(); rmSync(dir, {recursive: true, force: true}); });

async function open() {
  const page = await browser.newPage({viewport: {width: 1200, height: 900}});
  page.setDefaultTimeout(5000);
  const w = watch(page);
  await page.goto(url);
  await page.waitForSelector("body[data-levels='1']");
  const box = await page.locator("canvas.tl-canvas").boundingBox();
  const pos = (g, name, i) => page.evaluate(([g, name, i]) => {
    const [f, k] = ftTimeline.find(g, name)[i]; return ftTimeline.slicePos(g, f, k); }, [g, name, i]);
  const click = async (g, name, i) => { const p = await pos(g, name, i), b = await page.locator("canvas.tl-canvas").boundingBox(); // the page may have scrolled
    await page.mouse.click(b.x + (p.x + Math.min(p.x1, p.x + 40)) / 2, b.y + p.y + 6); };
  const view = () => page.evaluate(() => ftTimeline.TL.view.slice());
  const pinned = () => page.evaluate(() => { const p = ftTimeline.TL.pinned; return p ? [p.G.names[p.F.name[p.k]], p.F.rank, p.F.st[p.k] - p.F.shift] : null; });
  // the details panel once drawn: [key, value] rows
  const panel = async () => { await page.waitForSelector("#tl-details[data-ready='1']");
    return page.evaluate(() => Array.from(document.querySelectorAll("#tl-details tr")).map((r) => Array.from(r.cells).map((c) => c.textContent))); };
  return {page, box, pos, click, view, pinned, panel, ...w};
}
const done = (t) => { assert.deepEqual(t.problems, []); assert.deepEqual(t.requests, [url]); };

test("details panel: a clicked slice's fields and args, its links as jumps", async () => {
  const t = await open(), {page, click, panel, pinned} = t;
  await click(0, "cudaLaunchKernel", 0);
  assert.deepEqual(await panel(), [["name", "cudaLaunchKernel"], ["category", "runtime call"], ["track", "rank 0, thread 100 runtime"],
    ["start", "150.000 us"], ["duration", "20.000 us"], ["self time", "20.000 us"], ["correlation", "11"], ["External id", "7"],
    ["runs", "gemm_kernel @ 800.000 us"], ["op (External id 7)", "aten::mm @ 100.000 us"]]);
  await page.locator("#tl-details tr", {hasText: "runs"}).locator("button").click(); // launch -> kernel
  assert.deepEqual(await pinned(), ["gemm_kernel", 0, 800000]);
  assert.deepEqual(await panel(), [["name", "gemm_kernel"], ["category", "kernel"], ["track", "rank 0, GPU 0 stream 7"],
    ["start", "800.000 us"], ["duration", "100.000 us"], ["self time", "100.000 us"], ["grid", "[4, 1, 1]"], ["block", "[128, 1, 1]"],
    ["stream", "7"], ["correlation", "11"], ["External id", "7"], ["registers per thread", "32"],
    ["launched by", "cudaLaunchKernel @ 150.000 us"], ["op (External id 7)", "aten::mm @ 100.000 us"]]);
  await page.locator("#tl-details tr", {hasText: "op (External id 7)"}).locator("button").click(); // kernel -> op
  assert.deepEqual(await pinned(), ["aten::mm", 0, 100000]);
  assert.deepEqual(await panel(), [["name", "aten::mm"], ["category", "cpu_op"], ["track", "rank 0, thread 100 ops"],
    ["start", "100.000 us"], ["duration", "500.000 us"], ["self time", "500.000 us"], ["External id", "7"],
    ["Input Dims", "[[4, 4], [4, 4]]"], ["device work", "gemm_kernel @ 800.000 us"]]);
  await page.locator("#tl-details tr", {hasText: "device work"}).locator("button").click(); // op -> its kernels
  assert.deepEqual(await pinned(), ["gemm_kernel", 0, 800000]);
  await page.locator("#tl-details tr", {hasText: "launched by"}).locator("button").click(); // kernel -> launch
  assert.deepEqual(await pinned(), ["cudaLaunchKernel", 0, 150000]);
  await page.evaluate(() => ftTimeline.setView(0, 2500000));
  await click(0, "ProfilerStep#1", 1); // a range with an op under it: its self time
  assert.deepEqual((await panel()).slice(0, 6), [["name", "ProfilerStep#1"], ["category", "user_annotation"],
    ["track", "rank 1, thread 100 ops"], ["start", "0.000 us"], ["duration", "1.500 ms"], ["self time", "1.000 ms"]]);
  await page.evaluate(() => ftTimeline.setView(1190000, 1260000));
  await click(0, "Memcpy HtoD (Pageable -> Device)", 0);
  assert.deepEqual(await panel(), [["name", "Memcpy HtoD (Pageable -> Device)"], ["category", "memcpy"], ["track", "rank 0, GPU 0 stream 7"],
    ["start", "1.200 ms"], ["duration", "50.000 us"], ["self time", "50.000 us"], ["stream", "7"], ["correlation", "12"],
    ["bytes", "4.0 KiB (4096 B)"], ["launched by", "cudaMemcpyAsync @ 1.100 ms"]]);
  done(t);
});

test("drag selects a stretch: its span, per track slices and busy time, top names; F zooms to it", async () => {
  const t = await open(), {page, box, view} = t;
  const W = await page.evaluate(() => document.querySelector("canvas.tl-canvas").clientWidth);
  await page.evaluate((W) => ftTimeline.setView(0, W * 2000), W); // 1 px = 2 us
  const y = box.y + 40;
  await page.mouse.move(box.x + 25, y); await page.mouse.down();
  await page.mouse.move(box.x + 250, y); await page.mouse.move(box.x + 475, y); await page.mouse.up();
  assert.deepEqual(await view(), [0, W * 2000], "a drag does not zoom");
  const sel = await page.evaluate(() => [ftTimeline.TL.sel.lo, ftTimeline.TL.sel.hi]);
  assert.ok(Math.abs(sel[0] - 50000) < 1e-6 && Math.abs(sel[1] - 950000) < 1e-6, `the stretch dragged: ${sel}`);
  await page.evaluate(() => { ftTimeline.TL.sel = {lo: 50000, hi: 950000}; ftTimeline.setView(...ftTimeline.TL.view); }); // the stretch exactly
  assert.equal(await page.locator("#tl-details h3").first().textContent(), "Selection: 50.000 us to 950.000 us, 900.000 us");
  assert.deepEqual(await t.panel(), [["track", "slices", "busy", "busy %"],
    ["rank 0, thread 100 ops", "2", "900.000 us", "100.0"], ["rank 0, thread 100 runtime", "1", "20.000 us", "2.2"], ["rank 0, GPU 0 stream 7", "1", "100.000 us", "11.1"],
    ["rank 1, thread 100 ops", "2", "900.000 us", "100.0"], ["rank 1, thread 100 runtime", "1", "20.000 us", "2.2"], ["rank 1, GPU 0 stream 7", "1", "100.000 us", "11.1"],
    ["name", "slices", "time"], ["ProfilerStep#1", "2", "1.800 ms"], ["aten::mm", "2", "1.000 ms"], ["gemm_kernel", "2", "200.000 us"], ["cudaLaunchKernel", "2", "40.000 us"]]);
  await page.keyboard.press("f");
  const v = await view();
  assert.ok(Math.abs(v[0] - 50000) < 1e-6 && Math.abs(v[1] - 950000) < 1e-6, `zoomed to the stretch: ${v}`);
  done(t);
});

test("follow the arrow: the launch's kernel off screen, ] jumps there and back", async () => {
  const t = await open(), {page, click, view, pinned} = t;
  await page.evaluate(() => ftTimeline.setView(100000, 300000)); // the launch in sight, its kernel (800 us) not
  await click(0, "cudaLaunchKernel", 0);
  assert.equal(await page.locator("#tl-follow").textContent(), "follow the arrow to the kernel (])");
  await page.keyboard.press("]");
  assert.deepEqual(await pinned(), ["gemm_kernel", 0, 800000]);
  assert.deepEqual(await view(), [750000, 950000]);
  await page.locator("#tl-follow").click();
  assert.deepEqual(await pinned(), ["cudaLaunchKernel", 0, 150000]);
  assert.deepEqual(await view(), [60000, 260000]);
  done(t);
});

test("search: the count, Enter / Shift+Enter / buttons in time order, the list, the current match framed", async () => {
  const t = await open(), {page, pinned, pos, box} = t;
  await page.locator("#tl-search").fill("GEMM");
  assert.equal(await page.locator("#tl-count").textContent(), "4 matches");
  assert.deepEqual(await page.locator("#tl-matches .match").allTextContents(), [
    "1. gemm_kernel  800.000 us  rank 0, GPU 0 stream 7", "2. gemm_kernel  800.000 us  rank 1, GPU 0 stream 7",
    "3. gemm_kernel  1.500 ms  rank 0, GPU 0 stream 7", "4. gemm_kernel  2.000 ms  rank 1, GPU 0 stream 7"]);
  await page.locator("#tl-search").press("Enter");
  assert.equal(await page.locator("#tl-count").textContent(), "1 of 4");
  assert.deepEqual(await pinned(), ["gemm_kernel", 0, 800000]);
  await page.locator("#tl-search").press("Enter");
  assert.deepEqual([await page.locator("#tl-count").textContent(), await pinned()], ["2 of 4", ["gemm_kernel", 1, 800000]]);
  await page.locator("#tl-search").press("Shift+Enter");
  await page.locator("#tl-search").press("Shift+Enter"); // wraps to the last
  assert.deepEqual([await page.locator("#tl-count").textContent(), await pinned()], ["4 of 4", ["gemm_kernel", 1, 2000000]]);
  await page.locator("#tl-next").click(); // wraps to the first
  assert.deepEqual([await page.locator("#tl-count").textContent(), await pinned()], ["1 of 4", ["gemm_kernel", 0, 800000]]);
  await page.locator("#tl-matches .match").nth(2).click();
  assert.deepEqual([await page.locator("#tl-count").textContent(), await pinned()], ["3 of 4", ["gemm_kernel", 0, 1500000]]);
  assert.equal(await page.locator("#tl-matches .match.on").textContent(), "3. gemm_kernel  1.500 ms  rank 0, GPU 0 stream 7");
  await page.locator("#tl-prev").click();
  assert.equal(await page.locator("#tl-count").textContent(), "2 of 4");
  // the current match framed in blue, left of the slice
  await page.mouse.move(box.x - 100, box.y - 50);
  const v = await page.evaluate(() => ftTimeline.TL.view.slice()), q = await pos(0, "gemm_kernel", 2);
  const px = await page.evaluate(([x, y]) => Array.from(document.querySelector("canvas.tl-canvas").getContext("2d").getImageData(x, y, 1, 1).data), [Math.floor(q.x - 4), Math.floor(q.y + 5)]);
  assert.deepEqual(px, [37, 99, 235, 255], `the frame at ${q.x - 4} in ${v}`);
  await page.locator("#tl-search").press("Escape"); // the box left, the selection cleared, the matches kept
  assert.deepEqual([await page.locator("#tl-count").textContent(), await pinned(), await page.evaluate(() => document.activeElement.id)], ["4 matches", null, ""]);
  await page.locator("#tl-search").fill("no such name");
  assert.equal(await page.locator("#tl-count").textContent(), "no match");
  assert.equal(await page.locator("#tl-matches .match").count(), 0);
  done(t);
});

test("step selector: every rank's ProfilerStep#N at 0, one shift per file", async () => {
  const t = await open(), {page, pos, view} = t;
  await page.locator("#tl-step").selectOption("2");
  assert.deepEqual(await view(), [0, 1000000]);
  const a = await pos(0, "ProfilerStep#2", 0), b = await pos(0, "ProfilerStep#2", 1);
  assert.deepEqual([a.x, b.x], [0, 0]);
  const k0 = await pos(0, "gemm_kernel", 1), k1 = await pos(0, "gemm_kernel", 3);
  assert.equal(k0.x, k1.x, "the step's kernels one above the other");
  done(t);
});

test("keyboard: W/S zoom about the pointer or the middle, A/D pan, Escape clears; not while typing", async () => {
  const t = await open(), {page, box, view, click, pinned} = t;
  await page.evaluate(() => ftTimeline.setView(0, 1000000));
  await page.mouse.move(box.x - 100, box.y - 50); // not over the timeline: about its middle
  await page.keyboard.press("w"); assert.deepEqual(await view(), [100000, 900000]);
  await page.keyboard.press("s"); assert.deepEqual(await view(), [0, 1000000]);
  await page.keyboard.press("d"); assert.deepEqual(await view(), [200000, 1200000]);
  await page.keyboard.press("a"); assert.deepEqual(await view(), [0, 1000000]);
  await page.keyboard.press("W"); assert.deepEqual(await view(), [100000, 900000]);
  await page.keyboard.press("S");
  await page.mouse.move(box.x + box.width / 4, box.y + 30); // a quarter in: that time stays under the pointer
  const v0 = await view(), f = (await page.evaluate(() => ftTimeline.TL.pointer)) / box.width, c = v0[0] + f * 1000000;
  await page.keyboard.press("w");
  const v1 = await view();
  assert.ok(Math.abs(v1[0] + f * (v1[1] - v1[0]) - c) < 1e-6 && Math.abs(v1[1] - v1[0] - 800000) < 1e-6, `${v1} about ${c}`);
  await page.evaluate(() => ftTimeline.setView(0, 1000000));
  await click(0, "aten::mm", 0);
  assert.deepEqual(await pinned(), ["aten::mm", 0, 100000]);
  await page.keyboard.press("Escape");
  assert.equal(await pinned(), null);
  assert.equal(await page.locator("#tl-details").textContent(), "click a slice for its details, drag across the timeline for the totals of a stretch");
  await page.locator("#tl-search").click();
  await page.keyboard.type("wasd");
  assert.deepEqual(await view(), [0, 1000000], "keys typed in the search box leave the view");
  assert.equal(await page.locator("#tl-search").inputValue(), "wasd");
  done(t);
});
