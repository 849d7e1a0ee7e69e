import { describe, expect, it } from 'vitest';
import type { Workflow } from '../../../contract';
import { diffGraph, diffWorkflows, highestVersion, nextVersion, rollbackOutcome, slugProblem, suggestSlug, versionProblem } from './versioning';

const v = (version: string, sequence: number, latest = false) => ({ version, sequence, latest });

describe('suggestSlug', () => {
  it.each([
    ['Product photo → narrated clip', 'product-photo-narrated-clip'],
    ['  Hello   World!! ', 'hello-world'],
    ['Crème brûlée v2', 'creme-brulee-v2'],
    ['myWorkflowName', 'my-workflow-name'],
    ['___', ''],
    ['日本語', ''],
  ])('%s → %s', (name, slug) => {
    expect(suggestSlug(name)).toBe(slug);
  });

  it('stops at 64 characters on a word boundary and stays kebab-case', () => {
    const slug = suggestSlug('alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron');
    expect(slug.length).toBeLessThanOrEqual(64);
    expect(slug.endsWith('-')).toBe(false);
    expect(slugProblem(slug)).toBeNull();
  });

  it('cuts one long word to 64', () => {
    expect(suggestSlug('a'.repeat(80))).toBe('a'.repeat(64));
  });
});

describe('slugProblem and versionProblem (the engine rules)', () => {
  it('accepts kebab-case and refuses the rest in the engine words', () => {
    expect(slugProblem('my-flow-2')).toBeNull();
    expect(slugProblem('My-Flow')).toMatch(/must be kebab-case/);
    expect(slugProblem('a--b')).toMatch(/kebab-case/);
    expect(slugProblem('-a')).toMatch(/kebab-case/);
    expect(slugProblem('')).toMatch(/kebab-case/);
  });
  it('accepts MAJOR.MINOR.PATCH only', () => {
    expect(versionProblem('0.1.0')).toBeNull();
    expect(versionProblem('1.0')).toMatch(/MAJOR\.MINOR\.PATCH/);
    expect(versionProblem('1.0.0-rc.1')).toMatch(/MAJOR\.MINOR\.PATCH/);
    expect(versionProblem('01.0.0')).not.toBeNull();
  });
});

describe('nextVersion', () => {
  const history = [v('1.0.0', 3, true), v('1.2.3', 2), v('1.1.0', 1)];
  it('bumps the highest ever published, not the latest pointer', () => {
    expect(highestVersion(history)).toEqual({ major: 1, minor: 2, patch: 3 });
    expect(nextVersion(history, 'patch')).toBe('1.2.4');
    expect(nextVersion(history, 'minor')).toBe('1.3.0');
    expect(nextVersion(history, 'major')).toBe('2.0.0');
  });
  it('compares numerically, not as text', () => {
    expect(nextVersion([v('1.9.0', 1), v('1.10.0', 2)], 'minor')).toBe('1.11.0');
  });
  it('starts at 1.0.0 without history', () => {
    expect(nextVersion([], 'minor')).toBe('1.0.0');
  });
});

describe('rollbackOutcome', () => {
  // Newest first, as the server lists them: 1.0.0, 1.1.0, 2.0.0, 2.0.1 (latest).
  const history = [v('2.0.1', 4, true), v('2.0.0', 3), v('1.1.0', 2), v('1.0.0', 1)];

  it('moves @latest and the bare majors that follow it', () => {
    const out = rollbackOutcome(history, '2.0.0');
    expect(out.latestBefore).toBe('2.0.1');
    expect(out.latestAfter).toBe('2.0.0');
    expect(out.majors).toEqual([
      { major: 2, before: '2.0.1', after: '2.0.0' },
      { major: 1, before: '1.1.0', after: '1.1.0' },
    ]);
  });

  it('says a major newer than the target answers 404', () => {
    const out = rollbackOutcome(history, '1.0.0');
    expect(out.majors).toEqual([
      { major: 2, before: '2.0.1', after: null },
      { major: 1, before: '1.1.0', after: '1.0.0' },
    ]);
  });

  it('goes by publish order: a lower version published later still counts', () => {
    // 1.0.0, 2.0.0, then a 1.0.1 hotfix; rolling back to 2.0.0 (seq 2) hides 1.0.1 (seq 3) from @1.
    const hotfix = [v('1.0.1', 3, true), v('2.0.0', 2), v('1.0.0', 1)];
    const out = rollbackOutcome(hotfix, '2.0.0');
    expect(out.majors.find((m) => m.major === 1)).toEqual({ major: 1, before: '1.0.1', after: '1.0.0' });
    expect(out.majors.find((m) => m.major === 2)).toEqual({ major: 2, before: '2.0.0', after: '2.0.0' });
  });

  it('refuses a version that is not in the history', () => {
    expect(() => rollbackOutcome(history, '9.9.9')).toThrow(/not in the history/);
  });
});

describe('diffWorkflows', () => {
  const a: Workflow = {
    version: 2,
    nodes: [
      { id: 'in', uses: 'input', outputType: 'TEXT', label: 'Prompt' },
      { id: 'upper', uses: 'text-upper', inputs: { text: '${in.value}' } },
      { id: 'gone', uses: 'text-length', inputs: { text: '${in.value}' } },
      { id: 'same', uses: 'math-add', inputs: { a: 1, b: { x: 1, y: 2 } } },
    ],
  };
  const b: Workflow = {
    version: 2,
    nodes: [
      { id: 'in', uses: 'input', outputType: 'STRUCTURED', label: 'Prompt text' },
      { id: 'upper', uses: 'text-lower', inputs: { text: '${in.value}' } },
      { id: 'same', uses: 'math-add', inputs: { b: { y: 2, x: 1 }, a: 1 } },
      { id: 'new', uses: 'text-reverse', inputs: { text: '${upper.text}' } },
    ],
  };

  it('lists added, removed and changed nodes with the fields that changed', () => {
    const diff = diffWorkflows(a, b);
    expect(diff.added).toEqual(['new']);
    expect(diff.removed).toEqual(['gone']);
    expect(diff.changed).toEqual([
      { id: 'in', fields: ['label', 'outputType'] },
      { id: 'upper', fields: ['uses'] },
    ]);
    expect(diff.changes).toEqual({ new: 'added', gone: 'removed', in: 'changed', upper: 'changed' });
  });

  it('sees input values change, and treats missing inputs as empty', () => {
    const x: Workflow = { version: 2, nodes: [{ id: 'n', uses: 'math-add', inputs: { a: 1 } }, { id: 'm', uses: 'input' }] };
    const y: Workflow = { version: 2, nodes: [{ id: 'n', uses: 'math-add', inputs: { a: 2 } }, { id: 'm', uses: 'input', inputs: {} }] };
    expect(diffWorkflows(x, y).changed).toEqual([{ id: 'n', fields: ['inputs'] }]);
  });

  it('finds nothing between equal versions', () => {
    const diff = diffWorkflows(a, structuredClone(a));
    expect(diff.added.length + diff.removed.length + diff.changed.length).toBe(0);
  });

  it('draws removed nodes beside the new version', () => {
    const diff = diffWorkflows(a, b);
    const graph = diffGraph({ definition: a, layout: { nodes: { gone: { x: 1, y: 2 } } } }, { definition: b, layout: null }, diff);
    expect(graph.definition.nodes.map((n) => n.id)).toEqual(['in', 'upper', 'same', 'new', 'gone']);
    expect(graph.layout).toEqual({ nodes: { gone: { x: 1, y: 2 } } });
  });
});
