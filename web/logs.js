// logs: the merged timeline of a job's ranks. Opens at the end (following live while the job
// runs) or at a sequence number (?seq=N, the target of evidence links); rank and stream filters;
// search (?q=) with highlighted matches and context; a line's detail; download. Lines come by
// cursor pages as the user scrolls (logview.js), never the whole log at once.
import { get, request, logPage, enc, token, ApiError } from './api.js';
import { h, clear, badge, errorNote, TERMINAL, every } from './dom.js';
import { href, replaceParams } from './router.js';
import { follow } from './follow.js';
import { LogView, cleanLine, marked, termRanges, shortTime } from './logview.js';
import { searchPanel, queryTerms } from './logsearch.js';

const PAGE = 500, AROUND = 250;

export default {
  mount(main, route) {
    const id = route.id;
    let p = Object.fromEntries(['rank', 'stream', 'q', 'seq'].map(k => [k, route.params.get(k) || '']));
    let job = null, follower = null, followOn = true, alive = true;
    const filters = () => ({ rank: p.rank, stream: p.stream });
    const clean = o => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== '' && v !== undefined));

    const title = h('h1', { tabindex: '-1' }, 'Logs');
    const stateEl = h('span');
    const rankIn = h('input', { id: 'l-rank', name: 'rank', placeholder: 'all', size: 8,
      autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'l-rank-hint' });
    const streamSel = h('select', { id: 'l-stream', name: 'stream' },
      h('option', { value: '' }, 'both'), h('option', { value: 'stdout' }, 'stdout'),
      h('option', { value: 'stderr' }, 'stderr'));
    const qIn = h('input', { id: 'l-q', name: 'q', type: 'search', placeholder: 'words or "a phrase"',
      autocomplete: 'off', spellcheck: 'false' });
    const seqIn = h('input', { id: 'l-seq', name: 'seq', type: 'number', min: 1, inputmode: 'numeric' });
    const followBtn = h('button', { type: 'button', 'aria-pressed': 'true' }, 'Follow');
    const download = h('a', { class: 'button', download: '' }, 'Download');
    const status = h('span', { class: 'follow-status', 'aria-live': 'polite' });
    const counts = h('span', { class: 'muted small' });
    const problems = h('div');
    const detail = h('section', { class: 'card line-detail', 'aria-label': 'Selected line', hidden: true });
    const view = new LogView({ label: 'Log lines', fetch: pageOf, onSelect: showLine,
      onTrimEnd: () => { stopFollow(); setStatus('paused', 'Follow paused: go to End to follow again.'); },
      onError: showError });
    view.onReachEnd = () => { if (live() && followOn && !follower) startFollow(); };
    const search = searchPanel({ jobId: id, filters, onJump: seq => jumpTo(seq) });

    const filterForm = h('form', { class: 'toolbar', 'aria-label': 'Log filters' },
      h('div', { class: 'field' }, h('label', { for: 'l-rank' }, 'Ranks'), rankIn,
        h('span', { id: 'l-rank-hint', class: 'sr-only' }, 'ranks and ranges, e.g. 0,3-5; empty for all')),
      h('div', { class: 'field' }, h('label', { for: 'l-stream' }, 'Stream'), streamSel),
      h('button', { type: 'submit' }, 'Apply'));
    const searchForm = h('form', { class: 'toolbar', role: 'search', 'aria-label': 'Search the log' },
      h('div', { class: 'field grow' }, h('label', { for: 'l-q' }, 'Search'), qIn),
      h('button', { type: 'submit' }, 'Search'));
    const jumpForm = h('form', { class: 'toolbar', 'aria-label': 'Go to a line' },
      h('div', { class: 'field' }, h('label', { for: 'l-seq' }, 'Line (seq)'), seqIn),
      h('button', { type: 'submit' }, 'Go'));
    const nav = h('div', { class: 'toolbar buttons' },
      h('button', { type: 'button', on: { click: () => openAtStart() } }, 'Start'),
      h('button', { type: 'button', on: { click: () => { followOn = true; syncFollowBtn(); openAtEnd(); } } }, 'End'),
      followBtn, download);
    const tools = h('details', { class: 'tools', open: matchMedia('(min-width: 761px)').matches },
      h('summary', {}, 'Filters, search, go to line'),
      h('div', { class: 'toolbars' }, filterForm, searchForm, jumpForm, nav));
    main.append(h('div', { class: 'view-head' }, title, stateEl),
      tools,
      problems, h('div', { class: 'log-status' }, status, counts),
      h('div', { class: 'log-body' }, view.el, search.el), detail);
    view.measure();

    filterForm.addEventListener('submit', e => {
      e.preventDefault();
      p = { ...p, rank: rankIn.value.trim(), stream: streamSel.value };
      syncUrl();
      reopen();
      if (p.q) search.run(p.q);
    });
    searchForm.addEventListener('submit', e => {
      e.preventDefault();
      p.q = qIn.value.trim();
      syncUrl();
      view.setTerms(queryTerms(p.q));
      if (p.q) search.run(p.q); else search.hide();
    });
    jumpForm.addEventListener('submit', e => {
      e.preventDefault();
      const n = Number(seqIn.value);
      if (n >= 1) jumpTo(n);
    });
    followBtn.addEventListener('click', () => {
      followOn = !followOn;
      syncFollowBtn();
      if (followOn) openAtEnd(); else { stopFollow(); setStatus('paused', 'Follow off.'); }
    });
    download.addEventListener('click', downloadLog);
    view.el.addEventListener('keydown', e => {
      if (e.key === 'Home' && !view.atStart) { e.preventDefault(); openAtStart(); }
      if (e.key === 'End' && !view.atEnd) { e.preventDefault(); openAtEnd(); }
    });

    function live() { return job && !TERMINAL.has(job.state); }
    function syncFollowBtn() { followBtn.setAttribute('aria-pressed', String(followOn)); }
    function syncInputs() {
      rankIn.value = p.rank;
      streamSel.value = p.stream;
      qIn.value = p.q;
      seqIn.value = p.seq;
      const q = new URLSearchParams(clean({ ...filters(), format: 'text' }));
      download.href = `/v1/jobs/${enc(id)}/logs/download?${q}`;
    }
    function syncUrl() { replaceParams(`/jobs/${id}/logs`, clean(p)); syncInputs(); }
    function showError(e) { clear(problems, errorNote(e)); }
    function setStatus(kind, text) {
      status.className = `follow-status ${kind}`;
      status.textContent = text;
    }
    function updateCounts() {
      counts.textContent = view.lines.length
        ? ` · holding lines ${view.firstSeq}–${view.lastSeq} (${view.lines.length.toLocaleString()})` : '';
    }
    async function pageOf(params) {
      const page = await logPage(id, clean({ ...filters(), ...params }));
      queueMicrotask(updateCounts);
      return page;
    }
    const startOf = page => !page.lines.length || page.lines[0].seq <= page.first;
    const emptyText = () => (p.rank || p.stream ? 'No lines match these filters.'
      : live() ? 'No lines yet; waiting for the job to print…' : 'This job printed nothing.');

    function stopFollow() {
      if (follower) follower.close();
      follower = null;
    }
    function startFollow() {
      stopFollow();
      follower = follow(id, clean(filters()), {
        after: view.lastSeq,
        onLines: lines => { view.append(lines); updateCounts(); },
        onDropped: info => clear(problems, h('p', { class: 'note' }, `The daemon's retention dropped the oldest ` +
          `${Number(info.dropped_lines).toLocaleString()} lines; the log now starts at line ${info.first_seq}.`)),
        onStatus: (s, d) => {
          if (s === 'live') setStatus('live', 'Live');
          else if (s === 'connecting') setStatus('wait', 'Connecting…');
          else if (s === 'reconnecting') setStatus('wait', `Reconnecting (${d || 'connection lost'})…`);
        },
        onEnd: state => {
          follower = null;
          view.atEnd = true;
          setStatus('ended', state === 'deleted' ? 'The job was deleted.' : `Job ended: ${state}.`);
          refreshJob();
        },
      });
    }
    async function open(loader) {
      stopFollow();
      clear(problems);
      try {
        await loader();
      } catch (e) {
        view.reset([], { atStart: true, atEnd: true, emptyText: 'Could not read the log.' });
        showError(e);
        return;
      }
      updateCounts();
      if (view.atEnd && followOn && live()) startFollow();
      else if (!live()) setStatus('ended', job ? `Job ${job.state}.` : '');
      else setStatus('paused', followOn ? 'Not at the end: follows again when you reach it.' : 'Follow off.');
    }
    function openAtEnd() {
      p.seq = '';
      syncUrl();
      return open(async () => {
        const page = await logPage(id, clean({ ...filters(), tail: PAGE }));
        view.reset(page.lines, { atStart: startOf(page), atEnd: true, emptyText: emptyText() });
        view.scrollToEnd();
      });
    }
    function openAtStart() {
      p.seq = '';
      syncUrl();
      return open(async () => {
        const page = await logPage(id, clean({ ...filters(), after: 0, limit: PAGE }));
        view.reset(page.lines, { atStart: true, atEnd: !page.next, emptyText: emptyText() });
        view.el.scrollTop = 0;
        view.stick = false;
      });
    }
    function openAt(seq) {
      return open(async () => {
        const [before, after] = await Promise.all([
          seq > 1 ? logPage(id, clean({ ...filters(), before: seq, limit: AROUND })) : { lines: [] },
          logPage(id, clean({ ...filters(), after: seq - 1, limit: AROUND }))]);
        view.reset(before.lines.concat(after.lines),
          { atStart: seq <= 1 || startOf(before), atEnd: !after.next, emptyText: emptyText() });
        view.scrollToSeq(seq);
        const hit = view.lines.find(l => l.seq === seq);
        if (hit) showLine(hit); else detail.hidden = true;
      });
    }
    function jumpTo(seq) {
      p.seq = String(seq);
      syncUrl();
      openAt(seq);
      view.el.focus({ preventScroll: true });
    }
    function reopen() { return p.seq ? openAt(Number(p.seq)) : openAtEnd(); }

    function showLine(l) {
      detail.hidden = false;
      const link = href(`/jobs/${id}/logs`, clean({ ...filters(), seq: l.seq }));
      clear(detail, h('h2', {}, `Line ${l.seq}`),
        h('p', { class: 'meta' }, `rank ${l.rank} · ${l.stream} · ${shortTime(l.time)} · ${l.time}`,
          l.pod ? ` · pod ${l.pod}` : l.pid ? ` · pid ${l.pid}` : '', l.partial ? ' · partial' : '',
          ' · ', h('a', { href: link }, 'link to this line')),
        h('pre', { class: 'full-line' }, marked(cleanLine(l.line), termRanges(cleanLine(l.line), view.terms))),
        h('button', { type: 'button', on: { click: () => { detail.hidden = true; } } }, 'Close'));
    }

    async function downloadLog(e) {
      if (!token()) return; /* no token: the plain link works */
      e.preventDefault();
      try {
        const res = await request('GET', download.getAttribute('href'), { raw: true, accept: 'text/plain' });
        const url = URL.createObjectURL(await res.blob());
        const a = h('a', { href: url, download: `${job ? job.name : 'job'}-${id}.log` });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
      } catch (err) { showError(err); }
    }

    async function refreshJob() {
      try {
        job = await get(`/v1/jobs/${enc(id)}`);
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) alive = false;
        throw e;
      }
      clear(title, 'Logs · ', h('a', { href: href(`/jobs/${id}`) }, job.name));
      clear(stateEl, badge(job.state));
      /* an ended job has nothing to follow: no button that looks pressed */
      followBtn.hidden = !live();
      if (!live()) followBtn.setAttribute('aria-pressed', 'false');
      document.title = `Logs · ${job.name} · trainyard`;
    }

    syncInputs();
    (async () => {
      try { await refreshJob(); } catch (e) { showError(e); if (!alive) return; }
      view.setTerms(queryTerms(p.q));
      await reopen();
      if (p.q) search.run(p.q);
    })();
    const stopPoll = every(5000, () => (job && live() ? refreshJob() : null));
    return {
      update(r) {
        const np = Object.fromEntries(['rank', 'stream', 'q', 'seq'].map(k => [k, r.params.get(k) || '']));
        const moved = np.seq !== p.seq || np.rank !== p.rank || np.stream !== p.stream;
        const searched = np.q !== p.q;
        p = np;
        syncInputs();
        if (moved) reopen();
        if (searched) { view.setTerms(queryTerms(p.q)); if (p.q) search.run(p.q); else search.hide(); }
      },
      unmount() { stopFollow(); stopPoll(); },
    };
  },
};
