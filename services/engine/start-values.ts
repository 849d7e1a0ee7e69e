import type { ArtifactInput } from '../contract';
import { checkLiteral } from './connector-values';
import { coerceToConnector, startValue } from './step-values';
import type { CheckedNode, CheckedWorkflow } from './validate-workflow';
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
