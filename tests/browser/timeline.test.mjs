// The report's timeline in Debian's chromium driven by Playwright (playwright-core, no browser
// download): what a person checks — slices where their times put them, two ranks' wall-clock
// offset, a tooltip's text, names appearing as you zoom, the launch arrow on hover, no console
// error, no network request. Usage: node --test timeline.test.mjs (FLAGTRACE=path/to/flagtrace).
// Exits 77 (skipped under ctest) without playwright-core (npm ci here) or chromium.
import {test} from "node:test";
import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {mkdtempSync, writeFileSync, rmSync} from "node:fs";
import {FLAGTRACE, launch, watch} from "./browser.mjs";
import {tmpdir} from "node:os";
import {join} from "node:path";

const BASE = 1795996800000000000n;

// one rank's step (times in us): its op, the launch, the kernel (grid 4, block 128), a 2 us kernel
function rank(path, r, slow, base, shift) {
  const at = (us) => Math.round((1000 + shift + us * slow) * 1000) / 1000;
  const ev = [
    {ph: "X", cat: "cpu_op", name: "ProfilerStep#1", pid: 100, tid: 100, ts: at(0), dur: 1000 * slow},
    {ph: "X", cat: "cpu_op", name: "aten::mm", pid: 100, tid: 100, ts: at(100), dur: 500 * slow, args: {"External id": 7}},
    {ph: "X", cat: "cuda_runtime", name: "cudaLaunchKernel", pid: 100, tid: 100, ts: at(150), dur: 20,
     args: {"External id": 7, correlation: 11}},
    {ph: "X", cat: "kernel", name: "gemm_kernel", pid: 0, tid: 7, ts: at(300), dur: 400 * slow,
     args: {"External id": 7, correlation: 11, stream: 7, grid: [4, 1, 1], block: [128, 1, 1]}},
    {ph: "X", cat: "kernel", name: "tiny_kernel", pid: 0, tid: 7, ts: at(800), dur: 2, args: {stream: 7}},
  ];
  // the base time as the trace writes it: a 19-digit integer, beyond a double's exact range
  writeFileSync(path, JSON.stringify({distributedInfo: {rank: r}, baseTimeNanoseconds: 0, traceEvents: ev})
    .replace('"baseTimeNanoseconds":0', `"baseTimeNanoseconds":${base}`));
}

test("timeline: two ranks on one clock, tooltip, arrow, names on zoom; no error, no request", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ft-pw-"));
  const browser = await launch();
  try {
    rank(join(dir, "r0.json"), 0, 1, BASE, 0);
    rank(join(dir, "r1.json"), 1, 1.36, BASE + 2000000n, 3000); // 5 ms later on the wall clock, 36 % slower
    const out = join(dir, "report.html");
    execFileSync(FLAGTRACE, ["report", "-o", out, join(dir, "r0.json"), join(dir, "r1.json")]);
    const page = await browser.newPage({viewport: {width: 1200, height: 900}});
    const {problems, requests} = watch(page);
    const url = "file://" + out;
    await page.goto(url);
    await page.waitForSelector("body[data-levels='1']");
    const W = await page.evaluate(() => document.querySelector("canvas.tl-canvas").clientWidth);
    const end = 5000 + 1360; // us: rank 1's step ends last
    const pos = (g, name, i) => page.evaluate(([g, name, i]) => {
      const [f, k] = ftTimeline.find(g, name)[i]; return ftTimeline.slicePos(g, f, k); }, [g, name, i]);
    const pixel = (x, y) => page.evaluate(([x, y]) => Array.from(document.querySelector("canvas.tl-canvas")
      .getContext("2d").getImageData(Math.floor(x), Math.floor(y), 1, 1).data), [x, y]);
    const a = await pos(0, "gemm_kernel", 0), b = await pos(0, "gemm_kernel", 1);
    assert.ok(Math.abs(a.x - 300 * W / end) < 0.01, `rank 0's kernel at ${a.x}`);
    assert.ok(Math.abs(b.x - (5000 + 300 * 1.36) * W / end) < 0.01, `rank 1's kernel at ${b.x}`);
    assert.ok(Math.abs((b.x1 - b.x) / (a.x1 - a.x) - 1.36) < 1e-9, "rank 1's kernel 36 % longer");
    const inside = await pixel(a.x + 2, a.y + 5), before = await pixel(a.x - 3, a.y + 5);
    assert.equal(inside[3], 255); assert.equal(before[3], 0);
    // hover the kernel as a mouse does: the tooltip and the arrow from its launch
    const box = await page.locator("canvas.tl-canvas").boundingBox();
    await page.mouse.move(box.x + a.x + 5, box.y + a.y + 5);
    assert.equal(await page.locator("#tl-tip").textContent(), ["gemm_kernel", "duration 400.000 us, start 300.000 us",
      "rank 0, GPU 0 stream 7", "grid [4, 1, 1], block [128, 1, 1]", "stream 7", "launched by cudaLaunchKernel",
      "op aten::mm"].join("\n"));
    const launch = await pos(0, "cudaLaunchKernel", 0), flow = await page.evaluate(() => ftTimeline.TL.flow);
    assert.deepEqual(flow, {from: [launch.x, launch.y + 13], to: [a.x, a.y]});
    assert.ok((await pixel((launch.x + a.x) / 2, (launch.y + 13 + a.y) / 2))[3] > 0, "the arrow is drawn");
    // a 2 us kernel: no name at the whole job's zoom, its name when zoomed in
    const dark = (p) => page.evaluate((p) => { const d = document.querySelector("canvas.tl-canvas").getContext("2d")
      .getImageData(Math.floor(p.x), p.y, Math.max(3, Math.floor(p.x1 - p.x)), 13).data; let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 200 && d[i] < 60 && d[i + 1] < 60 && d[i + 2] < 60) n++; return n; }, p);
    await page.mouse.move(box.x + 2, box.y + 2);
    assert.equal(await dark(await pos(0, "tiny_kernel", 0)), 0);
    await page.evaluate(() => ftTimeline.setView(798000, 808000));
    assert.ok(await dark(await pos(0, "tiny_kernel", 0)) > 10, "the name is written once the slice is wide");
    assert.deepEqual(problems, []);
    assert.deepEqual(requests, [url]);
  } finally {
    await browser.close();
    rmSync(dir, {recursive: true, force: true});
  }
});
