// jobs: the list of jobs, newest first, with state and label filters in the URL, cursor pages,
// and live updates (the page is polled every few seconds while visible; rows are updated in
// place so that keyboard focus and scroll position stay where they were).
import { get } from './api.js';
import { h, clear, badge, ago, duration, runTime, size, progressEl, every, STATES,
  errorNote, TERMINAL } from './dom.js';
import { href, replaceParams } from './router.js';

const POLL_MS = 3000;
const GROUPS = { active: 'queued,starting,running,restarting,cancelling',
  ended: 'succeeded,failed,cancelled,preempted' };
const COLS = ['State', 'Name', 'Executor', 'Size', 'Age', 'Duration', 'Progress', 'Failure / message'];

function option(value, text, selected) {
  return h('option', { value, selected: selected || undefined }, text);
}

function filtersFrom(params) {
  return { state: params.get('state') || '', selector: params.get('selector') || '',
    cursor: params.get('cursor') || '' };
}

// One-line summary of what went wrong (or what the job is waiting for).
export function failureText(job) {
  if (job.message) return job.message;
  const ff = job.first_failure;
  if (!ff) return '';
  const how = ff.signal ? `signal ${ff.signal}` : ff.exit_code !== null && ff.exit_code !== undefined
    ? `exit code ${ff.exit_code}` : '';
  return `rank ${ff.rank}: ${ff.reason || 'failed'}${how ? ` (${how})` : ''}`;
}

function makeRow() {
  const cells = COLS.map(c => h('td', { 'data-label': c }));
  const link = h('a', {});
  const labels = h('span', { class: 'labels' });
  cells[1].append(link, labels);
  return { tr: h('tr', {}, cells), cells, link, labels, key: '' };
}

function fillRow(row, job, now) {
  const { cells } = row;
  row.link.href = href(`/jobs/${job.id}`);
  row.link.textContent = job.name;
  row.tr.dataset.id = job.id;
  row.tr.dataset.state = job.state;
  const key = JSON.stringify([job.state, job.labels, job.progress, job.message, job.first_failure,
    (job.spec_size || job.spec || {}).resources, job.executor]);
  if (key !== row.key) {
    row.key = key;
    clear(cells[0], badge(job.state));
    clear(row.labels, Object.entries(job.labels || {}).map(([k, v]) =>
      h('span', { class: 'chip' }, `${k}=${v}`)));
    cells[2].textContent = job.executor || '—';
    cells[3].textContent = size(job.spec_size || job.spec); // list items carry only the size
    clear(cells[6], progressEl(job.progress && TERMINAL.has(job.state) ? { ...job.progress, finished: true } : job.progress) || h('span', { class: 'muted' }, '—'));
    const text = failureText(job);
    cells[7].className = job.first_failure || job.state === 'failed' ? 'failure' : 'muted';
    cells[7].textContent = text || '—';
    cells[7].title = text;
  }
  cells[4].textContent = ago(job.created_at, now);
  cells[5].textContent = duration(runTime(job, now));
}

export default {
  mount(main, route) {
    let f = filtersFrom(route.params);
    let seq = 0;
    const rows = new Map();
    const stateSel = h('select', { id: 'f-state', name: 'state' },
      option('', 'All states'), option(GROUPS.active, 'Active'), option(GROUPS.ended, 'Ended'),
      STATES.map(s => option(s, s)));
    const selInput = h('input', { id: 'f-selector', name: 'selector', type: 'search',
      placeholder: 'team=nlp,env!=dev', autocomplete: 'off', spellcheck: 'false',
      'aria-describedby': 'f-selector-help' });
    const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter jobs' },
      h('div', { class: 'field' }, h('label', { for: 'f-state' }, 'State'), stateSel),
      h('div', { class: 'field grow' }, h('label', { for: 'f-selector' }, 'Labels'), selInput,
        h('span', { id: 'f-selector-help', class: 'hint' }, 'Label selector: k=v, k!=v, k in (a,b), !k')),
      h('button', { type: 'submit' }, 'Apply'));
    const info = h('div', { class: 'list-info', 'aria-live': 'polite' });
    const tbody = h('tbody');
    const empty = h('p', { class: 'empty', hidden: true });
    const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of jobs' });
    main.append(
      h('div', { class: 'view-head' }, h('h1', { tabindex: '-1' }, 'Jobs'),
        h('a', { class: 'button primary', href: '#/submit' }, 'Submit a job')),
      form, info,
      h('div', { class: 'table-wrap' }, h('table', { class: 'grid jobs' },
        h('caption', { class: 'sr-only' }, 'Jobs, newest first'),
        h('thead', {}, h('tr', {}, COLS.map(c => h('th', { scope: 'col' }, c)))), tbody)),
      empty, pager);

    const showFilters = () => {
      if (![...stateSel.options].some(o => o.value === f.state)) stateSel.append(option(f.state, f.state));
      stateSel.value = f.state;
      selInput.value = f.selector;
    };
    const apply = () => {
      f = { state: stateSel.value, selector: selInput.value.trim(), cursor: '' };
      replaceParams('/jobs', f);
      load();
    };
    form.addEventListener('submit', e => { e.preventDefault(); apply(); });
    stateSel.addEventListener('change', apply);

    async function load() {
      const mine = ++seq;
      const q = new URLSearchParams({ limit: '50' });
      for (const k of ['state', 'selector', 'cursor']) if (f[k]) q.set(k, f[k]);
      let page;
      try {
        page = await get(`/v1/jobs?${q}`);
      } catch (e) {
        if (mine === seq) clear(info, errorNote(e));
        return;
      }
      if (mine !== seq) return;
      render(page);
    }

    function render(page) {
      const now = Date.now(), seen = new Set();
      page.items.forEach((job, i) => {
        let row = rows.get(job.id);
        if (!row) { row = makeRow(); rows.set(job.id, row); }
        fillRow(row, job, now);
        seen.add(job.id);
        if (tbody.children[i] !== row.tr) tbody.insertBefore(row.tr, tbody.children[i] || null);
      });
      for (const [id, row] of rows) if (!seen.has(id)) { row.tr.remove(); rows.delete(id); }
      const filtered = f.state || f.selector;
      empty.hidden = page.items.length > 0;
      clear(empty, filtered ? 'No job matches these filters.'
        : ['No jobs yet. ', h('a', { href: '#/submit' }, 'Submit one.')]);
      clear(info, h('span', { class: 'muted small' },
        `${page.items.length} job${page.items.length === 1 ? '' : 's'}${f.cursor ? ' (older page)' : ''}` +
        ` · updated ${new Date(now).toLocaleTimeString()}`));
      const base = { state: f.state, selector: f.selector };
      clear(pager,
        f.cursor ? h('a', { href: href('/jobs', base), class: 'button' }, '← Newest') : null,
        page.next_cursor ? h('a', { href: href('/jobs', { ...base, cursor: page.next_cursor }),
          class: 'button' }, 'Older →') : null);
    }

    showFilters();
    const stop = every(POLL_MS, load);
    return {
      update(r) {
        f = filtersFrom(r.params);
        showFilters();
        for (const row of rows.values()) row.tr.remove();
        rows.clear();
        load();
      },
      unmount() { stop(); seq++; },
    };
  },
};
