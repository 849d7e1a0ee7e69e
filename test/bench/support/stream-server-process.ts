/**
 * A child process that serves SSE streams for B6 (test/bench/workloads/b6-streams.ts), so that
 * the server's memory is measured without the clients' (they live in the bench process):
 *
 * - `ours`: our service with ROLE=api (no worker: the bench's runs stay running, their streams
 *   open) on the database and Redis prefix the parent names;
 * - `raw`: the peer, a bare node:http SSE server: one ioredis subscriber, each message written to
 *   every open response of its channel (`GET /stream/<channel>`), a heartbeat timer per response
 *   as ours has.
 *
 * Run with `node --expose-gc --require tsx/cjs stream-server-process.ts <ours|raw>` and an IPC
 * channel; configured by B6_SERVER (JSON, `StreamServerConfig`). It answers IPC messages:
 * `{ ask: 'memory' }` with `{ memory: MemoryReply }` after two full collections. It sends
 * `{ ready: { url, token? } }` once it serves, and exits when the parent disconnects.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { startBenchService, type BenchService, type BenchStack } from '../../support/bench-stack';

export interface StreamServerConfig {
  stack: Pick<BenchStack, 'tmpDir' | 'fsync' | 'redisUrl' | 'postgres' | 'databaseUrl'>;
  /** ours: the Redis prefix of its queue and event logs (its own, so no other service's worker sees its runs). */
  redisPrefix: string;
  heartbeatMs: number;
}

export interface MemoryReply {
  heapUsed: number;
  external: number;
  rss: number;
  /** Streams the server holds open now. */
  streams: number;
}

/** A started server: its address, the bench account's token (ours), its open stream count. */
interface Served {
  url: string;
  token?: string;
  streams(): number;
  close(): Promise<void>;
}

export type ServerMessage = { ready: { url: string; token?: string } } | { memory: MemoryReply };

const gc = (globalThis as { gc?: () => void }).gc;

function memory(streams: number): MemoryReply {
  if (!gc) throw new Error('run with --expose-gc');
  // Twice: the first pass may leave objects whose finalizers free more on the second.
  gc();
  gc();
  const { heapUsed, external, rss } = process.memoryUsage();
  return { heapUsed, external, rss, streams };
}

async function startOurs(config: StreamServerConfig): Promise<Served> {
  const stack: BenchStack = { ...config.stack, stop: async () => undefined };
  const service: BenchService = await startBenchService(stack, { env: { ROLE: 'api', REDIS_PREFIX: config.redisPrefix, SSE_HEARTBEAT_MS: String(config.heartbeatMs) } });
  return { url: service.url, token: service.account.token, streams: () => service.runtime.bus.stats().streams, close: () => service.close() };
}

async function startRaw(config: StreamServerConfig): Promise<Served> {
  // No ready check: its INFO is refused on a connection already subscribing (as ours, createRedisSubscriber).
  const subscriber = new Redis(config.stack.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: false });
  subscriber.on('error', (err: Error) => console.error(`raw stream server: ${err.message}`));
  const channels = new Map<string, Set<http.ServerResponse>>();
  let open = 0;
  subscriber.on('message', (channel: string, message: string) => {
    const text = `data: ${message}\n\n`;
    for (const res of channels.get(channel) ?? []) res.write(text);
  });
  const server = http.createServer((req, res) => {
    const match = /^\/stream\/([\w:-]+)$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !match) {
      res.writeHead(404).end();
      return;
    }
    const channel = match[1]!;
    let subscribers = channels.get(channel);
    const first = !subscribers;
    if (!subscribers) channels.set(channel, (subscribers = new Set()));
    subscribers.add(res);
    open++;
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), config.heartbeatMs);
    heartbeat.unref();
    res.on('close', () => {
      clearInterval(heartbeat);
      open--;
      subscribers.delete(res);
      if (subscribers.size === 0 && channels.get(channel) === subscribers) {
        channels.delete(channel);
        void subscriber.unsubscribe(channel).catch(() => undefined);
      }
    });
    // Headers and a first comment once subscribed: the client then knows no message can be missed.
    void (first ? subscriber.subscribe(channel) : Promise.resolve()).then(() => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      res.socket?.setNoDelay(true);
      res.write(': open\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    streams: () => open,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      subscriber.disconnect();
    },
  };
}

async function main(): Promise<void> {
  const mode = process.argv[2];
  const config = JSON.parse(process.env.B6_SERVER ?? 'null') as StreamServerConfig | null;
  if (!config || (mode !== 'ours' && mode !== 'raw')) throw new Error('usage: B6_SERVER=<json> stream-server-process.ts <ours|raw> (with an IPC channel)');
  if (!process.send) throw new Error('needs an IPC channel');
  const send = (message: ServerMessage) => process.send!(message);
  const server = mode === 'ours' ? await startOurs(config) : await startRaw(config);
  process.on('message', (message: { ask?: string }) => {
    if (message.ask === 'memory') send({ memory: memory(server.streams()) });
  });
  process.once('disconnect', () => {
    void server.close().finally(() => process.exit(0));
  });
  send({ ready: { url: server.url, ...(server.token === undefined ? {} : { token: server.token }) } });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
