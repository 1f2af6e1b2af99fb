// Helpers of the browser test: the real daemon (start, kill -9, restart on the same port and
// data), its API with the admin token, Debian's Chromium through playwright-core, checks that
// count passes and failures, and screenshots under the build directory.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const TOKEN = 'ty_webtestadmintoken0123456789abcdefgh';
const BUILD = process.env.TY_BUILD || path.resolve(__dirname, '../../build');
const SHOTS = path.join(BUILD, 'screenshots');
const sleep = ms => new Promise(r => setTimeout(r, ms));

let passed = 0, failed = 0;
function check(what, ok, detail) {
  if (ok) passed++;
  else {
    failed++;
    console.error(`FAIL: ${what}${detail !== undefined ? `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}` : ''}`);
  }
  return ok;
}
const summary = () => ({ passed, failed });

class Daemon {
  constructor(work) {
    this.work = work;
    this.data = path.join(work, 'data');
    this.port = 0;
    this.flags = [];
  }

  async start(flags) {
    if (flags) this.flags = flags;
    const err = fs.openSync(path.join(this.work, 'daemon.err'), 'a');
    this.proc = spawn(path.join(BUILD, 'trainyard'), ['serve', '--listen', `127.0.0.1:${this.port}`,
      '--data-dir', this.data, '--local-slots', '8', '--stop-grace', '2s', '--webhook-allow-local', ...this.flags], {
      env: { ...process.env, TRAINYARD_ADMIN_TOKEN: TOKEN,
        ASAN_OPTIONS: process.env.ASAN_OPTIONS || 'detect_leaks=1:abort_on_error=0' },
      stdio: ['ignore', 'pipe', err] });
    fs.closeSync(err);
    let out = '';
    this.proc.stdout.on('data', d => { out += d; });
    this.exited = new Promise(r => this.proc.on('exit', code => r(code)));
    for (let i = 0; i < 400; i++) {
      const m = /(http:\/\/127\.0\.0\.1:(\d+))/.exec(out);
      if (m) {
        this.url = m[1];
        this.port = Number(m[2]);
        try {
          if ((await fetch(`${this.url}/readyz`)).ok) return;
        } catch (e) { /* not yet */ }
      }
      if (this.proc.exitCode !== null) break;
      await sleep(50);
    }
    throw new Error(`daemon did not start: ${fs.readFileSync(path.join(this.work, 'daemon.err'), 'utf8')}`);
  }

  async kill9() {
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  async stop() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill('SIGTERM');
    await Promise.race([this.exited, sleep(10000)]);
  }

  async api(method, p, body, headers = {}) {
    const res = await fetch(this.url + p, { method, body: body === undefined ? undefined : JSON.stringify(body),
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', ...headers } });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text && /json/.test(res.headers.get('content-type') || '') ? JSON.parse(text) : text };
  }

  async submit(spec) {
    const r = await this.api('POST', '/v1/jobs', spec);
    if (r.status !== 201) throw new Error(`submit ${spec.name}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id;
  }

  async waitState(id, states, ms = 30000) {
    const want = [].concat(states);
    let state = '';
    for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) {
      state = (await this.api('GET', `/v1/jobs/${id}`)).body.state;
      if (want.includes(state)) return state;
    }
    throw new Error(`job ${id} is ${state}, not ${want.join('/')}`);
  }

  async waitLogComplete(id, ms = 60000) {
    for (const end = Date.now() + ms; Date.now() < end; await sleep(200)) {
      const r = await this.api('GET', `/v1/jobs/${id}/logs?limit=1`);
      if (r.headers.get('trainyard-log-complete') === 'true') return;
    }
    throw new Error(`log of ${id} not complete`);
  }

  async hasRoute(method, p) {
    const text = await (await fetch(`${this.url}/openapi.yaml`)).text();
    const block = text.split(`\n  ${p}:\n`)[1];
    return !!block && new RegExp(`^    ${method.toLowerCase()}:`, 'm').test(block.split(/\n {2}\//)[0]);
  }
}

// Ranks outlive a killed daemon on purpose; the test's own must not outlive the test.
function killStrays(work) {
  for (const pid of fs.readdirSync('/proc').filter(d => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.includes(work) && Number(pid) !== process.pid) process.kill(Number(pid), 'SIGKILL');
    } catch (e) { /* gone */ }
  }
}

async function browser(work) {
  const dir = fs.mkdtempSync(path.join(work, 'chromium-'));
  return chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

async function shot(page, name, fullPage = false) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
}

// Every line of the log view, read by scrolling it from top to bottom: [[seq, text]...].
function collectLines(page) {
  return page.evaluate(async () => {
    const v = document.querySelector('.logview');
    const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const seen = new Map();
    v.scrollTop = 0;
    await frames();
    for (let guard = 0; guard < 2000; guard++) {
      for (const r of v.querySelectorAll('.logrow')) seen.set(Number(r.dataset.seq), r.querySelector('.txt').textContent);
      if (v.scrollTop + v.clientHeight >= v.scrollHeight - 1) break;
      v.scrollTop += v.clientHeight;
      await frames();
    }
    return [...seen].sort((a, b) => a[0] - b[0]);
  });
}

// Lines "PREFIX 1".."PREFIX n" each exactly once, in order, and sequence numbers increasing.
function checkSequence(what, lines, prefix, n) {
  const nums = lines.map(([, t]) => (t.startsWith(`${prefix} `) ? Number(t.slice(prefix.length + 1)) : null))
    .filter(x => x !== null);
  const want = Array.from({ length: n }, (_, i) => i + 1);
  check(`${what}: every line once, in order`, JSON.stringify(nums) === JSON.stringify(want),
    `${nums.length} lines: ${nums.slice(0, 5).join(',')}…${nums.slice(-5).join(',')}`);
  check(`${what}: sequence numbers increase`, lines.every((l, i) => i === 0 || l[0] > lines[i - 1][0]));
}

function tmpdir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'trainyard-web.'));
}

module.exports = { TOKEN, BUILD, SHOTS, sleep, check, summary, Daemon, killStrays, browser, shot,
  collectLines, checkSequence, tmpdir };
