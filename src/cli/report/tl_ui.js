/* The timeline's controls: search, steps, mouse, keys, selection, follow the arrow, the test hook (window.ftTimeline). */
function startTimeline() {
  var b = document.getElementById("timeline-body"), bar = el("div", "tl-bar");
  var search = el("input"); search.id = "tl-search"; search.placeholder = "search names"; bar.appendChild(search);
  var prev = el("button", "", "\u25C0"), next = el("button", "", "\u25B6"), count = el("span", "muted");
  prev.id = "tl-prev"; next.id = "tl-next"; count.id = "tl-count"; prev.title = "previous match (Shift+Enter)"; next.title = "next match (Enter)";
  bar.appendChild(prev); bar.appendChild(next); bar.appendChild(count);
  var step = el("select"); step.id = "tl-step"; bar.appendChild(step);
  var follow = el("button", "", "follow the arrow (])"); follow.id = "tl-follow"; follow.disabled = true;
  follow.title = "jump to the other end of the selected slice's launch arrow: its kernel, or its launch"; bar.appendChild(follow);
  var clock = el("span", "muted"); clock.id = "tl-clock"; bar.appendChild(clock); b.appendChild(bar);
  buildGroup("A", D); if (D.b) buildGroup("B", D.b); performance.mark("ft-built");
  TL.groups.forEach(function (G) { G.files.forEach(function (F) { F.shift = 0; }); }); /* each file's, by the step selector */
  TL.regress = regressions();
  TL.groups.forEach(function (G) { G.names.forEach(function (n, id) { if (TL.regress[n]) G.flag[id] |= 2; }); });
  var notes = TL.groups.map(function (G) { var c = G.data.tl.clock; return (TL.groups.length > 1 ? G.label + ": " : "") + (c.why || "one trace"); });
  clock.textContent = notes.join("; ");
  if (TL.groups.some(function (G) { return G.files.length > 1 && !G.data.tl.clock.aligned; })) clock.className = "warn";
  var steps = {};
  TL.groups.forEach(function (G) { G.names.forEach(function (n) { var m = /^ProfilerStep#(\d+)$/.exec(n); if (m) steps[m[1]] = 1; }); });
  [-1].concat(Object.keys(steps).map(Number).sort(function (x, y) { return x - y; })).forEach(function (n) {
    var o = el("option", "", n < 0 ? (TL.groups.length > 1 ? "whole traces, at their starts" : "whole trace") : "step " + n); o.value = String(n); step.appendChild(o);
  });
  var wrap = el("div", "tl-wrap"), cv = el("canvas", "tl-canvas"), lab = el("canvas", "tl-labels"), tip = el("div", "tl-tip");
  tip.id = "tl-tip"; wrap.appendChild(cv); wrap.appendChild(lab); wrap.appendChild(tip); b.appendChild(wrap);
  var ax = el("div", "axis"), lo = el("span"), hi = el("span"); lo.id = "axis-lo"; hi.id = "axis-hi";
  ax.appendChild(lo); ax.appendChild(hi); b.appendChild(ax);
  var matches = el("div", "tl-matches"), panel = el("div", "tl-details"); matches.id = "tl-matches"; panel.id = "tl-details";
  b.appendChild(matches); b.appendChild(panel);
  TL.overlay = timelineOverlay;
  TL.canvas = cv; TL.labels = lab; layout();
  if (!TL.tracks.length) b.appendChild(el("p", "muted", "no slices in these traces"));
  fullView();
  search.addEventListener("input", function () { searchSet(search.value); drawTimeline(); });
  search.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { e.preventDefault(); searchStep(e.shiftKey ? -1 : 1); }
    else if (e.key === "Escape") { search.blur(); clearSelection(); } /* the box left: W/A/S/D are the timeline's again */
  });
  prev.addEventListener("click", function () { searchStep(-1); });
  next.addEventListener("click", function () { searchStep(1); });
  follow.addEventListener("click", followArrow);
  step.addEventListener("change", function () { setStep(Number(step.value)); });
  var down = null;
  function place(e) { /* the tip beside the pointer, above it near the bottom, left of it near the right edge */
    var below = e.offsetY + 12 + tip.offsetHeight <= Math.max(TL.height, 120), right = e.offsetX + 14 + tip.offsetWidth <= cv.clientWidth;
    tip.style.left = cv.offsetLeft + (right ? e.offsetX + 14 : Math.max(0, e.offsetX - 8 - tip.offsetWidth)) + "px"; /* the labels are left of the canvas */
    tip.style.top = (below ? e.offsetY + 12 : Math.max(0, e.offsetY - 8 - tip.offsetHeight)) + "px";
  }
  /* a drag selects a stretch (its totals in the panel; F zooms to it), as in Perfetto; Ctrl+drag zooms to it */
  function tAt(x) { return TL.view[0] + x / cv.clientWidth * (TL.view[1] - TL.view[0]); }
  cv.addEventListener("mousedown", function (e) { if (e.button === 0) down = e.offsetX; });
  window.addEventListener("mouseup", function (e) { /* on the window: a drag may end past the canvas */
    if (down === null) return;
    var W = cv.clientWidth, x = Math.max(0, Math.min(W, e.clientX - cv.getBoundingClientRect().left - cv.clientLeft)), a = tAt(Math.min(x, down)), z = tAt(Math.max(x, down));
    if (Math.abs(x - down) > Math.max(3, 0.005 * W)) {
      TL.drag = null;
      if (e.ctrlKey || e.metaKey) setView(a, z);
      else { TL.sel = {lo: a, hi: z}; TL.pinned = null; TL.cur = null; drawTimeline(); }
    } else if (e.target === cv) { TL.pinned = hit(e.offsetX, e.offsetY); TL.sel = null; TL.drag = null; drawTimeline(); }
    down = null;
  });
  cv.addEventListener("wheel", function (e) {
    e.preventDefault(); var W = cv.clientWidth, span = TL.view[1] - TL.view[0];
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) { panBy((e.deltaX || e.deltaY) / W * span * 0.5); return; }
    zoomAbout(e.offsetX / W, e.deltaY > 0 ? 1.25 : 0.8);
  });
  cv.addEventListener("dblclick", function () { TL.pinned = null; setStep(TL.step); });
  cv.addEventListener("mousemove", function (e) {
    TL.pointer = e.offsetX;
    if (down !== null && (e.buttons & 1) && Math.abs(e.offsetX - down) > 3) { TL.drag = [tAt(Math.min(e.offsetX, down)), tAt(Math.max(e.offsetX, down))]; drawTimeline(); }
    var h = hit(e.offsetX, e.offsetY), same = h && TL.hover && h.F === TL.hover.F && h.k === TL.hover.k;
    if (!same && (h || TL.hover)) { TL.hover = h; TL.flow = null; drawTimeline(); }
    if (h) { tip.textContent = tipText(h); tip.className = "tl-tip on"; place(e); }
    else { var mh = memHit(e.offsetX, e.offsetY); if (mh) { tip.textContent = memTip(mh); tip.className = "tl-tip on"; place(e); } else tip.className = "tl-tip"; }
  });
  cv.addEventListener("mouseleave", function () { TL.pointer = null; tip.className = "tl-tip"; if (TL.hover) { TL.hover = null; drawTimeline(); } });
  window.addEventListener("resize", drawTimeline);
  document.addEventListener("keydown", timelineKeys);
  window.ftTimeline = {TL: TL, setView: setView, jumpTo: jumpTo, totals: totals, setStep: setStep,
    mem: function () { var W = TL.canvas.clientWidth; return TL.tracks.filter(function (T) { return T.mem; }).map(function (T) {
      var i = TL.rows.findIndex(function (r) { return r.track === T; }); return {label: T.label, device: T.pid, rank: T.file.rank, row: i, n: T.mem.n, peak: memPeak(T, W)}; }); },
    memTip: function (px, py) { var h = memHit(px, py); return h ? memTip(h) : null; }, slicePos: function (g, f, k) { var G = TL.groups[g], p = slicePos(G, G.files[f], k, TL.canvas.clientWidth); return {x: p.x, x1: p.x1, y: p.y}; },
    find: function (g, name) { var G = TL.groups[g], out = []; G.files.forEach(function (F, fi) { for (var k = 0; k < F.name.length; k++) if (G.names[F.name[k]] === name) out.push([fi, k]); }); return out; }};
  viewInit(window.ftTimeline); /* tl_view.js: axis, folds and pins, legend, busy strip; its hook functions */
  done("timeline");
}


/* what draws over the slices (tl_draw.js calls it): the drag's or the selection's stretch, the
   search's current match framed; then the panel and the follow button follow the selection */
function timelineOverlay(g, W, H) {
  var S = TL.drag || (TL.sel ? [TL.sel.lo, TL.sel.hi] : null), span = TL.view[1] - TL.view[0];
  if (S) {
    var x0 = (S[0] - TL.view[0]) * W / span, x1 = (S[1] - TL.view[0]) * W / span;
    g.fillStyle = "rgba(37,99,235,0.12)"; g.fillRect(x0, 0, x1 - x0, H);
    g.fillStyle = "#2563eb"; g.fillRect(Math.round(x0), 0, 1, H); g.fillRect(Math.round(x1), 0, 1, H);
  }
  if (TL.cur) { var p = slicePos(TL.cur.G, TL.cur.F, TL.cur.k, W); g.strokeStyle = "#2563eb"; g.lineWidth = 2; g.strokeRect(p.x - 4, p.y - 4, Math.max(1, p.x1 - p.x) + 8, LANE_H + 6); }
  var f = document.getElementById("tl-follow"), pair = TL.pinned ? partner(TL.pinned) : null;
  if (f) { f.disabled = !pair; f.textContent = pair ? "follow the arrow to " + (pair[0] === TL.pinned.k ? "the kernel" : "the launch") + " (])" : "follow the arrow (])"; }
  showPanel();
}
/* a slice selected (pinned, in the panel); framed when asked: the view moved to it when it is not
   all in sight (the same zoom, about it; zoomed out to hold it when it is longer), its row scrolled to */
function selectSlice(s, frame) {
  TL.pinned = s; TL.sel = null;
  if (!frame) { drawTimeline(); return; }
  var t0 = s.F.st[s.k] - s.F.shift, t1 = s.F.en[s.k] - s.F.shift, span = TL.view[1] - TL.view[0];
  if (t0 >= TL.view[0] && t1 <= TL.view[1]) drawTimeline();
  else if (t1 - t0 < 0.8 * span) setView((t0 + t1) / 2 - span / 2, (t0 + t1) / 2 + span / 2);
  else { var pad = (t1 - t0) * 0.1; setView(t0 - pad, t1 + pad); }
  var r = TL.canvas.getBoundingClientRect(), y = s.T.y + s.F.lane[s.k] * LANE_H;
  if (r.top + y < 0 || r.top + y > window.innerHeight - 40) window.scrollTo(0, Math.max(0, window.scrollY + r.top + y - 120));
}
function followArrow() { /* the selected slice's launch arrow followed: its other end selected and framed */
  var s = TL.pinned, pair = s ? partner(s) : null; if (!pair) return false;
  selectSlice(sliceAt(s.G, s.F, pair[0] === s.k ? pair[1] : pair[0]), true);
  return true;
}
/* the view's span times factor, the time at fraction f of the width kept in place (wheel, W/S) */
function zoomAbout(f, factor) {
  var span = TL.view[1] - TL.view[0], c = TL.view[0] + f * span, n = span * factor;
  setView(c - f * n, c - f * n + n);
}
function panBy(dt) { setView(TL.view[0] + dt, TL.view[1] + dt); } /* the view moved by dt (shift+wheel, A/D) */
function zoomToSelection() {
  if (TL.sel) setView(TL.sel.lo, TL.sel.hi);
  else if (TL.pinned) { var F = TL.pinned.F, k = TL.pinned.k, d = Math.max(F.en[k] - F.st[k], 100); setView(F.st[k] - F.shift - d / 10, F.en[k] - F.shift + d / 10); }
}
/* W/S zoom in/out about the pointer (else the middle), A/D pan, F zoom to the selection, ] or [
   follow the arrow, Escape clears the selection; none while typing in a field */
function timelineKeys(e) {
  var t = e.target, tag = t && t.tagName;
  if (e.ctrlKey || e.metaKey || e.altKey || tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (t && t.isContentEditable) || !TL.canvas) return;
  var k = e.key.length === 1 ? e.key.toLowerCase() : e.key, span = TL.view[1] - TL.view[0], W = TL.canvas.clientWidth;
  if (k === "w" || k === "s") {
    zoomAbout(TL.pointer !== null && TL.pointer !== undefined ? TL.pointer / W : 0.5, k === "w" ? 0.8 : 1.25);
  } else if (k === "a" || k === "d") panBy((k === "a" ? -0.2 : 0.2) * span);
  else if (k === "f") zoomToSelection();
  else if (k === "]" || k === "[") followArrow();
  else if (k === "Escape") clearSelection();
  else return;
  e.preventDefault();
}
function clearSelection() { TL.pinned = null; TL.sel = null; TL.cur = null; TL.drag = null; SEARCH.pos = 0; searchShow(); drawTimeline(); }
