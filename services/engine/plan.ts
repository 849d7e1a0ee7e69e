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
    const seen = new Set<string>();
    for (const ref of workflow.nodes.get(step.nodeId)!.references.values()) {
      if (!steps.has(ref.nodeId) || seen.has(ref.nodeId)) continue;
      seen.add(ref.nodeId);
      step.dependsOn.push(ref.nodeId);
      steps.get(ref.nodeId)!.dependents.push(step.nodeId);
    }
  }
  // Kahn's algorithm, keeping definition order among ready steps.
  const pending = new Map([...steps.values()].map((s) => [s.nodeId, s.dependsOn.length]));
  const initial = [...steps.values()].filter((s) => s.dependsOn.length === 0).map((s) => s.nodeId);
  const order: string[] = [];
  const queue = [...initial];
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i]!;
    order.push(id);
    for (const next of steps.get(id)!.dependents) {
      const left = pending.get(next)! - 1;
      pending.set(next, left);
      if (left === 0) queue.push(next);
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
