/* The Advice panel: advise's findings, ranked; a row frames its first occurrence on the timeline. */
/* the Advice panel: advise's findings, ranked; a row frames its first occurrence on the timeline */
part(function () {
  var b = document.getElementById("advice-body"), A = isRow(D.advice) ? D.advice : {findings: []};
  var list = Array.isArray(A.findings) ? A.findings.filter(isRow) : [];
  if (typeof A.error === "string") b.appendChild(el("p", "warn", "advise: " + A.error));
  if (!list.length) { b.appendChild(el("p", "muted", "no finding above its threshold")); done("advice"); return; }
  var t = el("table"), h = el("tr"), body = el("tbody");
  ["#", "rule", "rank", "cost/step", "share %", "count", "where", "what", "suggestion"].forEach(function (c, i) { h.appendChild(el("th", i >= 6 || i === 1 ? "s" : "", c)); });
  var head = el("thead"); head.appendChild(h); t.appendChild(head); t.appendChild(body);
  list.forEach(function (f, i) {
    var tr = el("tr", f.at ? "go" : ""); tr.setAttribute("data-rule", String(f.rule));
    [String(i + 1), String(f.rule), String(f.rank), fmt(f.cost_us, "cost_us"), fmt(100 * f.share, "share_pct"), String(f.count), String(f.where), String(f.what), String(f.suggestion)].forEach(function (v, c) {
      tr.appendChild(el("td", c >= 7 ? "w" : c === 1 || c === 6 ? "s" : "", v)); });
    if (isRow(f.at)) tr.addEventListener("click", function () {
      if (!TL.canvas) return;
      Array.prototype.forEach.call(body.children, function (r) { r.classList.remove("on"); }); tr.classList.add("on");
      var F = D.tl && D.tl.files[f.at.file]; if (!F) return;
      jumpTo(0, f.at.file, F.offset_ns + f.at.t_ns, f.at.dur_ns); /* as the page's slices: the file's offset plus ns from its first slice */
    });
    body.appendChild(tr);
  });
  var sc = el("div", "scroll"); sc.appendChild(t); b.appendChild(sc);
  done("advice");
});
