import type { RunEvent } from '../../contract';

/** USD to the micro-dollar, the unit the service counts in: `$0.000051`. */
export function usdLine(amount: number): string {
  return `$${amount.toFixed(6)}`;
}

/** A duration as people read it: `460 ms`, `2.5 s`. */
export function durationLine(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * One line that says what a run event means, the same in every client (the CLI's progress lines,
 * the MCP servers' progress notifications): `step.completed speak $0.000051 460 ms`,
 * `step.failed speak provider_error: …`, `run.started <run id>`.
 */
export function describeRunEvent(event: RunEvent): string {
  switch (event.type) {
    case 'run.started':
      return `run.started ${event.runId}`;
    case 'step.started':
      return `step.started ${event.nodeId}`;
    case 'step.progress':
      return `step.progress ${event.nodeId} ${event.message}`;
    case 'step.completed':
      return `step.completed ${event.nodeId} ${usdLine(event.usage.costUsd)} ${durationLine(event.usage.ms)}`;
    case 'step.failed':
      return `step.failed ${event.nodeId} ${event.error.code}: ${event.error.message}`;
    case 'run.completed':
      return 'run.completed';
    case 'run.failed':
      return `run.failed ${event.error.code}: ${event.error.message}`;
  }
}
