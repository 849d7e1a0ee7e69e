import type { Response } from 'express';
import type { EventStream } from '../handlers/handler-types';

export interface SseOptions {
  heartbeatMs: number;
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

  let closed = false;
  res.on('close', () => {
    closed = true;
  });
  const heartbeat = setInterval(() => {
    if (!closed) res.write(': keep-alive\n\n');
  }, options.heartbeatMs);
  heartbeat.unref();

  try {
    for await (const { seq, event } of events) {
      if (closed) break;
      res.write(`id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`);
    }
    if (!closed) res.write('data: [DONE]\n\n');
  } finally {
    clearInterval(heartbeat);
    if (!closed) res.end();
  }
}
