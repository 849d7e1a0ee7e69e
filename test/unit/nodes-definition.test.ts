import type { NodeSpec } from '../../services/contract';
import {
  applyDefaults,
  checkNodeInputs,
  checkNodeOutputs,
  dataKindOfMimeType,
  defineNode,
  findNode,
  raceAbort,
  type ArtifactStore,
  type NodeContext,
} from '../../services/nodes';
import { AppError } from '../../services/platform/app-error';

const noArtifacts: ArtifactStore = {
  put: () => Promise.reject(new Error('this node stores nothing')),
  read: () => Promise.reject(new Error('this node reads nothing')),
  fetchForeign: () => Promise.reject(new Error('this node fetches nothing')),
};

function context(signal: AbortSignal = new AbortController().signal): NodeContext {
  return { signal, progress: () => undefined, artifacts: noArtifacts };
}

const spec: NodeSpec = {
  id: 'test-echo',
  kind: 'model',
  title: 'Echo',
  category: 'test',
  description: 'Returns its text',
  inputs: {
    text: { name: 'text', connector: { id: 'TEXT', isOptional: false, isArray: false } },
    times: { name: 'times', connector: { id: 'INT', isOptional: true, isArray: false, defaultValue: 2, minValue: 1, maxValue: 3 } },
    tags: { name: 'tags', connector: { id: 'STRUCTURED', isOptional: true, isArray: false, defaultValue: { a: [1] } } },
    note: { name: 'note', connector: { id: 'TEXT', isOptional: true, isArray: false } },
  },
  outputs: {
    text: { name: 'text', connector: { id: 'TEXT', isOptional: false, isArray: false } },
    image: { name: 'image', connector: { id: 'IMAGE', isOptional: true, isArray: false } },
  },
};

describe('applyDefaults', () => {
  it('fills omitted ports with copies of their defaults and keeps given values, null included', () => {
    const filled = applyDefaults(spec, { text: 'hi', note: null });
    expect(filled).toEqual({ text: 'hi', times: 2, tags: { a: [1] }, note: null });
    (filled.tags as { a: number[] }).a.push(2);
    expect(spec.inputs.tags!.connector.defaultValue).toEqual({ a: [1] });
    expect(applyDefaults(spec, { text: 'hi', times: 3 }).times).toBe(3);
    expect(applyDefaults(spec, { text: 'hi', times: undefined }).times).toBe(2);
  });
});

describe('checkNodeInputs', () => {
  it('accepts inputs that fit every port', () => {
    expect(() => checkNodeInputs(spec, applyDefaults(spec, { text: 'hi' }))).not.toThrow();
  });

  it('lists every problem at once as validation_failed with issues by port', () => {
    let caught: unknown;
    try {
      checkNodeInputs(spec, { times: 9, colour: 'red', note: 5 });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AppError);
    const err = caught as AppError;
    expect(err.code).toBe('validation_failed');
    expect(err.message).toContain('node "test-echo"');
    expect(err.message).toContain('has no input "colour"');
    expect(err.message).toContain('input "text" (TEXT) is required');
    expect(err.message).toContain('input "times" must be an INT between 1 and 3, got 9');
    expect((err.details as { issues: { path: string }[] }).issues.map((i) => i.path)).toEqual([
      'inputs.colour',
      'inputs.text',
      'inputs.times',
      'inputs.note',
    ]);
  });
});

describe('checkNodeOutputs', () => {
  it('accepts outputs that match the ports, an optional one left out', () => {
    expect(() => checkNodeOutputs(spec, { text: 'x' })).not.toThrow();
    expect(() => checkNodeOutputs(spec, { text: 'x', image: { kind: 'image', ref: 'mem://b/1' } })).not.toThrow();
  });

  it('treats missing, extra, mistyped and inline binary outputs as internal errors', () => {
    expect(() => checkNodeOutputs(spec, {})).toThrow(expect.objectContaining({ code: 'internal', message: expect.stringContaining('output "text" is missing') }));
    expect(() => checkNodeOutputs(spec, { text: 'x', extra: 1 })).toThrow('unexpected output "extra"');
    expect(() => checkNodeOutputs(spec, { text: 1 })).toThrow('output "text" must be TEXT');
    expect(() => checkNodeOutputs(spec, { text: 'x', image: { kind: 'image', value: 'AAAA' } })).toThrow('must be a ref artifact');
  });
});

describe('defineNode', () => {
  it('runs with defaults applied and returns the outputs', async () => {
    const echo = defineNode({
      spec,
      estimate: () => 5,
      price: () => 3,
      execute: async (inputs) => ({ text: String(inputs.text).repeat(inputs.times as number) }),
    });
    await expect(echo.execute({ text: 'ab' }, context())).resolves.toEqual({ text: 'abab' });
    expect(echo.estimate({ text: 'ab' })).toBe(5);
    expect(echo.price({ text: 'ab' }, { text: 'abab' })).toBe(3);
  });

  it('never prices above the estimate and refuses amounts that are not whole micro-USD', () => {
    const greedy = defineNode({ spec, estimate: (inputs) => (inputs.times as number) * 10, price: () => 1000, execute: async () => ({ text: '' }) });
    expect(greedy.price({ text: 'x' }, { text: '' })).toBe(20);
    const broken = defineNode({ spec, estimate: () => 1.5, price: () => 1, execute: async () => ({ text: '' }) });
    expect(() => broken.estimate({ text: 'x' })).toThrow(expect.objectContaining({ code: 'internal' }));
  });

  it('rejects bad inputs before the implementation runs', async () => {
    const execute = jest.fn(async () => ({ text: '' }));
    const node = defineNode({ spec, estimate: () => 1, price: () => 1, execute });
    await expect(node.execute({ text: 1 }, context())).rejects.toMatchObject({ code: 'validation_failed' });
    expect(execute).not.toHaveBeenCalled();
  });

  it('rejects at once on an aborted signal without running', async () => {
    const execute = jest.fn(async () => ({ text: '' }));
    const node = defineNode({ spec, estimate: () => 1, price: () => 1, execute });
    const controller = new AbortController();
    controller.abort();
    await expect(node.execute({ text: 'x' }, context(controller.signal))).rejects.toMatchObject({ name: 'AbortError' });
    expect(execute).not.toHaveBeenCalled();
  });

  it('rejects promptly when aborted while the implementation is still working', async () => {
    const node = defineNode({ spec, estimate: () => 1, price: () => 1, execute: () => new Promise(() => undefined) });
    const controller = new AbortController();
    // The implementation never settles: only the abort can end the call.
    const running = node.execute({ text: 'x' }, context(controller.signal));
    setTimeout(() => controller.abort(new Error('run failed elsewhere')), 20);
    await expect(running).rejects.toThrow('run failed elsewhere');
  });

  it('turns outputs that do not match the spec into an internal error', async () => {
    const node = defineNode({ spec, estimate: () => 1, price: () => 1, execute: async () => ({ txt: 'typo' }) });
    await expect(node.execute({ text: 'x' }, context())).rejects.toMatchObject({ code: 'internal' });
  });
});

describe('raceAbort', () => {
  it('settles like the work when nothing aborts', async () => {
    const controller = new AbortController();
    await expect(raceAbort(Promise.resolve(7), controller.signal)).resolves.toBe(7);
    await expect(raceAbort(Promise.reject(new Error('boom')), controller.signal)).rejects.toThrow('boom');
  });
});

describe('artifact port', () => {
  it('derives the kind of stored bytes from their mime type', () => {
    expect(dataKindOfMimeType('image/png')).toBe('image');
    expect(dataKindOfMimeType('AUDIO/mpeg')).toBe('audio');
    expect(dataKindOfMimeType('video/mp4')).toBe('video');
    expect(dataKindOfMimeType('application/pdf')).toBe('file');
    expect(dataKindOfMimeType('nonsense')).toBe('file');
  });
});

describe('findNode', () => {
  it('finds platform nodes by id and nothing else', () => {
    expect(findNode('text-template')?.spec.title).toBe('Text template');
    expect(findNode('image-resize')?.spec.category).toBe('image');
    expect(findNode('nope')).toBeUndefined();
    expect(findNode('constructor')).toBeUndefined();
  });
});
