"""The status page of ``ddlsched serve`` (``GET /``): one self-contained HTML document, inline CSS
and vanilla JS, no external URL, that renders the service's overview JSON (queue, Gantt strip of
the running jobs per GPU, finished jobs, utilisation) and refreshes it from ``api/overview``.

Every value from the overview reaches the DOM through ``textContent``/``createElementNS`` (job
commands are user input), and the embedded overview escapes ``<``, ``>`` and ``&`` so that no
command can close its ``<script>``.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["status_page"]

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 2em;color:#222;background:#fafafa}
header{position:sticky;top:0;background:#fafafa;padding:.6em 0;border-bottom:1px solid #ccc}
header span{margin-right:1.2em}
.badge{background:#c62;color:#fff;border-radius:3px;padding:0 .4em}
#conn{color:#b00;font-weight:bold}
h2{font-size:1.05em;margin:1.2em 0 .4em}
table{border-collapse:collapse;min-width:40em}
th,td{border-bottom:1px solid #ddd;padding:.15em .6em;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
td code{white-space:pre-wrap;word-break:break-all}
tr.failed td:nth-child(2){color:#b00}
tr.cancelled td:nth-child(2){color:#777}
svg{background:#fff;border:1px solid #ddd;display:block;max-width:100%}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg rect.job+text{fill:#000}
.empty{color:#888;font-style:italic}
"""

_BODY = """
<header id="summary"><span id="s-policy"></span><span id="s-cluster"></span>
<span id="s-gpus"></span><span id="s-draining" class="badge" hidden>draining</span>
<span id="s-time"></span><span id="conn" hidden>disconnected</span></header>
<h2>Queue</h2>
<table id="queue"><thead><tr><th>id</th><th>name</th><th>GPUs</th><th>command</th><th>waited</th>
<th>failures</th></tr></thead><tbody></tbody></table>
<h2>Running</h2>
<table id="running"><thead><tr><th>id</th><th>name</th><th>GPUs held</th><th>command</th><th>running for</th>
<th>attempt</th><th>step</th></tr></thead><tbody></tbody></table>
<h2>GPUs <span id="gantt-window"></span></h2>
<svg id="gantt" xmlns="http://www.w3.org/2000/svg" width="1000" height="40"></svg>
<h2>Finished</h2>
<table id="finished"><thead><tr><th>id</th><th>name</th><th>state</th><th>JCT</th><th>reason</th></tr>
</thead><tbody></tbody></table>
<h2>Utilisation (busy GPU fraction)</h2>
<svg id="utilisation" xmlns="http://www.w3.org/2000/svg" width="1000" height="160"></svg>
"""

_JS = r"""
(function () {
"use strict";
var NS = "http://www.w3.org/2000/svg", W = 1000, LEFT = 60, RIGHT = 10;
var body = document.body;
var REFRESH = parseFloat(body.dataset.refresh), WINDOW = parseFloat(body.dataset.window);
function $(id) { return document.getElementById(id); }
function el(tag, text, cls) {
  var e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function svg(tag, attrs, text) {
  var e = document.createElementNS(NS, tag);
  for (var k in attrs) e.setAttribute(k, String(attrs[k]));
  if (text !== undefined) e.textContent = String(text);
  return e;
}
function num(x) { return typeof x === "number" && isFinite(x) ? x : 0; }
function dur(s) {  // seconds, formatted for a reader: 4.2 s, 3 min 05 s, 2 h 07 min
  if (typeof s !== "number" || !isFinite(s)) return "\u2014";
  if (s < 0) s = 0;
  if (s < 10) return s.toFixed(1) + " s";
  if (s < 60) return Math.round(s) + " s";
  var m = Math.floor(s / 60), r = Math.round(s - 60 * m);
  if (r === 60) { m += 1; r = 0; }
  if (m < 60) return m + " min " + (r < 10 ? "0" : "") + r + " s";
  var h = Math.floor(m / 60); m -= 60 * h;
  return h + " h " + (m < 10 ? "0" : "") + m + " min";
}
function hue(id) {  // a stable colour per job id: its hash spread by the golden angle
  var s = String(id), h = 0;
  for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return "hsl(" + ((h * 137.508) % 360).toFixed(1) + ",65%,62%)";
}
function fill(table, rows, cells, cls) {
  var tb = $(table).tBodies[0];
  tb.replaceChildren();
  var ncol = $(table).tHead.rows[0].cells.length;
  if (!rows.length) {
    var td = el("td", "none", "empty"); td.colSpan = ncol;
    tb.appendChild(el("tr")).appendChild(td);
  }
  rows.forEach(function (r) {
    var tr = el("tr"); tr.dataset.job = String(r.id);
    if (cls) tr.className = cls(r);
    cells(r).forEach(function (c) {
      var td = tr.appendChild(el("td"));
      if (c[0] === "code") td.appendChild(el("code", c[1]));
      else { td.textContent = c[1] === null || c[1] === undefined ? "\u2014" : String(c[1]); }
      if (c[0] === "n") td.className = "n";
    });
    tb.appendChild(tr);
  });
}
function axis(g, t0, t1, y, now) {  // time ticks, labelled relative to now
  for (var i = 0; i <= 4; i++) {
    var t = t0 + (t1 - t0) * i / 4, x = LEFT + (W - LEFT - RIGHT) * i / 4;
    g.appendChild(svg("line", {x1: x, x2: x, y1: 0, y2: y, stroke: "#eee"}));
    g.appendChild(svg("text", {x: x, y: y + 13, "text-anchor": i ? (i < 4 ? "middle" : "end")
      : "start"}, now - t < 1e-9 ? "now" : "\u2212" + dur(now - t)));
  }
}
function gantt(o, now) {
  var s = $("gantt"), gpus = Math.max(0, num(o.service && o.service.gpus));
  var t1 = now, t0 = Math.max(0, now - WINDOW);
  if (t1 <= t0) t1 = t0 + 1;
  var segs = o.segments || [];
  segs.forEach(function (g) { (g.gpus || []).forEach(function (k) { gpus = Math.max(gpus, k + 1); }); });
  var rowH = 22, h = gpus * rowH + 20, sx = (W - LEFT - RIGHT) / (t1 - t0);
  s.replaceChildren(); s.setAttribute("height", h); s.setAttribute("viewBox", "0 0 " + W + " " + h);
  axis(s, t0, t1, gpus * rowH, now);
  for (var k = 0; k < gpus; k++)
    s.appendChild(svg("text", {x: 4, y: k * rowH + 15}, "GPU " + k));
  segs.forEach(function (g) {
    var a = Math.max(num(g.start), t0), b = Math.min(g.end === null ? now : num(g.end), t1);
    if (b <= a && !(g.end === null && a === b)) return;
    var x = LEFT + (a - t0) * sx, w = Math.max(1, (b - a) * sx);
    (g.gpus || []).forEach(function (k) {
      var r = svg("rect", {x: x.toFixed(1), y: k * rowH + 2, width: w.toFixed(1), height: rowH - 4,
        fill: hue(g.job), "class": "job", "data-job": g.job, "data-gpu": k});
      r.appendChild(svg("title", {}, "job " + g.job + " on GPU " + k + ", " + dur(a) + " \u2192 " +
        (g.end === null ? "now" : dur(b))));
      s.appendChild(r);
      if (w > 8 * String(g.job).length + 6)
        s.appendChild(svg("text", {x: (x + 3).toFixed(1), y: k * rowH + 15}, g.job));
    });
  });
  $("gantt-window").textContent = "(last " + dur(t1 - t0) + ")";
}
function utilisation(o, now) {
  var s = $("utilisation"), pts = (o.utilisation || []).filter(function (p) {
    return Array.isArray(p) && p.length >= 2; });
  var H = 140, t0 = pts.length ? Math.min(num(pts[0][0]), now) : 0, t1 = Math.max(now, t0 + 1);
  var sx = (W - LEFT - RIGHT) / (t1 - t0);
  function X(t) { return (LEFT + (t - t0) * sx).toFixed(1); }
  function Y(u) { return (5 + (1 - Math.min(1, Math.max(0, num(u)))) * (H - 10)).toFixed(1); }
  s.replaceChildren();
  axis(s, t0, t1, H, now);
  [[0, "0"], [0.5, "0.5"], [1, "1"]].forEach(function (q) {
    s.appendChild(svg("line", {x1: LEFT, x2: W - RIGHT, y1: Y(q[0]), y2: Y(q[0]), stroke: "#eee"}));
    s.appendChild(svg("text", {x: LEFT - 6, y: +Y(q[0]) + 4, "text-anchor": "end"}, q[1]));
  });
  if (!pts.length) return;
  var d = "M" + X(num(pts[0][0])) + " " + Y(pts[0][1]);
  for (var i = 1; i < pts.length; i++)
    d += " H" + X(num(pts[i][0])) + " V" + Y(pts[i][1]);
  d += " H" + X(now);
  s.appendChild(svg("path", {d: d, fill: "none", stroke: "#2a6fb0", "stroke-width": 2}));
}
function render(o) {
  if (!o || typeof o !== "object") { $("s-policy").textContent = "no data yet"; return; }
  var sv = o.service || {}, now = num(o.now);
  $("s-policy").textContent = "policy: " + (sv.policy || "?");
  $("s-cluster").textContent = "cluster: " + (sv.cluster || "?");
  $("s-gpus").textContent = num(sv.gpus) + " GPUs";
  $("s-draining").hidden = !sv.draining;
  var when = new Date((num(o.origin) + now) * 1000);
  $("s-time").textContent = "data of " + (isNaN(when) ? "?" :
    when.toISOString().replace("T", " ").slice(0, 19) + " UTC") + " (t = " + now.toFixed(1) + " s)";
  fill("queue", o.queue || [], function (j) {
    return [["n", j.id], ["", j.name], ["n", j.gpus], ["code", j.command], ["n", dur(now - num(j.submitted))],
      ["n", j.failures]];
  });
  fill("running", o.running || [], function (j) {
    return [["n", j.id], ["", j.name], ["", (j.gpus_held || []).join(", ")], ["code", j.command],
      ["n", dur(now - num(j.since))], ["n", j.attempt], ["n", j.step]];
  });
  fill("finished", o.finished || [], function (j) {
    return [["n", j.id], ["", j.name], ["", j.state], ["n", dur(j.jct)], ["", j.reason]];
  }, function (j) { return String(j.state); });
  gantt(o, now);
  utilisation(o, now);
}
var last = JSON.parse($("initial").textContent);
render(last);
if (location.protocol !== "http:" && location.protocol !== "https:") return;
var token = new URLSearchParams(location.search).get("token"), headers = {};
if (token) headers.Authorization = "Bearer " + token;
function refresh() {
  fetch("api/overview", {headers: headers, cache: "no-store"}).then(function (r) {
    if (!r.ok) throw new Error("HTTP " + r.status);
    return r.json();
  }).then(function (o) {
    render(o); last = o; $("conn").hidden = true;
  }).catch(function (err) {  // unreachable, refused or unreadable: keep showing the last data
    var c = $("conn"); c.hidden = false; c.textContent = "disconnected (" + err.message + ")";
    render(last);
  }).then(function () { setTimeout(refresh, REFRESH * 1000); });
}
if (last) setTimeout(refresh, REFRESH * 1000); else refresh();
})();
"""


def _embed(overview: dict[str, Any] | None) -> str:
    """The overview as JSON safe inside ``<script>``: ``<``, ``>``, ``&`` as ``\\uXXXX`` escapes,
    which ``json.loads`` and ``JSON.parse`` read back unchanged."""
    text = json.dumps(overview, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def status_page(
    overview: dict[str, Any] | None = None, refresh_s: float = 2.0, *, window_s: float = 600.0
) -> str:
    """The status page as one HTML document: ``overview`` (the ``api/overview`` object, or None
    for an empty page) is embedded and rendered at load; over http(s) the page then re-fetches
    ``api/overview`` every ``refresh_s`` seconds. The Gantt strip shows the last ``window_s``."""
    for name, value in (("refresh_s", refresh_s), ("window_s", window_s)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"status_page: {name} must be a positive number, not {value!r}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width,initial-scale=1">\n'
        f"<title>ddlsched serve</title>\n<style>{_CSS}</style></head>\n"
        f'<body data-refresh="{float(refresh_s)!r}" data-window="{float(window_s)!r}">{_BODY}'
        f'<script type="application/json" id="initial">{_embed(overview)}</script>\n'
        f"<script>{_JS}</script>\n</body></html>\n"
    )
