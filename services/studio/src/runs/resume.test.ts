import { beforeEach, describe, expect, it } from 'vitest';
import { forget, hasUnfinishedRun, recall, recallValues, remember, rememberValues, storageKey } from './resume';

describe('resume bookkeeping', () => {
  beforeEach(() => localStorage.clear());

  it('stores the run id, last seq, finished flag and cap under svc.run.<key>', () => {
    remember('wf-1', { runId: 'r1', lastSeq: 4, finished: false, maxCostUsd: 0.25 });
    expect(storageKey('wf-1')).toBe('svc.run.wf-1');
    expect(JSON.parse(localStorage.getItem('svc.run.wf-1')!)).toEqual({ runId: 'r1', lastSeq: 4, finished: false, maxCostUsd: 0.25 });
    expect(recall('wf-1')).toEqual({ runId: 'r1', lastSeq: 4, finished: false, maxCostUsd: 0.25 });
    expect(recall('wf-2')).toBeNull();
  });

  it('says whether an unfinished run is remembered', () => {
    expect(hasUnfinishedRun('wf-1')).toBe(false);
    remember('wf-1', { runId: 'r1', lastSeq: 1, finished: false, maxCostUsd: 0.5 });
    expect(hasUnfinishedRun('wf-1')).toBe(true);
    remember('wf-1', { runId: 'r1', lastSeq: 9, finished: true, maxCostUsd: 0.5 });
    expect(hasUnfinishedRun('wf-1')).toBe(false);
  });

  it('clears it when forgotten', () => {
    remember('wf-1', { runId: 'r1', lastSeq: 4, finished: true, maxCostUsd: 0.5 });
    forget('wf-1');
    expect(localStorage.getItem('svc.run.wf-1')).toBeNull();
    expect(recall('wf-1')).toBeNull();
  });

  it('ignores what it cannot read', () => {
    localStorage.setItem('svc.run.a', '{not json');
    localStorage.setItem('svc.run.b', JSON.stringify({ lastSeq: 3 }));
    localStorage.setItem('svc.run.c', JSON.stringify({ runId: 'r', lastSeq: -1 }));
    expect(recall('a')).toBeNull();
    expect(recall('b')).toBeNull();
    expect(recall('c')).toEqual({ runId: 'r', lastSeq: 0, finished: false, maxCostUsd: 0.5 });
  });
});

describe('remembered form values', () => {
  beforeEach(() => localStorage.clear());
  const fields = [
    { id: 'text', label: 'text', connector: 'TEXT', widget: 'text', required: true, hasDefault: false },
    { id: 'n', label: 'n', connector: 'INT', widget: 'integer', required: false, hasDefault: true, default: 1 },
  ] as const;

  it('keeps values of fields that still exist with the same widget', () => {
    rememberValues('wf', { text: { widget: 'text', text: 'hi' }, n: { widget: 'switch', checked: true }, gone: { widget: 'text', text: 'x' } });
    expect(localStorage.getItem('svc.run-inputs.wf')).not.toBeNull();
    expect(recallValues('wf', fields)).toEqual({ text: { widget: 'text', text: 'hi' } });
    expect(recallValues('other', fields)).toEqual({});
  });
});
