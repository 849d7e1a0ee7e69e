import type { RunEvent } from '../contract';
import type { RunEventAppender } from './ports';

/**
 * Per run, an ordered pipe of event appends that callers do not wait for: `post` queues events
 * behind the run's earlier ones, so they keep their order while the caller goes on (the next
 * step's database call overlaps the append). Whatever touches the run next through another path
 * (the lifecycle's terminal events, an enqueue another worker would answer with events)
 * `flush`es first.
 */
export class RunEventPipe {
  /** Per run, the last of the appends posted and not yet done. */
  private readonly pipes = new Map<string, Promise<void>>();

  constructor(private readonly events: RunEventAppender) {}

  post(runId: string, events: readonly RunEvent[]): void {
    const previous = this.pipes.get(runId) ?? Promise.resolve();
    const next = previous.then(() => this.events.appendAll(runId, events)).then(() => undefined);
    this.pipes.set(runId, next);
    const forget = () => {
      if (this.pipes.get(runId) === next) this.pipes.delete(runId);
    };
    next.then(forget, forget);
  }

  /** Waits until the run's posted events are appended; rejects if one of them could not be. */
  async flush(runId: string): Promise<void> {
    await this.pipes.get(runId);
  }
}
