import pg from 'pg';
import type { ArtifactInput } from '../contract';
import { microsFromDb } from './micros';
import { jsonParam } from './run-records';

/**
 * The typed SQL of the hot paths, run straight on the node-postgres pool (database.ts) rather
 * than through Prisma: {@link queryRows} for plain statements (run creation and reads), and one
 * typed call per step and run transition function (`prisma/functions/*.sql`; their headers say
 * what each locks). Each function takes one jsonb object and returns one, keys in snake_case;
 * this module is the only place that spells those keys. Money goes in and comes back as whole
 * micro-USD numbers (read through `microsFromDb`).
 */

/** What the hot paths run on: `Database.pool`. */
export type SqlPool = Pick<pg.Pool, 'query'>;

/**
 * Runs one statement with `$1..$n` parameters (cast them in the SQL) and returns its rows. BIGINT
 * columns come back as decimal text: read money with `microsFromDb`.
 */
export async function queryRows<T>(pool: SqlPool, text: string, params: readonly unknown[]): Promise<T[]> {
  return (await pool.query(text, params as unknown[])).rows as T[];
}

/** Why a reservation or a retry was refused, as the functions spell it. */
export type StepVerdict = 'ok' | 'run_not_running' | 'step_not_runnable' | 'not_owner' | 'attempts_exhausted' | 'cap_exceeded' | 'insufficient_credit';

/** Input of `svc_reserve_step`. */
export interface ReserveStepArgs {
  run_id: string;
  node_id: string;
  estimate_micros: number;
  stale_ms: number;
  attempt_token: string;
  lost_charge_micros: number;
  max_attempts: number;
  group_micros?: number;
}

/** Output of `svc_reserve_step`. */
export interface ReserveStepOut {
  verdict: StepVerdict;
  attempt: number | null;
  owned: boolean;
  group_micros: number | null;
  /** The lost attempt's provider job, which this attempt resumes (null: none). */
  provider_job: unknown;
}

/** Input of `svc_retry_step`. */
export interface RetryStepArgs {
  run_id: string;
  node_id: string;
  attempt_token: string;
  cost_micros: number;
  estimate_micros: number;
  lost_charge_micros: number;
  max_attempts: number;
}

/** Output of `svc_retry_step`. */
export interface RetryStepOut {
  verdict: StepVerdict;
  attempt: number | null;
}

/** One step committed with another (`followers` of `svc_complete_step`). */
export interface FollowerArgs {
  node_id: string;
  cost_micros: number;
  estimate_micros: number;
  output: Record<string, unknown>;
  ms: number;
  dependents: readonly string[];
  skippable: boolean;
}

/** Input of `svc_complete_step`. */
export interface CompleteStepArgs {
  run_id: string;
  node_id: string;
  attempt_token: string;
  cost_micros: number;
  output: Record<string, unknown>;
  ms: number;
  dependents: readonly string[];
  run_outputs: Record<string, unknown> | null;
  next_node_id: string | null;
  next_estimate_micros: number | null;
  next_attempt_token: string | null;
  followers: readonly FollowerArgs[] | null;
  lease: boolean;
}

/** Input of `svc_complete_steps`: commits made in one transaction, each organization's row written once. */
export interface CompleteStepsArgs {
  commits: readonly CompleteStepArgs[];
}

/** Output of `svc_complete_step`, money already converted. */
export interface CompleteStepOut {
  committed: boolean;
  total_micros: number;
  held_micros: number;
  ready: string[] | null;
  remaining: number;
  run_completed: boolean;
  next_verdict: 'ok' | 'cap_exceeded' | 'insufficient_credit' | null;
  next_attempt: number | null;
  next_lease_micros: number | null;
  follower_totals: (number | null)[] | null;
}

/** Input of `svc_fail_step`. */
export interface FailStepArgs {
  run_id: string;
  node_id: string;
  attempt_token: string;
  cost_micros: number;
  error: { code: string; message: string };
  ms: number | null;
}

/** Output of `svc_fail_step`. */
export interface FailStepOut {
  committed: boolean;
  total_micros: number;
  held_micros: number;
  run_failed: boolean;
  skipped: string[] | null;
}

/** Input of `svc_fail_run`. */
export interface FailRunArgs {
  run_id: string;
  error: { code: string; message: string };
  culprit_node_id: string | null;
  /** What the run becomes: `failed` (absent), or `cancelled` (a cancellation or a deadline). */
  status?: 'failed' | 'cancelled';
}

/** Output of `svc_fail_run`. */
export interface FailRunOut {
  found: boolean;
  failed: boolean;
  released_micros: number;
  cancelled: string[];
  skipped: string[];
}

/** One run of `svc_create_runs`. */
export interface CreateRunArgs {
  user_id: string;
  token_id: string | null;
  workflow_id: string | null;
  workflow_version_id: string | null;
  definition: unknown;
  inputs: unknown;
  cap_micros: number;
  status: 'pending' | 'running';
  require_credit: boolean;
  reserved_micros: number;
  run_id: string | null;
  /** The run's deadline, this long after it is stored; null: none of its own. */
  max_duration_seconds?: number | null;
  /** How the run's steps use the output cache; null: auto. */
  output_cache?: string | null;
  /** The catalog file entries the run started with, by node id; null: none. */
  node_entries?: Record<string, unknown> | null;
  /** The request's Idempotency-Key, and the hash of the request it came with (both or neither). */
  idempotency_key?: string | null;
  request_hash?: string | null;
  /** Where the run's events are delivered, and which (docs/webhooks.md). */
  webhook?: { url: string; events: readonly string[] } | null;
  /** The batch whose row the run runs (docs/batches.md). */
  batch_id?: string | null;
  /** The schedule whose tick starts the run (docs/schedules.md). */
  schedule_id?: string | null;
  steps: readonly { node_id: string; pending_deps: number; token: string | null; reserved_micros: number }[];
}

/** Input of `svc_create_runs`: runs of one organization, stored in order in one transaction. */
export interface CreateRunsArgs {
  org_id: string;
  runs: readonly CreateRunArgs[];
}

/** What `svc_create_runs` answers for each run. */
export interface CreateRunOut {
  id: string | null;
  available_micros: number | null;
  /** Not stored: `id` is the run of the request's unexpired idempotency key. */
  existing?: boolean;
  /** With `existing`: whether that key was stored with this request's hash. */
  same_request?: boolean;
}

/** Input of `svc_complete_run`. */
export interface CompleteRunArgs {
  run_id: string;
  outputs: Record<string, unknown>;
}

/** Input of `svc_feed_batch`: one turn of a batch (prisma/functions/batch-feed.sql). */
export interface FeedBatchArgs {
  batch_id: string;
  /** The most rows this turn starts. */
  max_start: number;
}

/** What `svc_feed_batch` answers. */
export type FeedBatchOut =
  | { busy: true }
  | { found: false }
  | {
      org_id: string;
      status: 'running' | 'cancelling' | 'completed' | 'cancelled';
      /** This turn ended the batch. */
      ended: boolean;
      /** Rows settled this turn. */
      settled: number;
      /** Rows whose runs this turn stored, with the inputs they run with, and the attempt token of a first step stored reserved with the run (else null). */
      started: { row: number; run_id: string; inputs: Record<string, ArtifactInput>; token: string | null }[];
      /** Runs of the rows in flight of a cancelling batch: the caller cancels them. */
      cancel_runs: string[];
      pending: number;
      running: number;
    };

/** What each function takes and returns, by name: the one list {@link callFunction} is typed against. */
interface Functions {
  svc_create_runs: [CreateRunsArgs, { results: CreateRunOut[] }];
  svc_reserve_step: [ReserveStepArgs, ReserveStepOut];
  svc_retry_step: [RetryStepArgs, RetryStepOut];
  svc_complete_step: [CompleteStepArgs, CompleteStepOut];
  svc_complete_steps: [CompleteStepsArgs, { results: CompleteStepOut[] }];
  svc_fail_step: [FailStepArgs, FailStepOut];
  svc_fail_run: [FailRunArgs, FailRunOut];
  svc_complete_run: [CompleteRunArgs, { completed: boolean }];
  svc_feed_batch: [FeedBatchArgs, FeedBatchOut];
}

/** The functions the service calls (make pg-instructions replays their statements). */
export type FunctionName = keyof Functions;

/** What writes the flush's WAL: a transactional logical message, which decoding plugins ignore. */
const FLUSH_MESSAGE = "pg_logical_emit_message(true, 'svc_flush', '')";

/** A transaction that writes WAL and commits synchronously: its flush covers every commit before it. */
export const FLUSH = `SELECT ${FLUSH_MESSAGE}`;

/** {@link FLUSH} as a named statement (FlushGroup), parsed once per connection. */
const NAMED_FLUSH = { name: 'svc_flush', text: FLUSH } as const;

/**
 * One round trip, `SELECT <name>($1::jsonb)`, and a second when the function committed without
 * waiting for its flush: one that wrote the organization's row (a creation, a settlement) turns
 * `synchronous_commit` off for its transaction so that the row's lock is released at once, not
 * after an fsync (`svc_release_locks_before_flush` in money-holds.sql). Then a transaction that
 * does wait for its flush makes it durable before the caller acts on the answer: WAL is flushed in
 * order, so that flush covers the function's commit. It must write WAL of its own (a transactional
 * logical message, which decoding plugins ignore): Postgres commits a transaction that wrote none
 * without waiting for a flush even when synchronous_commit is on (`txid_current()` alone did not:
 * runs acknowledged just before a Postgres crash were lost, test/integration/stream-outages).
 * Callers that need a flush at once share one ({@link FlushGroup}); a call with nothing of its
 * pool in flight beside it has nobody to share with and sends its flush in its own round trip
 * ({@link callFlushed}).
 * The name comes from the `Functions` list above, never from a caller's data.
 */
async function callFunction<N extends FunctionName>(pool: SqlPool, name: N, args: Functions[N][0]): Promise<Record<string, unknown>> {
  const group = flushGroupOf(pool);
  const json = jsonParam(args, name);
  const alone = group.enter();
  try {
    if (alone) return await callFlushed(pool, name, json);
    // A named statement: each connection parses and plans it once, not at every call (about 7%
    // of Postgres' instructions per run: docs/performance/postgres.md, Instructions per run).
    const result = await pool.query<{ out: Record<string, unknown>; unflushed: boolean }>({ ...namedCall(name), values: [json] });
    const row = result.rows[0]!;
    if (row.unflushed) await group.flush();
    return row.out;
  } finally {
    group.leave();
  }
}

/**
 * {@link callFunction}'s named statement for function `name`, its one parameter the argument.
 * OFFSET 0 keeps the call a subquery of its own, run before the setting is read (the function
 * sets svc.flush_after_commit for its transaction alone).
 */
export function namedCall(name: FunctionName): { name: string; text: string } {
  return { name: `svc_call_${name}`, text: `SELECT f.out, current_setting('svc.flush_after_commit', true) = 'on' AS unflushed FROM (SELECT ${name}($1::jsonb) AS out OFFSET 0) f` };
}

/**
 * The function's call and, when it committed without waiting, its flush, in one simple query
 * (B1: a sequential run's creation and settlement each paid a second round trip for its flush).
 * The call runs in the query's implicit transaction and the explicit `COMMIT` ends it, with the
 * function's own `synchronous_commit`; the last statement is a transaction of its own, which
 * writes the flush's WAL and waits for it only when the call asked (`svc.flush_pending`, set for
 * the session because the call's own setting ends with its transaction, and cleared again). A
 * failing call skips the rest and rolls back, as a single statement would. The simple protocol
 * takes no parameters: the argument is a quoted literal (`escapeLiteral`).
 */
async function callFlushed(pool: SqlPool, name: FunctionName, json: string): Promise<Record<string, unknown>> {
  const results = (await pool.query(flushedCallText(name, json))) as unknown as pg.QueryResult[];
  return (results[0]!.rows[0] as { out: Record<string, unknown> }).out;
}

/** {@link callFlushed}'s simple query: the call, `COMMIT`, and the flush when the call asked for one. */
export function flushedCallText(name: FunctionName, json: string): string {
  return (
    `SELECT f.out, set_config('svc.flush_pending', COALESCE(current_setting('svc.flush_after_commit', true) = 'on', false)::text, false) AS unflushed ` +
    `FROM (SELECT ${name}(${pg.escapeLiteral(json)}::jsonb) AS out OFFSET 0) f; COMMIT; ` +
    `SELECT CASE WHEN current_setting('svc.flush_pending') = 'true' THEN ${FLUSH_MESSAGE} END AS flushed, ` +
    `set_config('svc.flush_pending', '', false)`
  );
}

/**
 * Group commit of the flushes: one FLUSH covers every commit that returned before it was sent
 * (WAL is flushed in order, and its own commit comes after theirs), so the callers of one pool
 * that need a flush while one is out wait for the next one, which goes when it returns, and share
 * it. Never an earlier flush: one sent before a caller's commit returned may not cover it. Under
 * load one FLUSH transaction per round trip and process, not one per creation and settlement (B5's
 * run store with fifty organizations: the flush statements' WAL waits were 60-70% of the samples).
 */
class FlushGroup {
  /** Function calls of this pool in flight ({@link callFunction}). */
  private calls = 0;
  private sending = false;
  private next: { promise: Promise<void>; resolve(): void; reject(err: unknown): void } | null = null;

  constructor(private readonly pool: SqlPool) {}

  /**
   * Counts a function call in flight until `leave`; whether nothing else of this pool was (no
   * call, no flush), so that it has no flush to share and may flush its own commit.
   */
  enter(): boolean {
    const alone = this.calls === 0 && !this.sending;
    this.calls++;
    return alone;
  }

  leave(): void {
    this.calls--;
  }

  /** Resolves once a FLUSH sent after this call has committed. */
  flush(): Promise<void> {
    if (this.next) return this.next.promise;
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    this.next = { promise, resolve, reject };
    if (!this.sending) this.send();
    return promise;
  }

  private send(): void {
    const waiting = this.next!;
    this.next = null;
    this.sending = true;
    void this.pool.query(NAMED_FLUSH).then(
      () => waiting.resolve(),
      (err: unknown) => waiting.reject(err),
    ).finally(() => {
      this.sending = false;
      if (this.next) this.send();
    });
  }
}

const flushGroups = new WeakMap<SqlPool, FlushGroup>();

function flushGroupOf(pool: SqlPool): FlushGroup {
  let group = flushGroups.get(pool);
  if (!group) flushGroups.set(pool, (group = new FlushGroup(pool)));
  return group;
}

const money = (value: unknown): number => microsFromDb(value as number);
const moneyOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : money(value));

/** One result per run of `args.runs`, in order. */
export async function createRuns(pool: SqlPool, args: CreateRunsArgs): Promise<CreateRunOut[]> {
  const out = await callFunction(pool, 'svc_create_runs', args);
  return (out.results as Record<string, unknown>[]).map((r) => ({
    id: (r.id as string | null) ?? null,
    available_micros: moneyOrNull(r.available_micros),
    ...(r.existing === true ? { existing: true, same_request: r.same_request === true } : {}),
  }));
}

export async function reserveStep(pool: SqlPool, args: ReserveStepArgs): Promise<ReserveStepOut> {
  const out = await callFunction(pool, 'svc_reserve_step', args);
  return { ...(out as unknown as ReserveStepOut), group_micros: moneyOrNull(out.group_micros), provider_job: out.provider_job ?? null };
}

export async function retryStep(pool: SqlPool, args: RetryStepArgs): Promise<RetryStepOut> {
  return (await callFunction(pool, 'svc_retry_step', args)) as unknown as RetryStepOut;
}

export async function completeStep(pool: SqlPool, args: CompleteStepArgs): Promise<CompleteStepOut> {
  return completeStepOut(await callFunction(pool, 'svc_complete_step', args));
}

/** One result per commit of `args.commits`, in order. */
export async function completeSteps(pool: SqlPool, args: CompleteStepsArgs): Promise<CompleteStepOut[]> {
  const out = await callFunction(pool, 'svc_complete_steps', args);
  return (out.results as Record<string, unknown>[]).map(completeStepOut);
}

function completeStepOut(out: Record<string, unknown>): CompleteStepOut {
  const totals = out.follower_totals as unknown[] | null;
  return {
    ...(out as unknown as CompleteStepOut),
    total_micros: money(out.total_micros),
    held_micros: money(out.held_micros),
    next_lease_micros: moneyOrNull(out.next_lease_micros),
    follower_totals: totals === null ? null : totals.map(moneyOrNull),
  };
}

export async function failStep(pool: SqlPool, args: FailStepArgs): Promise<FailStepOut> {
  const out = await callFunction(pool, 'svc_fail_step', args);
  return { ...(out as unknown as FailStepOut), total_micros: money(out.total_micros), held_micros: money(out.held_micros) };
}

export async function failRun(pool: SqlPool, args: FailRunArgs): Promise<FailRunOut> {
  const out = await callFunction(pool, 'svc_fail_run', args);
  return { ...(out as unknown as FailRunOut), released_micros: money(out.released_micros) };
}

export async function completeRun(pool: SqlPool, args: CompleteRunArgs): Promise<boolean> {
  return (await callFunction(pool, 'svc_complete_run', args)).completed === true;
}

export async function feedBatch(pool: SqlPool, args: FeedBatchArgs): Promise<FeedBatchOut> {
  return (await callFunction(pool, 'svc_feed_batch', args)) as unknown as FeedBatchOut;
}
