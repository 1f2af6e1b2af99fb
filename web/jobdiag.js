// jobdiag: the cards of a job that answer "what went wrong": the failure (the cause first, then
// the innermost frame of the user's code and the evidence lines, docs/diagnosis.md) and the
// stall (which ranks went quiet, their last lines, what to do, one button). The diagnosis
// route may be missing on this daemon: the failure card then says so calmly and falls back to
// the job's first_failure with the failing rank's last stderr lines.
import { optional, logPage, enc } from './api.js';
import { h, clear, badge, notAvailable, errorNote, time, parseTime } from './dom.js';
import { href } from './router.js';
import { cleanLine } from './logview.js';

const SIGNALS = { 1: 'SIGHUP', 2: 'SIGINT', 4: 'SIGILL', 6: 'SIGABRT', 7: 'SIGBUS', 8: 'SIGFPE',
  9: 'SIGKILL', 11: 'SIGSEGV', 13: 'SIGPIPE', 15: 'SIGTERM' };
export const signalName = s => SIGNALS[s] || `signal ${s}`;
const rankClass = r => `rk${((Number(r) % 12) + 12) % 12}`;

// Log lines with their rank, each a link to the line in the log.
export function evidenceList(jobId, lines) {
  return h('ol', { class: 'evidence' }, lines.map(l => h('li', {},
    h('a', { class: 'seq', href: href(`/jobs/${jobId}/logs`, { seq: l.seq }), 'aria-label': `Line ${l.seq} in the log` },
      `#${l.seq}`),
    h('span', { class: `rank ${rankClass(l.rank)}` }, `rank ${l.rank}`),
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

// What a restart can do, in words (the diagnosis' retry class; docs/diagnosis.md).
export function restartWords(cls, cause) {
  if (cls === 'retryable') return 'A restart may help: this kind of failure is often transient.';
  if (cls === 'deterministic') return 'A restart will not help: it would fail the same way again.';
  if (cause === 'hang') return 'A restart may help if the hang was transient; look at the quiet rank first.';
  return 'Unknown whether a restart helps.';
}

// How sure the answer is, for the roles that are not a cause found in the logs.
function sureness(s) {
  const who = s.rank === null || s.rank === undefined ? 'the ranks' : `rank ${s.rank}`;
  if (s.role === 'symptom') return `The logs show how ${who} ended, not why.`;
  if (s.role === 'consequence') return 'This is what the ranks reported; it usually follows a failure elsewhere.';
  return null;
}

const PACKAGE = /(site|dist)-packages\/|\/lib\/python\d|^<|^\/usr\/lib\//;

// The deepest frame of the user's own code in the exception, else its deepest frame.
export function userFrame(ex) {
  const frames = (ex && ex.frames) || [];
  for (let i = frames.length - 1; i >= 0; i--) if (!PACKAGE.test(frames[i].file || '')) return frames[i];
  return frames[frames.length - 1] || null;
}

function frameEl(fr) {
  const base = String(fr.file || '').split('/').pop();
  return h('span', { class: 'frame' }, h('code', {}, `${base}:${fr.line}`), fr.code ? [' ', h('code', {}, fr.code)] : '',
    fr.function && fr.function !== '<module>' ? h('span', { class: 'muted' }, ` in ${fr.function}`) : '');
}

// The outermost frame of the user's code (the entry point: train.py:198 trainer.train()).
function entryFrame(ex) {
  return ((ex && ex.frames) || []).find(fr => !PACKAGE.test(fr.file || '')) || null;
}

// The finding behind the summary that carries a Python exception, if any.
function summaryException(sum, findings) {
  const withEx = findings.filter(f => f.exception);
  return (withEx.find(f => f.pattern === sum.pattern && f.log_rank === sum.log_rank) ||
    withEx.find(f => f.log_rank === sum.log_rank) || null);
}

// A finding's role in plain words (the API's names stay in the data).
const ROLE_WORDS = { cause: 'cause', symptom: 'how it ended', consequence: 'follows another failure', info: 'context' };
function roleBadge(role) {
  const b = badge(role || 'info', 'role');
  b.lastChild.textContent = ROLE_WORDS[role] || role || 'context';
  return b;
}

function findingEl(jobId, f) {
  const ex = f.exception;
  return h('li', { class: 'finding' },
    h('p', {}, roleBadge(f.role), ' ', f.summary || f.kind,
      f.count > 1 ? h('span', { class: 'muted' }, ` ×${f.count}`) : ''),
    h('p', { class: 'muted small' }, [f.kind, f.source, f.rank !== null && f.rank !== undefined ? `rank ${f.rank}` : 'job',
      f.node, f.time ? time(f.time) : ''].filter(Boolean).join(' · '),
    (f.evidence || []).map(s => [' · ', h('a', { href: href(`/jobs/${jobId}/logs`, { seq: s }) }, `#${s}`)])),
    ex ? h('details', {}, h('summary', {}, `${ex.type || 'Exception'}: ${ex.message || ''}`),
      h('pre', { class: 'frames' }, (ex.context ? `${ex.context}\n` : '') + (ex.frames || []).map(fr =>
        `${fr.file}:${fr.line} in ${fr.function}\n    ${fr.code || ''}\n`).join('') +
        (ex.frames_omitted ? `… ${ex.frames_omitted} frames omitted\n` : ''))) : null);
}

// The failure from the job alone (a daemon without the diagnosis route).
async function firstFailure(job) {
  const ff = job.first_failure;
  if (!ff) return h('p', { class: 'muted' }, 'No rank reported a failure.');
  const rank = ff.rank;
  let page = null;
  if (rank !== null && rank !== undefined) {
    page = await logPage(job.id, { rank, stream: 'stderr', tail: 5 }).catch(() => null);
    if (!page || !page.lines.length) page = await logPage(job.id, { rank, tail: 5 }).catch(() => null);
  }
  const lines = page ? page.lines : [];
  const how = ff.signal ? signalName(ff.signal)
    : ff.exit_code !== null && ff.exit_code !== undefined ? `exit code ${ff.exit_code}` : '';
  const last = lines.length ? lines[lines.length - 1].seq : null;
  return h('div', { class: 'first-failure' },
    h('p', { class: 'summary-line' }, rank === null || rank === undefined ? job.message || ff.reason
      : `Rank ${rank} failed first: ${ff.reason || 'failed'}${how ? ` (${how})` : ''}${ff.node ? ` on ${ff.node}` : ''}.`),
    lines.length ? [h('h3', {}, `Last ${lines[0].stream} lines of rank ${rank}`), evidenceList(job.id, lines),
      h('p', {}, h('a', { class: 'button', href: href(`/jobs/${job.id}/logs`, { rank, seq: last }) },
        `Open rank ${rank}'s log at the failure`))] : null);
}

// The evidence lines; a traceback's as a whole (its first and last line are the evidence).
async function evidenceLines(jobId, sum, exf) {
  const ev = sum.evidence || [];
  const a = ev[0], b = ev[ev.length - 1];
  if (exf && ev.length === 2 && b - a < 60 && sum.log_rank !== null && sum.log_rank !== undefined) {
    const page = await logPage(jobId, { rank: sum.log_rank, after: a - 1, limit: 60 }).catch(() => null);
    if (page && page.lines.length) return page.lines.filter(l => l.seq <= b);
  }
  return linesAt(jobId, ev);
}

async function failureBody(job, sum, findings) {
  const exf0 = summaryException(sum, findings);
  const lines = await evidenceLines(job.id, sum, exf0);
  const exf = exf0;
  const fr = exf && userFrame(exf.exception), entry = exf && entryFrame(exf.exception);
  const others = (sum.ranks || []).filter(r => r !== sum.rank);
  const logRank = sum.log_rank ?? sum.rank;
  const at = lines.length ? lines[lines.length - 1].seq : null;
  return [
    h('p', { class: 'summary-line' }, sum.summary || sum.cause),
    dl([['Where', fr ? frameEl(fr) : null],
      ['Called from', entry && entry !== fr ? frameEl(entry) : null],
      ['Exception', exf ? h('code', {}, `${exf.exception.type}: ${exf.exception.message || ''}`) : null],
      ['Raised in', exf && exf.exception.context ? exf.exception.context : null],
      ['Restart', restartWords(sum.retry_class, sum.cause)],
      ['Node at fault', sum.node_fault ? `yes: ${sum.node || 'the node'} is avoided on a restart` : null],
      ['Same failure on', others.length ? `rank${others.length > 1 ? 's' : ''} ${others.join(', ')}` : null],
      ['Probably hung', sum.suspects && sum.suspects.length ? `rank${sum.suspects.length > 1 ? 's' : ''} ${sum.suspects.join(', ')} (behind or silent)` : null],
      ['How sure', sureness(sum)],
      ['When', sum.time ? time(sum.time) : null]]),
    lines.length ? [h('h3', {}, 'Evidence'), evidenceList(job.id, lines)] : null,
    logRank !== null && logRank !== undefined ? h('p', { class: 'actions' },
      h('a', { class: 'button', href: href(`/jobs/${job.id}/logs`, { rank: logRank, seq: at }) },
        `Open rank ${logRank}'s log at the failure`)) : null,
    findings.length ? h('details', { class: 'findings' }, h('summary', {}, `All findings (${findings.length})`),
      h('ol', {}, findings.map(f => findingEl(job.id, f)))) : null,
  ];
}

// The failure card: refresh(job) reads /diagnosis and returns the summary (or null).
export function failurePanel(jobId) {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const el = h('section', { class: 'card lead failure', 'aria-labelledby': 'sec-diag' },
    h('h2', { id: 'sec-diag' }, 'Why it failed'), body);
  let key = '', summary = null;
  return {
    el,
    get summary() { return summary; },
    async refresh(job) {
      let res;
      try {
        res = await optional('/v1/jobs/{id}/diagnosis', `/v1/jobs/${enc(jobId)}/diagnosis`);
      } catch (e) {
        clear(body, errorNote(e));
        return null;
      }
      const d = res.data || {};
      const findings = d.findings || [];
      summary = d.summary || null;
      const k = JSON.stringify([res.missing, summary, findings.length, job.first_failure, job.state]);
      if (k === key) return summary;
      key = k;
      el.querySelector('h2').textContent = job.state === 'preempted' ? 'Why it was preempted'
        : job.state === 'failed' ? 'Why it failed' : 'What went wrong';
      if (summary) clear(body, await failureBody(job, summary, findings));
      else if (res.missing) clear(body, notAvailable('Diagnosis', 'GET /v1/jobs/{id}/diagnosis'), await firstFailure(job));
      else clear(body, h('p', {}, job.message || 'No cause found in the logs.'), await firstFailure(job));
      return summary;
    },
  };
}

// The stall card of a running job, from /health's stall verdict; onCancel is the one action.
export function stallPanel(jobId, onCancel) {
  const body = h('div');
  const el = h('section', { class: 'card lead stalled', 'aria-labelledby': 'sec-stall' },
    h('h2', { id: 'sec-stall' }, 'Stalled'), body);
  const lastLine = r => h('li', {}, h('span', { class: `rank ${rankClass(r.rank)}` }, `rank ${r.rank}`), ' ',
    r.last_line_time ? h('time', { datetime: r.last_line_time, title: time(r.last_line_time) },
      parseTime(r.last_line_time).toLocaleTimeString()) : h('span', { class: 'muted' }, 'never printed'), ' ',
    h('code', {}, r.last_line || ''), ' ',
    r.last_seq ? h('a', { href: href(`/jobs/${jobId}/logs`, { rank: r.rank, seq: r.last_seq }) }, 'in the log') : null);
  return {
    el,
    render(job, stall) {
      const s = stall || {};
      const quiet = s.quiet || [];
      const ranks = s.ranks || [];
      const shown = quiet.length ? ranks.filter(r => quiet.includes(r.rank)) : ranks.slice(0, 8);
      const first = quiet.length ? `rank ${quiet[0]}` : 'the ranks';
      clear(body, h('p', { class: 'summary-line' }, s.summary || job.message || 'No progress within the stall limit.'),
        h('h3', {}, quiet.length ? `Quiet rank${quiet.length > 1 ? 's' : ''} and ${quiet.length > 1 ? 'their' : 'its'} last line`
          : 'The last line of each rank'),
        h('ul', { class: 'plain last-lines' }, shown.map(lastLine)),
        h('p', {}, `A hung job holds its GPUs until it is stopped. Look at ${first}'s last lines (py-spy dump ` +
          '--pid shows where a Python process waits), then cancel it; submit it again if the hang was transient.'),
        h('p', { class: 'actions' }, h('button', { type: 'button', class: 'danger', on: { click: onCancel } }, 'Cancel the job')));
    },
  };
}
