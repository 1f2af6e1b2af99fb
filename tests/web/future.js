// The routes other branches are building (diagnosis, health, metrics, nodes, triggers,
// webhooks), answered in the browser with their documented shapes (docs/diagnosis.md,
// docs/triggers.md) so that the panels that light up when those routes land are tested now.
// Everything else still goes to the real daemon.
'use strict';
const { check, shot } = require('./lib.js');

const PATHS = ['/v1/jobs/{id}/diagnosis', '/v1/jobs/{id}/health', '/v1/jobs/{id}/metrics', '/v1/nodes',
  '/v1/triggers', '/v1/triggers/{id}/deliveries', '/v1/webhooks', '/v1/webhooks/{id}/deliveries'];

function fixtures(job, evidenceSeq) {
  const at = job.finished_at;
  const steps = Array.from({ length: 120 }, (_, i) => i * 10);
  return {
    diagnosis: {
      summary: { cause: 'cuda_error', reason: 'CUDAError', role: 'cause', retryable: false,
        retry_class: 'unknown', node_fault: false, rank: 1, log_rank: 1, node: 'localhost', pod: null,
        time: at, pattern: 'cuda_illegal_address', evidence: [evidenceSeq],
        summary: 'rank 1 hit a CUDA error (an illegal memory access was encountered) on node localhost',
        ranks: [1], suspects: [], exit_code: null, signal: null },
      findings: [
        { kind: 'cuda_error', role: 'cause', retryable: false, retry_class: 'unknown', node_fault: false,
          pattern: 'cuda_illegal_address', source: 'traceback', rank: 1, log_rank: 1, node: 'localhost',
          pod: null, time: at, evidence: [evidenceSeq], count: 1, last_seq: evidenceSeq,
          summary: 'rank 1 hit a CUDA error <script>alert(1)</script>', detail: 'illegal memory access',
          exception: { type: 'RuntimeError', message: 'CUDA error: an illegal memory access was encountered',
            frames: [{ file: 'train.py', line: 7, function: '<module>', code: 'main()' }], frames_omitted: 0 },
          exit_code: null, signal: null, reason: null, message: null },
        { kind: 'exit', role: 'symptom', source: 'exit', rank: 1, log_rank: 1, node: 'localhost', time: at,
          evidence: [], count: 1, summary: 'rank 1 exited with code 1' }],
      findings_dropped: 0 },
    health: { status: 'failing', reasons: ['rank 1 exited with code 1'],
      ranks: [{ rank: 0, alive: false, last_line_time: at, last_step: 1190, restarts: 0, node: 'localhost' },
        { rank: 1, alive: false, last_line_time: at, last_step: 1190, restarts: 0, node: 'localhost' }] },
    metrics: { series: [
      { name: 'loss', points: steps.map(s => [s, 3 * Math.exp(-s / 500) + 0.4 + 0.05 * Math.sin(s)]) },
      { name: 'tokens_per_sec', points: steps.map(s => ({ step: s, value: 12000 + 800 * Math.sin(s / 90) })) },
      { name: 'learning_rate', points: steps.map(s => [s, 1e-4]) }] },
    nodes: { items: [
      { name: 'ip-10-0-1-7', instance_type: 'p5.48xlarge', zone: 'us-east-1a', capacity_type: 'on-demand',
        capacity: { 'nvidia.com/gpu': 8, 'vpc.amazonaws.com/efa': 32 },
        allocatable: { 'nvidia.com/gpu': 8, 'vpc.amazonaws.com/efa': 32 },
        conditions: [{ type: 'Ready', status: 'True' }, { type: 'AcceleratedHardwareReady', status: 'True' },
          { type: 'MemoryPressure', status: 'False' }], jobs: [{ id: job.id, name: job.name, ranks: [0, 1] }] },
      { name: 'ip-10-0-1-9', instance_type: 'p5.48xlarge', zone: 'us-east-1b', capacity_type: 'spot',
        capacity: { 'nvidia.com/gpu': 8, 'vpc.amazonaws.com/efa': 32 }, cordoned: true,
        conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }],
        marks: ['bad: Xid 79 <img src=x onerror=alert(1)>'], jobs: [] }] },
    triggers: { items: [{ id: 'trg_1', name: 'uploads', bucket: 'datasets', prefix: 'incoming/',
      suffix: '.parquet', sender: 'minio', enabled: true }] },
    triggerDeliveries: { items: [
      { received_at: at, sender: 'minio', delivery_id: 'd-1', outcome: 'accepted', status: 200,
        summary: 'incoming/a.parquet: matched', events: 1, matched: 1, job_ids: [job.id] },
      { received_at: at, sender: 'minio', delivery_id: 'd-2', outcome: 'rejected', status: 403,
        summary: '', error: 'bad credentials <script>alert(1)</script>', events: 0, matched: 0, job_ids: [] }] },
    webhooks: { items: [{ id: 'wh_1', name: 'slack', url: 'https://hooks.example.com/T000', events: ['job.failed'],
      format: 'slack', enabled: true }] },
    webhookDeliveries: { items: [
      { time: at, event: 'job.failed', outcome: 'delivered', http_status: 200, attempt: 1 },
      { time: at, event: 'job.failed', outcome: 'retrying', http_status: 503, attempt: 2, next_attempt_at: at }] },
  };
}

async function futureRoutes({ page, d }) {
  const jobs = (await d.api('GET', '/v1/jobs?limit=100')).body.items;
  const job = jobs.find(j => j.name === 'web-fail');
  const ev = (await d.api('GET', `/v1/jobs/${job.id}/logs/search?q=RuntimeError&context=0`)).body.matches[0].seq;
  const fx = fixtures(job, ev);
  const json = (route, body) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
  await page.route('**/openapi.yaml', async route => {
    const res = await route.fetch();
    const extra = PATHS.map(p => `  ${p}:\n    get:\n      operationId: x\n`).join('');
    await route.fulfill({ response: res, body: (await res.text()).replace('\ncomponents:', `\n${extra}components:`) });
  });
  await page.route(/\/v1\/jobs\/[^/]+\/(diagnosis|health|metrics)$/, route =>
    json(route, fx[/\/(\w+)$/.exec(new URL(route.request().url()).pathname)[1]]));
  await page.route(/\/v1\/jobs\/[^/?]+$/, async route => {
    const res = await route.fetch();
    const body = await res.json();
    body.progress = progress;
    await route.fulfill({ response: res, json: body });
  });
  const progress = { step: 1190, total_steps: 2000, loss: 0.41, throughput: 12050, throughput_unit: 'tokens/s',
    eta_seconds: 3600, finished: false, format: 'key=value' };
  await page.route(/\/v1\/jobs\?/, async route => {
    const res = await route.fetch();
    const body = await res.json();
    for (const j of body.items) if (j.name === 'web-train') j.progress = progress;
    await route.fulfill({ response: res, json: body });
  });
  await page.route('**/v1/nodes', route => json(route, fx.nodes));
  await page.route(/\/v1\/(triggers|webhooks)(\/[^/]+\/deliveries)?$/, route => {
    const m = /\/v1\/(triggers|webhooks)(\/[^/]+\/deliveries)?$/.exec(route.request().url());
    const key = m[1] === 'triggers' ? (m[2] ? 'triggerDeliveries' : 'triggers') : m[2] ? 'webhookDeliveries' : 'webhooks';
    return json(route, fx[key]);
  });
  const train = await d.submit({ name: 'web-train', command: ['sleep', '60'], procs_per_node: 4,
    labels: { team: 'nlp', model: 'llama-8b' } });
  try {
    await page.goto(`${d.url}/#/jobs`);
    await page.reload();
    await page.waitForSelector(`tr[data-id="${train}"][data-state="running"] progress`);
    check('list: progress with step of total', /1,190 \/ 2,000/.test(await page.textContent(`tr[data-id="${train}"]`)));
    await shot(page, 'jobs');
    await page.goto(`${d.url}/#/jobs/${job.id}`);
    await page.reload();
    await page.waitForSelector('.summary-line:has-text("CUDA error")');
    check('diagnosis: summary', /illegal memory access/.test(await page.textContent('.summary-line')));
    await page.waitForSelector('svg.chart path.line');
    check('charts: loss and throughput drawn', await page.locator('svg.chart').count() === 2 &&
      /learning_rate/.test(await page.textContent('#sec-charts >> xpath=..')));
    check('health: status and ranks', /failing/.test(await page.textContent('#sec-health >> xpath=..')));
    check('progress: step of total with ETA', /1,190 \/ 2,000/.test(await page.textContent('#sec-summary >> xpath=..')));
    check('findings text escaped', /<script>alert\(1\)<\/script>/.test(await page.textContent('.findings')) &&
      await page.locator('main script, main img').count() === 0);
    await shot(page, 'job-diagnosis', true);
    await page.click('#sec-diag >> xpath=.. >> .evidence a');
    await page.waitForSelector(`.logrow.target[data-seq="${ev}"]`);
    check('diagnosis evidence jumps to its line', /RuntimeError/.test(await page.textContent('.logrow.target')));
    await page.goto(`${d.url}/#/nodes`);
    await page.waitForSelector('main table');
    const nodes = await page.textContent('main table');
    check('nodes: GPU/EFA, conditions, marks, jobs', /8/.test(nodes) && /32/.test(nodes) && /KubeletNotReady/.test(nodes) &&
      /cordoned/.test(nodes) && /web-fail/.test(nodes) && await page.locator('main img').count() === 0);
    await shot(page, 'nodes-k8s');
    await page.goto(`${d.url}/#/hooks?trigger=trg_1&webhook=wh_1`);
    await page.waitForSelector('h3:has-text("Deliveries of uploads (trg_1)")');
    await page.waitForSelector('h3:has-text("Deliveries of slack (wh_1)")');
    const hooks = await page.textContent('main');
    check('triggers: delivery log with outcome and error', /rejected/.test(hooks) && /bad credentials <script>/.test(hooks));
    check('webhooks: delivery log with attempts', /retrying/.test(hooks) && /503/.test(hooks));
    await shot(page, 'hooks-deliveries', true);
  } finally {
    await d.api('POST', `/v1/jobs/${train}/cancel`);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.goto(`${d.url}/#/jobs`);
    await page.reload();
  }
}

module.exports = { futureRoutes };
