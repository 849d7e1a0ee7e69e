import { RUN_LIST_DEFAULT_LIMIT, type RunError, type RunList, type RunStatus } from '../../contract';
import { parseWorkflowId } from '../../engine';
import { AppError, outageError } from '../../platform/app-error';
import { settleWithin } from '../../platform/bounded-wait';
import { DEFAULT_RECORD_CHECK_MS, replayEvents, type RunEventSource } from '../../runs';
import type { RunListKey, RunRecord, RunSummaryRecord } from '../../store';
import { decodeRunCursor, encodeRunCursor } from './run-cursor';
import { authOf, type Handler } from './handler-types';
import { runBody, runSummaryBody } from './run-views';

/** Port: reads runs, never another organization's (`RunRepository`). */
export interface RunReader {
  /** The run if it exists and belongs to `orgId`, else null (also for an id that is not a UUID). */
  getRun(runId: string, orgId: string): Promise<RunRecord | null>;
  /** A page of `orgId`'s runs, newest first, starting after `after`; `next` is null on the last page. */
  listRuns(
    orgId: string,
    options: { limit: number; after?: RunListKey; status?: RunStatus; workflow?: { org: string; slug: string } | { id: string }; batchId?: string; scheduleId?: string },
  ): Promise<{ runs: RunSummaryRecord[]; next: RunListKey | null }>;
}

/** Port: cancels a run (`RunLifecycle.cancel`); false when it had already ended. */
export type RunCanceller = (runId: string, error: RunError) => Promise<boolean>;

export interface RunRecordHandlerDeps {
  runs: RunReader;
  cancel: RunCanceller;
  events: RunEventSource;
  /**
   * How long the replay of a finished run may wait for its log's terminal event before sending
   * the one its record implies (see run-event-stream.ts). Default 2 s.
   */
  finishedRunGraceMs?: number;
  /** Silence after which the stream of an unfinished run reads its record again. Default 10 s. */
  recordCheckMs?: number;
  /** Longest `runs.events` waits for the log's position while Redis is away (REQUEST_REDIS_WAIT_MS), then 503. */
  redisWaitMs: number;
}

const DEFAULT_FINISHED_RUN_GRACE_MS = 2000;

function invalid(path: string, message: string): AppError {
  return new AppError({ code: 'validation_failed', message, details: { issues: [{ path, message }] } });
}

function noSuchRun(id: string): AppError {
  return new AppError({ code: 'not_found', message: `no run with id "${id}" in your organization` });
}

/**
 * Reads a run's record again, for a stream that outlives the handler. It keeps the ids, not the
 * record with its steps (about a kilobyte per open stream), and is returned rather than written
 * inline as `loadRun: () => …`: tsx, the service's runtime, names such a closure, and a named
 * closure carries a property dictionary of about 256 bytes for as long as its stream is open.
 */
function recordReader(runs: RunReader, runId: string, orgId: string): () => Promise<RunRecord | null> {
  return () => runs.getRun(runId, orgId);
}

/** The caller; the routes are `auth: 'required'`, so `invoke` guarantees one. */

/**
 * The resume point of a replay: `Last-Event-ID` (what a browser's EventSource sends on
 * reconnect) or `?after=`; both may be given only when they agree. An empty header counts as
 * absent, as EventSource sends none before it has seen an id.
 */
function resumePoint(after: number | undefined, lastEventId: string | undefined): { afterSeq: number } {
  const header = lastEventId?.trim();
  let fromHeader: number | undefined;
  if (header) {
    if (!/^\d{1,15}$/.test(header)) {
      throw invalid('Last-Event-ID', `the Last-Event-ID header must be a non-negative integer (the id: of the last event received), got ${JSON.stringify(header.slice(0, 40))}`);
    }
    fromHeader = Number(header);
  }
  if (fromHeader !== undefined && after !== undefined && fromHeader !== after) {
    throw invalid('after', `Last-Event-ID (${fromHeader}) and the "after" parameter (${after}) disagree; send one of them`);
  }
  return { afterSeq: fromHeader ?? after ?? 0 };
}

/**
 * Run history and replay (token scope `run`, the caller's organization only; another
 * organization's run is 404 as if it did not exist): `runs.list` newest first, `runs.get` one
 * record with its steps and outputs, `runs.events` the run's events replayed after
 * `Last-Event-ID` (or `after`) and then followed live to the terminal one.
 */
type RunRecordName = 'runs.list' | 'runs.get' | 'runs.events' | 'runs.cancel';

export function runRecordHandlers(deps: RunRecordHandlerDeps): { [K in RunRecordName]: Handler<K> } {
  return {
    'runs.list': async (query, ctx): Promise<RunList> => {
      const after = query.cursor === undefined ? undefined : decodeRunCursor(query.cursor);
      if (after === null) {
        throw invalid('cursor', 'cursor is not a cursor of this listing; pass the "nextCursor" of the previous page unchanged, or leave it out for the first page');
      }
      let workflow: { org: string; slug: string } | { id: string } | undefined;
      if (query.workflow !== undefined) {
        const id = parseWorkflowId(query.workflow);
        if (!id.ok) {
          throw invalid('workflow', `workflow must be a workflow address <org-slug>/<workflow-slug> or a workflow UUID, got ${JSON.stringify(query.workflow.slice(0, 200))}`);
        }
        workflow = id.value.kind === 'address' ? { org: id.value.org, slug: id.value.slug } : { id: id.value.id };
      }
      const page = await deps.runs.listRuns(authOf(ctx).orgId, { limit: query.limit ?? RUN_LIST_DEFAULT_LIMIT, after, status: query.status, workflow, batchId: query.batch, scheduleId: query.schedule });
      return { runs: page.runs.map(runSummaryBody), nextCursor: page.next ? encodeRunCursor(page.next) : null };
    },

    'runs.get': async ({ id }, ctx) => {
      const run = await deps.runs.getRun(id, authOf(ctx).orgId);
      if (!run) throw noSuchRun(id);
      return runBody(run);
    },

    'runs.cancel': async ({ id }, ctx) => {
      const auth = authOf(ctx);
      const run = await deps.runs.getRun(id, auth.orgId);
      if (!run) throw noSuchRun(id);
      if (run.userId !== auth.userId) {
        throw new AppError({ code: 'forbidden', message: `run "${id}" was started by another member of your organization; only the user who started a run can cancel it` });
      }
      if (run.status === 'pending' || run.status === 'running') {
        const error = { code: 'cancelled', message: 'the run was cancelled by the user who started it' };
        if (await deps.cancel(run.id, error)) ctx.log.info({ runId: run.id }, 'run cancelled');
      }
      // The run as it is now: cancelled (by this call or an earlier one), or as it finished first.
      const after = await deps.runs.getRun(run.id, auth.orgId);
      if (!after) throw noSuchRun(id);
      return runBody(after);
    },

    'runs.events': async ({ id, after }, ctx) => {
      // A resume point past the log's end is followed, not refused: after Redis restarted empty
      // a run's events go on in a new log whose ids start again below what a client had reached.
      // Its stream then waits for the log to pass that point, or ends with the run's ending
      // from its record (services/queue/run-event-cursor.ts, services/runs/events/run-event-stream.ts).
      const { afterSeq } = resumePoint(after, ctx.lastEventId);
      const run = await deps.runs.getRun(id, authOf(ctx).orgId);
      if (!run) throw noSuchRun(id);
      const waitMs = deps.redisWaitMs;
      const lastSeq = await settleWithin(deps.events.lastSeq(run.id), waitMs, () => outageError(`the run's event log (Redis) did not answer within ${waitMs} ms`, { how: 'with the same Last-Event-ID' }));
      return replayEvents(deps.events, run, {
        afterSeq,
        lastSeq,
        signal: ctx.signal,
        finishedGraceMs: deps.finishedRunGraceMs ?? DEFAULT_FINISHED_RUN_GRACE_MS,
        recordCheckMs: deps.recordCheckMs ?? DEFAULT_RECORD_CHECK_MS,
        loadRun: recordReader(deps.runs, run.id, run.orgId),
      });
    },
  };
}
