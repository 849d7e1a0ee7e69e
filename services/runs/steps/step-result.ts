import { collectRunOutputs } from '../../engine';
import type { AppError } from '../../platform/app-error';
import type { NodeDefinition } from '../../nodes';
import type { RunContext } from '../run-context-cache';
import type { FinishedStep } from './step-batch';
import { failedAfterCall } from './step-errors';
import type { ReservedStep } from './step-start';

/** A call that returned: its node, inputs, worst case and outputs. */
export interface ReturnedCall {
  nodeId: string;
  definition: NodeDefinition;
  inputs: Record<string, unknown>;
  estimate: number;
  outputs: Record<string, unknown>;
}

/** The run's outputs if the step outputs in hand are all they read; else undefined. */
function outputsFrom(context: RunContext, known: ReadonlyMap<string, Record<string, unknown>>): Record<string, unknown> | undefined {
  if (!context.outputSources.every((id) => known.has(id))) return undefined;
  return collectRunOutputs({ workflow: context.prepared.workflow, inputs: context.inputs, stepOutputs: known });
}

/**
 * What a returned call's result costs and, when they read only this step, the run's outputs
 * (left undefined when an output points at a foreign file: the run then completes the slow way,
 * fetching it first). Anything that goes wrong here happens after the call was made: the step
 * fails at once (no retry: the same result would fail the same way), charged the price of the
 * result, or its estimate when the result cannot even be priced.
 */
export function checkResult(
  context: RunContext,
  call: ReturnedCall,
  hasForeignRefs: (outputs: Record<string, unknown>) => boolean,
): { ok: true; costMicros: number; runOutputs: Record<string, unknown> | undefined } | { ok: false; err: AppError } {
  let costMicros = call.estimate;
  try {
    costMicros = call.definition.price(call.inputs, call.outputs);
    const inHand = outputsFrom(context, new Map([[call.nodeId, call.outputs]]));
    return { ok: true, costMicros, runOutputs: inHand && !hasForeignRefs(inHand) ? inHand : undefined };
  } catch (err) {
    return { ok: false, err: failedAfterCall(err, costMicros) };
  }
}

/**
 * What an attempt is charged when it is lost or stopped with its cost unknown: the estimate of a
 * node that calls out of the process (a provider may have carried the call out and billed it),
 * nothing for a local node (its work is ours and is simply done again).
 */
export function lostChargeOf(definition: NodeDefinition, estimate: number, isLocal: (uses: string) => boolean): number {
  return isLocal(definition.spec.id) ? 0 : estimate;
}

/**
 * The result of a step answered from the output cache: it costs nothing (no node was called), and
 * its run's outputs are in hand as for a returned call.
 */
export function cachedResult(
  context: RunContext,
  nodeId: string,
  outputs: Record<string, unknown>,
  hasForeignRefs: (outputs: Record<string, unknown>) => boolean,
): { costMicros: 0; runOutputs: Record<string, unknown> | undefined } {
  const inHand = outputsFrom(context, new Map([[nodeId, outputs]]));
  return { costMicros: 0, runOutputs: inHand && !hasForeignRefs(inHand) ? inHand : undefined };
}

/** A step whose attempt returned `output`, priced `costMicros`, before its commit. */
export function finishedStep(step: ReservedStep, output: Record<string, unknown>, costMicros: number, ms: number): FinishedStep {
  return { nodeId: step.nodeId, specId: step.definition.spec.id, costMicros, estimateMicros: step.estimate, output, ms, dependents: step.dependents };
}
