import type { Outputs, Run, RunError, RunEvent, StepStatus } from '../../../contract';
import type { StepView, StepViews } from './step-views';

/** An event as the SDK yields it: the run event and its `seq` (1, 2, 3, … per run). */
export type SeqEvent = RunEvent & { seq: number };

export type RunPhase = 'starting' | 'running' | 'completed' | 'failed' | 'cancelled' | 'pending';

/**
 * Everything the run panel and the run detail page show of a run being watched, folded from its
 * events (or read from its record). Money is held in whole micro-USD so that summing many small
 * step costs stays exact; it is shown as USD.
 */
export interface RunState {
  runId: string | null;
  /** The greatest seq applied; events at or below it are replays or duplicates and are ignored. */
  lastSeq: number;
  phase: RunPhase;
  steps: StepViews;
  /** Node ids in the order their steps first appeared. */
  order: readonly string[];
  costMicros: number;
  outputs: Outputs | null;
  error: RunError | null;
  /** When the first event arrived and the terminal one (Date.now()), for the elapsed time. */
  startedAtMs: number | null;
  finishedAtMs: number | null;
}

export const initialRunState: RunState = {
  runId: null,
  lastSeq: 0,
  phase: 'starting',
  steps: {},
  order: [],
  costMicros: 0,
  outputs: null,
  error: null,
  startedAtMs: null,
  finishedAtMs: null,
};

/** USD to whole micro-USD (the service's own unit of account). */
export function toMicros(usd: number): number {
  return Math.round(usd * 1_000_000);
}

export function fromMicros(micros: number): number {
  return micros / 1_000_000;
}

/**
 * The provider limit a running step waits for, from its progress message ("waiting for openai's
 * limit (concurrent calls)": the worker says so once a request has waited a second for its turn,
 * docs/providers.md), or undefined.
 */
export function limitWaitedFor(message: string | undefined): string | undefined {
  return message === undefined ? undefined : /^waiting for (.+)'s limit\b/.exec(message)?.[1];
}

/** A progress fraction read from a progress message ("42%", "3/10"), when it carries one. */
export function progressOf(message: string): number | undefined {
  const percent = /(\d{1,3}(?:\.\d+)?)\s*%/.exec(message);
  if (percent) return Math.min(1, Math.max(0, Number(percent[1]) / 100));
  const ratio = /\b(\d+)\s*\/\s*(\d+)\b/.exec(message);
  if (ratio && Number(ratio[2]) > 0) return Math.min(1, Number(ratio[1]) / Number(ratio[2]));
  return undefined;
}

function withStep(state: RunState, nodeId: string, patch: Partial<StepView> & { status?: StepStatus }): Pick<RunState, 'steps' | 'order'> {
  const previous = state.steps[nodeId];
  const next: StepView = { ...(previous ?? { status: 'running' }), ...patch } as StepView;
  return {
    steps: { ...state.steps, [nodeId]: next },
    order: previous ? state.order : [...state.order, nodeId],
  };
}

/**
 * Applies one event. Returns the same object when the event changes nothing (a replayed or
 * duplicate seq), so callers can skip re-rendering and notifying.
 */
export function applyEvent(state: RunState, event: SeqEvent, now = Date.now()): RunState {
  if (event.seq <= state.lastSeq) return state;
  const base: RunState = { ...state, lastSeq: event.seq, startedAtMs: state.startedAtMs ?? now };
  switch (event.type) {
    case 'run.started':
      return { ...base, runId: event.runId, phase: 'running' };
    case 'step.started':
      return { ...base, phase: 'running', ...withStep(state, event.nodeId, { status: 'running' }) };
    case 'step.progress': {
      const progress = progressOf(event.message);
      return {
        ...base,
        ...withStep(state, event.nodeId, { status: 'running', message: event.message, ...(progress !== undefined ? { progress } : {}) }),
      };
    }
    case 'step.completed':
      return {
        ...base,
        costMicros: state.costMicros + toMicros(event.usage.costUsd),
        ...withStep(state, event.nodeId, { status: 'completed', progress: 1, costUsd: event.usage.costUsd, ms: event.usage.ms, ...(event.usage.cached ? { cached: true } : {}) }),
      };
    case 'step.failed':
      return { ...base, ...withStep(state, event.nodeId, { status: 'failed', error: event.error }) };
    case 'run.completed':
      return { ...base, phase: 'completed', outputs: event.outputs, finishedAtMs: now };
    case 'run.failed':
      // A cancellation (by its owner, or its deadline) ends the stream with run.failed code cancelled: shown as cancelled, as its record is.
      // A step still running when its run stops is no longer running: its attempt was stopped (the record says cancelled).
      return {
        ...base,
        phase: event.error.code === 'cancelled' ? 'cancelled' : 'failed',
        error: event.error,
        finishedAtMs: now,
        steps: Object.fromEntries(Object.entries(state.steps).map(([id, view]) => [id, view.status === 'running' ? { ...view, status: 'cancelled' as const } : view])),
      };
    default:
      return base;
  }
}

/** Whether the run has reached its final status. */
export function isFinished(phase: RunPhase): boolean {
  return phase === 'completed' || phase === 'failed' || phase === 'cancelled';
}

/** The step views of a run record (the detail page, or a run that ended while nobody watched). */
export function stepViewsOfRun(run: Pick<Run, 'steps'>): StepViews {
  const views: Record<string, StepView> = {};
  for (const step of run.steps) {
    views[step.nodeId] = {
      status: step.status,
      ...(step.status === 'completed' ? { progress: 1 } : {}),
      costUsd: step.costUsd,
      ...(step.ms !== null ? { ms: step.ms } : {}),
      ...(step.error ? { error: step.error } : {}),
    };
  }
  return views;
}

/** A run state from a run record: what a reattaching panel shows when the run ended while away. */
export function stateOfRun(run: Run, lastSeq = 0): RunState {
  const steps = stepViewsOfRun(run);
  const phase: RunPhase = run.status;
  return {
    runId: run.id,
    lastSeq,
    phase,
    steps,
    order: run.steps.map((s) => s.nodeId),
    costMicros: toMicros(run.costUsd),
    outputs: run.outputs,
    error: run.error,
    startedAtMs: Date.parse(run.startedAt ?? run.createdAt),
    finishedAtMs: run.finishedAt ? Date.parse(run.finishedAt) : null,
  };
}
