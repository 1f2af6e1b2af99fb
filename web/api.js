// api: every call to the daemon goes through request(). It adds the bearer token kept in
// sessionStorage, asks for a token when the daemon answers 401 (once for all requests waiting),
// turns problem+json into ApiError, and tells the page when the daemon stops or starts answering.

const KEY = 'trainyard.token';
let prompter = null;
let prompting = null;
let online = true;
let declined = false;

export class ApiError extends Error {
  constructor(status, problem, path) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
    this.path = path;
  }
}

export class NetError extends Error {}

export const enc = encodeURIComponent;
export const token = () => sessionStorage.getItem(KEY) || '';
export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
  if (t) declined = false;
}

// fn(reason) resolves to true when the user gave a token, false when they gave up.
export function onTokenPrompt(fn) { prompter = fn; }

// Once the user dismissed the prompt, polling views do not bring it back; "Sign in" does.
export function askToken(reason) {
  if (declined) return Promise.resolve(false);
  if (!prompting) {
    prompting = Promise.resolve(prompter ? prompter(reason) : false)
      .then(ok => { declined = !ok; return ok; })
      .finally(() => { prompting = null; });
  }
  return prompting;
}

function setOnline(v) {
  if (v === online) return;
  online = v;
  window.dispatchEvent(new CustomEvent('ty-online', { detail: v }));
}

async function readProblem(res) {
  try {
    const t = await res.text();
    return t ? JSON.parse(t) : { title: res.statusText };
  } catch (e) {
    return { title: res.statusText || `HTTP ${res.status}` };
  }
}

// request('GET', '/v1/jobs', {body, contentType, headers, accept, raw, signal}).
// Resolves to the parsed JSON (null for 204), or the Response itself with raw: true.
export async function request(method, path, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: opts.accept || 'application/json', ...(opts.headers || {}) };
    const t = token();
    if (t) headers.Authorization = `Bearer ${t}`;
    let body = opts.body;
    if (body !== undefined) {
      if (typeof body !== 'string') body = JSON.stringify(body);
      headers['Content-Type'] = opts.contentType || 'application/json';
    }
    let res;
    try {
      res = await fetch(path, { method, headers, body, signal: opts.signal, cache: 'no-store' });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      setOnline(false);
      throw new NetError('cannot reach the daemon');
    }
    setOnline(true);
    if (res.status === 401 && attempt < 5) {
      const problem = await readProblem(res);
      if (token() !== t) continue; /* another request already got a new token */
      const why = t ? `The token was not accepted: ${problem.detail || 'unauthorized'}.`
        : problem.detail || 'This daemon needs a token.';
      if (await askToken(why)) continue;
      throw new ApiError(401, problem, path);
    }
    if (!res.ok) throw new ApiError(res.status, await readProblem(res), path);
    if (opts.raw) return res;
    if (res.status === 204) return null;
    return res.json();
  }
}

export const get = (path, opts) => request('GET', path, opts);
export const post = (path, body, opts) => request('POST', path, { ...opts, body });

// The daemon's routes, from its OpenAPI document (kept equal to its route table by a test), so
// that the page asks only for what this daemon serves.
let routeSet = null;
export function routes() {
  if (!routeSet) {
    routeSet = fetch('/openapi.yaml', { cache: 'no-store' })
      .then(r => (r.ok ? r.text() : null)).then(parseRoutes)
      .catch(() => { routeSet = null; return null; });
  }
  return routeSet;
}

function parseRoutes(text) {
  if (!text) return null;
  const set = new Set();
  let inPaths = false, path = null;
  for (const line of text.split('\n')) {
    if (/^\S/.test(line)) { inPaths = line.startsWith('paths:'); continue; }
    if (!inPaths) continue;
    let m = /^ {2}["']?(\/[^"':]*)["']?:\s*$/.exec(line);
    if (m) { path = m[1]; continue; }
    m = /^ {4}(get|post|put|patch|delete):/.exec(line);
    if (m && path) set.add(`${m[1].toUpperCase()} ${path}`);
  }
  return set;
}

// True when the daemon serves METHOD pattern (or when its document could not be read).
export async function has(method, pattern) {
  const s = await routes();
  return !s || s.has(`${method} ${pattern}`);
}

function missingRoute(e) {
  return e instanceof ApiError && (e.status === 404 || e.status === 405) &&
    /^no such path|is not allowed on/.test(e.problem.detail || '');
}

// GET of a route that may not exist yet: {missing: true} or {data}.
export async function optional(pattern, path, opts) {
  if (!(await has('GET', pattern))) return { missing: true };
  try {
    return { data: await request('GET', path, opts) };
  } catch (e) {
    if (missingRoute(e)) return { missing: true };
    throw e;
  }
}

// A page of log lines as NDJSON: {lines, next, first, complete}.
export async function logPage(id, params, signal) {
  const q = new URLSearchParams({ format: 'ndjson', ...params });
  const res = await request('GET', `/v1/jobs/${enc(id)}/logs?${q}`,
    { raw: true, accept: 'application/x-ndjson', signal });
  const text = await res.text();
  const lines = [];
  for (const l of text.split('\n')) if (l) lines.push(JSON.parse(l));
  const hdr = n => res.headers.get(n);
  return { lines, next: hdr('Trainyard-Next-After') ? Number(hdr('Trainyard-Next-After')) : 0,
    first: Number(hdr('Trainyard-First-Seq') || 0),
    complete: hdr('Trainyard-Log-Complete') === 'true',
    dropped: Number(hdr('Trainyard-Dropped-Lines') || 0) };
}

// Whether the daemon asks for tokens, from /readyz (public): true, false or null (unknown).
export async function authEnabled() {
  try {
    const r = await fetch('/readyz', { cache: 'no-store' });
    const j = await r.json();
    setOnline(true);
    return typeof j.auth === 'string' ? j.auth === 'on' : null;
  } catch (e) {
    setOnline(false);
    return null;
  }
}
