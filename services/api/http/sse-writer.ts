import type { Response } from 'express';
import { TERMINAL_EVENT_TYPES } from '../../contract';
import type { EventStream } from '../handlers/handler-types';

/** Counts open streams (the `svc_sse_streams_open` gauge). */
export interface StreamGauge {
  inc(): void;
  dec(): void;
}

const DONE = 'data: [DONE]\n\n';

export interface SseOptions {
  heartbeatMs: number;
  openStreams?: StreamGauge;
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
  options.openStreams?.inc();

  try {
    for await (const { seq, event } of events) {
      if (closed) break;
      const text = `id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`;
      if (TERMINAL_EVENT_TYPES.includes(event.type)) {
        // The terminal event and [DONE] leave in one write: one packet less per run.
        res.end(`${text}${DONE}`);
        closed = true;
        break;
      }
      res.write(text);
    }
    if (!closed) res.write(DONE);
  } finally {
    options.openStreams?.dec();
    clearInterval(heartbeat);
    if (!closed) res.end();
  }
}
