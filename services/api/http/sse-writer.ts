import type { Response } from 'express';
import { TERMINAL_EVENT_TYPES, type SequencedEvent } from '../../contract';
import type { EventStream } from '../handlers/handler-types';

/** What a stream tells metrics: opened and closed, and each event written with its append time. */
export interface StreamMetrics {
  opened(): void;
  closed(): void;
  /** `appendedAt`: the event's append (epoch ms, Redis' clock); undefined for events that carry none. */
  sent(appendedAt: number | undefined, openedAt: number): void;
}

const DONE = 'data: [DONE]\n\n';

/**
 * The SSE text of each event, kept while the event lives: the streams of one run all get the same
 * event object (decoded once for them), so an event sent to a thousand streams is serialized once.
 */
const frames = new WeakMap<SequencedEvent, string>();

function frameOf(item: SequencedEvent): string {
  let text = frames.get(item);
  if (text === undefined) {
    text = `id: ${item.seq}\ndata: ${JSON.stringify(item.event)}\n\n`;
    frames.set(item, text);
  }
  return text;
}

/**
 * The heartbeat of every open stream of this process with the same period, from one timer: a
 * comment line to each, so proxies keep idle streams open. One timer and one set entry instead of
 * a timer and its closure per stream (docs/performance.md, B6); a stream opened just before a tick
 * gets its first heartbeat early, which is harmless.
 */
class Heartbeats {
  private readonly open = new Set<Response>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly periodMs: number) {}

  add(res: Response): void {
    this.open.add(res);
    if (this.timer) return;
    this.timer = setInterval(() => this.beat(), this.periodMs);
    this.timer.unref();
  }

  delete(res: Response): void {
    this.open.delete(res);
    if (this.open.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private beat(): void {
    for (const res of this.open) if (isOpen(res)) res.write(': keep-alive\n\n');
  }
}

/** Whether the response may still be written: not ended, and its client not gone (`destroyed` once the socket closed). */
function isOpen(res: Response): boolean {
  return !res.writableEnded && !res.destroyed;
}

const heartbeats = new Map<number, Heartbeats>();

function heartbeatsOf(periodMs: number): Heartbeats {
  let found = heartbeats.get(periodMs);
  if (!found) heartbeats.set(periodMs, (found = new Heartbeats(periodMs)));
  return found;
}

export interface SseOptions {
  heartbeatMs: number;
  metrics?: StreamMetrics;
}

/**
 * Writes a run's events as `text/event-stream`: `id: <seq>` and `data: <json>` per event, a
 * comment line as heartbeat so proxies keep idle streams open, and `data: [DONE]` after the
 * terminal event. A client that goes away stops the writing, never the run.
 */
export async function writeEventStream(res: Response, events: EventStream, options: SseOptions): Promise<void> {
  res.status(200);
  res.set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();
  res.socket?.setNoDelay(true);

  // A client gone is read from the response (isOpen), not from a 'close' listener: a closure held
  // per open stream for a flag the response already keeps.
  const heartbeat = heartbeatsOf(options.heartbeatMs);
  heartbeat.add(res);
  const openedAt = Date.now();
  options.metrics?.opened();
  try {
    for await (const item of events) {
      if (!isOpen(res)) break;
      const text = frameOf(item);
      const terminal = TERMINAL_EVENT_TYPES.includes(item.event.type);
      // The terminal event and [DONE] leave in one write: one packet less per run.
      if (terminal) res.end(`${text}${DONE}`);
      else res.write(text);
      options.metrics?.sent(item.at, openedAt);
      if (terminal) break;
    }
    if (isOpen(res)) res.write(DONE);
  } finally {
    options.metrics?.closed();
    heartbeat.delete(res);
    if (isOpen(res)) res.end();
  }
}
