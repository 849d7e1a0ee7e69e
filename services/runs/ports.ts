import type { BlobStore } from '../blobs';
import type { RunEvent, SequencedEvent } from '../contract';
import type { ProviderLimiter, StepQueue } from '../queue';
import type { ArtifactRepository, BatchRepository, OutputCacheRepository, RunRecoveryRepository, RunRepository, ScheduleRepository, StepRepository, WebhookRepository } from '../store';

/**
 * What `runs` may touch of the stores: each port names only the methods runs calls, and the
 * adapters (the repositories of `store`, the queue of `queue`) satisfy them. Everything under
 * `services/runs` reaches `store`, `queue` and `blobs` through this file (`make lint` checks it).
 */

export type { AttemptRefusal, BatchRecord, BatchRowRecord, PauseReason, ScheduleRecord, ScheduleTickRecord, ClaimedWebhook, CompleteStepInput, CompleteStepResult, ExpiredArtifact, FailStepInput, FollowerStep, RunRecord, StepAttempt } from '../store';

/** Storing a run with its steps, and giving back the idempotency key of a start that failed (`RunStarter`). */
export type RunCreationStore = Pick<RunRepository, 'createRunOnce' | 'forgetIdempotencyKey'>;

/** A run's prepared workflow, inputs and options, as its context is built from them (`RunContextCache`). */
export type RunContextStore = Pick<RunRepository, 'getRunContext'>;

/** Outputs of a run's completed steps, read as the inputs of the steps after them. */
export type StepInputStore = Pick<RunRepository, 'stepInputs'>;

/** A run's end: its outputs collected and its completion recorded, or its failure (`RunLifecycle`). */
export type RunEndStore = Pick<RunRepository, 'stepInputs' | 'completeRun' | 'failRun'>;

/** An attempt's transitions (docs/money.md): reserve, retry, complete (with a batch's followers), fail. */
export type StepTransitionStore = Pick<StepRepository, 'reserve' | 'retryAttempt' | 'completeStep' | 'failStep' | 'recordProviderJob'>;

/** Failing a step's attempt, as the run's outbox releases it. */
export type StepFailureStore = Pick<StepRepository, 'failStep'>;

/** What the reaper finds in Postgres to repair: lost jobs, stuck steps, runs to finish or time out. */
export type RunRecoveryStore = Pick<RunRecoveryRepository, 'findTimedOut' | 'findFinishable' | 'findStuck' | 'listRunnable' | 'deleteExpiredIdempotencyKeys' | 'findOpenInStopped'>;

/** Runs past their own deadline (`RunDeadlines`). */
export type RunDeadlineStore = Pick<RunRecoveryRepository, 'findPastDeadline'>;

/** Where expired artifacts are found and marked deleted (the retention sweeper). */
export type ArtifactExpiryStore = Pick<ArtifactRepository, 'sweepExpiredBatch'>;

/** Where expired artifacts' blobs are deleted (`BlobStore` satisfies it). */
export type BlobDeleter = Pick<BlobStore, 'delete'>;

/** What the webhook dispatcher reads and writes of its deliveries. */
export type WebhookStore = Pick<WebhookRepository, 'claimDue' | 'delivery' | 'recordAttempt' | 'release'>;

/** Storing a batch with its rows (`BatchLauncher`). */
export type BatchCreationStore = Pick<BatchRepository, 'create'>;

/** A batch's turns, its unfinished ones, and its end's webhook (`BatchFeeder`). */
export type BatchFeedStore = Pick<BatchRepository, 'feed' | 'unfinished' | 'get' | 'claimDueWebhooks' | 'webhookOutcome'>;

/** A batch's record and its ended rows, as its progress stream reads them. */
export type BatchProgressStore = Pick<BatchRepository, 'get' | 'endedAfter'>;

/** Storing and reading schedules (`ScheduleLauncher`, the views). */
export type ScheduleStore = Pick<ScheduleRepository, 'create' | 'resume' | 'latestTicks' | 'spentSinceEach'>;

/** What the workers' tickers do with schedules (`ScheduleTicker`). */
export type ScheduleTickStore = Pick<ScheduleRepository, 'claimDue' | 'openTick' | 'closeTick' | 'recordSkipped' | 'runExists' | 'advance' | 'retryAt' | 'pauseItself' | 'spentSince'>;

/** A schedule's pause webhook (`ScheduleWebhooks`). */
export type ScheduleWebhookStore = Pick<ScheduleRepository, 'claimDueWebhooks' | 'webhookOutcome'>;

/** Where the output cache's entries live (docs/runs.md, Output caching). */
export type OutputCacheStore = Pick<OutputCacheRepository, 'get' | 'put'>;

/** Where run events go: the run event bus (`RunEventBus` satisfies it). */
export interface RunEventAppender {
  append(runId: string, event: RunEvent): Promise<number>;
  /** Several events in one round trip, consecutively numbered. */
  appendAll(runId: string, events: readonly RunEvent[]): Promise<number>;
}

/** Where ready steps go: the step queue (`StepQueue` satisfies it). */
export interface StepEnqueuer {
  /** `tokens`: the attempt tokens of steps reserved with the run, carried by their jobs; `groups`: by a job's node, the siblings it runs after it. */
  enqueue(runId: string, nodeIds: readonly string[], tokens?: ReadonlyMap<string, string>, groups?: ReadonlyMap<string, readonly string[]>): Promise<void>;
}

/** The step queue as a batch feeder uses it: its organization's batch lane, a dispatch, the first steps of a turn's runs together. */
export type BatchLanes = Pick<StepQueue, 'batchLaneState' | 'refill' | 'enqueueRuns'>;

/** The step queue as the executor uses it: enqueue, and enqueue again what lost its job. */
export interface StepQueuePort extends StepEnqueuer {
  requeue(runId: string, nodeIds: readonly string[], options?: { gone?: string }): Promise<string[]>;
}

/** Tells every worker process that a run stopped, so its in-flight steps abort. */
export type RunAbortPublisher = (runId: string) => Promise<void>;

/** Who reads a run's log (`RunLogFeed.wait`): told exactly one of these per wait. */
export interface RunLogReader {
  logEvent(item: SequencedEvent): void;
  /** The log is over for this feed: its terminal event given, resumed at it, or stopped. */
  logEnded(): void;
  logFailed(err: unknown): void;
}

/** One read of a run's log: replayed after a seq, then followed live. */
export interface RunLogFeed {
  /**
   * Tells `reader` the next event (in order, each once), the end (after the terminal event, or
   * at once when resumed at it) or what broke the feed: at once when there is one, else when it
   * comes. The first call subscribes. One reader at a time.
   */
  wait(reader: RunLogReader): void;
  /** Ends the feed now; resolves once its subscription is given back. */
  close(): Promise<void>;
}

/** Port: a run's event log (the run event bus). */
export interface RunEventSource {
  /**
   * The run's events with seq > `afterSeq`. `fresh`: the run did not exist when the feed was
   * asked for, so its log is only followed, not read first (a gap still reads it).
   */
  feed(runId: string, options: { afterSeq: number; fresh?: boolean }): RunLogFeed;
  /** Seq of the run's last logged event; 0 when its log never existed or has expired. */
  lastSeq(runId: string): Promise<number>;
}

/** The shared provider limits, as a step's provider requests draw on them. */
export type ProviderLimiterPort = Pick<ProviderLimiter, 'has' | 'acquire' | 'pause' | 'snapshot'>;
export type { LimitGrant } from '../queue';
