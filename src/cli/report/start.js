/* Opening: the columns inflated, then the timeline drawn; the page marked ready. */
/* the timeline once its columns are inflated (a promise): the page is ready then */
performance.mark("ft-script"); /* the phases of opening, for bench/report_view.py */
Promise.resolve().then(function () { return inflateAll([D].concat(D.b ? [D.b] : [])); }).then(function () {
  performance.mark("ft-inflated");
  part(startTimeline);
  part(function () { /* two groups: the slower kernels outlined (compare.js), and the test hook for them */
    outlineSlower(); if (window.ftTimeline) window.ftTimeline.outlined = outlinedSlices; });
}).catch(function (e) { window.onerror(String(e && e.stack || e), "", 0); showNotes(); }).then(function () {
  window.ftReadyMs = performance.now(); /* bench/report_view.py: the time to open */
  document.body.setAttribute("data-ready", "1"); /* drawn, or the error shown */
  /* then the finest levels of detail, in the background (tl_draw.js); data-levels once made */
  setTimeout(function () { buildLevel0s(function () { performance.mark("ft-levels"); document.body.setAttribute("data-levels", "1"); }); }, 0);
});
