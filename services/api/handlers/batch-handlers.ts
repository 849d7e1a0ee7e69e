import type { Batch, BatchList, RunError } from '../../contract';
import { usdToMicrosFloor } from '../../engine';
import { AppError } from '../../platform/app-error';
import type { BatchResultsUrls } from '../../platform/batch-results-urls';
import { batchRowView, batchView, BatchEventStream, type BatchLauncher } from '../../runs';
import type { BatchRepository } from '../../store';
import { authOf, backgroundOptions, type Handler } from './handler-types';
import { decodeRunCursor, encodeRunCursor } from './run-cursor';

export interface BatchHandlerDeps {
  launcher: BatchLauncher;
  batches: Pick<BatchRepository, 'get' | 'list' | 'rows' | 'cancel' | 'retry' | 'endedAfter'>;
  /** Cancels a run as `runs.cancel` does (`RunLifecycle.cancel`). */
  cancelRun(runId: string, error: RunError): Promise<boolean>;
  /** Tells the workers' feeders a batch has rows to start (a retry); a lost one costs only time. */
  announce(batchId: string): Promise<void>;
  results: Pick<BatchResultsUrls, 'urlFor'>;
  /** How often a batch's stream asks Postgres for rows ended since (BATCH_STREAM_POLL_MS). */
  streamPollMs: number;
  /** What is wrong with a Webhook-Url by the address rules; null when nothing. */
  webhookUrlProblem(url: string): string | null;
}

type BatchName = 'batches.create' | 'batches.list' | 'batches.get' | 'batches.rows' | 'batches.events' | 'batches.results' | 'batches.cancel' | 'batches.retry';

const ROW_CURSOR = /^r(\d{1,9})$/;
const CANCELLED_BY_CALLER: RunError = { code: 'cancelled', message: 'the batch was cancelled (POST /v1/batches/:id/cancel); rows not started were cancelled' };
const RUN_CANCELLED_WITH_BATCH: RunError = { code: 'cancelled', message: 'the batch this run belongs to was cancelled' };

function noSuchBatch(id: string): AppError {
  return new AppError({ code: 'not_found', message: `no batch "${id.slice(0, 100)}" in your organization; list yours with GET /v1/batches` });
}

/** `Last-Event-ID` (or `?after=`) of a batch's stream: the number of rows ended the client has seen. */
function resumeAfter(after: number | undefined, lastEventId: string | undefined): number {
  const header = lastEventId?.trim();
  if (header !== undefined && header !== '') {
    if (!/^\d{1,9}$/.test(header)) throw new AppError({ code: 'validation_failed', message: 'Last-Event-ID must be the id of an event of this batch\'s stream (a whole number)' });
    return Number(header);
  }
  return after ?? 0;
}

/**
 * The batch routes (docs/batches.md): create (checked, stored, fed by the workers), read (record,
 * rows, progress stream, results file link), cancel and retry.
 */
export function batchHandlers(deps: BatchHandlerDeps): { [K in BatchName]: Handler<K> } {
  const find = async (id: string, orgId: string) => {
    const record = await deps.batches.get(id, orgId);
    if (!record) throw noSuchBatch(id);
    return record;
  };
  const view = async (id: string, orgId: string): Promise<Batch> => batchView(await find(id, orgId));
  return {
    'batches.create': async (input, ctx) => {
      const auth = authOf(ctx);
      const { id } = await deps.launcher.create(input, { orgId: auth.orgId, userId: auth.userId, tokenId: auth.tokenId, log: ctx.log, ...backgroundOptions(ctx, 'batches.create', input, deps.webhookUrlProblem) });
      return view(id, auth.orgId);
    },

    'batches.list': async (query, ctx): Promise<BatchList> => {
      const auth = authOf(ctx);
      const after = query.cursor === undefined ? undefined : decodeRunCursor(query.cursor);
      if (after === null) throw new AppError({ code: 'validation_failed', message: 'cursor is not a cursor of this listing; pass the "nextCursor" of the previous page unchanged, or leave it out for the first page' });
      const limit = query.limit ?? 20;
      const records = await deps.batches.list(auth.orgId, limit + 1, after);
      const page = records.slice(0, limit);
      const last = page.at(-1);
      return { batches: page.map(batchView), nextCursor: records.length > limit && last ? encodeRunCursor({ createdAt: last.createdAt, id: last.id }) : null };
    },

    'batches.get': async ({ id }, ctx) => view(id, authOf(ctx).orgId),

    'batches.rows': async ({ id, status, limit = 100, cursor }, ctx) => {
      const record = await find(id, authOf(ctx).orgId);
      const match = cursor === undefined ? null : ROW_CURSOR.exec(cursor);
      if (cursor !== undefined && !match) throw new AppError({ code: 'validation_failed', message: 'cursor is not a cursor of this listing; pass the "nextCursor" of the previous page unchanged' });
      const rows = await deps.batches.rows(record.id, { afterRow: match ? Number(match[1]) : 0, limit: limit + 1, ...(status ? { status } : {}) });
      const page = rows.slice(0, limit);
      return { rows: page.map(batchRowView), nextCursor: rows.length > limit ? `r${page.at(-1)!.row}` : null };
    },

    'batches.events': async ({ id, after }, ctx) => {
      const auth = authOf(ctx);
      const afterSeq = resumeAfter(after, ctx.lastEventId);
      const record = await find(id, auth.orgId);
      return new BatchEventStream(deps.batches, { batchId: record.id, orgId: auth.orgId, afterSeq, pollMs: deps.streamPollMs, signal: ctx.signal });
    },

    'batches.results': async ({ id, format = 'jsonl' }, ctx) => {
      const record = await find(id, authOf(ctx).orgId);
      const { url, expiresAt } = deps.results.urlFor(record.id, format);
      const ended = record.completedRows + record.failedRows + record.cancelledRows;
      return { url, format, expiresAt: expiresAt.toISOString(), rowsEnded: ended, complete: record.status === 'completed' || record.status === 'cancelled' };
    },

    'batches.cancel': async ({ id }, ctx) => {
      const auth = authOf(ctx);
      const record = await find(id, auth.orgId);
      const cancelled = await deps.batches.cancel(record.id, auth.orgId, CANCELLED_BY_CALLER);
      if (!cancelled) throw noSuchBatch(id);
      if (cancelled.runIds.length > 0) {
        ctx.log.info({ batchId: record.id, runs: cancelled.runIds.length }, 'batch cancelled');
        // Rows in flight stop as runs do; the workers' feeders settle them and end the batch.
        await Promise.all(cancelled.runIds.map((runId) => deps.cancelRun(runId, RUN_CANCELLED_WITH_BATCH).catch((err: unknown) => ctx.log.warn({ err, runId }, 'a batch run was not cancelled here; the feeder cancels it'))));
      }
      return view(record.id, auth.orgId);
    },

    'batches.retry': async ({ id, maxCostUsd }, ctx) => {
      const auth = authOf(ctx);
      const record = await find(id, auth.orgId);
      const outcome = await deps.batches.retry(record.id, auth.orgId, maxCostUsd === undefined ? null : usdToMicrosFloor(maxCostUsd));
      switch (outcome.outcome) {
        case 'retried':
          ctx.log.info({ batchId: record.id, rows: outcome.rows }, 'batch retried');
          await deps.announce(record.id).catch((err: unknown) => ctx.log.warn({ err, batchId: record.id }, 'could not announce a retried batch to the workers; their sweep finds it'));
          return view(record.id, auth.orgId);
        case 'not_ended':
          throw new AppError({ code: 'conflict', message: `batch ${record.id} is still ${record.status}; retry its failed rows once it has ended (cancel it first to stop it now)` });
        case 'nothing_failed':
          throw new AppError({ code: 'conflict', message: `batch ${record.id} has no failed or cancelled rows to retry` });
        case 'cap_below_spent':
          throw new AppError({ code: 'validation_failed', message: `maxCostUsd is below what batch ${record.id} has spent ($${batchView(record).spentUsd}); a batch's cap counts every attempt` });
        case 'not_found':
          throw noSuchBatch(id);
      }
    },
  };
}
