import { MAX_INPUT_DEPTH, scanInput, validateInput } from '../../services/contract';

/** `depth` arrays nested around 1, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}

describe('limits every input is held to before its schema', () => {
  it('refuses nesting deeper than the limit, naming where, without overflowing the stack', () => {
    const scan = scanInput({ inputs: { text: { value: nested(100_000) } } });
    expect(scan.problem?.path).toMatch(/^inputs\.text\.value(\[0\])+$/);
    expect(scan.problem?.message).toContain(`nested more than ${MAX_INPUT_DEPTH} levels deep`);
    expect(scanInput({ value: nested(MAX_INPUT_DEPTH - 2) }).problem).toBeNull();
  });

  it.each([
    [{ name: 'a\u0000b' }, 'name', 'U+0000'],
    [{ list: ['ok', 'x\ud800'] }, 'list[1]', 'unpaired UTF-16 surrogate (U+D800)'],
    [{ list: ['\udc00y'] }, 'list[0]', 'unpaired UTF-16 surrogate (U+DC00)'],
    [{ map: { 'k\u0000': 1 } }, 'map', 'a field name in map contains the character U+0000'],
  ])('refuses text Postgres cannot store: %j', (value, path, words) => {
    const scan = scanInput(value);
    expect(scan.problem).toEqual({ path, message: expect.stringContaining(words) });
  });

  it('accepts well-formed text, surrogate pairs included', () => {
    expect(scanInput({ text: 'emoji 😀 and é', list: ['\ud83d\ude00'] }).problem).toBeNull();
  });

  it('lists at most ten problems and counts the rest', () => {
    const inputs = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, [i]]));
    const result = validateInput('runs.node', { node: 'x', inputs });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues).toHaveLength(10);
    expect(result.message).toMatch(/; and 40 more problems$/);
  });

  it('reports only the size of a map over its limit, not each of its entries', () => {
    const inputs = Object.fromEntries(Array.from({ length: 80_000 }, (_, i) => [`k${i}`, [i]]));
    const result = validateInput('runs.node', { node: 'x', inputs });
    expect(result).toEqual({ ok: false, issues: [{ path: 'inputs', message: 'inputs has 80000 fields; at most 256 are allowed' }], message: 'inputs has 80000 fields; at most 256 are allowed' });
  });
});
