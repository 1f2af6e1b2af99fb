// Browser test of the web page against the real daemon (auth on, then off): token prompt,
// submit through the form, live list, validation errors next to fields, live log follow, search,
// a failed job's diagnosis and its evidence, cancel and retry, a training job's progress,
// loss chart and health, a node mark, a trigger's and a webhook's deliveries (tests/web/live.js,
// all through the real routes), a daemon kill -9 during a follow (fetch reader with a token, then EventSource without), a million-line log, XSS attempts
// shown as text, phone layout, and no console errors. Screenshots go to $TY_BUILD/screenshots.
'use strict';
const fs = require('fs');
const { TOKEN, SHOTS, sleep, check, summary, Daemon, killStrays, browser, shot, collectLines,
  checkSequence, tmpdir } = require('./lib.js');
const { trainingJob, diagnosis, nodeMarks, hooks } = require('./live.js');
const { hfCharts, failureCard, everyRankTimedOut, stalledCard, queuedCard, searchColumns, runningJob } = require('./page.js');
const { usage } = require('./usage.js');

const NET_ERRORS = /net::ERR_|Failed to load resource/;
const sh = script => ['sh', '-c', script];

async function main() {
  const t0 = Date.now();
  fs.rmSync(SHOTS, { recursive: true, force: true });
  const work = tmpdir();
  const d = new Daemon(work);
  let ctx;
  try {
    await d.start();
    ctx = await browser(work);
    const page = ctx.pages()[0] || await ctx.newPage();
    page.setDefaultTimeout(20000);
    const errors = [], dialogs = [];
    let allow = null;
    page.on('console', m => {
      if (m.type() === 'error' && !(allow && allow.test(m.text()))) errors.push(m.text());
    });
    page.on('pageerror', e => errors.push(`uncaught: ${e.message}`));
    page.on('dialog', dlg => { dialogs.push(dlg.message()); dlg.dismiss().catch(() => {}); });
    const T = { page, d, setAllow: re => { allow = re; } };

    const steps = [tokenPrompt, submitForm, validation, followAndSearch, failedJob, cancelAndRetry,
      restartDuringFollow, otherViews, trainingJob, diagnosis, hfCharts, failureCard, everyRankTimedOut, stalledCard,
      queuedCard, searchColumns, runningJob, nodeMarks, hooks, usage, millionLines, authOffEventSource, phone];
    /* TY_WEB_ONLY=regexp runs the steps it names (after the sign-in), for work on one view */
    const only = process.env.TY_WEB_ONLY ? new RegExp(process.env.TY_WEB_ONLY) : null;
    for (const s of steps.filter(x => !only || x === tokenPrompt || only.test(x.name))) {
      const t = Date.now();
      try {
        await s(T);
      } catch (e) {
        check(`${s.name} ran to the end`, false, e.stack.split('\n').slice(0, 3).join(' '));
        await shot(page, `failed-${s.name}`).catch(() => {});
      }
      allow = null;
      console.log(`  ${s.name}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    check('no console errors', errors.length === 0, errors);
    check('no alert() ran (XSS)', dialogs.length === 0, dialogs);
  } finally {
    if (ctx) await ctx.close().catch(() => {});
    await d.stop();
    /* like tests/integration/lib.sh: whatever the sanitizers saw in the daemon fails the test */
    const err = fs.existsSync(`${work}/daemon.err`) ? fs.readFileSync(`${work}/daemon.err`, 'utf8') : '';
    const m = /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/.exec(err);
    check('the sanitizers saw nothing wrong in the daemon', !m, m ? err.slice(m.index, m.index + 3000) : '');
    killStrays(work);
    fs.rmSync(work, { recursive: true, force: true });
  }
  const { passed, failed } = summary();
  console.log(`screenshots in ${SHOTS}; ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

async function tokenPrompt({ page, d, setAllow }) {
  await page.goto(`${d.url}/`);
  await page.waitForSelector('#token-dialog[open]');
  check('auth on: the page asks for a token first', await page.isVisible('#token-input'));
  await shot(page, 'token-prompt');
  setAllow(/status of 401/);
  await page.fill('#token-input', 'ty_not_a_valid_token_at_all');
  await page.click('#token-dialog button[value=ok]');
  await page.waitForFunction(() => document.getElementById('token-dialog').open &&
    /not accepted/.test(document.getElementById('token-why').textContent));
  check('a refused token is asked for again, saying why', true);
  await page.fill('#token-input', TOKEN);
  await page.click('#token-dialog button[value=ok]');
  await page.waitForSelector('main h1:text-is("Jobs")');
  check('token kept in sessionStorage only', await page.evaluate(t =>
    sessionStorage.getItem('trainyard.token') === t && localStorage.length === 0, TOKEN));
  check('signed in: a sign-out button', await page.isVisible('#session button:text("Sign out")'));
}

async function submitForm({ page, d }) {
  await page.click('nav a:text("Submit")');
  await page.fill('#f-name', 'web-form');
  await page.fill('#f-command', 'for i in $(seq 1 20); do echo "step=$i loss=$((100 - i))"; sleep 0.1; done');
  await page.fill('#f-procs_per_node', '2');
  await page.fill('#f-labels', 'team=web\nrun=form');
  await page.fill('#f-env', 'GREETING=<img src=x onerror=alert(1)>');
  await shot(page, 'submit-form');
  await page.click('form.submit-form button[type=submit]');
  await page.waitForURL(/#\/jobs\/[a-z0-9]+$/);
  const id = page.url().split('/').pop();
  await page.waitForSelector('pre.spec:has-text("GREETING")');
  const spec = JSON.parse(await page.textContent('pre.spec'));
  check('form submitted the spec', spec.name === 'web-form' && spec.procs_per_node === 2 &&
    spec.command[0] === 'sh' && spec.labels.team === 'web', spec);
  check('env value with <img onerror> shown as text', spec.env.GREETING === '<img src=x onerror=alert(1)>' &&
    await page.locator('main img').count() === 0);

  await page.click('nav a:text("Jobs")');
  await page.evaluate(() => { window.noReload = true; });
  const row = `tr[data-id="${id}"]`;
  await page.waitForSelector(row);
  check('new job listed with its size and labels', /1 × 2 procs/.test(await page.textContent(row)) &&
    /team=web/.test(await page.textContent(row)));
  await page.waitForSelector(`${row}[data-state="succeeded"]`, { timeout: 30000 });
  check('the list follows the job to its end without a reload', await page.evaluate(() => window.noReload === true));
  check('state shown as text, not colour alone', (await page.textContent(`${row} .badge`)).trim() === 'succeeded');
  await d.submit({ name: 'web-other', command: ['true'], labels: { team: 'other' } });
  await page.fill('#f-selector', 'run=form');
  await page.press('#f-selector', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('table.jobs tbody tr').length === 1);
  check('label filter in the URL', /selector=run%3Dform/.test(page.url()));
  await page.selectOption('#f-state', 'failed');
  await page.waitForFunction(() => document.querySelectorAll('table.jobs tbody tr').length === 0);
  check('state filter', /state=failed/.test(page.url()));
  await page.goto(`${d.url}/#/jobs`);
  await page.waitForFunction(() => document.querySelectorAll('table.jobs tbody tr').length >= 2);
}

async function validation({ page, d, setAllow }) {
  await page.goto(`${d.url}/#/submit`);
  setAllow(/status of 422/); /* Chromium logs every refused request; this one is wanted */
  await page.fill('#f-name', 'Bad_Name');
  await page.fill('#f-command', 'true');
  await page.fill('#f-nodes', '0');
  await page.fill('#f-labels', '<script>alert(1)</script>=x');
  await page.fill('#f-extra', '{"labels": {"<img src=x onerror=alert(1)>": "v"}, "colour": "red"}');
  await page.click('form.submit-form button[type=submit]');
  await page.waitForSelector('#f-name-error:not(:empty)');
  check('name error next to the name field', /DNS-1035|letter/.test(await page.textContent('#f-name-error')));
  check('name field marked invalid', await page.getAttribute('#f-name', 'aria-invalid') === 'true');
  check('nodes error next to the nodes field', (await page.textContent('#f-nodes-error')).length > 0);
  const labels = await page.textContent('#f-labels-error');
  check('label key errors name the keys as text', labels.includes('<script>alert(1)') &&
    labels.includes('<img src=x onerror=alert(1)>'), labels);
  check('unknown field reported at "More fields"', /colour/.test(await page.textContent('#f-extra-error')));
  check('error summary lists them', await page.locator('.error-summary li').count() >= 4);
  check('nothing injected', await page.locator('main img, main script').count() === 0);
  check('URL unchanged (nothing submitted)', /#\/submit$/.test(page.url()));
  await shot(page, 'submit-errors', true);
}

const FOLLOW = 'echo "<script>alert(1)</script>"; echo "<img src=x onerror=alert(1)>"; ' +
  'for i in $(seq 1 60); do echo "tick $i"; if [ $i = 30 ]; then echo "NCCL WARN NET/Socket : peer closed" >&2; fi; sleep 0.08; done';

async function followAndSearch({ page, d }) {
  const id = await d.submit({ name: 'web-follow', command: sh(FOLLOW) });
  await page.goto(`${d.url}/#/jobs/${id}/logs`);
  await page.waitForSelector('.follow-status.live');
  await page.waitForSelector('.logrow .txt:text-is("tick 5")');
  const early = Number(await page.getAttribute('.logview', 'data-count'));
  await page.waitForSelector('.logrow .txt:text-is("tick 40")');
  check('lines arrive while following', Number(await page.getAttribute('.logview', 'data-count')) > early);
  await shot(page, 'logs-follow');
  await page.waitForSelector('.follow-status.ended:has-text("succeeded")', { timeout: 30000 });
  const lines = await collectLines(page);
  checkSequence('live follow', lines, 'tick', 60);
  check('held lines = distinct lines', Number(await page.getAttribute('.logview', 'data-count')) === lines.length);
  check('<script> log line shown as text', lines.some(([, t]) => t === '<script>alert(1)</script>'));
  check('<img onerror> log line shown as text', lines.some(([, t]) => t === '<img src=x onerror=alert(1)>'));
  check('no element made from log text', await page.locator('.logview img, .logview script').count() === 0);

  await page.fill('#l-q', 'nccl');
  await page.click('form[role=search] button');
  await page.waitForSelector('.search .hit');
  check('search highlights the word', (await page.textContent('.search .hit mark')) === 'NCCL');
  check('search shows context', await page.locator('.search .sline.ctx').count() >= 2);
  check('search in the URL', /q=nccl/.test(page.url()));
  const seq = await page.textContent('.search .hit .seq');
  await page.click('.search .hit .seq');
  await page.waitForSelector(`.logrow.target[data-seq="${seq}"]`);
  check('a match jumps to its line', /NCCL WARN/.test(await page.textContent('.logrow.target')) &&
    page.url().includes(`seq=${seq}`));
  await shot(page, 'logs-search');
  await page.fill('#l-rank', '0');
  await page.selectOption('#l-stream', 'stderr');
  await page.click('form[aria-label="Log filters"] button');
  await page.waitForFunction(() => document.querySelector('.logview').dataset.count === '1');
  check('rank and stream filters', /NCCL WARN/.test(await page.textContent('.logrow .txt')) &&
    /stream=stderr/.test(page.url()));
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('a:text("Download")')]);
  const text = fs.readFileSync(await download.path(), 'utf8');
  check('download (with the token) holds the filtered log', download.suggestedFilename() === `web-follow-${id}.log` &&
    text === '[rank 0] NCCL WARN NET/Socket : peer closed\n', text.slice(0, 80));
}

const FAIL = 'if [ "$RANK" = 1 ]; then echo "loading shard 3"; sleep 0.3; echo "Traceback (most recent call last):" >&2; ' +
  'echo "  File \\"train.py\\", line 7, in <module>" >&2; ' +
  'echo "RuntimeError: CUDA error: an illegal memory access was encountered" >&2; exit 1; fi; sleep 30';

async function failedJob({ page, d }) {
  const id = await d.submit({ name: 'web-fail', command: sh(FAIL), procs_per_node: 2 });
  await d.waitState(id, 'failed');
  await d.waitLogComplete(id);
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.waitForSelector('#sec-diag >> xpath=.. >> .evidence a');
  check('ranks table shows the exit', /exit 1/.test(await page.textContent('#sec-ranks >> xpath=..')));
  check('timeline shows the rank exit', /rank_exited/.test(await page.textContent('.timeline')));
  await shot(page, 'job-failed', true);
  const link = page.locator('.evidence li:has-text("RuntimeError") a').first();
  await link.click();
  await page.waitForSelector('.logrow.target');
  check('evidence link opens the log at that line', /RuntimeError: CUDA error/.test(await page.textContent('.logrow.target')));
  await shot(page, 'logs-evidence');
  await page.goto(`${d.url}/#/jobs`);
  const row = `tr[data-id="${id}"]`;
  await page.waitForSelector(row);
  check('list shows the first failure', /rank 1/.test(await page.textContent(`${row} td.failure`)));
}

async function cancelAndRetry({ page, d }) {
  const id = await d.submit({ name: 'web-sleep', command: ['sleep', '60'] });
  await d.waitState(id, 'running');
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.click('main .actions button:text("Cancel")');
  await page.waitForSelector('#confirm-dialog[open]');
  await shot(page, 'confirm-cancel');
  check('cancel asks first, with buttons that say what they do', (await page.textContent('#confirm-cancel')) === 'Keep it running' &&
    (await page.textContent('#confirm-ok')) === 'Cancel the job');
  await page.click('#confirm-dialog button[value=cancel]');
  await sleep(300);
  check('"Keep it running" keeps the job', (await d.api('GET', `/v1/jobs/${id}`)).body.state === 'running');
  await page.click('main .actions button:text("Cancel")');
  await page.click('#confirm-dialog button[value=ok]');
  check('cancelled after confirmation', await d.waitState(id, 'cancelled', 15000) === 'cancelled');
  await page.waitForSelector('main h1 .badge:text("cancelled")');
  await page.click('main .actions button:text("Retry")');
  await page.click('#confirm-dialog button[value=ok]');
  await page.waitForURL(u => !u.href.endsWith(id) && /#\/jobs\/[a-z0-9]+$/.test(u.href));
  const again = page.url().split('/').pop();
  const a = (await d.api('GET', `/v1/jobs/${again}`)).body, b = (await d.api('GET', `/v1/jobs/${id}`)).body;
  check('retry submits the same spec as a new job', again !== id && JSON.stringify(a.spec) === JSON.stringify(b.spec));
  await d.api('POST', `/v1/jobs/${again}/cancel`);
}

const TICKS = 'for i in $(seq 1 80); do echo "restart $i"; sleep 0.1; done';

// kill -9 of the daemon while following; it comes back on the same port and data.
async function followThroughRestart({ page, d, setAllow }, name, prefix) {
  const id = await d.submit({ name, command: sh(TICKS.replace('restart', prefix)) });
  const follows = [];
  const onRequest = r => {
    if (/\/logs\?.*follow=true/.test(r.url()))
      follows.push(Number(r.headers()['last-event-id'] || new URL(r.url()).searchParams.get('after') || 0));
  };
  page.on('request', onRequest);
  await page.goto(`${d.url}/#/jobs/${id}/logs`);
  await page.waitForSelector(`.logrow .txt:text-is("${prefix} 10")`);
  setAllow(NET_ERRORS);
  await d.kill9();
  const seen = Number(await page.getAttribute('.logview', 'data-last'));
  const before = follows.length;
  await page.waitForSelector('.follow-status.wait');
  check(`${name}: says it is reconnecting`, /Reconnecting/.test(await page.textContent('.follow-status')));
  await shot(page, `${name}-reconnecting`);
  await sleep(800);
  await d.start();
  await page.waitForSelector('.follow-status.ended:has-text("succeeded")', { timeout: 40000 });
  checkSequence(`${name}: follow across kill -9`, await collectLines(page), prefix, 80);
  page.off('request', onRequest);
  const resumed = follows.slice(before);
  check(`${name}: reconnects resume after the last line seen`, resumed.length > 0 && resumed.every(a => a >= seen),
    { seen, resumed });
  setAllow(null);
}

async function restartDuringFollow(T) {
  await followThroughRestart(T, 'web-restart', 'restart');
}

async function otherViews({ page, d }) {
  await page.goto(`${d.url}/#/nodes`);
  check('nodes: the daemon has /v1/nodes', await d.hasRoute('GET', '/v1/nodes'));
  await page.waitForSelector('main table td[data-label="Node"]');
  const nodes = await page.textContent('main table');
  check('nodes: this machine is listed, with its rank slots and its GPUs (none here)',
    /localhost/.test(nodes) && /0 of \d+ in use/.test(nodes) && /none/.test(nodes), nodes);
  await shot(page, 'nodes');
  await page.goto(`${d.url}/#/hooks`);
  check('hooks: the daemon has /v1/triggers', await d.hasRoute('GET', '/v1/triggers'));
  await page.waitForSelector('main .empty');
  check('hooks: says there are none yet, and what would show', /No triggers\./.test(await page.textContent('main')) &&
    !/not available/.test(await page.textContent('main')));
  await shot(page, 'hooks');
  await page.goto(`${d.url}/#/nowhere`);
  check('unknown page says so', /Not found/.test(await page.textContent('main h1')));
}

async function millionLines({ page, d }) {
  const id = await d.submit({ name: 'web-million', command: ['seq', '-f', 'line %.0f', '1', '1000000'] });
  await d.waitState(id, 'succeeded', 60000);
  await d.waitLogComplete(id);
  let t = Date.now();
  await page.goto(`${d.url}/#/jobs/${id}/logs`);
  await page.waitForSelector('.logrow .txt:text-is("line 1000000")');
  const open = Date.now() - t;
  check('a million-line log opens at its end quickly', open < 5000, `${open} ms`);
  const rows = () => page.locator('.logrow').count();
  check('only the visible rows are in the DOM', await rows() < 200, await rows());
  t = Date.now();
  await page.fill('#l-seq', '500000');
  await page.click('form[aria-label="Go to a line"] button');
  await page.waitForSelector('.logrow.target[data-seq="500000"]');
  const jump = Date.now() - t;
  check('jump to line 500000', (await page.textContent('.logrow.target .txt')) === 'line 500000' && jump < 3000, `${jump} ms`);
  const first0 = Number(await page.getAttribute('.logview', 'data-first'));
  for (let i = 0; i < 15; i++) {
    await page.evaluate(() => { document.querySelector('.logview').scrollTop = 0; });
    await sleep(80);
  }
  const first1 = Number(await page.getAttribute('.logview', 'data-first'));
  check('scrolling up fetches older lines by cursor', first1 < first0 - 1000, `${first0} -> ${first1}`);
  const held = Number(await page.getAttribute('.logview', 'data-count'));
  check('lines held stay bounded', held <= 20000 && await rows() < 200, `${held} held`);
  t = Date.now();
  await page.fill('#l-q', '"line 777777"');
  await page.click('form[role=search] button');
  await page.waitForSelector('.search .hit');
  check('search a million lines', (await page.textContent('.search .hit .txt')) === 'line 777777', `${Date.now() - t} ms`);
  await shot(page, 'logs-million');
}

async function authOffEventSource(T) {
  const { page, d, setAllow } = T;
  setAllow(NET_ERRORS);
  await d.stop();
  await d.start(['--auth=off']);
  setAllow(null);
  const sources = [];
  page.on('request', r => { if (r.resourceType() === 'eventsource') sources.push(r.url()); });
  await page.goto(`${d.url}/#/jobs`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForSelector('#session .pill:text("auth off")');
  check('auth off: no prompt, a notice', !(await page.isVisible('#token-dialog')));
  await followThroughRestart(T, 'web-es', 'es');
  check('without a token the follow uses EventSource', sources.length >= 2, sources.length);
}

async function phone({ page, d }) {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${d.url}/#/jobs`);
  await page.waitForSelector('table.jobs tbody tr');
  check('phone: no sideways scrolling', await page.evaluate(() => document.documentElement.scrollWidth <= 391));
  await shot(page, 'jobs-phone');
  const id = await page.getAttribute('table.jobs tbody tr', 'data-id');
  await page.goto(`${d.url}/#/jobs/${id}/logs`);
  await page.waitForSelector('.logrow');
  await shot(page, 'logs-phone');
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.waitForSelector('#sec-ranks');
  await shot(page, 'job-phone', true);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(`${d.url}/#/jobs`);
  await page.waitForSelector('table.jobs tbody tr');
  await shot(page, 'jobs-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.reload();
  await page.waitForSelector('#sec-ranks');
  await page.keyboard.press('Tab');
  check('keyboard: first Tab reaches the skip link', await page.evaluate(() => document.activeElement.id === 'skip'));
}

main().catch(e => { console.error(e); process.exit(1); });
