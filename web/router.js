// router: hash routes, so that every view has a URL that can be shared and reloaded:
//   #/jobs?state=running&selector=team%3Dnlp   #/jobs/ID   #/jobs/ID/logs?rank=3&q=nccl&seq=42
//   #/submit?from=ID   #/nodes   #/hooks?trigger=ID   #/usage?range=30d&by=label:team
// A view is {mount(main, route) -> {update(route)?, unmount()?}}. A change of query only
// (filters) calls update() on the mounted view instead of mounting it again.

const table = [
  [/^\/jobs$/, 'jobs'],
  [/^\/jobs\/([^/]+)$/, 'job'],
  [/^\/jobs\/([^/]+)\/logs$/, 'logs'],
  [/^\/submit$/, 'submit'],
  [/^\/nodes$/, 'nodes'],
  [/^\/hooks$/, 'hooks'],
  [/^\/usage$/, 'usage'],
];

export function parse(hash) {
  const raw = (hash || '').replace(/^#/, '');
  const qi = raw.indexOf('?');
  const path = (qi < 0 ? raw : raw.slice(0, qi)) || '/jobs';
  const params = new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1));
  for (const [re, view] of table) {
    const m = re.exec(path);
    if (m) return { view, path, id: m[1] ? decodeURIComponent(m[1]) : null, params };
  }
  return { view: 'notfound', path, id: null, params };
}

// href('/jobs', {state: 'running'}) -> '#/jobs?state=running' (empty values left out).
export function href(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {}))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return `#${path}${s ? '?' + s : ''}`;
}

export function go(path, params) {
  location.hash = href(path, params).slice(1);
}

// Changes the URL to reflect a view's own state without a new history entry or a remount.
export function replaceParams(path, params) {
  const url = href(path, params);
  if (location.hash !== url) history.replaceState(null, '', url);
}

export function start(views, main, onRoute) {
  let current = null, key = null;
  const render = () => {
    if (location.hash && !location.hash.startsWith('#/')) return; /* in-page anchor */
    const route = parse(location.hash);
    const k = `${route.view}:${route.id || ''}`;
    if (current && k === key && current.update) {
      current.update(route);
      return;
    }
    if (current && current.unmount) current.unmount();
    main.replaceChildren();
    key = k;
    const view = views[route.view] || views.notfound;
    current = view.mount(main, route) || {};
    onRoute(route);
  };
  window.addEventListener('hashchange', render);
  render();
}
