import type { RunEvent } from '../../contract';
import { microsToUsd } from '../../engine';
import type { CompleteStepInput, CompleteStepResult, FollowerStep } from '../ports';
import type { PreparedStep } from './prepared-step';

/** A finished step whose commit is about to be made, or waits for its batch's. */
export interface FinishedStep extends FollowerStep {
  /** Its node's id in the catalog (for metrics). */
  specId: string;
  /** Answered from the output cache: its `step.completed` says `usage.cached: true`. */
  cached?: boolean;
}

/**
 * An event that waits for its batch's commit: `{ completed }` becomes `step.completed` with what
 * the commit charged that step (unknown until then).
 */
export type UncommittedEvent = RunEvent | { completed: string };

/** Most steps committed after a batch's head, and how long a batch may hold its events. */
const MAX_BATCH_FOLLOWERS = 128;
const BATCH_WINDOW_MS = 10;

/**
 * One commit of finished steps: a step alone, or a batch's head and its followers in order. It
 * knows what to send to `completeStep` and which events the result stands for.
 */
export class StepCommit {
  constructor(
    /** The head first, then the followers in the order they ran. */
    readonly steps: readonly [FinishedStep, ...FinishedStep[]],
    /** Events held while the steps ran, before the last step's own `step.completed`. */
    private readonly held: readonly UncommittedEvent[] = [],
    /** The step settling now, whose `step.completed` is not among the held events. */
    private readonly last?: string,
  ) {}

  /** A step committed on its own. */
  static of(step: FinishedStep): StepCommit {
    return new StepCommit([step], [], step.nodeId);
  }

  get followers(): readonly FinishedStep[] {
    return this.steps.slice(1);
  }

  /** The commit's part of `completeStep`'s input: the head's result and its followers. */
  input(): Pick<CompleteStepInput, 'nodeId' | 'costMicros' | 'output' | 'ms' | 'dependents' | 'followers'> {
    const [head] = this.steps;
    return { nodeId: head.nodeId, costMicros: head.costMicros, output: head.output, ms: head.ms, dependents: head.dependents, followers: this.followers };
  }

  /** The steps `result` committed, each with what it was charged (not the skipped: another attempt had them). */
  committed(result: CompleteStepResult): { step: FinishedStep; micros: number }[] {
    const charges = [result.chargedMicros, ...result.followerCharges];
    return this.steps.slice(0, charges.length).flatMap((step, i) => (charges[i] === null ? [] : [{ step, micros: charges[i]! }]));
  }

  /** The group's siblings the commit skipped because another attempt had taken them: their events are that attempt's. */
  private skipped(result: CompleteStepResult): Set<string> {
    return new Set(result.followerCharges.flatMap((charge, i) => (charge === null ? [this.steps[i + 1]!.nodeId] : [])));
  }

  /** Whether the run stopped while the batch ran: the commit dropped some of its followers. */
  dropped(result: CompleteStepResult): boolean {
    return result.followerCharges.length < this.steps.length - 1;
  }

  /**
   * The events of `result`: the held ones, each `{ completed }` turned into `step.completed` with
   * what the commit charged, up to the first step it dropped; then the last step's own
   * `step.completed`. None for a repeated commit (its events went out with the first).
   */
  events(result: CompleteStepResult): RunEvent[] {
    if (result.duplicate) return [];
    const charged = new Map(this.committed(result).map((entry) => [entry.step.nodeId, entry]));
    const skipped = this.skipped(result);
    const completedEvent = (nodeId: string): RunEvent | undefined => {
      const entry = charged.get(nodeId);
      if (!entry) return undefined;
      const usage = { costUsd: microsToUsd(entry.micros), ms: Math.round(entry.step.ms), ...(entry.step.cached ? { cached: true } : {}) };
      return { type: 'step.completed', nodeId, usage };
    };
    const events: RunEvent[] = [];
    for (const item of this.held) {
      if (skipped.has('completed' in item ? item.completed : 'nodeId' in item ? item.nodeId : '')) continue;
      if (!('completed' in item)) {
        events.push(item);
        continue;
      }
      const event = completedEvent(item.completed);
      if (!event) return events;
      events.push(event);
    }
    const own = this.last === undefined ? undefined : completedEvent(this.last);
    if (own) events.push(own);
    return events;
  }
}

/**
 * Local steps run one after another inside a lease, committed together. The first (the head)
 * holds a reservation in Postgres of its estimate plus a lease, either
 * - the rest of the cap's room, granted only while nothing else of the run is running or ready,
 *   so nothing else can want that room: the steps of a chain, each the only dependent of the one
 *   before; or
 * - its group's worst cases: ready siblings (a fan-out's branches) given to its job with no jobs
 *   of their own, run in order after the head.
 * Each further step's estimate is counted against the lease before the step runs (a step that
 * does not fit ends the batch and is reserved as usual), and all are committed with the head in
 * one call: fast local steps cost one round trip per batch, not per step. Their events wait for
 * that commit, so no client sees a step completed that Postgres has not.
 */
export class StepBatch {
  /** The head once it finished; until then the head is the step running, and nothing is held. */
  private head: FinishedStep | undefined;
  private readonly followers: FinishedStep[] = [];
  /** Events held until the commit, in order. */
  private readonly held: UncommittedEvent[] = [];
  /** What is left of the lease after the estimates counted so far. */
  private leaseLeft: number;
  private readonly openedAt = performance.now();

  /** The group's siblings not run yet, in order. */
  private readonly members: PreparedStep[];
  /** Every sibling of the group: committed as skippable followers. */
  private readonly memberIds: ReadonlySet<string>;

  /** A batch headed by the step reserved under `headToken` with a lease of `leaseMicros` (its group's worst cases, with a group). */
  constructor(
    /** The head's attempt token, under which every step of the batch is committed. */
    readonly headToken: string,
    leaseMicros: number,
    group: readonly PreparedStep[] = [],
  ) {
    this.leaseLeft = leaseMicros;
    this.members = [...group];
    this.memberIds = new Set(group.map((m) => m.nodeId));
  }

  /**
   * Whether finished steps wait in the batch: then the step running is a follower, counted
   * against the lease (no reservation of its own), and its events are held.
   */
  get holding(): boolean {
    return this.head !== undefined;
  }

  /**
   * Whether `finished`'s only dependent, of worst case `estimate`, may run inside the lease before
   * anything is committed (never while siblings of the group wait: the lease is theirs).
   */
  admits(finished: FinishedStep, estimate: number): boolean {
    return finished.dependents.length === 1 && this.members.length === 0 && estimate <= this.leaseLeft && this.open();
  }

  /** The group's next sibling, taken to run now inside the lease; none when none is left or the batch is full. */
  nextMember(): PreparedStep | undefined {
    const member = this.members[0];
    if (!member || member.estimate > this.leaseLeft || !this.open()) return undefined;
    return this.members.shift();
  }

  /** The group's siblings that will not run in this batch, taken out of it (their jobs are the caller's to make). */
  takeUnrun(): string[] {
    return this.members.splice(0).map((m) => m.nodeId);
  }

  /** Whether another step may join: fewer followers than the most, and the batch young enough. */
  private open(): boolean {
    return this.followers.length < MAX_BATCH_FOLLOWERS && performance.now() - this.openedAt < BATCH_WINDOW_MS;
  }

  /** Defers `finished`'s commit and starts `next` (its only dependent, of worst case `estimate`) inside the lease. */
  defer(finished: FinishedStep, next: { nodeId: string; estimate: number }): void {
    if (this.head) this.followers.push(finished);
    else this.head = finished;
    this.leaseLeft -= next.estimate;
    this.held.push({ completed: finished.nodeId }, { type: 'step.started', nodeId: next.nodeId });
  }

  /** Holds an event of the step running inside the batch until the commit. */
  hold(event: RunEvent): void {
    this.held.push(event);
  }

  /** The commit of what the batch holds, with `last` (the step settling now) as its last follower. */
  commit(last?: FinishedStep): StepCommit {
    if (!this.head) throw new Error('a batch holds nothing before its head finished');
    const followers = [...this.followers, ...(last ? [last] : [])].map((f) => (this.memberIds.has(f.nodeId) ? skippable(f) : f));
    return new StepCommit([this.head, ...followers], this.held, last?.nodeId);
  }
}

/** `step` as a skippable follower. Its fields written out: a property after an object spread is slow to define (see withAttempt in step-admission.ts), and a group's commit makes one per member. */
function skippable(step: FinishedStep): FinishedStep {
  const { nodeId, specId, costMicros, estimateMicros, output, ms, dependents } = step;
  return { nodeId, specId, costMicros, estimateMicros, output, ms, dependents, skippable: true };
}
