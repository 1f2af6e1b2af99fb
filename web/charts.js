// charts: small dependency-free SVG line charts (loss and throughput over steps), and the
// reading of GET /v1/jobs/{id}/metrics into series ({series: [{name, rank, points: [{step, value}]}]},
// docs/diagnosis.md; the reader also takes the other shapes a "series by name" answer may take).
import { h, svg } from './dom.js';

const W = 640, H = 220, L = 58, R = 14, T = 14, B = 36, MAX_POINTS = 800;

export function fmt(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(1)}k`;
  if (a === 0) return '0';
  if (a < 1e-3) return v.toExponential(1);
  return String(+v.toPrecision(3));
}

function ticks(min, max, n) {
  const span = max - min || Math.abs(max) || 1;
  const raw = span / n, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

// Keeps the first, last, lowest and highest point of each bucket: spikes stay visible.
function thin(points) {
  if (points.length <= MAX_POINTS) return points;
  const size = Math.ceil(points.length / (MAX_POINTS / 4)), out = [];
  for (let i = 0; i < points.length; i += size) {
    const b = points.slice(i, i + size);
    let lo = b[0], hi = b[0];
    for (const p of b) { if (p[1] < lo[1]) lo = p; if (p[1] > hi[1]) hi = p; }
    const keep = [b[0], lo, hi, b[b.length - 1]].sort((a, c) => a[0] - c[0]);
    for (const p of keep) if (out[out.length - 1] !== p) out.push(p);
  }
  return out;
}

// lineChart({title, series: [{name, points: [[x, y]...]}], xLabel}) -> <figure>.
export function lineChart({ title, series, xLabel = 'step' }) {
  const all = series.flatMap(s => s.points).filter(p => isFinite(p[0]) && isFinite(p[1]));
  if (!all.length) return h('p', { class: 'muted' }, `No ${title.toLowerCase()} reported yet.`);
  let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const [x, y] of all) {
    x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
  }
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
  const yt = ticks(y0, y1, 4), xt = ticks(x0, x1, 5);
  y0 = Math.min(y0, yt[0]); y1 = Math.max(y1, yt[yt.length - 1]);
  const sx = x => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = y => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
  const last = all.reduce((a, p) => (p[0] >= a[0] ? p : a));
  const label = `${title}: ${series.length} series over ${xLabel}s ${fmt(x0)} to ${fmt(x1)}, ` +
    `from ${fmt(y0)} to ${fmt(y1)}; last ${fmt(last[1])} at ${xLabel} ${fmt(last[0])}`;
  const el = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': label },
    svg('title', {}, label));
  for (const v of yt) {
    el.append(svg('line', { class: 'gridline', x1: L, x2: W - R, y1: sy(v), y2: sy(v) }),
      svg('text', { class: 'tick', x: L - 6, y: sy(v) + 4, 'text-anchor': 'end' }, fmt(v)));
  }
  for (const v of xt) {
    if (v < x0 || v > x1) continue;
    el.append(svg('text', { class: 'tick', x: sx(v), y: H - B + 16, 'text-anchor': 'middle' }, fmt(v)));
  }
  el.append(svg('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }),
    svg('text', { class: 'axis-label', x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle' }, xLabel));
  series.forEach((s, i) => {
    const pts = thin(s.points.filter(p => isFinite(p[0]) && isFinite(p[1])).sort((a, b) => a[0] - b[0]));
    if (!pts.length) return;
    const d = pts.map((p, k) => `${k ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join('');
    el.append(svg('path', { class: `line c${i % 6}`, d }));
    if (pts.length === 1) el.append(svg('circle', { class: `dot c${i % 6}`, cx: sx(pts[0][0]), cy: sy(pts[0][1]), r: 3 }));
  });
  const legend = series.length > 1 ? h('ul', { class: 'legend' }, series.map((s, i) =>
    h('li', { class: `c${i % 6}` }, h('span', { class: 'swatch', 'aria-hidden': 'true' }), s.name))) : null;
  return h('figure', { class: 'chart-fig' }, el,
    h('figcaption', {}, h('strong', {}, title), ` · last ${fmt(last[1])} at ${xLabel} ${fmt(last[0])}`),
    legend);
}

function point(p, i) {
  if (Array.isArray(p)) return [Number(p[0]), Number(p[1])];
  if (p && typeof p === 'object') {
    const x = p.step ?? p.x ?? p.iteration;
    return [x === undefined || x === null || x < 0 ? i : Number(x), Number(p.value ?? p.y ?? p.v)];
  }
  return [i, Number(p)];
}

// Any of {series: {name: points}}, {series: [{name, points}]}, {items: [{name, step, value}]}
// -> Map name -> [{name, points}] (one entry per rank when samples carry ranks).
export function readMetrics(data) {
  const out = new Map();
  const add = (name, rank, pts) => {
    const key = rank === undefined || rank === null ? name : `${name} (rank ${rank})`;
    if (!out.has(name)) out.set(name, new Map());
    const m = out.get(name);
    if (!m.has(key)) m.set(key, []);
    m.get(key).push(...pts);
  };
  const body = data && (data.series || data.metrics || data.items || data.samples || data);
  if (Array.isArray(body)) {
    for (const s of body) {
      if (!s || !s.name) continue;
      const pts = s.points || s.samples || s.data || s.values;
      if (Array.isArray(pts)) add(s.name, s.rank, pts.map(point));
      else add(s.name, s.rank, [point(s, 0)]);
    }
  } else if (body && typeof body === 'object') {
    for (const [name, pts] of Object.entries(body)) {
      if (Array.isArray(pts)) add(name, undefined, pts.map(point));
      else if (pts && Array.isArray(pts.points)) add(name, pts.rank, pts.points.map(point));
    }
  }
  const res = new Map();
  for (const [name, m] of out) res.set(name, [...m].map(([n, points]) => ({ name: n, points })));
  return res;
}

export function pick(names, preferred, re, avoid) {
  for (const p of preferred) if (names.includes(p)) return p;
  return names.find(n => re.test(n) && !(avoid && avoid.test(n))) || null;
}

export const LOSS = [['loss', 'train_loss', 'lm_loss', 'training_loss'], /loss/, /val|eval|scale/];
export const THROUGHPUT = [['tokens_per_sec', 'throughput', 'samples_per_sec', 'it_per_sec',
  'running_avg_samples_per_sec'], /per_sec|per_second|throughput|tokens_s|it_s$/];
