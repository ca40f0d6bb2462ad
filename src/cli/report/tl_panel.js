/* The timeline's details panel (the selected slice: its fields, args, and links as jumps) and the totals of a drag's selection. */
/* the model's kinds (enum ft_model_kind, src/analysis/model/model.h), as the page's category */
var KINDS = ["kernel", "memcpy", "memset", "runtime call", "driver call", "cpu_op", "user_annotation", "gpu_user_annotation", "sync", "profiler overhead", "python_function"];
var EXTRA = {1: "bytes", 2: "registers per thread", 3: "Input Dims"};
function sliceAt(G, F, k) { return {G: G, F: F, T: TL.tracks[F.track[k]], k: k}; }
function sliceName(s) { return s.G.names[s.F.name[s.k]]; }
/* A file's per-slice kind (k) and args (e: [index delta, field, value]...), decoded on the first
   selection in it (report_events.c): nothing of them is read while the page opens. */
function sliceExtras(F, then) {
  if (F.kind) return then();
  if (F.extrasWait) { F.extrasWait.push(then); return; }
  var raw = null;
  TL.groups.forEach(function (G) { var i = G.files.indexOf(F); if (i >= 0) raw = G.data.tl.files[i]; });
  F.extrasWait = [then];
  function finish() { var w = F.extrasWait; F.extrasWait = null; w.forEach(function (f) { f(); }); }
  if (!raw || typeof raw.k !== "string" || typeof raw.e !== "string") { F.kind = new Int32Array(0); F.ex = {at: new Int32Array(0), field: [], val: []}; finish(); return; }
  Promise.all([inflate(raw.k), inflate(raw.e)]).then(function (b) {
    F.kind = column(b[0], F.st.length, false, Int32Array);
    var bytes = new Uint8Array(b[1]), n = 0;
    for (var i = 0; i < bytes.length; i++) if (bytes[i] < 128) n++;
    var v = column(b[1], n, false), m = n / 3, at = new Int32Array(m), field = new Int32Array(m), val = new Float64Array(m), p = 0;
    for (i = 0; i < m; i++) { p += v[3 * i]; at[i] = p; field[i] = v[3 * i + 1]; val[i] = v[3 * i + 2]; }
    F.ex = {at: at, field: field, val: val};
    finish();
  }).catch(function (e) { F.kind = new Int32Array(0); F.ex = {at: new Int32Array(0), field: [], val: []}; finish(); setTimeout(function () { throw e; }); });
}
/* correlation id and External id -> the file's device work, its launches: made at the first link asked */
function linkMaps(F) {
  if (F.devByCorr) return;
  joins(F);
  var dc = new Map(), de = new Map(), le = new Map();
  function add(m, key, k) { var l = m.get(key); if (!l) m.set(key, l = []); l.push(k); }
  for (var k = 0; k < F.st.length; k++) {
    var cls = TL.tracks[F.track[k]].cls;
    if (cls === 2) { if (F.corr[k]) add(dc, F.corr[k], k); if (F.ext[k]) add(de, F.ext[k], k); }
    else if (cls === 1 && F.ext[k]) add(le, F.ext[k], k);
  }
  F.devByCorr = dc; F.devByExt = de; F.launchByExt = le;
}
/* the slices a selection links to: [label, [slices]] */
function sliceLinks(sel) {
  var F = sel.F, k = sel.k, cls = sel.T.cls, out = [];
  linkMaps(F);
  var c = F.corr[k], x = F.ext[k];
  if (cls === 1 && c && F.devByCorr.get(c)) out.push(["runs", F.devByCorr.get(c)]);
  if (cls === 2 && c) { var p = F.byCorr.get(c); if (p && p[0] !== undefined) out.push(["launched by", [p[0]]]); }
  var op = x ? F.opByExt.get(x) : undefined;
  if (cls !== 0 && op !== undefined) out.push(["op (External id " + x + ")", [op]]);
  if (cls === 0 && x) { /* an op's device work: by its External id, and through its launches' correlation ids */
    var seen = new Set(F.devByExt.get(x) || []);
    (F.launchByExt.get(x) || []).forEach(function (l) { (F.devByCorr.get(F.corr[l]) || []).forEach(function (d) { seen.add(d); }); });
    var ks = Array.from(seen).sort(function (a, b) { return F.st[a] - F.st[b]; });
    if (ks.length) out.push(["device work", ks]);
  }
  return out.map(function (l) { return [l[0], l[1].map(function (j) { return sliceAt(sel.G, F, j); })]; });
}
function selfTime(sel) { /* the slice's time less its direct children's (the lane below it on its track) */
  var F = sel.F, k = sel.k, lane = sel.T.lanes[F.lane[k] + 1];
  if (!lane) return F.en[k] - F.st[k];
  var busy = 0;
  for (var i = lower(lane.s, F.st[k]); i < lane.s.length && lane.s[i] < F.en[k]; i++) busy += Math.min(F.en[lane.idx[i]], F.en[k]) - lane.s[i];
  return F.en[k] - F.st[k] - busy;
}
function tUs(ns) { return fmt(ns / 1000, "t_us"); }
/* the panel's rows for a slice: [key, value] */
function detailRows(sel) {
  var G = sel.G, F = sel.F, k = sel.k, T = sel.T, rows = [["name", sliceName(sel)]];
  if (F.kind.length) rows.push(["category", KINDS[F.kind[k]] || String(F.kind[k])]);
  rows.push(["track", "rank " + F.rank + ", " + T.label]);
  rows.push(["start", tUs(F.st[k] - F.shift)], ["duration", tUs(F.en[k] - F.st[k])], ["self time", tUs(selfTime(sel))]);
  var l = launchOf(F, k);
  if (l) rows.push(["grid", "[" + l.slice(0, 3).join(", ") + "]"], ["block", "[" + l.slice(3).join(", ") + "]"]);
  if (T.cls >= 2) rows.push(["stream", String(T.tid)]);
  joins(F);
  if (F.corr[k]) rows.push(["correlation", String(F.corr[k])]);
  if (F.ext[k]) rows.push(["External id", String(F.ext[k])]);
  var E = F.ex, i = lower(E.at, k);
  for (; i < E.at.length && E.at[i] === k; i++) {
    var f = E.field[i], v = E.val[i];
    rows.push([EXTRA[f] || "arg " + f, f === 1 ? fmt(v, "bytes") + " (" + v + " B)" : f === 3 ? String(G.names[v]) : String(v)]);
  }
  return rows;
}
/* The panel under the timeline: the selected slice (TL.pinned), else the selection's totals (TL.sel) */
function showPanel() {
  var box = document.getElementById("tl-details"); if (!box) return;
  var sel = TL.pinned, key = sel ? "s" + TL.groups.indexOf(sel.G) + ":" + sel.G.files.indexOf(sel.F) + ":" + sel.k : TL.sel ? "r" + TL.sel.lo + ":" + TL.sel.hi : "";
  if (box.getAttribute("data-key") === key) return;
  box.setAttribute("data-key", key); box.textContent = ""; box.removeAttribute("data-ready");
  if (!sel && !TL.sel) { box.appendChild(el("p", "muted", "click a slice for its details, drag across the timeline for the totals of a stretch")); box.setAttribute("data-ready", "1"); return; }
  if (!sel) { showTotals(box, TL.sel); box.setAttribute("data-ready", "1"); return; }
  sliceExtras(sel.F, function () {
    if (box.getAttribute("data-key") !== key) return; /* another selection since */
    box.appendChild(el("h3", "", "Selected slice"));
    var t = el("table", "kv2");
    detailRows(sel).forEach(function (r) { var tr = el("tr"); tr.appendChild(el("th", "s", r[0])); tr.appendChild(el("td", "s", r[1])); t.appendChild(tr); });
    sliceLinks(sel).forEach(function (l) {
      var tr = el("tr"), td = el("td", "s"), MAX = 20;
      tr.appendChild(el("th", "s", l[0]));
      l[1].slice(0, MAX).forEach(function (s) {
        var a = el("button", "jump", sliceName(s) + " @ " + tUs(s.F.st[s.k] - s.F.shift));
        a.addEventListener("click", function () { selectSlice(s, true); });
        td.appendChild(a);
      });
      if (l[1].length > MAX) td.appendChild(el("span", "muted", " and " + (l[1].length - MAX) + " more"));
      tr.appendChild(td); t.appendChild(tr);
    });
    box.appendChild(t);
    box.setAttribute("data-ready", "1");
  });
}
/* A stretch's totals [lo, hi) (view time): per track its slices there (any part) and busy time
   (its outer slices' union, cut to the stretch), and the names with the most time there (each
   slice's time cut to the stretch, nested ones counted too). Costs a pass over the slices in it. */
function totals(lo, hi) {
  var tracks = [], per = new Map(); /* group -> its names' counts and times, by name id */
  TL.groups.forEach(function (G) { per.set(G, {n: new Int32Array(G.names.length), t: new Float64Array(G.names.length)}); });
  TL.tracks.forEach(function (T) {
    if (T.mem || !T.lanes.length) return;
    var F = T.file, a = lo + F.shift, b = hi + F.shift, n = 0, busy = 0, G = T.group, P = per.get(G);
    T.lanes.forEach(function (lane, d) {
      for (var i = lower(lane.e, a); i < lane.s.length && lane.s[i] < b; i++) {
        var k = lane.idx[i], e = F.en[k]; if (e <= a && !(e === a && F.st[k] === a)) continue;
        var t = Math.min(e, b) - Math.max(F.st[k], a); n++;
        if (d === 0) busy += t;
        P.n[F.name[k]]++; P.t[F.name[k]] += t;
      }
    });
    if (n) tracks.push({rank: F.rank, label: T.label, group: G.label, n: n, busy: busy});
  });
  var names = [];
  per.forEach(function (P, G) { for (var id = 0; id < P.n.length; id++) if (P.n[id]) names.push({name: G.names[id], n: P.n[id], t: P.t[id]}); });
  names.sort(function (x, y) { return y.t - x.t || (x.name < y.name ? -1 : 1); });
  return {lo: lo, hi: hi, tracks: tracks, top: names.slice(0, 10), names: names.length};
}
function showTotals(box, S) {
  var R = totals(S.lo, S.hi), two = TL.groups.length > 1;
  box.appendChild(el("h3", "", "Selection: " + tUs(S.lo) + " to " + tUs(S.hi) + ", " + tUs(S.hi - S.lo)));
  var zoom = el("button", "", "zoom to the selection (F)"); zoom.id = "tl-zoomsel";
  zoom.addEventListener("click", zoomToSelection); box.appendChild(zoom);
  var t = el("table", "totals"), h = el("tr");
  ["track", "slices", "busy", "busy %"].forEach(function (c, i) { h.appendChild(el("th", i ? "" : "s", c)); }); t.appendChild(h);
  R.tracks.forEach(function (r) {
    var tr = el("tr");
    [(two ? r.group + " " : "") + "rank " + r.rank + ", " + r.label, String(r.n), tUs(r.busy), (100 * r.busy / (S.hi - S.lo)).toFixed(1)].forEach(function (v, i) { tr.appendChild(el("td", i ? "" : "s", v)); });
    t.appendChild(tr);
  });
  if (!R.tracks.length) box.appendChild(el("p", "muted", "no slice in this stretch"));
  else box.appendChild(t);
  if (!R.top.length) return;
  box.appendChild(el("h3", "", "Top names by time in the selection (" + R.names + " names)"));
  var u = el("table", "top"); h = el("tr");
  ["name", "slices", "time"].forEach(function (c, i) { h.appendChild(el("th", i ? "" : "s", c)); }); u.appendChild(h);
  R.top.forEach(function (r) { var tr = el("tr"); [r.name, String(r.n), tUs(r.t)].forEach(function (v, i) { tr.appendChild(el("td", i ? "" : "s", v)); }); u.appendChild(tr); });
  box.appendChild(u);
}
