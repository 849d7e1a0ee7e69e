import type { RunEvent } from '../contract';
import { mountOf } from '../engine';
import type { RunEventAppender } from './ports';

/**
 * How the steps of a mounted workflow show in the run's stream: as progress of the node that
 * mounts it (SPEC), not as steps of their own. `step.started`, `step.progress` and
 * `step.completed` of a spliced step `<mount>__<node>` become `step.progress` of `<mount>`, and
 * its `step.failed` becomes the mount node's `step.failed`. The run record keeps the spliced
 * steps with their own ids (docs/runs.md).
 */
export function presentEvent(event: RunEvent): RunEvent {
  if (!('nodeId' in event)) return event;
  const mount = mountOf(event.nodeId);
  if (!mount) return event;
  const { mountId, innerId } = mount;
  switch (event.type) {
    case 'step.started':
      return { type: 'step.progress', nodeId: mountId, message: `${innerId} started` };
    case 'step.progress':
      return { type: 'step.progress', nodeId: mountId, message: `${innerId}: ${event.message}` };
    case 'step.completed':
      return { type: 'step.progress', nodeId: mountId, message: `${innerId} completed ($${event.usage.costUsd}, ${event.usage.ms} ms)` };
    case 'step.failed':
      return { type: 'step.failed', nodeId: mountId, error: { code: event.error.code, message: `${innerId}: ${event.error.message}` } };
  }
}

/** An appender that presents mounted steps' events as their mount node's (see `presentEvent`). */
export function presentingMountEvents(inner: RunEventAppender): RunEventAppender {
  return {
    append: (runId, event) => inner.append(runId, presentEvent(event)),
    appendAll: (runId, events) => inner.appendAll(runId, events.map(presentEvent)),
  };
}
