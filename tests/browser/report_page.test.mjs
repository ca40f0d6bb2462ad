// The report page's tables and its data checks in Debian's chromium driven by Playwright (issue 49):
// a table shows a window of 1 000 rows of its order over all rows, more on request, and a header
// click on a 100 000-row table costs at most 10 times one on 1 000 rows (a ratio measured in the
// same run, never an absolute time; every row laid out was about 100 times), and --diff-json
// documents that the page cannot use in full (null rows, wrong types, 5000-deep nesting, not an
// object) still give the timeline, with a notice of what was left out and no uncaught exception.
// Usage: node --test report_page.test.mjs (FLAGTRACE=path/to/flagtrace). Exits 77 (skipped under
// ctest) without playwright-core or chromium.
import {test} from "node:test";
import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {mkdtempSync, writeFileSync, rmSync} from "node:fs";
import {FLAGTRACE, launch} from "./browser.mjs";
import {tmpdir} from "node:os";
import {join} from "node:path";


// n kernels of n distinct names (the kernels table has n rows); kernel i lasts 1 + (i * 7919) % 13 us
const dur = (i) => 1 + (i * 7919) % 13;
const kname = (i) => "k" + String(i).padStart(6, "0");
function trace(path, n) {
  const ev = [];
  for (let i = 0; i < n; i++) ev.push({ph: "X", cat: "kernel", name: kname(i), pid: 0, tid: 7, ts: 1000 + 20 * i, dur: dur(i), args: {stream: 7}});
  writeFileSync(path, JSON.stringify({traceEvents: ev}));
}

async function open(browser, path) {
  const page = await browser.newPage({viewport: {width: 1200, height: 900}});
  const problems = [];
  page.on("pageerror", (e) => problems.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") problems.push(m.text()); });
  await page.goto("file://" + path, {timeout: 120000});
  // ready, or stopped by an error (the old page's way with a bad document)
  await page.waitForFunction(() => document.body.getAttribute("data-ready") === "1" || document.getElementById("ft-errors"), null, {timeout: 120000});
  return {page, problems};
}

// one header click as a person sees it: the handler, then style, layout and the next frame
const CLICK = (col) => new Promise((done) => {
  const th = document.querySelector(`#table-kernels th[title='${col}']`), t0 = performance.now();
  th.click();
  requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0)));
});

// the kernels table as shown: [name, total time] of each row of its body, the line under it, the buttons shown
const SHOWN = () => {
  const d = document.getElementById("table-kernels"), ths = Array.from(d.querySelectorAll("th")),
    name = ths.findIndex((t) => t.title === "name"), total = ths.findIndex((t) => t.title === "total_us"),
    line = d.querySelector("p.more"), buttons = line ? Array.from(line.querySelectorAll("button")).filter((b) => !b.hidden) : [];
  return {rows: Array.from(d.querySelectorAll("tbody tr"), (r) => [r.cells[name].textContent, r.cells[total].textContent]),
    line: line && line.querySelector("span").textContent, buttons: buttons.map((b) => b.textContent)};
};
const us = (i) => dur(i).toFixed(3) + " us";
// rows i of n in order: by total time descending, ties by name (the report's own order, kept by a stable sort)
const byTotal = (n) => Array.from({length: n}, (_, i) => i).sort((x, y) => dur(y) - dur(x) || x - y);
const row = (i) => [kname(i), us(i)];
const range = (from, to, step = 1) => Array.from({length: Math.abs(to - from)}, (_, j) => from + step * j);

test("tables: a window of 1 000 rows of the order over all rows; a click on 100 000 rows at most 10x one on 1 000", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ft-pw-"));
  const browser = await launch();
  try {
    const N = 100000;
    for (const n of [1000, 2500, N]) {
      trace(join(dir, `t${n}.json`), n);
      execFileSync(FLAGTRACE, ["report", "-q", "-o", join(dir, `r${n}.html`), join(dir, `t${n}.json`)]);
    }
    // 1 000 rows: all shown, no line, no button
    const {page: small, problems: p1} = await open(browser, join(dir, "r1000.html"));
    const base = [];
    for (let i = 0; i < 3; i++) base.push(await small.evaluate(CLICK, "total_us"));
    assert.deepEqual(await small.evaluate(SHOWN), {rows: byTotal(1000).map(row), line: null, buttons: []});
    const {page, problems} = await open(browser, join(dir, `r${N}.html`));
    const order = byTotal(N);
    assert.deepEqual(await page.evaluate(SHOWN), {rows: order.slice(0, 1000).map(row), line: "showing 1 000 of 100 000 rows",
      buttons: ["show 1 000 more", "show all 100 000 rows"]});
    // every row laid out would run for a minute: give up at the ratio's bound
    const RATIO = 10, limit = RATIO * Math.max(Math.min(...base), 20);
    const big = [];
    for (let i = 0; i < 3; i++) {
      let timer;
      const late = new Promise((_, no) => {
        timer = setTimeout(() => no(new Error(`a click on ${N} rows ran over ${limit.toFixed(0)} ms (${RATIO} x ${Math.min(...base).toFixed(1)} ms on 1 000 rows)`)), limit + 2000);
      });
      try { big.push(await Promise.race([page.evaluate(CLICK, "total_us"), late])); } finally { clearTimeout(timer); }
    }
    const ms = {small: Math.min(...base), big: Math.min(...big)};
    console.log(`header click: 1 000 rows ${ms.small.toFixed(1)} ms, 100 000 rows ${ms.big.toFixed(1)} ms (${(ms.big / ms.small).toFixed(1)} x)`);
    assert.ok(ms.big <= RATIO * Math.max(ms.small, 20), `100 000 rows ${ms.big} ms, 1 000 rows ${ms.small} ms`);
    // three clicks (descending, ascending, descending): the top 1 000 of all 100 000 rows by total time
    assert.deepEqual(await page.evaluate(SHOWN), {rows: order.slice(0, 1000).map(row), line: "showing 1 000 of 100 000 rows",
      buttons: ["show 1 000 more", "show all 100 000 rows"]});
    // "show 1 000 more" from the keyboard: the next 1 000 in order after the first
    await page.focus("#table-kernels button.show-more");
    await page.keyboard.press("Enter");
    assert.deepEqual(await page.evaluate(SHOWN), {rows: order.slice(0, 2000).map(row), line: "showing 2 000 of 100 000 rows",
      buttons: ["show 1 000 more", "show all 100 000 rows"]});
    // a sort keeps the 2 000 shown: by name, descending, then ascending (over all rows, never the shown ones)
    await page.evaluate(CLICK, "name");
    assert.deepEqual((await page.evaluate(SHOWN)).rows, range(N - 1, N - 2001, -1).map(row));
    await page.evaluate(CLICK, "name");
    assert.deepEqual(await page.evaluate(SHOWN), {rows: range(0, 2000).map(row), line: "showing 2 000 of 100 000 rows",
      buttons: ["show 1 000 more", "show all 100 000 rows"]});
    // 2 500 rows: the last button is for the 500 left; "show all" (with Space) shows every row, in order, and no button
    const {page: mid, problems: p2} = await open(browser, join(dir, "r2500.html"));
    await mid.evaluate(CLICK, "total_us");
    await mid.click("#table-kernels button.show-more");
    assert.deepEqual(await mid.evaluate(SHOWN), {rows: byTotal(2500).slice(0, 2000).map(row), line: "showing 2 000 of 2 500 rows",
      buttons: ["show 500 more", "show all 2 500 rows"]});
    await mid.focus("#table-kernels button.show-all");
    await mid.keyboard.press(" ");
    assert.deepEqual(await mid.evaluate(SHOWN), {rows: byTotal(2500).map(row), line: "showing 2 500 of 2 500 rows", buttons: []});
    await mid.evaluate(CLICK, "name");
    assert.deepEqual((await mid.evaluate(SHOWN)).rows, range(2499, -1, -1).map(row));
    assert.deepEqual(p1, []); assert.deepEqual(p2, []); assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    rmSync(dir, {recursive: true, force: true});
  }
});

const deep = (n, inner) => "[".repeat(n) + inner + "]".repeat(n);
const HOSTILE = [
  ["a null row", '{"ops":[{"name":"aten::mm","ratio":2},null]}',
    "--diff-json ops[1] (null, not a row)", 1],
  ["a 5000-deep value in a row", `{"ops":[{"name":"aten::mm","ratio":2,"x":${deep(5000, "1")}}]}`,
    "--diff-json ops[0].x (nested deeper than 32 levels: cut there)", 1],
  ["a 5000-deep table", `{"ops":${deep(5000, "")}}`,
    "--diff-json ops[0][0] (nested deeper than 32 levels: cut there)", 0],
  ["5000-deep objects", `{"ops":[{"name":"aten::mm","ratio":2,"x":${'{"a":'.repeat(5000)}1${"}".repeat(5000)}}]}`,
    "--diff-json ops[0].x (nested deeper than 32 levels: cut there)", 1],
  ["wrong types", '{"ops":[{"name":"aten::mm","ratio":2},{"name":7,"ratio":"3"},[1],"x",{"name":"b","ratio":null}]}',
    "--diff-json ops[1].name (a number among strings); --diff-json ops[1].ratio (a string among numbers); " +
    "--diff-json ops[2] (an array, not a row); and 1 more", 3],
  ["a column the first row lacks (shown, no notice)", '{"ops":[{"name":"a"},{"name":"b","ratio":3,"__proto__":1}]}', null, 2],
  ["not an object", "[1,2]", "--diff-json (an array, not an object of tables)", 0],
  ["a number", "7", "--diff-json (a number, not an object of tables)", 0],
  ["many bad rows", `{"ops":[${Array(500).fill("null").join(",")},{"name":"c","ratio":1}]}`,
    "--diff-json ops[0] (null, not a row); --diff-json ops[1] (null, not a row); --diff-json ops[2] (null, not a row); " +
    "and 497 more", 1],
];

test("--diff-json documents the page cannot use in full: the timeline drawn, a notice, no exception", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ft-pw-"));
  const browser = await launch();
  try {
    trace(join(dir, "a.json"), 20);
    trace(join(dir, "b.json"), 30);
    const legit = execFileSync(FLAGTRACE, ["diff", "-f", "json", join(dir, "a.json"), join(dir, "b.json")]).toString();
    const failed = [];
    for (const [what, doc, notice, rows] of HOSTILE.concat([["flagtrace diff -f json's own", legit, null, null]])) {
      const diff = join(dir, "diff.json"), out = join(dir, "report.html");
      writeFileSync(diff, doc);
      execFileSync(FLAGTRACE, ["report", "-q", "--force-overwrite", "-o", out, "--diff-json", diff, join(dir, "a.json")]);
      const {page, problems} = await open(browser, out);
      const got = await page.evaluate(() => {
        const n = document.getElementById("ft-notice"), t = document.getElementById("table-diff-ops");
        const cv = document.querySelector("canvas.tl-canvas"), [f, k] = window.ftTimeline ? ftTimeline.find(0, "k000000")[0] : [], p = cv && ftTimeline.slicePos(0, f, k);
        return {notice: n && n.textContent, errors: !!document.getElementById("ft-errors"),
          timeline: document.getElementById("timeline").getAttribute("data-rendered"),
          pixel: cv && cv.getContext("2d").getImageData(Math.floor(p.x) + 1, p.y + 5, 1, 1).data[3],
          rows: t ? t.querySelectorAll("tr").length - 1 : 0, heads: t ? Array.from(t.querySelectorAll("th"), (h) => h.title).join(",") : "",
          marked: t ? Array.from(t.querySelectorAll("tr.warn"), (r) => r.cells[0].textContent).join(",") : ""};
      });
      // every document checked, then every failure told at once
      try {
        assert.equal(got.timeline, "1", what); assert.equal(got.pixel, 255, what + ": the first kernel is drawn");
        assert.equal(got.notice, notice === null ? null : "Could not use: " + notice, what);
        if (rows !== null) assert.equal(got.rows, rows, what + ": the diff's ops rows shown");
        if (what.startsWith("a column")) assert.deepEqual([got.heads, got.marked], ["name,ratio,__proto__", "b"], what);
        assert.equal(got.errors, false, what); assert.deepEqual(problems, [], what);
      } catch (e) { failed.push(e.message); }
      await page.close();
    }
    assert.deepEqual(failed, []);
  } finally {
    await browser.close();
    rmSync(dir, {recursive: true, force: true});
  }
});
