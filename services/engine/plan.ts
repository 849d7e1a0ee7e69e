import type { CheckedWorkflow } from './validate-workflow';

/** One executable node of a run: a platform node or a mounted workflow. */
export interface PlannedStep {
  nodeId: string;
  /** Executable nodes whose outputs it reads. */
  dependsOn: string[];
  /** Executable nodes that read its outputs. */
  dependents: string[];
}

/** The executable steps of a workflow in a topological order. */
export interface Plan {
  steps: Map<string, PlannedStep>;
  /** Every step after all of its dependencies. */
  order: string[];
  /** Steps with no executable dependency: enqueued when the run starts. */
  initial: string[];
}

const executable = (role: string) => role === 'platform' || role === 'mounted';

/**
 * Plans a validated (so acyclic) workflow. Input, const and output nodes need no execution:
 * their values are known at the start or are read from finished steps.
 */
export function planWorkflow(workflow: CheckedWorkflow): Plan {
  const steps = new Map<string, PlannedStep>();
  for (const node of workflow.list) {
    if (executable(node.role)) steps.set(node.id, { nodeId: node.id, dependsOn: [], dependents: [] });
  }
  for (const step of steps.values()) {
    for (const { ref } of workflow.nodes.get(step.nodeId)!.references) {
      const source = steps.get(ref.nodeId);
      // Nodes read few ports, so a linear duplicate check beats a Set per step.
      if (!source || step.dependsOn.includes(ref.nodeId)) continue;
      step.dependsOn.push(ref.nodeId);
      source.dependents.push(step.nodeId);
    }
  }
  // Kahn's algorithm, keeping definition order among ready steps.
  const pending = new Map<string, number>();
  const initial: string[] = [];
  for (const step of steps.values()) {
    pending.set(step.nodeId, step.dependsOn.length);
    if (step.dependsOn.length === 0) initial.push(step.nodeId);
  }
  const order = initial.slice();
  for (let i = 0; i < order.length; i++) {
    for (const next of steps.get(order[i]!)!.dependents) {
      const left = pending.get(next)! - 1;
      pending.set(next, left);
      if (left === 0) order.push(next);
    }
  }
  if (order.length !== steps.size) throw new Error('planWorkflow needs an acyclic, validated workflow');
  return { steps, order, initial };
}

/** Steps not finished yet whose dependencies all are: what to run next. */
export function readySteps(plan: Plan, finished: ReadonlySet<string>): string[] {
  const ready: string[] = [];
  for (const step of plan.steps.values()) {
    if (!finished.has(step.nodeId) && step.dependsOn.every((d) => finished.has(d))) ready.push(step.nodeId);
  }
  return ready;
}
