/**
 * The steps this process is executing, by run, each with its AbortController: when a run fails
 * (here or on another worker, announced on the abort channel), its steps here are aborted and
 * the signal reaches the provider call.
 */
export class InFlightSteps {
  private readonly byRun = new Map<string, Set<AbortController>>();

  /** Registers a step attempt; call `end` with the controller when it stops. */
  start(runId: string): AbortController {
    const controller = new AbortController();
    let set = this.byRun.get(runId);
    if (!set) {
      set = new Set();
      this.byRun.set(runId, set);
    }
    set.add(controller);
    return controller;
  }

  end(runId: string, controller: AbortController): void {
    const set = this.byRun.get(runId);
    if (!set) return;
    set.delete(controller);
    if (set.size === 0) this.byRun.delete(runId);
  }

  /** Aborts every step of the run running here; returns how many. */
  abortRun(runId: string, reason: Error): number {
    const set = this.byRun.get(runId);
    if (!set) return 0;
    for (const controller of set) controller.abort(reason);
    return set.size;
  }

  /** Steps running in this process (for metrics and graceful shutdown). */
  get size(): number {
    let n = 0;
    for (const set of this.byRun.values()) n += set.size;
    return n;
  }
}
