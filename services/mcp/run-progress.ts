import { describeRunEvent, type RunEvent } from '../sdk/src/index';

/**
 * The progress message of a run event, the line every client shows for it
 * (`step.completed speak $0.000051 460 ms`); undefined for the terminal events, whose outcome is
 * the tool's result.
 */
export function progressMessage(event: RunEvent): string | undefined {
  return event.type === 'run.completed' || event.type === 'run.failed' ? undefined : describeRunEvent(event);
}
