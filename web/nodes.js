// nodes: the cluster's nodes (GET /v1/nodes, with the Kubernetes executor), this machine (where
// the local executor runs ranks: its GPUs, rank slots and who uses them) and every node
// marked bad or suspect (by a person or by the diagnosis): GPU and EFA capacity, conditions,
// marks with who made them, when and why (and a button to remove one), and the jobs on each.
// The reader accepts both flat fields and Kubernetes-style capacity maps.
import { optional, request, enc } from './api.js';
import { h, clear, notAvailable, errorNote, every, brief, timeEl, confirmDialog } from './dom.js';
import { href } from './router.js';

const GPU = ['gpus', 'nvidia.com/gpu'], EFA = ['efa', 'vpc.amazonaws.com/efa'];

// The local executor's machine: its GPUs by index, model and memory, and who uses each.
function localGpus(n) {
  const g = n.gpus || {}, devs = n.gpu_devices || [];
  if (!devs.length) return h('span', { class: 'muted' }, n.gpu_source ? `none (${n.gpu_source.replace(/^none \(|\)$/g, '')})` : 'none');
  return h('div', {}, h('div', {}, `${g.used} of ${g.capacity} in use`),
    h('ul', { class: 'plain small' }, devs.map(d => h('li', {},
      `${d.index}: ${d.name}, ${Math.round((d.memory_bytes || 0) / 2 ** 30)} GiB — `,
      d.job ? h('a', { href: href(`/jobs/${d.job.id}`) }, `${d.job.id} rank ${d.job.rank}`) : h('span', { class: 'muted' }, 'free')))));
}

function amount(n, keys) {
  const from = o => { if (o) for (const k of keys) if (o[k] !== undefined) return o[k]; return undefined; };
  const cap = from(n.capacity) ?? from(n), alloc = from(n.allocatable);
  if (cap === undefined && alloc === undefined) return '—';
  return alloc !== undefined && alloc !== cap ? `${alloc} of ${cap ?? '?'} free` : String(cap ?? alloc);
}

function conditions(n) {
  let list = n.conditions || [];
  if (!Array.isArray(list)) list = Object.entries(list).map(([type, status]) => ({ type, status }));
  return list.map(c => ({ ...c, ok: /Ready$/.test(c.type) ? c.status === 'True' : c.status !== 'True' }));
}

// A mark as a person reads it: state and reason, the message, who made it and when, and a
// button to remove it (the daemon refuses without the admin scope, and says so).
function markEl(n, m, onUnmark) {
  const by = m.source === 'diagnosis' ? `the diagnosis${m.job_id ? ` of job ${m.job_id}` : ''}`
    : m.created_by || m.source || 'someone';
  return h('div', { class: 'mark' },
    h('strong', { class: 'bad' }, `marked ${m.state || 'bad'}${m.reason ? `: ${m.reason}` : ''}`),
    m.message ? h('p', { class: 'small' }, m.message) : null,
    h('p', { class: 'muted small' }, `by ${by}`, m.created_at ? [', ', timeEl(m.created_at)] : ''),
    h('button', { type: 'button', class: 'small-btn', on: { click: () => onUnmark(n) } }, 'Unmark'));
}

function marks(n, onUnmark) {
  const out = [];
  if (n.cordoned || n.unschedulable) out.push(h('div', { class: 'bad' }, 'cordoned'));
  const m = n.mark || n.marks;
  if (Array.isArray(m)) out.push(...m.map(x => h('div', {}, brief(x))));
  else if (m && typeof m === 'object') out.push(markEl(n.name, m, onUnmark));
  else if (n.marked === true) out.push(h('div', { class: 'bad' }, 'marked bad'));
  return out.length ? out : '—';
}

function jobLinks(n) {
  const jobs = n.jobs || [];
  if (!jobs.length) return h('span', { class: 'muted' }, 'none');
  return h('ul', { class: 'plain' }, jobs.map(j => {
    const id = typeof j === 'string' ? j : j.id;
    const label = typeof j === 'string' ? j : `${j.name || j.id}${j.ranks ? ` (ranks ${brief(j.ranks)})` : ''}`;
    return h('li', {}, h('a', { href: href(`/jobs/${id}`) }, label));
  }));
}

function nodeCells(n, onUnmark) {
  const conds = conditions(n);
  const ready = conds.find(c => c.type === 'Ready');
  const cells = [
    ['Node', h('strong', { class: 'nowrap' }, n.name || (n.metadata && n.metadata.name) || '?')],
    ['Ready', ready ? [h('span', { class: `badge ${ready.ok ? 'st-succeeded' : 'st-failed'}` },
      h('span', { class: 'dot', 'aria-hidden': 'true' }), ready.ok ? 'Ready' : 'Not ready'),
    !ready.ok && ready.reason ? h('span', { class: 'muted small' }, ` ${ready.reason}`) : null] : '—'],
    ['Instance', n.instance_type || '—'], ['Zone', n.zone || '—'], ['Capacity', n.capacity_type || '—'],
    ['GPUs', n.executor === 'local' ? localGpus(n) : amount(n, GPU)], ['EFA', amount(n, EFA)],
    ['Rank slots', n.slots ? `${n.slots.used} of ${n.slots.capacity} in use` : '—'],
    ['Conditions', h('ul', { class: 'plain' }, conds.filter(c => c.type !== 'Ready').map(c =>
      h('li', { class: c.ok ? 'muted' : 'bad' }, `${c.type}: ${c.status}${c.reason ? ` (${c.reason})` : ''}`)))],
    ['Marks', marks(n, onUnmark)],
    ['Jobs', jobLinks(n)],
  ];
  return cells;
}

export default {
  mount(main) {
    const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
    main.append(h('h1', { tabindex: '-1' }, 'Nodes'), body);
    const note = h('div', { 'aria-live': 'polite' });
    main.append(note);
    async function unmark(name) {
      if (!await confirmDialog(`Unmark ${name}?`, 'Jobs may be placed on it again.', 'Unmark the node',
        { cancel: 'Keep the mark' })) return;
      try {
        await request('DELETE', `/v1/nodes/${enc(name)}/mark`);
        clear(note, h('p', { class: 'ok-note' }, `${name} is no longer marked.`));
        load();
      } catch (e) { clear(note, errorNote(e)); }
    }
    const load = async () => {
      let res;
      try {
        res = await optional('/v1/nodes', '/v1/nodes');
      } catch (e) {
        clear(body, errorNote(e));
        return;
      }
      if (res.missing) {
        clear(body, notAvailable('Nodes', 'GET /v1/nodes'),
          h('p', { class: 'muted' }, 'It comes with the Kubernetes executor (trainyard serve --executor kubernetes).'));
        return;
      }
      const d = res.data;
      const items = Array.isArray(d) ? d : d.items || d.nodes || [];
      if (!items.length) {
        clear(body, h('div', { class: 'empty' },
          h('p', {}, 'No node is marked, and this daemon knows no cluster nodes.'),
          h('p', { class: 'small' }, 'Jobs of the local executor run on this machine (localhost); the Kubernetes ' +
            'executor lists its cluster\'s nodes here, with their GPUs, EFA devices and conditions. A node marked bad ' +
            'or suspect (by the diagnosis or with POST /v1/nodes/{name}/mark) shows here with why.')));
        return;
      }
      /* columns nobody has a value for (a marked node outside any cluster) are left out */
      const rows = items.map(n => nodeCells(n, unmark));
      const empty = v => v === '—' || (v instanceof Element && v.tagName === 'UL' && !v.children.length);
      const keep = rows[0].map((_, i) => i).filter(i => i === 0 || rows.some(r => !empty(r[i][1])));
      clear(body, h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
        h('caption', { class: 'sr-only' }, 'Nodes'),
        h('thead', {}, h('tr', {}, keep.map(i => h('th', { scope: 'col' }, rows[0][i][0])))),
        h('tbody', {}, rows.map(r => h('tr', {}, keep.map(i => h('td', { 'data-label': r[i][0] }, r[i][1]))))))));
    };
    const stop = every(10000, load);
    return { unmount: stop };
  },
};
