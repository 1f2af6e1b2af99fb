// job: one job. Summary, actions (cancel, retry = submit the same spec again, edit and
// resubmit), diagnosis, health, charts, the state timeline (events), the ranks, and the spec.
// Polled every few seconds while the job runs; once it has ended, one last refresh.
import { get, post, enc, logPage, ApiError } from './api.js';
import { h, clear, badge, section, timeEl, duration, runTime, size, progressEl, every, parseTime,
  confirmDialog, errorNote, TERMINAL, num } from './dom.js';
import { href, go } from './router.js';
import { diagnosisPanel, healthPanel, chartsPanel, signalName } from './jobdiag.js';
import { failureText } from './jobs.js';

const POLL_MS = 3000, LAST_LINE_RANKS = 16;

function facts(job) {
  const p = job.progress;
  const rows = [
    ['State', [badge(job.state), job.reason ? h('span', { class: 'muted' }, ` ${job.reason}`) : '']],
    ['Message', failureText(job) || null],
    ['Executor', job.executor], ['Size', `${size(job.spec)} (${job.nranks} rank${job.nranks === 1 ? '' : 's'})`],
    ['Owner', job.owner || null], ['Created', timeEl(job.created_at)],
    ['Started', job.started_at ? timeEl(job.started_at) : null],
    ['Finished', job.finished_at ? timeEl(job.finished_at) : null],
    ['Run time', job.started_at ? duration(runTime(job)) : null],
    ['Restarts', String(job.restarts || 0)],
    ['Queue', job.queue || null], ['Priority', job.priority ? String(job.priority) : null],
    ['Labels', Object.keys(job.labels || {}).length ? Object.entries(job.labels).map(([k, v]) =>
      h('span', { class: 'chip' }, `${k}=${v}`)) : null],
    ['Progress', progressEl(p && TERMINAL.has(job.state) ? { ...p, finished: true } : p)],
    ['Loss', p && p.loss !== undefined ? String(p.loss) : null],
    ['Throughput', p && p.throughput ? `${num(Math.round(p.throughput))} ${p.throughput_unit || ''}` : null],
  ];
  return h('dl', { class: 'facts' }, rows.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function exitText(r) {
  if (r.signal) return signalName(r.signal);
  if (r.exit_code !== null && r.exit_code !== undefined) return `exit ${r.exit_code}`;
  return '—';
}

// Clock time (the full date in its tooltip): stable between refreshes, unlike "5 s ago".
const clock = iso => (iso ? timeEl(iso, parseTime(iso).toLocaleTimeString()) : '—');

const MAX_RANK_ROWS = 200;

function ranksTable(job, lastLines, all, showAll) {
  const cols = ['Rank', 'State', 'Node', 'PID / pod', 'Restarts', 'Exit', 'Started', 'Finished', 'Last line', 'Reason'];
  const list = job.ranks || [];
  const shown = all ? list : list.slice(0, MAX_RANK_ROWS);
  const rows = shown.map(r => {
    const last = lastLines.get(r.rank);
    const cells = [
      h('a', { href: href(`/jobs/${job.id}/logs`, { rank: r.rank }), 'aria-label': `Logs of rank ${r.rank}` },
        String(r.rank)),
      badge(r.state), r.node || '—', r.pod || (r.pid ? String(r.pid) : '—'), String(r.restarts || 0),
      exitText(r), clock(r.started_at), clock(r.finished_at), clock(last), [r.reason, r.message].filter(Boolean).join(': ') || '—'];
    return h('tr', {}, cells.map((c, i) => h('td', { 'data-label': cols[i] }, c)));
  });
  return h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
    h('caption', { class: 'sr-only' }, 'Ranks'),
    h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col' }, c)))), h('tbody', {}, rows)),
    shown.length < list.length ? h('button', { type: 'button', on: { click: showAll } },
      `Show all ${list.length} ranks`) : null);
}

function eventEl(e) {
  return h('li', { class: `event ev-${String(e.type).replace(/[^a-z_]/g, '')}` },
    h('span', { class: 'ev-time' }, timeEl(e.time, parseTime(e.time).toLocaleTimeString())),
    h('span', { class: 'ev-type' }, e.type),
    e.rank !== null && e.rank !== undefined ? h('span', { class: 'chip' }, `rank ${e.rank}`) : null,
    h('span', { class: 'ev-msg' }, [e.reason, e.message].filter(Boolean).join(': ')),
    e.source && e.source !== 'trainyard' ? h('span', { class: 'muted small' }, ` (${e.source})`) : null);
}

export default {
  mount(main, route) {
    const id = route.id;
    let job = null, lastEvent = 0, stop = null, ended = false, ranksKey = '', polls = 0, allRanks = false;
    const lastLines = new Map();
    const title = h('h1', { tabindex: '-1' }, `Job ${id}`);
    const actions = h('div', { class: 'actions' });
    const problems = h('div', { 'aria-live': 'polite' });
    const summary = h('div');
    const events = h('ol', { class: 'timeline' });
    const ranks = h('div');
    const specPre = h('pre', { class: 'spec', tabindex: '0', 'aria-label': 'Job spec as JSON' });
    const diag = diagnosisPanel(id), health = healthPanel(id), charts = chartsPanel(id);
    main.append(h('div', { class: 'view-head' }, title, actions), problems,
      h('div', { class: 'job-grid' },
        section('Summary', 'sec-summary', summary), diag.el, charts.el, health.el,
        section('Ranks', 'sec-ranks', ranks), section('Timeline', 'sec-events', events),
        section('Spec', 'sec-spec', specPre)));

    const fail = e => clear(problems, errorNote(e));

    async function cancel() {
      if (!await confirmDialog(`Cancel ${job.name}?`, 'Its ranks get SIGTERM, then SIGKILL after the grace period.', 'Cancel the job')) return;
      try { await post(`/v1/jobs/${enc(id)}/cancel`); await refresh(); } catch (e) { fail(e); }
    }
    async function retry() {
      if (!await confirmDialog(`Submit ${job.name} again?`, 'A new job is created from the same spec.', 'Submit again')) return;
      try { const j = await post('/v1/jobs', job.spec); go(`/jobs/${j.id}`); } catch (e) { fail(e); }
    }
    async function resume() {
      try { await post(`/v1/jobs/${enc(id)}/resume`); await refresh(); } catch (e) { fail(e); }
    }

    let actionsKey = '';
    function renderActions() {
      const terminal = TERMINAL.has(job.state);
      const key = `${job.state}:${job.suspended}`;
      if (key === actionsKey) return; /* keep the buttons (and keyboard focus) in place */
      actionsKey = key;
      clear(actions,
        h('a', { class: 'button primary', href: href(`/jobs/${id}/logs`) }, 'Logs'),
        !terminal && job.state !== 'cancelling' ? h('button', { type: 'button', class: 'danger', on: { click: cancel } }, 'Cancel') : null,
        job.suspended && job.state === 'queued' ? h('button', { type: 'button', on: { click: resume } }, 'Resume') : null,
        terminal ? h('button', { type: 'button', on: { click: retry } }, 'Retry') : null,
        h('a', { class: 'button', href: href('/submit', { from: id }) }, 'Edit and resubmit'));
    }

    async function loadLastLines(healthData) {
      const hr = healthData && Array.isArray(healthData.ranks) ? healthData.ranks : null;
      if (hr) {
        for (const r of hr) if (r.last_line_time) lastLines.set(r.rank, r.last_line_time);
        return;
      }
      if (job.nranks > LAST_LINE_RANKS) return;
      await Promise.all((job.ranks || []).map(async r => {
        const page = await logPage(id, { rank: r.rank, tail: 1 }).catch(() => null);
        if (page && page.lines.length) lastLines.set(r.rank, page.lines[0].time);
      }));
    }

    function renderRanks() {
      clear(ranks, ranksTable(job, lastLines, allRanks, () => { allRanks = true; renderRanks(); }));
    }

    async function refresh() {
      try {
        job = await get(`/v1/jobs/${enc(id)}`);
      } catch (e) {
        fail(e);
        if (e instanceof ApiError && e.status === 404 && stop) stop();
        return;
      }
      clear(problems);
      clear(title, job.name, ' ', badge(job.state));
      document.title = `${job.name} · trainyard`;
      renderActions();
      clear(summary, facts(job));
      const text = JSON.stringify(job.spec, null, 2);
      if (specPre.textContent !== text) specPre.textContent = text;
      const ev = await get(`/v1/jobs/${enc(id)}/events?after=${lastEvent}`).catch(() => ({ items: [] }));
      for (const e of ev.items) { events.append(eventEl(e)); lastEvent = Math.max(lastEvent, e.seq); }
      /* health and charts every third refresh: the slower signals, and the larger answers */
      const slow = polls++ % 3 === 0 || TERMINAL.has(job.state);
      const [hd] = await Promise.all([slow ? health.refresh() : null, diag.refresh(job),
        slow ? charts.refresh() : null]);
      if (slow) await loadLastLines(hd);
      const rk = JSON.stringify([job.ranks, [...lastLines]]);
      if (rk !== ranksKey) { ranksKey = rk; renderRanks(); }
      if (TERMINAL.has(job.state)) {
        if (ended && stop) stop();
        ended = true;
      }
    }

    stop = every(POLL_MS, refresh);
    return { unmount() { stop(); } };
  },
};
