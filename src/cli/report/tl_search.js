/* The timeline's search: names matched in the name table, then counted in the id column; the count, next / previous in time order, the first matches listed. */
/* A match's place in time order: its start on the view's clock, then group, file and index.
   Each step (next, previous, the list) is one pass over the name ids (typed arrays): a few ms at
   1 M slices; matching the text is a pass over the distinct names only. */
var SEARCH = {text: "", n: 0, pos: 0, LIST: 50};
function matchBefore(t, g, f, k, c) { return t < c[0] || t === c[0] && (g < c[1] || g === c[1] && (f < c[2] || f === c[2] && k < c[3])); }
function eachMatch(fn) {
  TL.groups.forEach(function (G, g) { var fl = G.flag; G.files.forEach(function (F, f) {
    var nm = F.name, st = F.st, sh = F.shift;
    for (var k = 0; k < nm.length; k++) if (fl[nm[k]] & 1) fn(st[k] - sh, g, f, k);
  }); });
}
function searchSet(text) {
  var s = text.toLowerCase();
  TL.match = s ? {} : null; TL.cur = null; SEARCH.text = s; SEARCH.n = 0; SEARCH.pos = 0;
  TL.groups.forEach(function (G) {
    if (!G.lower) G.lower = G.names.map(function (n) { return n.toLowerCase(); });
    for (var id = 0; id < G.names.length; id++) {
      var on = s !== "" && G.lower[id].indexOf(s) >= 0;
      G.flag[id] = (G.flag[id] & ~1) | (on ? 1 : 0); if (on) TL.match[G.names[id]] = true;
    }
  });
  if (s) eachMatch(function () { SEARCH.n++; });
  searchShow();
}
/* the next (dir 1) or previous (-1) match from the current one (none: from the view's start), wrapping */
function searchStep(dir) {
  if (!SEARCH.n) return null;
  var cur = TL.cur, c = cur ? [cur.F.st[cur.k] - cur.F.shift, TL.groups.indexOf(cur.G), cur.G.files.indexOf(cur.F), cur.k] : [TL.view[0], -1, -1, -1];
  var b = [0, 0, 0, 0], e = [0, 0, 0, 0], nb = false, ne = false, nlt = 0; /* the best one, the one it wraps to: no array a match */
  eachMatch(function (t, g, f, k) {
    var lt = matchBefore(t, g, f, k, c); if (lt) nlt++;
    if (dir > 0) {
      if (!lt && !(t === c[0] && g === c[1] && f === c[2] && k === c[3]) && (!nb || matchBefore(t, g, f, k, b))) { b[0] = t; b[1] = g; b[2] = f; b[3] = k; nb = true; }
      if (!ne || matchBefore(t, g, f, k, e)) { e[0] = t; e[1] = g; e[2] = f; e[3] = k; ne = true; } /* the first */
    } else {
      if (lt && (!nb || !matchBefore(t, g, f, k, b))) { b[0] = t; b[1] = g; b[2] = f; b[3] = k; nb = true; }
      if (!ne || !matchBefore(t, g, f, k, e)) { e[0] = t; e[1] = g; e[2] = f; e[3] = k; ne = true; } /* the last */
    }
  });
  /* its place: the matches before it are those up to the current one (next) or before it less one (previous) */
  return searchGo(nb ? b : e, !nb ? (dir > 0 ? 1 : SEARCH.n) : dir > 0 ? nlt + (cur ? 2 : 1) : nlt);
}
function searchGo(m, pos) { /* m: [t, group, file, index]: made current, selected and framed; pos: its place when known */
  var G = TL.groups[m[1]], F = G.files[m[2]];
  if (!pos) { pos = 1; eachMatch(function (t, g, f, k) { if (matchBefore(t, g, f, k, m)) pos++; }); }
  SEARCH.pos = pos; TL.cur = sliceAt(G, F, m[3]);
  selectSlice(TL.cur, true);
  searchShow();
  return pos;
}
function searchList(N) { /* the first N matches in time order */
  var out = [];
  eachMatch(function (t, g, f, k) {
    if (out.length === N && !matchBefore(t, g, f, k, out[N - 1])) return;
    var i = out.length; while (i > 0 && matchBefore(t, g, f, k, out[i - 1])) i--;
    out.splice(i, 0, [t, g, f, k]); if (out.length > N) out.pop();
  });
  return out;
}
function searchShow() {
  var c = document.getElementById("tl-count"), list = document.getElementById("tl-matches"); if (!c) return;
  c.textContent = !SEARCH.text ? "" : !SEARCH.n ? "no match" : SEARCH.pos ? SEARCH.pos + " of " + SEARCH.n : SEARCH.n + (SEARCH.n === 1 ? " match" : " matches");
  if (list.getAttribute("data-text") === SEARCH.text) { mark(); return; }
  list.setAttribute("data-text", SEARCH.text); list.textContent = "";
  if (!SEARCH.n) return;
  var first = searchList(SEARCH.LIST);
  first.forEach(function (m, i) {
    var G = TL.groups[m[1]], F = G.files[m[2]], T = TL.tracks[F.track[m[3]]];
    var r = el("div", "match", (i + 1) + ". " + G.names[F.name[m[3]]] + "  " + fmt(m[0] / 1000, "t_us") + "  " + (TL.groups.length > 1 ? G.label + " " : "") + "rank " + F.rank + ", " + T.label);
    r.m = m; r.addEventListener("click", function () { searchGo(m, i + 1); });
    list.appendChild(r);
  });
  if (SEARCH.n > first.length) list.appendChild(el("div", "muted", "the first " + first.length + " of " + SEARCH.n + " in time order; Enter and Shift+Enter step through all"));
  mark();
  function mark() { Array.prototype.forEach.call(list.children, function (r) { var m = r.m;
    r.className = m ? (TL.cur && TL.groups[m[1]] === TL.cur.G && TL.cur.G.files[m[2]] === TL.cur.F && m[3] === TL.cur.k ? "match on" : "match") : r.className; }); }
}
