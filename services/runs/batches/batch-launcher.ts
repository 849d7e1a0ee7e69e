import { BATCH_DEFAULT_CONCURRENCY, BATCH_LISTED_PROBLEMS, BATCH_MAX_ROWS, type OutputCacheMode, type Workflow } from '../../contract';
import { checkBatchRows, effectiveCapMicros, microsToUsd, parseRowsFile, usdToMicrosFloor, type RowProblem, type RowsFileFormat } from '../../engine';
import { AppError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import type { BatchCreationStore } from '../ports';
import type { RunLauncher } from '../start/run-launcher';
import { localFirstStep, type FirstStepNodes } from '../start/local-first-step';

/** What `batches.create` asks (the contract's input). */
export interface BatchRequest {
  workflow?: Workflow;
  workflowRef?: string;
  rows?: Record<string, unknown>[];
  rowsFile?: string;
  rowsFormat?: RowsFileFormat;
  skipBadRows?: boolean;
  maxCostUsd?: number;
  rowMaxCostUsd?: number;
  concurrency?: number;
}

/** Who creates a batch, with the call's options. */
export interface BatchCaller {
  orgId: string;
  userId: string;
  tokenId: string | null;
  log: Logger;
  /** The batch is cancelled if still running this long after it is stored. */
  maxDurationSeconds?: number;
  outputCache?: OutputCacheMode;
  idempotency?: { key: string; requestHash: string };
  /** Where the batch's end is POSTed. */
  webhookUrl?: string;
}

export interface BatchLauncherDeps {
  runs: Pick<RunLauncher, 'prepareBatch'>;
  batches: BatchCreationStore;
  /** The process's nodes: a lone local first step is reserved with each row's run (`localFirstStep`). */
  nodes: FirstStepNodes;
  /** The text of a rows file the organization uploaded (its `POST /v1/uploads` ref); a 400 for anything else. */
  readRowsFile(ref: string, orgId: string): Promise<string>;
  /** What the organization may still spend: its balance less what its unfinished runs hold. */
  availableMicros(orgId: string): Promise<number>;
  /** Told of a batch stored, so a feeder in this process may start it at once. */
  onStored?: (batchId: string) => void;
  /** Most rows a batch takes (BATCH_MAX_ROWS unless a test lowers it). */
  maxRows?: number;
}

/**
 * Takes a batch in (docs/batches.md): its workflow resolved and checked once, every row checked
 * as `runs.create` checks a run's inputs, then the batch and its rows stored at once. Nothing runs
 * here: the workers' feeders start rows (`BatchFeeder`). Every refusal is an `AppError` thrown
 * before anything is stored.
 */
export class BatchLauncher {
  constructor(private readonly deps: BatchLauncherDeps) {}

  async create(request: BatchRequest, caller: BatchCaller): Promise<{ id: string; existing: boolean }> {
    const maxRows = this.deps.maxRows ?? BATCH_MAX_ROWS;
    if ((request.rows === undefined) === (request.rowsFile === undefined)) {
      throw new AppError({ code: 'bad_request', message: 'give exactly one of "rows" (an array of rows in the body) or "rowsFile" (the ref of a JSON Lines or CSV file uploaded with POST /v1/uploads)' });
    }
    if (request.rowsFormat !== undefined && request.rowsFile === undefined) {
      throw new AppError({ code: 'bad_request', message: '"rowsFormat" describes a rows file: give it with "rowsFile", or leave it out' });
    }
    const workflow = await this.deps.runs.prepareBatch(request, caller.orgId);
    const rows = request.rows ?? (await this.rowsOfFile(request.rowsFile!, request.rowsFormat, caller.orgId, maxRows));
    if (rows.length > maxRows) throw new AppError({ code: 'bad_request', message: `a batch has at most ${maxRows.toLocaleString('en-US')} rows; this one has ${rows.length.toLocaleString('en-US')}` });
    const { good, problems } = checkBatchRows(rows, workflow.prepared.iface, workflow.prepared.workflow);
    if (problems.length > 0 && request.skipBadRows !== true) throw badRows(problems, rows.length);
    if (good.length === 0) throw badRows(problems, rows.length, 'no row of this batch is valid');

    const rowCapMicros = effectiveCapMicros(request.rowMaxCostUsd);
    const capMicros = request.maxCostUsd === undefined ? rowCapMicros * good.length : usdToMicrosFloor(request.maxCostUsd);
    if (capMicros < 1) throw new AppError({ code: 'validation_failed', message: 'maxCostUsd is below one micro-USD (0.000001), the smallest cap' });
    const available = await this.deps.availableMicros(caller.orgId);
    if (available <= 0) {
      throw new AppError({
        code: 'insufficient_credit',
        message: `your organization's available balance is $${microsToUsd(Math.max(0, available))} (its balance less what its unfinished runs hold); add credit, or wait for those runs to finish`,
        details: { balanceUsd: microsToUsd(Math.max(0, available)) },
      });
    }
    const { plan } = workflow.prepared;
    // Each row's worst case of a lone local first step: the feed reserves it with the row's run.
    const first = localFirstStep(workflow.prepared, this.deps.nodes);
    const created = await this.deps.batches.create({
      orgId: caller.orgId,
      userId: caller.userId,
      tokenId: caller.tokenId,
      workflowRef: request.workflowRef ?? null,
      workflowId: workflow.resolved?.workflowId ?? null,
      workflowVersionId: workflow.resolved?.versionId ?? null,
      definition: workflow.graph,
      template: {
        steps: plan.order.map((nodeId) => ({ node_id: nodeId, pending_deps: plan.steps.get(nodeId)!.dependsOn.length, token: null, reserved_micros: 0 })),
        node_entries: workflow.pinned.entries,
        ...(first ? { first_step: plan.order.indexOf(first.nodeId) } : {}),
      },
      rows: first ? good.map((row) => ({ ...row, firstEstimateMicros: first.estimateFor(row.inputs) ?? null })) : good,
      skippedRows: problems.slice(0, BATCH_LISTED_PROBLEMS),
      skippedCount: new Set(problems.map((problem) => problem.row)).size,
      capMicros,
      rowCapMicros,
      concurrency: request.concurrency ?? BATCH_DEFAULT_CONCURRENCY,
      outputCache: caller.outputCache ?? null,
      maxDurationSeconds: caller.maxDurationSeconds ?? null,
      webhookUrl: caller.webhookUrl ?? null,
      idempotency: caller.idempotency ?? null,
    });
    if (created.existing) {
      if (!created.sameRequest) {
        throw new AppError({ code: 'idempotency_key_reused', message: 'this Idempotency-Key was used in the last 24 hours with a different batch request; send that request again, or use a new key' });
      }
      return { id: created.id, existing: true };
    }
    caller.log.info({ batchId: created.id, rows: good.length, skipped: problems.length }, 'batch stored');
    this.deps.onStored?.(created.id);
    return { id: created.id, existing: false };
  }

  private async rowsOfFile(ref: string, format: RowsFileFormat | undefined, orgId: string, maxRows: number): Promise<unknown[]> {
    const text = await this.deps.readRowsFile(ref, orgId);
    const parsed = parseRowsFile(text, maxRows, format);
    if (!parsed.ok) {
      throw new AppError({ code: 'bad_request', message: `rowsFile: ${parsed.message}`, ...(parsed.problem ? { details: { rows: [parsed.problem] } } : {}) });
    }
    return parsed.rows;
  }
}

/** A 400 naming the bad rows by number and field: the first ones in the message, the first hundred in `details.rows`. */
function badRows(problems: readonly RowProblem[], total: number, lead?: string): AppError {
  const rows = new Set(problems.map((problem) => problem.row)).size;
  const shown = problems
    .slice(0, 5)
    .map((problem) => `row ${problem.row}${problem.field === null ? '' : ` (${problem.field})`}: ${problem.message}`)
    .join('; ');
  const more = problems.length > 5 ? `; and ${problems.length - 5} more problems (details.rows lists the first ${BATCH_LISTED_PROBLEMS})` : '';
  const advice = lead ? '' : '; fix them, or send skipBadRows: true to run the other rows and list these';
  return new AppError({
    code: 'validation_failed',
    message: `${lead ?? `${rows} of ${total} rows are invalid`}: ${shown}${more}${advice}`,
    details: { rows: problems.slice(0, BATCH_LISTED_PROBLEMS), invalidRows: rows },
  });
}
