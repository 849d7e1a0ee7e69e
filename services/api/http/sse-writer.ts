import type { Socket } from 'node:net';
import type { Response } from 'express';
import { TERMINAL_EVENT_TYPES } from '../../contract';
import { corkForTurn } from '../../platform/socket-cork';

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
const frames = new WeakMap<StreamItem, string>();

/** One event of a stream: a run's (`SequencedEvent`) or a batch's; `seq` is its SSE id. */
export interface StreamItem {
  seq: number;
  at?: number;
  event: { type: string };
}

function frameOf(item: StreamItem): string {
  let text = frames.get(item);
  if (text === undefined) {
    text = `id: ${item.seq}\ndata: ${JSON.stringify(item.event)}\n\n`;
    frames.set(item, text);
  }
  return text;
}

/**
 * Which turn of the event loop this is: a number moved on by a tick queued with the turn's first
 * question. Asked from a promise continuation (as a stream's events are written), that tick runs
 * once the continuations queued behind it are done too; asked from a callback's own code, before
 * them, which only makes a turn shorter (fewer writes joined, never one held).
 */
let turn = 0;
let turnEnding = false;

function nextTurn(): void {
  turn++;
  turnEnding = false;
}

function thisTurn(): number {
  if (!turnEnding) {
    turnEnding = true;
    process.nextTick(nextTurn);
  }
  return turn;
}

/**
 * Where one stream's text goes once its headers are out: straight into the response's socket, as
 * the HTTP/1.1 chunks the response would have made of it, and the response ended through `res`
 * (which writes the last chunk). Express gives every response a hidden class of its own (its
 * `setPrototypeOf`), so each property read in Node's `res.write` is megamorphic: 7-12 µs a write,
 * against about 1 µs on a bare response (1,000 open streams, one write each, this VM), paid for
 * every stream of a run before any of them writes (B6). The socket is the server's own object. A
 * response without its socket yet (a pipelined request queued behind an earlier one) or not
 * chunked (an HTTP/1.0 client) is written through `res`.
 */
class StreamOutput {
  private readonly socket: Socket | null;
  private ended = false;
  /** The turn of this stream's last write (see `write`). */
  private lastTurn = -1;

  constructor(private readonly res: Response) {
    this.socket = res.socket !== null && res.chunkedEncoding && res.headersSent ? res.socket : null;
  }

  /** Whether the stream may still be written: not ended here or elsewhere, and its client not gone. */
  isOpen(): boolean {
    if (this.ended) return false;
    const { socket } = this;
    return socket ? !socket.destroyed && !this.res.writableEnded : !this.res.writableEnded && !this.res.destroyed;
  }

  /**
   * A stream's first write of a turn leaves at once; a second in the same turn (events that came
   * together, as a step's `step.started`, `step.completed` and the run's end do) corks the socket
   * for the rest of the turn, so that it and those after it leave in one write. Every stream of a
   * run gets an event first, whatever else it gets (B6: no stream's first event waits for another's).
   */
  write(text: string): void {
    const { socket } = this;
    if (!socket) {
      this.res.write(text);
      return;
    }
    const now = thisTurn();
    if (this.lastTurn === now) corkForTurn(socket);
    this.lastTurn = now;
    socket.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`);
  }

  /**
   * Writes `text` (if any) and ends the response, both in one write. Only here and at the
   * stream's start is the socket corked for the turn: an event written to a thousand streams at
   * once would otherwise leave for the first of them only once the last was written (B6's
   * delivery p50 went from 17-22 to 25-32 ms when every event was held so).
   */
  end(text?: string): void {
    if (this.socket) corkForTurn(this.socket);
    if (text !== undefined) this.write(text);
    this.ended = true;
    this.res.end();
  }
}

/**
 * The heartbeat of every open stream of this process with the same period, from one timer: a
 * comment line to each, so proxies keep idle streams open. One timer and one set entry instead of
 * a timer and its closure per stream (docs/performance/streams.md); a stream opened just before a tick
 * gets its first heartbeat early, which is harmless.
 */
class Heartbeats {
  private readonly open = new Set<StreamOutput>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly periodMs: number) {}

  add(output: StreamOutput): void {
    this.open.add(output);
    if (this.timer) return;
    this.timer = setInterval(() => this.beat(), this.periodMs);
    this.timer.unref();
  }

  delete(output: StreamOutput): void {
    this.open.delete(output);
    if (this.open.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private beat(): void {
    for (const output of this.open) if (output.isOpen()) output.write(': keep-alive\n\n');
  }
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
export async function writeEventStream(res: Response, events: AsyncIterable<StreamItem>, options: SseOptions): Promise<void> {
  res.status(200);
  res.set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  // The headers and the first event (a new run's run.started is there at once) in one write;
  // its own stream alone waits for it (see StreamOutput.end).
  if (res.socket) corkForTurn(res.socket);
  res.flushHeaders();
  res.socket?.setNoDelay(true);

  // A client gone is read from the socket (isOpen), not from a 'close' listener: a closure held
  // per open stream for a flag the socket already keeps.
  const output = new StreamOutput(res);
  const heartbeat = heartbeatsOf(options.heartbeatMs);
  heartbeat.add(output);
  const openedAt = Date.now();
  options.metrics?.opened();
  try {
    for await (const item of events) {
      if (!output.isOpen()) break;
      const text = frameOf(item);
      const terminal = (TERMINAL_EVENT_TYPES as readonly string[]).includes(item.event.type);
      // The terminal event and [DONE] leave in one write: one packet less per run.
      if (terminal) output.end(`${text}${DONE}`);
      else output.write(text);
      options.metrics?.sent(item.at, openedAt);
      if (terminal) break;
    }
    if (output.isOpen()) output.write(DONE);
  } finally {
    options.metrics?.closed();
    heartbeat.delete(output);
    if (output.isOpen()) output.end();
  }
}
