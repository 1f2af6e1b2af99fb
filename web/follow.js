// follow: a live log follow over Server-Sent Events that survives dropped connections and daemon
// restarts. Without a token it uses EventSource; with one it reads the stream with fetch() and
// parses SSE itself, because EventSource cannot send an Authorization header. Every reconnect
// resumes after the last sequence number seen, and lines at or below it are ignored, so a line
// is never shown twice.
import { request, token, enc, ApiError } from './api.js';

const MIN_DELAY = 500, MAX_DELAY = 10000;

// follow(id, {rank, stream}, {after, onLines(lines), onEnd(state), onDropped(info),
// onStatus(status, detail)}) -> {close()}. Status: connecting, live, reconnecting, ended.
export function follow(jobId, filters, handlers) {
  let lastSeq = handlers.after || 0;
  let closed = false, es = null, ctrl = null, timer = null, delay = MIN_DELAY, esFailures = 0;
  let pending = [], flushTimer = null;

  const status = (s, d) => handlers.onStatus && handlers.onStatus(s, d);
  const flush = () => {
    flushTimer = null;
    if (!pending.length) return;
    const batch = pending;
    pending = [];
    handlers.onLines(batch);
  };
  const deliver = line => {
    if (typeof line.seq !== 'number' || line.seq <= lastSeq) return;
    lastSeq = line.seq;
    pending.push(line);
    if (!flushTimer) flushTimer = setTimeout(flush, 40);
  };
  const url = withAfter => {
    const q = new URLSearchParams({ follow: 'true', format: 'sse' });
    for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
    if (withAfter && lastSeq) q.set('after', String(lastSeq));
    return `/v1/jobs/${enc(jobId)}/logs?${q}`;
  };
  const finish = state => {
    if (closed) return;
    flush();
    close();
    status('ended', state);
    if (handlers.onEnd) handlers.onEnd(state);
  };
  const retry = why => {
    if (closed) return;
    flush();
    status('reconnecting', why);
    timer = setTimeout(open, delay);
    delay = Math.min(delay * 2, MAX_DELAY);
  };
  const onEvent = (type, data) => {
    if (type === 'line') deliver(JSON.parse(data));
    else if (type === 'end') finish(JSON.parse(data).state);
    else if (type === 'dropped' && handlers.onDropped) handlers.onDropped(JSON.parse(data));
  };

  function openEventSource() {
    es = new EventSource(url(true));
    es.addEventListener('open', () => { delay = MIN_DELAY; esFailures = 0; status('live'); });
    for (const t of ['line', 'end', 'dropped'])
      es.addEventListener(t, e => onEvent(t, e.data));
    es.addEventListener('error', () => {
      if (closed || !es) return;
      if (es.readyState !== EventSource.OPEN) esFailures++;
      es.close();
      es = null;
      retry('connection lost');
    });
  }

  async function openFetch() {
    ctrl = new AbortController();
    const headers = lastSeq ? { 'Last-Event-ID': String(lastSeq) } : {};
    try {
      const res = await request('GET', url(false),
        { raw: true, accept: 'text/event-stream', headers, signal: ctrl.signal });
      delay = MIN_DELAY;
      status('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replace(/\r\n?/g, '\n');
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          parseBlock(buf.slice(0, cut));
          buf = buf.slice(cut + 2);
          if (closed) return;
        }
      }
      retry('stream ended');
    } catch (e) {
      if (closed || e.name === 'AbortError') return;
      if (e instanceof ApiError && e.status === 404) finish('deleted');
      else if (e instanceof ApiError && e.status === 401) finish('unauthorized');
      else retry(e.message);
    }
  }

  function parseBlock(block) {
    let type = 'message', data = [];
    for (const line of block.split('\n')) {
      if (!line || line[0] === ':') continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let v = i < 0 ? '' : line.slice(i + 1);
      if (v[0] === ' ') v = v.slice(1);
      if (field === 'event') type = v;
      else if (field === 'data') data.push(v);
    }
    if (data.length) onEvent(type, data.join('\n'));
  }

  function open() {
    timer = null;
    if (closed) return;
    status('connecting');
    /* EventSource cannot say why it failed (a 401 looks like any error): after a few failures
       without ever connecting, try fetch, which can prompt for a token. */
    if (!token() && window.EventSource && esFailures < 3) openEventSource();
    else { esFailures = 0; openFetch(); }
  }

  function close() {
    closed = true;
    if (es) es.close();
    es = null;
    if (ctrl) ctrl.abort();
    if (timer) clearTimeout(timer);
    if (flushTimer) { clearTimeout(flushTimer); flushTimer = null; }
  }

  open();
  return { close, get lastSeq() { return lastSeq; } };
}
