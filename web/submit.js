// submit: a form for the common fields of a job spec plus a JSON/YAML editor for the rest.
// The daemon validates (the page does not duplicate its rules): a 422 names each bad field by
// JSON pointer, and the message is shown next to that field. ?from=ID fills the form with
// another job's spec (edit and resubmit).
import { get, request, enc, ApiError } from './api.js';
import { h, clear, errorNote } from './dom.js';
import { go } from './router.js';
import { formFields, FIELDS, specFromForm, fillForm, fieldFor } from './specform.js';

export default {
  mount(main, route) {
    const form = h('form', { class: 'submit-form', novalidate: true, 'aria-labelledby': 'submit-title' });
    const summary = h('div', { class: 'error-summary', tabindex: '-1', hidden: true });
    const result = h('div', { 'aria-live': 'polite' });
    const editor = h('textarea', { id: 'f-editor', class: 'code', rows: 18, spellcheck: 'false',
      'aria-describedby': 'f-editor-hint f-editor-error', placeholder: 'name: my-job\ncommand: [python, train.py]\nnodes: 2' });
    const format = h('select', { id: 'f-format' }, h('option', { value: 'auto' }, 'detect'),
      h('option', { value: 'json' }, 'JSON'), h('option', { value: 'yaml' }, 'YAML'));
    const editorErrors = h('ul', { id: 'f-editor-error', class: 'field-error' });
    const inputs = formFields(form);
    const tabs = [h('button', { type: 'button', role: 'tab', id: 'tab-form', 'aria-controls': 'panel-form' }, 'Form'),
      h('button', { type: 'button', role: 'tab', id: 'tab-editor', 'aria-controls': 'panel-editor' }, 'JSON / YAML')];
    const panelForm = h('div', { role: 'tabpanel', id: 'panel-form', 'aria-labelledby': 'tab-form' }, form);
    const panelEditor = h('div', { role: 'tabpanel', id: 'panel-editor', 'aria-labelledby': 'tab-editor', hidden: true },
      h('div', { class: 'field' }, h('label', { for: 'f-editor' }, 'The whole spec'), editor,
        h('span', { id: 'f-editor-hint', class: 'hint' }, 'Sent as application/json or application/yaml; every field of the API.'),
        editorErrors),
      h('div', { class: 'actions' }, h('div', { class: 'field inline' }, h('label', { for: 'f-format' }, 'Format'), format),
        h('button', { type: 'button', on: { click: () => { editor.value = JSON.stringify(specFromForm(inputs).spec, null, 2); } } },
          'Copy the form here'),
        h('button', { type: 'button', on: { click: () => send(true, true) } }, 'Check'),
        h('button', { type: 'button', class: 'primary', on: { click: () => send(true, false) } }, 'Submit')));
    form.append(h('div', { class: 'actions' },
      h('button', { type: 'button', on: { click: () => send(false, true) } }, 'Check'),
      h('button', { type: 'submit', class: 'primary' }, 'Submit')));
    form.addEventListener('submit', e => { e.preventDefault(); send(false, false); });

    const select = i => {
      tabs.forEach((t, k) => { t.setAttribute('aria-selected', String(k === i)); t.tabIndex = k === i ? 0 : -1; });
      panelForm.hidden = i !== 0;
      panelEditor.hidden = i !== 1;
    };
    tabs.forEach((t, i) => {
      t.addEventListener('click', () => select(i));
      t.addEventListener('keydown', e => {
        if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
        const j = (i + 1) % 2;
        select(j);
        tabs[j].focus();
      });
    });
    select(0);
    main.append(h('h1', { tabindex: '-1', id: 'submit-title' }, 'Submit a job'), summary, result,
      h('div', { role: 'tablist', 'aria-label': 'How to write the spec', class: 'tabs' }, tabs), panelForm, panelEditor);

    function clearErrors() {
      for (const f of FIELDS) {
        const inp = inputs[f.id];
        inp.removeAttribute('aria-invalid');
        inputs[`${f.id}-error`].textContent = '';
      }
      editorErrors.replaceChildren();
      summary.hidden = true;
      clear(result);
    }

    // Shows each {pointer, detail} next to its field (or the editor) and lists them on top.
    function showErrors(errors, fromEditor, title) {
      const items = [];
      for (const e of errors) {
        const f = fromEditor ? null : e.field ? FIELDS.find(x => x.id === e.field) : fieldFor(e.pointer);
        const where = e.pointer || '/';
        if (f) {
          inputs[f.id].setAttribute('aria-invalid', 'true');
          inputs[`${f.id}-error`].append(h('span', {}, `${f.ptr === where ? '' : where + ': '}${e.detail}`));
        } else if (fromEditor) {
          editorErrors.append(h('li', {}, h('code', {}, where), ` ${e.detail}`));
        }
        const target = f ? inputs[f.id] : fromEditor ? editor : null;
        items.push(h('li', {}, target ? h('a', { href: '#', on: { click: ev => { ev.preventDefault(); target.focus(); } } },
          `${where}: ${e.detail}`) : `${where}: ${e.detail}`));
      }
      clear(summary, h('h2', {}, title), h('ul', {}, items));
      summary.hidden = false;
      summary.setAttribute('role', 'alert');
      summary.focus();
    }

    async function send(fromEditor, dry) {
      clearErrors();
      let body, contentType = 'application/json';
      if (fromEditor) {
        body = editor.value;
        const fmt = format.value === 'auto' ? (/^\s*[{[]/.test(body) ? 'json' : 'yaml') : format.value;
        contentType = fmt === 'json' ? 'application/json' : 'application/yaml';
      } else {
        const built = specFromForm(inputs);
        if (built.errors.length) { showErrors(built.errors, false, 'Fix these fields'); return; }
        body = JSON.stringify(built.spec);
      }
      try {
        const job = await request('POST', `/v1/jobs${dry ? '?dry_run=true' : ''}`, { body, contentType });
        if (!dry) { go(`/jobs/${job.id}`); return; }
        clear(result, h('p', { class: 'ok-note', role: 'status' }, 'The daemon accepts this spec.'),
          h('details', {}, h('summary', {}, 'As the daemon will store it'),
            h('pre', { class: 'spec' }, JSON.stringify(job.spec || job, null, 2))));
      } catch (e) {
        if (e instanceof ApiError && Array.isArray(e.problem.errors) && e.problem.errors.length)
          showErrors(e.problem.errors, fromEditor,
            `The daemon refused this spec${e.problem.detail ? `: ${e.problem.detail}` : ''}`);
        else showErrors([{ pointer: '', detail: e.message }], fromEditor, 'The daemon refused this spec');
      }
    }

    const from = route.params.get('from');
    if (from) {
      get(`/v1/jobs/${enc(from)}`).then(job => {
        fillForm(inputs, job.spec || {});
        editor.value = JSON.stringify(job.spec || {}, null, 2);
        result.replaceChildren(h('p', { class: 'muted' }, `Filled from job ${job.name} (${job.id}).`));
      }).catch(e => clear(result, errorNote(e)));
    }
    return {};
  },
};
