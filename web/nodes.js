// nodes: the cluster's nodes (GET /v1/nodes, with the Kubernetes executor): GPU and EFA
// capacity, conditions, marks (cordoned, marked bad) and the jobs on each. The reader accepts
// both flat fields and Kubernetes-style capacity maps.
import { optional } from './api.js';
import { h, clear, notAvailable, errorNote, every, brief } from './dom.js';
import { href } from './router.js';

const GPU = ['gpus', 'nvidia.com/gpu'], EFA = ['efa', 'vpc.amazonaws.com/efa'];

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

function marks(n) {
  const out = [];
  if (n.cordoned || n.unschedulable) out.push('cordoned');
  const m = n.mark || n.marks || n.marked;
  if (Array.isArray(m)) out.push(...m.map(brief));
  else if (m && typeof m === 'object') out.push(`marked ${m.state || 'bad'}${m.reason ? `: ${m.reason}` : ''}`);
  else if (m) out.push(m === true ? 'marked bad' : String(m));
  return out;
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

function nodeRow(n) {
  const conds = conditions(n);
  const ready = conds.find(c => c.type === 'Ready');
  const cells = [
    ['Node', h('strong', { class: 'nowrap' }, n.name || (n.metadata && n.metadata.name) || '?')],
    ['Ready', ready ? [h('span', { class: `badge ${ready.ok ? 'st-succeeded' : 'st-failed'}` },
      h('span', { class: 'dot', 'aria-hidden': 'true' }), ready.ok ? 'Ready' : 'Not ready'),
    !ready.ok && ready.reason ? h('span', { class: 'muted small' }, ` ${ready.reason}`) : null] : '—'],
    ['Instance', n.instance_type || '—'], ['Zone', n.zone || '—'], ['Capacity', n.capacity_type || '—'],
    ['GPUs', amount(n, GPU)], ['EFA', amount(n, EFA)],
    ['Conditions', h('ul', { class: 'plain' }, conds.filter(c => c.type !== 'Ready').map(c =>
      h('li', { class: c.ok ? 'muted' : 'bad' }, `${c.type}: ${c.status}${c.reason ? ` (${c.reason})` : ''}`)))],
    ['Marks', marks(n).length ? h('ul', { class: 'plain bad' }, marks(n).map(m => h('li', {}, m))) : '—'],
    ['Jobs', jobLinks(n)],
  ];
  return h('tr', {}, cells.map(([label, v]) => h('td', { 'data-label': label }, v)));
}

export default {
  mount(main) {
    const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
    main.append(h('h1', { tabindex: '-1' }, 'Nodes'), body);
    const stop = every(10000, async () => {
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
      if (!items.length) { clear(body, h('p', { class: 'empty' }, 'No nodes.')); return; }
      const cols = ['Node', 'Ready', 'Instance', 'Zone', 'Capacity', 'GPUs', 'EFA', 'Conditions', 'Marks', 'Jobs'];
      clear(body, h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
        h('caption', { class: 'sr-only' }, 'Nodes'),
        h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, items.map(nodeRow)))));
    });
    return { unmount: stop };
  },
};
