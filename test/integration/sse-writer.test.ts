import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import express from 'express';
import type { SequencedEvent } from '../../services/contract';
import { writeEventStream } from '../../services/api/http/sse-writer';
import { eventually } from '../support/eventually';

/** Two events, a pause long enough for heartbeats, then the terminal event. */
async function* events(): AsyncGenerator<SequencedEvent> {
  yield { seq: 1, event: { type: 'run.started', runId: 'r1' } };
  yield { seq: 2, event: { type: 'step.progress', nodeId: 'n1', message: 'half way: "quoted", ünïcode ✓' } };
  await sleep(120);
  yield { seq: 3, event: { type: 'run.completed', outputs: {} } };
}

const EXPECTED_FRAMES = [
  'id: 1\ndata: {"type":"run.started","runId":"r1"}\n\n',
  'id: 2\ndata: {"type":"step.progress","nodeId":"n1","message":"half way: \\"quoted\\", ünïcode ✓"}\n\n',
  'id: 3\ndata: {"type":"run.completed","outputs":{}}\n\ndata: [DONE]\n\n',
];

/** One event, then three that come together (in one turn), then the end. */
async function* grouped(): AsyncGenerator<SequencedEvent> {
  yield { seq: 1, event: { type: 'run.started', runId: 'r1' } };
  await sleep(20);
  yield { seq: 2, event: { type: 'step.started', nodeId: 'n1' } };
  yield { seq: 3, event: { type: 'step.progress', nodeId: 'n1', message: 'm' } };
  yield { seq: 4, event: { type: 'step.completed', nodeId: 'n1', usage: { costUsd: 0, ms: 1 } } };
  await sleep(20);
  yield { seq: 5, event: { type: 'run.completed', outputs: {} } };
}

/** What the client reads, heartbeats left out. */
const withoutHeartbeats = (body: string) => body.replaceAll(': keep-alive\n\n', '');

describe('the SSE writer', () => {
  let server: http.Server;
  let port: number;
  /** Whether each stream's response was written through `res.write` (by request path). */
  const wroteThroughRes = new Map<string, boolean>();
  /** The writes of the `/grouped` stream's socket, each as the text it carried. */
  const socketWrites: string[] = [];
  /** The streams whose writer returned (without throwing). */
  const finished = new Set<string>();

  beforeAll(async () => {
    const app = express();
    app.get('/stream', async (req, res) => {
      const write = res.write.bind(res);
      wroteThroughRes.set(String(req.query.tag), false);
      res.write = ((...args: Parameters<typeof write>) => {
        wroteThroughRes.set(String(req.query.tag), true);
        return write(...args);
      }) as typeof res.write;
      await writeEventStream(res, events(), { heartbeatMs: 30 });
      finished.add(String(req.query.tag));
    });
    app.get('/grouped', async (_req, res) => {
      // What the socket is handed to send, one entry per write or writev (one system call each).
      type Write = (chunk: unknown, encoding: unknown, done: unknown) => void;
      type Writev = (chunks: { chunk: unknown }[], done: unknown) => void;
      const socket = res.socket as unknown as { _write: Write; _writev: Writev };
      const [write, writev] = [socket._write.bind(socket), socket._writev.bind(socket)];
      socket._write = (chunk: unknown, encoding: unknown, done: unknown) => {
        socketWrites.push(String(chunk));
        return write(chunk, encoding, done);
      };
      socket._writev = (chunks: { chunk: unknown }[], done: unknown) => {
        socketWrites.push(chunks.map(({ chunk }) => String(chunk)).join(''));
        return writev(chunks, done);
      };
      // As the operation routes do, after `invoke` has answered: in a promise continuation.
      await Promise.resolve();
      await writeEventStream(res, grouped(), { heartbeatMs: 60_000 });
    });
    app.get('/plain', (_req, res) => res.json({ ok: true }));
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("writes an HTTP/1.1 stream's events and heartbeats into its socket as valid chunks, and the connection serves the next request", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ body: string; reused: boolean; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ body, reused: req.reusedSocket, headers: res.headers }));
          res.on('error', reject);
        });
        req.on('error', reject);
      });
    try {
      // Node's client parser refuses a malformed chunk (a wrong size, a missing CRLF, no last chunk).
      const stream = await get('/stream?tag=http11');
      expect(stream.headers['transfer-encoding']).toBe('chunked');
      expect(withoutHeartbeats(stream.body)).toBe(EXPECTED_FRAMES.join(''));
      expect(stream.body).toContain(': keep-alive\n\n');
      // Written into the socket, not through the response's own write.
      expect(wroteThroughRes.get('http11')).toBe(false);
      const next = await get('/plain');
      expect(next).toMatchObject({ body: '{"ok":true}', reused: true });
    } finally {
      agent.destroy();
    }
  });

  it("writes a stream's first event of a turn at once, and the events that came with it together in one write", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/grouped`);
    expect(await res.text()).toContain('data: [DONE]');
    // What each write carried: the headers, events by id, [DONE].
    const carried = socketWrites.map((text) => [
      ...(text.startsWith('HTTP/1.1 200') ? ['headers'] : []),
      ...[...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])),
      ...(text.includes('data: [DONE]') ? ['[DONE]'] : []),
    ]);
    expect(carried).toEqual([['headers', 1], [2], [3, 4], [5, '[DONE]']]);
  });

  it('writes an HTTP/1.0 stream (no chunks) through the response, and ends it by closing the connection', async () => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (raw += chunk));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write('GET /stream?tag=http10 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n');
    await closed;
    const [head, body] = [raw.slice(0, raw.indexOf('\r\n\r\n')), raw.slice(raw.indexOf('\r\n\r\n') + 4)];
    expect(head).not.toMatch(/transfer-encoding/i);
    expect(withoutHeartbeats(body)).toBe(EXPECTED_FRAMES.join(''));
    expect(wroteThroughRes.get('http10')).toBe(true);
  });

  it('stops writing when the client goes away mid-stream', async () => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      raw += chunk;
      if (raw.includes('id: 2')) socket.destroy();
    });
    socket.write('GET /stream?tag=gone HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await new Promise((resolve) => socket.on('close', resolve));
    // The writer notices at its next event and returns without writing into the dead socket (no
    // error thrown; the server lives on).
    await eventually(() => finished.has('gone'), { what: "the writer of the client gone to return" });
    expect(raw).not.toContain('id: 3');
    const res = await fetch(`http://127.0.0.1:${port}/plain`);
    expect(await res.json()).toEqual({ ok: true });
  });
});
