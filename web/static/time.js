// Times in the reader's time zone (issue 38, item 5). The server writes every time as a <time datetime> in UTC
// (templates/_macros.html, macro `when`): relative for the last days, a date beyond. Where scripts run, this
// shows the absolute ones, and the exact time on hover, in the reader's zone; without it they stay in UTC.
(function () {
  "use strict";
  var day = { day: "numeric", month: "short", year: "numeric" };
  var clock = { hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short" };
  function both(a, b) {
    var out = {};
    [a, b].forEach(function (o) { Object.keys(o).forEach(function (k) { out[k] = o[k]; }); });
    return out;
  }
  function localise(root) {
    var times = (root || document).querySelectorAll("time[data-local]");
    for (var i = 0; i < times.length; i++) {
      var el = times[i], kind = el.getAttribute("data-local");
      var at = new Date(el.getAttribute("datetime"));
      if (!kind || isNaN(at.getTime())) continue;
      try {
        var exact = at.toLocaleString("en-GB", both(day, clock));
        el.title = exact;
        if (kind === "date") el.textContent = at.toLocaleDateString("en-GB", day);
        else if (kind === "datetime") el.textContent = exact;
        el.setAttribute("data-localised", "");
      } catch (e) { /* an engine without Intl options keeps the UTC text */ }
    }
  }
  window.newsfoldLocaliseTimes = localise;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { localise(); });
  else localise();
})();
