import type { RunEvent } from '../../contract';
import type { NodeDefinition } from '../../nodes';

/** Connector types whose values are media in blobs: a node with such a port may take a while (an image resize). */
const MEDIA_PORTS: ReadonlySet<string> = new Set(['IMAGE', 'AUDIO', 'VIDEO', 'FILE']);

/**
 * Whether a local node's start may be held until its outcome: its ports carry no media, so it
 * computes in well under a millisecond (math, text, JSON) and a client never sees it idle.
 */
export function startsAndEndsTogether(definition: NodeDefinition): boolean {
  const ports = [...Object.values(definition.spec.inputs), ...Object.values(definition.spec.outputs)];
  return ports.every((port) => !MEDIA_PORTS.has(port.connector.id));
}

/**
 * The `step.started` of a quick local step, held so that it goes out in the same append as the
 * step's outcome, ahead of it: one append and one wake of the run's streams instead of two. An
 * attempt that ends with nothing to release (its result dropped as stale, its job failed) drops
 * it: a later attempt sends its own, and a stale one must not add events after the run's end.
 */
export class HeldStart {
  private held: RunEvent | null;

  constructor(nodeId: string) {
    this.held = { type: 'step.started', nodeId };
  }

  /** The event while it is still held (to lead what it is released with), else nothing. */
  take(): RunEvent[] {
    const taken = this.held;
    this.held = null;
    return taken ? [taken] : [];
  }
}
