// hooks: triggers (S3 uploads that start jobs) and outbound webhooks, with their delivery logs
// (docs/triggers.md): received, verified, matched, duplicate, ignored or rejected and why; for
// webhooks each attempt's status. ?trigger=ID or ?webhook=ID opens that one's deliveries.
import { optional, enc } from './api.js';
import { h, clear, notAvailable, errorNote, every, valueCell } from './dom.js';
import { href } from './router.js';

const KINDS = [
  { key: 'trigger', title: 'Triggers', list: '/v1/triggers', deliveries: '/v1/triggers/{id}/deliveries',
    cols: ['name', 'id', 'bucket', 'prefix', 'suffix', 'sender', 'template', 'enabled'] },
  { key: 'webhook', title: 'Webhooks', list: '/v1/webhooks', deliveries: '/v1/webhooks/{id}/deliveries',
    cols: ['name', 'id', 'url', 'events', 'format', 'enabled', 'disabled_reason'] },
];
const DELIVERY_COLS = ['received_at', 'time', 'created_at', 'attempted_at', 'sender', 'event', 'type',
  'delivery_id', 'outcome', 'state', 'status', 'http_status', 'last_status', 'attempt', 'attempts', 'summary',
  'error', 'last_error', 'events', 'matched', 'job_ids', 'jobs', 'job_id', 'next_attempt_at', 'attempt_log'];
const HIDDEN = new Set(['payload', 'request_id', 'seq']); /* too long for a cell, or internal */
const OUTCOME = { accepted: 'succeeded', delivered: 'succeeded', rejected: 'failed', failed: 'failed',
  duplicate: 'cancelled', ignored: 'cancelled', retrying: 'restarting', pending: 'queued', gone: 'failed' };

function columns(items, preferred) {
  const keys = [...new Set(items.flatMap(i => Object.keys(i)))].filter(k => !HIDDEN.has(k));
  return preferred.filter(k => keys.includes(k)).concat(keys.filter(k => !preferred.includes(k)));
}

// A trigger's rule as the S3 pattern it matches and its auth as its mode; a trigger delivery's
// events (each object: its key, then the job it started or why not) and a webhook message's
// attempts; a message's state as a badge like an outcome; the rest as values.
function cell(c, v) {
  if (c === 'events' && Array.isArray(v) && v.some(e => e && typeof e === 'object')) {
    return h('ul', { class: 'plain' }, v.map(e => h('li', {}, `${e.key || e.bucket || 'event'}: `,
      e.job_id ? h('a', { href: href(`/jobs/${e.job_id}`) }, e.job_id)
        : e.why || e.submission_error || (e.duplicate ? 'duplicate' : e.submission || (e.matched ? 'matched' : '—')))));
  }
  if (c === 'rule' && v && typeof v === 'object') {
    const events = Array.isArray(v.events) && v.events.length ? ` on ${v.events.join(', ')}` : '';
    return `s3://${v.bucket || '*'}/${v.prefix || ''}*${v.suffix || ''}${events}${v.min_size ? `, at least ${v.min_size} B` : ''}`;
  }
  if (c === 'auth' && v && typeof v === 'object') return v.mode || '—';
  if (c === 'attempt_log' && Array.isArray(v))
    return v.map(a => `#${a.attempt} ${a.status || ''}${a.error ? ` ${a.error}` : ''}`.trim()).join('; ') || '—';
  return valueCell(c === 'state' ? 'outcome' : c, v, OUTCOME);
}

function grid(items, cols, caption, extra) {
  return h('div', { class: 'table-wrap' }, h('table', { class: 'grid' }, h('caption', { class: 'sr-only' }, caption),
    h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col' }, c.replace(/_/g, ' '))), extra ? h('th', { scope: 'col' }, '') : null)),
    h('tbody', {}, items.map(it => h('tr', {}, cols.map(c => h('td', { 'data-label': c.replace(/_/g, ' ') }, cell(c, it[c]))),
      extra ? h('td', {}, extra(it)) : null)))));
}

async function renderKind(kind, box, selected) {
  const res = await optional(kind.list, kind.list);
  if (res.missing) { clear(box, notAvailable(kind.title, `GET ${kind.list}`)); return; }
  const items = Array.isArray(res.data) ? res.data : res.data.items || [];
  if (!items.length) { clear(box, h('p', { class: 'empty' }, `No ${kind.title.toLowerCase()}.`)); return; }
  const link = it => h('a', { href: href('/hooks', { [kind.key]: it.id || it.name }),
    'aria-label': `Deliveries of ${it.name || it.id}` }, 'Deliveries');
  const parts = [grid(items, columns(items, kind.cols), kind.title, link)];
  if (selected) {
    const path = kind.deliveries.replace('{id}', enc(selected));
    const d = await optional(kind.deliveries, path);
    const it = items.find(i => i.id === selected || i.name === selected);
    const heading = h('h3', {}, `Deliveries of ${it && it.name && it.name !== selected ? `${it.name} (${selected})` : selected}`);
    if (d.missing) parts.push(heading, notAvailable('Delivery log', `GET ${kind.deliveries}`));
    else {
      const rows = Array.isArray(d.data) ? d.data : d.data.items || [];
      parts.push(heading, rows.length ? grid(rows, columns(rows, DELIVERY_COLS), heading.textContent)
        : h('p', { class: 'empty' }, 'No deliveries yet.'));
    }
  }
  clear(box, parts);
}

export default {
  mount(main, route) {
    let params = route.params;
    const boxes = KINDS.map(k => h('div', {}, h('p', { class: 'muted' }, 'Loading…')));
    main.append(h('h1', { tabindex: '-1' }, 'Triggers and webhooks'),
      ...KINDS.map((k, i) => h('section', { class: 'card', 'aria-labelledby': `sec-${k.key}` },
        h('h2', { id: `sec-${k.key}` }, k.title), boxes[i])));
    const load = () => Promise.all(KINDS.map((k, i) =>
      renderKind(k, boxes[i], params.get(k.key)).catch(e => clear(boxes[i], errorNote(e)))));
    const stop = every(10000, load);
    return {
      update(r) { params = r.params; load(); },
      unmount: stop,
    };
  },
};
