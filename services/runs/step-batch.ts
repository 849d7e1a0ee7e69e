import type { RunEvent } from '../contract';
import { microsToUsd } from '../engine';
import type { CompleteStepResult, FollowerStep } from '../store';

/**
 * Local steps of a chain run one after another inside a lease, committed together. The first
 * (the head) holds a reservation in Postgres of its estimate plus the rest of the cap's room,
 * granted only while nothing else of the run is running or ready, so nothing else can want that
 * room. Each further step's estimate is counted against the lease before the step runs (a step
 * that does not fit ends the batch and is reserved as usual), and all are committed with the
 * head in one call: a chain of fast local steps costs one round trip per batch, not per step.
 * Their events wait for that commit, so no client sees a step completed that Postgres has not.
 */

/** A finished step whose commit waits for its batch. */
export interface FinishedStep extends FollowerStep {
  specId: string;
}

/** An event held by a batch: `{ completed }` becomes `step.completed` with what the commit charged. */
export type HeldEvent = RunEvent | { completed: string };

export interface Batch {
  /** The head's attempt token, under which every step of the batch is committed. */
  headToken: string;
  /** The head, once it finished. */
  head?: FinishedStep;
  followers: FinishedStep[];
  /** What is left of the lease after the estimates counted so far. */
  leaseLeft: number;
  /** Events held until the commit, in order. */
  events: HeldEvent[];
  openedAt: number;
}

/** How a step runs: alone, as the head of a batch, or inside one (`virtual`). */
export interface Lane {
  batch?: Batch;
  virtual: boolean;
  /** Whether its dependent may run inside its batch (not at the job's last inline step). */
  mayDefer: boolean;
}

/** Most steps committed after a batch's head, and how long a batch may hold its events. */
const MAX_BATCH_FOLLOWERS = 64;
const BATCH_WINDOW_MS = 10;

/** A batch headed by the step reserved under `headToken` with a lease of `leaseMicros`. */
export function openBatch(headToken: string, leaseMicros: number): Batch {
  return { headToken, followers: [], leaseLeft: leaseMicros, events: [], openedAt: performance.now() };
}

/** Whether the finished step's only dependent, of worst case `estimate`, may run inside the batch before anything is committed. */
export function fitsBatch(batch: Batch, lane: Lane, finished: FinishedStep, estimate: number): boolean {
  return (
    lane.mayDefer &&
    finished.dependents.length === 1 &&
    estimate <= batch.leaseLeft &&
    batch.followers.length < MAX_BATCH_FOLLOWERS &&
    performance.now() - batch.openedAt < BATCH_WINDOW_MS
  );
}

/** The steps of a commit of `steps` (a head and its followers, in order) that it committed, with what each was charged. */
export function committedSteps(result: CompleteStepResult, steps: readonly FinishedStep[]): { step: FinishedStep; micros: number }[] {
  const charges = [result.chargedMicros, ...result.followerCharges];
  return steps.slice(0, charges.length).map((step, i) => ({ step, micros: charges[i]! }));
}

/**
 * The events of a commit: the events held while its steps ran, each `{ completed }` turned into
 * `step.completed` with what the commit charged, up to the first step the commit dropped; then
 * `last`'s own `step.completed` (the step being settled, whose completion is not among the held
 * events). None for a repeated commit.
 */
export function committedEvents(committed: readonly { step: FinishedStep; micros: number }[], duplicate: boolean, held: readonly HeldEvent[], last?: string): RunEvent[] {
  if (duplicate) return [];
  const charged = new Map(committed.map((entry) => [entry.step.nodeId, entry]));
  const completedEvent = (nodeId: string): RunEvent | undefined => {
    const entry = charged.get(nodeId);
    return entry && { type: 'step.completed', nodeId, usage: { costUsd: microsToUsd(entry.micros), ms: Math.round(entry.step.ms) } };
  };
  const events: RunEvent[] = [];
  for (const item of held) {
    if (!('completed' in item)) {
      events.push(item);
      continue;
    }
    const event = completedEvent(item.completed);
    if (!event) return events;
    events.push(event);
  }
  const own = last === undefined ? undefined : completedEvent(last);
  if (own) events.push(own);
  return events;
}
