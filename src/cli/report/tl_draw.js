/* The timeline's drawing: levels of detail, layout, slices, labels, flows, hits, tips, the view. */
/* A lane's level of detail L for 1 us * 8^L a pixel: its slices merged across gaps under that,
   each block drawn as its longest slice. Levels 1 and up are made at load, each from the one
   below (level 1 from the slices: the same blocks); level 0, the largest, after the first frame
   in the background (buildLevel0s), the slices drawn until then. So a frame never waits for one. */
function level(lane, L) { /* the level to draw at L: null for the slices themselves */
  if (L < 0) return null;
  if (lane.lv[L]) return lane.lv[L];
  return L > lane.top ? lane.lv[lane.top] : null; /* coarser than the lane needs: its coarsest; level 0 not made yet */
}
function makeLevel(F, lane, L) { /* level L from level L - 1, level 0 and 1 from the slices */
  var res = 1000 * Math.pow(8, L), p = L > 1 ? lane.lv[L - 1] : null, n = p ? p.s.length : lane.s.length;
  /* the level below: its starts, ends, representatives and counts (the lane's slices at level 0) */
  var S = p ? p.s : lane.s, E = p ? p.e : null, R = p ? p.rep : lane.idx, C = p ? p.cnt : null, st = F.st, en = F.en;
  if (LV.n < n) { var z = Math.max(n, Math.ceil(1.5 * LV.n)); LV = {n: z, s: new Float64Array(z), e: new Float64Array(z), rep: new Int32Array(z), cnt: new Int32Array(z)}; }
  var s = LV.s, e = LV.e, rep = LV.rep, cnt = LV.cnt, m = 0, long = res * LONG_PX;
  /* the open block in locals, stored when the next one opens */
  var bs = 0, be = -Infinity, brep = 0, blen = 0, bc = 0, blong = true;
  for (var i = 0; i < n; i++) {
    var k = R[i], len = en[k] - st[k], end = E ? E[i] : en[k], il = len >= long;
    if (S[i] - be < res && !il && !blong) { /* a long slice is a block of its own: it keeps its name */
      if (end > be) be = end;
      if (len > blen) { blen = len; brep = k; }
      bc += C ? C[i] : 1;
    } else {
      if (i) { s[m] = bs; e[m] = be; rep[m] = brep; cnt[m] = bc; m++; }
      bs = S[i]; be = end; brep = k; blen = len; bc = C ? C[i] : 1; blong = il;
    }
  }
  if (n) { s[m] = bs; e[m] = be; rep[m] = brep; cnt[m] = bc; m++; }
  return (lane.lv[L] = {s: s.slice(0, m), e: e.slice(0, m), rep: rep.slice(0, m), cnt: cnt.slice(0, m)}); /* copies, exact */
}
/* makeLevel()'s scratch, as long as the longest lane: fresh memory costs page faults (a 10 M-slice
   page spent ~2 s of its opening filling new arrays for its levels); freed once level 0 is made */
var LV = {n: 0};
function freeLevelScratch() { LV = {n: 0}; }
var LONG_PX = 16; /* a slice this many pixels of a level or longer (2 to 16 px where the level is drawn) is never merged */
function levels(F, lane) { /* levels 1 up to the one of a single block (lane.top) */
  for (var L = 1; L < 16 && (L === 1 || lane.lv[L - 1].s.length > 1); L++) makeLevel(F, lane, L);
  lane.top = L - 1;
}
/* Level 0 of every lane, a few lanes a task after the first frame (their slices are drawn until
   then): with the levels above, the largest share of the memory a 10 M-slice page fills at load */
function buildLevel0s(done) {
  var todo = [], i = 0;
  TL.tracks.forEach(function (T) { T.lanes.forEach(function (lane) { todo.push([T.file, lane]); }); });
  (function chunk() {
    for (var t = performance.now(); i < todo.length && performance.now() - t < 8; i++) makeLevel(todo[i][0], todo[i][1], 0);
    if (i < todo.length) setTimeout(chunk, 0); else { freeLevelScratch(); if (done) done(); }
  })();
}
function hue(str) { var h = 0; for (var i = 0; i < str.length; i++) h = (h * 31 + str.charCodeAt(i)) | 0; return Math.abs(h) % 360; }
function color(G, id, cls) {
  var c = G.col[cls][id];
  if (c === undefined) {
    var h = hue(G.names[id]);
    c = G.col[cls][id] = cls === 1 ? "hsl(" + (20 + h % 30) + ",70%,62%)" : cls === 0 ? "hsl(" + (90 + h % 80) + ",45%,58%)" : "hsl(" + (190 + h % 90) + ",55%,55%)";
  }
  return c;
}
function lower(a, v) { var lo = 0, hi = a.length; while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; } return lo; }
function layout() { /* y of every track: the pinned ones, then a group title, a rank title (or its summary row), its tracks */
  var y = 0, files = 0;
  TL.rows = [];
  TL.groups.forEach(function (G) { files += G.files.length; });
  TL.tracks.forEach(function (T) { T.hidden = true; T.y = -1e9; T.h = 0; });
  function place(T, text) {
    T.hidden = false; T.y = y; T.shown = T.collapsed ? Math.min(1, T.lanes.length) : T.lanes.length;
    T.h = T.mem ? MEM_H : T.busy ? BUSY_H : Math.max(1, T.shown) * LANE_H + 3;
    TL.rows.push({y: y, h: T.h, text: text, track: T}); y += T.h;
  }
  var pins = TL.tracks.filter(function (T) { return T.pinned; });
  if (pins.length) { TL.rows.push({y: y, h: HEAD_H, text: "pinned", head: true}); y += HEAD_H; }
  pins.forEach(function (T) { place(T, (TL.groups.length > 1 ? T.group.label + " " : "") + "rank " + T.file.rank + ": " + T.label); });
  TL.groups.forEach(function (G) {
    if (TL.groups.length > 1) { TL.rows.push({y: y, h: HEAD_H, text: "group " + G.label, head: true}); y += HEAD_H; }
    G.files.forEach(function (F) {
      if (F.collapsed === undefined) F.collapsed = files > RANK_FOLD; /* many ranks: one summary row each until clicked */
      TL.rows.push({y: y, h: HEAD_H, text: "rank " + F.rank + "  " + F.path.split("/").pop(), head: true, file: F}); y += HEAD_H;
      if (F.collapsed) { TL.rows.push({y: y, h: SUM_H, text: summaryText(F), summary: F}); y += SUM_H; return; }
      F.tracks.forEach(function (T) { if (!T.pinned) place(T, T.label); });
    });
  });
  TL.height = Math.max(y, 20);
}
function xOf(F, t, W) { return (t - F.shift - TL.view[0]) * W / (TL.view[1] - TL.view[0]); }
function slicePos(G, F, k, W) { var T = TL.tracks[F.track[k]]; return {x: xOf(F, F.st[k], W), x1: xOf(F, F.en[k], W), y: T.y + F.lane[k] * LANE_H + 1, T: T}; }
function drawTimeline() {
  var cv = TL.canvas, W = cv.clientWidth || 800, H = TL.height, dpr = 1;
  cv.width = W * dpr; cv.height = H; cv.style.height = H + "px";
  var g = cv.getContext("2d"), span = TL.view[1] - TL.view[0], q = span / W;
  g.clearRect(0, 0, W, H); g.font = "10px system-ui,sans-serif"; g.textBaseline = "top";
  TL.rows.forEach(function (r) { if (r.head) { g.fillStyle = "#eef1f6"; g.fillRect(0, r.y, W, r.h); } });
  TL.drawn = [];
  TL.tracks.forEach(function (T) {
    if (T.hidden) return;
    var G = T.group, F = T.file, t0 = TL.view[0] + F.shift, t1 = TL.view[1] + F.shift;
    if (T.mem) drawMem(g, T, W, q);
    if (T.busy) drawBusy(g, T, W);
    T.lanes.forEach(function (lane, d) {
      if (d >= T.shown) return;
      var L = q < 1000 ? -1 : Math.floor(Math.log(q / 1000) / Math.log(8)), lv = level(lane, L);
      var S = lv ? lv.s : lane.s, E = lv ? lv.e : lane.e, y = T.y + d * LANE_H + 1, i = lower(E, t0), lastX = -1;
      for (; i < S.length && S[i] <= t1; i++) {
        var k = lv ? lv.rep[i] : lane.idx[i], x = (S[i] - t0) / q, x1 = ((lv ? E[i] : F.en[k]) - t0) / q;
        if (x1 < lastX) continue;
        var w = Math.max(1, x1 - x), id = F.name[k], fl = G.flag[id];
        if (x < -2) { w += x + 2; x = -2; }
        if (w > W + 4) w = W + 4;
        g.globalAlpha = TL.match && !(fl & 1) ? 0.18 : 1;
        g.fillStyle = color(G, id, T.cls); g.fillRect(x, y, w, LANE_H - 2);
        if (fl & 2 || (F.out && F.out[k])) { /* a regressed op; a slower kernel (compare.js) */ g.strokeStyle = "#d1242f"; g.lineWidth = 2; g.strokeRect(x + 1, y + 1, w - 2, LANE_H - 4); }
        /* the name, cut to what fits: a block of merged slices takes its longest one's when that one covers most of it */
        if (w > 24 && (!lv || lv.cnt[i] < 2 || F.en[k] - F.st[k] >= LABEL_SHARE * (E[i] - S[i]))) drawName(g, G, id, x, w, y, W);
        lastX = x + w;
      }
    });
  });
  TL.rows.forEach(function (r) { if (r.summary) drawSummary(g, r, W); }); /* (pixels put: before the outlines and arrows) */
  g.globalAlpha = 1;
  var sel = TL.pinned || TL.hover;
  if (TL.pinned) { var pp = slicePos(TL.pinned.G, TL.pinned.F, TL.pinned.k, W); g.strokeStyle = "#d97706"; g.lineWidth = 3; g.strokeRect(pp.x - 2, pp.y - 2, Math.max(1, pp.x1 - pp.x) + 4, LANE_H + 2); }
  if (sel) drawFlow(g, sel, W);
  if (TL.overlay) TL.overlay(g, W, H); /* tl_ui.js: the selection, the search's current match, the details panel */
  drawLabels();
  drawAxis(W);
  document.getElementById("axis-lo").textContent = fmt(TL.view[0] / 1000, "t_us");
  document.getElementById("axis-hi").textContent = fmt(TL.view[1] / 1000, "t_us");
}
function drawLabels() {
  var cv = TL.labels; if (TL.labelsFor === TL.rows && cv.height === TL.height) return; /* the names change with the layout, not the view */
  TL.labelsFor = TL.rows; cv.width = GUTTER; cv.height = TL.height; cv.style.height = TL.height + "px";
  var g = cv.getContext("2d"); g.font = "11px system-ui,sans-serif"; g.textBaseline = "top";
  TL.rows.forEach(function (r) {
    g.fillStyle = r.head ? "#eef1f6" : "#fff"; g.fillRect(0, r.y, GUTTER, r.h);
    g.fillStyle = r.head ? "#1d2330" : "#4b5563"; g.fillText(fitText(g, r.text, GUTTER - 14 - (r.track ? PIN_W : 0)), 12, r.y + 2);
    labelMarks(g, r);
  });
}
function joins(F) { /* correlation id -> [launch, device work]; External id -> its op: made at the first hover */
  if (F.byCorr) return;
  F.corr = column(F.cols.c, F.st.length, true); F.ext = column(F.cols.x, F.st.length, true);
  F.byCorr = new Map(); F.opByExt = new Map();
  for (var k = 0; k < F.st.length; k++) {
    var cls = TL.tracks[F.track[k]].cls;
    if (F.corr[k] && cls >= 1) { var p = F.byCorr.get(F.corr[k]); if (!p) F.byCorr.set(F.corr[k], p = []); p[cls === 1 ? 0 : 1] = k; }
    if (F.ext[k] && cls === 0 && !F.opByExt.has(F.ext[k])) F.opByExt.set(F.ext[k], k);
  }
}
function partner(sel) { /* the launch and its device work, by correlation id */
  var F = sel.F; joins(F);
  var c = F.corr[sel.k];
  var pair = c ? F.byCorr.get(c) : null;
  return pair && pair[0] !== undefined && pair[1] !== undefined ? pair : null;
}
function drawFlow(g, sel, W) {
  var pair = partner(sel); if (!pair) return;
  var a = slicePos(sel.G, sel.F, pair[0], W), b = slicePos(sel.G, sel.F, pair[1], W);
  var ax = a.x, ay = a.y + LANE_H - 2, bx = b.x, by = b.y;
  g.strokeStyle = "#111"; g.lineWidth = 1.5; g.beginPath(); g.moveTo(ax, ay);
  g.bezierCurveTo(ax, (ay + by) / 2, bx, (ay + by) / 2, bx, by); g.stroke();
  g.fillStyle = "#111"; g.beginPath(); g.moveTo(bx, by); g.lineTo(bx - 4, by - 7); g.lineTo(bx + 4, by - 7); g.fill();
  TL.flow = {from: [ax, ay], to: [bx, by]};
}
function hit(px, py) { /* the slice under a point of the canvas, or null */
  var W = TL.canvas.clientWidth, q = (TL.view[1] - TL.view[0]) / W;
  for (var i = 0; i < TL.tracks.length; i++) {
    var T = TL.tracks[i]; if (T.hidden || py < T.y || py >= T.y + T.h) continue;
    var d = Math.floor((py - T.y) / LANE_H), lane = d < T.shown ? T.lanes[d] : null; if (!lane) return null;
    var t = TL.view[0] + T.file.shift + px * q, j = lower(lane.e, t - 2 * q);
    for (; j < lane.s.length && lane.s[j] <= t + 2 * q; j++) if (T.file.en[lane.idx[j]] >= t - 2 * q) return {G: T.group, F: T.file, T: T, k: lane.idx[j]};
    return null;
  }
  return null;
}
function launchOf(F, k) { /* [grid xyz, block xyz] from the rows of 7 [index, ...] sorted by index */
  var lo = 0, hi = F.g.length / 7;
  while (lo < hi) { var m = (lo + hi) >> 1; if (F.g[m * 7] < k) lo = m + 1; else hi = m; }
  return lo * 7 < F.g.length && F.g[lo * 7] === k ? F.g.slice(lo * 7 + 1, lo * 7 + 7) : null;
}
function tipText(sel) {
  var G = sel.G, F = sel.F, k = sel.k, T = sel.T, lines = [G.names[F.name[k]]];
  lines.push("duration " + fmt((F.en[k] - F.st[k]) / 1000, "dur_us") + ", start " + fmt((F.st[k] - F.shift) / 1000, "t_us"));
  lines.push("rank " + F.rank + ", " + T.label);
  var l = launchOf(F, k); if (l) lines.push("grid [" + l.slice(0, 3).join(", ") + "], block [" + l.slice(3).join(", ") + "]");
  if (T.cls >= 2) lines.push("stream " + T.tid);
  var pair = partner(sel);
  if (pair && T.cls >= 2) lines.push("launched by " + G.names[F.name[pair[0]]]);
  joins(F);
  var op = F.ext[k] ? F.opByExt.get(F.ext[k]) : undefined;
  if (op !== undefined && op !== k) lines.push("op " + G.names[F.name[op]]);
  return lines.join("\n");
}
function setView(lo, hi) { if (hi - lo < 100) hi = lo + 100; TL.view = [lo, hi]; drawTimeline(); }
function fullView() { var end = 0; TL.groups.forEach(function (G) { end = Math.max(end, G.end - G.shift); }); setView(0, end > 0 ? end : 1); }
function stepRange(G, n) { /* ProfilerStep#n over every rank of G, or null */
  var lo = Infinity, hi = -Infinity, id = G.names.indexOf("ProfilerStep#" + n);
  G.files.forEach(function (F) { for (var k = 0; k < F.name.length; k++) if (F.name[k] === id) { lo = Math.min(lo, F.st[k]); hi = Math.max(hi, F.en[k]); } });
  return lo < hi ? [lo, hi] : null;
}
function setStep(n) { /* every file (rank) shifted so that its step n starts at 0 (aligned by step), or the whole trace */
  TL.step = n; var end = 0;
  TL.groups.forEach(function (G) { var r = n >= 0 ? stepRange(G, n) : null; G.shift = r ? r[0] : 0;
    G.files.forEach(function (F) { var f = r ? stepRange({names: G.names, files: [F]}, n) : null; F.shift = f ? f[0] : G.shift; if (f) end = Math.max(end, f[1] - f[0]); }); });
  if (n >= 0 && end > 0) setView(0, end); else fullView();
}
function jumpTo(g, fi, t, dur) { /* the stretch [t, t + dur) of group g's file fi (page ns) framed, its slice there pinned */
  var G = TL.groups[g], F = G && G.files[fi]; if (!F) return null;
  var pad = Math.max(dur, 1000), lo = t - F.shift - pad, hi = t + dur - F.shift + pad, best = -1;
  for (var k = 0; k < F.st.length; k++) /* the slice the occurrence is: its start and length, else the longest one starting there */
    if (Math.abs(F.st[k] - t) < 1 && (best < 0 || Math.abs(F.en[k] - F.st[k] - dur) < Math.abs(F.en[best] - F.st[best] - dur))) best = k;
  TL.pinned = best >= 0 ? {G: G, F: F, T: TL.tracks[F.track[best]], k: best} : null;
  if (TL.pinned && TL.pinned.T.hidden) { F.collapsed = false; layout(); } /* its rank folded: opened to show it */
  setView(lo, hi);
  var r = TL.canvas.getBoundingClientRect(), y = best >= 0 ? TL.tracks[F.track[best]].y : 0; /* the slice's row brought into sight */
  window.scrollTo(0, Math.max(0, window.scrollY + r.top + y - 120));
  return best;
}
