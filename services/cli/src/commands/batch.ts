import fs from 'node:fs';
import path from 'node:path';
import type { Batch } from '../../../contract';
import { createBatch, getBatch, type BatchHandle, type BatchInput } from '../../../sdk/src/index';
import { uploadFile } from '../../../sdk/src/node';
import { CliError, EXIT, usageError } from '../cli-error';
import { connectSignedIn } from '../connection';
import { Interrupted, interruptSignal, isInterrupt } from '../interrupt';
import { print, printJson } from '../output';
import { resolveSource } from '../workflow-source';
import { runCallOptions, type RunOptions } from './node';

export interface BatchCommandOptions extends Omit<RunOptions, 'input' | 'webhookEvents'> {
  /** The rows: a .jsonl or .csv file (uploaded), or a .json array (sent in the body). */
  rows?: string;
  rowMaxCost?: number;
  concurrency?: number;
  skipBadRows?: boolean;
  /** Follow a batch started before (its id) instead of starting one. */
  attach?: string;
  /** Start it and print its id; do not follow it. */
  detach?: boolean;
}

/** The progress line's redraws per second at most, on a terminal. */
const REDRAW_MS = 200;
/** A plain (non-terminal) progress line at most this often. */
const PLAIN_EVERY_MS = 2_000;

/**
 * `svc batch <file-or-ref> --rows data.jsonl`: starts a batch (docs/batches.md) and follows it
 * with a progress bar on stderr (plain lines elsewhere); at its end prints the summary and the
 * results file's link (`--json`: the batch record). Ctrl-C stops following only: the batch goes
 * on, and `svc batch --attach <id>` follows it again.
 */
export async function batch(target: string | undefined, options: BatchCommandOptions): Promise<void> {
  const { client, url } = connectSignedIn(options);
  const signal = interruptSignal();
  let handle: BatchHandle;
  if (options.attach !== undefined) {
    if (target !== undefined || options.rows !== undefined) throw usageError('--attach follows a batch started before: give no workflow and no --rows with it');
    handle = await getBatch(client, options.attach, { signal });
  } else {
    if (target === undefined) throw usageError('give the workflow to run (a JSON or YAML file, or a published ref such as acme/flow@1) and --rows <file>');
    if (options.rows === undefined) throw usageError('give the rows with --rows <file>: JSON Lines (.jsonl), CSV with a header line of input names (.csv), or a JSON array (.json)');
    const source = resolveSource(target);
    const request: BatchInput = source.type === 'file' ? { workflow: source.workflow } : { workflowRef: source.ref };
    Object.assign(request, await rowsOf(options.rows, client, signal));
    if (options.maxCost !== undefined) request.maxCostUsd = options.maxCost;
    if (options.rowMaxCost !== undefined) request.rowMaxCostUsd = options.rowMaxCost;
    if (options.concurrency !== undefined) request.concurrency = options.concurrency;
    if (options.skipBadRows) request.skipBadRows = true;
    handle = await createBatch(client, request, { signal, ...(runCallOptions(options) ? { options: runCallOptions(options)! } : {}) });
    const skipped = handle.record.rows.skipped;
    process.stderr.write(`batch ${handle.id}: ${handle.record.rows.total} rows${skipped ? `, ${skipped} bad rows skipped` : ''}, cap $${handle.record.maxCostUsd}\n`);
    if (options.detach) {
      if (options.json) printJson(handle.record);
      else print(handle.id);
      return;
    }
  }

  const bar = new BatchBar(process.stderr);
  bar.draw(handle.record);
  let final: Batch;
  try {
    for await (const event of handle.progress({ signal })) if (event.type !== 'batch.row') bar.draw(event.batch);
    final = handle.record;
  } catch (err) {
    bar.stop();
    if (isInterrupt(err)) {
      process.stderr.write(
        `\nStopped following batch ${handle.id}; it goes on. Follow it again: svc batch --attach ${handle.id} (or GET ${url}/v1/batches/${handle.id}/events); cancel it: POST ${url}/v1/batches/${handle.id}/cancel\n`,
      );
      throw new Interrupted(handle.id);
    }
    throw err;
  }
  bar.stop();
  const link = await handle.resultsLink('jsonl', { signal });
  if (options.json) printJson({ ...final, resultsUrl: link.url });
  else {
    const { rows } = final;
    print(`Batch ${final.id} ${final.status}: ${rows.completed} completed, ${rows.failed} failed, ${rows.cancelled} cancelled${rows.skipped ? `, ${rows.skipped} skipped` : ''}; spent $${final.spentUsd} of $${final.maxCostUsd}.`);
    if (final.stopReason) print(`Stopped early: ${final.stopReason.message}`);
    print(`Results (JSON Lines): ${link.url}`);
    print(`As CSV: GET ${url}/v1/batches/${final.id}/results?format=csv gives its link`);
  }
  if (final.rows.failed > 0 || final.rows.cancelled > 0) {
    throw new CliError(`${final.rows.failed + final.rows.cancelled} rows of batch ${final.id} did not complete; retry them: POST ${url}/v1/batches/${final.id}/retry`, 'rows_failed', EXIT.runFailed);
  }
}

/** The batch's rows from a local file: a JSON array in the body, JSON Lines or CSV uploaded first. */
async function rowsOf(file: string, client: Parameters<typeof uploadFile>[0], signal: AbortSignal): Promise<Pick<BatchInput, 'rows' | 'rowsFile' | 'rowsFormat'>> {
  let text: string | undefined;
  const extension = path.extname(file).toLowerCase();
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) throw usageError(`no file named ${file} (--rows)`, 'not_found');
  if (extension === '.json') {
    text = fs.readFileSync(file, 'utf8');
    let rows: unknown;
    try {
      rows = JSON.parse(text);
    } catch (err) {
      throw usageError(`${file} is not JSON (${(err as Error).message}); a .json rows file is one array of row objects (or use .jsonl: one object per line)`);
    }
    if (!Array.isArray(rows)) throw usageError(`${file} must hold a JSON array of row objects`);
    return { rows: rows as BatchInput['rows'] };
  }
  if (extension !== '.jsonl' && extension !== '.ndjson' && extension !== '.csv') {
    throw usageError(`--rows takes a .jsonl, .csv or .json file; ${file} is none of these`);
  }
  const artifact = await uploadFile(client, file, { signal });
  process.stderr.write(`uploaded ${file} (${fs.statSync(file).size} bytes)\n`);
  return { rowsFile: (artifact as { ref: string }).ref, rowsFormat: extension === '.csv' ? 'csv' : 'jsonl' };
}

/** The batch's progress on stderr: a bar redrawn in place on a terminal, a line every few seconds elsewhere. */
class BatchBar {
  #last = 0;
  #pending: Batch | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly out: NodeJS.WriteStream) {}

  draw(batch: Batch): void {
    const every = this.out.isTTY ? REDRAW_MS : PLAIN_EVERY_MS;
    const ended = batch.status === 'completed' || batch.status === 'cancelled';
    if (!ended && Date.now() - this.#last < every) {
      this.#pending = batch;
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        if (this.#pending) this.draw(this.#pending);
      }, every).unref();
      return;
    }
    this.#pending = undefined;
    this.#last = Date.now();
    const line = lineOf(batch, this.out.isTTY ? Math.max(10, Math.min(40, (this.out.columns ?? 80) - 70)) : 0);
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${line}`);
    else this.out.write(`${line}\n`);
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.out.isTTY) this.out.write('\n');
  }
}

/** `[#######.......] 523/10000 rows · 3 failed · $0.52 of $10 · 41.2 rows/s · 3m50s left`. */
export function lineOf(batch: Batch, width: number): string {
  const { rows } = batch;
  const ended = rows.completed + rows.failed + rows.cancelled;
  const share = rows.total === 0 ? 1 : ended / rows.total;
  const bar = width > 0 ? `[${'#'.repeat(Math.round(share * width)).padEnd(width, '.')}] ` : '';
  const parts = [`${bar}${ended}/${rows.total} rows`];
  if (rows.running) parts.push(`${rows.running} running`);
  if (rows.failed) parts.push(`${rows.failed} failed`);
  if (rows.cancelled) parts.push(`${rows.cancelled} cancelled`);
  parts.push(`$${batch.spentUsd} of $${batch.maxCostUsd}`);
  if (batch.rowsPerSecond !== null) parts.push(`${batch.rowsPerSecond} rows/s`);
  if (batch.etaSeconds !== null) parts.push(`${formatSeconds(batch.etaSeconds)} left`);
  if (batch.status !== 'running') parts.push(batch.status);
  return parts.join(' · ');
}

function formatSeconds(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`;
}
