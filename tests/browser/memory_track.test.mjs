// The report's device memory tracks (issue 51) in Debian's chromium driven by Playwright: a
// trace of [memory] instants with a known peak (4 MiB allocated by aten::mm at 25 us, the
// file's first slice at 10 us) draws GPU 0's memory right under its stream, the peak's red
// mark at that time and size, a tooltip at the mark naming the allocation (bytes, op); a
// device without streams gets its track after the file's others; no console error, no network
// request. Usage: node --test memory_track.test.mjs (FLAGTRACE=path/to/flagtrace).
import {test} from "node:test";
import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {mkdtempSync, writeFileSync, rmSync} from "node:fs";
import {FLAGTRACE, launch, watch} from "./browser.mjs";
import {tmpdir} from "node:os";
import {join} from "node:path";

const MiB = 1 << 20;

function trace() {
  const ev = [];
  const op = (name, ts, dur, ext) => ev.push({ph: "X", cat: "cpu_op", name, pid: 100, tid: 1, ts, dur, args: {"External id": ext}});
  const mem = (ts, bytes, alloc, resv, extra) => ev.push({ph: "i", cat: "cpu_instant_event", s: "t", name: "[memory]", pid: 100, tid: 1, ts,
    args: {"Device Type": 1, "Device Id": 0, Addr: 4096 + ts, Bytes: bytes, "Total Allocated": alloc, "Total Reserved": resv, ...extra}});
  op("aten::empty", 10, 5, 1); mem(12, MiB, MiB, 2 * MiB, {"External id": 1});
  op("aten::mm", 20, 10, 2); mem(25, 3 * MiB, 4 * MiB, 8 * MiB, {"External id": 2});
  ev.push({ph: "X", cat: "cuda_runtime", name: "cudaLaunchKernel", pid: 100, tid: 1, ts: 22, dur: 3, args: {correlation: 7, "External id": 2}});
  ev.push({ph: "X", cat: "kernel", name: "gemm", pid: 0, tid: 7, ts: 30, dur: 20, args: {stream: 7, correlation: 7, "External id": 2, device: 0}});
  op("aten::relu", 40, 10, 3); mem(45, -3 * MiB, MiB, 8 * MiB, {"External id": 3});
  mem(60, 0, MiB, 2 * MiB, {Op: "unreserve", "Pool Bytes": -6 * MiB});
  // device 1: no stream of its own; the host's memory (Device Type 0) is not drawn
  ev.push({ph: "i", cat: "cpu_instant_event", s: "t", name: "[memory]", pid: 100, tid: 1, ts: 48,
    args: {"Device Type": 1, "Device Id": 1, Addr: 8, Bytes: 512, "Total Allocated": 512, "Total Reserved": MiB}});
  ev.push({ph: "i", cat: "cpu_instant_event", s: "t", name: "[memory]", pid: 100, tid: 1, ts: 50,
    args: {"Device Type": 0, "Device Id": -1, Addr: 9, Bytes: 64, "Total Allocated": 64, "Total Reserved": 0}});
  return JSON.stringify({schemaVersion: 1, traceEvents: ev});
}

test("memory track: under the device's stream, the peak marked at its time and size, a tooltip naming it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ft-pw-mem-"));
  const browser = await launch();
  try {
    const path = join(dir, "mem.json"), out = join(dir, "report.html");
    writeFileSync(path, trace());
    execFileSync(FLAGTRACE, ["report", "-o", out, path]);
    const page = await browser.newPage({viewport: {width: 1200, height: 900}});
    const {problems, requests} = watch(page);
    await page.goto("file://" + out);
    await page.waitForSelector("body[data-levels='1']");
    const got = await page.evaluate(() => {
      const TL = ftTimeline.TL, mem = ftTimeline.mem();
      return {mem, rows: TL.rows.map((r) => r.text), view: TL.view.slice(), W: TL.canvas.clientWidth};
    });
    // (the stream's queue and the device's busy % counter tracks: tlview.test.mjs)
    assert.deepEqual(got.rows, ["rank 0  mem.json", "thread 1 ops", "thread 1 runtime", "GPU 0 stream 7", "GPU 0 stream 7 queue", "GPU 0 memory", "GPU 0 busy %", "GPU 1 memory"]);
    assert.deepEqual(got.mem.map((m) => [m.label, m.device, m.row, m.n]), [["GPU 0 memory", 0, 5, 4], ["GPU 1 memory", 1, 7, 1]]);
    const p = got.mem[0].peak;
    // the page's clock starts at the file's first slice (10 us): the peak at 25 us is 15 000 ns
    assert.equal(p.t, 15000);
    assert.equal(p.allocated, 4 * MiB);
    assert.equal(p.reserved, 8 * MiB);
    assert.equal(p.i, 1);
    assert.equal(p.px, Math.round(15000 * got.W / (got.view[1] - got.view[0])));
    // the mark is drawn there: the peak's red (#d1242f) at its x, mid-track; a pixel column away from it is not red
    const red = await page.evaluate(([x, y]) => Array.from(ftTimeline.TL.canvas.getContext("2d").getImageData(x, y, 1, 1).data), [p.px, p.y + 20]);
    assert.deepEqual(red.slice(0, 3), [0xd1, 0x24, 0x2f]);
    const before = await page.evaluate(([x, y]) => Array.from(ftTimeline.TL.canvas.getContext("2d").getImageData(x, y, 1, 1).data), [p.px - 40, p.y + 20]);
    assert.notDeepEqual(before.slice(0, 3), [0xd1, 0x24, 0x2f]);
    // the tooltip under the pointer at the mark
    const box = await page.locator("canvas.tl-canvas").boundingBox();
    await page.mouse.move(box.x + p.px, box.y + p.y + 20);
    const tip = await page.textContent("#tl-tip");
    assert.equal(await page.getAttribute("#tl-tip", "class"), "tl-tip on");
    assert.equal(tip, "GPU 0 memory, rank 0\nat 15.000 us: allocated 4.00 MiB, reserved 8.00 MiB\nallocated 3.00 MiB in aten::mm\n" +
      "this is the peak: 4.00 MiB at 15.000 us");
    // a free at 45 us: its op and negative bytes
    const x45 = Math.round(35000 * got.W / (got.view[1] - got.view[0]));
    assert.match(await page.evaluate(([x, y]) => ftTimeline.memTip(x, y), [x45, p.y + 20]), /^GPU 0 memory, rank 0\nat 35\.000 us: allocated 1\.00 MiB, reserved 8\.00 MiB\nfreed 3\.00 MiB in aten::relu\npeak 4\.00 MiB at 15\.000 us$/);
    assert.deepEqual(problems, []);
    assert.ok(requests.every((u) => u.startsWith("file://")), `requests: ${requests}`);
  } finally {
    await browser.close();
    rmSync(dir, {recursive: true, force: true});
  }
});
