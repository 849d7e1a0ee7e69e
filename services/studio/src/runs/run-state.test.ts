import { describe, expect, it } from 'vitest';
import type { Run } from '../../../contract';
import { applyEvent, fromMicros, initialRunState, limitWaitedFor, progressOf, stateOfRun, stepViewsOfRun, type RunState, type SeqEvent } from './run-state';
import { formatUsd } from '../lib/format';

const RUN_ID = '4cc0e21e-8b9f-4a11-8ea9-dc05f3128a07';

function fold(events: SeqEvent[], from: RunState = initialRunState): RunState {
  return events.reduce((s, e) => applyEvent(s, e, 1000 + e.seq), from);
}

describe('applyEvent', () => {
  it('follows every event type to a completed run', () => {
    const s = fold([
      { seq: 1, type: 'run.started', runId: RUN_ID },
      { seq: 2, type: 'step.started', nodeId: 'speak' },
      { seq: 3, type: 'step.progress', nodeId: 'speak', message: 'speaking 32 characters' },
      { seq: 4, type: 'step.completed', nodeId: 'speak', usage: { costUsd: 0.000051, ms: 69 } },
      { seq: 5, type: 'step.started', nodeId: 'wave' },
      { seq: 6, type: 'step.completed', nodeId: 'wave', usage: { costUsd: 0.0001, ms: 121 } },
      { seq: 7, type: 'run.completed', outputs: { text: { kind: 'text', value: 'hi' } } },
    ]);
    expect(s.runId).toBe(RUN_ID);
    expect(s.phase).toBe('completed');
    expect(s.lastSeq).toBe(7);
    expect(s.order).toEqual(['speak', 'wave']);
    expect(s.steps.speak).toEqual({ status: 'completed', message: 'speaking 32 characters', progress: 1, costUsd: 0.000051, ms: 69 });
    expect(s.steps.wave!.status).toBe('completed');
    expect(s.costMicros).toBe(151);
    expect(s.outputs).toEqual({ text: { kind: 'text', value: 'hi' } });
    expect(s.startedAtMs).toBe(1001);
    expect(s.finishedAtMs).toBe(1007);
  });

  it('ends a cancelled run as cancelled, its step still running then shown as stopped (cancelled)', () => {
    const s = fold([
      { seq: 1, type: 'run.started', runId: RUN_ID },
      { seq: 2, type: 'step.started', nodeId: 'a' },
      { seq: 3, type: 'step.completed', nodeId: 'b', usage: { costUsd: 0.000002, ms: 1 } },
      { seq: 4, type: 'run.failed', error: { code: 'cancelled', message: 'the run was cancelled by the user who started it' } },
    ]);
    expect(s.phase).toBe('cancelled');
    expect(s.error).toEqual({ code: 'cancelled', message: 'the run was cancelled by the user who started it' });
    expect(s.steps.a!.status).toBe('cancelled');
    expect(s.steps.b!.status).toBe('completed');
    const failed = fold([
      { seq: 1, type: 'run.started', runId: RUN_ID },
      { seq: 2, type: 'run.failed', error: { code: 'run_timeout', message: 'too long' } },
    ]);
    expect(failed.phase).toBe('failed');
  });

  it('marks a running step with its progress message and fraction', () => {
    const s = fold([
      { seq: 1, type: 'run.started', runId: RUN_ID },
      { seq: 2, type: 'step.started', nodeId: 'a' },
      { seq: 3, type: 'step.progress', nodeId: 'a', message: 'frame 3/4' },
    ]);
    expect(s.phase).toBe('running');
    expect(s.steps.a).toEqual({ status: 'running', message: 'frame 3/4', progress: 0.75 });
  });

  it('records a failed step and the run error', () => {
    const error = { code: 'spend_cap_exceeded', message: 'node "speak" may cost up to $0.000051' };
    const s = fold([
      { seq: 1, type: 'run.started', runId: RUN_ID },
      { seq: 2, type: 'step.failed', nodeId: 'speak', error },
      { seq: 3, type: 'run.failed', error },
    ]);
    expect(s.steps.speak).toEqual({ status: 'failed', error });
    expect(s.phase).toBe('failed');
    expect(s.error).toEqual(error);
    expect(s.outputs).toBeNull();
  });

  it('marks a step answered from the output cache', () => {
    const s = fold([
      { seq: 1, type: 'run.started', runId: RUN_ID },
      { seq: 2, type: 'step.completed', nodeId: 'meta', usage: { costUsd: 0, ms: 3, cached: true } },
      { seq: 3, type: 'step.completed', nodeId: 'resize', usage: { costUsd: 0.0001, ms: 40 } },
    ]);
    expect(s.steps.meta).toEqual({ status: 'completed', progress: 1, costUsd: 0, ms: 3, cached: true });
    expect(s.steps.resize!.cached).toBeUndefined();
  });

  it('ignores duplicate and out-of-order seqs (returns the same state)', () => {
    const a = fold([
      { seq: 1, type: 'run.started', runId: RUN_ID },
      { seq: 2, type: 'step.completed', nodeId: 'x', usage: { costUsd: 0.1, ms: 5 } },
    ]);
    const dup = applyEvent(a, { seq: 2, type: 'step.completed', nodeId: 'x', usage: { costUsd: 0.1, ms: 5 } });
    expect(dup).toBe(a);
    const old = applyEvent(a, { seq: 1, type: 'run.started', runId: 'other' });
    expect(old).toBe(a);
    expect(a.costMicros).toBe(100_000);
  });

  it('sums costs exactly in micro-USD (no floating drift)', () => {
    const events: SeqEvent[] = [{ seq: 1, type: 'run.started', runId: RUN_ID }];
    for (let i = 0; i < 10; i++) events.push({ seq: i + 2, type: 'step.completed', nodeId: `n${i}`, usage: { costUsd: 0.1, ms: 1 } });
    events.push({ seq: 20, type: 'step.completed', nodeId: 'tiny', usage: { costUsd: 0.000001, ms: 1 } });
    const s = fold(events);
    expect(s.costMicros).toBe(1_000_001);
    expect(fromMicros(s.costMicros)).toBe(1.000001);
    // The float sum drifts; the micro sum does not.
    expect(0.1 + 0.1 + 0.1).not.toBe(0.3);
    expect(formatUsd(fromMicros(fold(events.slice(0, 4)).costMicros))).toBe('$0.30');
  });
});

describe('progressOf', () => {
  it.each([
    ['42%', 0.42],
    ['rendering 3/10', 0.3],
    ['done 150%', 1],
    ['drawing a 1200x300 waveform', undefined],
  ])('%s → %s', (message, expected) => {
    expect(progressOf(message)).toBe(expected);
  });
});

describe('from a run record', () => {
  const run: Run = {
    id: RUN_ID,
    status: 'failed',
    steps: [
      { nodeId: 'a', status: 'completed', costUsd: 0.002, ms: 40 },
      { nodeId: 'b', status: 'failed', costUsd: 0, ms: null, error: { code: 'node_failed', message: 'boom' } },
      { nodeId: 'c', status: 'skipped', costUsd: 0, ms: null },
    ],
    outputs: null,
    error: { code: 'node_failed', message: 'boom' },
    costUsd: 0.002,
    maxCostUsd: 0.5,
    createdAt: '2026-11-25T01:00:00.000Z',
    startedAt: '2026-11-25T01:00:00.500Z',
    finishedAt: '2026-11-25T01:00:02.000Z',
    deadlineAt: null,
    webhook: null,
    workflowRef: null,
    workflowId: null,
    workflowName: null,
    workflow: { version: 2, nodes: [] },
  };

  it('gives step views by node', () => {
    const views = stepViewsOfRun(run);
    expect(views.a).toEqual({ status: 'completed', progress: 1, costUsd: 0.002, ms: 40 });
    expect(views.b).toEqual({ status: 'failed', costUsd: 0, error: { code: 'node_failed', message: 'boom' } });
    expect(views.c).toEqual({ status: 'skipped', costUsd: 0 });
  });

  it('gives the final state of a run that ended while nobody watched', () => {
    const s = stateOfRun(run, 9);
    expect(s.phase).toBe('failed');
    expect(s.costMicros).toBe(2000);
    expect(s.lastSeq).toBe(9);
    expect(s.order).toEqual(['a', 'b', 'c']);
    expect(s.finishedAtMs! - s.startedAtMs!).toBe(1500);
  });
});

describe('limitWaitedFor', () => {
  it("names the provider limit a step's progress says it waits for, and nothing else", () => {
    expect(limitWaitedFor("waiting for openai's limit (concurrent calls)")).toBe('openai');
    expect(limitWaitedFor("waiting for openai/gpt-4o-mini's limit (tokens per minute)")).toBe('openai/gpt-4o-mini');
    expect(limitWaitedFor('fal: queued at position 3')).toBeUndefined();
    expect(limitWaitedFor(undefined)).toBeUndefined();
  });
});
