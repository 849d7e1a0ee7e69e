import { type NodeInputs } from '../../services/nodes';
import { nodeContext, platformNode } from '../support/node-harness';
import { formatJsonPath, lookupJsonPath, parseJsonPath } from '../../services/nodes/json-path';

async function run(id: string, inputs: NodeInputs): Promise<Record<string, unknown>> {
  const definition = platformNode(id);
  const outputs = await definition.execute(inputs, nodeContext());
  expect(definition.price(inputs, outputs)).toBeLessThanOrEqual(definition.estimate(inputs));
  return outputs;
}

function rejects(id: string, inputs: NodeInputs, fragment: string): Promise<void> {
  return expect(platformNode(id).execute(inputs, nodeContext())).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringContaining(fragment) as unknown });
}

describe('JSON paths', () => {
  it('parses keys, indexes, negative indexes and quoted keys', () => {
    expect(parseJsonPath('a.b[0].c')).toEqual({ ok: true, segments: ['a', 'b', 0, 'c'] });
    expect(parseJsonPath('[1][-1]')).toEqual({ ok: true, segments: [1, -1] });
    expect(parseJsonPath('a["x.y"][2]')).toEqual({ ok: true, segments: ['a', 'x.y', 2] });
    expect(parseJsonPath('  ')).toEqual({ ok: true, segments: [] });
    expect(parseJsonPath('some-key.$id')).toEqual({ ok: true, segments: ['some-key', '$id'] });
  });

  it('rejects malformed paths, saying where', () => {
    for (const bad of ['a..b', '.a', 'a.', 'a[x]', 'a[0]b', 'a[', '["\\u12"]']) {
      const parsed = parseJsonPath(bad);
      expect([bad, parsed.ok]).toEqual([bad, false]);
    }
    expect(parseJsonPath('x'.repeat(1001))).toMatchObject({ ok: false, message: 'is longer than 1000 characters' });
  });

  it('formats segments back into the notation', () => {
    expect(formatJsonPath(['a', 'b', 0, 'x.y', -1])).toBe('a.b[0]["x.y"][-1]');
  });

  it('follows own keys only', () => {
    expect(lookupJsonPath({ a: 1 }, ['constructor'])).toMatchObject({ found: false });
    expect(lookupJsonPath({ a: 1 }, ['__proto__'])).toMatchObject({ found: false });
    expect(lookupJsonPath(JSON.parse('{"__proto__": 5}'), ['__proto__'])).toEqual({ found: true, value: 5 });
  });
});

describe('json-extract', () => {
  const data = { a: { b: [{ c: 42 }, { c: null }], 'x.y': 'dotted' }, list: [1, 2, 3] };

  it('reads the value at a path, whatever its type', async () => {
    expect(await run('json-extract', { data, path: 'a.b[0].c' })).toEqual({ value: 42 });
    expect(await run('json-extract', { data, path: 'a.b[1].c' })).toEqual({ value: null });
    expect(await run('json-extract', { data, path: 'a.b[0]' })).toEqual({ value: { c: 42 } });
    expect(await run('json-extract', { data, path: 'list[-1]' })).toEqual({ value: 3 });
    expect(await run('json-extract', { data, path: 'a["x.y"]' })).toEqual({ value: 'dotted' });
    expect(await run('json-extract', { data, path: '' })).toEqual({ value: data });
    expect(await run('json-extract', { data: [10, 20], path: '[1]' })).toEqual({ value: 20 });
  });

  it('fails naming the path and where it stops', async () => {
    await rejects('json-extract', { data, path: 'a.b[5].c' }, 'input "path" "a.b[5].c" is not in the data: "a.b" has no item [5] (it is a list of 2 items)');
    await rejects('json-extract', { data, path: 'a.nope.c' }, '"a.nope.c" is not in the data: "a" has no key "nope"');
    await rejects('json-extract', { data, path: 'list.x' }, '"list" is a list of 3 items, not an object');
    await rejects('json-extract', { data, path: 'a.b[0].c.d' }, '"a.b[0].c" is a number, not an object');
    await rejects('json-extract', { data: 'text', path: '[0]' }, 'the value is a string, not a list');
    await rejects('json-extract', { data, path: 'a..b' }, 'input "path" "a..b" is not a path like a.b[0].c');
  });

  it('returns the fallback for a missing path when one is given', async () => {
    expect(await run('json-extract', { data, path: 'a.nope', fallback: 'none' })).toEqual({ value: 'none' });
    expect(await run('json-extract', { data, path: 'a.nope', fallback: null })).toEqual({ value: null });
  });

  it('costs 1 micro-USD', () => {
    expect(platformNode('json-extract').estimate({ data, path: 'a' })).toBe(1);
  });
});

describe('json-parse and json-stringify', () => {
  it('parses JSON text, also inside a markdown code fence', async () => {
    expect(await run('json-parse', { text: ' {"a": [1, true]} ' })).toEqual({ value: { a: [1, true] } });
    expect(await run('json-parse', { text: '```json\n{"a": 1}\n```' })).toEqual({ value: { a: 1 } });
    expect(await run('json-parse', { text: '```\n[1]```' })).toEqual({ value: [1] });
    expect(await run('json-parse', { text: 'null' })).toEqual({ value: null });
  });

  it('fails on invalid JSON with the parser\'s reason', async () => {
    await rejects('json-parse', { text: '{"a": }' }, 'input "text" is not valid JSON: ');
    await rejects('json-parse', { text: '' }, 'is not valid JSON');
  });

  it('writes compact or indented JSON text', async () => {
    expect(await run('json-stringify', { value: { a: [1] } })).toEqual({ text: '{"a":[1]}' });
    expect(await run('json-stringify', { value: { a: 1 }, indent: 2 })).toEqual({ text: '{\n  "a": 1\n}' });
    await rejects('json-stringify', { value: 1, indent: 9 }, 'input "indent" must be an INT between 0 and 8, got 9');
  });
});

describe('JSON nodes and the abort signal', () => {
  it('reject with the abort reason when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(platformNode('json-extract').execute({ data: {}, path: '' }, nodeContext(controller.signal))).rejects.toMatchObject({ name: 'AbortError' });
    await expect(platformNode('json-parse').execute({ text: '1' }, nodeContext(controller.signal))).rejects.toMatchObject({ name: 'AbortError' });
  });
});
