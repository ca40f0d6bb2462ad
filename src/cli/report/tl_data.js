/* The timeline's model: columns inflated, groups of files on one clock, tracks, memory tracks. */

/* The timeline: every slice of every rank. A group (A, B) is files on one clock (or each on
   its own: D.tl.clock says why); a track is a row of the trace (CPU thread ops or runtime
   calls, a device stream), split into lanes by nesting; each lane keeps levels of detail,
   its slices merged where they are closer than a pixel at that level, so a frame draws
   about one block per pixel whatever the number of slices. */
var LANE_H = 15, HEAD_H = 16, GUTTER = 190, MEM_H = 44, MEM_COLS = ["t", "a", "r", "b", "w", "k"];
/* at most this many lanes a track (by class: ops, runtime, stream, GPU ranges), the deeper slices
   drawn in the last: ranges projected onto the device overlap without nesting and stacked ~60 deep */
var MAX_LANES = [32, 32, 32, 6];
var TL = {groups: [], tracks: [], view: [0, 1], match: null, regress: {}, hover: null, pinned: null, step: -1, flow: null};
/* a column as report_events.c writes it: base64 of gzip'd zigzag varints */
var B64 = new Uint8Array(128);
for (var b64i = 0; b64i < 64; b64i++) B64["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".charCodeAt(b64i)] = b64i;
function inflate(text) { /* Uint8Array.fromBase64 where the browser has it (native, no binary string), else by a table */
  var u;
  if (Uint8Array.fromBase64) u = Uint8Array.fromBase64(text);
  else {
    var n = text.length, pad = n && text[n - 1] === "=" ? (text[n - 2] === "=" ? 2 : 1) : 0, j = 0;
    u = new Uint8Array(n / 4 * 3 - pad);
    for (var i = 0; i < n; i += 4) {
      var v = B64[text.charCodeAt(i)] << 18 | B64[text.charCodeAt(i + 1)] << 12 | B64[text.charCodeAt(i + 2)] << 6 | B64[text.charCodeAt(i + 3)];
      u[j++] = v >> 16; if (j < u.length) u[j++] = v >> 8 & 255; if (j < u.length) u[j++] = v & 255;
    }
  }
  return new Response(new Blob([u]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
}
function column(buf, n, sum, Type) { /* n values (into a Type array, Float64Array by default); sum: each the running total */
  var b = new Uint8Array(buf), o = new (Type || Float64Array)(n), p = 0, acc = 0;
  for (var i = 0; i < n; i++) {
    var c = b[p++], v = c & 127;
    if (c & 128) { /* up to 4 bytes in 32-bit integers, longer ones in doubles */
      c = b[p++]; v |= (c & 127) << 7;
      if (c & 128) { c = b[p++]; v |= (c & 127) << 14;
        if (c & 128) { c = b[p++]; v |= (c & 127) << 21;
          if (c & 128) { var mul = 268435456; do { c = b[p++]; v += (c & 127) * mul; mul *= 128; } while (c & 128);
            v = v % 2 ? -(v + 1) / 2 : v / 2; o[i] = sum ? (acc += v) : v; continue; } } }
    }
    v = (v >>> 1) ^ -(v & 1);
    o[i] = sum ? (acc += v) : v;
  }
  return o;
}
function inflateAll(groups) { /* every file's columns, decoded into f.cols */
  var jobs = [];
  groups.forEach(function (data) { data.tl.files.forEach(function (f) {
    f.cols = {};
    ["s", "d", "n", "c", "x", "g"].forEach(function (key) { jobs.push(inflate(f[key]).then(function (buf) { f.cols[key] = buf; f[key] = null; })); /* the base64 text: no longer needed */ });
    (Array.isArray(f.mem) ? f.mem : []).forEach(function (M) { /* each device's memory (report_memory.c) */
      if (!isRow(M)) return; M.cols = {};
      MEM_COLS.forEach(function (key) { if (typeof M[key] === "string") jobs.push(inflate(M[key]).then(function (buf) { M.cols[key] = buf; M[key] = null; })); });
    });
  }); });
  return Promise.all(jobs);
}
var IOTA = new Int32Array(0);
function iota(n) { /* 0, 1, .. n - 1 at least: one array whose views are the slice indexes of lanes in file order */
  if (IOTA.length < n) { IOTA = new Int32Array(Math.max(n, 2 * IOTA.length)); for (var i = 0; i < IOTA.length; i++) IOTA[i] = i; }
  return IOTA;
}
function buildGroup(label, data) {
  var tl = data.tl, G = {label: label, files: [], shift: 0, end: 0, names: tl.names, data: data,
    flag: new Uint8Array(tl.names.length), col: [[], [], [], []]};
  tl.files.forEach(function (f, fi) {
    var n = 0; f.rows.forEach(function (r) { n += r[3]; });
    var st = column(f.cols.s, n, false), en = column(f.cols.d, n, false), lane = new Uint8Array(n), k = 0, stack = new Int32Array(64);
    var F = {rank: f.rank, path: data.files[fi] ? data.files[fi].file : "", st: st, en: en, name: column(f.cols.n, n, false, Int32Array), corr: null, ext: null, cols: f.cols, track: new Int32Array(n), lane: lane, g: column(f.cols.g, 7 * f.gn, false), byCorr: null, opByExt: null, tracks: [], busy: []};
    for (var r = 0, track = F.track; r < f.rows.length; r++) {
      var row = f.rows[r], cls = row[0], pid = row[1], tid = row[2], cnt = row[3], t = f.offset_ns, sp = 0, depth = 0, deep = 0, k0 = k, ti = TL.tracks.length, maxL = MAX_LANES[cls] || 32;
      for (var j = 0, mono = true, last = -Infinity; j < cnt; j++, k++) { /* nesting: a slice's depth is that of the open slices around it */
        t += st[k]; st[k] = t; en[k] += t; /* decoded in place: gaps to starts, lengths to ends */
        if (en[k] < last) mono = false; else last = en[k];
        while (sp && en[stack[sp - 1]] <= t) sp--;
        lane[k] = sp < maxL ? sp : maxL - 1; if (sp > deep) deep = sp; /* deeper than the bound: in the last lane */
        if (lane[k] > depth) depth = lane[k];
        if (sp < 63) stack[sp++] = k;
        track[k] = ti;
      }
      var lanes = [], end = G.end;
      if (!depth && cnt && mono) { /* one lane of the file's slices k0.. in order, ends sorted (a stream, runtime calls): views, no copies */
        lanes.push({idx: iota(k0 + cnt).subarray(k0, k0 + cnt), s: st.subarray(k0, k0 + cnt), e: en.subarray(k0, k0 + cnt), lv: {}});
        if (last > end) end = last;
      } else { /* each slice copied into its lane */
        var counts = new Int32Array(depth + 1);
        for (k = k0; k < k0 + cnt; k++) counts[lane[k]]++;
        for (var d = 0; d <= depth && cnt; d++) lanes.push({idx: new Int32Array(counts[d]), s: new Float64Array(counts[d]), e: new Float64Array(counts[d]), lv: {}});
        counts.fill(0);
        for (k = k0; k < k0 + cnt; k++) {
          var L = lanes[lane[k]], c = counts[lane[k]]++, e = en[k];
          L.idx[c] = k; L.s[c] = st[k]; L.e[c] = c && L.e[c - 1] > e ? L.e[c - 1] : e; /* ends kept sorted for the search */
          if (e > end) end = e;
        }
      }
      G.end = end;
      for (d = 0; d < lanes.length; d++) levels(F, lanes[d]);
      var T = {group: G, file: F, cls: cls, pid: pid, tid: tid, lanes: lanes, deep: cnt ? deep + 1 : 0, label: trackLabel(f, cls, pid, tid),
        note: deep + 1 > lanes.length && cnt ? (deep + 1) + " deep, last " + (deep + 2 - lanes.length) + " merged" : ""};
      TL.tracks.push(T); F.tracks.push(T);
    }
    G.end = Math.max(G.end, memTracks(G, F, f));
    busyTracks(G, F, f, data);
    queueTracks(G, F, f);
    delete f.cols.s; delete f.cols.d; delete f.cols.n; delete f.cols.g; /* decoded: only c and x (decoded when first needed) are kept */
    G.files.push(F);
  });
  TL.groups.push(G);
  return G;
}
/* A device's memory (file f's "mem"): a track under the device's streams (after its last one,
   else after the file's tracks); its samples at page times (t), allocated (a) and reserved (r)
   after each operation, the operation's bytes (b) and the page's name ids + 1 of its op (w) and
   call (k). Returns the last sample's time. */
function memTracks(G, F, f) {
  var end = 0;
  (Array.isArray(f.mem) ? f.mem : []).forEach(function (M) {
    var n = isRow(M) && M.cols && typeof M.n === "number" ? M.n : 0;
    if (!n || MEM_COLS.some(function (key) { return !M.cols[key]; })) return;
    var t = column(M.cols.t, n, true), a = column(M.cols.a, n, true), r = column(M.cols.r, n, true), top = 1;
    for (var i = 0; i < n; i++) { t[i] += f.offset_ns; if (r[i] > top) top = r[i]; if (a[i] > top) top = a[i]; }
    var pk = isRow(M.peak) && M.peak.i >= 0 && M.peak.i < n ? M.peak.i : 0;
    for (i = 0; i < n; i++) if (a[i] > a[pk]) pk = i; /* the first sample at the highest allocated */
    var T = {group: G, file: F, cls: 4, pid: M.device, tid: -1, lanes: [], label: "GPU " + M.device + " memory",
      mem: {n: n, t: t, a: a, r: r, b: column(M.cols.b, n, false), w: column(M.cols.w, n, false, Int32Array), k: column(M.cols.k, n, false, Int32Array), top: top, peak: pk}};
    var at = -1;
    F.tracks.forEach(function (U, j) { if (U.cls >= 2 && U.cls <= 4 && U.pid === M.device) at = j; });
    if (at < 0) F.tracks.push(T); else F.tracks.splice(at + 1, 0, T);
    TL.tracks.push(T);
    if (t[n - 1] > end) end = t[n - 1];
  });
  return end;
}
function fmtBytes(v) { return (v < 0 ? "-" : "") + fmt(Math.abs(v), "bytes"); }
function memY(T, v) { var M = T.mem; return T.y + T.h - 2 - v / M.top * (T.h - 6); }
/* the allocated bytes as an area and the reserved as a step line, each pixel column the
   highest value in effect during it (so a spike narrower than a pixel still shows); the peak
   a red mark with its size */
function drawMem(g, T, W, q) {
  var M = T.mem, G = T.group, t0 = TL.view[0] + T.file.shift, n = M.n, base = T.y + T.h - 2;
  g.globalAlpha = 1;
  var i = lower(M.t, t0) - 1, ca = i >= 0 ? M.a[i] : 0, cr = i >= 0 ? M.r[i] : 0, line = [];
  g.fillStyle = "rgba(147,51,234,0.45)";
  for (var x = 0; x < W; x++) {
    var te = t0 + (x + 1) * q, ma = ca, mr = cr, any = i >= 0;
    while (i + 1 < n && M.t[i + 1] < te) { i++; any = true; ca = M.a[i]; cr = M.r[i]; if (ca > ma) ma = ca; if (cr > mr) mr = cr; }
    if (!any) continue;
    if (ma > 0) { var ya = memY(T, ma); g.fillRect(x, ya, 1, base - ya); }
    line.push(x, memY(T, mr));
  }
  if (line.length) {
    g.strokeStyle = "#6b21a8"; g.lineWidth = 1; g.beginPath(); g.moveTo(line[0], line[1]);
    for (var j = 0; j < line.length; j += 2) { g.lineTo(line[j], line[j + 1]); g.lineTo(line[j] + 1, line[j + 1]); }
    g.stroke();
  }
  g.fillStyle = "#6b7280"; g.fillText(fmtBytes(M.top), 2, T.y + 2); /* the scale: the track's top */
  var p = memPeak(T, W);
  if (p.x >= -2 && p.x <= W + 2) {
    g.fillStyle = "#d1242f"; g.fillRect(p.px - 1, T.y + 2, 2, base - T.y - 2);
    g.beginPath(); g.moveTo(p.px - 5, T.y + 1); g.lineTo(p.px + 5, T.y + 1); g.lineTo(p.px, T.y + 7); g.fill();
    g.fillText("peak " + fmtBytes(p.allocated), p.px + 5, T.y + 2);
  }
}
function memPeak(T, W) { /* where the peak's mark is drawn: x (px as drawn: rounded), the page's time, the bytes */
  var M = T.mem, k = M.peak, x = xOf(T.file, M.t[k], W);
  return {x: x, px: Math.round(x), y: T.y, h: T.h, t: M.t[k] - T.file.shift, allocated: M.a[k], reserved: M.r[k], i: k};
}
function memHit(px, py) { /* the memory sample under a point: the one nearest within 3 px, else the one in effect */
  var W = TL.canvas.clientWidth, q = (TL.view[1] - TL.view[0]) / W;
  for (var j = 0; j < TL.tracks.length; j++) {
    var T = TL.tracks[j]; if (!T.mem || py < T.y || py >= T.y + T.h) continue;
    var M = T.mem, t = TL.view[0] + T.file.shift + px * q, lo = lower(M.t, t - 3 * q), best = -1;
    for (var i = lo; i < M.n && M.t[i] <= t + 3 * q; i++) if (best < 0 || Math.abs(M.t[i] - t) < Math.abs(M.t[best] - t)) best = i;
    if (best < 0) best = lower(M.t, t) - 1;
    return best >= 0 ? {T: T, i: best} : null;
  }
  return null;
}
function memTip(h) {
  var T = h.T, M = T.mem, i = h.i, G = T.group, lines = [T.label + ", rank " + T.file.rank];
  lines.push("at " + fmt((M.t[i] - T.file.shift) / 1000, "t_us") + ": allocated " + fmtBytes(M.a[i]) + ", reserved " + fmtBytes(M.r[i]));
  var what = M.b[i] > 0 ? "allocated " + fmtBytes(M.b[i]) : M.b[i] < 0 ? "freed " + fmtBytes(-M.b[i]) : "reserved bytes changed";
  if (M.w[i] > 0 && G.names[M.w[i] - 1] !== undefined) what += " in " + G.names[M.w[i] - 1];
  if (M.k[i] > 0 && G.names[M.k[i] - 1] !== undefined) what += " (call " + G.names[M.k[i] - 1] + ")";
  lines.push(what);
  var k = M.peak; lines.push((k === i ? "this is the peak: " : "peak ") + fmtBytes(M.a[k]) + " at " + fmt((M.t[k] - T.file.shift) / 1000, "t_us"));
  return lines.join("\n");
}

/* A row's name: the trace's thread_name / process_name ("M" events, "threads" and "procs" in the
   file's data) where it has them, else the ids. */
function trackLabel(f, cls, pid, tid) {
  if (!f.tnames) {
    f.tnames = new Map(); f.pnames = new Map();
    (Array.isArray(f.threads) ? f.threads : []).forEach(function (r) { if (Array.isArray(r) && typeof r[2] === "string" && r[2].trim()) f.tnames.set(r[0] + ":" + r[1], r[2].trim()); });
    (Array.isArray(f.procs) ? f.procs : []).forEach(function (r) { if (Array.isArray(r) && typeof r[1] === "string" && r[1].trim()) f.pnames.set(String(r[0]), r[1].trim()); });
  }
  var tn = f.tnames.get(pid + ":" + tid), pn = f.pnames.get(String(pid)), s;
  var thread = tn || (pn ? pn + " " : "") + "thread " + tid; /* torch names a device's process "python3": the device's rows keep "GPU N" */
  if (cls === 0) s = thread + " ops";
  else if (cls === 1) s = thread + " runtime";
  else if (cls === 2) s = "GPU " + pid + " " + (tn || "stream " + tid);
  else s = "GPU " + pid + " ranges";
  return s;
}
/* Each device's busy share (report.c's "timeline" bins, per mille over stats' span of the file, at
   "busy_ns" on the page's clock) as a counter track after the device's streams. */
function busyTracks(G, F, f, data) {
  if (!Array.isArray(f.busy_ns) || !Array.isArray(data.timeline)) return;
  var path = F.path;
  data.timeline.forEach(function (e) {
    if (!isRow(e) || e.file !== path || !Array.isArray(e.busy) || !e.busy.length) return;
    var B = {t0: f.busy_ns[0], span: f.busy_ns[1], bins: Float32Array.from(e.busy, function (v) { return v / 1000; }), pct: e.busy_pct};
    F.busy.push({device: e.device, B: B});
    var T = {group: G, file: F, cls: 5, pid: e.device, tid: -1, lanes: [], label: "GPU " + e.device + " busy %", busy: B};
    var at = -1;
    F.tracks.forEach(function (U, j) { if (U.cls >= 2 && U.cls <= 5 && U.pid === e.device) at = j; });
    if (at < 0) F.tracks.push(T); else F.tracks.splice(at + 1, 0, T);
    TL.tracks.push(T);
  });
}
/* Each stream's queue length (report_events.c's "queue": the most launched-not-started work in each
   busy bin) as a counter track under the stream, when anything was queued. */
function queueTracks(G, F, f) {
  if (!Array.isArray(f.busy_ns) || !Array.isArray(f.queue)) return;
  f.queue.forEach(function (q) {
    if (!Array.isArray(q) || !Array.isArray(q[2])) return;
    var top = 0; q[2].forEach(function (v) { if (v > top) top = v; });
    if (!top) return;
    var B = {t0: f.busy_ns[0], span: f.busy_ns[1], bins: Float32Array.from(q[2], function (v) { return v / top; }), top: top + " queued", color: "rgba(217,119,6,0.7)"};
    var T = {group: G, file: F, cls: 6, pid: q[0], tid: q[1], lanes: [], label: "GPU " + q[0] + " stream " + q[1] + " queue", busy: B};
    var at = F.tracks.findIndex(function (U) { return U.cls === 2 && U.pid === q[0] && U.tid === q[1]; });
    if (at < 0) F.tracks.push(T); else F.tracks.splice(at + 1, 0, T);
    TL.tracks.push(T);
  });
}
