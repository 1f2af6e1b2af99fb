// The panels fed by the daemon's diagnosis, nodes and hooks routes, driven the way a user would:
// a local job printing Hugging Face Trainer dicts and a tqdm bar (progress, the loss chart from
// GET /v1/jobs/{id}/metrics, health from /health), a node mark made through the API, and a
// trigger (with its template) and a webhook made through the API, a trigger delivered to with
// fetch as MinIO would, the webhook's messages answered by a receiver in this process. What
// the page shows is compared with what the API answers; nothing is intercepted.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const { check, shot, sleep } = require('./lib.js');

const sh = script => ['sh', '-c', script];
// 40 steps of 0.3 s: a tqdm bar on stderr, a Trainer dict every 5 steps on stdout.
const TRAIN = `for i in $(seq 1 40); do
  printf "\\r%3d%%|###| %d/40 [00:01<00:04, 3.33it/s]" $((i * 100 / 40)) $i >&2
  if [ $((i % 5)) = 0 ]; then
    v=$((300 - i * 5)); printf "{'loss': %d.%02d, 'learning_rate': 5e-05, 'epoch': 0.%02d}\\n" $((v / 100)) $((v % 100)) $i
  fi
  sleep 0.3
done
printf "\\n" >&2`;

async function until(what, fn, ms = 20000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(150)) {
    const v = await fn();
    if (v) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

const sectionText = (page, id) => page.textContent(`#${id} >> xpath=..`);

async function trainingJob({ page, d }) {
  const id = await d.submit({ name: 'web-train', command: sh(TRAIN), labels: { team: 'nlp', model: 'llama-8b' } });
  await page.goto(`${d.url}/#/jobs`);
  const row = `tr[data-id="${id}"]`;
  /* the list shows the progress the daemon parsed from the bar while the job runs */
  await page.waitForSelector(`${row}[data-state="running"] progress`, { timeout: 30000 });
  const listed = await page.textContent(row);
  const step = Number((/(\d+) \/ 40/.exec(listed) || [])[1]);
  check('list: progress from the tqdm bar, step of total', step >= 1 && step <= 40, listed);
  await shot(page, 'jobs');

  await page.goto(`${d.url}/#/jobs/${id}`);
  /* running: the lead card is its progress, from the bar */
  await page.waitForFunction(() => /\d+ \/ 40/.test((document.querySelector('#sec-run, #sec-final') || {}).parentElement?.textContent || ''));
  const api = (await d.api('GET', `/v1/jobs/${id}`)).body;
  const runCard = await sectionText(page, (await page.$('#sec-run')) ? 'sec-run' : 'sec-final');
  check('job: running progress has a total and an ETA', api.state !== 'running' || /ETA/.test(runCard), runCard);

  await d.waitState(id, 'succeeded', 40000);
  await page.waitForSelector('main h1 .badge:text("succeeded")');
  /* once the job has ended the page reads metrics and health one last time */
  await page.waitForSelector('#sec-final');
  await page.waitForFunction(() => /Loss/.test(document.querySelector('#sec-charts').parentElement.textContent));
  const job = (await d.api('GET', `/v1/jobs/${id}`)).body;
  const summary = await sectionText(page, 'sec-final');
  check('job: final progress 40 / 40 from the daemon', job.progress && job.progress.step === 40 && /40 \/ 40/.test(summary),
    { progress: job.progress, summary });
  const fact = name => page.evaluate(n => {
    const dt = [...document.querySelectorAll('#sec-final ~ .facts dt, .lead .facts dt')].find(e => e.textContent === n);
    return dt ? dt.nextElementSibling.textContent : null;
  }, name);
  check('job: loss from the last Trainer dict', job.progress.loss === 1 && await fact('Loss') === '1', summary);
  check('job: no ETA once the job has ended', !/ETA/.test(summary), summary);

  const metrics = (await d.api('GET', `/v1/jobs/${id}/metrics?name=loss`)).body;
  const pts = metrics.series[0].points;
  const figs = await page.$$eval('.charts figure', f => f.map(x => ({ title: x.querySelector('figcaption strong').textContent,
    caption: x.querySelector('figcaption').textContent, x: x.dataset.x, label: x.querySelector('svg').getAttribute('aria-label') })));
  const last = pts[pts.length - 1];
  const loss = figs.find(f => f.title === 'Loss');
  check('chart: the loss points of /metrics, against the bar\'s step', pts.length === 8 && pts[0].value === 2.75 && last.value === 1 &&
    loss && loss.x === 'step' && loss.caption.endsWith(`last 1 at step ${last.step}`), { figs, pts });
  const thr = (await d.api('GET', `/v1/jobs/${id}/metrics?name=it_per_sec`)).body.series[0].points;
  const t = figs.find(f => f.title === 'Throughput');
  check('chart: throughput from the tqdm bar\'s rate', thr.length > 0 && t &&
    t.caption.endsWith(`last ${thr[thr.length - 1].value} at step ${thr[thr.length - 1].step}`), { t, last: thr[thr.length - 1] });
  check('chart: the learning rate is a chart of its own', figs.some(f => f.title === 'Learning rate'), figs.map(f => f.title));

  const health = (await d.api('GET', `/v1/jobs/${id}/health`)).body;
  check('health: each rank\'s last step in the ranks table, no table of its own', health.ranks[0].last_step === 40 &&
    (await page.textContent('table.ranks td[data-label="Last step"]')).trim() === '40' &&
    await page.locator('#sec-health').count() === 0, health.ranks[0]);
  await shot(page, 'job-training', true);
}

async function diagnosis({ page, d }) {
  const jobs = (await d.api('GET', '/v1/jobs?limit=100')).body.items;
  const job = jobs.find(j => j.name === 'web-fail');
  const diag = (await d.api('GET', `/v1/jobs/${job.id}/diagnosis`)).body;
  await page.goto(`${d.url}/#/jobs/${job.id}`);
  await page.waitForSelector('#sec-diag >> xpath=.. >> .summary-line');
  check('diagnosis: the summary of /diagnosis', diag.summary && diag.summary.cause === 'cuda_error' &&
    (await page.textContent('.summary-line')).trim() === diag.summary.summary, diag.summary);
  await page.click('.findings summary');
  check('diagnosis: every finding listed', await page.locator('.findings li.finding').count() === diag.findings.length &&
    diag.findings.length > 0);
  const ev = diag.summary.evidence[0];
  await shot(page, 'job-diagnosis', true);
  await page.click(`#sec-diag >> xpath=.. >> .evidence a[href*="seq=${ev}"]`);
  await page.waitForSelector(`.logrow.target[data-seq="${ev}"]`);
  /* one NDJSON line: lib.js parses it as JSON */
  const line = (await d.api('GET', `/v1/jobs/${job.id}/logs?format=ndjson&after=${ev - 1}&limit=1`)).body;
  check('diagnosis: evidence jumps to its line', line.seq === ev && (await page.textContent('.logrow.target .txt')) === line.line,
    { line, shown: await page.textContent('.logrow.target') });
}

const XSS = 'Xid 79 <img src=x onerror=alert(1)>';

async function nodeMarks({ page, d }) {
  const m = await d.api('POST', '/v1/nodes/gpu-node-7/mark', { state: 'bad', reason: XSS, message: 'fell off the bus' });
  check('mark made through the API', m.status === 200 && m.body.state === 'bad', m);
  await page.goto(`${d.url}/#/nodes`);
  await page.waitForSelector('main table');
  const text = await page.textContent('main table');
  check('nodes: the marked node with its mark, as text', /gpu-node-7/.test(text) && text.includes(`marked bad: ${XSS}`) &&
    await page.locator('main img').count() === 0, text);
  check('nodes: the mark\'s message, who made it and when', /fell off the bus/.test(text) &&
    /by admin-bootstrap/.test(text) && await page.locator('main table .mark time').count() === 1, text);
  check('nodes: no column of dashes for a node outside any cluster', !/Instance|Zone/.test(await page.textContent('main table thead')));
  await shot(page, 'nodes-marked');
  await page.click('main table button:text("Unmark")');
  await page.waitForSelector('#confirm-dialog[open]');
  await page.click('#confirm-dialog button[value=ok]');
  await page.waitForSelector('main .ok-note');
  await page.waitForFunction(() => !/gpu-node-7/.test(document.querySelector('main table').textContent));
  const after = (await d.api('GET', '/v1/nodes')).body.items;
  check('nodes: Unmark removes the mark', after.every(n => !n.marked) &&
    !after.some(n => n.name === 'gpu-node-7') && /localhost/.test(await page.textContent('main table')));
}

// A webhook receiver: 200 to the first message, 503 to every other.
function receiver() {
  let n = 0;
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(n++ === 0 ? 200 : 503); res.end(); });
  });
  return new Promise(r => srv.listen(0, '127.0.0.1', () => r(srv)));
}

async function hooks({ page, d }) {
  const tpl = await d.api('POST', '/v1/templates', { name: 'web-ingest',
    spec: { name: 'ingest-${S3_BUCKET}', command: ['sh', '-c', 'echo "$S3_KEY"'], env: { S3_KEY: '${S3_KEY}' } } });
  check('template made', tpl.status === 201, tpl);
  const trg = await d.api('POST', '/v1/triggers', { name: 'uploads', template: 'web-ingest', sender: 'minio',
    rule: { bucket: 'datasets', prefix: 'incoming/' }, auth: { mode: 'bearer' } });
  check('trigger made with a hook URL and a token', trg.status === 201 && trg.body.secrets.length === 1, trg);
  const body = fs.readFileSync(path.join(__dirname, '../unit/data/trigger/minio-put.json'));
  const deliver = token => fetch(trg.body.hook_url, { method: 'POST', body,
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` } });
  const ok = await deliver(trg.body.secrets[0]);
  const okBody = await ok.json();
  check('delivery with the token accepted', ok.status === 200 && okBody.outcome === 'accepted', okBody);
  const bad = await deliver('tyh_not-the-token-0123456789');
  check('delivery with a wrong token refused', bad.status === 403);
  // A wrong token leaves no row (anyone can send one: issue 17); the sender's own garbage does.
  const garbage = await fetch(trg.body.hook_url, { method: 'POST', body: '{"Records": [',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${trg.body.secrets[0]}` } });
  check('garbage with the token: logged as rejected', garbage.status === 200);
  const jobId = await until('the trigger\'s job', async () => {
    const log = (await d.api('GET', `/v1/triggers/${trg.body.id}/deliveries`)).body.items;
    const acc = log.find(x => x.outcome === 'accepted');
    return acc && acc.events[0] && acc.events[0].job_id;
  });
  await d.waitState(jobId, 'succeeded');

  const srv = await receiver();
  try {
    const wh = await d.api('POST', '/v1/webhooks', { name: 'chat', url: `http://127.0.0.1:${srv.address().port}/hook`,
      events: ['job.stalled'] });
    check('webhook made', wh.status === 201, wh);
    for (let i = 0; i < 2; i++) check('test message queued', (await d.api('POST', `/v1/webhooks/${wh.body.id}/test`)).status === 202);
    const msgs = await until('both messages attempted', async () => {
      const items = (await d.api('GET', `/v1/webhooks/${wh.body.id}/deliveries`)).body.items;
      return items.length === 2 && items.every(x => x.attempts >= 1) ? items : null;
    });
    check('one delivered, one waiting for its retry after a 503',
      msgs.map(x => `${x.state} ${x.last_status}`).sort().join(',') === 'delivered 200,pending 503', msgs);

    await page.goto(`${d.url}/#/hooks?trigger=${trg.body.id}&webhook=${wh.body.id}`);
    await page.waitForSelector(`h3:has-text("Deliveries of uploads (${trg.body.id})")`);
    await page.waitForSelector(`h3:has-text("Deliveries of chat (${wh.body.id})")`);
    const [tbox, wbox] = [await page.textContent('#sec-trigger >> xpath=..'), await page.textContent('#sec-webhook >> xpath=..')];
    check('triggers: the trigger as made, its rule as the pattern it matches', /s3:\/\/datasets\/incoming\/\*/.test(tbox) &&
      /minio/.test(tbox) && /bearer/.test(tbox) && !/"bucket"/.test(tbox), tbox);
    check('triggers: accepted and rejected deliveries with why', /accepted/.test(tbox) && /rejected/.test(tbox) &&
      /JSON/i.test(tbox), tbox);
    check('triggers: the delivery links the job it started',
      await page.locator(`#sec-trigger >> xpath=.. >> a[href="#/jobs/${jobId}"]`).count() === 1);
    check('webhooks: the webhook and its messages\' states', /job\.stalled/.test(wbox) && /delivered/.test(wbox) &&
      /pending/.test(wbox) && /503/.test(wbox), wbox);
    await shot(page, 'hooks-deliveries', true);
    await page.click(`#sec-trigger >> xpath=.. >> a[href="#/jobs/${jobId}"]`);
    await page.waitForSelector(`main h1:has-text("ingest-datasets")`);
    check('the job link opens the trigger\'s job', page.url().endsWith(`#/jobs/${jobId}`));
    await d.api('DELETE', `/v1/webhooks/${wh.body.id}`);
  } finally {
    srv.close();
  }
}

module.exports = { trainingJob, diagnosis, nodeMarks, hooks };
