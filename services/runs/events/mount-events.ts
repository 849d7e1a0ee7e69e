import type { RunEvent } from '../../contract';
import { mountOf, usdToMicrosFloor } from '../../engine';
import type { RunEventAppender } from '../ports';

/**
 * How the steps of a mounted workflow show in the run's stream: the node that mounts it is a
 * step like any other (`step.started` when its first inner step starts, `step.completed` with
 * `usage` = the inner steps' total cost and the time from that start to the last inner step's
 * completion), and the inner steps are its progress. `step.started`, `step.progress` and
 * `step.completed` of a spliced step `<mount>__<node>` become `step.progress` of `<mount>`, and
 * its `step.failed` becomes the mount node's `step.failed`. The run record keeps the spliced
 * steps with their own ids (docs/runs.md, "Mounted workflows").
 */
export function presentEvent(event: RunEvent): RunEvent {
  if (!('nodeId' in event)) return event;
  const mount = mountOf(event.nodeId);
  if (!mount) return event;
  const { mountId, innerId } = mount;
  switch (event.type) {
    case 'step.started':
      return { type: 'step.progress', nodeId: mountId, message: `${innerId} started` };
    case 'step.progress':
      return { type: 'step.progress', nodeId: mountId, message: `${innerId}: ${event.message}` };
    case 'step.completed':
      return { type: 'step.progress', nodeId: mountId, message: `${innerId} completed ($${event.usage.costUsd}, ${event.usage.ms} ms)` };
    case 'step.failed':
      return { type: 'step.failed', nodeId: mountId, error: { code: event.error.code, message: `${innerId}: ${event.error.message}` } };
  }
}

/** A presented event and what it tells the tally of its mount node (null: nothing). */
export interface MountTallyEntry {
  event: RunEvent;
  mark: { mountId: string; innerId: string; phase: 'started' | 'completed'; costMicros: number; innerSteps: number } | null;
}

/**
 * Port: appends events while keeping each mount node's tally, atomically with the append, so the
 * mount node's `step.started` and `step.completed` frame its progress whichever workers run its
 * steps (the queue's `MountTallyAppender` satisfies it).
 */
export interface MountTallyPort {
  appendTallied(runId: string, entries: readonly MountTallyEntry[]): Promise<number>;
}

export interface MountEventDeps {
  /** Where events of runs' own nodes go, as they are (the run event bus). */
  events: RunEventAppender;
  tally: MountTallyPort;
  /** A run's planned steps by id (mounted workflows spliced in); null for an unknown run. */
  stepsOf(runId: string): Promise<ReadonlyMap<string, unknown> | null>;
}

/** Inner steps per mount node, counted once per run's plan (contexts are cached per process). */
const innerCounts = new WeakMap<ReadonlyMap<string, unknown>, Map<string, number>>();

function innerStepsOf(steps: ReadonlyMap<string, unknown>, mountId: string): number {
  let counts = innerCounts.get(steps);
  if (!counts) {
    counts = new Map();
    for (const id of steps.keys()) {
      const mount = mountOf(id);
      if (mount) counts.set(mount.mountId, (counts.get(mount.mountId) ?? 0) + 1);
    }
    innerCounts.set(steps, counts);
  }
  return counts.get(mountId) ?? 0;
}

/**
 * An appender that presents mounted steps' events as their mount node's (see `presentEvent`).
 * Batches with no mounted step go to `events` unchanged: the common case pays nothing.
 */
export function presentingMountEvents(deps: MountEventDeps): RunEventAppender {
  const appendAll = async (runId: string, events: readonly RunEvent[]): Promise<number> => {
    if (!events.some((event) => 'nodeId' in event && mountOf(event.nodeId))) return deps.events.appendAll(runId, events);
    const steps = (await deps.stepsOf(runId)) ?? new Map<string, unknown>();
    const entries = events.map((event): MountTallyEntry => {
      const mount = 'nodeId' in event ? mountOf(event.nodeId) : null;
      const presented = presentEvent(event);
      if (!mount || (event.type !== 'step.started' && event.type !== 'step.completed')) return { event: presented, mark: null };
      const costMicros = event.type === 'step.completed' ? usdToMicrosFloor(event.usage.costUsd) : 0;
      const phase = event.type === 'step.started' ? 'started' : 'completed';
      return { event: presented, mark: { ...mount, phase, costMicros, innerSteps: innerStepsOf(steps, mount.mountId) } };
    });
    return deps.tally.appendTallied(runId, entries);
  };
  return { append: (runId, event) => appendAll(runId, [event]), appendAll };
}
