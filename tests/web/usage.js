// The usage view (#/usage) and the job page's usage facts, driven as a team lead would: two
// local jobs with GPUs (labels team=usage-a and usage-b) run, an admin sets a price table
// through the API, then the view's total, chart and table by team are compared with what
// GET /v1/usage answers; the grouping is changed through the form (the URL follows), and the
// job page shows the job's GPU-hours and cost as GET /v1/jobs/{id} has them.
'use strict';
const fs = require('fs');
const path = require('path');
const { check, shot } = require('./lib.js');

const sh = script => ['sh', '-c', script];
const hours = s => s / 3600;
// Equal to what the page rounds to (three significant digits, or the tolerance).
const near = (a, b, tol) => Math.abs(a - b) <= Math.max(tol, Math.abs(b) * 0.005);
// The page's numbers: "0.0089", "12.50", "1,240"; money "€0.3200".
const parse = t => Number(String(t).replace(/[^0-9.]/g, ''));

async function rowsOf(page) {
  return page.$$eval('main table.grid tbody tr', trs => trs.map(tr =>
    [...tr.querySelectorAll('td')].map(td => td.textContent.trim())));
}

// The daemon again with 24 fake GPUs (--test-gpus: the local executor refuses a job asking for
// more GPUs than the machine has), on the same port so that the page keeps its token.
async function withGpus(d, fn) {
  const file = path.join(d.work, 'gpus.json');
  fs.writeFileSync(file, JSON.stringify([...Array(24).keys()].map(i => ({ index: i,
    uuid: `GPU-${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`, name: 'Fake GPU',
    memory_bytes: 85899345920 }))));
  const flags = d.flags;
  await d.stop();
  await d.start([...flags, '--test-gpus', file]);
  try {
    await fn();
  } finally {
    await d.stop();
    await d.start(flags);
  }
}

async function usage({ page, d }) {
  await withGpus(d, () => usageSteps({ page, d }));
}

async function usageSteps({ page, d }) {
  const a = await d.submit({ name: 'usage-a', command: sh('sleep 2'), procs_per_node: 2,
    resources: { gpus: 8 }, labels: { team: 'usage-a' } });
  const b = await d.submit({ name: 'usage-b', command: sh('sleep 1'), resources: { gpus: 4 },
    labels: { team: 'usage-b' } });
  await d.waitState(a, 'succeeded');
  await d.waitState(b, 'succeeded');
  const prices = await d.api('PUT', '/v1/usage/prices', { currency: 'EUR',
    local: { instance_type: 'g5.48xlarge' }, prices: [{ instance_type: 'g5.48xlarge', gpu_hour: 36 }] });
  check('usage: price table set through the API', prices.status === 200, prices);

  await page.goto(`${d.url}/#/usage?range=1d&by=label:team`);
  await page.waitForSelector('main table.grid');
  const api = (await d.api('GET', '/v1/usage?from=-1d&group_by=label:team')).body;
  const rows = await rowsOf(page);
  const cells = team => rows.find(r => r[0] === team) || [];
  for (const team of ['usage-a', 'usage-b']) {
    const g = api.groups.find(x => x.labels.team === team);
    const r = cells(team);
    check(`usage: ${team}'s GPU-hours and cost in the table are the API's`, g && r.length === 6 &&
      near(parse(r[1]), hours(g.gpu_seconds), 1e-4) && near(parse(r[5]), g.cost, 1e-3) && r[5].includes('€'),
    { row: r, group: g });
  }
  const total = rows[rows.length - 1];
  check('usage: a total row with every group', total[0] === 'Total' &&
    near(parse(total[1]), hours(api.total.gpu_seconds), 1e-3) && parse(total[4]) === api.total.jobs, { total, api: api.total });
  const head = await page.$$eval('main table.grid thead th', ths => ths.map(t => t.textContent));
  check('usage: columns by team, with the cost in EUR', head[0] === 'Label (team)' && head[5] === 'Cost (EUR)', head);
  const text = await page.textContent('.usage-total');
  check('usage: the summary says GPU-hours, jobs and the cost', /GPU-hours · \d+ jobs · \d+ rank runs · €/.test(text), text);

  const perDay = (await d.api('GET', '/v1/usage?from=-1d&group_by=label:team,day&limit=10000')).body;
  const bars = await page.$$eval('svg.usage-chart rect.bar', rs => rs.map(r => ({ day: r.dataset.day, group: r.dataset.group })));
  const want = new Set(perDay.groups.filter(g => g.gpu_seconds > 0).map(g => g.day));
  check('usage: a bar for each day with GPU time', bars.length > 0 && [...want].every(day => bars.some(x => x.day === day)), { bars, want: [...want] });
  check('usage: the biggest teams have their own colour', bars.some(x => x.group === 'usage-a') &&
    bars.some(x => x.group === 'usage-b'), bars);
  const label = await page.getAttribute('svg.usage-chart', 'aria-label');
  const said = Number((/: ([0-9.,]+) in all/.exec(label) || [])[1]);
  check('usage: the chart says its total', label.startsWith('GPU-hours per day by team') &&
    near(said, hours(api.total.gpu_seconds), Math.max(1e-4, hours(api.total.gpu_seconds) * 0.01)), label);
  await shot(page, 'usage');

  /* group by owner through the form: the URL follows, the table is the API's */
  await page.selectOption('#u-by', 'owner');
  await page.click('main form.filters button[type=submit]');
  await page.waitForSelector('main table.grid thead th:text("Owner")');
  check('usage: the URL keeps the grouping', page.url().endsWith('#/usage?range=1d&by=owner'), page.url());
  const owners = (await d.api('GET', '/v1/usage?from=-1d&group_by=owner')).body;
  const orow = await rowsOf(page);
  check('usage: one row per owner, then the total', orow.length === owners.groups.length + 1 &&
    owners.groups.every(g => orow.some(r => r[0] === g.owner && near(parse(r[1]), hours(g.gpu_seconds), 1e-4))),
  { orow, owners: owners.groups });

  /* the job page: the job's GPU-hours and cost */
  const job = (await d.api('GET', `/v1/jobs/${a}`)).body;
  await page.goto(`${d.url}/#/jobs/${a}`);
  await page.waitForSelector('.facts dt:text("Cost")');
  const fact = name => page.evaluate(n => {
    const dt = [...document.querySelectorAll('.facts dt')].find(e => e.textContent === n);
    return dt ? dt.nextElementSibling.textContent : null;
  }, name);
  check('job: GPU-hours from its usage', near(parse(await fact('GPU-hours')), hours(job.usage.gpu_seconds), 1e-4),
    { page: await fact('GPU-hours'), usage: job.usage });
  check('job: its cost in EUR', near(parse(await fact('Cost')), job.usage.cost, 1e-3) && (await fact('Cost')).includes('€'),
    { page: await fact('Cost'), usage: job.usage });
  check('usage: reset the price table', (await d.api('PUT', '/v1/usage/prices', { prices: [] })).status === 200);
}

module.exports = { usage };
