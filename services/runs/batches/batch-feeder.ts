import { setTimeout as sleep } from 'node:timers/promises';
import type { ArtifactInput, RunError } from '../../contract';
import type { Logger } from '../../platform/logger';
import type { BatchFeedStore, BatchLanes, RunEventAppender, StepEnqueuer } from '../ports';
import type { RunContext, RunContextCache } from '../run-context-cache';
import type { RunLifecycle } from '../run-lifecycle';
import { planJobs } from '../steps/step-groups';

export interface BatchFeederDeps {
  batches: BatchFeedStore;
  contexts: Pick<RunContextCache, 'get' | 'put'>;
  events: RunEventAppender;
  queue: StepEnqueuer;
  /** The step queue's batch lanes: their state under fair scheduling (null without it), by which turns are paced, and the turn's enqueue. */
  lanes: BatchLanes;
  lifecycle: Pick<RunLifecycle, 'cancel' | 'fail'>;
  /** Whether a node's steps may run inline in a group (local, bounded work). */
  mayRunInline(uses: string): boolean;
  log: Logger;
  /** How often every unfinished batch is looked at while there are some (BATCH_FEED_INTERVAL_MS). */
  intervalMs: number;
  /** How long the sweep waits after finding none (BATCH_FEED_IDLE_MS): a batch stored or retried is announced to the feeders (`nudge`), so this bounds only a lost announcement. */
  idleMs?: number;
  /**
   * Rows one turn of a batch starts at most (BATCH_FEED_ROWS), and the most rows of its
   * organization's batch lane left waiting their turn after it: runs started sooner than the
   * workers can take them would only wait, stored and announced.
   */
  maxStart: number;
  /**
   * The same while interactive work is under way, when the lane's jobs have a bounded share of
   * the workers (BATCH_SLOTS_WHILE_INTERACTIVE): a turn then starts a few rows, not a burst that
   * takes the CPUs from interactive runs. Also what the first turn of a batch here starts, before
   * its lane is known.
   */
  maxStartWhileInteractive: number;
  /**
   * The least time between the starts of two turns of a batch here (BATCH_FEED_GAP_MS): runs
   * ending meanwhile are settled together by the next turn, whose cost (the batch's rows in
   * flight read once) is then shared by them rather than paid per run.
   */
  minGapMs?: number;
  /**
   * Rows whose one first step was reserved with the run (a quick local node) that go to one step
   * job (BATCH_BUNDLE_ROWS; 1 or unset: a job per row), and how the lane's waiting jobs are
   * counted in rows. While interactive work is under way, a job per row: a batch's share of the
   * workers is then a slot at a time, and one row a slot.
   */
  bundleRows?: number;
  /** Unfinished batches looked at per sweep. */
  sweepLimit?: number;
  /** Told of each turn (metrics): rows started and settled. */
  observer?: { turn(started: number, settled: number): void; ended(status: string): void };
}

/** A started run's first steps to enqueue: with the attempt token of one reserved with the run, or the groups of several local ones. */
interface FirstSteps {
  runId: string;
  nodeIds: readonly string[];
  tokens?: ReadonlyMap<string, string>;
  groups?: ReadonlyMap<string, readonly string[]>;
}

const CANCELLED_WITH_BATCH: RunError = { code: 'cancelled', message: 'the batch this run belongs to was cancelled' };
const NOT_ANNOUNCED: RunError = { code: 'unavailable', message: 'the run could not be started: its event log was unreachable; nothing of it ran (retry the batch\'s failed rows)' };

/** Runs cancelled here recently, so a turn of a cancelling batch does not cancel them again. */
const CANCELLED_MEMORY = 10_000;

/**
 * Feeds batches' rows to runs (docs/batches.md, How rows run), on every worker: each unfinished
 * batch is given a turn every `intervalMs` (and at once when a run of one ended here), and the
 * workers share them through Postgres (`svc_feed_batch` locks a batch SKIP LOCKED: a batch another
 * worker is feeding is skipped, never waited for). A turn settles the rows whose runs ended,
 * starts rows while the batch has room, and answers the runs this worker then announces
 * (`run.started`) and enqueues; their steps wait in the batch lane (docs/scheduling.md). A crash
 * after a turn's commit leaves its runs stored and running: the reaper enqueues their steps.
 */
export class BatchFeeder {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  /** Batches being fed here, and whether another turn was asked for meanwhile. */
  private readonly feeding = new Map<string, { again: boolean; done: Promise<void> }>();
  /** A context per batch (its prepared workflow), shared by its rows' runs started here. */
  private readonly templates = new Map<string, Promise<RunContext | null>>();
  private readonly cancelled = new Set<string>();
  /** Batches' organizations, learnt from their turns here (a batch's lane is its organization's). */
  private readonly orgs = new Map<string, string>();
  private stopped = false;

  constructor(private readonly deps: BatchFeederDeps) {}

  /** Sweeps every `intervalMs` while batches are unfinished, every `idleMs` while none is. */
  start(): void {
    const tick = (): void => {
      this.sweeping = this.sweep()
        .then(
          (found) => found,
          (err: unknown) => {
            this.deps.log.warn({ err }, 'batch sweep failed');
            return 1;
          },
        )
        .then((found) => {
          this.sweeping = undefined;
          if (!this.stopped) this.timer = setTimeout(tick, found > 0 ? this.deps.intervalMs : (this.deps.idleMs ?? this.deps.intervalMs)).unref();
        });
    };
    this.timer = setTimeout(tick, this.deps.intervalMs).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.sweeping;
    await Promise.all([...this.feeding.values()].map((entry) => entry.done));
  }

  /** One pass over the unfinished batches; how many it found. */
  async sweep(): Promise<number> {
    const ids = await this.deps.batches.unfinished(this.deps.sweepLimit ?? 100);
    await Promise.all(ids.map((id) => this.nudge(id)));
    return ids.length;
  }

  /**
   * Gives batch `batchId` a turn soon: now, or right after the one under way here (turns asked
   * for meanwhile go together).
   */
  nudge(batchId: string): Promise<void> {
    const current = this.feeding.get(batchId);
    if (current) {
      current.again = true;
      return current.done;
    }
    const entry = { again: true, done: Promise.resolve() };
    entry.done = (async () => {
      try {
        while (entry.again && !this.stopped) {
          entry.again = false;
          const began = Date.now();
          // A full turn leaves rows waiting for room that the next turn may have: go on.
          if (await this.turn(batchId)) entry.again = true;
          const gap = (this.deps.minGapMs ?? 0) - (Date.now() - began);
          if (entry.again && gap > 0) await sleep(gap);
        }
      } catch (err) {
        this.deps.log.warn({ err, batchId }, 'a batch turn failed; the next sweep tries again');
      } finally {
        this.feeding.delete(batchId);
      }
    })();
    this.feeding.set(batchId, entry);
    return entry.done;
  }

  /** One turn; whether it started as many rows as a turn may (more may be waiting). */
  private async turn(batchId: string): Promise<boolean> {
    const { max, bundleRows } = await this.rowsToStart(batchId);
    const out = await this.deps.batches.feed(batchId, max);
    if ('busy' in out || 'found' in out) return false;
    this.remember(batchId, out.org_id);
    this.deps.observer?.turn(out.started.length, out.settled);
    if (out.ended) {
      this.templates.delete(batchId);
      this.orgs.delete(batchId);
      this.deps.observer?.ended(out.status);
      this.deps.log.info({ batchId, status: out.status }, 'batch ended');
    }
    await Promise.all([
      this.startRuns(batchId, out.org_id, out.started, bundleRows),
      ...out.cancel_runs.filter((runId) => !this.cancelled.has(runId)).map((runId) => this.cancelRun(runId)),
    ]);
    return max > 0 && out.started.length >= max;
  }

  /**
   * Announces the runs a turn stored and enqueues their first steps: those without groups
   * together (one offer to the fair dispatch for all of them; `bundleRows` to a job, those
   * reserved with their runs), the others run by run.
   */
  private async startRuns(batchId: string, orgId: string, started: readonly { run_id: string; inputs: Record<string, ArtifactInput>; token: string | null }[], bundleRows: number): Promise<void> {
    const firsts = await Promise.all(started.map((row) => this.announce(batchId, orgId, row.run_id, row.inputs, row.token)));
    const together = firsts.filter((first): first is FirstSteps => first !== null && first.groups === undefined);
    const alone = firsts.filter((first): first is FirstSteps => first !== null && first.groups !== undefined);
    const enqueued = (what: Promise<void>, runIds: string[]) =>
      what.catch((err: unknown) => this.deps.log.error({ err, runIds: runIds.slice(0, 10), runs: runIds.length }, 'could not enqueue the first steps of batch rows; the reaper will'));
    await Promise.all([
      together.length > 0 ? enqueued(this.deps.lanes.enqueueRuns(together, { bundleRows }), together.map((first) => first.runId)) : undefined,
      ...alone.map((first) => enqueued(this.deps.queue.enqueue(first.runId, first.nodeIds, undefined, first.groups), [first.runId])),
    ]);
  }

  /**
   * How many rows this turn may start: enough to keep the lane's waiting rows at `maxStart` (a
   * few while interactive work is under way), and how many go to a job. Without the lane's state
   * (no fair scheduling, or Redis did not answer) a full turn: the batch's concurrency still
   * bounds its rows in flight. A waiting job counts as a full bundle (erring towards fewer rows).
   */
  private async rowsToStart(batchId: string): Promise<{ max: number; bundleRows: number }> {
    const { maxStart, maxStartWhileInteractive } = this.deps;
    const bundleRows = this.deps.bundleRows ?? 1;
    const org = this.orgs.get(batchId);
    if (org === undefined) return { max: Math.min(maxStart, maxStartWhileInteractive), bundleRows: 1 };
    const lane = await this.deps.lanes.batchLaneState(org).catch(() => null);
    if (!lane) return { max: maxStart, bundleRows };
    // Jobs waiting while interactive work has gone quiet: nothing else may dispatch them until a
    // job ends (the batch's share beside interactive work may have none in flight).
    if (lane.waiting > 0 && !lane.interactiveBusy) void this.deps.lanes.refill().catch(() => undefined);
    const target = lane.interactiveBusy ? Math.min(maxStart, maxStartWhileInteractive) : maxStart;
    return { max: Math.max(0, target - lane.waiting * bundleRows), bundleRows: lane.interactiveBusy ? 1 : bundleRows };
  }

  private remember(batchId: string, orgId: string): void {
    if (this.orgs.has(batchId)) return;
    this.orgs.set(batchId, orgId);
    // One per batch in flight here; a long-lived worker forgets the oldest.
    if (this.orgs.size > 1_000) this.orgs.delete(this.orgs.keys().next().value!);
  }

  /**
   * Announces a row's stored run (as `RunStarter.start` does for a run of its own) and answers
   * the first steps to enqueue; `token`: its lone first step was stored reserved under it, carried
   * by the job. Null when there is nothing to enqueue: it was not announced (failed), or no
   * longer prepares (its steps' worker fails it: the reaper enqueues them).
   */
  private async announce(batchId: string, orgId: string, runId: string, inputs: Record<string, ArtifactInput>, token: string | null): Promise<FirstSteps | null> {
    const { deps } = this;
    const template = await this.templateOf(batchId, runId);
    if (template) deps.contexts.put({ ...template, runId, orgId, inputs, batchId });
    try {
      await deps.events.append(runId, { type: 'run.started', runId });
    } catch (err) {
      deps.log.warn({ err, runId, batchId }, 'a batch row\'s run could not be announced; it fails before anything of it runs');
      await deps.lifecycle.fail(runId, NOT_ANNOUNCED).catch((failure: unknown) => deps.log.warn({ err: failure, runId }, 'failing an unannounced batch run did not finish (the reaper will)'));
      return null;
    }
    const context = template ? { ...template, runId } : await deps.contexts.get(runId).catch(() => null);
    if (!context) return null;
    const { workflow, plan } = context.prepared;
    if (token !== null && plan.initial.length === 1) return { runId, nodeIds: plan.initial, tokens: new Map([[plan.initial[0]!, token]]) };
    const jobs = planJobs(plan.initial, (id) => deps.mayRunInline(workflow.nodes.get(id)!.uses), false);
    return { runId, nodeIds: jobs.enqueue, ...(jobs.groups.size > 0 ? { groups: jobs.groups } : {}) };
  }

  /** The batch's prepared workflow, from the first of its runs this process starts (loaded and prepared once). */
  private templateOf(batchId: string, runId: string): Promise<RunContext | null> {
    let template = this.templates.get(batchId);
    if (!template) {
      template = this.deps.contexts.get(runId).catch((err: unknown) => {
        this.deps.log.warn({ err, batchId }, 'a batch\'s workflow does not prepare; its rows\' steps will fail');
        return null;
      });
      this.templates.set(batchId, template);
      // One per batch in flight here; a long-lived worker forgets the oldest.
      if (this.templates.size > 1_000) this.templates.delete(this.templates.keys().next().value!);
    }
    return template;
  }

  private async cancelRun(runId: string): Promise<void> {
    this.cancelled.add(runId);
    if (this.cancelled.size > CANCELLED_MEMORY) this.cancelled.delete(this.cancelled.values().next().value!);
    await this.deps.lifecycle.cancel(runId, CANCELLED_WITH_BATCH).catch((err: unknown) => {
      this.cancelled.delete(runId);
      this.deps.log.warn({ err, runId }, 'a cancelled batch\'s run could not be cancelled; the next turn tries again');
    });
  }
}
