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
  /** Where a node that submits a job to a provider's queue and waits on it keeps the job, so that another worker can resume it (absent outside a step). */
  providerJob?: ProviderJobRecord;
}

/**
 * A provider job (a fal queue request, a Replicate prediction) as its step's attempts see it: a
 * node submits once, records the job before it waits, and an attempt that took the step over
 * from a dead worker finds it in `resumed` and waits on it instead of submitting (and paying)
 * again (docs/runs.md, Provider jobs).
 */
export interface ProviderJobRecord {
  /** The job a lost attempt of this step submitted and recorded (as `submitted` was given it); undefined: submit. */
  readonly resumed: unknown;
  /** Records the job just submitted, durably, before the node waits on it. */
  submitted(job: unknown): Promise<void>;
  /**
   * Where `provider` should call when the job ends (fal's `fal_webhook`, Replicate's `webhook`);
   * undefined when the deployment takes no webhooks (`PROVIDER_WEBHOOK_BASE_URL` unset).
   */
  webhookUrl(provider: string): string | undefined;
  /**
   * Waits until the job's next poll: `pollMs` on the worker's shared poll timer (longer, as a
   * fallback, when the provider was given a webhook), ended early by the provider's webhook;
   * rejects when `signal` aborts.
   */
  nextPoll(pollMs: number, signal: AbortSignal): Promise<void>;
}

/**
 * Whether a node's outputs may be answered from the output cache (docs/runs.md, Output caching):
 * - `deterministic`: its outputs are a pure function of its inputs (no clock, randomness, network
 *   or provider): cached unless the run says `Output-Cache: off`;
 * - `whenAsked`: the same outputs are likely but not promised (an LLM at temperature 0), and they
 *   cost money: cached only when the run says `Output-Cache: llm` and `eligible(inputs)` (after
 *   defaults) holds.
 * Nodes without one are never cached.
 */
export type NodeCachePolicy = { kind: 'deterministic' } | { kind: 'whenAsked'; eligible(inputs: NodeInputs): boolean };

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
  /** Whether its outputs may come from the output cache; absent: never. */
  readonly cache?: NodeCachePolicy;
  /**
   * What defines the node beyond its spec, as a hash (a catalog file entry's price formula and
   * request mapping, say): part of the output cache's key, so a changed definition never answers
   * from an older one's outputs. Absent for nodes written in code (their spec's hash is enough).
   */
  readonly revision?: string;
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
    ...(node.cache ? { cache: cachePolicyWithDefaults(spec, node.cache) } : {}),
    ...(node.revision !== undefined ? { revision: node.revision } : {}),
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

/** The policy as callers use it: `eligible` sees the inputs with their defaults, as `execute` does. */
function cachePolicyWithDefaults(spec: NodeSpec, policy: NodeCachePolicy): NodeCachePolicy {
  if (policy.kind === 'deterministic') return policy;
  return { kind: 'whenAsked', eligible: (inputs) => policy.eligible(applyDefaults(spec, inputs)) };
}
