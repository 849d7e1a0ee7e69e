import type { RouteInput } from '../../../contract';
import { getWorkflow, RunFailedError, startRun, type ArtifactInput, type Outputs, type RunInput } from '../../../sdk/src/index';
import { RunFailure } from '../cli-error';
import { connectSignedIn } from '../connection';
import { parseAssignments } from '../input-values';
import { Interrupted, interruptSignal, isInterrupt } from '../interrupt';
import { shouldCancel } from '../interrupt-choice';
import { estimateText, outputsText, print, printJson } from '../output';
import { createProgress } from '../progress';
import { workflowInputs } from '../typed-inputs';
import { uploaderOf } from '../uploader';
import { declaredInputs, resolveSource } from '../workflow-source';
import { runCallOptions, type RunOptions } from './node';
import type { InterruptChoice } from '../interrupt-choice';

export interface RunCommandOptions extends RunOptions {
  /** What Ctrl-C does with a started run (default ask). */
  onInterrupt?: InterruptChoice;
  /** Print what the run would cost (`runs.estimate`) and run nothing. */
  estimate?: boolean;
}

/** How long a cancel at Ctrl-C may take before the CLI gives up on it (the run then goes on, or ends at its deadline). */
const CANCEL_TIMEOUT_MS = 15_000;

/**
 * `svc run <file-or-ref>`: reads the workflow's input nodes (from the file, or `workflows.get`
 * for a ref) to type the `-i` values, starts the run, shows its events on stderr and prints the
 * outputs on stdout.
 */
export async function run(target: string, options: RunCommandOptions): Promise<void> {
  const { client, url } = connectSignedIn(options);
  const signal = interruptSignal();
  const source = resolveSource(target);
  const assignments = parseAssignments(options.input ?? []);
  const upload = uploaderOf(client, signal);

  let request: RunInput;
  let base: Record<string, ArtifactInput> = {};
  if (source.type === 'file') {
    base = source.inputs;
    const inputs = await workflowInputs(assignments, declaredInputs(source.workflow), upload);
    request = { workflow: source.workflow, inputs: { ...base, ...inputs } };
  } else {
    const published = await getWorkflow(client, source.ref, { signal });
    const inputs = await workflowInputs(assignments, declaredInputs(published.workflow), upload);
    request = { workflowRef: source.ref, inputs };
  }
  const cap = options.maxCost ?? (source.type === 'file' ? source.maxCostUsd : undefined);
  if (cap !== undefined) request.maxCostUsd = cap;
  if (request.inputs && Object.keys(request.inputs).length === 0) delete request.inputs;

  if (options.estimate) {
    const estimate = await client.routes['runs.estimate'](request as RouteInput<'runs.estimate'>, { signal });
    if (options.json) printJson(estimate);
    else print(estimateText(estimate));
    return;
  }

  const handle = startRun(client, request, { signal, options: runCallOptions(options) });
  const progress = createProgress(process.stderr, cap);
  let runId: string | undefined;
  let outputs: Outputs;
  try {
    for await (const event of handle.events()) {
      if (event.type === 'run.started') runId = event.runId;
      progress.event(event);
    }
    outputs = await handle.result();
  } catch (err) {
    progress.stop();
    if (isInterrupt(err)) {
      if (runId !== undefined && (await shouldCancel(options.onInterrupt ?? 'ask', runId))) {
        // The interrupt aborted the handle's signal: the cancel goes with a signal of its own.
        const record = await handle.cancel({ signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) });
        const outcome = record.status === 'cancelled' ? `Cancelled run ${runId}` : `Run ${runId} had already ended (${record.status}) before the cancel reached it`;
        process.stderr.write(`\n${outcome}; it cost $${record.costUsd}.\n`);
        throw new Interrupted(runId, record.status === 'cancelled');
      }
      const where = runId === undefined ? 'before the run had started, so its id is unknown; list recent runs with GET /v1/runs' : `from run ${runId}; it goes on. Its result: GET ${url}/v1/runs/${runId} (or follow it again: GET ${url}/v1/runs/${runId}/events; cancel it: POST ${url}/v1/runs/${runId}/cancel)`;
      process.stderr.write(`\nStopped following ${where}\n`);
      throw new Interrupted(runId);
    }
    if (err instanceof RunFailedError) throw new RunFailure(err.runId, err.code, err.message, progress.totalUsd);
    throw err;
  }
  progress.stop();
  if (options.json) printJson({ runId: runId ?? (await handle.runId), outputs, costUsd: progress.totalUsd });
  else print(outputsText(outputs));
}
