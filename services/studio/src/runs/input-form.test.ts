import { describe, expect, it } from 'vitest';
import type { Workflow } from '../../../contract';
import { buildInputs, deriveFields, initialValues, issuesByField, type FieldValue } from './input-form';

const definition: Workflow = {
  version: 2,
  nodes: [
    { id: 'prompt', uses: 'input', outputType: 'TEXT', label: 'Prompt' },
    { id: 'steps', uses: 'input', outputType: 'INT', inputs: { default: 20 } },
    { id: 'scale', uses: 'input', outputType: 'FLOAT', inputs: { default: 7.5 } },
    { id: 'hd', uses: 'input', outputType: 'BOOLEAN', inputs: { default: true } },
    { id: 'opts', uses: 'input', outputType: 'STRUCTURED', inputs: { default: { a: 1 } } },
    { id: 'photo', uses: 'input', outputType: 'IMAGE' },
    { id: 'voice', uses: 'input', outputType: 'AUDIO', inputs: { default: { kind: 'audio', ref: 'https://example.com/a.wav' } } },
    { id: 'story', uses: 'input', outputType: 'TEXT', inputs: { default: 'x'.repeat(80) } },
    { id: 'work', uses: 'text-template', inputs: { template: '${prompt.value}' } },
    { id: 'out', uses: 'output', inputs: { value: '${work.text}' } },
  ],
};

describe('deriveFields', () => {
  const fields = deriveFields(definition);

  it('gives one field per input node, in order, labelled', () => {
    expect(fields.map((f) => f.id)).toEqual(['prompt', 'steps', 'scale', 'hd', 'opts', 'photo', 'voice', 'story']);
    expect(fields[0]!.label).toBe('Prompt');
    expect(fields[1]!.label).toBe('steps');
  });

  it('marks inputs without a default required, and keeps defaults', () => {
    expect(fields.filter((f) => f.required).map((f) => f.id)).toEqual(['prompt', 'photo']);
    expect(fields.find((f) => f.id === 'steps')!.default).toBe(20);
  });

  it('picks the widget from the connector', () => {
    expect(Object.fromEntries(fields.map((f) => [f.id, f.widget]))).toEqual({
      prompt: 'text', steps: 'integer', scale: 'number', hd: 'switch', opts: 'json', photo: 'file', voice: 'file', story: 'textarea',
    });
  });

  it('reads the connector from the default when outputType is missing', () => {
    const [f] = deriveFields({ version: 2, nodes: [{ id: 'n', uses: 'input', inputs: { default: 3 } }] });
    expect(f!.connector).toBe('INT');
    expect(f!.widget).toBe('integer');
  });

  it('fills defaults into the initial values', () => {
    const values = initialValues(fields);
    expect(values.steps).toEqual({ widget: 'integer', text: '20' });
    expect(values.hd).toEqual({ widget: 'switch', checked: true });
    expect(values.opts).toEqual({ widget: 'json', text: '{\n  "a": 1\n}' });
    expect(values.voice).toMatchObject({ widget: 'file', mode: 'url', url: 'https://example.com/a.wav' });
    expect(values.photo).toMatchObject({ widget: 'file', mode: 'upload', artifact: null });
  });
});

describe('buildInputs', () => {
  const fields = deriveFields(definition);

  it('asks for the required inputs', () => {
    const r = buildInputs(fields, initialValues(fields));
    expect(r).toEqual({ ok: false, errors: { prompt: 'Required.', photo: 'Choose a file.' } });
  });

  it('builds typed artifacts', () => {
    const values: Record<string, FieldValue> = {
      ...initialValues(fields),
      prompt: { widget: 'text', text: 'a cat' },
      scale: { widget: 'number', text: '1.25' },
      photo: { widget: 'file', mode: 'upload', url: '', artifact: { kind: 'image', ref: 'https://x/blob.png' }, fileName: 'cat.png' },
    };
    const r = buildInputs(fields, values);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.inputs.prompt).toEqual({ kind: 'text', value: 'a cat' });
    expect(r.inputs.steps).toEqual({ kind: 'int', value: 20 });
    expect(r.inputs.scale).toEqual({ kind: 'float', value: 1.25 });
    expect(r.inputs.hd).toEqual({ kind: 'boolean', value: true });
    expect(r.inputs.opts).toEqual({ kind: 'structured', value: { a: 1 } });
    expect(r.inputs.photo).toEqual({ kind: 'image', ref: 'https://x/blob.png' });
    expect(r.inputs.voice).toEqual({ kind: 'audio', ref: 'https://example.com/a.wav' });
  });

  it('leaves out emptied optional inputs (their default applies) and refuses bad values', () => {
    const values: Record<string, FieldValue> = {
      ...initialValues(fields),
      prompt: { widget: 'text', text: 'x' },
      photo: { widget: 'file', mode: 'url', url: 'ftp://nope', artifact: null, fileName: null },
      steps: { widget: 'integer', text: '2.5' },
      opts: { widget: 'json', text: '{oops' },
      scale: { widget: 'number', text: '' },
    };
    const r = buildInputs(fields, values);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(Object.keys(r.errors).sort()).toEqual(['opts', 'photo', 'steps']);
    expect(r.errors.steps).toBe('Give a whole number.');
    expect(r.errors.photo).toBe('Give an http(s) URL.');
    expect(r.errors.opts).toMatch(/^Not valid JSON/);
  });
});

describe('issuesByField', () => {
  it('places issues under their inputs and keeps the rest', () => {
    const fields = deriveFields(definition);
    const r = issuesByField(fields, [
      { path: 'inputs.steps', message: 'must be at least 1' },
      { path: 'inputs.photo.ref', message: 'not a URL' },
      { path: 'workflow.nodes[8]', message: 'bad template' },
      { path: 'request', message: 'whole request' },
      { path: 'workflow.nodes[4].inputs.speed', message: 'nodes[4] "speak": input "speed" (from run input "scale") must be an INT between 80 and 450, got 20' },
    ]);
    expect(r.byField).toEqual({
      steps: ['must be at least 1'],
      photo: ['not a URL'],
      scale: ['nodes[4] "speak": input "speed" (from run input "scale") must be an INT between 80 and 450, got 20'],
    });
    expect(r.other).toEqual(['workflow.nodes[8]: bad template', 'whole request']);
  });
});
