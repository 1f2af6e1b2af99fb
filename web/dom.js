// dom: building elements and formatting values. Everything from the API reaches the page as
// text nodes or attribute values set here: no HTML strings, so a log line or a label holding
// <script> is shown, never run.

// h('a', {href, class: 'x', on: {click}}, 'text', child...): an element.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value') el.value = v;
    else if (k in el && typeof v !== 'string' && k !== 'list') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {}))
    if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'preempted']);
export const STATES = ['queued', 'starting', 'running', 'restarting', 'cancelling',
  'succeeded', 'failed', 'cancelled', 'preempted'];

// A state shown by its word and a colour (the colour alone would not do).
export function badge(state, extra) {
  const s = String(state || 'unknown');
  return h('span', { class: `badge st-${s.replace(/[^a-z_]/g, '')}${extra ? ' ' + extra : ''}` },
    h('span', { class: 'dot', 'aria-hidden': 'true' }), s);
}

// RFC 3339 with microseconds -> Date (milliseconds kept; every browser parses those).
export function parseTime(iso) {
  return new Date(String(iso).replace(/(\.\d{3})\d+/, '$1'));
}

export function time(iso) {
  if (!iso) return '—';
  const d = parseTime(iso);
  return isNaN(d) ? String(iso) : d.toLocaleString();
}

export function timeEl(iso, text) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: iso, title: time(iso) }, text || time(iso));
}

export function duration(ms) {
  if (ms === null || ms === undefined || !isFinite(ms)) return '—';
  let s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const d = Math.floor(s / 86400), hh = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  s %= 60;
  if (d) return `${d}d ${hh}h`;
  if (hh) return `${hh}h ${m}m`;
  return `${m}m ${s}s`;
}

export function ago(iso, now = Date.now()) {
  if (!iso) return '—';
  return duration(now - parseTime(iso).getTime()) + ' ago';
}

// Run time of a job: start to end (or now).
export function runTime(job, now = Date.now()) {
  if (!job.started_at) return null;
  const end = job.finished_at ? parseTime(job.finished_at).getTime() : now;
  return end - parseTime(job.started_at).getTime();
}

export function num(n) {
  return typeof n === 'number' ? n.toLocaleString() : '—';
}

// "2 × 8 GPUs", or "1 × 4 procs" without GPUs.
export function size(spec) {
  spec = spec || {};
  const nodes = spec.nodes || 1, ppn = spec.procs_per_node || 1;
  const gpus = spec.resources && spec.resources.gpus;
  return gpus ? `${nodes} × ${gpus} GPU${gpus === 1 ? '' : 's'}`
    : `${nodes} × ${ppn} proc${ppn === 1 ? '' : 's'}`;
}

// Progress of a job (step / total, ETA) when the daemon reports it; the epoch when it knows no
// step (Hugging Face dicts carry none).
export function progressEl(p) {
  if (!p || typeof p !== 'object') return null;
  const hasStep = p.step !== undefined && p.step !== null;
  if (!hasStep && typeof p.epoch !== 'number') return null;
  const total = p.total_steps || p.total;
  const wrap = h('span', { class: 'progress' });
  if (hasStep && total) wrap.append(h('progress', { max: total, value: Math.min(p.step, total),
    'aria-label': `step ${p.step} of ${total}` }));
  wrap.append(h('span', {}, !hasStep ? `epoch ${+p.epoch.toPrecision(4)}`
    : total ? `${num(p.step)} / ${num(total)}` : `step ${num(p.step)}`));
  if (p.eta_seconds > 0 && !p.finished) wrap.append(h('span', { class: 'muted' },
    ` · ETA ${duration(p.eta_seconds * 1000)}`));
  return wrap;
}

// A calm note for a route this daemon does not have (yet).
export function notAvailable(what, route) {
  return h('p', { class: 'note' }, `${what}: not available on this daemon`,
    route ? h('span', { class: 'muted' }, ` (${route} is not one of its routes).`) : '.');
}

export function errorNote(err) {
  return h('p', { class: 'error-note', role: 'alert' }, err && err.message ? err.message : String(err));
}

export function section(title, id, ...children) {
  return h('section', { class: 'card', 'aria-labelledby': id },
    h('h2', { id }, title), ...children);
}

// Table from columns [{label, cell(row) -> node|string, class}].
export function table(columns, rows, caption) {
  const head = h('tr', {}, columns.map(c => h('th', { scope: 'col', class: c.class }, c.label)));
  const body = rows.map(r => h('tr', {}, columns.map(c =>
    h('td', { class: c.class, 'data-label': c.label }, c.cell(r)))));
  return h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
    caption ? h('caption', { class: 'sr-only' }, caption) : null,
    h('thead', {}, head), h('tbody', {}, body)));
}

// Any JSON value as short text (for tables of objects whose shape may grow).
export function brief(v) {
  if (v === null || v === undefined || v === '') return '—';
  if (Array.isArray(v)) return v.map(brief).join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// A value of an object whose shape may grow, for a table cell: times as times, job ids as
// links, outcomes (mapped to a state colour by outcomes) as badges, the rest as brief text.
export function valueCell(k, v, outcomes) {
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted' }, '—');
  if (/_at$|_time$|^time$/.test(k) && typeof v === 'string') return timeEl(v);
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (outcomes && (k === 'outcome' || k === 'status') && typeof v === 'string' && outcomes[v]) {
    const b = badge(outcomes[v]);
    b.lastChild.textContent = v;
    return b;
  }
  if ((k === 'job_ids' || k === 'jobs') && Array.isArray(v))
    return h('span', {}, v.map((j, i) => [i ? ', ' : '', h('a', { href: `#/jobs/${encodeURIComponent(typeof j === 'string' ? j : j.id)}` },
      typeof j === 'string' ? j : j.name || j.id)]));
  return brief(v);
}

// Modal confirmation with the page's <dialog>; resolves true when confirmed. The two buttons
// say what each does ("Keep it running" / "Cancel the job"); a destructive one is red.
export function confirmDialog(title, message, ok = 'OK', { cancel = 'Go back', danger = false } = {}) {
  const dlg = document.getElementById('confirm-dialog');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-message').textContent = message;
  const okBtn = document.getElementById('confirm-ok');
  okBtn.textContent = ok;
  okBtn.className = danger ? 'danger-fill' : 'primary';
  document.getElementById('confirm-cancel').textContent = cancel;
  dlg.returnValue = '';
  dlg.showModal();
  return new Promise(resolve => dlg.addEventListener('close',
    () => resolve(dlg.returnValue === 'ok'), { once: true }));
}

// Calls fn now and every ms while the page is visible; returns a stop function.
export function every(ms, fn) {
  let timer = null, stopped = false;
  const tick = async () => {
    timer = null;
    if (stopped) return;
    if (!document.hidden) {
      try { await fn(); } catch (e) { /* the view shows its own errors */ }
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  const onVisible = () => { if (!document.hidden && timer) { clearTimeout(timer); tick(); } };
  document.addEventListener('visibilitychange', onVisible);
  tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisible);
  };
}
