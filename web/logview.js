// logview: a virtualised list of log lines. It holds a window of at most MAX_BUFFER lines around
// what the user looks at, fetches more by cursor (before/after the first/last sequence number it
// holds) as the user scrolls, and keeps in the DOM only the rows on screen (plus a margin), so a
// million-line log costs what a screenful costs. Rows have a fixed height; long lines are cut for
// the row and shown whole in the line's detail.
import { h, clear, parseTime } from './dom.js';

const MAX_BUFFER = 20000, PAGE = 500, OVERSCAN = 15, EDGE_ROWS = 150, MAX_ROW_CHARS = 2000;
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;

export function cleanLine(s) {
  s = String(s);
  if (s.includes('\x1b')) s = s.replace(ANSI, '');
  const cr = s.lastIndexOf('\r', s.length - 2);
  return cr >= 0 ? s.slice(cr + 1).replace(/\r$/, '') : s.replace(/\r$/, '');
}

// Text with [start, end) character ranges wrapped in <mark>.
export function marked(text, ranges) {
  const frag = document.createDocumentFragment();
  let at = 0;
  for (const [s, e] of ranges.slice().sort((a, b) => a[0] - b[0])) {
    if (e <= at) continue;
    const from = Math.max(s, at);
    if (from > at) frag.append(text.slice(at, from));
    frag.append(h('mark', {}, text.slice(from, e)));
    at = e;
  }
  if (at < text.length) frag.append(text.slice(at));
  return frag;
}

// Ranges where any of terms (lower case) occurs in text, case-insensitively.
export function termRanges(text, terms) {
  const lower = text.toLowerCase(), out = [];
  for (const t of terms) {
    if (!t) continue;
    for (let i = lower.indexOf(t); i >= 0; i = lower.indexOf(t, i + t.length)) out.push([i, i + t.length]);
  }
  return out;
}

export function shortTime(iso) {
  const d = parseTime(iso);
  if (isNaN(d)) return '';
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

export class LogView {
  // fetch({before|after, limit}) -> {lines, next}; onSelect(line); onTrimEnd() when lines at the
  // live end had to be dropped (the follow must pause); onEdge(which) when a page ran out.
  constructor({ fetch, onSelect, onTrimEnd, onError, label }) {
    Object.assign(this, { fetch, onSelect, onTrimEnd, onError });
    this.lines = [];
    this.rendered = new Map();
    this.terms = [];
    this.target = 0;
    this.selected = 0;
    this.gen = 0;
    this.stick = false;
    this.atStart = this.atEnd = true;
    this.spacer = h('div', { class: 'spacer' });
    this.layer = h('div', { class: 'rows', role: 'list' });
    this.empty = h('p', { class: 'log-empty muted' });
    this.el = h('div', { class: 'logview', tabindex: '0', role: 'region', 'aria-label': label },
      this.spacer, this.layer, this.empty);
    this.el.addEventListener('scroll', () => this.onScroll(), { passive: true });
    this.el.addEventListener('click', e => {
      const row = e.target.closest('.logrow');
      if (row) this.select(Number(row.dataset.seq));
    });
    this.rowH = 20;
    this.frame = 0;
  }

  measure() {
    const probe = h('div', { class: 'logrow' }, 'x');
    this.layer.append(probe);
    this.rowH = probe.getBoundingClientRect().height || 20;
    probe.remove();
  }

  get firstSeq() { return this.lines.length ? this.lines[0].seq : 0; }
  get lastSeq() { return this.lines.length ? this.lines[this.lines.length - 1].seq : 0; }
  get atBottom() {
    return this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - this.rowH * 2;
  }

  // Replaces everything (new position or filters); in-flight page loads are discarded.
  reset(lines, { atStart, atEnd, emptyText }) {
    this.gen++;
    this.lines = lines;
    this.atStart = atStart;
    this.atEnd = atEnd;
    this.emptyText = emptyText || 'No lines.';
    this.rendered.clear();
    this.layer.replaceChildren();
    this.layout();
  }

  setTerms(terms) {
    this.terms = terms;
    this.rendered.clear();
    this.render();
  }

  indexOf(seq) {
    let lo = 0, hi = this.lines.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.lines[mid].seq < seq) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  scrollToSeq(seq) {
    this.target = seq;
    this.stick = false;
    this.rendered.clear();
    const i = Math.min(this.indexOf(seq), Math.max(0, this.lines.length - 1));
    this.el.scrollTop = Math.max(0, i * this.rowH - this.el.clientHeight / 2 + this.rowH / 2);
    this.render();
  }

  scrollToEnd() {
    this.stick = true;
    this.el.scrollTop = this.el.scrollHeight;
    this.render();
  }

  select(seq) {
    this.selected = seq;
    this.rendered.clear();
    this.render();
    const l = this.lines[this.indexOf(seq)];
    if (l && l.seq === seq && this.onSelect) this.onSelect(l);
  }

  append(lines) {
    let added = 0;
    for (const l of lines) {
      if (this.lines.length && l.seq <= this.lastSeq) continue;
      this.lines.push(l);
      added++;
    }
    if (!added) return;
    const stick = this.stick || this.atBottom;
    this.trim();
    this.layout();
    if (stick) this.scrollToEnd();
  }

  prepend(lines) {
    const first = this.firstSeq;
    const older = first ? lines.filter(l => l.seq < first) : lines;
    if (!older.length) return;
    this.lines = older.concat(this.lines);
    this.layout();
    this.el.scrollTop += older.length * this.rowH;
    this.trim();
    this.render();
  }

  // Keeps the buffer bounded: drops the end farther from the viewport.
  trim() {
    const excess = this.lines.length - MAX_BUFFER;
    if (excess <= 0) return;
    const drop = excess + PAGE;
    const centre = (this.el.scrollTop + this.el.clientHeight / 2) / this.rowH;
    if (this.stick || centre > this.lines.length / 2) {
      this.lines.splice(0, drop);
      this.el.scrollTop = Math.max(0, this.el.scrollTop - drop * this.rowH);
      this.atStart = false;
    } else {
      this.lines.length -= drop;
      this.atEnd = false;
      if (this.onTrimEnd) this.onTrimEnd();
    }
    this.layout();
  }

  layout() {
    this.spacer.style.height = `${this.lines.length * this.rowH}px`;
    this.empty.hidden = this.lines.length > 0;
    this.empty.textContent = this.emptyText || '';
    this.el.dataset.first = this.firstSeq;
    this.el.dataset.last = this.lastSeq;
    this.el.dataset.count = this.lines.length;
    this.render();
  }

  onScroll() {
    if (!this.atBottom) this.stick = false;
    if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(); });
    const top = this.el.scrollTop / this.rowH;
    const bottom = (this.el.scrollTop + this.el.clientHeight) / this.rowH;
    if (top < EDGE_ROWS) this.loadOlder();
    if (bottom > this.lines.length - EDGE_ROWS) this.loadNewer();
  }

  async loadOlder() {
    if (this.atStart || this.busyOlder || !this.lines.length) return;
    this.busyOlder = true;
    const gen = this.gen;
    try {
      const { lines, first } = await this.fetch({ before: this.firstSeq, limit: PAGE });
      if (gen !== this.gen) return;
      if (!lines.length || (first && lines[0].seq <= first)) this.atStart = true;
      this.prepend(lines);
    } catch (e) {
      if (this.onError) this.onError(e);
    } finally {
      this.busyOlder = false;
    }
  }

  async loadNewer() {
    if (this.atEnd || this.busyNewer || !this.lines.length) return;
    this.busyNewer = true;
    const gen = this.gen;
    try {
      const page = await this.fetch({ after: this.lastSeq, limit: PAGE });
      if (gen !== this.gen) return;
      if (!page.next) this.atEnd = true;
      this.append(page.lines);
      if (this.atEnd && this.onReachEnd) this.onReachEnd();
    } catch (e) {
      if (this.onError) this.onError(e);
    } finally {
      this.busyNewer = false;
    }
  }

  row(l) {
    const cls = `logrow rk${((l.rank % 12) + 12) % 12}${l.stream === 'stderr' ? ' err' : ''}` +
      `${l.seq === this.target ? ' target' : ''}${l.seq === this.selected ? ' sel' : ''}`;
    let text = cleanLine(l.line);
    if (text.length > MAX_ROW_CHARS) text = `${text.slice(0, MAX_ROW_CHARS)}…`;
    const txt = h('span', { class: 'txt' });
    if (this.terms.length) txt.append(marked(text, termRanges(text, this.terms)));
    else txt.textContent = text;
    return h('div', { class: cls, role: 'listitem', dataset: { seq: l.seq } },
      h('span', { class: 'seq' }, l.seq), h('span', { class: 'rank', title: `rank ${l.rank}` }, l.rank),
      h('span', { class: 'ts' }, shortTime(l.time)), txt);
  }

  render() {
    const n = this.lines.length;
    const first = Math.max(0, Math.floor(this.el.scrollTop / this.rowH) - OVERSCAN);
    const last = Math.min(n, Math.ceil((this.el.scrollTop + this.el.clientHeight) / this.rowH) + OVERSCAN);
    const next = new Map(), rows = [];
    for (let i = first; i < last; i++) {
      const l = this.lines[i];
      const el = this.rendered.get(l.seq) || this.row(l);
      next.set(l.seq, el);
      rows.push(el);
    }
    this.rendered = next;
    this.layer.style.transform = `translateY(${first * this.rowH}px)`;
    const cur = this.layer.children;
    if (cur.length !== rows.length || rows.some((r, i) => cur[i] !== r)) this.layer.replaceChildren(...rows);
  }

  clearDom() { clear(this.layer); }
}
