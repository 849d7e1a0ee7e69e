import type { RunEvent } from '../contract';

/** USD amounts as the CLI shows them: six decimals (micro-USD), trailing zeros dropped down to cents. */
function usd(amount: number): string {
  return `$${amount.toFixed(6).replace(/0{1,4}$/, '')}`;
}

/**
 * The progress message of a run event (`step.completed speak ($0.000051, 460 ms)`); undefined
 * for the terminal events, whose outcome is the tool's result.
 */
export function progressMessage(event: RunEvent): string | undefined {
  switch (event.type) {
    case 'run.started':
      return `run.started ${event.runId}`;
    case 'step.started':
      return `step.started ${event.nodeId}`;
    case 'step.progress':
      return `step.progress ${event.nodeId}: ${event.message}`;
    case 'step.completed':
      return `step.completed ${event.nodeId} (${usd(event.usage.costUsd)}, ${Math.round(event.usage.ms)} ms)`;
    case 'step.failed':
      return `step.failed ${event.nodeId}: ${event.error.code}: ${event.error.message}`;
    case 'run.completed':
    case 'run.failed':
      return undefined;
  }
}
