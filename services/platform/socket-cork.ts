import type { Writable } from 'node:stream';

function uncork(stream: Writable): void {
  stream.uncork();
}

/**
 * Holds a socket's writes until the current turn of the event loop is done, then sends them as
 * one `writev`: several Redis commands, or several events of one stream, written in one turn
 * leave in one system call instead of one each. Corked from a promise continuation, the turn ends
 * once the continuations queued behind it have run; corked from a callback's own code, before
 * them (Node runs the ticks first). On this project's 2-core VM a write to a loopback socket costs
 * 15-60 µs of the process's CPU, about a sixth of the busy main thread at B4's rates
 * (docs/performance/redis-and-queue.md, A turn's writes in one system call). A stream already
 * corked (Node's HTTP code corks a response's socket for its own writes and uncorks it the same
 * way) is left alone: its uncork flushes what was added.
 */
export function corkForTurn(stream: Writable): void {
  if (stream.writableCorked > 0) return;
  stream.cork();
  process.nextTick(uncork, stream);
}
