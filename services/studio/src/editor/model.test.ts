import { describe, expect, it } from 'vitest';
import type { NodeSpec, Workflow } from '../../../contract';
import { autoLayout } from './auto-layout';
import { exportWorkflow, importWorkflow } from './io';
import { copyNodes, pasteNodes } from './clipboard';
import {
  addNode, connect, connectionProblem, deleteNodes, disconnect, edgesOf, mountedInterface,
  portsOf, renameNode, renameProblem, setInput, setMountVersion, setOutputType, type Catalog, type Graph,
} from './model';
import { mapProblems } from './problems';
import { createEditorStore } from './store';

const port = (name: string, id: string, extra: Partial<{ isOptional: boolean; isArray: boolean }> = {}) => ({
  name,
  connector: { id, isOptional: extra.isOptional ?? false, isArray: extra.isArray ?? false },
});
const spec = (id: string, inputs: ReturnType<typeof port>[], outputs: ReturnType<typeof port>[]): NodeSpec => ({
  id,
  kind: 'model',
  title: id,
  category: 'test',
  description: '',
  inputs: Object.fromEntries(inputs.map((p) => [p.name, p])),
  outputs: Object.fromEntries(outputs.map((p) => [p.name, p])),
}) as NodeSpec;

const catalog: Catalog = {
  specs: new Map([
    ['speech-espeak', spec('speech-espeak', [port('text', 'TEXT'), port('voice', 'TEXT', { isOptional: true })], [port('audio', 'AUDIO')])],
    ['audio-waveform', spec('audio-waveform', [port('audio', 'AUDIO'), port('width', 'INT', { isOptional: true })], [port('image', 'IMAGE')])],
    ['math-add', spec('math-add', [port('a', 'FLOAT'), port('b', 'FLOAT'), port('many', 'FLOAT', { isArray: true })], [port('sum', 'FLOAT'), port('list', 'FLOAT', { isArray: true })])],
  ]),
  mounted: new Map(),
};

function build(): Graph {
  let g: Graph = { definition: { version: 2, nodes: [] }, layout: { nodes: {} } };
  g = addNode(g, { uses: 'input', outputType: 'TEXT' }, { x: 0, y: 0 }).graph;
  g = addNode(g, { uses: 'speech-espeak' }, { x: 300, y: 0 }).graph;
  g = addNode(g, { uses: 'audio-waveform' }, { x: 600, y: 0 }).graph;
  g = addNode(g, { uses: 'output' }, { x: 900, y: 0 }).graph;
  g = connect(g, { source: 'input', sourcePort: 'value', target: 'speech_espeak', targetPort: 'text' });
  g = connect(g, { source: 'speech_espeak', sourcePort: 'audio', target: 'audio_waveform', targetPort: 'audio' });
  g = connect(g, { source: 'audio_waveform', sourcePort: 'image', target: 'output', targetPort: 'value' });
  return g;
}

describe('graph model', () => {
  it('adds nodes with readable, unique ids and positions', () => {
    let g = build();
    const added = addNode(g, { uses: 'output' }, { x: 1, y: 2 });
    g = added.graph;
    expect(added.id).toBe('output_2');
    expect(g.layout.nodes.output_2).toEqual({ x: 1, y: 2 });
    expect(g.definition.nodes.find((n) => n.id === 'input')).toEqual({ id: 'input', uses: 'input', outputType: 'TEXT' });
    const c = addNode(g, { uses: 'const', outputType: 'INT' }, { x: 0, y: 0 });
    expect(c.graph.definition.nodes.at(-1)).toEqual({ id: 'const', uses: 'const', outputType: 'INT', inputs: { value: 0 } });
    expect(addNode(g, { uses: 'acme/make-card@2' }, { x: 0, y: 0 }).id).toBe('make_card');
  });

  it('connections are references, and edges are read back from them', () => {
    const g = build();
    expect(g.definition.nodes.find((n) => n.id === 'speech_espeak')!.inputs).toEqual({ text: '${input.value}' });
    expect(edgesOf(g.definition).map((e) => e.id)).toEqual([
      'input.value->speech_espeak.text',
      'speech_espeak.audio->audio_waveform.audio',
      'audio_waveform.image->output.value',
    ]);
    const cut = disconnect(g, 'speech_espeak', 'text');
    expect(cut.definition.nodes.find((n) => n.id === 'speech_espeak')!.inputs).toBeUndefined();
    expect(edgesOf(cut.definition)).toHaveLength(2);
    // the original is untouched
    expect(edgesOf(g.definition)).toHaveLength(3);
  });

  it('refuses incompatible connections and cycles, with a reason', () => {
    const g = build();
    expect(connectionProblem(g, catalog, { source: 'speech_espeak', sourcePort: 'audio', target: 'speech_espeak', targetPort: 'text' })).toMatch(/itself/);
    expect(connectionProblem(g, catalog, { source: 'speech_espeak', sourcePort: 'audio', target: 'speech_espeak', targetPort: 'voice' })).not.toBeNull();
    const withMath = addNode(addNode(g, { uses: 'math-add' }, { x: 0, y: 0 }).graph, { uses: 'const', outputType: 'INT' }, { x: 0, y: 0 }).graph;
    expect(connectionProblem(withMath, catalog, { source: 'speech_espeak', sourcePort: 'audio', target: 'math_add', targetPort: 'a' })).toBe(
      'speech_espeak.audio (AUDIO) cannot feed math_add.a (FLOAT).',
    );
    // INT widens into FLOAT; a single value into a list; a list never into a single value
    expect(connectionProblem(withMath, catalog, { source: 'const', sourcePort: 'value', target: 'math_add', targetPort: 'a' })).toBeNull();
    expect(connectionProblem(withMath, catalog, { source: 'const', sourcePort: 'value', target: 'math_add', targetPort: 'many' })).toBeNull();
    expect(connectionProblem(withMath, catalog, { source: 'math_add', sourcePort: 'list', target: 'math_add', targetPort: 'b' })).toMatch(/itself/);
    const g2 = addNode(withMath, { uses: 'math-add' }, { x: 0, y: 0 }).graph;
    expect(connectionProblem(g2, catalog, { source: 'math_add', sourcePort: 'list', target: 'math_add_2', targetPort: 'b' })).toMatch(/list of FLOAT/);
    // the output node takes anything; a back edge makes a cycle
    expect(connectionProblem(g, catalog, { source: 'input', sourcePort: 'value', target: 'output', targetPort: 'value' })).toBeNull();
    const g3 = connect(g2, { source: 'math_add', sourcePort: 'sum', target: 'math_add_2', targetPort: 'a' });
    expect(connectionProblem(g3, catalog, { source: 'math_add_2', sourcePort: 'sum', target: 'math_add', targetPort: 'b' })).toBe(
      'Connecting math_add_2 after math_add would make a cycle.',
    );
  });

  it('changing the type of an interface node drops a literal that no longer fits', () => {
    let g = addNode(build(), { uses: 'const', outputType: 'TEXT' }, { x: 0, y: 0 }).graph;
    g = setOutputType(g, 'const', 'INT');
    expect(g.definition.nodes.at(-1)).toEqual({ id: 'const', uses: 'const', outputType: 'INT', inputs: { value: 0 } });
    g = setOutputType(g, 'const', 'FLOAT'); // 0 is a FLOAT too: kept
    expect(g.definition.nodes.at(-1)!.inputs).toEqual({ value: 0 });
    g = setInput(g, 'input', 'default', 'hello');
    g = setOutputType(g, 'input', 'BOOLEAN');
    expect(g.definition.nodes[0]).toEqual({ id: 'input', uses: 'input', outputType: 'BOOLEAN' });
  });

  it('a mounted workflow node changes its version selector, keeping its address', () => {
    let g = addNode(build(), { uses: 'acme/tts@1' }, { x: 0, y: 0 }).graph;
    g = setMountVersion(g, 'tts', '1.2.0');
    expect(g.definition.nodes.at(-1)!.uses).toBe('acme/tts@1.2.0');
    g = setMountVersion(g, 'tts', '');
    expect(g.definition.nodes.at(-1)!.uses).toBe('acme/tts');
    expect(setMountVersion(g, 'input', '2')).toBe(g);
  });

  it('renaming rewrites every reference and the layout', () => {
    const g = renameNode(build(), 'speech_espeak', 'tts');
    expect(g.definition.nodes.map((n) => n.id)).toEqual(['input', 'tts', 'audio_waveform', 'output']);
    expect(g.definition.nodes[2]!.inputs).toEqual({ audio: '${tts.audio}' });
    expect(g.layout.nodes.tts).toEqual({ x: 300, y: 0 });
    expect(g.layout.nodes.speech_espeak).toBeUndefined();
    expect(renameProblem(g, 'tts', 'input')).toMatch(/already/);
    expect(renameProblem(g, 'tts', '9x')).toMatch(/starts with a letter/);
    expect(renameNode(g, 'tts', 'input')).toBe(g);
  });

  it('deleting a node removes its connections but keeps literals', () => {
    let g = setInput(build(), 'audio_waveform', 'width', 640);
    g = deleteNodes(g, ['speech_espeak']);
    expect(g.definition.nodes.map((n) => n.id)).toEqual(['input', 'audio_waveform', 'output']);
    expect(g.definition.nodes[1]!.inputs).toEqual({ width: 640 });
    expect(g.layout.nodes.speech_espeak).toBeUndefined();
  });

  it('paste gives fresh ids and keeps connections inside the copy', () => {
    const g = build();
    const clip = copyNodes(g, ['speech_espeak', 'audio_waveform'])!;
    const { graph, ids } = pasteNodes(g, clip);
    expect(ids).toEqual(['speech_espeak_2', 'audio_waveform_2']);
    const byId = new Map(graph.definition.nodes.map((n) => [n.id, n]));
    expect(byId.get('audio_waveform_2')!.inputs).toEqual({ audio: '${speech_espeak_2.audio}' });
    // a reference to a node outside the copy that still exists is kept
    expect(byId.get('speech_espeak_2')!.inputs).toEqual({ text: '${input.value}' });
    expect(graph.layout.nodes.speech_espeak_2).toEqual({ x: 340, y: 40 });
    // pasted into a graph without the outside node: the dangling reference is dropped
    const lone = pasteNodes({ definition: { version: 2, nodes: [] }, layout: { nodes: {} } }, clip).graph;
    expect(lone.definition.nodes.map((n) => n.id)).toEqual(['speech_espeak', 'audio_waveform']);
    expect(lone.definition.nodes[0]!.inputs).toBeUndefined();
  });

  it('maps server problems to node ids and fields', () => {
    const def = build().definition;
    expect(mapProblems(def, [
      { path: 'nodes[2].inputs.width', message: 'bad width' },
      { path: 'nodes[0].outputType', message: 'needs type' },
      { path: 'nodes[3]', message: 'whole node' },
      { path: 'nodes', message: 'needs an output' },
    ])).toEqual([
      { nodeId: 'audio_waveform', field: 'width', path: 'nodes[2].inputs.width', message: 'bad width' },
      { nodeId: 'input', field: 'outputType', path: 'nodes[0].outputType', message: 'needs type' },
      { nodeId: 'output', field: null, path: 'nodes[3]', message: 'whole node' },
      { nodeId: null, field: null, path: 'nodes', message: 'needs an output' },
    ]);
  });

  it('derives a mounted workflow interface from its input and output nodes', () => {
    const iface = mountedInterface('acme/tts@1.0.0', build().definition, catalog);
    expect(iface.inputs).toEqual([{ name: 'input', connector: { id: 'TEXT', isOptional: false, isArray: false } }]);
    expect(iface.outputs).toEqual([{ name: 'output', connector: { id: 'IMAGE', isOptional: false, isArray: false } }]);
    const cat: Catalog = { ...catalog, mounted: new Map([['acme/tts@1', iface]]) };
    const ports = portsOf({ id: 'm', uses: 'acme/tts@1' }, cat);
    expect(ports.role).toBe('mounted');
    expect(ports.outputs[0]!.name).toBe('output');
    expect(portsOf({ id: 'm', uses: 'acme/other@1' }, cat).unknown).toBe(true);
  });

  it('auto-layout places every node left to right', () => {
    const g = build();
    const laid = autoLayout(g.definition, { nodes: {} }, catalog);
    const xs = ['input', 'speech_espeak', 'audio_waveform', 'output'].map((id) => laid.nodes[id]!.x);
    expect([...xs].sort((a, b) => a - b)).toEqual(xs);
    const partial = autoLayout(g.definition, { nodes: { input: { x: 5, y: 5 } } }, catalog, true);
    expect(partial.nodes.input).toEqual({ x: 5, y: 5 });
    expect(Object.keys(partial.nodes)).toHaveLength(4);
  });
});

describe('import and export', () => {
  const def: Workflow = build().definition;
  it('round-trips JSON and YAML', () => {
    for (const format of ['json', 'yaml'] as const) {
      const back = importWorkflow(exportWorkflow(def, format));
      expect(back).toEqual({ ok: true, definition: def });
    }
    expect(exportWorkflow(def, 'yaml')).toContain('uses: speech-espeak');
  });
  it('reports what is wrong with an imported file', () => {
    expect(importWorkflow('{ nope')).toMatchObject({ ok: false, errors: [expect.stringMatching(/^Not valid JSON/)] });
    const bad = importWorkflow('version: 1\nnodes:\n  - id: a\n    uses: output\n    colour: red\n  - id: b\n    uses: input\n    outputType: PIXELS\n');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.errors).toEqual([
      '"version" must be 2, got 1',
      'nodes[0]: unknown field "colour"',
      'nodes[1].outputType must be one of IMAGE, TEXT, AUDIO, VIDEO, FLOAT, INT, BOOLEAN, EMBEDDING, FILE, STRUCTURED',
    ]);
  });
});

describe('editor store', () => {
  it('undoes and redoes whole snapshots, coalescing typing in one field', () => {
    const store = createEditorStore(build());
    const s = () => store.getState();
    s().apply((g) => setInput(g, 'audio_waveform', 'width', 1), 'width');
    s().apply((g) => setInput(g, 'audio_waveform', 'width', 12), 'width');
    s().apply((g) => setInput(g, 'audio_waveform', 'width', 128), 'width');
    expect(s().past).toHaveLength(1);
    s().apply((g) => deleteNodes(g, ['output']));
    expect(s().graph.definition.nodes).toHaveLength(3);
    s().undo();
    expect(s().graph.definition.nodes).toHaveLength(4);
    expect(s().graph.definition.nodes[2]!.inputs!.width).toBe(128);
    s().undo();
    expect(s().graph.definition.nodes[2]!.inputs!.width).toBeUndefined();
    s().undo(); // nothing left
    expect(s().past).toHaveLength(0);
    s().redo();
    s().redo();
    expect(s().graph.definition.nodes).toHaveLength(3);
    // a new change drops the redo stack
    s().undo();
    s().apply((g) => renameNode(g, 'input', 'prompt'));
    expect(s().future).toHaveLength(0);
    expect(s().revision).toBeGreaterThan(0);
  });
  it('a change that changes nothing makes no step', () => {
    const store = createEditorStore(build());
    store.getState().apply((g) => g);
    expect(store.getState().past).toHaveLength(0);
  });
});
