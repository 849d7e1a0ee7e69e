import { Router, type Request, type Response } from 'express';
import { stringify } from 'csv-stringify/sync';
import type { Artifact } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { BatchResultsUrls } from '../../platform/batch-results-urls';
import { batchRowView } from '../../runs';
import type { BatchRepository } from '../../store';

export interface BatchResultsRouteDeps {
  urls: Pick<BatchResultsUrls, 'refusal'>;
  batches: Pick<BatchRepository, 'resultsHead' | 'rows'>;
  now?: () => Date;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Rows read per query while the file streams. */
const PAGE = 1_000;

function single(value: unknown): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : undefined;
}

/** An output as one CSV cell: a file's URL, a text as it is, any other value as JSON. */
function cellOf(artifact: Artifact | undefined): string {
  if (!artifact) return '';
  if ('ref' in artifact && typeof artifact.ref === 'string') return artifact.ref;
  const value = (artifact as { value?: unknown }).value;
  return typeof value === 'string' ? value : JSON.stringify(value ?? null);
}

/**
 * `GET /v1/batches/:id/results/download`: a batch's results file, the URL `batches.results`
 * signed (docs/batches.md, Results). Streams the rows ended so far in row order from Postgres,
 * a page at a time: JSON Lines (`{row, status, runId, attempts, costUsd, outputs, error,
 * finishedAt}` per line) or CSV (row, status, run_id, cost_usd, error_code, error_message, then one
 * column per workflow output: a file's URL, a text, or JSON).
 */
export function createBatchResultsRouter(deps: BatchResultsRouteDeps): Router {
  const router = Router();
  router.get('/v1/batches/:id/results/download', async (req: Request, res: Response) => {
    res.locals.route = '/v1/batches/:id/results/download';
    const id = single(req.params.id) ?? '';
    const format = single(req.query.format);
    const refusal = UUID.test(id) ? deps.urls.refusal(id, format, single(req.query.expires), single(req.query.signature), deps.now?.()) : 'no such batch';
    if (refusal) throw new AppError({ code: 'forbidden', message: refusal });
    const head = await deps.batches.resultsHead(id);
    if (!head) throw new AppError({ code: 'not_found', message: `batch ${id} no longer exists` });
    const csv = format === 'csv';
    res.status(200).set({
      'Content-Type': csv ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
      'Content-Disposition': `attachment; filename="batch-${id}.${csv ? 'csv' : 'jsonl'}"`,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    if (csv) res.write(stringify([['row', 'status', 'run_id', 'cost_usd', 'error_code', 'error_message', ...head.outputNames]]));
    let after = 0;
    for (;;) {
      const rows = await deps.batches.rows(id, { afterRow: after, limit: PAGE, endedOnly: true });
      if (rows.length === 0 || res.destroyed) break;
      const text = csv
        ? stringify(
            rows.map((record) => {
              const row = batchRowView(record);
              const outputs = (row.outputs ?? {}) as Record<string, Artifact>;
              return [row.row, row.status, row.runId ?? '', row.costUsd, row.error?.code ?? '', row.error?.message ?? '', ...head.outputNames.map((name) => cellOf(outputs[name]))];
            }),
          )
        : rows.map((record) => `${JSON.stringify(batchRowView(record))}\n`).join('');
      // Backpressure: a slow client holds the next page's query, not the process' memory.
      if (!res.write(text)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
      after = rows.at(-1)!.row;
      if (rows.length < PAGE) break;
    }
    res.end();
  });
  return router;
}
