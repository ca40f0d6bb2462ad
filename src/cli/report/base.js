/* The report page's base (src/cli/report/page.html includes it first): errors, data, summary, busy strip. */
window.onerror = function (msg, src, line) {
  var e = document.getElementById("ft-errors");
  if (!e) { e = document.createElement("pre"); e.id = "ft-errors"; document.body.insertBefore(e, document.body.firstChild); }
  e.textContent += "JavaScript error: " + msg + " (line " + line + ")\n";
};
function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
/* What the page could not use of its data (a --diff-json document is anyone's file), in one line
   under the title: the first three, then a count; the rest of the page is still drawn (issue 49). */
var NOTES = {shown: [], n: 0};
function notice(what) { NOTES.n++; if (NOTES.shown.length < 3) NOTES.shown.push(what); }
function showNotes() {
  if (!NOTES.n) return;
  var e = document.getElementById("ft-notice"), h = document.querySelector("h1");
  if (!e) { e = el("p", "warn"); e.id = "ft-notice"; h.parentNode.insertBefore(e, h.nextSibling); }
  e.textContent = "Could not use: " + NOTES.shown.join("; ") + (NOTES.n > NOTES.shown.length ? "; and " + (NOTES.n - NOTES.shown.length) + " more" : "");
}
/* one part of the page: an error in it stays an uncaught error (shown by onerror, seen by tests),
   thrown once this part is left, so that the next part is still drawn */
function part(fn) {
  try { fn(); } catch (e) { setTimeout(function () { throw e; }); }
  showNotes();
}
function isRow(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
function typeOf(v) { return v === null ? "null" : Array.isArray(v) ? "array" : typeof v; }
var A_TYPE = {"null": "null", array: "an array", object: "an object", number: "a number", string: "a string", "boolean": "a boolean"};
var D = (function () {
  var d = null;
  try { d = JSON.parse(document.getElementById("ft-data").textContent); } catch (e) { notice("the page's data (" + e.message + ")"); }
  return isRow(d) ? d : {};
})();
/* The diff document as far as the page reads it: a value nested deeper than DEPTH levels is cut
   there (JSON.stringify and any walk of it recurse). Iterative: the document may nest 10000 deep. */
var DEPTH = 32;
function bound(doc, where) {
  var stack = [[doc, 0, ""]];
  while (stack.length) {
    var it = stack.pop(), v = it[0], depth = it[1], keys = Array.isArray(v) ? null : Object.keys(v), n = keys ? keys.length : v.length;
    for (var i = 0; i < n; i++) {
      var k = keys ? keys[i] : i, c = v[k];
      if (c === null || typeof c !== "object") continue;
      var path = depth < 3 ? it[2] + (keys ? (depth ? "." : "") + k : "[" + k + "]") : it[2]; /* a table, a row, a column */
      if (depth + 1 < DEPTH) { stack.push([c, depth + 1, path]); continue; }
      v[k] = "(nested deeper than " + DEPTH + " levels)";
      notice(where + " " + path + " (nested deeper than " + DEPTH + " levels: cut there)");
    }
  }
}
if (D.diff !== undefined && D.diff !== null) {
  if (!isRow(D.diff)) { notice("--diff-json (" + A_TYPE[typeOf(D.diff)] + ", not an object of tables)"); D.diff = null; }
  else bound(D.diff, "--diff-json");
}
/* A table's rows: the objects of a list, each column holding one type of value (or null); anything
   else noted. cols: every row's keys, in the order first seen (a row without one shows it empty);
   types: each column's. */
function tableRows(list, where) {
  var rows = [], cols = [], types = Object.create(null), seen = Object.create(null); /* keyed by any name: "__proto__" too */
  if (!Array.isArray(list)) { if (list !== undefined && list !== null) notice(where + " (" + A_TYPE[typeOf(list)] + ", not a list)"); list = []; }
  for (var i = 0; i < list.length; i++) {
    var r = list[i];
    if (!isRow(r)) { notice(where + "[" + i + "] (" + A_TYPE[typeOf(r)] + ", not a row)"); continue; }
    for (var c in r) {
      var t = typeOf(r[c]);
      if (!seen[c]) { seen[c] = true; cols.push(c); }
      if (t === "null") continue;
      if (!Object.prototype.hasOwnProperty.call(types, c)) types[c] = t;
      else if (types[c] !== t) notice(where + "[" + i + "]." + c + " (" + A_TYPE[t] + " among " + types[c] + "s)");
    }
    rows.push(r);
  }
  return {rows: rows, cols: cols, types: types};
}
/* the report's own tables, checked once: the bars and the tables draw from them */
var TABLES = Object.create(null);
["kernels", "api", "memops", "memsize", "ranges", "gpu_ranges", "ops", "ops_shapes", "gpu", "ranks"].forEach(function (k) { TABLES[k] = tableRows(D[k], k); });
var TABLES_B = Object.create(null); /* group B's (two groups: diff -f html, report --a --b) */
if (isRow(D.b)) Object.keys(TABLES).forEach(function (k) { TABLES_B[k] = tableRows(D.b[k], "b." + k); });
else D.b = null;
var DIFF_TABLES = Object.create(null);
if (D.diff) Object.keys(D.diff).forEach(function (k) { /* a list with at least one object is a table */
  if (Array.isArray(D.diff[k]) && D.diff[k].some(isRow)) DIFF_TABLES[k] = tableRows(D.diff[k], "--diff-json " + k);
});
function fmt(v, key) {
  if (typeof v !== "number") return String(v);
  if (/_pct$/.test(key)) return v.toFixed(2);
  if (/_us$/.test(key) || /_us_/.test(key)) return v >= 1e6 ? (v / 1e6).toFixed(3) + " s" : v >= 1e3 ? (v / 1e3).toFixed(3) + " ms" : v.toFixed(3) + " us";
  if (/bytes$/.test(key) || key === "bytes") return v >= 1 << 30 ? (v / (1 << 30)).toFixed(2) + " GiB" : v >= 1 << 20 ? (v / (1 << 20)).toFixed(2) + " MiB" : v >= 1024 ? (v / 1024).toFixed(1) + " KiB" : v + " B";
  return String(v);
}
/* a link only as report.c writes them: a relative path of unreserved characters and %XX
   escapes, which no browser reads as a scheme, a host or a query, to a file named with no
   dot or as .json or .gz (never a page of its own); anything else stays text */
var SAFE_HREF = /^\.\.?\/(?:[A-Za-z0-9._~\/-]|%[0-9A-F]{2})*$/, SAFE_NAME = /(?:^|\/)(?:[^.\/]*|[^\/]*\.(?:json|gz))$/i;
function linkable(href) { /* the name as the browser will decode it: %2E is a dot */
  return typeof href === "string" && SAFE_HREF.test(href) && SAFE_NAME.test(href.replace(/%2E/g, ".").replace(/%2F/g, "/"));
}
function done(id) { document.getElementById(id).setAttribute("data-rendered", "1"); }

/* the header: files, tracer, device status, dropped, window; with two groups (diff -f html,
   report --a --b) A's and B's numbers side by side, then each group's traces */
function groupTotals(data, tables) { /* [label, value, fmt key]: the numbers the summary gives a group */
  var total = 0; tables.kernels.rows.forEach(function (k) { if (typeof k.total_us === "number") total += k.total_us; });
  return [["files", data.files.length, ""], ["events", data.events, ""], ["skipped", data.skipped_events, ""], ["kernel time", total, "total_us"]];
}
function filesTable(data) { /* a group's traces: one row each, with its link */
  var t = el("table"), h = el("tr");
  ["file", "rank", "tracer", "device activity", "dropped", "outside window", "span", "open the trace"].forEach(function (c) { h.appendChild(el("th", c === "file" ? "s" : "", c)); });
  t.appendChild(h);
  data.files.forEach(function (f, i) {
    var r = el("tr"), href = data.hrefs[i];
    r.appendChild(el("td", "s", f.file));
    r.appendChild(el("td", "", String(f.rank)));
    r.appendChild(el("td", "", f.tracer === null ? "(not flagtrace: torch/kineto or another)" : f.tracer));
    var st = f.device_activity === false ? "off: " + f.device_status : f.device_activity === true ? f.device_status : "(the trace does not say)";
    r.appendChild(el("td", f.device_activity === false ? "warn status" : "status", st));
    r.appendChild(el("td", f.dropped_records ? "warn" : "", String(f.dropped_records)));
    r.appendChild(el("td", f.window_discarded ? "warn" : "", String(f.window_discarded)));
    r.appendChild(el("td", "", fmt(f.span_us, "span_us")));
    var c = el("td", "s links");
    if (linkable(href)) { /* relative to this page: works when both are copied together */
      var a = el("a", "btn open-trace", "open " + f.file.split("/").pop());
      a.href = href; a.setAttribute("download", ""); a.title = "the trace itself (" + f.file + "): drop it on Perfetto or chrome://tracing"; c.appendChild(a);
    } else {
      c.appendChild(el("span", "muted no-link", "(no link: " + (data.no_link && data.no_link[i] || "not a relative path to a trace") + ")"));
    }
    var p = el("a", "btn perfetto", "Perfetto"); p.href = "https://ui.perfetto.dev/"; p.target = "_blank";
    p.title = "opens ui.perfetto.dev: use Open trace file and pick " + f.file; c.appendChild(document.createTextNode(" ")); c.appendChild(p);
    c.appendChild(el("span", "muted", " or chrome://tracing (Load)"));
    r.appendChild(c); t.appendChild(r);
  });
  var sc = el("div", "scroll"); sc.appendChild(t); return sc;
}
function warnings(b, data, who) { /* incomplete traces, unknown categories */
  if (data.files.some(function (f) { return !f.complete; })) b.appendChild(el("p", "warn", who + "Some traces are incomplete (see the columns above): their numbers undercount."));
  var u = Object.keys(isRow(data.unknown_categories) ? data.unknown_categories : {});
  if (u.length) b.appendChild(el("p", "warn", who + "Events of unknown categories skipped: " + u.map(function (k) { return k + " (" + data.unknown_categories[k] + ")"; }).join(", ")));
}
/* A's and B's numbers side by side (B/A beside them), each cell's number in data-value */
function summaryAB(b) {
  var ta = groupTotals(D, TABLES), tb = groupTotals(D.b, TABLES_B), t = el("table"), h = el("tr");
  t.id = "summary-ab";
  ["", "A", "B", "B/A"].forEach(function (c, i) { h.appendChild(el("th", i ? "" : "s", c)); });
  t.appendChild(h);
  ta.forEach(function (row, i) {
    var r = el("tr"), va = row[1], vb = tb[i][1];
    r.appendChild(el("td", "s", row[0]));
    [["a", va], ["b", vb]].forEach(function (g) {
      var c = el("td", "", row[2] ? fmt(g[1], row[2]) : String(g[1]));
      c.setAttribute("data-group", g[0]); c.setAttribute("data-key", row[0]); c.setAttribute("data-value", String(g[1])); r.appendChild(c);
    });
    r.appendChild(el("td", vb > va * 1.1 && row[0] === "kernel time" ? "warn" : "", va ? (vb / va).toFixed(3) : "-"));
    t.appendChild(r);
  });
  var sc = el("div", "scroll"); sc.appendChild(t); b.appendChild(sc);
  [["A", D], ["B", D.b]].forEach(function (g) {
    var d = el("div"); d.id = "summary-" + g[0].toLowerCase();
    d.appendChild(el("h3", "", g[0] + ": " + g[1].files.length + (g[1].files.length === 1 ? " trace" : " traces")));
    d.appendChild(filesTable(g[1])); warnings(d, g[1], g[0] + ": "); b.appendChild(d);
  });
}
part(function () {
  var b = document.getElementById("summary-body");
  if (D.b) { summaryAB(b); done("summary"); return; }
  var kv = el("div", "kv");
  function item(k, v) { var s = el("span"); s.appendChild(el("b", "", k + ": ")); s.appendChild(document.createTextNode(v)); kv.appendChild(s); }
  groupTotals(D, TABLES).forEach(function (row) { item(row[0], row[2] ? fmt(row[1], row[2]) : row[1]); });
  b.appendChild(kv);
  b.appendChild(filesTable(D));
  warnings(b, D, "");
  done("summary");
});

/* the busy strip: FT bins per rank, each over its own file's span */
function addRow(parent, label, bins, rank, group) {
  parent.appendChild(el("div", "label", label));
  var cv = el("canvas"); parent.appendChild(cv); /* tl_view.js redraws it on the timeline's clock: group (A 0, B 1) and rank */
  cv.setAttribute("data-rank", String(rank)); cv.setAttribute("data-group", String(group || 0));
  cv.draw = function () {
    var w = cv.clientWidth || 600, h = 22; cv.width = w; cv.height = h;
    var g = cv.getContext("2d"), n = bins.length, img = g.createImageData(w, h), px = img.data;
    for (var x = 0; x < w; x++) { /* one pixel column a bin: written as pixels (a fillStyle string each cost 2 % of opening) */
      var a = Math.round(255 * (0.08 + 0.92 * bins[Math.min(n - 1, Math.floor(n * x / w))] / 1000));
      for (var y = 0; y < h; y++) { var o = 4 * (y * w + x); px[o] = 19; px[o + 1] = 160; px[o + 2] = 122; px[o + 3] = a; }
    }
    g.putImageData(img, 0, 0);
  };
  cv.draw(); window.addEventListener("resize", function () { cv.draw(); });
}
/* each rank's mean over its devices; with two groups A's and B's rows of a rank one under the other */
part(function () {
  var s = document.getElementById("busy-body"), ranks = {}, groups = D.b ? [["A", D], ["B", D.b]] : [["", D]];
  groups.forEach(function (g, gi) { (Array.isArray(g[1].timeline) ? g[1].timeline : []).forEach(function (t) {
    var r = ranks[t.rank] = ranks[t.rank] || [[], []]; r[gi].push(t); }); });
  Object.keys(ranks).sort(function (a, c) { return a - c; }).forEach(function (r) {
    groups.forEach(function (g, gi) {
      var ts = ranks[r][gi]; if (!ts.length) return;
      var n = ts[0].busy.length, mean = [], pct = 0;
      for (var i = 0; i < n; i++) { var v = 0; ts.forEach(function (t) { v += t.busy[i]; }); mean.push(v / ts.length); }
      ts.forEach(function (t) { pct += t.busy_pct / ts.length; });
      addRow(s, (g[0] ? g[0] + " " : "") + "rank " + r + " (" + pct.toFixed(1) + " % busy)", mean, r, gi);
    });
  });
  done("busy");
});
