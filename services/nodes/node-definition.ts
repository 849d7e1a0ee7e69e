import type { NodeSpec } from '../contract';
import type { Micros } from '../engine';
import { AppError } from '../platform/app-error';
import { raceAbort } from './abortable';
import type { ArtifactStore } from './artifact-store';
import { applyDefaults, checkNodeInputs, checkNodeOutputs, type NodeInputs, type NodeOutputs } from './node-inputs';

/** What a running node may use besides its inputs. */
export interface NodeContext {
  /** Aborted when the run fails or is cancelled; `execute` then rejects promptly with its reason. */
  signal: AbortSignal;
  /** Reports progress within the node (a `step.progress` event); short, caller-readable text. */
  progress(message: string): void;
  /** Reads input media and stores output media. */
  artifacts: ArtifactStore;
}

/**
 * A platform node: its published interface, its pricing pair and its behaviour.
 *
 * Inputs are resolved before any of the three functions is called: references replaced by
 * values, value ports holding plain JSON, data ports holding Artifacts. Omitted inputs with a
 * `defaultValue` may be left out; every function sees them filled (see `applyDefaults`).
 */
export interface NodeDefinition {
  readonly spec: NodeSpec;
  /** The worst-case cost of running on these inputs, reserved against the run's cap before `execute`. */
  estimate(inputs: NodeInputs): Micros;
  /** The actual cost of a finished execution; never above `estimate(inputs)`. */
  price(inputs: NodeInputs, outputs: NodeOutputs): Micros;
  /**
   * Runs the node. Rejects with `validation_failed` (an AppError) for inputs it cannot use, and
   * with `ctx.signal.reason` once the signal aborts. Outputs map every output port to its value.
   */
  execute(inputs: NodeInputs, ctx: NodeContext): Promise<NodeOutputs>;
  /**
   * Bounded local work that calls no provider: the step worker may run it inline, chained with
   * its neighbours in one reservation (docs/runs.md, batches), as it runs the platform's local
   * nodes. For nodes a deployment adds; default false.
   */
  readonly inline?: boolean;
}

function checkedMicros(spec: NodeSpec, what: string, amount: Micros): Micros {
  if (!Number.isSafeInteger(amount) || amount < 0) {
    throw new AppError({ code: 'internal', message: `node "${spec.id}" computed an invalid ${what}: ${amount}` });
  }
  return amount;
}

/**
 * Wraps a node implementation so that, whatever it does: defaults are applied and inputs are
 * checked against the spec before it runs; an aborted signal rejects at once and an abort while
 * it runs rejects promptly; its outputs match its output ports; its prices are whole,
 * non-negative micro-USD and `price` never exceeds `estimate` (a run's cap relies on that).
 */
export function defineNode(node: NodeDefinition): NodeDefinition {
  const { spec } = node;
  const estimate = (inputs: NodeInputs): Micros => checkedMicros(spec, 'estimate', node.estimate(applyDefaults(spec, inputs)));
  return {
    spec,
    ...(node.inline ? { inline: true } : {}),
    estimate,
    price(inputs, outputs) {
      const actual = checkedMicros(spec, 'price', node.price(applyDefaults(spec, inputs), outputs));
      return Math.min(actual, estimate(inputs));
    },
    async execute(inputs, ctx) {
      ctx.signal.throwIfAborted();
      const resolved = applyDefaults(spec, inputs);
      checkNodeInputs(spec, resolved);
      const outputs = await raceAbort(Promise.resolve().then(() => node.execute(resolved, ctx)), ctx.signal);
      checkNodeOutputs(spec, outputs);
      return outputs;
    },
  };
}
