import type { ArtifactInput } from '../contract';
import { checkLiteral, coerceToConnector, isDataConnector } from './connector-values';
import { VALUE_PORT, type CheckedNode, type CheckedWorkflow } from './validate-workflow';
import { ProblemList, type WorkflowProblem } from './workflow-problems';

function origin(source: CheckedNode, given: Record<string, ArtifactInput>): string {
  if (source.role === 'const') return `const node "${source.id}"`;
  return Object.hasOwn(given, source.id) ? `run input "${source.id}"` : `the default of input "${source.id}"`;
}

/**
 * Checks every value known before a run starts (run inputs, input nodes' defaults, const values)
 * against each platform port it is wired to: type, list-ness, `optionValues`, bounds, after the
 * coercions the port applies at run time. SPEC (Errors, rule 1) wants such a value refused before
 * anything runs, not when its step comes up after earlier steps ran and were charged. Literals
 * written on a node are checked by `validateWorkflow`; values of mounted workflows arrive here
 * spliced in (literals, or references to the run's inputs).
 *
 * `inputs` are the run's inputs after `checkRunInputs` (defaults filled); `given` the caller's,
 * to say where a value came from.
 */
export function checkStartValues(workflow: CheckedWorkflow, inputs: Record<string, ArtifactInput>, given: Record<string, ArtifactInput>): WorkflowProblem[] {
  const problems = new ProblemList();
  for (const node of workflow.list) {
    const spec = node.spec;
    if (node.role !== 'platform' || !spec) continue;
    for (const { input, ref } of node.references) {
      const source = workflow.nodes.get(ref.nodeId);
      if (!source || (source.role !== 'input' && source.role !== 'const') || !Object.hasOwn(spec.inputs, input)) continue;
      const value = startValue(source, inputs);
      if (value === undefined) continue; // a missing run input: checkRunInputs reports it
      const port = spec.inputs[input]!.connector;
      const problem = checkLiteral(port, coerceToConnector(value, port));
      if (problem) problems.atNode(node.index, node.id, `inputs.${input}`, `input "${input}" (from ${origin(source, given)}) ${problem}`);
    }
  }
  return problems.items;
}

/**
 * The value an input or const node holds from the start of a run: a const's literal, an input's
 * artifact (data ports) or its plain JSON value (value ports). Undefined for a run input that is
 * not there.
 */
export function startValue(source: CheckedNode, inputs: Record<string, ArtifactInput>): unknown {
  if (source.role === 'const') return source.inputs.value;
  // Own keys only: an input node may be named "constructor" or "toString".
  const artifact = Object.hasOwn(inputs, source.id) ? inputs[source.id] : undefined;
  if (!artifact) return undefined;
  return isDataConnector(source.outputs![VALUE_PORT]!.id) ? artifact : artifact.value;
}
