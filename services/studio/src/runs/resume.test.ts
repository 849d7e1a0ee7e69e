import { beforeEach, describe, expect, it } from 'vitest';
import { forget, recall, remember, storageKey } from './resume';

describe('resume bookkeeping', () => {
  beforeEach(() => localStorage.clear());

  it('stores the run id, last seq, finished flag and cap under svc.run.<key>', () => {
    remember('wf-1', { runId: 'r1', lastSeq: 4, finished: false, maxCostUsd: 0.25 });
    expect(storageKey('wf-1')).toBe('svc.run.wf-1');
    expect(JSON.parse(localStorage.getItem('svc.run.wf-1')!)).toEqual({ runId: 'r1', lastSeq: 4, finished: false, maxCostUsd: 0.25 });
    expect(recall('wf-1')).toEqual({ runId: 'r1', lastSeq: 4, finished: false, maxCostUsd: 0.25 });
    expect(recall('wf-2')).toBeNull();
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
