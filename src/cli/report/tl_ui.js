/* The timeline's controls: search, steps, mouse, the test hook (window.ftTimeline). */
function startTimeline() {
  var b = document.getElementById("timeline-body"), bar = el("div", "tl-bar");
  var search = el("input"); search.id = "tl-search"; search.placeholder = "search names"; bar.appendChild(search);
  var step = el("select"); step.id = "tl-step"; bar.appendChild(step);
  var clock = el("span", "muted"); clock.id = "tl-clock"; bar.appendChild(clock); b.appendChild(bar);
  buildGroup("A", D); if (D.b) buildGroup("B", D.b); performance.mark("ft-built");
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
  TL.canvas = cv; TL.labels = lab; layout();
  if (!TL.tracks.length) b.appendChild(el("p", "muted", "no slices in these traces"));
  fullView();
  search.addEventListener("input", function () {
    var s = search.value.toLowerCase(); TL.match = s ? {} : null;
    TL.groups.forEach(function (G) { G.names.forEach(function (n, id) {
      var on = s && n.toLowerCase().indexOf(s) >= 0; G.flag[id] = (G.flag[id] & ~1) | (on ? 1 : 0); if (on) TL.match[n] = true; }); });
    drawTimeline();
  });
  step.addEventListener("change", function () { setStep(Number(step.value)); });
  var down = null;
  function place(e) { /* the tip beside the pointer, above it near the bottom, left of it near the right edge */
    var below = e.offsetY + 12 + tip.offsetHeight <= Math.max(TL.height, 120), right = e.offsetX + 14 + tip.offsetWidth <= cv.clientWidth;
    tip.style.left = cv.offsetLeft + (right ? e.offsetX + 14 : Math.max(0, e.offsetX - 8 - tip.offsetWidth)) + "px"; /* the labels are left of the canvas */
    tip.style.top = (below ? e.offsetY + 12 : Math.max(0, e.offsetY - 8 - tip.offsetHeight)) + "px";
  }
  cv.addEventListener("mousedown", function (e) { down = e.offsetX; });
  cv.addEventListener("mouseup", function (e) {
    if (down === null) return; var W = cv.clientWidth, span = TL.view[1] - TL.view[0];
    if (Math.abs(e.offsetX - down) > 0.01 * W) { var l = Math.min(e.offsetX, down), r = Math.max(e.offsetX, down); setView(TL.view[0] + l / W * span, TL.view[0] + r / W * span); }
    else { var h = hit(e.offsetX, e.offsetY); TL.pinned = h; drawTimeline(); }
    down = null;
  });
  cv.addEventListener("wheel", function (e) {
    e.preventDefault(); var W = cv.clientWidth, span = TL.view[1] - TL.view[0];
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) { var dx = (e.deltaX || e.deltaY) / W * span * 0.5; setView(TL.view[0] + dx, TL.view[1] + dx); return; }
    var f = e.offsetX / W, c = TL.view[0] + f * span, s = span * (e.deltaY > 0 ? 1.25 : 0.8);
    setView(c - f * s, c - f * s + s);
  });
  cv.addEventListener("dblclick", function () { TL.pinned = null; setStep(TL.step); });
  cv.addEventListener("mousemove", function (e) {
    var h = hit(e.offsetX, e.offsetY), same = h && TL.hover && h.F === TL.hover.F && h.k === TL.hover.k;
    if (!same && (h || TL.hover)) { TL.hover = h; TL.flow = null; drawTimeline(); }
    if (h) { tip.textContent = tipText(h); tip.className = "tl-tip on"; place(e); }
    else { var mh = memHit(e.offsetX, e.offsetY); if (mh) { tip.textContent = memTip(mh); tip.className = "tl-tip on"; place(e); } else tip.className = "tl-tip"; }
  });
  cv.addEventListener("mouseleave", function () { tip.className = "tl-tip"; if (TL.hover) { TL.hover = null; drawTimeline(); } });
  window.addEventListener("resize", drawTimeline);
  window.ftTimeline = {TL: TL, setView: setView, jumpTo: jumpTo,
    mem: function () { var W = TL.canvas.clientWidth; return TL.tracks.filter(function (T) { return T.mem; }).map(function (T) {
      var i = TL.rows.findIndex(function (r) { return r.track === T; }); return {label: T.label, device: T.pid, rank: T.file.rank, row: i, n: T.mem.n, peak: memPeak(T, W)}; }); },
    memTip: function (px, py) { var h = memHit(px, py); return h ? memTip(h) : null; }, slicePos: function (g, f, k) { var G = TL.groups[g], p = slicePos(G, G.files[f], k, TL.canvas.clientWidth); return {x: p.x, x1: p.x1, y: p.y}; },
    find: function (g, name) { var G = TL.groups[g], out = []; G.files.forEach(function (F, fi) { for (var k = 0; k < F.name.length; k++) if (G.names[F.name[k]] === name) out.push([fi, k]); }); return out; }};
  viewInit(window.ftTimeline); /* tl_view.js: axis, folds and pins, legend, busy strip; its hook functions */
  done("timeline");
}

