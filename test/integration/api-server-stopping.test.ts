import http from 'node:http';
import net from 'node:net';
import express from 'express';
import { listen, type RunningServer } from '../../services/api';
import { eventually } from '../support/eventually';

/**
 * A stopping API process (SIGTERM, a rolling restart) takes no new request, not even on a
 * connection it kept alive: before, Node served such requests (new event streams, new runs) until
 * the grace period cut every connection, so each stop took the whole grace period and the streams
 * it had just opened were cut. In-flight requests still finish; the close then ends with them.
 */

/** Long enough that a close waiting for it would time the test out. */
const GRACE_MS = 120_000;

describe('an API server that is stopping', () => {
  let server: RunningServer | undefined;
  /** Each /slow request waits here until the test releases it. */
  let releases: (() => void)[] = [];

  beforeEach(async () => {
    releases = [];
    const app = express();
    app.get('/fast', (_req, res) => res.json({ ok: true }));
    app.get('/slow', (_req, res) => {
      releases.push(() => res.json({ slow: 'done' }));
    });
    server = await listen(app, '127.0.0.1', 0);
  });

  afterEach(async () => {
    for (const release of releases.splice(0)) release();
    await server?.close(0);
  });

  it('lets the request in flight finish, closes its kept-alive connection after it, and closes without waiting for the grace period', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        http.get(`${server!.url}${path}`, { agent }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        }).on('error', reject);
      });
    expect(await get('/fast')).toEqual({ status: 200, body: '{"ok":true}' });
    const slow = get('/slow');
    await eventually(() => releases.length === 1, { what: 'the slow request to arrive' });

    let closed = false;
    const closing = server!.close(GRACE_MS).then(() => (closed = true));
    releases.shift()!();
    expect(await slow).toEqual({ status: 200, body: '{"slow":"done"}' });
    await closing;
    expect(closed).toBe(true);
    // The kept-alive connection went with the close: the next request needs a new connection, which nothing accepts.
    await expect(get('/fast')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    agent.destroy();
  });

  it('answers a request that arrives on a kept-alive connection after the close began 503 with Retry-After, and closes that connection', async () => {
    const socket = net.connect(Number(new URL(server!.url).port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write('GET /slow HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n');
    await eventually(() => releases.length === 1, { what: 'the slow request to arrive' });

    let requests = 1;
    server!.server.on('request', () => (requests += 1));
    const closing = server!.close(GRACE_MS);
    // HTTP/1.1 pipelining: the next request on the same connection, while the first is still answered.
    socket.write('GET /fast HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n');
    await eventually(() => requests === 2, { what: 'the second request to arrive' });
    releases.shift()!();
    await ended;
    await closing;

    const responses = received.split(/(?=HTTP\/1\.1 )/);
    expect(responses).toHaveLength(2);
    expect(responses[0]).toMatch(/^HTTP\/1\.1 200 /);
    expect(responses[0]).toContain('{"slow":"done"}');
    expect(responses[1]).toMatch(/^HTTP\/1\.1 503 /);
    expect(responses[1]).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(responses[1]).toMatch(/\r\nconnection: close\r\n/i);
    expect(responses[1]).toContain('"code":"unavailable"');
  });
});
