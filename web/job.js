// job: one job, laid out for the question its state asks. First the lead card: queued, why it
// waits; running, progress, throughput, ETA and health (and, when it stalled, which rank went
// quiet, with the one thing to do); failed, the cause; succeeded, the final metrics and usage;
// cancelled, who did. Then the training charts, the ranks, the timeline (opened at its newest
// event), the details and the spec. Polled every few seconds while the job runs; once it has
// ended, one last refresh.
import { get, post, enc, logPage, optional, ApiError } from './api.js';
import { h, clear, badge, timeEl, duration, runTime, size, every, parseTime, confirmDialog, errorNote,
  TERMINAL } from './dom.js';
import { href, go } from './router.js';
import { failurePanel, stallPanel, signalName } from './jobdiag.js';
import { waitCard, runningCard, finalCard, cancelledCard, chartsPanel } from './jobcards.js';
import { failureText } from './jobs.js';
import { usageFacts } from './usage.js';

const POLL_MS = 3000, LAST_LINE_RANKS = 16, MAX_RANK_ROWS = 200;

function facts(job) {
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
    ...usageFacts(job.usage),
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

// The ranks with what health knows of each (last line, last step, straggler) and the rank the
// diagnosis blames marked as such, whatever state it ended in.
function ranksTable(job, hr, blame, all, showAll) {
  const cols = ['Rank', 'State', 'Node', 'PID / pod', 'Restarts', 'Exit', 'Started', 'Finished', 'Last line', 'Last step', 'Reason'];
  const list = job.ranks || [];
  const shown = all ? list : list.slice(0, MAX_RANK_ROWS);
  const rows = shown.map(r => {
    const x = hr.get(r.rank) || {};
    const mark = blame.rank === r.rank ? h('span', { class: 'chip cause' }, 'first failure')
      : (blame.suspects || []).includes(r.rank) ? h('span', { class: 'chip cause' }, 'probably hung')
        : (blame.quiet || []).includes(r.rank) ? h('span', { class: 'chip cause' }, 'quiet') : null;
    const cells = [
      [h('a', { href: href(`/jobs/${job.id}/logs`, { rank: r.rank }), 'aria-label': `Logs of rank ${r.rank}` }, String(r.rank)), mark],
      [badge(r.state), x.straggler ? h('span', { class: 'chip' }, 'straggler') : null],
      r.node || '—', r.pod || (r.pid ? String(r.pid) : '—'), String(r.restarts || 0),
      exitText(r), clock(r.started_at), clock(r.finished_at), clock(x.last_line_time),
      x.last_step !== null && x.last_step !== undefined ? String(x.last_step) : '—',
      [r.reason, r.message].filter(Boolean).join(': ') || '—'];
    return h('tr', { class: mark ? 'blamed' : null, dataset: { rank: r.rank } }, cells.map((c, i) => h('td', { 'data-label': cols[i] }, c)));
  });
  return h('div', { class: 'table-wrap' }, h('table', { class: 'grid ranks' },
    h('caption', { class: 'sr-only' }, 'Ranks'),
    h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col' }, c)))), h('tbody', {}, rows)),
  shown.length < list.length ? h('button', { type: 'button', on: { click: showAll } },
    `Show all ${list.length} ranks`) : null);
}

function eventEl(e) {
  const clean = e.type === 'rank_exited' && /exited with code 0$/.test(e.message || '');
  return h('li', { class: `event ev-${String(e.type).replace(/[^a-z_]/g, '')}${clean ? ' ev-ok' : ''}`, dataset: { seq: e.seq } },
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
    let health = null, series = null, blame = {}, leadKey = '';
    const hr = new Map();
    const title = h('h1', { tabindex: '-1' }, `Job ${id}`);
    const actions = h('div', { class: 'actions' });
    const problems = h('div', { 'aria-live': 'polite' });
    const lead = h('div', { class: 'lead-slot' });
    const summary = h('div');
    const events = h('ol', { class: 'timeline', tabindex: '0', 'aria-label': 'Events, oldest first' });
    const ranks = h('div');
    const specPre = h('pre', { class: 'spec', tabindex: '0', 'aria-label': 'Job spec as JSON' });
    const failure = failurePanel(id), charts = chartsPanel(id);
    const stall = stallPanel(id, () => cancel());
    main.append(h('div', { class: 'view-head' }, title, actions), problems, lead, charts.el,
      h('section', { class: 'card', 'aria-labelledby': 'sec-ranks' }, h('h2', { id: 'sec-ranks' }, 'Ranks'), ranks),
      h('section', { class: 'card', 'aria-labelledby': 'sec-events' }, h('h2', { id: 'sec-events' }, 'Timeline'), events),
      h('div', { class: 'job-grid' },
        h('section', { class: 'card', 'aria-labelledby': 'sec-summary' }, h('h2', { id: 'sec-summary' }, 'Details'), summary),
        h('section', { class: 'card', 'aria-labelledby': 'sec-spec' }, h('h2', { id: 'sec-spec' }, 'Spec'), specPre)));

    const fail = e => clear(problems, errorNote(e));

    async function cancel() {
      if (!await confirmDialog(`Cancel ${job.name}?`, 'Its ranks get SIGTERM, then SIGKILL after the grace period.',
        'Cancel the job', { cancel: 'Keep it running', danger: true })) return;
      try { await post(`/v1/jobs/${enc(id)}/cancel`); await refresh(); } catch (e) { fail(e); }
    }
    async function retry() {
      if (!await confirmDialog(`Submit ${job.name} again?`, 'A new job is created from the same spec.', 'Submit again',
        { cancel: 'Do not submit' })) return;
      try { const j = await post('/v1/jobs', job.spec); go(`/jobs/${j.id}`); } catch (e) { fail(e); }
    }
    async function resume() {
      try { await post(`/v1/jobs/${enc(id)}/resume`); leadKey = ''; await refresh(); } catch (e) { fail(e); }
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
        terminal ? h('button', { type: 'button', on: { click: retry } }, 'Retry') : null,
        h('a', { class: 'button', href: href('/submit', { from: id }) }, 'Edit and resubmit'));
    }

    async function readHealth() {
      const res = await optional('/v1/jobs/{id}/health', `/v1/jobs/${enc(id)}/health`).catch(() => ({ missing: true }));
      health = res.missing ? null : res.data;
      for (const r of (health && health.ranks) || []) hr.set(r.rank, r);
      if (health || job.nranks > LAST_LINE_RANKS) return;
      await Promise.all((job.ranks || []).map(async r => {
        const page = await logPage(id, { rank: r.rank, tail: 1 }).catch(() => null);
        if (page && page.lines.length) hr.set(r.rank, { ...(hr.get(r.rank) || {}), last_line_time: page.lines[0].time });
      }));
    }

    // The lead card for the state; replaced only when what it shows changed (keyboard focus
    // on its button stays).
    function show(el, key) {
      if (lead.firstChild !== el) clear(lead, el);
      leadKey = key;
    }
    async function renderLead() {
      const s = job.state;
      charts.el.hidden = (s === 'queued' || s === 'starting') && !series;
      if (s === 'failed' || s === 'preempted' || (s === 'restarting' && job.first_failure)) {
        const sum = await failure.refresh(job);
        blame = sum ? { rank: sum.rank, suspects: sum.suspects } : { rank: job.first_failure ? job.first_failure.rank : null };
        show(failure.el, 'failure');
        return;
      }
      if (job.stalled && !TERMINAL.has(s)) {
        const st = health && health.stall;
        blame = { quiet: (st && st.quiet) || [] };
        const key = JSON.stringify(['stall', st && st.summary, st && st.quiet, job.message]);
        if (key !== leadKey) stall.render(job, st);
        show(stall.el, key);
        return;
      }
      blame = {};
      const pick = s === 'queued' || s === 'starting' ? [waitCard, job, resume]
        : s === 'succeeded' ? [finalCard, job, series] : s === 'cancelled' || s === 'cancelling' ? [cancelledCard, job]
          : [runningCard, job, health];
      const key = JSON.stringify([s, job.suspended, job.reason, job.message, job.progress, health && health.status,
        health && health.reasons, series ? [...series.keys()] : 0]);
      if (key !== leadKey) show(pick[0](...pick.slice(1)), key);
    }

    function renderRanks() {
      const list = job.ranks || [];
      if (list.length && list.every(r => r.state === 'pending')) { /* a table of dashes says nothing */
        clear(ranks, h('p', { class: 'muted' }, `${list.length} rank${list.length === 1 ? '' : 's'}, none started yet.`));
        return;
      }
      clear(ranks, ranksTable(job, hr, blame, allRanks, () => { allRanks = true; renderRanks(); }));
    }

    async function loadEvents() {
      const ev = await get(`/v1/jobs/${enc(id)}/events?after=${lastEvent}`).catch(() => ({ items: [] }));
      if (!ev.items.length) return;
      const atEnd = events.scrollTop + events.clientHeight >= events.scrollHeight - 4 || lastEvent === 0;
      for (const e of ev.items) { events.append(eventEl(e)); lastEvent = Math.max(lastEvent, e.seq); }
      if (atEnd) events.scrollTop = events.scrollHeight; /* the newest event in view */
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
      await loadEvents();
      /* health and charts every third refresh: the slower signals, and the larger answers */
      const slow = polls++ % 3 === 0 || TERMINAL.has(job.state) || job.stalled;
      if (slow) {
        const [, s] = await Promise.all([readHealth(), job.state === 'queued' ? null : charts.refresh(job)]);
        if (s) series = s;
      }
      await renderLead();
      const rk = JSON.stringify([job.ranks, [...hr], blame]);
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
