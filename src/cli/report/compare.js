/* Two groups compared (diff -f html, report --a --b): the kernels slower on B, and the outline flags of the timeline's device work. */

/* Kernel names whose time per call on B is over 1.1 times A's (name -> that ratio), from the
   page's own kernels tables of both groups (every kernel, whatever diff's -n kept); a name on one
   side only is not slower. Made at the first call. */
var SLOWER = null;
function slowerKernels() {
  if (SLOWER) return SLOWER;
  SLOWER = Object.create(null); /* keyed by any name */
  if (!D.b) return SLOWER;
  function perCall(T) { /* name -> [total us, calls] (a kernels table may hold a name once per rank) */
    var m = Object.create(null);
    T.kernels.rows.forEach(function (r) {
      if (typeof r.name !== "string" || typeof r.total_us !== "number" || typeof r.calls !== "number") return;
      var x = m[r.name] || (m[r.name] = [0, 0]); x[0] += r.total_us; x[1] += r.calls;
    });
    return m;
  }
  var a = perCall(TABLES), b = perCall(TABLES_B);
  Object.keys(b).forEach(function (n) {
    var x = a[n], y = b[n];
    if (!x || !x[1] || !y[1] || !(x[0] > 0)) return;
    var ratio = (y[0] / y[1]) / (x[0] / x[1]);
    if (ratio > 1.1) SLOWER[n] = ratio;
  });
  return SLOWER;
}
/* a table's row marked: a regressed op (its name), a slower kernel (its name, or a diff kernels
   row's kernel), a diff kernels row under a regressed op */
function rowMarked(r) {
  var reg = regressions(), slow = slowerKernels();
  return (typeof r.name === "string" && (reg[r.name] === true || slow[r.name] !== undefined)) ||
    (typeof r.kernel === "string" && slow[r.kernel] !== undefined) || (typeof r.op === "string" && typeof r.kernel === "string" && reg[r.op] === true);
}
/* Each file's device work outlined in red (F.out[k] = 1, drawn by drawTimeline): a slice of a
   stream row whose name is a slower kernel, or whose op (by External id: the first op slice that
   carries it, as the tooltip's) is a regressed one. One pass over the slices a file, typed arrays;
   only with two groups and something to mark. Then the timeline is drawn again. */
function outlineSlower() {
  if (!TL.canvas || TL.groups.length < 2) return;
  var slow = slowerKernels(), reg = TL.regress || {}, anyReg = Object.keys(reg).length > 0;
  if (!anyReg && !Object.keys(slow).length) return;
  var cls = new Uint8Array(TL.tracks.length);
  TL.tracks.forEach(function (T, i) { cls[i] = T.cls; });
  TL.groups.forEach(function (G) {
    var named = new Uint8Array(G.names.length), op = new Uint8Array(G.names.length);
    G.names.forEach(function (n, id) { if (slow[n] !== undefined) named[id] = 1; if (reg[n] === true) op[id] = 1; });
    G.files.forEach(function (F) {
      var n = F.st.length, out = new Uint8Array(n), any = 0, ext = null, first = null, k;
      if (anyReg) { /* External id -> whether its first op is regressed */
        ext = column(F.cols.x, n, true); first = new Map();
        for (k = 0; k < n; k++) if (ext[k] && cls[F.track[k]] === 0 && !first.has(ext[k])) first.set(ext[k], op[F.name[k]]);
      }
      for (k = 0; k < n; k++) {
        if (cls[F.track[k]] !== 2) continue;
        if (named[F.name[k]] || (ext && ext[k] && first.get(ext[k]) === 1)) { out[k] = 1; any++; }
      }
      F.out = any ? out : null;
    });
  });
  drawTimeline();
}
/* the test hook: group g's outlined device slices, as [file, slice, name] */
function outlinedSlices(g) {
  var G = TL.groups[g], res = [];
  if (G) G.files.forEach(function (F, fi) { if (F.out) for (var k = 0; k < F.out.length; k++) if (F.out[k]) res.push([fi, k, G.names[F.name[k]]]); });
  return res;
}
