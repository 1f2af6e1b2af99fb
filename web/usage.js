// usage: GPU-hours and cost over a time range (GET /v1/usage): a stacked bar chart of GPU-hours
// per day by owner, team (or another label), queue, executor or instance type, and a table of
// the groups with their rank-hours, runs, jobs and cost, with the total. The range and the
// grouping are in the URL (#/usage?range=30d&by=label:team). Polled every 30 s while visible.
import { optional } from './api.js';
import { h, svg, clear, notAvailable, errorNote, every, num, table } from './dom.js';
import { replaceParams } from './router.js';

const POLL_MS = 30000;
const RANGES = [['1d', 'Last 24 hours'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days'],
  ['90d', 'Last 90 days'], ['365d', 'Last year']];
const BYS = [['owner', 'Owner'], ['label', 'Label'], ['queue', 'Queue'], ['executor', 'Executor'],
  ['instance_type', 'Instance type'], ['capacity_type', 'Capacity type']];
const SERIES = 5; /* the biggest groups get a colour each; the rest are "other" */
const W = 640, H = 240, L = 52, R = 10, T = 12, B = 40;

function settings(params) {
  const range = RANGES.some(r => r[0] === params.get('range')) ? params.get('range') : '30d';
  const raw = params.get('by') || 'label:team';
  const key = raw.startsWith('label:') ? raw.slice(6) : '';
  const by = key ? 'label' : BYS.some(b => b[0] === raw) ? raw : 'owner';
  return { range, by, key: key || 'team' };
}

const groupBy = s => (s.by === 'label' ? `label:${s.key}` : s.by);
const name = (g, s) => {
  const v = s.by === 'label' ? g.labels && g.labels[s.key] : g[s.by];
  return v === null || v === undefined ? (s.by === 'label' ? `no ${s.key}` : 'unknown') : String(v);
};
const hours = sec => (sec || 0) / 3600;

// Three significant digits below 10 (a short job is a few thousandths of a GPU-hour).
function fmtHours(v) {
  if (!v) return '0';
  if (v < 1e-4) return '< 0.0001';
  if (v < 10) return String(+v.toPrecision(3));
  return v < 1000 ? v.toFixed(1) : Math.round(v).toLocaleString();
}

function money(v, currency) {
  if (v === null || v === undefined || !currency) return '—';
  try {
    return v.toLocaleString(undefined, { style: 'currency', currency, maximumFractionDigits: v < 1 ? 4 : 2 });
  } catch (e) {
    return `${v.toFixed(2)} ${currency}`;
  }
}

// Every UTC day from `from` to `to` as YYYY-MM-DD.
function days(from, to) {
  const out = [];
  const d = new Date(String(from).slice(0, 10) + 'T00:00:00Z');
  const end = new Date(to);
  for (; d < end && out.length < 400; d.setUTCDate(d.getUTCDate() + 1)) out.push(d.toISOString().slice(0, 10));
  return out;
}

// Stacked bars: GPU-hours per day, one colour per group of the biggest SERIES, the rest "other".
function chart(perDay, totals, s) {
  const gpu = totals.groups.filter(g => g.gpu_seconds > 0);
  const top = gpu.slice(0, SERIES).map(g => name(g, s));
  const series = top.length < gpu.length ? [...top, 'other'] : top;
  const ds = days(perDay.from, perDay.to);
  const stack = new Map(ds.map(d => [d, new Map()]));
  for (const g of perDay.groups) {
    const col = stack.get(g.day);
    if (!col) continue;
    const n = top.includes(name(g, s)) ? name(g, s) : 'other';
    col.set(n, (col.get(n) || 0) + hours(g.gpu_seconds));
  }
  const max = Math.max(0, ...[...stack.values()].map(c => [...c.values()].reduce((a, b) => a + b, 0)));
  const label = `GPU-hours per day by ${s.by === 'label' ? s.key : s.by}, ${ds[0]} to ${ds[ds.length - 1]}: ` +
    `${fmtHours(hours(totals.total.gpu_seconds))} in all, at most ${fmtHours(max)} in a day`;
  const el = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart usage-chart', role: 'img', 'aria-label': label },
    svg('title', {}, label));
  const top1 = max > 0 ? max * 1.1 : 1;
  const sy = v => H - B - (v / top1) * (H - T - B);
  for (const v of [0, top1 / 2, top1]) {
    el.append(svg('line', { class: 'gridline', x1: L, x2: W - R, y1: sy(v), y2: sy(v) }),
      svg('text', { class: 'tick', x: L - 6, y: sy(v) + 4, 'text-anchor': 'end' }, fmtHours(v)));
  }
  const bw = (W - L - R) / Math.max(ds.length, 1);
  ds.forEach((d, i) => {
    let y = 0;
    const x = L + i * bw + Math.min(1, bw * 0.1);
    series.forEach((n, k) => {
      const v = stack.get(d).get(n) || 0;
      if (!v) return;
      el.append(svg('rect', { class: `bar c${k}`, x: x.toFixed(1), y: sy(y + v).toFixed(1),
        width: Math.max(bw - 2 * Math.min(1, bw * 0.1), 0.5).toFixed(1),
        height: Math.max(sy(y) - sy(y + v), 0.5).toFixed(1), 'data-day': d, 'data-group': n },
      svg('title', {}, `${d} · ${n}: ${fmtHours(v)} GPU-hours`)));
      y += v;
    });
    if (ds.length <= 14 || i % Math.ceil(ds.length / 8) === 0)
      el.append(svg('text', { class: 'tick', x: (x + bw / 2).toFixed(1), y: H - B + 14, 'text-anchor': 'middle' }, d.slice(5)));
  });
  el.append(svg('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }),
    svg('text', { class: 'axis-label', x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle' }, 'day (UTC)'));
  return h('figure', { class: 'chart-fig' }, el,
    h('figcaption', {}, h('strong', {}, 'GPU-hours per day')),
    h('ul', { class: 'legend' }, series.map((n, k) =>
      h('li', { class: `c${k}` }, h('span', { class: 'swatch', 'aria-hidden': 'true' }), n))));
}

function groupsTable(totals, s) {
  const cur = totals.currency;
  const cols = [
    { label: BYS.find(b => b[0] === s.by)[1] + (s.by === 'label' ? ` (${s.key})` : ''), cell: g => g.total ? h('strong', {}, 'Total') : name(g, s) },
    { label: 'GPU-hours', class: 'num', cell: g => fmtHours(hours(g.gpu_seconds)) },
    { label: 'Rank-hours', class: 'num', cell: g => fmtHours(hours(g.rank_seconds)) },
    { label: 'Runs', class: 'num', cell: g => num(g.runs) },
    { label: 'Jobs', class: 'num', cell: g => num(g.jobs) },
  ];
  if (cur) cols.push({ label: `Cost (${cur})`, class: 'num', cell: g => money(g.cost, cur) });
  return table(cols, [...totals.groups, { ...totals.total, total: true }], 'Usage by group');
}

function summary(totals) {
  const t = totals.total, cur = totals.currency;
  const parts = [`${fmtHours(hours(t.gpu_seconds))} GPU-hours`, `${num(t.jobs)} jobs`, `${num(t.runs)} rank runs`];
  if (cur) parts.push(money(t.cost, cur));
  const out = [h('p', { class: 'usage-total' }, parts.join(' · '))];
  if (cur && t.unpriced_gpu_seconds > 0)
    out.push(h('p', { class: 'muted small' }, `${fmtHours(hours(t.unpriced_gpu_seconds))} GPU-hours have no price in the table.`));
  if (!cur) out.push(h('p', { class: 'muted small' }, 'No price table: an admin sets one with PUT /v1/usage/prices.'));
  return out;
}

// A job's cost (job.usage of GET /v1/jobs/{id}) in its currency; null without a price table.
export function usageCost(u) {
  return u && u.currency ? money(u.cost, u.currency) : null;
}

// The job page's facts for job.usage: GPU-hours so far and the cost.
export function usageFacts(u) {
  if (!u || typeof u !== 'object') return [];
  const running = u.running_ranks ? ` (${u.running_ranks} rank${u.running_ranks === 1 ? '' : 's'} running)` : '';
  return [['GPU-hours', `${fmtHours(hours(u.gpu_seconds))}${running}`], ['Cost', usageCost(u)]];
}

export default {
  mount(main, route) {
    let s = settings(route.params);
    const rangeSel = h('select', { id: 'u-range', name: 'range' },
      RANGES.map(([v, t]) => h('option', { value: v }, t)));
    const bySel = h('select', { id: 'u-by', name: 'by' }, BYS.map(([v, t]) => h('option', { value: v }, t)));
    const keyInput = h('input', { id: 'u-key', name: 'key', type: 'text', autocomplete: 'off',
      spellcheck: 'false', size: 12 });
    const keyField = h('div', { class: 'field' }, h('label', { for: 'u-key' }, 'Label key'), keyInput);
    const body = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
    const form = h('form', { class: 'filters', 'aria-label': 'Usage range and grouping' },
      h('div', { class: 'field' }, h('label', { for: 'u-range' }, 'Range'), rangeSel),
      h('div', { class: 'field' }, h('label', { for: 'u-by' }, 'Group by'), bySel), keyField,
      h('button', { type: 'submit' }, 'Show'));
    main.append(h('h1', { tabindex: '-1' }, 'Usage'), form, body);
    const show = () => {
      rangeSel.value = s.range;
      bySel.value = s.by;
      keyInput.value = s.key;
      keyField.hidden = s.by !== 'label';
    };
    let seq = 0;
    const load = async () => {
      const mine = ++seq, q = `from=-${s.range}&group_by=${encodeURIComponent(groupBy(s))}`;
      let totals, perDay;
      try {
        totals = await optional('/v1/usage', `/v1/usage?${q}`);
        perDay = totals.missing ? totals : await optional('/v1/usage', `/v1/usage?${q},day&limit=10000`);
      } catch (e) {
        if (mine === seq) clear(body, errorNote(e));
        return;
      }
      if (mine !== seq) return;
      if (totals.missing || perDay.missing) {
        clear(body, notAvailable('Usage', 'GET /v1/usage'));
        return;
      }
      const t = totals.data;
      clear(body, summary(t), t.groups.length ? [chart(perDay.data, t, s), groupsTable(t, s)]
        : h('p', { class: 'empty' }, 'No GPU or rank time in this range.'));
    };
    const apply = () => {
      replaceParams('/usage', { range: s.range, by: groupBy(s) });
      show();
      clear(body, h('p', { class: 'muted' }, 'Loading…'));
      load();
    };
    bySel.addEventListener('change', () => { keyField.hidden = bySel.value !== 'label'; });
    form.addEventListener('submit', e => {
      e.preventDefault();
      s = { range: rangeSel.value, by: bySel.value, key: keyInput.value.trim() || 'team' };
      apply();
    });
    rangeSel.addEventListener('change', () => form.requestSubmit());
    show();
    const stop = every(POLL_MS, load);
    return {
      update(r) { s = settings(r.params); show(); load(); },
      unmount: stop,
    };
  },
};
