import type { CallOptionValues, OutputCacheMode } from '../../../contract';
import { getNode } from '../../../sdk/src/index';
import { connectSignedIn, type ConnectionOptions } from '../connection';
import { parseAssignments } from '../input-values';
import { interruptSignal } from '../interrupt';
import { outputsText, print, printJson } from '../output';
import { nodeInputs } from '../typed-inputs';
import { uploaderOf } from '../uploader';

export interface RunOptions extends ConnectionOptions {
  input?: string[];
  maxCost?: number;
  /** The run's own deadline, seconds (`--max-duration`, sent as Max-Duration-Seconds). */
  maxDuration?: number;
  /** Where to POST the run's events (`--webhook`), and which (`--webhook-events`). */
  webhook?: string;
  webhookEvents?: string[];
  /** The run's use of the output cache (`--output-cache`, sent as Output-Cache). */
  outputCache?: OutputCacheMode;
}

/** The call options a run command's flags ask for (docs/cli.md). */
export function runCallOptions(options: RunOptions): CallOptionValues | undefined {
  const values: CallOptionValues = {
    ...(options.maxDuration === undefined ? {} : { maxDurationSeconds: options.maxDuration }),
    ...(options.webhook === undefined ? {} : { webhookUrl: options.webhook }),
    ...(options.webhookEvents === undefined ? {} : { webhookEvents: options.webhookEvents }),
    ...(options.outputCache === undefined ? {} : { outputCache: options.outputCache }),
  };
  return Object.keys(values).length === 0 ? undefined : values;
}

/**
 * `svc node <node_id>`: `runs.node`, one node without a graph. The NodeSpec types each `-i`
 * (value ports bare scalars, data ports artifacts), so a mistake is caught before anything runs.
 */
export async function node(nodeId: string, options: RunOptions): Promise<void> {
  const { client } = connectSignedIn(options);
  const signal = interruptSignal();
  const spec = await getNode(client, nodeId, { signal });
  const inputs = await nodeInputs(parseAssignments(options.input ?? []), spec, uploaderOf(client, signal));
  if (process.stderr.isTTY) process.stderr.write(`running ${spec.id}…\n`);
  const answer = await client.ops['runs.node'](
    { node: spec.id, inputs, ...(options.maxCost === undefined ? {} : { maxCostUsd: options.maxCost }) },
    { signal, options: runCallOptions(options) },
  );
  if (options.json) printJson(answer);
  else print(outputsText(answer.outputs));
}
