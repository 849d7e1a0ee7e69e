import type { Artifact, ArtifactInput, Connector } from '../contract';
import { AppError } from '../platform/app-error';
import { artifactKindOf, coerceToConnector, isDataConnector } from './connector-values';
import { parseReference, type Reference } from './references';
import { startValue } from './start-values';
import type { CheckedNode, CheckedWorkflow } from './validate-workflow';
import { literalConnector } from './workflow-interface';

/**
 * Values flowing through a running workflow: what a step's inputs are, given the run's inputs
 * and its finished predecessors' outputs, and what the run's outputs are once every step is
 * done. Pure functions; the runner loads the data and calls these.
 */

/** What a run knows while it runs: the checked workflow, its resolved inputs, finished steps' outputs. */
export interface RunValues {
  workflow: CheckedWorkflow;
  /** The run's inputs after `checkRunInputs` (defaults filled, kinds set). */
  inputs: Record<string, ArtifactInput>;
  /** Outputs of completed steps, by node id and port. */
  stepOutputs: ReadonlyMap<string, Record<string, unknown>>;
}

/** A value a step needs is not there (code `missing_value`): the caller asked too early, or the data is corrupt. */
function missingValue(ref: Reference): AppError {
  return new AppError({ code: 'missing_value', message: `the value of \${${ref.nodeId}.${ref.port}} is not available`, details: { nodeId: ref.nodeId, port: ref.port } });
}

/**
 * A completed step did not produce the port a reference reads and the port has no
 * `defaultValue` (code `missing_output`): a deterministic failure, never retried.
 */
function missingOutput(ref: Reference): AppError {
  return new AppError({
    code: 'missing_output',
    message: `node "${ref.nodeId}" completed without its output "${ref.port}", and the port has no default value; \${${ref.nodeId}.${ref.port}} cannot be read`,
    details: { nodeId: ref.nodeId, port: ref.port },
  });
}

/** An optional output its node did not produce, with no default: an optional input reading it is omitted, a run output absent. */
const ABSENT: unique symbol = Symbol('absent output');

/** The value a reference reads: run input, const literal, or a completed step's output. */
function referencedValue(values: RunValues, ref: Reference): unknown {
  const source = values.workflow.nodes.get(ref.nodeId);
  if (!source) throw missingValue(ref);
  if (source.role === 'input' || source.role === 'const') {
    const value = startValue(source, values.inputs);
    if (value === undefined && source.role === 'input') throw missingValue(ref);
    return value;
  }
  const outputs = values.stepOutputs.get(ref.nodeId);
  if (!outputs) throw missingValue(ref);
  if (Object.hasOwn(outputs, ref.port)) return outputs[ref.port];
  // The step completed without this port: its default stands in; an optional port without one is absent.
  const connector = source.outputs?.[ref.port];
  if (connector?.defaultValue !== undefined) return connector.defaultValue;
  if (connector?.isOptional) return ABSENT;
  throw missingOutput(ref);
}

/**
 * The inputs of a platform node, ready for `execute`: literals as written, references replaced by
 * the values they read (coerced to the port's connector). Omitted ports stay omitted (the node
 * fills defaults).
 */
export function resolveStepInputs(node: CheckedNode, values: RunValues): Record<string, unknown> {
  const resolved: Record<string, unknown> = {};
  for (const key in node.inputs) {
    const literal = node.inputs[key];
    const ref = parseReference(literal);
    if (!ref) {
      resolved[key] = literal;
      continue;
    }
    const value = referencedValue(values, ref);
    const connector = node.spec?.inputs[key]?.connector;
    if (value === ABSENT) {
      // An optional input is omitted (the node fills its own default); a required one cannot run.
      if (connector?.isOptional) continue;
      throw missingOutput(ref);
    }
    resolved[key] = connector ? coerceToConnector(value, connector) : value;
  }
  return resolved;
}

/** A value as an Artifact of the given connector's kind (STRUCTURED for unknown). */
function asArtifact(value: unknown, connector: Connector['id'] | null): Artifact {
  if (connector && isDataConnector(connector) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const artifact = value as Artifact;
    return { ...artifact, kind: artifactKindOf(connector) ?? artifact.kind };
  }
  const kind = (connector && artifactKindOf(connector)) || 'structured';
  return { kind, value };
}

/** Ids of the steps whose outputs the run's output nodes read. */
export function outputSources(workflow: CheckedWorkflow): string[] {
  const ids = new Set<string>();
  for (const node of workflow.list) {
    if (node.role !== 'output') continue;
    for (const { ref } of node.references) {
      const source = workflow.nodes.get(ref.nodeId);
      if (source && (source.role === 'platform' || source.role === 'mounted')) ids.add(ref.nodeId);
    }
  }
  return [...ids];
}

/**
 * The run's outputs: one Artifact per output node, named by its id. A list of files becomes a
 * `structured` artifact holding the list of ref artifacts. An output node reading an optional
 * port its node did not produce (and without a default) is absent from the map.
 */
export function collectRunOutputs(values: RunValues): Record<string, Artifact> {
  const outputs: Record<string, Artifact> = {};
  for (const node of values.workflow.list) {
    if (node.role !== 'output') continue;
    const literal = node.inputs.value;
    const ref = parseReference(literal);
    if (!ref) {
      outputs[node.id] = asArtifact(literal, literalConnector(literal));
      continue;
    }
    const value = referencedValue(values, ref);
    if (value === ABSENT) continue;
    const source = values.workflow.nodes.get(ref.nodeId)!;
    const connector = source.outputs?.[ref.port] ?? null;
    outputs[node.id] = connector?.isArray ? { kind: 'structured', value } : asArtifact(value, connector?.id ?? null);
  }
  return outputs;
}
