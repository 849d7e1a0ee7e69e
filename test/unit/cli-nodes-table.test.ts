import type { NodeSpec } from '../../services/contract';
import { nodesTable } from '../../services/cli/src/output';

const spec = (id: string, example?: Record<string, unknown>): NodeSpec => ({ id, kind: 'model', title: id.toUpperCase(), category: 'image', description: 'd', inputs: {}, outputs: {}, ...(example ? { example } : {}) });

describe('svc nodes as a table', () => {
  it('adds an EXAMPLE column only where a listed node has an example, cut to a short line', () => {
    expect(nodesTable([spec('a')]).split('\n')[0]).toMatch(/^ID\s+KIND\s+CATEGORY\s+TITLE$/);
    const lines = nodesTable([spec('a'), spec('b', { prompt: 'a fox', n: 2 }), spec('c', { prompt: 'x'.repeat(100) })]).split('\n');
    expect(lines[0]).toMatch(/^ID\s+KIND\s+CATEGORY\s+TITLE\s+EXAMPLE$/);
    expect(lines[2]).toMatch(/^b\s+model\s+image\s+B\s+prompt="a fox" n=2$/);
    expect(lines[3]!.endsWith('…')).toBe(true);
    expect(lines[3]!.length).toBeLessThan(100);
  });
});
