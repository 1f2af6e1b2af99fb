// specform: the fields of the submit form, and the translation between them and a job spec.
// Each field names the JSON pointer its value lands at, so that the daemon's validation errors
// (problem+json errors[].pointer) find their field; anything else goes to "More fields".
import { h } from './dom.js';

export const FIELDS = [
  { id: 'name', label: 'Name', ptr: '/name', hint: 'Lower-case letters, digits and "-", starting with a letter.' },
  { id: 'cmdmode', label: 'Command is', ptr: '/command#mode', kind: 'select',
    options: [['sh', 'a shell script (run with sh -c)'], ['argv', 'a program and its arguments, one per line']] },
  { id: 'image', label: 'Image', ptr: '/image', hint: 'Container image (Kubernetes executor).' },
  { id: 'command', label: 'Command', ptr: '/command', kind: 'textarea', rows: 4,
    hint: 'Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.' },
  { id: 'args', label: 'Arguments', ptr: '/args', kind: 'textarea', rows: 2, hint: 'One per line (optional).' },
  { id: 'env', label: 'Environment', ptr: '/env', kind: 'textarea', rows: 3, hint: 'NAME=value, one per line.' },
  { id: 'nodes', label: 'Nodes', ptr: '/nodes', type: 'number', min: 1, value: '1' },
  { id: 'procs_per_node', label: 'Processes per node', ptr: '/procs_per_node', type: 'number', min: 1, value: '1' },
  { id: 'gpus', label: 'GPUs per node', ptr: '/resources/gpus', type: 'number', min: 0 },
  { id: 'labels', label: 'Labels', ptr: '/labels', kind: 'textarea', rows: 2, hint: 'key=value, one per line.' },
  { id: 'restart', label: 'Restart policy', ptr: '/restart/policy', kind: 'select',
    options: [['never', 'never'], ['on_failure', 'on failure'], ['exit_code', 'on chosen exit codes']] },
  { id: 'max_restarts', label: 'Max restarts', ptr: '/restart/max_restarts', type: 'number', min: 0 },
  { id: 'executor', label: 'Executor', ptr: '/executor', kind: 'select',
    options: [['', "the daemon's default"], ['local', 'local'], ['kubernetes', 'kubernetes']] },
  { id: 'extra', label: 'More fields (JSON object)', ptr: '', kind: 'textarea', rows: 4, code: true,
    hint: 'Merged into the spec, e.g. {"deadline_seconds": 3600, "placement": {"zone": "us-east-1a"}}.' },
];

// The field a JSON pointer belongs to: the longest field pointer that is a prefix of it.
export function fieldFor(pointer) {
  if (!pointer) return null;
  let best = null;
  for (const f of FIELDS) {
    if (!f.ptr || f.ptr.includes('#')) continue;
    if ((pointer === f.ptr || pointer.startsWith(`${f.ptr}/`)) && (!best || f.ptr.length > best.ptr.length)) best = f;
  }
  if (!best && pointer.startsWith('/restart')) best = FIELDS.find(f => f.id === 'restart');
  return best || FIELDS.find(f => f.id === 'extra');
}

// Builds the fields into form; returns {id: input, 'id-error': element}.
export function formFields(form) {
  const inputs = {};
  const grid = h('div', { class: 'form-grid' });
  for (const f of FIELDS) {
    const id = `f-${f.id}`, errId = `${id}-error`, hintId = `${id}-hint`;
    const attrs = { id, name: f.id, 'aria-describedby': `${f.hint ? hintId + ' ' : ''}${errId}`, autocomplete: 'off' };
    let input;
    if (f.kind === 'select') input = h('select', attrs, f.options.map(([v, t]) => h('option', { value: v }, t)));
    else if (f.kind === 'textarea') input = h('textarea', { ...attrs, rows: f.rows, spellcheck: 'false', class: f.code ? 'code' : null });
    else input = h('input', { ...attrs, type: f.type || 'text', min: f.min, value: f.value, spellcheck: 'false',
      inputmode: f.type === 'number' ? 'numeric' : null });
    const err = h('p', { id: errId, class: 'field-error' });
    inputs[f.id] = input;
    inputs[`${f.id}-error`] = err;
    grid.append(h('div', { class: `field${f.kind === 'textarea' ? ' wide' : ''}`, dataset: { field: f.id } },
      h('label', { for: id }, f.label), input, f.hint ? h('span', { id: hintId, class: 'hint' }, f.hint) : null, err));
  }
  form.append(grid);
  return inputs;
}

const lines = v => v.split('\n').map(s => s.trim()).filter(Boolean);

function pairs(text, ptr, errors, sep = '=') {
  const out = {};
  lines(text).forEach((l, i) => {
    const k = l.indexOf(sep);
    if (k <= 0) errors.push({ pointer: ptr, detail: `line ${i + 1} ("${l}") is not key${sep}value` });
    else out[l.slice(0, k).trim()] = l.slice(k + 1).trim();
  });
  return out;
}

function int(v) {
  const s = v.trim();
  return s === '' ? undefined : /^-?\d+$/.test(s) ? Number(s) : s;
}

// -> {spec, errors: [{pointer, detail}]} (errors the page can tell before sending).
export function specFromForm(inputs) {
  const errors = [], v = id => inputs[id].value;
  let spec = {};
  if (v('extra').trim()) {
    try {
      spec = JSON.parse(v('extra'));
      if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new Error('must be a JSON object');
    } catch (e) {
      errors.push({ pointer: '', field: 'extra', detail: `More fields: ${e.message}` });
      spec = {};
    }
  }
  const set = (k, val) => { if (val !== undefined && val !== '') spec[k] = val; };
  set('name', v('name').trim());
  const cmd = v('command');
  if (cmd.trim()) set('command', v('cmdmode') === 'sh' ? ['sh', '-c', cmd] : lines(cmd));
  if (v('args').trim()) set('args', lines(v('args')));
  set('image', v('image').trim());
  if (v('env').trim()) spec.env = { ...(spec.env || {}), ...pairs(v('env'), '/env', errors) };
  set('nodes', int(v('nodes')));
  set('procs_per_node', int(v('procs_per_node')));
  const gpus = int(v('gpus'));
  if (gpus !== undefined) spec.resources = { ...(spec.resources || {}), gpus };
  if (v('labels').trim()) spec.labels = { ...(spec.labels || {}), ...pairs(v('labels'), '/labels', errors) };
  const max = int(v('max_restarts'));
  if (v('restart') !== 'never' || max !== undefined || spec.restart)
    spec.restart = { ...(spec.restart || {}), policy: v('restart'), ...(max !== undefined ? { max_restarts: max } : {}) };
  set('executor', v('executor'));
  return { spec, errors };
}

// Fills the form from a spec; what the form has no field for goes to "More fields".
export function fillForm(inputs, spec) {
  const rest = JSON.parse(JSON.stringify(spec));
  const take = k => { const x = rest[k]; delete rest[k]; return x; };
  const put = (id, val) => { inputs[id].value = val === undefined || val === null ? '' : String(val); };
  put('name', take('name'));
  const cmd = take('command') || [];
  const sh = cmd.length === 3 && cmd[0] === 'sh' && cmd[1] === '-c';
  put('cmdmode', sh ? 'sh' : 'argv');
  put('command', sh ? cmd[2] : cmd.join('\n'));
  put('args', (take('args') || []).join('\n'));
  put('image', take('image'));
  const env = take('env') || {};
  const plain = Object.entries(env).filter(([, x]) => typeof x === 'string');
  const secret = Object.fromEntries(Object.entries(env).filter(([, x]) => typeof x !== 'string'));
  if (Object.keys(secret).length) rest.env = secret;
  put('env', plain.map(([k, x]) => `${k}=${x}`).join('\n'));
  put('nodes', take('nodes') || 1);
  put('procs_per_node', take('procs_per_node') || 1);
  const res = take('resources') || {};
  put('gpus', res.gpus);
  delete res.gpus;
  if (Object.keys(res).length) rest.resources = res;
  put('labels', Object.entries(take('labels') || {}).map(([k, x]) => `${k}=${x}`).join('\n'));
  const r = take('restart') || {};
  put('restart', r.policy || 'never');
  put('max_restarts', r.max_restarts || '');
  delete r.policy;
  delete r.max_restarts;
  if (Object.keys(r).length) rest.restart = r;
  put('executor', take('executor') || '');
  if (rest.suspend === false) delete rest.suspend;
  if (rest.priority === 0) delete rest.priority;
  put('extra', Object.keys(rest).length ? JSON.stringify(rest, null, 2) : '');
}
