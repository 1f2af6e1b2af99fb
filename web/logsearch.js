// logsearch: the search panel of the log view. GET /v1/jobs/{id}/logs/search answers matches
// with their context lines and the byte ranges (`spans`) of the words found; the panel shows
// them highlighted, each with a button that shows the line in the log.
import { get, enc } from './api.js';
import { h, clear, errorNote } from './dom.js';
import { cleanLine, marked, termRanges, shortTime } from './logview.js';

const LIMIT = 50, CONTEXT = 2;

// 'nccl "watchdog timeout"' -> ['nccl', 'watchdog timeout'].
export function queryTerms(q) {
  const out = [], re = /"([^"]*)"?|(\S+)/g;
  let m;
  while ((m = re.exec(q || ''))) {
    const t = (m[1] !== undefined ? m[1] : m[2]).toLowerCase().trim();
    if (t) out.push(t);
  }
  return out;
}

// Byte ranges [start, length] of the UTF-8 text -> character ranges of the JS string.
export function charRanges(line, spans) {
  const at = new Map();
  let b = 0, i = 0;
  for (const ch of line) {
    at.set(b, i);
    const cp = ch.codePointAt(0);
    b += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    i += ch.length;
  }
  at.set(b, i);
  const out = [];
  for (const [s, n] of spans || []) {
    const a = at.get(s), e = at.get(s + n);
    if (a !== undefined && e !== undefined) out.push([a, e]);
  }
  return out;
}

function lineEl(l, cls, ranges, onJump) {
  const text = ranges ? l.line : cleanLine(l.line);
  return h('div', { class: `sline ${cls} rk${((l.rank % 12) + 12) % 12}${l.stream === 'stderr' ? ' err' : ''}`,
    dataset: { seq: l.seq } },
    h('button', { type: 'button', class: 'seq link', 'aria-label': `Show line ${l.seq} in the log`,
      on: { click: () => onJump(l.seq) } }, String(l.seq)),
    h('span', { class: 'rank', title: `rank ${l.rank}` }, l.rank),
    h('span', { class: 'ts' }, shortTime(l.time)),
    h('span', { class: 'txt' }, ranges ? marked(text, ranges) : text));
}

// The matched line with its highlights: the server's spans when the text is plain, else the
// query's terms found again in the cleaned text (ANSI codes would shift the offsets).
function hitEl(m, terms, onJump) {
  const plain = !/[\x1b\r]/.test(m.line);
  const ranges = plain ? charRanges(m.line, m.spans) : null;
  if (plain && ranges.length) return lineEl(m, 'hit', ranges, onJump);
  const text = cleanLine(m.line);
  return lineEl({ ...m, line: text }, 'hit', termRanges(text, terms), onJump);
}

export function searchPanel({ jobId, filters, onJump }) {
  const heading = h('h2', { id: 'search-title' }, 'Search');
  const summary = h('p', { class: 'muted small', 'aria-live': 'polite' });
  const list = h('ol', { class: 'matches' });
  const more = h('button', { type: 'button', hidden: true }, 'More matches');
  const closeBtn = h('button', { type: 'button', class: 'link' }, 'Close');
  const el = h('section', { class: 'card search', 'aria-labelledby': 'search-title', hidden: true },
    h('div', { class: 'card-head' }, heading, closeBtn), summary, list, more);
  let q = '', next = null, total = 0, gen = 0;
  const shown = new Map(); /* seq -> its element in the list */
  closeBtn.addEventListener('click', () => { el.hidden = true; });
  more.addEventListener('click', () => page(next));

  async function page(after) {
    const mine = gen;
    const params = new URLSearchParams({ q, context: String(CONTEXT), limit: String(LIMIT) });
    for (const [k, v] of Object.entries(filters())) if (v) params.set(k, v);
    if (after) params.set('after', String(after));
    more.disabled = true;
    let res;
    try {
      res = await get(`/v1/jobs/${enc(jobId)}/logs/search?${params}`);
    } catch (e) {
      if (mine === gen) clear(summary, errorNote(e));
      return;
    } finally {
      more.disabled = false;
    }
    if (mine !== gen) return;
    const terms = queryTerms(q);
    for (const m of res.matches) {
      /* a line is shown once: context of two matches, or a match that was another's context */
      const prev = shown.get(m.seq);
      const hit = hitEl(m, terms, onJump);
      if (prev) { prev.replaceWith(hit); shown.set(m.seq, hit); }
      const ctx = ls => ls.filter(l => !shown.has(l.seq)).map(l => {
        const el = lineEl(l, 'ctx', null, onJump);
        shown.set(l.seq, el);
        return el;
      });
      const before = ctx(m.before || []);
      if (!prev) shown.set(m.seq, hit);
      const after = ctx(m.after || []);
      if (!prev) list.append(h('li', { class: 'match' }, before, hit, after));
      else if (after.length) hit.after(...after);
    }
    total += res.matches.length;
    next = res.next_after;
    more.hidden = !next;
    const secs = res.stats && typeof res.stats.seconds === 'number' ? ` in ${res.stats.seconds.toFixed(2)} s` : '';
    const said = q.includes('"') ? q : `“${q}”`;
    summary.textContent = total
      ? `${total}${next ? '+' : ''} matching line${total === 1 ? '' : 's'} for ${said}${secs}.`
      : `No line holds ${said}.`;
  }

  return {
    el,
    run(query) {
      gen++;
      q = query;
      next = null;
      total = 0;
      shown.clear();
      list.replaceChildren();
      summary.textContent = 'Searching…';
      heading.textContent = `Search: ${q}`;
      el.hidden = false;
      page(null);
    },
    hide() { gen++; el.hidden = true; },
  };
}
