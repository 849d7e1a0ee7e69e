import net from 'node:net';

/** What a raw connection received until the server closed it, and when that was. */
export interface Ended {
  text: string;
  ms: number;
  /** Whether the client gave up (`signal`) before the server closed the connection. */
  aborted: boolean;
}

/**
 * A slow client (slowloris, slow body): opens a raw connection, writes `first`, then `drip`
 * every `everyMs` (never finishing the request) until the server closes the connection, or
 * `giveUpMs` passes (then it rejects: the server kept it), or `signal` aborts (then it resolves,
 * `aborted`).
 */
export function slowClient(url: string, first: string, drip: string, everyMs: number, giveUpMs: number, signal?: AbortSignal): Promise<Ended> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(Number(port), hostname);
    let text = '';
    let aborted = false;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept a slow client for ${giveUpMs} ms; received: ${text}`));
    }, giveUpMs);
    const abort = (): void => {
      aborted = true;
      socket.destroy();
    };
    signal?.addEventListener('abort', abort, { once: true });
    if (signal?.aborted) abort();
    socket.on('connect', () => {
      socket.write(first);
      timer = setInterval(() => {
        if (!socket.destroyed && socket.writable) socket.write(drip);
      }, everyMs);
    });
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      signal?.removeEventListener('abort', abort);
      resolve({ text, ms: Date.now() - started, aborted });
    });
  });
}
