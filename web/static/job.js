// A running job's page updates its figures in place (issue 38, item 6): it reads GET /api/jobs/<id> (the
// element with data-job-poll names it) every 5 s and rewrites the [data-field] and [data-count] elements, never
// the page, so keyboard focus and reading position stay. The status sentence is a polite live region. When the
// job ends the page says so and offers a reload (its failures and retry form are drawn by the server).
(function () {
  "use strict";
  var EVERY_MS = 5000;
  var ACTIVE = { queued: true, running: true };
  function number(n) { return Number(n || 0).toLocaleString("en-US"); }
  function set(name, text) {
    var els = document.querySelectorAll('[data-field="' + name + '"]');
    for (var i = 0; i < els.length; i++) if (els[i].textContent !== text) els[i].textContent = text;
  }
  function show(job) {
    var status = document.querySelector('[data-field="status"]');
    if (status) { status.textContent = job.status; status.className = "status status-" + job.status; }
    set("message", job.message ? " " + job.message : "");
    var done = job.done || 0;
    if (job.total) {
      set("progress-text", number(done) + " of " + number(job.total) + " items (" +
        Math.round(100 * done / job.total) + "%)");
      var bar = document.querySelector('[data-field="progress"]');
      if (bar) { bar.max = job.total; bar.value = Math.min(done, job.total); }
    } else {
      set("progress-text", number(done) + " items done (total not known yet)");
    }
    set("rate", job.rate ? job.rate.toFixed(1) + " items/s" : "–");
    set("eta", job.eta_seconds != null ? "about " + (Math.round(job.eta_seconds / 6) / 10) + " min" : "–");
    var counts = document.querySelectorAll("[data-count]");
    for (var i = 0; i < counts.length; i++) {
      var text = number((job.counts || {})[counts[i].getAttribute("data-count")]);
      if (counts[i].textContent !== text) counts[i].textContent = text;
    }
    var updated = document.querySelector('[data-field="updated"] time');
    if (updated && job.updated) { updated.setAttribute("datetime", job.updated); updated.textContent = "just now"; }
  }
  function start(root) {
    var url = root.getAttribute("data-job-poll");
    var timer = null;
    function ended(job) {
      var note = document.querySelector('[data-testid="job-refresh"]');
      if (note) {
        note.textContent = "The job is " + job.status + ". ";
        var link = document.createElement("a");
        link.href = window.location.pathname;
        link.textContent = "Reload the page for its failures";
        link.setAttribute("data-testid", "job-refresh-link");
        note.appendChild(link);
      }
    }
    function poll() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (res) { if (!res.ok) throw new Error(String(res.status)); return res.json(); })
        .then(function (job) {
          show(job);
          root.setAttribute("data-polled", String(Number(root.getAttribute("data-polled") || 0) + 1));
          if (ACTIVE[job.status]) timer = window.setTimeout(poll, EVERY_MS);
          else ended(job);
        })
        .catch(function () { timer = window.setTimeout(poll, EVERY_MS * 2); });
    }
    timer = window.setTimeout(poll, EVERY_MS);
    return function () { window.clearTimeout(timer); };
  }
  function init() {
    var root = document.querySelector("[data-job-poll]");
    if (root) start(root);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
