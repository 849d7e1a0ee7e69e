import type { NodeSpec } from '../contract';
import { checkLiteral, isDataConnector } from '../engine';
import { AppError } from '../platform/app-error';

/** A node's inputs by port name: plain JSON for value ports, Artifact objects for data ports. */
export type NodeInputs = Record<string, unknown>;

/** A node's outputs by port name: plain JSON for value ports, `ref` Artifacts for data ports. */
export type NodeOutputs = Record<string, unknown>;

/** One problem with one port, in the `issues` shape of `validation_failed` error bodies. */
export interface PortIssue {
  path: string;
  message: string;
}

/**
 * A caller-readable `validation_failed` error about one input of a node. Nodes raise it for
 * inputs that fit their connector but not the operation (a missing JSON path, a crop outside
 * the image, a division by zero).
 */
export function invalidInput(node: string, port: string, message: string): AppError {
  return new AppError({
    code: 'validation_failed',
    message: `node "${node}": input "${port}" ${message}`,
    details: { issues: [{ path: `inputs.${port}`, message: `input "${port}" ${message}` }] },
  });
}

/**
 * Fills every omitted input (absent or `undefined`) that has a `defaultValue` with a copy of it.
 * Returns a new object; present values, including `null`, are kept as given.
 */
export function applyDefaults(spec: NodeSpec, inputs: NodeInputs): NodeInputs {
  const filled: NodeInputs = { ...inputs };
  for (const [name, port] of Object.entries(spec.inputs)) {
    const fallback = port.connector.defaultValue;
    // A copy, so a node that mutates its input can never change the published spec.
    if (filled[name] === undefined && fallback !== undefined) filled[name] = structuredClone(fallback);
  }
  return filled;
}

/**
 * Checks inputs (after `applyDefaults`) against a node's ports: no unknown ports, every
 * required port present, every value of its connector's type, options and bounds. Throws
 * `validation_failed` listing every problem.
 */
export function checkNodeInputs(spec: NodeSpec, inputs: NodeInputs): void {
  const issues: PortIssue[] = [];
  for (const name of Object.keys(inputs)) {
    if (!Object.hasOwn(spec.inputs, name) && inputs[name] !== undefined) {
      const known = Object.keys(spec.inputs).join(', ') || 'none';
      issues.push({ path: `inputs.${name}`, message: `"${spec.id}" has no input "${name}"; its inputs are: ${known}` });
    }
  }
  for (const [name, port] of Object.entries(spec.inputs)) {
    const value = inputs[name];
    if (value === undefined) {
      if (!port.connector.isOptional) issues.push({ path: `inputs.${name}`, message: `input "${name}" (${port.connector.id}) is required` });
      continue;
    }
    const problem = checkLiteral(port.connector, value);
    if (problem) issues.push({ path: `inputs.${name}`, message: `input "${name}" ${problem}` });
  }
  if (issues.length > 0) {
    throw new AppError({
      code: 'validation_failed',
      message: `node "${spec.id}": ${issues.map((i) => i.message).join('; ')}`,
      details: { issues },
    });
  }
}

function isRef(value: unknown): boolean {
  return typeof (value as { ref?: unknown }).ref === 'string';
}

/**
 * Checks what a node returned against its output ports. A mismatch is a bug in the node, not
 * the caller's fault, so it is an `internal` error (the message names node and port for the log).
 */
export function checkNodeOutputs(spec: NodeSpec, outputs: NodeOutputs): void {
  const problems: string[] = [];
  for (const name of Object.keys(outputs)) {
    if (!Object.hasOwn(spec.outputs, name)) problems.push(`unexpected output "${name}"`);
  }
  for (const [name, port] of Object.entries(spec.outputs)) {
    const value = outputs[name];
    if (value === undefined) {
      if (!port.connector.isOptional) problems.push(`output "${name}" is missing`);
      continue;
    }
    const problem = checkLiteral(port.connector, value);
    if (problem) problems.push(`output "${name}" ${problem}`);
    // Binary outputs always leave a node as references into our storage (SPEC: Artifact).
    else if (isDataConnector(port.connector.id) && !(port.connector.isArray ? (value as unknown[]) : [value]).every(isRef)) {
      problems.push(`output "${name}" must be a ref artifact`);
    }
  }
  if (problems.length > 0) {
    throw new AppError({ code: 'internal', message: `node "${spec.id}" produced invalid outputs: ${problems.join('; ')}` });
  }
}
