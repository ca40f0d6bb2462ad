/* The timeline's view aids: names on blocks, the time axis, counter tracks, collapse/pin, rank summaries, the legend, the busy strip on the timeline's clock. */
var BUSY_H = 24, SUM_H = 14, AXIS_H = 20, RANK_FOLD = 8, LABEL_SHARE = 0.6, PIN_W = 16;

/* A slice's (or a block's) name inside [x, x + w), cut with "…" to the pixels it has. A name's width and,
   the first time it is cut, its prefixes' widths (from each character's, measured once) are kept: a frame
   measures no text, and its labels are bounded by pixels. */
var CHAR_W = Object.create(null);
function charW(g, c) { var w = CHAR_W[c]; return w !== undefined ? w : (CHAR_W[c] = g.measureText(c).width); }
function drawName(g, G, id, x, w, y, W) {
  var left = Math.max(x, 0) + 2, right = Math.min(x + w, W) - 2, room = right - left, name = G.names[id];
  if (room < 8 || name === undefined) return;
  var tw = G.tw || (G.tw = new Float32Array(G.names.length).fill(-1)), full = tw[id] >= 0 ? tw[id] : (tw[id] = g.measureText(name).width), text = name;
  if (full > room) {
    var cum = (G.cum || (G.cum = []))[id], ell = charW(g, "\u2026") + 1; /* 1 px for kerning */
    if (!cum) { cum = G.cum[id] = new Float32Array(name.length + 1); for (var i = 0; i < name.length; i++) cum[i + 1] = cum[i] + charW(g, name[i]); }
    var lo = 0, hi = name.length; /* the longest prefix that fits with the ellipsis */
    while (lo < hi) { var m = (lo + hi + 1) >> 1; if (cum[m] + ell <= room) lo = m; else hi = m - 1; }
    if (lo <= 0) return;
    text = name.slice(0, lo) + "\u2026";
  }
  g.fillStyle = "#111"; g.fillText(text, left, y + 2);
  if (TL.drawn.length < 5000) TL.drawn.push({text: text, name: name, x: left, w: room, y: y});
}

/* text cut with "…" to room px (a row's label: a few a frame) */
function fitText(g, text, room) {
  if (g.measureText(text).width <= room) return text;
  var n = text.length;
  while (n > 1 && g.measureText(text.slice(0, n) + "\u2026").width > room) n = Math.floor(n * 0.9);
  while (g.measureText(text.slice(0, n + 1) + "\u2026").width <= room) n++;
  return text.slice(0, n) + "\u2026";
}
/* The bins of B (busy per mille over [t0, t0 + span), page ns) at page time t: -1 outside */
function binAt(B, t) { var i = Math.floor((t - B.t0) / B.span * B.bins.length); return i >= 0 && i < B.bins.length ? B.bins[i] : -1; }
/* a device's busy share as a counter track: its bins drawn once (a pixel column a bin, off screen), then
   each frame the bins in view scaled onto the track in one drawImage */
function drawBusy(g, T, W) {
  var B = T.busy, F = T.file, n = B.bins.length, hh = T.h - 5, bw = B.span / n;
  if (!B.img || B.img.height !== hh) {
    var c = B.img = document.createElement("canvas"), cg; c.width = n; c.height = hh; cg = c.getContext("2d");
    cg.fillStyle = B.color || "rgba(19,160,122,0.75)";
    for (var i = 0; i < n; i++) if (B.bins[i] > 0) cg.fillRect(i, hh - B.bins[i] * hh, 1, B.bins[i] * hh);
  }
  var lo = Math.max(0, (TL.view[0] + F.shift - B.t0) / bw), hi = Math.min(n, (TL.view[1] + F.shift - B.t0) / bw);
  g.globalAlpha = 1;
  if (hi > lo) {
    var x0 = xOf(F, B.t0 + lo * bw, W), x1 = xOf(F, B.t0 + hi * bw, W);
    g.imageSmoothingEnabled = false; g.drawImage(B.img, lo, 0, hi - lo, hh, x0, T.y + 3, x1 - x0, hh); g.imageSmoothingEnabled = true;
  }
  g.fillStyle = "#6b7280"; g.fillText(B.top || "100 %", 2, T.y + 1); /* the scale: the track's top */
}
/* a folded rank: one row, its devices' mean busy share on the timeline's clock (a heat strip) */
function summaryText(F) { return F.busy.length ? "summary: GPU busy, " + F.busy.length + " device" + (F.busy.length > 1 ? "s" : "") : "summary (no device work)"; }
function drawSummary(g, r, W) {
  var F = r.summary, q = (TL.view[1] - TL.view[0]) / W;
  g.globalAlpha = 1; g.fillStyle = "#f3f4f6"; g.fillRect(0, r.y, W, r.h);
  if (F.busy.length) g.putImageData(heatRow(g, F.busy, W, r.h - 2, TL.view[0] + F.shift + 0.5 * q, q, 243), 0, r.y + 1);
}
/* a heat strip W x h of the mean busy share of bs (each {B}) at times t0 + x q: green, paler when idle;
   bg (grey level) where no bin covers the time. A pixel column a time, whatever the number of slices. */
function heatRow(g, bs, W, h, t0, q, bg) {
  var img = g.createImageData(W, h), d = img.data, nb = bs.length;
  for (var x = 0; x < W; x++) {
    var t = t0 + x * q, v = 0, any = 0, o = 4 * x;
    for (var j = 0; j < nb; j++) { var B = bs[j].B, i = Math.floor((t - B.t0) / B.span * B.bins.length); if (i >= 0 && i < B.bins.length) { v += B.bins[i]; any++; } }
    if (!any) { if (bg) { d[o] = d[o + 1] = d[o + 2] = bg; d[o + 3] = 255; } continue; }
    var a = 0.08 + 0.92 * v / nb;
    d[o] = 255 - a * 236; d[o + 1] = 255 - a * 95; d[o + 2] = 255 - a * 133; d[o + 3] = 255;
  }
  for (var y = 1; y < h; y++) d.copyWithin(4 * W * y, 0, 4 * W);
  return img;
}
/* a row's label marks: a rank's or a track's fold (a triangle), a track's pin (a dot, filled when pinned) */
function labelMarks(g, r) {
  var T = r.track, y = r.y + 4;
  if (r.file || (T && T.lanes.length > 1)) {
    var open = r.file ? !r.file.collapsed : !T.collapsed;
    g.fillStyle = "#4b5563"; g.beginPath();
    if (open) { g.moveTo(2, y); g.lineTo(10, y); g.lineTo(6, y + 6); } else { g.moveTo(3, y - 1); g.lineTo(9, y + 3); g.lineTo(3, y + 7); }
    g.fill();
  }
  if (T) {
    g.strokeStyle = "#6b7280"; g.fillStyle = T.pinned ? "#d97706" : "#fff"; g.lineWidth = 1;
    g.beginPath(); g.arc(GUTTER - PIN_W / 2, r.y + 8, 4, 0, 2 * Math.PI); g.fill(); g.stroke();
    if (T.note && r.h >= 2 * LANE_H) { g.fillStyle = "#a4320c"; g.fillText(fitText(g, T.note, GUTTER - 14), 12, r.y + 16); }
  }
}
/* a click on the labels: the pin dot pins or unpins the track; elsewhere a track folds to its first
   lane (or unfolds), a rank's title folds the rank to its summary row (or unfolds it) */
function labelClick(px, py) {
  var r = null;
  for (var i = 0; i < TL.rows.length; i++) if (py >= TL.rows[i].y && py < TL.rows[i].y + TL.rows[i].h) r = TL.rows[i];
  if (!r) return null;
  if (r.track && px >= GUTTER - PIN_W) r.track.pinned = !r.track.pinned;
  else if (r.track) r.track.collapsed = !r.track.collapsed;
  else if (r.file || r.summary) { var F = r.file || r.summary; F.collapsed = !F.collapsed; }
  else return null;
  layout(); drawTimeline();
  return r.text;
}

/* The time axis: ticks 1-2-5 apart (at least 90 px), labelled in the step's unit from the view's
   origin (the trace's start, or the step's); when those numbers get long (deep zoom), the first tick
   says where it is and the others are "+" from it. */
var UNITS = [[1, "ns"], [1e3, "us"], [1e6, "ms"], [1e9, "s"]];
function unitOf(v) { var u = UNITS[0]; UNITS.forEach(function (c) { if (v >= c[0]) u = c; }); return u; }
function axisTicks(lo, hi, W) {
  var min = (hi - lo) / W * 90, step = 1;
  for (var p = 1; p < 1e16; p *= 10) { var s = [1, 2, 5].map(function (m) { return m * p; }).find(function (v) { return v >= min; }); if (s) { step = s; break; } }
  var u = unitOf(step), first = Math.ceil(lo / step) * step, ticks = [], rel = Math.max(Math.abs(first), Math.abs(hi)) / u[0] >= 1e5;
  for (var t = first, i = 0; t <= hi && i < 200; t = first + ++i * step) {
    var text = rel ? (i ? "+" + Math.round(i * step / u[0]) + " " + u[1] : absTime(t, step)) : Math.round(t / u[0]) + " " + u[1];
    ticks.push({t: t, x: (t - lo) * W / (hi - lo), text: text});
  }
  return {step: step, unit: u[1], relative: rel, ticks: ticks};
}
function absTime(t, step) { /* t in the largest unit it reaches, to the step's precision */
  var u = unitOf(Math.abs(t)), dec = Math.max(0, Math.round(Math.log10(u[0] / step)));
  return (t / u[0]).toFixed(dec) + " " + u[1];
}
function drawAxis(W) { /* DOM, not a canvas: a dozen labels a frame, and the page's canvases stay the slices' */
  var ax = TL.axis; if (!ax) return;
  var a = axisTicks(TL.view[0], TL.view[1], W), kids = ax.children;
  ax.style.width = W + "px";
  while (kids.length < a.ticks.length) { var k = el("span"), m = el("i"); k.appendChild(document.createTextNode("")); ax.appendChild(k); k.appendChild(m);
    k.style.position = "absolute"; k.style.top = "1px"; k.style.whiteSpace = "nowrap"; k.style.fontSize = "10px"; k.style.color = "#1d2330";
    m.style.position = "absolute"; m.style.top = "14px"; m.style.width = "1px"; m.style.height = "6px"; m.style.background = "#6b7280"; }
  for (var i = 0; i < kids.length; i++) {
    var k2 = kids[i], t = a.ticks[i];
    if (!t) { k2.style.display = "none"; continue; }
    var x = Math.round(t.x), left = Math.min(Math.max(0, x - 40), Math.max(0, W - 80)); /* centred on its tick, kept inside */
    k2.style.display = ""; k2.firstChild.nodeValue = t.text; k2.style.left = left + "px"; k2.style.width = "80px";
    k2.style.textAlign = left === 0 && x < 40 ? "left" : left > 0 && x > W - 40 ? "right" : "center";
    k2.lastChild.style.left = (x - left) + "px";
  }
  TL.axisInfo = a;
  busyStrip();
}

/* The busy strip (section #busy) on the timeline's clock: same x as the timeline's canvas, redrawn when
   the view changes (once a frame at most). Each rank's row is its devices' mean busy share at that time. */
function busyStrip() {
  if (TL.busyFrame) return;
  TL.busyFrame = requestAnimationFrame(function () { TL.busyFrame = 0; busyDraw(); });
}
function busyDraw() {
  var s = document.getElementById("busy-body"), W = TL.canvas ? TL.canvas.clientWidth : 0; if (!s || !TL.groups.length || !W) return;
  /* each file's shift: the step selector aligns every rank on its own step */
  var key = TL.view[0] + ":" + TL.view[1] + ":" + TL.groups.map(function (G) { return G.files.map(function (F) { return F.shift; }).join(","); }).join("|") + ":" + W;
  if (TL.busyKey === key) return;
  TL.busyKey = key;
  var q = (TL.view[1] - TL.view[0]) / W, cvs = s.querySelectorAll("canvas");
  if (TL.busyW !== W) { /* a layout read only when the width changed, not a frame */
    var cr = TL.canvas.getBoundingClientRect(), sr = s.getBoundingClientRect(); TL.busyW = W;
    s.style.gridTemplateColumns = Math.max(0, cr.left - sr.left) + "px " + W + "px"; s.style.columnGap = "0";
  }
  var ranks = {}, shifts = {}; /* a group's rank's row ("group:rank") on its first file's clock */
  TL.groups.forEach(function (G, gi) {
    G.files.forEach(function (F) {
      var key = gi + ":" + F.rank;
      if (!(key in shifts)) shifts[key] = F.shift;
      (ranks[key] = ranks[key] || []).push.apply(ranks[key], F.busy);
    });
  });
  cvs.forEach(function (cv) {
    var rk = (cv.getAttribute("data-group") || "0") + ":" + cv.getAttribute("data-rank"), bs = ranks[rk]; if (!bs || !bs.length) return;
    var t0 = TL.view[0] + shifts[rk] + 0.5 * q;
    cv.draw = function () {
      if (cv.width !== W || cv.height !== 22) { cv.width = W; cv.height = 22; cv.style.border = "0"; cv.style.width = W + "px"; }
      var g = cv.getContext("2d"), img = heatRow(g, bs, W, 22, t0, q, 0);
      g.putImageData(img, 0, 0);
    };
    cv.draw();
  });
}

/* The legend: an entry for each kind of track the page has */
function legend() {
  var lg = document.querySelector("#timeline .legend"); if (!lg) return;
  var has = {}; TL.tracks.forEach(function (T) { has[T.cls] = true; });
  var items = [[2, "k", "device work"], [0, "o", "CPU ops"], [1, "c", "runtime calls"], [3, "k", "GPU ranges"],
    [4, "m", "device memory allocated (line: reserved; red: its peak)"], [5, "b", "GPU busy %"], [6, "q", "stream queue (launched, not started)"]];
  lg.textContent = "wheel or W/S to zoom, shift+wheel or A/D to pan, drag to select a stretch (its totals below; F or Ctrl+drag zooms to it), click a slice for its details, ] follows its arrow, Enter/Shift+Enter the next/previous match, Escape clears, double-click resets; hover or click a launch or its kernel for the arrow between them; click a row's name to fold it, its dot to pin it";
  items.forEach(function (it) {
    if (!has[it[0]]) return;
    var i = el("i", it[1]); if (it[1] === "b") i.style.background = "rgba(19,160,122,.75)"; else if (it[1] === "q") i.style.background = "rgba(217,119,6,.7)";
    lg.appendChild(i); lg.appendChild(document.createTextNode(it[2]));
  });
}

/* Set up once the timeline's canvases exist: the axis above them (sticky), the labels' clicks, the
   legend, the busy strip's heading; the test hook's view functions. */
function viewInit(hook) {
  var wrap = TL.canvas.parentNode, bar = el("div", "tl-axis-row"), ax = el("div", "tl-axis");
  bar.style.position = "sticky"; bar.style.top = "0"; bar.style.zIndex = "3"; bar.style.background = "#fff"; bar.style.height = AXIS_H + "px";
  bar.style.borderBottom = "1px solid #9ca3af"; bar.style.paddingLeft = (GUTTER + 2) + "px";
  ax.style.position = "relative"; ax.style.height = AXIS_H + "px"; ax.style.overflow = "hidden";
  bar.appendChild(ax); wrap.parentNode.insertBefore(bar, wrap); TL.axis = ax;
  TL.labels.addEventListener("click", function (e) { labelClick(e.offsetX, e.offsetY); });
  var h2 = document.querySelector("#busy h2"); if (h2) h2.textContent = "GPU busy per rank (on the timeline's clock: the same x as the timeline, it follows the zoom)";
  legend(); drawAxis(TL.canvas.clientWidth || 800); /* the first frame was drawn before the axis existed: its axis now */
  hook.labels = function () { return TL.drawn.slice(); };
  hook.axis = function () { return TL.axisInfo; };
  hook.rows = function () { return TL.rows.map(function (r) { var T = r.track; return {text: r.text, y: r.y, h: r.h, head: !!r.head, summary: !!r.summary,
    lanes: T ? T.lanes.length : 0, shown: T ? T.shown : 0, note: T ? T.note || "" : "", pinned: T ? !!T.pinned : false, collapsed: T ? !!T.collapsed : r.file ? !!r.file.collapsed : r.summary ? true : false}; }); };
  hook.clickLabel = labelClick;
  hook.busyAt = function (rank, x) { var c = document.querySelector("#busy-body canvas[data-rank='" + rank + "']"); return c ? Array.from(c.getContext("2d").getImageData(x, 10, 1, 1).data) : null; };
}
