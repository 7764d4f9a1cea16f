// The page of `runnel board`: HTML, CSS and the drawing script, fixed text.
// The script reads the data element (Note [Untrusted board data] in
// tools/board.h) and builds the DOM with createElement / textContent /
// setAttribute only.
#include "tools/board_page.h"

namespace runnel {

const char kBoardPageHead[] = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Runnel board</title>
<script>
window.boardErrors = [];
window.onerror = function (message, source, line) {
  window.boardErrors.push(String(message) + ' (line ' + line + ')');
  if (document.body) {
    document.body.setAttribute('data-errors', String(window.boardErrors.length));
    var e = document.getElementById('errors');
    if (e) { e.hidden = false; e.textContent = 'Script errors: ' + window.boardErrors.join('; '); }
  }
};
</script>
<style>
:root { --ink: #212121; --faint: #757575; --rule: #e0e0e0; --accent: #f57c00; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #f5f5f5; }
header { background: #fff; border-bottom: 1px solid var(--rule); padding: 12px 20px; position: sticky; top: 0; z-index: 2; }
h1 { font-size: 20px; margin: 0 0 2px; }
h1 span { color: var(--accent); }
h2 { font-size: 17px; margin: 24px 0 8px; }
h3 { font-size: 14px; margin: 0 0 6px; font-weight: 600; overflow-wrap: anywhere; }
#subtitle { color: var(--faint); margin: 0; overflow-wrap: anywhere; }
#controls { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; margin-top: 8px; }
#controls label { display: inline-flex; align-items: center; gap: 5px; cursor: pointer; }
#smoothing { width: 180px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; flex: none; }
main { padding: 0 20px 40px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 14px; }
.card { background: #fff; border: 1px solid var(--rule); border-radius: 6px; padding: 10px 12px; min-width: 0; }
.card svg { width: 100%; height: auto; display: block; }
.legend { display: flex; flex-wrap: wrap; gap: 2px 14px; font-size: 12px; margin-bottom: 4px; }
.legend span { display: inline-flex; align-items: center; gap: 4px; overflow-wrap: anywhere; }
.readout { font: 12px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; color: var(--faint); min-height: 1.35em; white-space: pre-wrap; }
.note { color: var(--faint); font-size: 12px; margin: 4px 0 0; }
.warn { color: #b71c1c; }
#errors { background: #ffebee; color: #b71c1c; padding: 8px 20px; margin: 0; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--rule); vertical-align: top; overflow-wrap: anywhere; }
th { font-weight: 600; color: var(--faint); font-size: 12px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.files { margin: 0; padding-left: 18px; font-size: 12px; }
.images { display: flex; flex-wrap: wrap; gap: 10px; }
figure { margin: 0; text-align: center; font-size: 12px; color: var(--faint); }
figure img { display: block; min-width: 96px; max-width: 256px; image-rendering: pixelated; border: 1px solid var(--rule); background: #fafafa; }
figure .skipped { width: 96px; height: 96px; display: flex; align-items: center; justify-content: center; border: 1px dashed var(--rule); padding: 4px; }
.axis text, .ridge-label { font: 11px system-ui, sans-serif; fill: var(--faint); }
.axis line.grid { stroke: #eeeeee; }
.axis line.tick { stroke: #9e9e9e; }
path.raw { fill: none; stroke-width: 1; stroke-opacity: 0.3; stroke-linecap: round; stroke-linejoin: round; }
path.smoothed { fill: none; stroke-width: 2; stroke-linecap: round; stroke-linejoin: round; }
path.ridge { stroke-width: 0.75; }
line.cursor { stroke: #9e9e9e; stroke-dasharray: 3 3; }
.empty { color: var(--faint); }
</style>
</head>
<body data-status="loading" data-errors="0">
<header>
  <h1><span>Runnel</span> board</h1>
  <p id="subtitle"></p>
  <div id="controls">
    <label>Smoothing <input type="range" id="smoothing" min="0" max="0.999" step="0.001" value="0.6"> <output id="smoothing-value">0.600</output></label>
    <span id="run-toggles"></span>
  </div>
</header>
<p id="errors" hidden></p>
<noscript><p>This report draws its charts with JavaScript.</p></noscript>
<main>
  <section id="runs"><h2>Runs</h2></section>
  <section id="scalars"><h2>Scalars</h2><div class="grid"></div></section>
  <section id="histograms"><h2>Histograms</h2><div class="grid"></div></section>
  <section id="images"><h2>Images</h2></section>
  <section id="other"><h2>Other tags</h2></section>
</main>
)HTML";

const char kBoardPageTail[] = R"HTML(<script>
(function () {
'use strict';
var SVG = 'http://www.w3.org/2000/svg';
var PALETTE = ['#ff7043', '#0077bb', '#009988', '#ee3377', '#33bbee',
               '#cc3311', '#7b1fa2', '#827717', '#5d4037', '#546e7a'];
var data = JSON.parse(document.getElementById('board-data').textContent);
var visible = data.runs.map(function () { return true; });
var smoothing = 0.6;
var scalarCharts = [];

// --- DOM helpers: text only, never HTML ---------------------------------
function h(tag, cls, text, parent) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (parent) parent.appendChild(e);
  return e;
}
function s(tag, attrs, parent) {
  var e = document.createElementNS(SVG, tag);
  for (var k in attrs) e.setAttribute(k, String(attrs[k]));
  if (parent) parent.appendChild(e);
  return e;
}
function colour(run) { return PALETTE[run % PALETTE.length]; }
function swatch(run, parent) {
  var e = h('span', 'swatch', null, parent);
  e.style.background = colour(run);
  return e;
}
function num(v) { return Number(v); }  // "NaN", "Infinity" -> numbers.

// --- Numbers and ticks ------------------------------------------------------
function fmt(v) {
  if (!isFinite(v)) return String(v);
  var a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
  return String(parseFloat(v.toPrecision(5)));
}
function fmtStep(v) {
  var a = Math.abs(v);
  if (a >= 1e6) return parseFloat((v / 1e6).toPrecision(4)) + 'M';
  if (a >= 1e4) return parseFloat((v / 1e3).toPrecision(4)) + 'k';
  return String(parseFloat(v.toPrecision(6)));
}
// About n round values in [lo, hi]; whole numbers only when `integer`.
function ticks(lo, hi, n, integer) {
  var span = hi - lo;
  if (!(span > 0) || !isFinite(span)) return [lo];
  var step = Math.pow(10, Math.floor(Math.log(span / n) / Math.LN10));
  var err = n / span * step;
  if (err <= 0.15) step *= 10; else if (err <= 0.35) step *= 5; else if (err <= 0.75) step *= 2;
  if (integer) step = Math.max(1, Math.round(step));
  var out = [];
  for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 50; v += step) {
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}
function padded(lo, hi) {
  if (!isFinite(lo) || !isFinite(hi)) return [0, 1];
  if (hi === lo) { var d = lo === 0 ? 1 : Math.abs(lo) * 0.1; return [lo - d, hi + d]; }
  var p = (hi - lo) * 0.05;
  return [lo - p, hi + p];
}
function wallText(t) {
  var d = new Date(num(t) * 1000);
  return isNaN(d.getTime()) ? '?' : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// TensorBoard's smoothing: a debiased exponential moving average over the
// finite values; non-finite values pass through (and break the curve).
function smooth(values, w) {
  var out = new Array(values.length);
  var last = 0, n = 0;
  var constant = values.every(function (v) { return v === values[0]; });
  for (var i = 0; i < values.length; ++i) {
    var v = values[i];
    if (constant || !isFinite(v)) { out[i] = v; continue; }
    last = last * w + (1 - w) * v;
    ++n;
    out[i] = w === 1 ? last : last / (1 - Math.pow(w, n));
  }
  return out;
}
// An SVG path through (x, y) pairs, with a gap at every non-finite y; an
// isolated point (a tag written once, or between gaps) is a small ring.
function linePath(xs, ys, sx, sy) {
  var d = [], open = false;
  for (var i = 0; i < xs.length; ++i) {
    if (!isFinite(ys[i])) { open = false; continue; }
    var x = sx(xs[i]), y = sy(ys[i]);
    var p = x.toFixed(1) + ',' + y.toFixed(1);
    if (!open) {
      var next = i + 1 < xs.length && isFinite(ys[i + 1]);
      d.push(next ? 'M' + p : 'M' + (x - 2.5).toFixed(1) + ',' + y.toFixed(1) +
                              'a2.5,2.5 0 1,0 5,0a2.5,2.5 0 1,0 -5,0');
      open = next;
    } else {
      d.push('L' + p);
    }
  }
  return d.join('');
}

// --- Axes -------------------------------------------------------------------
var W = 560, H = 300, M = {l: 58, r: 14, t: 10, b: 30};
function axes(svg, xd, yd, sx, sy, xfmt) {  // x: steps.
  var g = s('g', {'class': 'axis'}, svg);
  ticks(yd[0], yd[1], 6).forEach(function (v) {
    var y = sy(v);
    s('line', {'class': 'grid', x1: M.l, x2: W - M.r, y1: y, y2: y}, g);
    var t = s('text', {x: M.l - 6, y: y + 4, 'text-anchor': 'end'}, g);
    t.textContent = fmt(v);
  });
  ticks(xd[0], xd[1], 7, true).forEach(function (v) {
    var x = sx(v);
    s('line', {'class': 'tick', x1: x, x2: x, y1: H - M.b, y2: H - M.b + 4}, g);
    var t = s('text', {x: x, y: H - M.b + 16, 'text-anchor': 'middle'}, g);
    t.textContent = xfmt(v);
  });
  s('line', {'class': 'tick', x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b}, g);
  s('line', {'class': 'tick', x1: M.l, x2: M.l, y1: M.t, y2: H - M.b}, g);
}

// --- Header -----------------------------------------------------------------
function header() {
  document.title = 'Runnel board: ' + data.logdir;
  document.getElementById('subtitle').textContent =
      data.logdir + ' \u2014 ' + data.runs.length + ' run(s), written ' + data.generated;
  var toggles = document.getElementById('run-toggles');
  data.runs.forEach(function (r, i) {
    var l = h('label', null, null, toggles);
    var box = h('input', null, null, l);
    box.type = 'checkbox';
    box.checked = true;
    box.addEventListener('change', function () { visible[i] = box.checked; drawScalars(); });
    swatch(i, l);
    h('span', null, r.name, l);
  });
  var sec = document.getElementById('runs');
  var table = h('table', null, null, sec);
  var head = h('tr', null, null, h('thead', null, null, table));
  ['run', 'directory and event files', 'events', 'restarts', 'purged'].forEach(function (t) { h('th', null, t, head); });
  var body = h('tbody', null, null, table);
  var damaged = 0;
  data.runs.forEach(function (r, i) {
    var tr = h('tr', null, null, body);
    var name = h('td', null, null, tr);
    swatch(i, name);
    h('span', null, ' ' + r.name, name);
    var files = h('td', null, null, tr);
    h('div', null, r.dir, files);
    var ul = h('ul', 'files', null, files);
    r.files.forEach(function (f) {
      var li = h('li', null, f.path + ': ' + f.events + ' events, ' + f.bytes + ' bytes', ul);
      if (f.error) { ++damaged; h('div', 'warn', 'cannot read: ' + f.error, li); }
      f.damage.forEach(function (d) {
        ++damaged;
        h('div', 'warn', d.kind + ' at offset ' + d.offset + ': ' + d.message, li);
      });
      if (f.more_damage > 0) h('div', 'warn', f.more_damage + ' more damaged records', li);
    });
    h('td', 'num', r.events, tr);
    h('td', 'num', r.restarts, tr);
    var p = h('td', 'num', r.purged, tr);
    if (r.purged > 0) {
      p.title = r.purged_tags.map(function (t) { return t[0] + ': ' + t[1]; }).join('\n');
    }
  });
  if (damaged > 0) {
    h('p', 'warn', damaged + ' damaged place(s) in the event files: the good records around them are shown.', sec);
  }
  h('p', 'note', 'Points discarded as orphaned data (a SessionLog START at step s drops what came before with step \u2265 s; a tag whose step goes back drops its points from that step on), as TensorBoard does. At most ' +
      data.caps.scalar_points + ' points per scalar curve, ' + data.caps.histogram_steps +
      ' steps per histogram and the latest ' + data.caps.images + ' images per tag are in this file.', sec);
}

// --- Scalars ----------------------------------------------------------------
function scalarCard(tag) {
  var grid = document.querySelector('#scalars .grid');
  var card = h('section', 'card chart scalar', null, grid);
  card.setAttribute('data-tag', tag.tag);
  h('h3', null, tag.tag, card);
  var legend = h('div', 'legend', null, card);
  var series = tag.series.map(function (sr) {
    return {run: sr.run, total: sr.total, unreadable: sr.unreadable,
            step: sr.step.map(num), value: sr.value.map(num), wall: sr.wall};
  });
  series.forEach(function (sr) {
    var l = h('span', null, null, legend);
    swatch(sr.run, l);
    h('span', null, data.runs[sr.run].name, l);
  });
  var svg = s('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img'}, card);
  var readout = h('div', 'readout', '\u00a0', card);
  var notes = [];
  series.forEach(function (sr) {
    var name = data.runs[sr.run].name;
    if (sr.step.length < sr.total - sr.unreadable) notes.push(name + ': ' + sr.step.length + ' of ' + (sr.total - sr.unreadable) + ' points shown');
    if (sr.unreadable > 0) notes.push(name + ': ' + sr.unreadable + ' values that are not numbers');
  });
  if (notes.length) h('p', 'note', notes.join('; '), card);
  var chart = {tag: tag.tag, svg: svg, series: series, readout: readout};
  svg.addEventListener('mousemove', function (ev) { hover(chart, ev); });
  svg.addEventListener('mouseleave', function () { readout.textContent = '\u00a0'; if (chart.cursor) chart.cursor.setAttribute('visibility', 'hidden'); });
  return chart;
}

function drawScalar(chart) {
  var svg = chart.svg;
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  var shown = chart.series.filter(function (sr) { return visible[sr.run]; });
  var xlo = Infinity, xhi = -Infinity, ylo = Infinity, yhi = -Infinity;
  shown.forEach(function (sr) {
    sr.step.forEach(function (x, i) {
      var y = sr.value[i];
      xlo = Math.min(xlo, x); xhi = Math.max(xhi, x);
      if (isFinite(y)) { ylo = Math.min(ylo, y); yhi = Math.max(yhi, y); }
    });
  });
  var xd = xlo === xhi ? [xlo - 1, xhi + 1] : [xlo, xhi];
  if (!isFinite(xlo)) xd = [0, 1];
  var yd = padded(ylo, yhi);
  var sx = function (x) { return M.l + (x - xd[0]) / (xd[1] - xd[0]) * (W - M.l - M.r); };
  var sy = function (y) { return H - M.b - (y - yd[0]) / (yd[1] - yd[0]) * (H - M.t - M.b); };
  chart.sx = sx; chart.xd = xd;
  axes(svg, xd, yd, sx, sy, fmtStep);
  var curves = s('g', {}, svg);
  shown.forEach(function (sr) {
    sr.smoothed = smooth(sr.value, smoothing);
    s('path', {'class': 'raw', stroke: colour(sr.run), d: linePath(sr.step, sr.value, sx, sy)}, curves);
  });
  shown.forEach(function (sr) {
    s('path', {'class': 'smoothed', stroke: colour(sr.run), d: linePath(sr.step, sr.smoothed, sx, sy), 'data-run': data.runs[sr.run].name}, curves);
  });
  chart.cursor = s('line', {'class': 'cursor', y1: M.t, y2: H - M.b, x1: 0, x2: 0, visibility: 'hidden'}, svg);
}

function nearest(steps, x) {
  var lo = 0, hi = steps.length - 1;
  while (lo < hi) { var mid = (lo + hi) >> 1; if (steps[mid] < x) lo = mid + 1; else hi = mid; }
  if (lo > 0 && Math.abs(steps[lo - 1] - x) <= Math.abs(steps[lo] - x)) --lo;
  return lo;
}

function hover(chart, ev) {
  var box = chart.svg.getBoundingClientRect();
  if (!box.width || !chart.sx) return;
  var vx = (ev.clientX - box.left) / box.width * W;
  var step = chart.xd[0] + (vx - M.l) / (W - M.l - M.r) * (chart.xd[1] - chart.xd[0]);
  var lines = [];
  chart.series.forEach(function (sr) {
    if (!visible[sr.run] || !sr.step.length) return;
    var i = nearest(sr.step, step);
    lines.push(data.runs[sr.run].name + '  step ' + sr.step[i] + '  value ' + fmt(sr.value[i]) +
               '  smoothed ' + fmt(sr.smoothed[i]) + '  ' + wallText(sr.wall[i]));
    if (lines.length === 1) {
      var x = chart.sx(sr.step[i]);
      chart.cursor.setAttribute('x1', x); chart.cursor.setAttribute('x2', x);
      chart.cursor.setAttribute('visibility', 'visible');
    }
  });
  chart.readout.textContent = lines.length ? lines.join('\n') : '\u00a0';
}

function drawScalars() {
  scalarCharts.forEach(drawScalar);
  var n = 0;
  scalarCharts.forEach(function (c) { n += c.svg.querySelectorAll('path').length; });
  document.body.setAttribute('data-curves', String(n));
}

function scalars() {
  var sec = document.getElementById('scalars');
  if (!data.scalars.length) { h('p', 'empty', 'No scalar summaries.', sec); return; }
  scalarCharts = data.scalars.map(scalarCard);
  var slider = document.getElementById('smoothing');
  var out = document.getElementById('smoothing-value');
  slider.addEventListener('input', function () {
    smoothing = Math.min(0.999, Math.max(0, Number(slider.value)));
    out.textContent = smoothing.toFixed(3);
    drawScalars();
  });
}

// --- Histograms: TensorBoard's offset view ------------------------------
function shade(hex, t) {  // t = 0: pale; 1: the colour itself.
  var c = parseInt(hex.slice(1), 16), r = c >> 16, g = (c >> 8) & 255, b = c & 255;
  var mix = function (v) { return Math.round(255 - (255 - v) * (0.25 + 0.75 * t)); };
  return 'rgb(' + mix(r) + ',' + mix(g) + ',' + mix(b) + ')';
}

function histogramCard(tag, sr, grid) {
  var card = h('section', 'card chart histogram', null, grid);
  card.setAttribute('data-tag', tag.tag);
  var title = h('h3', null, null, card);
  swatch(sr.run, title);
  h('span', null, ' ' + tag.tag + ' \u2014 ' + data.runs[sr.run].name, title);
  var steps = sr.steps;
  if (!steps.length) { h('p', 'empty', 'No readable histograms.', card); return 0; }
  var lo = num(sr.lo), hi = num(sr.hi), k = steps.length;
  var HH = 330, top = 14, ridge = 70, bins = steps[0].counts.length;
  var svg = s('svg', {viewBox: '0 0 ' + W + ' ' + HH, role: 'img'}, card);
  var sx = function (x) { return M.l + (x - lo) / (hi - lo) * (W - M.l - M.r - 40); };
  var base = function (i) { return k === 1 ? HH - M.b : top + ridge + i / (k - 1) * (HH - M.b - top - ridge); };
  var peak = 0;
  steps.forEach(function (st) { st.counts.forEach(function (c) { peak = Math.max(peak, num(c)); }); });
  var g = s('g', {'class': 'axis'}, svg);
  ticks(lo, hi, 7).forEach(function (v) {
    var x = sx(v);
    s('line', {'class': 'tick', x1: x, x2: x, y1: HH - M.b + 2, y2: HH - M.b + 6}, g);
    var t = s('text', {x: x, y: HH - M.b + 18, 'text-anchor': 'middle'}, g);
    t.textContent = fmt(v);
  });
  var labelEvery = Math.max(1, Math.ceil(k / 8));
  var ridges = s('g', {}, svg);
  var width = (hi - lo) / bins;
  steps.forEach(function (st, i) {
    var y0 = base(i), d = 'M' + sx(lo).toFixed(1) + ',' + y0.toFixed(1);
    st.counts.forEach(function (c, b) {
      var y = y0 - (peak > 0 ? num(c) / peak : 0) * ridge;
      d += 'L' + sx(lo + (b + 0.5) * width).toFixed(1) + ',' + y.toFixed(1);
    });
    d += 'L' + sx(hi).toFixed(1) + ',' + y0.toFixed(1) + 'Z';
    var t = k === 1 ? 1 : i / (k - 1);
    var p = s('path', {'class': 'ridge', d: d, fill: shade(colour(sr.run), t), stroke: shade(colour(sr.run), Math.min(1, t + 0.4))}, ridges);
    var tip = s('title', {}, p);
    tip.textContent = 'step ' + st.step + ': ' + fmt(num(st.num)) + ' values in [' + fmt(num(st.min)) + ', ' + fmt(num(st.max)) + ']';
    // Every few steps and the last, never two labels on top of each other.
    if ((i % labelEvery === 0 && base(k - 1) - y0 >= 11) || i === k - 1) {
      var l = s('text', {'class': 'ridge-label', x: W - M.r - 36, y: y0 + 3}, svg);
      l.textContent = 'step ' + fmtStep(st.step);
    }
  });
  if (k < sr.total - sr.unreadable) h('p', 'note', k + ' of ' + (sr.total - sr.unreadable) + ' steps shown, evenly spaced', card);
  if (sr.unreadable > 0) h('p', 'note', sr.unreadable + ' unreadable histograms', card);
  return k;
}

function histograms() {
  var sec = document.getElementById('histograms');
  var grid = sec.querySelector('.grid');
  if (!data.histograms.length) { h('p', 'empty', 'No histogram summaries.', sec); return 0; }
  var n = 0;
  data.histograms.forEach(function (tag) {
    tag.series.forEach(function (sr) { n += histogramCard(tag, sr, grid); });
  });
  return n;
}

// --- Images -----------------------------------------------------------------
function images() {
  var sec = document.getElementById('images');
  if (!data.images.length) { h('p', 'empty', 'No image summaries.', sec); return 0; }
  var n = 0;
  data.images.forEach(function (tag) {
    var card = h('section', 'card chart image', null, sec);
    card.style.marginBottom = '14px';
    card.setAttribute('data-tag', tag.tag);
    h('h3', null, tag.tag, card);
    tag.series.forEach(function (sr) {
      var row = h('div', null, null, card);
      var label = h('div', 'legend', null, row);
      swatch(sr.run, label);
      h('span', null, data.runs[sr.run].name + ' \u2014 latest ' + sr.images.length + ' of ' + sr.total, label);
      var box = h('div', 'images', null, row);
      sr.images.forEach(function (im) {
        var fig = h('figure', null, null, box);
        if (im.data) {
          var img = h('img', null, null, fig);
          img.alt = tag.tag + ' at step ' + im.step;
          var scale = im.width > 0 && im.width < 96 ? Math.ceil(96 / im.width) : 1;
          if (im.width > 0) img.style.width = Math.min(256, im.width * scale) + 'px';
          img.src = 'data:' + im.mime + ';base64,' + im.data;
          ++n;
        } else {
          h('div', 'skipped', im.skipped, fig);
        }
        h('figcaption', null, 'step ' + im.step, fig);
      });
    });
  });
  return n;
}

// --- Other tags -------------------------------------------------------------
function other() {
  var sec = document.getElementById('other');
  if (!data.other.length) { sec.hidden = true; return; }
  h('p', 'note', 'Listed, not drawn.', sec);
  var table = h('table', null, null, sec);
  var head = h('tr', null, null, h('thead', null, null, table));
  ['tag', 'kind', 'points per run'].forEach(function (t) { h('th', null, t, head); });
  var body = h('tbody', null, null, table);
  data.other.forEach(function (t) {
    var tr = h('tr', null, null, body);
    h('td', null, t.tag, tr);
    h('td', null, t.kind, tr);
    h('td', null, t.runs.map(function (r) { return data.runs[r[0]].name + ': ' + r[1]; }).join(', '), tr);
  });
}

header();
scalars();
drawScalars();
var ridges = histograms();
var imageCount = images();
other();
document.body.setAttribute('data-ridges', String(ridges));
document.body.setAttribute('data-images', String(imageCount));
document.body.setAttribute('data-status', 'ok');
})();
</script>
</body>
</html>
)HTML";

}  // namespace runnel
