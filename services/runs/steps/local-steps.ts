import type { RunContext } from '../run-context-cache';
import { planJobs, type JobPlan } from './step-groups';
import type { PreparedStep } from './prepared-step';
import { lostChargeOf } from './step-result';

/**
 * Which steps of a run are local nodes (bounded work in this process, that a job may run inline
 * after its own step), and what that decides: how ready steps are shared out between jobs, and
 * what a lost attempt is charged.
 */
export class LocalSteps {
  constructor(private readonly mayRunInline: (uses: string) => boolean) {}

  /** Whether step `id` of the run is a local node (may run in this job). */
  isLocal(context: RunContext, id: string): boolean {
    return this.mayRunInline(context.prepared.workflow.nodes.get(id)!.uses);
  }

  /** Whether more than one of `nodeIds` is a local node (a fan-out, run as groups). */
  severalLocal(context: RunContext, nodeIds: readonly string[]): boolean {
    let local = 0;
    for (const id of nodeIds) if (this.isLocal(context, id) && ++local > 1) return true;
    return false;
  }

  /** How ready steps of the run are shared out between this job (`runHere`) and new jobs. */
  planJobs(context: RunContext, ready: readonly string[], runHere: boolean): JobPlan {
    return planJobs(ready, (id) => this.isLocal(context, id), runHere);
  }

  /** What an attempt of the step is charged when it is lost or stopped with its cost unknown. */
  lostCharge(step: PreparedStep): number {
    return lostChargeOf(step.definition, step.estimate, this.mayRunInline);
  }
}
