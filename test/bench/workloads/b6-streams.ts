/**
 * B6: open SSE streams on one API process. Peer: a raw node:http SSE server fanning
 * each message of one ioredis subscriber out to every open response. Goal: 10k streams, ≤ 20 KB
 * each, delivery p99 ≤ 5 ms at 1k streams.
 *
 * Both servers run in a child process (test/bench/support/stream-server-process.ts) and the
 * clients here, so the memory measured is the server's alone. Ours is ROLE=api, not the shared
 * ROLE=all service: with no worker its runs stay running and their streams open as long as we
 * like, and the process's memory is the API's, not a worker's too. It has its own database and
 * Redis prefix, so no other service's worker or reaper (the shared one of the other workloads)
 * picks its runs up and ends them under its streams.
 *
 * 1. Memory: the server's heap used + external and its RSS after N open streams, less before
 *    (both after two full collections, a warm-up's streams opened and closed first), ÷ N. The
 *    streams follow `RUNS` runs (channels for the peer), so per-run subscriptions are in the
 *    figure as they would be. Kernel socket buffers are in neither figure.
 * 2. Delivery: 1,000 streams on one run (one channel); per round one event is appended (ours:
 *    the run event bus' append script, which logs and publishes; peer: PUBLISH) and the time from
 *    just before the append to each client's receipt is recorded, performance.now() on both
 *    sides (one clock: this process). Rounds are sequential; the next starts when every client
 *    has its event. The clients' own parsing shares this process, for both servers alike.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { RunEvent } from '../../../services/contract';
import { RunEventBus } from '../../../services/queue';
import { applyMigrations } from '../../../services/store/migration-runner';
import { databaseUrl, onServer } from '../../support/database';
import type { BenchContext, Workload } from '../support/context';
import { Latency } from '../support/latency';
import { atLeast, atMost } from '../support/report';
import { ONE_NODE } from '../support/service-client';
import type { MemoryReply, ServerMessage, StreamServerConfig } from '../support/stream-server-process';

const ROOT = path.resolve(__dirname, '../../..');
const SERVER_SCRIPT = path.join(ROOT, 'test/bench/support/stream-server-process.ts');
const DATABASE = 'svc_bench_b6';
const REDIS_PREFIX = 'svcbench-b6';
const DELIVERY_STREAMS = 1_000;
const WARMUP_ROUNDS = 5;
/** Streams being opened at once. */
const OPENING = 100;
const OPEN_TIMEOUT_MS = 30_000;
const ROUND_TIMEOUT_MS = 10_000;
/** As the service's default (SSE_HEARTBEAT_MS), for both servers. */
const HEARTBEAT_MS = 15_000;
const MARKER = 'b6-round-';

/** One open client stream; `onRound` is told each round marker it receives, with its receipt time. */
interface ClientStream {
  onRound?: (round: number, at: number) => void;
  close(): void;
}

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

/**
 * Sends a request whose response is an event stream; resolves with the stream and its first body
 * chunk (ours: the replayed `run.started`, written once the stream is subscribed; the peer: its
 * `: open` comment, likewise).
 */
function openStream(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ stream: ClientStream; first: string }> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let opened = false;
    const stream: ClientStream = { close: () => req.destroy() };
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`${url}: no first event within ${OPEN_TIMEOUT_MS} ms`));
    }, OPEN_TIMEOUT_MS);
    const req = http.request(url, { method: options.method ?? 'GET', headers: options.headers, agent }, (res) => {
      if (res.statusCode !== 200) {
        clearTimeout(timer);
        res.resume();
        reject(new Error(`${options.method ?? 'GET'} ${url} answered ${res.statusCode}`));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = performance.now();
        if (!opened) {
          opened = true;
          clearTimeout(timer);
          resolve({ stream, first: chunk });
          return;
        }
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const marker = message.indexOf(MARKER);
          if (marker >= 0) stream.onRound?.(parseInt(message.slice(marker + MARKER.length), 10), at);
        }
      });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      if (!opened) reject(err);
    });
    req.end(options.body);
  });
}

/** Opens `count` streams, `OPENING` at a time; failures are counted by `ctx.fail`. */
async function openMany(ctx: BenchContext, phase: string, count: number, open: (i: number) => Promise<ClientStream>): Promise<ClientStream[]> {
  const streams: ClientStream[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(OPENING, count) }, async () => {
      while (next < count) {
        const i = next++;
        try {
          streams.push(await open(i));
        } catch (err) {
          ctx.fail(phase, err);
        }
      }
    }),
  );
  return streams;
}

/** The server child: started, asked, and stopped. */
class ServerProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    readonly token: string | undefined,
  ) {}

  static start(mode: 'ours' | 'raw', config: StreamServerConfig): Promise<ServerProcess> {
    const child = spawn(process.execPath, ['--expose-gc', '--require', 'tsx/cjs', SERVER_SCRIPT, mode], {
      cwd: ROOT,
      env: { ...process.env, B6_SERVER: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the ${mode} stream server exited (${code}) before it served`)));
      child.once('message', (message: ServerMessage) => {
        if ('ready' in message) resolve(new ServerProcess(child, message.ready.url, message.ready.token));
      });
    });
  }

  memory(): Promise<MemoryReply> {
    return new Promise((resolve) => {
      const listener = (message: ServerMessage) => {
        if (!('memory' in message)) return;
        this.child.off('message', listener);
        resolve(message.memory);
      };
      this.child.on('message', listener);
      this.child.send({ ask: 'memory' });
    });
  }

  /** Waits until the server holds `count` streams (closes reach it asynchronously). */
  async settle(count: number): Promise<MemoryReply> {
    for (let tries = 0; ; tries++) {
      const memory = await this.memory();
      if (memory.streams === count || tries >= 40) return memory;
      await sleep(250);
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

interface Measured {
  opened: number;
  heapKb: number;
  rssKb: number;
  delivery: Latency;
}

/** How one server is driven: where its streams are and how an event reaches them. */
interface Target {
  /** Opens stream `i` of `channels` (ours: runs), `channel` 0 being the delivery phase's. */
  open(channel: number): Promise<ClientStream>;
  publish(round: number): Promise<unknown>;
}

async function measure(ctx: BenchContext, name: string, server: ServerProcess, target: Target, streams: number, channels: number, rounds: number): Promise<Measured> {
  // Warm-up: the stream path compiled and its pools grown before the baseline.
  for (const stream of await openMany(ctx, `B6 ${name} warm-up`, 50, (i) => target.open(i % channels))) stream.close();
  await server.settle(0);
  const before = await server.memory();
  const started = performance.now();
  const open = await openMany(ctx, `B6 ${name} open`, streams, (i) => target.open(i % channels));
  const openMs = performance.now() - started;
  await sleep(1_000);
  const after = await server.settle(open.length);
  const per = (bytes: number) => bytes / Math.max(1, open.length) / 1024;
  const heapKb = per(after.heapUsed + after.external - (before.heapUsed + before.external));
  const rssKb = per(after.rss - before.rss);
  ctx.say(`${name}: ${open.length} of ${streams} streams open in ${(openMs / 1000).toFixed(1)} s (server holds ${after.streams}); heap+external ${((after.heapUsed + after.external) / 2 ** 20).toFixed(1)} MiB (+${heapKb.toFixed(1)} KB/stream), RSS ${(after.rss / 2 ** 20).toFixed(1)} MiB (+${rssKb.toFixed(1)} KB/stream)`);
  for (const stream of open) stream.close();
  await server.settle(0);

  const listeners = await openMany(ctx, `B6 ${name} delivery open`, DELIVERY_STREAMS, () => target.open(0));
  const delivery = new Latency();
  try {
    for (let round = 0; round < rounds; round++) {
      let waiting = listeners.length;
      let done!: () => void;
      const all = new Promise<void>((resolve) => (done = resolve));
      const sent = performance.now();
      for (const stream of listeners) {
        stream.onRound = (got, at) => {
          if (got !== round) return;
          if (round >= WARMUP_ROUNDS) delivery.record(at - sent);
          if (--waiting === 0) done();
        };
      }
      await target.publish(round);
      const timeout = sleep(ROUND_TIMEOUT_MS).then(() => 'timeout' as const);
      if ((await Promise.race([all, timeout])) === 'timeout') {
        ctx.fail(`B6 ${name} delivery`, `round ${round}: ${waiting} of ${listeners.length} streams got no event within ${ROUND_TIMEOUT_MS} ms`);
        break;
      }
      await sleep(20);
    }
  } finally {
    for (const stream of listeners) stream.close();
  }
  ctx.say(`${name}: delivery to ${listeners.length} streams, ${delivery.summary()}`);
  return { opened: open.length, heapKb, rssKb, delivery };
}

function fileLimit(): number {
  try {
    return Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
  } catch {
    return NaN;
  }
}

/** Reads a POST /v1/runs stream up to its run.started, then leaves it: the run stays running (no worker serves this prefix). */
async function startRun(url: string, token: string): Promise<string> {
  const { stream, first } = await openStream(`${url}/v1/runs`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(ONE_NODE),
  });
  stream.close();
  const runId = /"runId":"([0-9a-f-]{36})"/.exec(first)?.[1];
  if (!runId) throw new Error(`POST /v1/runs began without run.started: ${first.slice(0, 200)}`);
  return runId;
}

export const b6: Workload = {
  id: 'B6',
  title: 'open SSE streams on one API process: memory per stream, delivery at 1k streams',
  async run(ctx) {
    const streams = ctx.scale(10_000, 1_000);
    const channels = ctx.scale(100, 10);
    const rounds = WARMUP_ROUNDS + ctx.scale(200, 40);
    const limit = fileLimit();
    // Each process holds one descriptor per stream (clients here, the server in its child); the
    // limit cannot be raised from inside Node, so it is reported.
    ctx.say(`open file limit (ulimit -n): ${limit}${limit < streams + 1_000 ? `: below ${streams} streams + 1,000, expect failed opens` : ''}`);

    const { stack } = ctx;
    await onServer(stack.postgres, `DROP DATABASE IF EXISTS ${DATABASE}`, `CREATE DATABASE ${DATABASE}`);
    const config: StreamServerConfig = {
      stack: { tmpDir: stack.tmpDir, fsync: stack.fsync, redisUrl: stack.redisUrl, postgres: stack.postgres, databaseUrl: databaseUrl(stack.postgres, DATABASE) },
      redisPrefix: REDIS_PREFIX,
      heartbeatMs: HEARTBEAT_MS,
    };
    await applyMigrations({ connectionString: config.stack.databaseUrl });
    const redis = new Redis(stack.redisUrl, { maxRetriesPerRequest: null });
    const progress = (round: number): RunEvent => ({ type: 'step.progress', nodeId: 'sum', message: `${MARKER}${round}` });
    let ours: Measured;
    let raw: Measured;
    try {
      const oursServer = await ServerProcess.start('ours', config);
      try {
        const token = oursServer.token!;
        const runIds: string[] = [];
        for (let i = 0; i < channels; i++) runIds.push(await startRun(oursServer.url, token));
        const bus = new RunEventBus({ redis, prefix: REDIS_PREFIX });
        const headers = { Authorization: `Bearer ${token}` };
        ours = await measure(ctx, 'ours', oursServer, {
          open: async (channel) => (await openStream(`${oursServer.url}/v1/runs/${runIds[channel]}/events`, { headers })).stream,
          publish: (round) => bus.append(runIds[0]!, progress(round)),
        }, streams, channels, rounds);
      } finally {
        await oursServer.stop();
      }
      const rawServer = await ServerProcess.start('raw', config);
      try {
        raw = await measure(ctx, 'raw', rawServer, {
          open: async (channel) => (await openStream(`${rawServer.url}/stream/b6-peer-${channel}`)).stream,
          publish: (round) => redis.publish(`b6-peer-0`, JSON.stringify(progress(round))),
        }, streams, channels, rounds);
      } finally {
        await rawServer.stop();
      }
    } finally {
      redis.disconnect();
    }

    const peer = 'raw node:http + one subscriber';
    const kb = `memory per open stream at ${streams.toLocaleString('en')} streams`;
    const opened = `streams open at once (of ${streams.toLocaleString('en')} asked; ulimit -n ${limit})`;
    return [
      { id: 'B6', figure: `${kb}, server heap used + external`, ours: ours.heapKb, unit: 'KB', kind: 'size', peer: { name: peer, value: raw.heapKb }, goal: atMost('≤ 20 KB', ours.heapKb, 20) },
      { id: 'B6', figure: `${kb}, server RSS`, ours: ours.rssKb, unit: 'KB', kind: 'size', peer: { name: peer, value: raw.rssKb }, goal: atMost('≤ 20 KB', ours.rssKb, 20) },
      { id: 'B6', figure: `${opened}`, ours: ours.opened, unit: 'streams', kind: 'rate', peer: { name: peer, value: raw.opened }, goal: atLeast(ctx.quick ? '≥ 1,000 (quick; 10,000 full)' : '≥ 10,000', ours.opened, streams) },
      { id: 'B6', figure: 'one event → each of 1,000 streams (append to receipt), p50', ours: ours.delivery.percentile(50), unit: 'ms', kind: 'time', peer: { name: peer, value: raw.delivery.percentile(50) } },
      { id: 'B6', figure: 'one event → each of 1,000 streams (append to receipt), p99', ours: ours.delivery.percentile(99), unit: 'ms', kind: 'time', peer: { name: peer, value: raw.delivery.percentile(99) }, goal: atMost('≤ 5 ms', ours.delivery.percentile(99), 5) },
    ];
  },
};
