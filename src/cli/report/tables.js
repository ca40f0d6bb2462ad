/* Bars and sortable tables of every report, and the diff document's tables. */
function bars(id, rows, key, label, cls, extra) {
  var b = document.getElementById(id + "-body"), max = 0;
  rows.forEach(function (r) { max = Math.max(max, r[key]); });
  rows.forEach(function (r) {
    var row = el("div", "row"), n = el("div", "name", r.name); n.title = r.name;
    var bar = el("div", "bar " + cls); bar.style.width = (max ? 100 * r[key] / max : 0) + "%";
    var wrap = el("div"); wrap.appendChild(bar);
    row.appendChild(n); row.appendChild(wrap); row.appendChild(el("div", "", extra ? extra(r) : fmt(r[key], key)));
    b.appendChild(row);
  });
  if (!rows.length) b.appendChild(el("p", "muted", "(none)"));
  done(id);
}
/* two groups: the names in either's top 15 (by the larger of the two values, 15 at most), each with
   A's bar above B's on one scale; a kernel slower on B (time per call) or a regressed op marked */
function bars2(id, rowsA, rowsB, key, cls, extra) {
  var b = document.getElementById(id + "-body"), by = [Object.create(null), Object.create(null)], names = [], max = 0;
  function val(r) { return r && typeof r[key] === "number" ? r[key] : 0; }
  [rowsA, rowsB].forEach(function (rows, g) { rows.forEach(function (r) {
    if (typeof r.name !== "string" || by[g][r.name]) return;
    if (!by[0][r.name] && !by[1][r.name]) names.push(r.name);
    by[g][r.name] = r; }); });
  names.sort(function (x, y) { return Math.max(val(by[0][y]), val(by[1][y])) - Math.max(val(by[0][x]), val(by[1][x])); });
  names = names.slice(0, 15);
  names.forEach(function (n) { max = Math.max(max, val(by[0][n]), val(by[1][n])); });
  names.forEach(function (n) {
    var row = el("div", "row pair"), nm = el("div", "name" + (rowMarked({name: n}) ? " warn" : ""), n), wrap = el("div"), said = [];
    nm.title = n; row.appendChild(nm);
    ["A", "B"].forEach(function (g, gi) {
      var r = by[gi][n], bar = el("div", "bar " + cls + (gi ? " b" : "")); bar.style.width = (max ? 100 * val(r) / max : 0) + "%";
      bar.title = g; wrap.appendChild(bar);
      said.push(g + " " + (r ? (extra ? extra(r) : fmt(r[key], key)) : "-"));
    });
    row.appendChild(wrap); row.appendChild(el("div", "", said.join(" \u00b7 "))); b.appendChild(row);
  });
  if (!names.length) b.appendChild(el("p", "muted", "(none)"));
  done(id);
}
function topBars(id, pick, key, cls, extra) { /* one group's bars, or A's and B's */
  if (D.b) bars2(id, pick(TABLES), pick(TABLES_B), key, cls, extra); else bars(id, pick(TABLES), key, "", cls, extra);
}
part(function () { topBars("top-kernels", function (T) { return T.kernels.rows.slice(0, 15); }, "total_us", ""); });
part(function () { topBars("top-ops", function (T) { return T.ops.rows.filter(function (o) { return o.self_device_us > 0; }).slice(0, 15); }, "self_device_us", "op"); });
part(function () { topBars("copies", function (T) { return T.memsize.rows.slice(0, 15); }, "bandwidth_gb_s", "bw", function (r) { return fmt(r.total_bytes, "total_bytes") + ", " + r.bandwidth_gb_s.toFixed(1) + " GB/s"; }); });

/* a column's name for people: its unit in brackets (values show their own: us, ms, s, KiB) */
var HEADS = {avg_bytes: "mean size", avg_us: "mean", avg_us_per_call: "mean per call", bandwidth_gb_s: "bandwidth (GB/s)",
  busy_pct: "busy %", busy_us: "busy", calls: "calls", comm_pct: "communication %", comm_us: "communication",
  compute_us: "compute", cpu_avg_us: "CPU mean", cpu_total_us: "CPU total", device_avg_us: "device mean",
  device_total_us: "device total", kernel_us: "kernel time", max_bytes: "max size", max_us: "max", median_bytes: "median size",
  median_us: "median", min_bytes: "min size", min_us: "min", self_cpu_us: "self CPU", self_device_us: "self device",
  span_us: "span", stddev_bytes: "size stddev", stddev_us: "stddev", time_pct: "time %", total_bytes: "total size",
  total_us: "total time", dropped_records: "dropped records", window_discarded: "outside window", device_activity: "device activity",
  device_status: "device status"};
function colName(key) { return Object.prototype.hasOwnProperty.call(HEADS, key) ? HEADS[key] : key.replace(/_/g, " "); }
/* the ops marked as regressions: --regress, and the diff document's ops over 1.1 times A
   (keyed by any name: an op called "constructor" is no regression) */
var REGRESS = null; /* made at the first call: the bars above ask first */
function regressions() {
  if (REGRESS) return REGRESS;
  var r = REGRESS = Object.create(null);
  (Array.isArray(D.regress) ? D.regress : []).forEach(function (n) { if (typeof n === "string") r[n] = true; });
  if (DIFF_TABLES.ops) DIFF_TABLES.ops.rows.forEach(function (o) { if (typeof o.name === "string" && typeof o.ratio === "number" && o.ratio > 1.1) r[o.name] = true; });
  return r;
}
/* a table's cell as text; values nest at most DEPTH levels (bound) */
function cell(v, c) {
  if (typeof v === "number") return fmt(v, c);
  if (v === undefined) return "";
  if (v !== null && typeof v === "object") { var s = JSON.stringify(v); return s.length > 300 ? s.slice(0, 299) + "\u2026" : s; }
  return String(v);
}
var COLLATE = new Intl.Collator().compare; /* as localeCompare, without its cost on each call */
function rank(v) { return typeof v === "number" ? 0 : typeof v === "string" ? 1 : v === null || v === undefined ? 3 : 2; }
/* a count for people: 100000 as "100 000" */
function count(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, " "); }
/* A sortable table, shown a window at a time: the first WINDOW rows of its order, a line under it
   ("showing 1 000 of 100 000 rows") and buttons for the next WINDOW rows and for all of them (a
   browser lays out every cell it shows: 100 000 rows took 39 to 67 s a click). Sorting orders all
   the rows (n log n, in script), then puts the rows shown, as many as before, each made once, into
   a new body in one go. Numbers, then text, then other values as text, then empty cells; ties keep
   their order. */
var WINDOW = 1000;
function table(parent, id, title, rows, cols, types, open) {
  var d = el("details"); d.id = "table-" + id; d.open = open;
  d.appendChild(el("summary", "", title + " (" + rows.length + ")"));
  var t = el("table"), head = el("tr"), thead = el("thead"), body = el("tbody");
  var items = rows.map(function (r) { return {r: r, tr: null}; }), shown = Math.min(rows.length, WINDOW);
  function line(r) {
    var tr = el("tr", rowMarked(r) ? "warn" : "");
    for (var j = 0; j < cols.length; j++) tr.appendChild(el("td", typeof r[cols[j]] === "string" ? "s" : "", cell(r[cols[j]], cols[j])));
    return tr;
  }
  function rowsOf(from, to) { /* items from..to-1 as rows, in a fragment */
    var f = document.createDocumentFragment();
    for (var i = from; i < to; i++) f.appendChild(items[i].tr || (items[i].tr = line(items[i].r)));
    return f;
  }
  /* the line under a table longer than a window: what is shown, and buttons for more */
  var foot = null, said, moreB, allB;
  if (items.length > WINDOW) {
    foot = el("p", "more muted"); said = el("span", "shown"); moreB = el("button", "show-more"); allB = el("button", "show-all", "show all " + count(items.length) + " rows");
    moreB.type = allB.type = "button"; said.tabIndex = -1; foot.appendChild(said); foot.appendChild(moreB); foot.appendChild(allB);
    moreB.addEventListener("click", function () { grow(Math.min(items.length, shown + WINDOW)); });
    allB.addEventListener("click", function () { grow(items.length); });
  }
  function tell() {
    if (!foot) return;
    said.textContent = "showing " + count(shown) + " of " + count(items.length) + " rows";
    moreB.textContent = "show " + count(Math.min(WINDOW, items.length - shown)) + " more";
    moreB.hidden = allB.hidden = shown >= items.length;
  }
  function grow(n) { /* the rows after those shown, up to n, appended to the body */
    var focus = document.activeElement === moreB || document.activeElement === allB;
    body.appendChild(rowsOf(shown, n)); shown = n; tell();
    if (focus && moreB.hidden) said.focus(); /* a hidden button loses the keyboard's place */
  }
  function fill() {
    if (body.parentNode) t.removeChild(body); /* rows moved out of a detached body lay nothing out */
    var nb = el("tbody"); nb.appendChild(rowsOf(0, shown)); t.appendChild(nb); body = nb; tell();
  }
  cols.forEach(function (c) {
    var th = el("th", types[c] === "string" ? "s" : "", colName(c)); th.title = c; /* the JSON key, as stats -f json names it */
    th.addEventListener("click", function () {
      var dir = th.className.indexOf("sorted-desc") >= 0 ? 1 : -1;
      var keyed = items.map(function (it, i) { var v = it.r[c], o = rank(v); return {it: it, o: o, v: o === 2 ? cell(v, c) : v, i: i}; });
      keyed.sort(function (x, y) {
        return x.o - y.o || dir * (x.o === 0 ? x.v - y.v : x.o === 3 ? 0 : COLLATE(x.v, y.v)) || x.i - y.i;
      });
      for (var i = 0; i < keyed.length; i++) items[i] = keyed[i].it;
      Array.prototype.forEach.call(head.children, function (h) { h.className = h.className.replace(/ ?sorted-(asc|desc)/, ""); });
      th.className += dir > 0 ? " sorted-asc" : " sorted-desc"; fill();
    });
    head.appendChild(th);
  });
  thead.appendChild(head); t.appendChild(thead);
  fill(); d.appendChild(t); if (foot) d.appendChild(foot);
  parent.appendChild(d);
}
/* sortable tables of every report (A's and B's), then the diff document's tables (A vs B) */
part(function () {
  var b = document.getElementById("tables-body");
  var titles = {kernels: "GPU kernels", api: "runtime and driver API", memops: "copies and sets by time", memsize: "copies and sets by size",
    ranges: "user ranges (CPU time)", gpu_ranges: "user ranges projected on the GPU", ops: "ops and ranges as key_averages() shows them", ops_shapes: "ops by input shapes",
    gpu: "GPU busy per rank and device", ranks: "ranks: kernel, communication and compute time"};
  Object.keys(titles).forEach(function (k) { /* with two groups: A's, then B's (id table-b-KEY) */
    table(b, k, (D.b ? "A: " : "") + titles[k], TABLES[k].rows.slice(), TABLES[k].cols, TABLES[k].types, k === "kernels" || k === "ranks");
    if (D.b) table(b, "b-" + k, "B: " + titles[k], TABLES_B[k].rows.slice(), TABLES_B[k].cols, TABLES_B[k].types, k === "kernels" || k === "ranks");
  });
  Object.keys(DIFF_TABLES).forEach(function (k) { table(b, "diff-" + k, "A vs B: " + k, DIFF_TABLES[k].rows.slice(), DIFF_TABLES[k].cols, DIFF_TABLES[k].types, true); });
  done("tables");
});
