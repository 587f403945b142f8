// Hover tooltips: the state of the cluster at the time under the pointer.
// REPORT is defined just above by the page. Text goes in with textContent only,
// so nothing from the run is ever parsed as HTML.
(function () {
  "use strict";
  var rows = REPORT.rows;
  var tip = document.getElementById("tooltip");

  // The sample in force at t: the last one at or before it.
  function rowAt(t) {
    var lo = 0, hi = rows.length - 1;
    if (hi < 0 || t < rows[0][0]) return null;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (rows[mid][0] <= t) lo = mid; else hi = mid - 1;
    }
    return rows[lo];
  }

  function clock(seconds) {
    var s = Math.round(seconds), h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
    return h + "h" + (m < 10 ? "0" : "") + m + "m" + (s % 60 ? (s % 60 < 10 ? "0" : "") + (s % 60) + "s" : "");
  }

  function describe(r) {
    return [
      "at " + clock(r[0]),
      "nodes     " + r[1],
      "cost      $" + r[2].toFixed(2) + "/h",
      "CPU       " + r[3].toFixed(1) + "%",
      "memory    " + r[4].toFixed(1) + "%",
      "pending   " + r[5],
      "running   " + r[6]
    ].join("\n");
  }

  function hide(svg) {
    svg.querySelector(".guide").setAttribute("visibility", "hidden");
    tip.hidden = true;
  }

  function move(svg, ev) {
    var box = svg.getBoundingClientRect();
    var x = (ev.clientX - box.left) / box.width * REPORT.viewW;
    var t = (x - REPORT.plotX) / REPORT.plotW * REPORT.span;
    var r = t >= 0 && t <= REPORT.span ? rowAt(t) : null;
    if (!r) { hide(svg); return; }
    var guide = svg.querySelector(".guide");
    guide.setAttribute("x1", x);
    guide.setAttribute("x2", x);
    guide.setAttribute("visibility", "visible");
    tip.textContent = describe(r);
    tip.hidden = false;
    var left = ev.clientX + 14;
    if (left + tip.offsetWidth > window.innerWidth - 8) left = ev.clientX - 14 - tip.offsetWidth;
    tip.style.left = left + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  }

  var svgs = document.querySelectorAll("svg.plot");
  svgs.forEach(function (svg) {
    svg.addEventListener("mousemove", function (ev) { move(svg, ev); });
    svg.addEventListener("mouseleave", function () { hide(svg); });
  });

  // A self-check that a headless browser test reads: every chart laid out
  // with a size, and no script error before this line.
  var drawn = 0;
  svgs.forEach(function (svg) {
    var b = svg.getBoundingClientRect();
    if (b.width > 0 && b.height > 0) drawn++;
  });
  document.body.setAttribute("data-charts", String(drawn));
  if (drawn === svgs.length && drawn > 0 && !document.documentElement.hasAttribute("data-error")) {
    document.body.dataset.ok = "1";
  }
})();
