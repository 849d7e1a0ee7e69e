import { setMaxListeners } from 'node:events';

/** A run's abort, shared by its jobs and step attempts running here. */
interface RunAbort {
  controller: AbortController;
  /** Holds on it now: the jobs of the run running here, and their attempts. */
  holds: number;
}

/**
 * The steps this process is executing, by run: when a run fails (here or on another worker,
 * announced on the abort channel), its steps here are aborted and the signal reaches the provider
 * call.
 *
 * The jobs and attempts of one run share one AbortController, kept while a job of the run runs
 * here (a job holds it, and so does each attempt): a controller and its signal per attempt cost
 * more than a quick local node's whole call (B3's fan-out, 1,001 attempts in 9 jobs: the attempts
 * took 10% of the process' busy time, mostly making, listening on and dropping them; 3-5% now). Aborting a run aborts every
 * attempt of it, as before; an attempt that starts after its run was aborted is aborted at once,
 * which is right, since a run is aborted only once it has stopped.
 */
export class InFlightSteps {
  private readonly byRun = new Map<string, RunAbort>();

  /** Holds the run's abort signal (for a job of the run, or an attempt); it aborts when the run does. Call `release` when done. */
  hold(runId: string): AbortSignal {
    let abort = this.byRun.get(runId);
    if (!abort) {
      abort = { controller: new AbortController(), holds: 0 };
      // Every attempt of the run running here listens on it (a provider call, `raceAbort`): more
      // than Node's default ten is expected, not a leak.
      setMaxListeners(Infinity, abort.controller.signal);
      this.byRun.set(runId, abort);
    }
    abort.holds += 1;
    return abort.controller.signal;
  }

  release(runId: string): void {
    const abort = this.byRun.get(runId);
    if (!abort) return;
    abort.holds -= 1;
    if (abort.holds === 0) this.byRun.delete(runId);
  }

  /** Aborts every step of the run running here; whether any was. */
  abortRun(runId: string, reason: Error): boolean {
    const abort = this.byRun.get(runId);
    abort?.controller.abort(reason);
    return abort !== undefined;
  }
}
