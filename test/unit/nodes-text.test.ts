import { MAX_TEXT_LENGTH, type NodeInputs } from '../../services/nodes';
import { nodeContext, platformNode } from '../support/node-harness';

/** Runs a node and checks its pricing pair on the way: whole micro-USD, price never above estimate. */
async function run(id: string, inputs: NodeInputs): Promise<Record<string, unknown>> {
  const definition = platformNode(id);
  const outputs = await definition.execute(inputs, nodeContext());
  const estimate = definition.estimate(inputs);
  const price = definition.price(inputs, outputs);
  expect(Number.isSafeInteger(price) && price >= 1).toBe(true);
  expect(price).toBeLessThanOrEqual(estimate);
  return outputs;
}

function rejects(id: string, inputs: NodeInputs, fragment: string): Promise<void> {
  return expect(platformNode(id).execute(inputs, nodeContext())).rejects.toMatchObject({
    code: 'validation_failed',
    message: expect.stringContaining(fragment) as unknown,
  });
}

describe('text-template', () => {
  it('fills placeholders, with paths, white space inside the braces and JSON for non-strings', async () => {
    const out = await run('text-template', {
      template: 'Hi {{name}}, {{ user.langs[0] }} and {{user.langs[-1]}}; n={{n}} ok={{ok}} list={{user.langs}} {{name}}',
      values: { name: 'Ada', n: 3, ok: true, user: { langs: ['en', 'fr'] } },
    });
    expect(out).toEqual({ text: 'Hi Ada, en and fr; n=3 ok=true list=["en","fr"] Ada' });
  });

  it('fails naming every missing placeholder by default', async () => {
    await rejects('text-template', { template: '{{a}} {{b.c}} {{a}}', values: { b: {} } }, 'has no value for {{a}}, {{b.c}}');
  });

  it('keeps or empties missing placeholders when asked', async () => {
    expect(await run('text-template', { template: '[{{ a }}]', values: {}, missing: 'keep' })).toEqual({ text: '[{{ a }}]' });
    expect(await run('text-template', { template: '[{{a}}]', missing: 'empty' })).toEqual({ text: '[]' });
  });

  it('rejects values that are not an object, unreadable placeholders and unknown modes', async () => {
    await rejects('text-template', { template: '{{a}}', values: ['x'] }, 'input "values" must be an object');
    await rejects('text-template', { template: '{{a..b}}', values: {} }, 'input "template" has a placeholder {{a..b}} that is not a path');
    await rejects('text-template', { template: '{{ }}', values: {} }, 'has a placeholder {{ }} that is not a path');
    await rejects('text-template', { template: 'x', missing: 'ignore' }, 'input "missing" must be one of');
  });

  it('handles a long unclosed placeholder in linear time', async () => {
    // Quadratic scanning of a million characters would take far longer than the test's timeout; linear takes milliseconds.
    const template = `{{${' '.repeat(999_990)}`;
    expect(await run('text-template', { template })).toEqual({ text: template });
  });

  it('refuses results beyond the text limit', async () => {
    await rejects('text-template', { template: '{{a}}{{a}}', values: { a: 'x'.repeat(MAX_TEXT_LENGTH) } }, 'the limit is 1000000');
    // Fails while filling, long before the string would exceed what JavaScript can hold.
    await rejects('text-template', { template: '{{a}}'.repeat(200_000), values: { a: 'x'.repeat(100_000) } }, 'input "template" makes a result of');
  });

  it('prices by output: 2 micro-USD for short text, estimate 10 as the worst case', () => {
    const template = platformNode('text-template');
    expect(template.estimate({ template: 'x' })).toBe(10);
    expect(template.price({ template: 'x' }, { text: 'x' })).toBe(2);
    expect(template.price({ template: 'x' }, { text: 'x'.repeat(MAX_TEXT_LENGTH) })).toBe(10);
  });
});

describe('text-concat', () => {
  it('joins a list with the separator, none by default', async () => {
    expect(await run('text-concat', { texts: ['a', 'b', 'c'] })).toEqual({ text: 'abc' });
    expect(await run('text-concat', { texts: ['a', 'b'], separator: ', ' })).toEqual({ text: 'a, b' });
    expect(await run('text-concat', { texts: [] })).toEqual({ text: '' });
  });

  it('rejects a non-list and non-text items', async () => {
    await rejects('text-concat', { texts: 'abc' }, 'input "texts" must be a list of TEXT');
    await rejects('text-concat', { texts: ['a', 2] }, 'item 1 must be TEXT');
  });
});

describe('text-split', () => {
  it('splits at line breaks by default and counts the parts', async () => {
    expect(await run('text-split', { text: 'a\nb\n' })).toEqual({ parts: ['a', 'b', ''], count: 3 });
  });

  it('splits at a plain-text separator, trimming and dropping empty parts when asked', async () => {
    expect(await run('text-split', { text: ' a , b ,, c.', separator: ',', trim: true, dropEmpty: true })).toEqual({ parts: ['a', 'b', 'c.'], count: 3 });
    expect(await run('text-split', { text: 'a.b', separator: '.' })).toEqual({ parts: ['a', 'b'], count: 2 });
  });

  it('splits into characters, not UTF-16 halves, on an empty separator', async () => {
    expect(await run('text-split', { text: 'a😀b', separator: '' })).toEqual({ parts: ['a', '😀', 'b'], count: 3 });
  });

  it('refuses more than 10,000 parts and a non-text input', async () => {
    await rejects('text-split', { text: 'x,'.repeat(10_000), separator: ',' }, 'splits into 10001 parts; the limit is 10000');
    await rejects('text-split', { text: 5 }, 'input "text" must be TEXT');
  });
});

describe('text-regex-replace', () => {
  it('replaces every match by default, with group references', async () => {
    expect(await run('text-regex-replace', { text: '2024-05-01', pattern: '(\\d+)-(\\d+)-(\\d+)', replacement: '$3/$2/$1' })).toEqual({ text: '01/05/2024' });
    expect(await run('text-regex-replace', { text: 'a1b22', pattern: '\\d' })).toEqual({ text: 'ab' });
    expect(await run('text-regex-replace', { text: 'Cat cat', pattern: 'cat', replacement: 'dog', flags: 'i' })).toEqual({ text: 'dog cat' });
    expect(await run('text-regex-replace', { text: 'x', pattern: '(?<l>x)', replacement: '[$<l>$&]' })).toEqual({ text: '[xx]' });
  });

  it('rejects invalid patterns and flags with the reason', async () => {
    await rejects('text-regex-replace', { text: 'x', pattern: '(' }, 'input "pattern" is not a valid regular expression');
    await rejects('text-regex-replace', { text: 'x', pattern: 'x', flags: 'gy' }, 'input "flags" must be distinct letters among g, i, m, s, u');
    await rejects('text-regex-replace', { text: 'x', pattern: 'x', flags: 'gg' }, 'input "flags" must be distinct letters');
  });

  it('stops a catastrophic pattern after its time budget', async () => {
    // Unbounded, this backtracking takes about 2^40 steps: the refusal itself shows the budget held.
    await rejects('text-regex-replace', { text: `${'a'.repeat(40)}!`, pattern: '(a+)+$' }, 'took longer than 250 ms');
    // The shared sandbox still works afterwards.
    expect(await run('text-regex-replace', { text: 'aa', pattern: 'a', replacement: 'b' })).toEqual({ text: 'bb' });
  });

  it('bounds the lengths of text, pattern and replacement', async () => {
    await rejects('text-regex-replace', { text: 'x'.repeat(100_001), pattern: 'x' }, 'input "text" is 100001 characters long; the limit is 100000');
    await rejects('text-regex-replace', { text: 'x', pattern: 'x'.repeat(501) }, 'input "pattern" is 501 characters long; the limit is 500');
    await rejects('text-regex-replace', { text: 'x', pattern: 'x', replacement: 'y'.repeat(1001) }, 'input "replacement" is 1001');
  });

  it('refuses a replacement that grows the text past the limit', async () => {
    await rejects('text-regex-replace', { text: 'x'.repeat(2000), pattern: 'x', replacement: 'y'.repeat(1000) }, 'input "replacement" makes a result of 2000000 characters');
  });
});

describe('text nodes and the abort signal', () => {
  it.each(['text-template', 'text-concat', 'text-split', 'text-regex-replace'])('%s rejects with the abort reason when the signal is aborted', async (id) => {
    const controller = new AbortController();
    controller.abort(new Error('run cancelled'));
    const inputs = { 'text-template': { template: 'x' }, 'text-concat': { texts: [] }, 'text-split': { text: 'x' }, 'text-regex-replace': { text: 'x', pattern: 'x' } }[id]!;
    await expect(platformNode(id).execute(inputs, nodeContext(controller.signal))).rejects.toThrow('run cancelled');
  });
});
