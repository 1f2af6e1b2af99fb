// app: the page's entry point. Wires the token prompt, the session corner, the "daemon not
// answering" banner and the router to the views (one module per view).
import * as api from './api.js';
import { start } from './router.js';
import { h, clear } from './dom.js';
import jobs from './jobs.js';
import job from './job.js';
import logs from './logs.js';
import submit from './submit.js';
import nodes from './nodes.js';
import hooks from './hooks.js';
import usage from './usage.js';

const $ = id => document.getElementById(id);
const TITLES = { jobs: 'Jobs', job: 'Job', logs: 'Logs', submit: 'Submit a job', nodes: 'Nodes',
  hooks: 'Triggers and webhooks', usage: 'Usage', notfound: 'Not found' };
let authOn = null;

const notfound = {
  mount(main, route) {
    main.append(h('h1', { tabindex: '-1' }, 'Not found'),
      h('p', {}, `There is no page at ${route.path}. `, h('a', { href: '#/jobs' }, 'See the jobs.')));
  },
};

function promptToken(reason) {
  const dlg = $('token-dialog'), input = $('token-input');
  $('token-why').textContent = reason || 'This daemon needs an API token.';
  input.value = '';
  dlg.returnValue = '';
  dlg.showModal();
  input.focus();
  return new Promise(resolve => dlg.addEventListener('close', () => {
    const t = input.value.trim();
    input.value = '';
    const ok = dlg.returnValue === 'ok' && t !== '';
    if (ok) api.setToken(t);
    renderSession();
    resolve(ok);
  }, { once: true }));
}

function renderSession() {
  const el = $('session');
  if (authOn === false) {
    clear(el, h('span', { class: 'pill', title: 'The daemon runs with --auth=off on loopback' },
      'auth off'));
  } else if (api.token()) {
    clear(el, h('button', { type: 'button', class: 'link', on: { click: signOut } }, 'Sign out'));
  } else {
    clear(el, h('button', { type: 'button', class: 'link', on: { click: signIn } }, 'Sign in'));
  }
}

async function signIn() {
  if (await promptToken('Give an API token (trainyard token create, or the admin token).'))
    window.dispatchEvent(new HashChangeEvent('hashchange'));
}

function signOut() {
  api.setToken('');
  renderSession();
  signIn();
}

function onRoute(route) {
  document.title = `${TITLES[route.view] || 'trainyard'} · trainyard`;
  for (const a of document.querySelectorAll('[data-nav]')) {
    const here = a.dataset.nav === route.view || (a.dataset.nav === 'jobs' &&
      (route.view === 'job' || route.view === 'logs'));
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const h1 = document.querySelector('main h1');
  if (h1 && document.activeElement !== document.body) h1.focus({ preventScroll: true });
}

function onOnline(e) {
  const el = $('status');
  if (e.detail) {
    el.textContent = 'The daemon answers again.';
    el.className = 'banner ok';
    setTimeout(() => { if (el.className === 'banner ok') el.hidden = true; }, 2500);
  } else {
    el.textContent = 'The daemon is not answering; retrying…';
    el.className = 'banner warn';
    el.hidden = false;
  }
}

async function main() {
  $('skip').addEventListener('click', e => { e.preventDefault(); $('main').focus(); });
  window.addEventListener('ty-online', onOnline);
  api.onTokenPrompt(promptToken);
  authOn = await api.authEnabled();
  renderSession();
  if (authOn && !api.token()) await api.askToken('This daemon needs an API token.');
  api.routes();
  start({ jobs, job, logs, submit, nodes, hooks, usage, notfound }, $('main'), onRoute);
}

main();
