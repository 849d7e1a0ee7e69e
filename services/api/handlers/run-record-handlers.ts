import { Router, type NextFunction, type Request, type Response } from 'express';
import type { TSchema, Static } from '@sinclair/typebox';
import {
  RUN_LIST_DEFAULT_LIMIT,
  RunEventsQuerySchema,
  RunListQuerySchema,
  validate,
  type Run,
  type RunList,
} from '../../contract';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup } from '../auth/auth-context';
import { authenticateScope } from '../auth/authenticate';
import { writeEventStream, type StreamGauge } from '../http/sse-writer';
import { inStreamSlot, type StreamSlots } from '../http/stream-slots';
import { decodeRunCursor, encodeRunCursor } from './run-cursor';
import type { RunEventSource, RunReader } from './run-ports';
import { DEFAULT_RECORD_CHECK_MS, replayEvents } from './run-replay';
import { isFinished, runBody, runSummaryBody } from './run-views';

export interface RunRouteDeps {
  runs: RunReader;
  events: RunEventSource;
  tokens: TokenLookup;
  /** Interval of the comment lines that keep an idle event stream open through proxies. */
  heartbeatMs: number;
  /** Counts open replay streams (the `svc_sse_streams_open` gauge). */
  openStreams?: StreamGauge;
  /** The organization's open-stream limit (a replay stream holds a slot); absent: unlimited. */
  streamSlots?: StreamSlots;
  /**
   * How long the replay of a finished run may wait for its log's terminal event before sending
   * the one its record implies (see run-replay.ts). Default 2 s.
   */
  finishedRunGraceMs?: number;
  /** Silence after which the stream of an unfinished run reads its record again (see run-replay.ts). Default 10 s. */
  recordCheckMs?: number;
}

const DEFAULT_FINISHED_RUN_GRACE_MS = 2000;

/** Query parameters that are numbers; the query string carries them as text. */
const INTEGER_PARAMS = new Set(['limit', 'after']);

/** The query as an input object: integer parameters converted when they are plain digits. */
function queryInput(req: Request): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(req.query as Record<string, unknown>)) {
    input[key] = INTEGER_PARAMS.has(key) && typeof value === 'string' && /^-?\d{1,16}$/.test(value) ? Number(value) : value;
  }
  return input;
}

function invalid(path: string, message: string): AppError {
  return new AppError({ code: 'validation_failed', message, details: { issues: [{ path, message }] } });
}

/** The query checked against its schema; unknown parameters, bad types and ranges are 400. */
function checkedQuery<S extends TSchema>(schema: S, req: Request): Static<S> {
  const checked = validate(schema, queryInput(req));
  if (!checked.ok) throw new AppError({ code: 'validation_failed', message: checked.message, details: { issues: checked.issues } });
  return checked.value;
}

function authOf(res: Response): AuthContext {
  return res.locals.auth as AuthContext;
}

function noSuchRun(id: string): AppError {
  return new AppError({ code: 'not_found', message: `no run with id "${id}" in your organization` });
}

/**
 * Sets the metrics label of the route. A route with a path parameter leaves a path the contract
 * names (`/v1/runs/node` is not a run id) to the contract, whose 405 then answers.
 */
function route(pattern: string) {
  const hasParams = pattern.includes('/:');
  return (_req: Request, res: Response, next: NextFunction): void => {
    if (hasParams && res.locals.allowedMethods) return next('route');
    res.locals.route = pattern;
    next();
  };
}

/**
 * The resume point of a replay: `Last-Event-ID` (what a browser's EventSource sends on
 * reconnect) or `?after=`; both may be given only when they agree. An empty header counts as
 * absent, as EventSource sends none before it has seen an id.
 */
function resumePoint(req: Request): { afterSeq: number; from: string } {
  const { after } = checkedQuery(RunEventsQuerySchema, req);
  const header = req.get('last-event-id')?.trim();
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
  if (fromHeader !== undefined) return { afterSeq: fromHeader, from: 'Last-Event-ID' };
  return { afterSeq: after ?? 0, from: 'after' };
}

/**
 * Run history and replay, beside the contract's operations (token scope `run`, the caller's
 * organization only; another organization's run is 404 as if it did not exist):
 *
 * - `GET /v1/runs`: the organization's runs, newest first, `?limit=&cursor=&status=`;
 * - `GET /v1/runs/:id`: one run record with its steps and, once completed, its outputs;
 * - `GET /v1/runs/:id/events`: the run's events as `text/event-stream`, replayed after
 *   `Last-Event-ID` (or `?after=`) and then followed live to `[DONE]`.
 */
export function createRunRouter(deps: RunRouteDeps): Router {
  const router = Router();
  const auth = (what: string) => authenticateScope('run', what, deps.tokens);

  router.get('/v1/runs', route('/v1/runs'), auth('GET /v1/runs'), async (req: Request, res: Response) => {
    const query = checkedQuery(RunListQuerySchema, req);
    const after = query.cursor === undefined ? undefined : decodeRunCursor(query.cursor);
    if (after === null) {
      throw invalid('cursor', 'cursor is not a cursor of this listing; pass the "nextCursor" of the previous page unchanged, or leave it out for the first page');
    }
    const page = await deps.runs.listRuns(authOf(res).orgId, { limit: query.limit ?? RUN_LIST_DEFAULT_LIMIT, after, status: query.status });
    const body: RunList = { runs: page.runs.map(runSummaryBody), nextCursor: page.next ? encodeRunCursor(page.next) : null };
    res.status(200).json(body);
  });
  // DELETE /v1/runs and the like: the 405 names GET beside the contract's POST.
  router.all('/v1/runs', (_req: Request, res: Response, next: NextFunction) => {
    const methods = res.locals.allowedMethods as string[] | undefined;
    if (methods && !methods.includes('GET')) res.locals.allowedMethods = [...methods, 'GET'];
    next();
  });

  router.get('/v1/runs/:id', route('/v1/runs/:id'), auth('GET /v1/runs/:id'), async (req: Request<{ id: string }>, res: Response) => {
    const run = await deps.runs.getRun(req.params.id, authOf(res).orgId);
    if (!run) throw noSuchRun(req.params.id);
    const body: Run = runBody(run);
    res.status(200).json(body);
  });

  router.get('/v1/runs/:id/events', route('/v1/runs/:id/events'), auth('GET /v1/runs/:id/events'), async (req: Request<{ id: string }>, res: Response) => {
    const { afterSeq, from } = resumePoint(req);
    const run = await deps.runs.getRun(req.params.id, authOf(res).orgId);
    if (!run) throw noSuchRun(req.params.id);
    const lastSeq = await deps.events.lastSeq(run.id);
    const finished = isFinished(run);
    if (!finished && afterSeq > lastSeq) {
      // The stream would wait for events it then drops as already seen, up to and past the terminal one.
      throw invalid(from, `${from} ${afterSeq} is past the last event this run sent (id ${lastSeq}); resume from the id of an event received from it`);
    }
    const controller = new AbortController();
    res.on('close', () => controller.abort());
    const finishedGraceMs = deps.finishedRunGraceMs ?? DEFAULT_FINISHED_RUN_GRACE_MS;
    const recordCheckMs = deps.recordCheckMs ?? DEFAULT_RECORD_CHECK_MS;
    const loadRun = () => deps.runs.getRun(run.id, run.orgId);
    await inStreamSlot(deps.streamSlots, res, async () => {
      const events = replayEvents(deps.events, run, { afterSeq, lastSeq, signal: controller.signal, finishedGraceMs, recordCheckMs, loadRun });
      await writeEventStream(res, events, { heartbeatMs: deps.heartbeatMs, openStreams: deps.openStreams });
    });
  });

  return router;
}
