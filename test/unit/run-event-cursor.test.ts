import type { RunEvent } from '../../services/contract';
import { RunEventCursor, type CursorWaiter, type RunLogRead } from '../../services/queue/run-event-cursor';
import type { SequencedEvent } from '../../services/queue/sequenced-event';

const progress = (message: string): RunEvent => ({ type: 'step.progress', nodeId: 'n1', message });
const completed: RunEvent = { type: 'run.completed', outputs: {} };

/** What a waiter was told: the event's seq, 'end' or the failure's message. */
function next(cursor: RunEventCursor): Promise<number | 'end' | string> {
  return new Promise((resolve) => {
    const waiter: CursorWaiter = {
      event: (item) => resolve(item.seq),
      end: () => resolve('end'),
      fail: (err) => resolve(err instanceof Error ? err.message : String(err)),
    };
    cursor.wait(waiter);
  });
}

/** A log read that returns `log`'s entries after the seq asked for. */
function readsLog(log: SequencedEvent[]): (afterSeq: number) => Promise<RunLogRead> {
  return async (afterSeq) => ({ events: log.filter((item) => item.seq > afterSeq), tail: log.at(-1) });
}

describe('RunEventCursor', () => {
  const log: SequencedEvent[] = [
    { seq: 1, event: progress('a') },
    { seq: 2, event: progress('b') },
    { seq: 3, event: completed },
  ];

  it('ends a stream resumed after the terminal event when the live copy of that event arrives late', async () => {
    // Resumed at the terminal event's seq; the message published before the subscription reaches it after.
    const cursor = new RunEventCursor('run-1', 3, readsLog(log));
    cursor.message(log[2]!);
    await expect(next(cursor)).resolves.toBe('end');
  });

  it('fails a stream whose position is past a terminal event: the log was begun again', async () => {
    const cursor = new RunEventCursor('run-1', 5, readsLog(log));
    cursor.message(log[2]!);
    await expect(next(cursor)).resolves.toMatch(/terminal event at seq 3, before seq 5 .*begun again/);
  });

  it('ignores a late live copy of an event it already handed over and goes on', async () => {
    const cursor = new RunEventCursor('run-1', 1, readsLog(log));
    cursor.message(log[0]!);
    cursor.message(log[1]!);
    await expect(next(cursor)).resolves.toBe(2);
    cursor.message(log[2]!);
    await expect(next(cursor)).resolves.toBe(3);
    await expect(next(cursor)).resolves.toBe('end');
  });
});
