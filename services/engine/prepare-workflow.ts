import type { ArtifactInput, Workflow } from '../contract';
import { planWorkflow, type Plan } from './plan';
import { checkRunInputs } from './run-inputs';
import { checkStartValues } from './start-values';
import { summarizeProblems, validateWorkflow, type CheckedWorkflow, type SpecLookup, type ValidateOptions } from './validate-workflow';
import { deriveInterface, type WorkflowInterface } from './workflow-interface';

/** A workflow ready to run: checked, planned, its interface derived. */
export interface PreparedWorkflow {
  workflow: CheckedWorkflow;
  plan: Plan;
  iface: WorkflowInterface;
}

export type PrepareResult =
  | { ok: true; prepared: PreparedWorkflow; inputs: Record<string, ArtifactInput> }
  | { ok: false; message: string; problems: { path: string; message: string }[] };

/**
 * Everything the engine checks before a run starts: the graph (nodes, references, connectors,
 * cycles), the run's inputs against the derived interface, and every value known at the start
 * (run inputs, defaults, consts) against the ports it is wired to. The API calls it to answer 400
 * before the stream; workers call it again on the stored definition to rebuild the plan.
 */
export function prepareWorkflow(definition: Workflow, specs: SpecLookup, inputs: Record<string, ArtifactInput>, options: ValidateOptions = {}): PrepareResult {
  const graph = prepareGraph(definition, specs, options);
  if (!graph.ok) return graph;
  const { workflow, iface } = graph.prepared;
  const checkedInputs = checkRunInputs(iface, inputs);
  if (!checkedInputs.ok) return { ok: false, message: checkedInputs.message, problems: checkedInputs.problems.map((message) => ({ path: 'inputs', message })) };
  const values = checkStartValues(workflow, checkedInputs.inputs, inputs);
  if (values.length > 0) return { ok: false, message: summarizeProblems(values), problems: values.map(({ path, message }) => ({ path: `workflow.${path}`, message })) };
  return { ok: true, prepared: graph.prepared, inputs: checkedInputs.inputs };
}

/**
 * The graph's part of {@link prepareWorkflow}, without inputs: what a batch checks once before it
 * checks each of its rows' inputs against the interface (engine/batch-rows.ts).
 */
export function prepareGraph(definition: Workflow, specs: SpecLookup, options: ValidateOptions = {}): { ok: true; prepared: PreparedWorkflow } | Extract<PrepareResult, { ok: false }> {
  const check = validateWorkflow(definition, specs, options);
  if (!check.ok) return { ok: false, message: check.message, problems: check.problems.map(({ path, message }) => ({ path: `workflow.${path}`, message })) };
  return { ok: true, prepared: { workflow: check.workflow, plan: planWorkflow(check.workflow), iface: deriveInterface(check.workflow) } };
}
