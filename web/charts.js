// charts: small dependency-free SVG line charts of a job's metric series, and the reading of
// GET /v1/jobs/{id}/metrics ({series: [{name, rank, downsampled, points: [{time, step, value}]}]},
// docs/diagnosis.md). A chart is plotted against what its series carry: the step when every
// point has one, else the epoch printed on the same lines (Hugging Face dicts carry no step),
// else the time since the first point; the axis says which. Hover, or the arrow keys on a
// focused chart, read the values under the cursor; a log-scale toggle for wide ranges.
import { h, svg } from './dom.js';

const W = 640, H = 230, L = 60, R = 16, T = 16, B = 38, MAX_POINTS = 800;

// A number as a person reads it on an axis: 3 significant digits, k/M/G for large ones.
export function fmt(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(1)}k`;
  if (a === 0) return '0';
  if (a < 1e-3) return v.toExponential(1);
  return String(+v.toPrecision(3));
}

// A value as it was printed (the daemon answers the shortest form that reads back the same).
export const exact = v => (typeof v === 'number' ? String(+v.toPrecision(12)) : String(v));

function niceStep(span, n) {
  const raw = span / n, mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= raw * (1 - 1e-9)) || raw;
}

// Axis bounds widened to whole ticks, so that the top and bottom lines carry a label and no
// curve lies on the axis.
function linearAxis(lo, hi, n) {
  if (lo === hi) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
  const pad = (hi - lo) * 0.04;
  const step = niceStep(hi - lo + 2 * pad, n);
  /* no negative tick under values that cannot be negative (a learning rate from 0) */
  const a = lo >= 0 && lo - pad < 0 ? 0 : Math.floor((lo - pad) / step) * step;
  const b = Math.ceil((hi + pad) / step) * step;
  const ticks = [];
  for (let v = a; v <= b + step * 1e-9; v += step) ticks.push(+v.toPrecision(12));
  return { lo: a, hi: b, ticks, f: v => v, inv: v => v };
}

function logAxis(lo, hi) {
  const a = Math.floor(Math.log10(lo)), b = Math.max(Math.ceil(Math.log10(hi)), a + 1);
  const ticks = [];
  for (let e = a; e <= b; e++) ticks.push(10 ** e);
  return { lo: a, hi: b, ticks, f: v => Math.log10(v), inv: v => 10 ** v };
}

// Keeps the first, last, lowest and highest point of each bucket: spikes stay visible.
function thin(points) {
  if (points.length <= MAX_POINTS) return points;
  const size = Math.ceil(points.length / (MAX_POINTS / 4)), out = [];
  for (let i = 0; i < points.length; i += size) {
    const b = points.slice(i, i + size);
    let lo = b[0], hi = b[0];
    for (const p of b) { if (p.y < lo.y) lo = p; if (p.y > hi.y) hi = p; }
    for (const p of [b[0], lo, hi, b[b.length - 1]].sort((u, v) => u.x - v.x))
      if (out[out.length - 1] !== p) out.push(p);
  }
  return out;
}

// The epoch at time t from the epoch series' points (sorted by time): the last printed at or
// before t; the same line printed both, so they share the time.
function epochAt(epochs, t) {
  let lo = 0, hi = epochs.length - 1, best = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (epochs[mid].time <= t) { best = epochs[mid]; lo = mid + 1; } else hi = mid - 1;
  }
  return best ? best.value : null;
}

// What the series can be plotted against: {key: 'step'|'epoch'|'time', label, x(point, series)}.
// epochs: Map rank -> that rank's epoch points sorted by time (a rank prints its own epoch on the
// same line as its loss); t0: the first point's time.
export function xAxisFor(series, epochs, t0) {
  const pts = series.flatMap(s => s.points);
  if (pts.length && pts.every(p => typeof p.step === 'number')) return { key: 'step', label: 'step', x: p => p.step };
  const of = s => (epochs && (epochs.get(s.rank) || epochs.get(undefined) || [...epochs.values()][0])) || null;
  if (epochs && epochs.size && series.every(s => of(s) && s.points.every(p => epochAt(of(s), p.time) !== null)))
    return { key: 'epoch', label: 'epoch', x: (p, s) => epochAt(of(s), p.time) };
  return { key: 'time', label: 'minutes since the first point', x: p => (p.time - t0) / 60000 };
}

const xName = ax => (ax.key === 'time' ? 'minute' : ax.key);

function readoutText(title, ax, x, rows) {
  return `${xName(ax)} ${exact(+x.toPrecision(6))}: ` + rows.map(r => `${r.name} ${exact(r.y)}`).join(', ');
}

// lineChart({title, series: [{name, rank, points: [{step, time, value}]}], epochs}) -> <figure>.
// Each series' last point is its last value (the caller appends a downsampled series' own).
export function lineChart({ title, series, epochs = null, id }) {
  const t0 = Math.min(...series.flatMap(s => s.points.map(p => p.time)));
  const ax = xAxisFor(series, epochs, t0);
  const lines = series.map((s, i) => ({ name: s.name, c: i % 6,
    pts: s.points.map(p => ({ x: ax.x(p, s), y: p.value })).filter(p => isFinite(p.x) && isFinite(p.y))
      .sort((a, b) => a.x - b.x) })).filter(s => s.pts.length);
  if (!lines.length) return h('p', { class: 'muted' }, `No ${title.toLowerCase()} reported yet.`);
  const all = lines.flatMap(s => s.pts);
  const xs = all.map(p => p.x), ys = all.map(p => p.y);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
  const canLog = Math.min(...ys) > 0;
  let log = false;
  const last = lines[0].pts[lines[0].pts.length - 1];
  const caption = h('figcaption', {}, h('strong', {}, title),
    ` · last ${exact(last.y)} at ${xName(ax)} ${exact(+last.x.toPrecision(6))}`);
  const label = () => `${title}: ${lines.length} series over ${ax.label} ${fmt(x0)} to ${fmt(x1)}, ` +
    `${log ? 'log scale, ' : ''}from ${fmt(Math.min(...ys))} to ${fmt(Math.max(...ys))}; ` +
    `last ${exact(last.y)} at ${xName(ax)} ${exact(+last.x.toPrecision(6))}`;
  const el = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', tabindex: '0',
    'data-x': ax.key, id });
  const readout = h('p', { class: 'readout small', 'aria-live': 'polite' }, 'Hover or use the arrow keys for values.');
  const sx = x => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  let sy = null, guide = null, marks = [];

  function draw() {
    const yAx = log ? logAxis(Math.min(...ys), Math.max(...ys)) : linearAxis(Math.min(...ys), Math.max(...ys), 4);
    sy = y => H - B - ((yAx.f(y) - yAx.lo) / (yAx.hi - yAx.lo)) * (H - T - B);
    el.replaceChildren(svg('title', {}, label()));
    el.setAttribute('aria-label', label());
    for (const v of yAx.ticks) {
      el.append(svg('line', { class: 'gridline', x1: L, x2: W - R, y1: sy(v), y2: sy(v) }),
        svg('text', { class: 'tick y', x: L - 6, y: sy(v) + 4, 'text-anchor': 'end' }, fmt(v)));
    }
    const xl = linearAxis(x0, x1, 5);
    for (const v of xl.ticks) {
      if (v < x0 || v > x1) continue;
      el.append(svg('text', { class: 'tick x', x: sx(v), y: H - B + 16, 'text-anchor': 'middle' }, fmt(v)));
    }
    el.append(svg('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }),
      svg('text', { class: 'axis-label', x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle' }, ax.label));
    for (const s of lines) {
      const pts = thin(s.pts);
      el.append(svg('path', { class: `line c${s.c}`,
        d: pts.map((p, k) => `${k ? 'L' : 'M'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join('') }));
      if (pts.length === 1) el.append(svg('circle', { class: `dot c${s.c}`, cx: sx(pts[0].x), cy: sy(pts[0].y), r: 3 }));
    }
    guide = svg('line', { class: 'guide', y1: T, y2: H - B, x1: -10, x2: -10 });
    marks = lines.map(s => svg('circle', { class: `dot c${s.c}`, r: 3.5, cx: -10, cy: -10 }));
    el.append(guide, ...marks);
  }

  // The point of each series nearest to x (binary search: the series are sorted by x).
  function nearest(pts, x) {
    let lo = 0, hi = pts.length - 1;
    while (hi - lo > 1) { const m = (lo + hi) >> 1; if (pts[m].x < x) lo = m; else hi = m; }
    return Math.abs(pts[lo].x - x) <= Math.abs(pts[hi].x - x) ? pts[lo] : pts[hi];
  }
  let cursor = null;
  function show(x) {
    cursor = Math.min(x1, Math.max(x0, x));
    const rows = lines.map(s => ({ name: s.name, ...nearest(s.pts, cursor) }));
    const at = rows[0].x;
    guide.setAttribute('x1', sx(at));
    guide.setAttribute('x2', sx(at));
    rows.forEach((r, i) => { marks[i].setAttribute('cx', sx(r.x)); marks[i].setAttribute('cy', sy(r.y)); });
    readout.textContent = readoutText(title, ax, at, rows);
  }
  el.addEventListener('pointermove', e => {
    const box = el.getBoundingClientRect();
    show(x0 + (((e.clientX - box.left) / box.width) * W - L) / (W - L - R) * (x1 - x0));
  });
  el.addEventListener('keydown', e => {
    const xsSorted = lines[0].pts.map(p => p.x);
    let i = cursor === null ? xsSorted.length - 1 : xsSorted.indexOf(nearest(lines[0].pts, cursor).x);
    if (e.key === 'ArrowLeft') i = Math.max(0, i - 1);
    else if (e.key === 'ArrowRight') i = Math.min(xsSorted.length - 1, i + 1);
    else if (e.key === 'Home') i = 0;
    else if (e.key === 'End') i = xsSorted.length - 1;
    else return;
    e.preventDefault();
    show(xsSorted[i]);
  });
  el.addEventListener('focus', () => { if (cursor === null) show(last.x); });

  const logBtn = h('button', { type: 'button', class: 'small-btn', 'aria-pressed': 'false', disabled: !canLog,
    title: canLog ? 'Logarithmic y axis' : 'Values at or below zero: no log scale' }, 'Log scale');
  logBtn.addEventListener('click', () => {
    log = !log;
    logBtn.setAttribute('aria-pressed', String(log));
    draw();
    if (cursor !== null) show(cursor);
  });
  draw();
  const legend = lines.length > 1 ? h('ul', { class: 'legend' }, lines.map(s =>
    h('li', { class: `c${s.c}` }, h('span', { class: 'swatch', 'aria-hidden': 'true' }), s.name))) : null;
  return h('figure', { class: 'chart-fig', dataset: { x: ax.key } },
    h('div', { class: 'chart-head' }, caption, logBtn), el, legend, readout);
}

function point(p) {
  if (Array.isArray(p)) return { step: Number(p[0]), time: 0, value: Number(p[1]) };
  const step = p.step ?? p.x ?? p.iteration;
  const t = p.time ? Date.parse(String(p.time).replace(/(\.\d{3})\d+/, '$1')) : 0;
  const v = p.value ?? p.y ?? p.v;
  return { step: typeof step === 'number' && step >= 0 ? step : null, time: t,
    value: typeof v === 'number' ? v : Number(v) };
}

// {series: [{name, rank, downsampled, points}]} -> Map name -> [{name, rank, downsampled,
// points: [{step|null, time (ms), value}]}], one entry per rank ("loss (rank 1)" when several).
export function readMetrics(data) {
  const out = new Map();
  const list = data && Array.isArray(data.series) ? data.series : [];
  for (const s of list) {
    if (!s || !s.name || !Array.isArray(s.points)) continue;
    if (!out.has(s.name)) out.set(s.name, []);
    out.get(s.name).push({ name: s.name, rank: s.rank, downsampled: !!s.downsampled, points: s.points.map(point) });
  }
  for (const arr of out.values()) {
    if (arr.length > 1) for (const s of arr) if (s.rank !== undefined) s.name = `${s.name} (rank ${s.rank})`;
  }
  return out;
}

// Hugging Face's end-of-training summary: one value each, the means of the run; shown as the
// final metrics, not as one-point charts.
export const SUMMARY = /^(train_runtime|train_samples_per_second|train_steps_per_second|train_loss|total_flos)$/;

// One throughput chart, in one unit: tokens, else samples, else iterations per second (the
// others are a click away among the more series).
function throughput(names, taken) {
  const all = names.filter(n => !taken.has(n) && /per_sec|per_second|throughput|tokens_s|it_s$/.test(n));
  for (const re of [/token/, /sample/, /./]) {
    const g = all.filter(n => re.test(n));
    if (g.length) { g.forEach(n => taken.add(n)); return { title: 'Throughput', names: g }; }
  }
  return null;
}

// The charts a job's series make, in order: [{title, names}]; a series of one point is a
// value, not a curve (it is listed among the final metrics).
export function chartGroups(series) {
  const names = [...series.keys()].filter(n => !SUMMARY.test(n) && n !== 'epoch' &&
    series.get(n).some(s => s.points.length > 1));
  const taken = new Set();
  const group = (title, test) => {
    const g = names.filter(n => !taken.has(n) && test(n));
    g.forEach(n => taken.add(n));
    return g.length ? { title, names: g } : null;
  };
  const groups = [
    group('Loss', n => /loss/.test(n) && !/scale/.test(n)),
    group('Gradient norm', n => /grad_norm|gradient_norm/.test(n)),
    group('Learning rate', n => /^(learning_rate|lr)$|learning_rate/.test(n)),
    throughput(names, taken),
  ].filter(Boolean);
  return { groups, others: names.filter(n => !taken.has(n)) };
}
