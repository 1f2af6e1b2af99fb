// jobdiag: the panels of a job that read the diagnosis routes: diagnosis with its evidence lines
// (docs/diagnosis.md), health, and loss/throughput charts. Each route may be missing on this
// daemon: the panel then says so calmly, and the diagnosis falls back to the job's first_failure
// and the failing rank's last stderr lines.
import { optional, logPage, enc } from './api.js';
import { h, clear, badge, section, notAvailable, errorNote, table, brief, time, valueCell } from './dom.js';
import { href } from './router.js';
import { lineChart, readMetrics, pick, LOSS, THROUGHPUT } from './charts.js';
import { cleanLine } from './logview.js';

const SIGNALS = { 1: 'SIGHUP', 2: 'SIGINT', 4: 'SIGILL', 6: 'SIGABRT', 7: 'SIGBUS', 8: 'SIGFPE',
  9: 'SIGKILL', 11: 'SIGSEGV', 13: 'SIGPIPE', 15: 'SIGTERM' };
export const signalName = s => SIGNALS[s] || `signal ${s}`;

function evidenceList(jobId, lines) {
  return h('ol', { class: 'evidence' }, lines.map(l => h('li', {},
    h('a', { href: href(`/jobs/${jobId}/logs`, { seq: l.seq }), 'aria-label': `Line ${l.seq} in the log` },
      `#${l.seq}`),
    h('span', { class: `rank rk${((l.rank % 12) + 12) % 12}` }, `rank ${l.rank}`),
    h('code', {}, cleanLine(l.line)))));
}

async function linesAt(jobId, seqs) {
  const pages = await Promise.all(seqs.slice(0, 20).map(s =>
    logPage(jobId, { after: s - 1, limit: 1 }).catch(() => ({ lines: [] }))));
  return pages.map((p, i) => p.lines.find(l => l.seq === seqs[i])).filter(Boolean);
}

function dl(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// The first failure from the job alone, with the failing rank's last stderr lines as evidence.
async function firstFailure(job) {
  const ff = job.first_failure;
  if (!ff) return null;
  let page = await logPage(job.id, { rank: ff.rank, stream: 'stderr', tail: 5 }).catch(() => null);
  if (!page || !page.lines.length) page = await logPage(job.id, { rank: ff.rank, tail: 5 }).catch(() => null);
  const lines = page ? page.lines : [];
  const how = ff.signal ? signalName(ff.signal)
    : ff.exit_code !== null && ff.exit_code !== undefined ? `exit code ${ff.exit_code}` : '';
  const last = lines.length ? lines[lines.length - 1].seq : null;
  return h('div', { class: 'first-failure' },
    h('p', { class: 'summary-line' }, `Rank ${ff.rank} failed first: ${ff.reason || 'failed'}`,
      how ? ` (${how})` : '', ff.node ? ` on ${ff.node}` : '', ff.at ? ` at ${time(ff.at)}` : '', '.'),
    lines.length ? [h('h3', {}, `Last ${lines[0].stream} lines of rank ${ff.rank}`), evidenceList(job.id, lines),
      h('p', {}, h('a', { class: 'button', href: href(`/jobs/${job.id}/logs`, { rank: ff.rank, seq: last }) },
        `Open rank ${ff.rank}'s log at the failure`))]
      : h('p', { class: 'muted' }, `Rank ${ff.rank} printed nothing.`));
}

function findingEl(jobId, f) {
  const ex = f.exception;
  return h('li', { class: 'finding' },
    h('p', {}, badge(f.role || 'info', 'role'), ' ', f.summary || f.kind,
      f.count > 1 ? h('span', { class: 'muted' }, ` ×${f.count}`) : ''),
    h('p', { class: 'muted small' }, [f.kind, f.source, f.rank !== null && f.rank !== undefined ? `rank ${f.rank}` : 'job',
      f.node, f.time ? time(f.time) : ''].filter(Boolean).join(' · '),
    (f.evidence || []).map(s => [' · ', h('a', { href: href(`/jobs/${jobId}/logs`, { seq: s }) }, `#${s}`)])),
    ex ? h('details', {}, h('summary', {}, `${ex.type || 'Exception'}: ${ex.message || ''}`),
      h('pre', { class: 'frames' }, (ex.frames || []).map(fr =>
        `${fr.file}:${fr.line} in ${fr.function}\n    ${fr.code || ''}\n`).join('') +
        (ex.frames_omitted ? `… ${ex.frames_omitted} frames omitted\n` : ''))) : null);
}

export function diagnosisPanel(jobId) {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const el = section('Diagnosis', 'sec-diag', body);
  let key = '';
  return {
    el,
    async refresh(job) {
      let res;
      try {
        res = await optional('/v1/jobs/{id}/diagnosis', `/v1/jobs/${enc(jobId)}/diagnosis`);
      } catch (e) {
        clear(body, errorNote(e));
        return;
      }
      const sum = res.data && res.data.summary;
      const k = JSON.stringify([res.missing, sum, res.data && res.data.findings && res.data.findings.length,
        job.first_failure, job.state]);
      if (k === key) return;
      key = k;
      const parts = [];
      if (res.missing) parts.push(notAvailable('Diagnosis', 'GET /v1/jobs/{id}/diagnosis'));
      if (sum) {
        const lines = await linesAt(jobId, sum.evidence || []);
        parts.push(h('p', { class: 'summary-line' }, sum.summary || sum.cause),
          dl([['Cause', sum.cause], ['Strength', sum.role],
            ['Worth a restart', sum.retryable ? 'yes' : `no (${sum.retry_class || 'unknown'})`],
            ['Node at fault', sum.node_fault ? 'yes' : null], ['Rank', sum.rank],
            ['Node', sum.node], ['Pod', sum.pod], ['When', sum.time ? time(sum.time) : null],
            ['Also failed', sum.ranks && sum.ranks.length > 1 ? sum.ranks.join(', ') : null],
            ['Suspects', sum.suspects && sum.suspects.length ? sum.suspects.join(', ') : null]]),
          lines.length ? [h('h3', {}, 'Evidence'), evidenceList(jobId, lines)] : null);
      } else if (!res.missing) {
        parts.push(h('p', {}, job.state === 'failed' ? 'No cause found in the logs.' : 'Nothing went wrong so far.'));
      }
      if (!sum && job.first_failure) parts.push(await firstFailure(job));
      else if (res.missing && !job.first_failure) parts.push(h('p', { class: 'muted' }, 'No rank has failed.'));
      const findings = (res.data && res.data.findings) || [];
      if (findings.length) parts.push(h('details', { class: 'findings' },
        h('summary', {}, `All findings (${findings.length})`),
        h('ol', {}, findings.map(f => findingEl(jobId, f)))));
      clear(body, parts);
    },
  };
}

const HEALTH_COLS = ['rank', 'alive', 'state', 'node', 'last_line_time', 'last_step', 'restarts', 'conditions'];

export function healthPanel(jobId) {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const el = section('Health', 'sec-health', body);
  return {
    el,
    async refresh() {
      let res;
      try {
        res = await optional('/v1/jobs/{id}/health', `/v1/jobs/${enc(jobId)}/health`);
      } catch (e) {
        clear(body, errorNote(e));
        return null;
      }
      if (res.missing) { clear(body, notAvailable('Health', 'GET /v1/jobs/{id}/health')); return null; }
      const d = res.data || {};
      const status = d.status || d.overall || 'unknown';
      const ranks = Array.isArray(d.ranks) ? d.ranks : [];
      const keys = [...new Set(ranks.flatMap(r => Object.keys(r)))];
      const cols = HEALTH_COLS.filter(k => keys.includes(k)).concat(keys.filter(k => !HEALTH_COLS.includes(k)));
      const reasons = d.reasons || d.problems || [];
      clear(body, h('p', {}, badge(status), d.message ? ` ${d.message}` : ''),
        reasons.length ? h('ul', {}, reasons.map(r => h('li', {}, brief(r)))) : null,
        ranks.length ? table(cols.map(c => ({ label: c.replace(/_/g, ' '), cell: r => valueCell(c, r[c]) })), ranks,
          'Health of each rank') : null);
      return d;
    },
  };
}

export function chartsPanel(jobId) {
  const body = h('div', { class: 'charts' }, h('p', { class: 'muted' }, 'Loading…'));
  const el = section('Training', 'sec-charts', body);
  return {
    el,
    async refresh() {
      let res;
      try {
        res = await optional('/v1/jobs/{id}/metrics', `/v1/jobs/${enc(jobId)}/metrics`);
      } catch (e) {
        clear(body, errorNote(e));
        return;
      }
      if (res.missing) { clear(body, notAvailable('Metrics', 'GET /v1/jobs/{id}/metrics')); return; }
      const series = readMetrics(res.data);
      const names = [...series.keys()];
      const loss = pick(names, ...LOSS), thr = pick(names, ...THROUGHPUT);
      if (!loss && !thr) { clear(body, h('p', { class: 'muted' }, 'No loss or throughput reported yet.')); return; }
      const others = names.filter(n => n !== loss && n !== thr);
      clear(body, loss ? lineChart({ title: `Loss (${loss})`, series: series.get(loss) }) : null,
        thr ? lineChart({ title: `Throughput (${thr})`, series: series.get(thr) }) : null,
        others.length ? h('p', { class: 'muted small' }, `Other series: ${others.join(', ')}`) : null);
    },
  };
}
