// What the browser tests share: Debian's chromium through playwright-core (never a downloaded
// browser) and the flagtrace binary; a test without them exits 77 (skipped under ctest).
import assert from "node:assert/strict";
import {existsSync} from "node:fs";
import {createRequire} from "node:module";

const CHROMIUM = "/usr/bin/chromium";
const require = createRequire(import.meta.url);
let chromium;
try { ({chromium} = require("playwright-core")); } catch { console.log("SKIP: no playwright-core (npm ci in tests/browser)"); process.exit(77); }
if (!existsSync(CHROMIUM)) { console.log("SKIP: no chromium (scripts/deps.sh test installs it)"); process.exit(77); }
export const FLAGTRACE = process.env.FLAGTRACE;
assert.ok(FLAGTRACE, "FLAGTRACE names the flagtrace binary");

export const launch = () => chromium.launch({executablePath: CHROMIUM, args: ["--no-sandbox"]});

// What a page says that a person would see as wrong: console errors and warnings (but Chromium's
// willReadFrequently hint), uncaught exceptions, and every URL it requests, from now on.
export function watch(page) {
  const problems = [], requests = [];
  page.on("console", (m) => { if (["error", "warning"].includes(m.type()) && !/willReadFrequently/.test(m.text())) problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  page.on("request", (r) => requests.push(r.url()));
  return {problems, requests};
}
