import { setMaxListeners } from 'node:events';
import net from 'node:net';
import { slowClient } from '../../support/slow-client';

/** A running attack: how many connections it opened, how many the server cut, and its end. */
export interface Attack {
  opened: number;
  /** Connections the server closed (408 or plain close) before the attack stopped. */
  cut: number;
  /** Connections open right now. */
  open: number;
  stop(): Promise<void>;
}

/**
 * Keeps `connections` slow clients open against `url`, opening a new one whenever the server
 * cuts one, until stopped: slowloris (headers trickled) or a slow body, by what `first` and
 * `drip` are.
 */
export function slowClients(url: string, connections: number, first: string, drip: string, everyMs: number): Attack {
  const controller = new AbortController();
  // Every connection of the attack listens for its one stop.
  setMaxListeners(connections + 10, controller.signal);
  const attack: Attack = {
    opened: 0,
    cut: 0,
    open: 0,
    stop: async () => {
      controller.abort();
      await Promise.all(loops);
    },
  };
  const loop = async (): Promise<void> => {
    while (!controller.signal.aborted) {
      attack.opened += 1;
      attack.open += 1;
      // A server that never cuts it is not this attack's to judge: the stop ends it.
      const ended = await slowClient(url, first, drip, everyMs, 10 * 60_000, controller.signal).catch(() => ({ aborted: true }));
      attack.open -= 1;
      if (!ended.aborted) attack.cut += 1;
    }
  };
  const loops = Array.from({ length: connections }, loop);
  return attack;
}

/** An event stream whose client reads the answer's head, then never reads again. */
export interface StalledReader {
  status: number;
  close(): void;
}

/**
 * Sends `method path` (with a JSON body, if any) over a raw connection and stops reading once the
 * answer's head has arrived: the server's writes (events, heartbeats) then pile up unread.
 */
export function stalledReader(url: string, token: string, method: 'GET' | 'POST', requestPath: string, body?: unknown): Promise<StalledReader> {
  const { hostname, port } = new URL(url);
  const payload = body === undefined ? '' : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let text = '';
    socket.on('connect', () => {
      const head = [`${method} ${requestPath} HTTP/1.1`, `Host: ${hostname}:${port}`, `Authorization: Bearer ${token}`];
      if (body !== undefined) head.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(payload)}`);
      socket.write(`${head.join('\r\n')}\r\n\r\n${payload}`);
    });
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      socket.pause();
      socket.removeAllListeners('data');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), close: () => void socket.destroy() });
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`the connection closed before the answer's head: ${text.slice(0, 300)}`)));
  });
}
