import { TERMINAL_EVENT_TYPES, type RunEvent, type SequencedEvent } from '../contract';

export type { SequencedEvent };

/** Whether the stream of a run ends after this event (`run.completed`, `run.failed`). */
export function isTerminalEvent(event: RunEvent): boolean {
  return TERMINAL_EVENT_TYPES.includes(event.type);
}

/**
 * Reads one log entry or pub/sub message written by the append script. The text is our own
 * (`{"seq":N,"at":MS,"event":...}`), so only the sequence number is checked, not the event's schema:
 * validating every event again on every reader would cost more than it could catch.
 */
export function parseSequencedEvent(text: string): SequencedEvent {
  const value = JSON.parse(text) as Partial<SequencedEvent>;
  if (typeof value.seq !== 'number' || !Number.isInteger(value.seq) || value.seq < 1 || typeof value.event !== 'object' || value.event === null) {
    throw new Error(`not a sequenced run event: ${text.slice(0, 120)}`);
  }
  return value as SequencedEvent;
}

/**
 * A live message decoded for every stream of its run at once (`ChannelFanout`): the event, or
 * what was wrong with it, which then fails each of those streams as a bad log entry would.
 */
export function decodeSequencedEvent(text: string): SequencedEvent | Error {
  try {
    return parseSequencedEvent(text);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}
