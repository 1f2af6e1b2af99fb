// jobcards: the cards of a job page that answer the question its state asks, besides a failure
// (jobdiag.js): queued, why it waits; running, its progress, throughput, ETA and health;
// succeeded, its final metrics and what it used; cancelled, who did. And the training charts
// (charts.js) under them. Each card is a function of the job (and what its routes answered),
// so another reason to wait or another usage figure is one more row here.
import { optional, get, enc } from './api.js';
import { h, clear, badge, notAvailable, errorNote, duration, runTime, num, progressEl } from './dom.js';
import { lineChart, readMetrics, chartGroups, exact, SUMMARY } from './charts.js';
import { usageCost } from './usage.js';

function dl(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function card(id, title, ...children) {
  return h('section', { class: 'card lead', 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

const procs = job => {
  const s = job.spec || {};
  const gpus = s.resources && s.resources.gpus;
  return gpus ? `${(s.nodes || 1) * gpus} GPU${(s.nodes || 1) * gpus === 1 ? '' : 's'}`
    : `${job.nranks} process${job.nranks === 1 ? '' : 'es'}`;
};

// Why a queued job waits, as sentences: [text, ...]. The daemon's reason and message first.
export function waitReasons(job) {
  const out = [];
  if (job.suspended) out.push('It is suspended: it starts only when someone resumes it.');
  else if (job.reason === 'Resumed') out.push('It was resumed and waits for free slots.');
  if (job.message && !/^resumed;/.test(job.message)) out.push(job.message);
  if (!job.suspended) out.push(`It needs ${procs(job)} at once${job.queue ? ` in queue ${job.queue}` : ''}` +
    `${job.priority ? `, priority ${job.priority}` : ''}; it starts when that many are free.`);
  return out;
}

export function waitCard(job, onResume) {
  return card('sec-wait', job.state === 'starting' ? 'Starting' : 'Waiting',
    h('p', { class: 'summary-line' }, job.state === 'starting' ? `Starting its ${job.nranks} rank${job.nranks === 1 ? '' : 's'}…`
      : `Queued: ${job.suspended ? 'suspended' : 'waiting for free slots'}.`),
    h('ul', { class: 'plain why' }, waitReasons(job).map(t => h('li', {}, t))),
    job.suspended ? h('p', { class: 'actions' }, h('button', { type: 'button', class: 'primary', on: { click: onResume } }, 'Resume')) : null);
}

function progressFacts(p) {
  if (!p) return [];
  return [['Progress', progressEl(p)], ['Epoch', typeof p.epoch === 'number' ? exact(p.epoch) : null],
    ['Loss', p.loss !== undefined && p.loss !== null ? exact(p.loss) : null],
    ['Throughput', p.throughput ? `${num(+p.throughput.toPrecision(4))} ${p.throughput_unit || ''}` : null],
    ['Time per step', p.step_seconds ? `${exact(+p.step_seconds.toPrecision(3))} s` : null]];
}

// Running: progress, throughput, ETA and health (status, why, stragglers).
export function runningCard(job, health) {
  const hd = health || {};
  const reasons = hd.reasons || [];
  const stragglers = (hd.ranks || []).filter(r => r.straggler).map(r => r.rank);
  return card('sec-run', 'Running',
    dl([...progressFacts(job.progress), ['Run time', duration(runTime(job))],
      ['Health', hd.status ? [badge(hd.status), reasons.length ? ` ${reasons.join('; ')}` : ' every rank alive and reporting'] : null],
      ['Stragglers', stragglers.length ? `rank${stragglers.length > 1 ? 's' : ''} ${stragglers.join(', ')}` : null]]),
    job.progress ? null : h('p', { class: 'muted' }, 'No progress line recognised yet (tqdm, Hugging Face, Megatron, DeepSpeed or step=N loss=X).'));
}

// The last value of each one-value series (Hugging Face's closing summary) and of the charts'.
function finalValues(series) {
  const out = [];
  for (const [name, list] of series) {
    const s = list[0];
    const last = s.points[s.points.length - 1];
    if (last && (SUMMARY.test(name) || s.points.length === 1)) out.push([name.replace(/_/g, ' '), exact(last.value)]);
  }
  return out;
}

// Succeeded: the final metrics and what the job used.
export function finalCard(job, series) {
  const ms = runTime(job);
  const s = job.spec || {};
  const gpus = (s.resources && s.resources.gpus) ? (s.nodes || 1) * s.resources.gpus : 0;
  const hours = ms ? ms / 3600000 : 0;
  /* usage: the daemon's count of the ranks' own run times (job.usage, usage.js), else an estimate */
  const u = job.usage, used = u ? (gpus ? u.gpu_seconds : u.rank_seconds) / 3600 : (gpus || job.nranks) * hours;
  return card('sec-final', 'Finished',
    h('p', { class: 'summary-line' }, `Succeeded after ${duration(ms)}${job.restarts ? ` and ${job.restarts} restart${job.restarts > 1 ? 's' : ''}` : ''}.`),
    dl([...progressFacts(job.progress && { ...job.progress, eta_seconds: 0 }),
      ...(series ? finalValues(series) : [])]),
    h('h3', {}, 'Usage'),
    dl([['Run time', duration(ms)], ['Size', procs(job)],
      [gpus ? 'GPU hours' : 'Process hours', exact(+used.toPrecision(3))], ['Cost', usageCost(u)]]));
}

export function cancelledCard(job) {
  return card('sec-cancel', 'Cancelled', h('p', { class: 'summary-line' },
    job.message ? `Cancelled: ${job.message}.` : 'Cancelled before it ended.'),
  job.started_at ? dl([['Ran for', duration(runTime(job))]]) : null);
}

// The exact last point of a downsampled series (its last bucket is a mean).
async function exactTail(jobId, s) {
  const pts = s.points;
  if (!s.downsampled || pts.length < 2) return;
  const since = new Date(pts[pts.length - 2].time).toISOString();
  const q = new URLSearchParams({ name: s.name.replace(/ \(rank \d+\)$/, ''), since, downsample: '100000' });
  if (s.rank !== undefined) q.set('rank', String(s.rank));
  const tail = readMetrics(await get(`/v1/jobs/${enc(jobId)}/metrics?${q}`).catch(() => null));
  const raw = [...tail.values()][0];
  if (raw && raw[0].points.length) pts.push(raw[0].points[raw[0].points.length - 1]);
}

// The training charts; refresh() returns the series read (the final card lists their last values).
export function chartsPanel(jobId) {
  const body = h('div', { class: 'charts' }, h('p', { class: 'muted' }, 'Loading…'));
  const el = h('section', { class: 'card', 'aria-labelledby': 'sec-charts' }, h('h2', { id: 'sec-charts' }, 'Training'), body);
  let extra = new Set(), last = null;
  function render(series) {
    const { groups, others } = chartGroups(series);
    const epochs = series.has('epoch') ? new Map(series.get('epoch').map(e =>
      [e.rank, e.points.slice().sort((a, b) => a.time - b.time)])) : null;
    if (!groups.length && !others.length) {
      clear(body, h('p', { class: 'muted' }, 'No metric series reported yet.'));
      return;
    }
    const shown = groups.concat([...extra].filter(n => others.includes(n)).map(n => ({ title: n, names: [n] })));
    clear(body, shown.map((g, i) => lineChart({ title: g.title, id: `chart-${i}`, epochs,
      series: g.names.flatMap(n => series.get(n).slice(0, 8)) })),
    others.filter(n => !extra.has(n)).length ? h('div', { class: 'more-series' }, h('span', { class: 'muted small' }, 'More series: '),
      others.filter(n => !extra.has(n)).map(n => h('button', { type: 'button', class: 'small-btn',
        on: { click: () => { extra.add(n); render(series); } } }, n))) : null);
  }
  return {
    el,
    async refresh(job) {
      let res;
      try {
        res = await optional('/v1/jobs/{id}/metrics', `/v1/jobs/${enc(jobId)}/metrics`);
      } catch (e) {
        clear(body, errorNote(e));
        return null;
      }
      if (res.missing) { clear(body, notAvailable('Metrics', 'GET /v1/jobs/{id}/metrics')); return null; }
      const series = readMetrics(res.data);
      await Promise.all([...series.values()].flat().map(s => exactTail(jobId, s)));
      const key = JSON.stringify([...series].map(([n, l]) => [n, l.map(s => s.points.length), l[0].points[l[0].points.length - 1]]));
      if (key !== last) {
        last = key;
        render(series);
      }
      return series;
    },
  };
}
