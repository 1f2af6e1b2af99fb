// The job page as people read it (issue 20), against the real daemon: what each state's lead
// card says, charts against the x their series carry, the failure card, the stall card, and
// the layout (boxes that do not overlap, the newest event in view, no sideways scrolling at
// 400 px). Geometry is read from the laid-out page (getBoundingClientRect), never pixels.
// With TY_DOCS_SHOTS=DIR the views the README shows are written there as well.
'use strict';
const fs = require('fs');
const path = require('path');
const { TOKEN, check, shot, sleep } = require('./lib.js');

const sh = script => ['sh', '-c', script];
const q = s => `'${s}'`; /* a Python dict key as the Trainer prints it */

async function docShot(page, name, fullPage = false) {
  const dir = process.env.TY_DOCS_SHOTS;
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage });
}

// The parts of each container whose drawn text overlaps another's: the box of each part's
// contents as laid out (a Range), so that text spilling out of a squeezed box counts.
function overlaps(page, container, parts) {
  return page.evaluate(([c, ps]) => {
    const bad = [];
    const drawn = e => { const r = document.createRange(); r.selectNodeContents(e); return r.getBoundingClientRect(); };
    for (const el of document.querySelectorAll(c)) {
      const boxes = ps.map(p => el.querySelector(p)).filter(Boolean).map(drawn);
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i], b = boxes[j];
          if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
            bad.push(`${ps[i]} over ${ps[j]}: ${el.textContent.slice(0, 60)}`);
        }
      }
    }
    return bad;
  }, [container, parts]);
}

// A Hugging Face Trainer: dicts with no step (no tqdm bar), the first loss 10.4461, then the
// closing summary dict with its run means.
const HF = `for i in $(seq 1 40); do
  l=$(awk "BEGIN{printf \\"%.4f\\", ($i == 1) ? 10.4461 : 2.5*exp(-$i/12)+0.5}")
  e=$(awk "BEGIN{printf \\"%.3f\\", $i * 3 / 40}")
  echo "{${q('loss')}: $l, ${q('grad_norm')}: 0.$((90 - i)), ${q('learning_rate')}: 4.8e-05, ${q('epoch')}: $e}"
  sleep 0.05
done
echo "{${q('train_runtime')}: 1234.5, ${q('train_samples_per_second')}: 12.3, ${q('train_steps_per_second')}: 0.4, ${q('train_loss')}: 0.5659, ${q('epoch')}: 3.0}"`;

async function hfCharts({ page, d }) {
  const id = await d.submit({ name: 'mistral-7b-sft', command: sh(HF), labels: { team: 'nlp' } });
  await d.waitState(id, 'succeeded', 60000);
  await d.waitLogComplete(id);
  const raw = await (await fetch(`${d.url}/v1/jobs/${id}/metrics?name=loss`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
  check('API: the loss printed as 10.4461 is answered as 10.4461', raw.includes('"value":10.4461') && !raw.includes('10.44609'), raw.slice(0, 300));
  const metrics = (await d.api('GET', `/v1/jobs/${id}/metrics?name=loss`)).body.series[0].points;
  check('API: Trainer dicts carry no step', metrics.every(p => p.step === null));

  await page.goto(`${d.url}/#/jobs`);
  await page.waitForSelector(`tr[data-id="${id}"]`);
  const progress = await page.textContent(`tr[data-id="${id}"] td[data-label="Progress"]`);
  check('list: a Hugging Face job shows its epoch as progress', /epoch 3\b/.test(progress), progress);

  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.waitForSelector('#sec-final');
  await page.waitForSelector('#sec-charts >> xpath=.. >> svg.chart');
  const lead = await page.textContent('#sec-final >> xpath=..');
  check('succeeded: the lead card is the final metrics, with the summary dict\'s values', /Succeeded after/.test(lead) &&
    /train loss\s*0\.5659/.test(lead) && /train runtime\s*1234\.5/.test(lead), lead);
  check('succeeded: the usage', /Process hours/.test(lead) && /Run time/.test(lead), lead);
  check('succeeded: nothing "so far", no empty diagnosis', !/so far|Nothing went wrong/.test(await page.textContent('main')));
  const figs = await page.$$eval('#sec-charts ~ .charts figure, .charts figure', fs2 => fs2.map(f => ({
    title: f.querySelector('figcaption strong').textContent, caption: f.querySelector('figcaption').textContent,
    axis: f.querySelector('.axis-label').textContent, x: f.dataset.x })));
  const loss = figs.find(f => f.title === 'Loss');
  check('chart: loss plotted against the epoch its dicts carry, and the axis says so',
    loss && loss.x === 'epoch' && loss.axis === 'epoch', figs);
  check('chart: the caption\'s last value is the last loss printed, at the last epoch',
    loss && loss.caption.endsWith(`last ${metrics[metrics.length - 1].value} at epoch 3`), loss);
  check('chart: gradient norm and learning rate are charts, not names', figs.some(f => f.title === 'Gradient norm') &&
    figs.some(f => f.title === 'Learning rate'), figs.map(f => f.title));
  check('chart: the one-value summary is no chart (no one-point "Throughput")', !figs.some(f => f.title === 'Throughput'), figs.map(f => f.title));
  const geo = await page.$eval('.charts figure svg.chart', svg => {
    const ys = [...svg.querySelectorAll('.tick.y')].map(t => t.getBBox());
    const grid = [...svg.querySelectorAll('.gridline')].map(l => Number(l.getAttribute('y1')));
    const axis = Number(svg.querySelector('.axis').getAttribute('y1'));
    const line = svg.querySelector('path.line').getBBox();
    return { top: Math.min(...grid), topLabel: Math.min(...ys.map(b => b.y + b.height / 2)), axis, lineBottom: line.y + line.height, labels: ys.length, lines: grid.length };
  });
  check('chart: the top gridline has a label', geo.labels === geo.lines && Math.abs(geo.topLabel - geo.top) < 6, geo);
  check('chart: the curve does not lie on the x axis', geo.lineBottom < geo.axis - 2, geo);
  await page.focus('.charts figure svg.chart');
  await page.keyboard.press('Home');
  const first = await page.textContent('.charts figure .readout');
  check('chart: the keyboard reads the first point, as printed', /^epoch 0\.075: loss 10\.4461$/.test(first.trim()), first);
  const box = await page.locator('.charts figure svg.chart').first().boundingBox();
  await page.mouse.move(box.x + box.width - 20, box.y + box.height / 2);
  const hover = await page.textContent('.charts figure .readout');
  check('chart: hovering reads the values under the pointer', /^epoch (2\.\d+|3): loss 0\.\d+$/.test(hover.trim()), hover);
  const before = await page.$$eval('.charts figure:first-child .tick.y', t => t.map(x => x.textContent));
  await page.click('.charts figure:first-child button:text("Log scale")');
  const after = await page.$$eval('.charts figure:first-child .tick.y', t => t.map(x => x.textContent));
  check('chart: the log-scale toggle gives decades', await page.getAttribute('.charts figure:first-child button:text("Log scale")', 'aria-pressed') === 'true' &&
    after.join() !== before.join() && after.every(t => /^(0\.1|1|10|100|1e-\d)$/.test(t)), { before, after });
  await shot(page, 'job-succeeded', true);

  await page.goto(`${d.url}/#/jobs/${id}/logs`);
  await page.waitForSelector('.follow-status.ended');
  check('logs: a finished job has no Follow button that looks pressed',
    !(await page.isVisible('button[aria-pressed="true"]:text("Follow")')));
  return id;
}

// 8 ranks: rank 2's DataLoader worker hits a KeyError; the others lose their NCCL peer.
const KEYERROR = `for i in $(seq 1 6); do echo "{${q('loss')}: 2.$((90 - i)), ${q('epoch')}: 0.0$i}"; sleep 0.05; done
if [ "$RANK" = 2 ]; then cat >&2 <<EOT
Traceback (most recent call last):
  File "/workspace/train.py", line 198, in <module>
    trainer.train()
  File "/opt/venv/lib/python3.11/site-packages/torch/_utils.py", line 722, in reraise
    raise exception
KeyError: Caught KeyError in DataLoader worker process 3.
Original Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", line 51, in fetch
    data = [self.dataset[idx] for idx in possibly_batched_index]
  File "/workspace/data.py", line 88, in __getitem__
    text = row["input_text"]
KeyError: ${q('input_text')}
EOT
exit 1; fi
sleep 0.8; echo "[rank$RANK]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.21.5" >&2; sleep 30`;

async function failureCard({ page, d }) {
  const id = await d.submit({ name: 'llama-8b-sft', command: sh(KEYERROR), procs_per_node: 8, labels: { team: 'nlp' } });
  await d.waitState(id, 'failed', 60000);
  await d.waitLogComplete(id);
  const diag = (await d.api('GET', `/v1/jobs/${id}/diagnosis`)).body;
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.waitForSelector('#sec-diag >> xpath=.. >> .evidence li');
  await page.waitForSelector('.timeline li:nth-child(15)');
  /* geometry first: it holds for any version of the card */
  const bad = await overlaps(page, '.evidence li', ['a', '.rank', 'code']);
  check('failure: "rank 2" and the line beside it do not overlap', bad.length === 0, bad);
  const tl = await page.evaluate(() => {
    const box = document.querySelector('.timeline');
    const last = box.lastElementChild;
    const a = box.getBoundingClientRect(), b = last.getBoundingClientRect();
    return { scrolls: box.scrollHeight > box.clientHeight, inView: b.top >= a.top - 1 && b.bottom <= a.bottom + 1,
      type: last.querySelector('.ev-type').textContent, width: a.width, main: document.querySelector('main').clientWidth };
  });
  check('timeline: it scrolls, and opens with the newest event in view', tl.scrolls && tl.inView &&
    /restart_decision|failed/.test(tl.type), tl);
  check('timeline: full width, not half a card', tl.width > tl.main * 0.9, tl);
  const card = await page.textContent('#sec-diag >> xpath=..');
  check('failure: the cause leads, as /diagnosis says it', (await page.textContent('.summary-line')).trim() === diag.summary.summary &&
    /KeyError: 'input_text' \(data\.py:88/.test(card), card.slice(0, 200));
  check('failure: the innermost user frame and where it was called from', /Where\s*data\.py:88 text = row\["input_text"\]/.test(card) &&
    /Called from\s*train\.py:198 trainer\.train\(\)/.test(card), card);
  check('failure: the re-raise wrapper is context, not the answer', /Raised in\s*Caught KeyError in DataLoader worker process 3/.test(card));
  check('failure: no jargon ("Strength", "consequence")', !/Strength|consequence/.test(card));
  check('failure: a deterministic failure says a restart will not help', /A restart will not help/.test(card));
  const evidence = await page.$$eval('.evidence code', c => c.map(x => x.textContent));
  check('failure: the whole traceback as evidence', evidence[0] === 'Traceback (most recent call last):' &&
    evidence[evidence.length - 1] === "KeyError: 'input_text'" && evidence.length > 5, evidence);
  const row = await page.$eval('tr.blamed', r => r.textContent).catch(() => '');
  check('ranks: the blamed rank is marked, whatever state it ended in', /^2\s*first failure/.test(row.trim()) &&
    await page.locator('tr.blamed').count() === 1, row);
  check('ranks: no separate health table repeating them', await page.locator('#sec-health').count() === 0 &&
    await page.$eval('table.ranks', t => t.parentElement.scrollWidth <= t.parentElement.clientWidth + 1).catch(() => false));
  await docShot(page, 'job-failed', true);
  await shot(page, 'job-failed-card', true);
  await page.setViewportSize({ width: 400, height: 860 });
  await page.reload();
  await page.waitForSelector('#sec-diag >> xpath=.. >> .evidence li');
  check('400 px: no sideways scrolling', await page.evaluate(() => document.documentElement.scrollWidth <= 401));
  const narrow = await overlaps(page, '.evidence li', ['a', '.rank', 'code']);
  check('400 px: the evidence lines\' parts do not overlap', narrow.length === 0, narrow);
  await docShot(page, 'job-400px');
  await shot(page, 'job-failed-400px', true);
  await page.setViewportSize({ width: 1280, height: 900 });
  return id;
}

const WD = 'Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, ' +
  'NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.';

async function everyRankTimedOut({ page, d }) {
  const id = await d.submit({ name: 'gpt-1b-allreduce', procs_per_node: 2,
    command: sh(`echo "[E501 12:10:01.123 ProcessGroupNCCL.cpp:616] [Rank $RANK] ${WD}" >&2; sleep 2; exit 6`) });
  await d.waitState(id, 'failed', 30000);
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.waitForSelector('.failure .summary-line');
  const head = (await page.textContent('.failure .summary-line')).trim();
  check('every rank timed out: the headline blames no rank', /on all 2 ranks alike/.test(head) && !/^rank \d/.test(head), head);
  check('every rank timed out: no rank marked as the first failure', await page.locator('tr.blamed').count() === 0);
}

const QUIET = `for i in $(seq 1 10); do echo "step=$i loss=2.$i"; sleep 0.2; done
if [ "$RANK" = 1 ]; then echo "fetching batch 11"; sleep 120; fi
for i in $(seq 1 240); do echo "NCCL WARN Net : Connection retry $i"; sleep 0.5; done`;

async function stalledCard({ page, d }) {
  const id = await d.submit({ name: 'bert-mlm-hang', command: sh(QUIET), procs_per_node: 2,
    health: { stall_after_seconds: 2 } });
  await d.waitState(id, 'running');
  for (let i = 0; i < 150 && !(await d.api('GET', `/v1/jobs/${id}`)).body.stalled; i++) await sleep(100);
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.waitForSelector('main h1 .badge.st-running');
  const ring = await page.$eval('main h1 .badge.st-running', b => {
    const dot = b.querySelector('.dot').getBoundingClientRect();
    const r = document.createRange();
    r.selectNodeContents(b.lastChild);
    return r.getBoundingClientRect().left - (dot.right + 3); /* the ring: 3px around the dot */
  });
  check('the "running" badge\'s ring keeps off its word (4 px of air at least)', ring >= 4, ring);
  await page.waitForSelector('#sec-stall');
  const card = await page.textContent('#sec-stall >> xpath=..');
  check('stalled: the card names the quiet rank and its last line', /rank 1 went quiet/.test(card) &&
    /Quiet rank and its last line/.test(card) && /fetching batch 11/.test(card), card);
  check('stalled: the job says so too (reason and message)', /Stalled/.test(await page.textContent('#sec-summary >> xpath=..')));
  check('stalled: one action, one button', await page.locator('#sec-stall >> xpath=.. >> button').count() === 1);
  await docShot(page, 'job-stalled');
  await page.click('#sec-stall >> xpath=.. >> button:text("Cancel the job")');
  await page.waitForSelector('#confirm-dialog[open]');
  const dlg = await page.evaluate(() => {
    const ok = document.getElementById('confirm-ok'), no = document.getElementById('confirm-cancel');
    const [r, g, b] = getComputedStyle(ok).backgroundColor.match(/\d+/g).map(Number);
    return { ok: ok.textContent, no: no.textContent, red: r > g + 60 && r > b + 60 };
  });
  check('cancel dialog: the buttons say what they do, the destructive one is red',
    dlg.ok === 'Cancel the job' && dlg.no === 'Keep it running' && dlg.red, dlg);
  await page.click('#confirm-dialog button[value=ok]');
  check('stalled: the one button cancels the job', await d.waitState(id, 'cancelled', 20000) === 'cancelled');
}

async function queuedCard({ page, d }) {
  const id = await d.submit({ name: 'eval-harness', command: ['true'], suspend: true, procs_per_node: 3 });
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.waitForSelector('#sec-wait');
  const card = await page.textContent('#sec-wait >> xpath=..');
  check('queued: it says why it waits', /suspended/.test(card) && /starts only when someone resumes it/.test(card), card);
  check('queued: no "Health: ok" and no table of dashes', !/Health/.test(await page.textContent('main')) &&
    /3 ranks, none started yet/.test(await page.textContent('#sec-ranks >> xpath=..')));
  await page.click('#sec-wait >> xpath=.. >> button:text("Resume")');
  check('queued: Resume starts it', await d.waitState(id, 'succeeded', 30000) === 'succeeded');
}

async function searchColumns({ page, d }) {
  /* long lines: the text wraps, and only the text may give way */
  const id = await d.submit({ name: 'web-ticks', command: sh('for i in $(seq 1 12); do echo "tick $i $(seq -s " " 1000 1060)"; done') });
  await d.waitState(id, 'succeeded');
  await d.waitLogComplete(id);
  await page.goto(`${d.url}/#/jobs/${id}/logs?q=tick`);
  await page.waitForSelector('.search .hit');
  const s = await page.$$eval('.search .sline', ls => ({ seqs: ls.map(l => l.dataset.seq),
    squeezed: ls.map(l => l.querySelector('.ts')).filter(t => t.scrollWidth > t.clientWidth + 1 || t.getBoundingClientRect().width < 40).length }));
  check('search: every line once, though each is context of its neighbours', new Set(s.seqs).size === s.seqs.length &&
    s.seqs.length === 12, s.seqs);
  check('search: the time column is not squeezed', s.squeezed === 0, s);
}

// A pretraining loop printing key=value lines (exact steps) beside a tqdm bar (the total):
// loss, gradient norm, a warm-up then cosine learning rate, tokens per second.
const PRETRAIN = `for i in $(seq 1 600); do
  printf "\\r%3d%%|###| %d/600 [00:10<00:20, 20.00it/s]" $((i / 6)) $i >&2
  awk -v i=$i 'BEGIN{lr = (i < 50) ? 3e-4 * i / 50 : 1.5e-4 * (1 + cos(3.14159 * (i - 50) / 550));
    printf "step=%d loss=%.4f grad_norm=%.3f lr=%.3g tokens_per_sec=%d\\n", i, 2.2*exp(-i/120)+1.6+0.04*sin(i*0.7),
      0.9*exp(-i/200)+0.25+0.05*cos(i*1.3), lr, 51000+1500*sin(i/9)}'
  sleep 0.03; done`;

async function runningJob({ page, d }) {
  const id = await d.submit({ name: 'gpt-350m-pretrain', labels: { team: 'core', model: 'gpt-350m' }, procs_per_node: 2,
    command: sh(PRETRAIN) });
  await d.waitState(id, 'running');
  await sleep(9000);
  await page.goto(`${d.url}/#/jobs`);
  await page.waitForSelector(`tr[data-id="${id}"] progress`);
  await docShot(page, 'jobs');
  await page.goto(`${d.url}/#/jobs/${id}`);
  await page.waitForSelector('#sec-run');
  await page.waitForSelector('#sec-charts >> xpath=.. >> svg.chart');
  const card = await page.textContent('#sec-run >> xpath=..');
  check('running: progress, ETA and health lead', /Progress\s*\d+ \/ 600/.test(card) && /ETA/.test(card) && /Health/.test(card), card);
  const titles = await page.$$eval('.charts figure figcaption strong', f => f.map(x => x.textContent));
  check('running: loss, gradient norm, learning rate and throughput charts', ['Loss', 'Gradient norm', 'Learning rate', 'Throughput']
    .every(t => titles.includes(t)), titles);
  await docShot(page, 'job-running', true);
  await d.api('POST', `/v1/jobs/${id}/cancel`);
}

module.exports = { hfCharts, failureCard, everyRankTimedOut, stalledCard, queuedCard, searchColumns, runningJob };
