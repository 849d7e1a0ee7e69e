/** Ctrl-C: following stops (exit 130); a run already started goes on on the service, unless the user cancelled it. */
export class Interrupted extends Error {
  /** The run left going (or cancelled), when one had started. */
  constructor(
    readonly runId?: string,
    readonly cancelled = false,
  ) {
    super(runId === undefined ? 'interrupted' : cancelled ? `interrupted; run ${runId} cancelled` : `interrupted; run ${runId} goes on`);
    this.name = 'Interrupted';
  }
}

const controller = new AbortController();

/**
 * Aborted at the first SIGINT, so the command in progress can say what it leaves behind (the
 * run's id) before exiting. The listener is installed once: a second Ctrl-C kills as usual.
 */
export function interruptSignal(): AbortSignal {
  if (process.listenerCount('SIGINT') === 0) process.once('SIGINT', () => controller.abort(new Interrupted()));
  return controller.signal;
}

/** Whether an error is the abort of {@link interruptSignal}, however it was wrapped. */
export function isInterrupt(err: unknown): boolean {
  return err instanceof Interrupted || (controller.signal.aborted && (err as { name?: string } | null)?.name === 'AbortError');
}
