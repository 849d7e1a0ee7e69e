/**
 * The timeline of single 1-node runs (`make timeline`): after a warm-up, `TIMELINE_RUNS`
 * sequential runs of the bench service (ROLE=all in this process, fsync on), each printed as the
 * moments the client sent and received, the HTTP server began and finished the request, and every
 * Postgres statement and Redis command (by name; scripts by their names) began and ended, in milliseconds from the POST.
 * Where B1's latency goes, hop by hop. The medians of the whole run and of each statement close
 * the output. Not a *.bench.ts: make bench does not run it.
 */
import diagnostics from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { dbCalls, type DbCall } from '../../services/platform/call-channels';
import { WAITING_COMMANDS } from '../../services/queue/redis-connection';
import { RedisScript } from '../../services/queue/redis-script';
import { sseMessages } from '../support/sse';
import { withBenchService } from './support/context';
import { sequential } from './support/load';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from './support/service-client';

const RUNS = Number(process.env.TIMELINE_RUNS ?? 5);
/** Runs printed in full (the rest are only counted in the medians). */
const PRINTED = Number(process.env.TIMELINE_PRINTED ?? 3);

const now = () => performance.timeOrigin + performance.now();

/**
 * Every Redis command the service sends (the waiting ones left out, as for metrics), timed from
 * its send to its answer, scripts (`evalsha`) named: BullMQ's by the connection's defined commands
 * (ioredis' `scriptsSet`), ours by their file names (each `RedisScript` notes its SHA as it
 * runs). The prototypes are wrapped before the service makes its connections (each binds
 * `sendCommand` then).
 */
let onRedisCommand: ((name: string, seconds: number) => void) | undefined;
const ourScripts = new Map<string, string>();
const runScript = RedisScript.prototype.run;
RedisScript.prototype.run = function (this: RedisScript, ...args: Parameters<RedisScript['run']>) {
  if (!ourScripts.has(this.sha)) ourScripts.set(this.sha, this.name);
  return runScript.apply(this, args);
};
const sendCommand = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis & { scriptsSet?: Record<string, { sha: string }> }, ...args: Parameters<Redis['sendCommand']>) {
  const [command] = args;
  const listener = onRedisCommand;
  if (listener && !WAITING_COMMANDS.has(command.name.toLowerCase())) {
    const sha = command.name === 'evalsha' ? String(command.args[0]) : '';
    const script = sha ? (ourScripts.get(sha) ?? Object.entries(this.scriptsSet ?? {}).find(([, s]) => s.sha === sha)?.[0] ?? sha.slice(0, 8)) : '';
    const started = performance.now();
    const report = () => listener(script ? `${command.name} ${script}` : command.name, (performance.now() - started) / 1000);
    command.promise.then(report, report);
  }
  return sendCommand.apply(this, args);
} as Redis['sendCommand'];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  await withBenchService(async (ctx, service) => {
    const body = JSON.stringify(ONE_NODE);
    await sequential(ctx, 'warm-up', 0, 300, () => runOnce(service, body, ONE_NODE_OUTPUTS));
    let marks: [number, string][] = [];
    const span = (what: string, seconds: number) => {
      const end = now();
      marks.push([end - seconds * 1000, `${what} …`], [end, `${what} done (${(seconds * 1000).toFixed(2)} ms)`]);
    };
    const onDb = (message: unknown) => span(`pg ${(message as DbCall).operation}`, (message as DbCall).seconds);
    onRedisCommand = (name, seconds) => span(`  redis ${name}`, seconds);
    const onRequest = (message: unknown) => {
      const { request } = message as { request: { method: string; url: string } };
      marks.push([now(), `server: ${request.method} ${request.url}`]);
    };
    const onFinish = () => marks.push([now(), 'server: response finished']);
    dbCalls.subscribe(onDb);
    diagnostics.subscribe('http.server.request.start', onRequest);
    diagnostics.subscribe('http.server.response.finish', onFinish);
    const totals: number[] = [];
    const statements = new Map<string, number[]>();
    try {
      for (let run = 0; run < RUNS; run++) {
        marks = [];
        await sleep(2);
        const t0 = now();
        marks.push([t0, 'client: POST /v1/runs']);
        const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { Authorization: `Bearer ${service.account.token}`, 'Content-Type': 'application/json' }, body });
        marks.push([now(), 'client: headers']);
        for await (const message of sseMessages(res.body!)) marks.push([now(), `client: ${message.data.slice(0, 48)}`]);
        const end = now();
        marks.push([end, 'client: end']);
        // The worker's last commands (the job's completion) finish after the client's end; shorter than
        // the stream slots' release delay (50 ms), as between B1's back-to-back runs.
        await sleep(20);
        totals.push(end - t0);
        const sorted = marks.sort((a, b) => a[0] - b[0]);
        for (const [, what] of sorted) {
          const statement = /^pg (\w+) done \(([\d.]+) ms\)/.exec(what);
          if (statement) statements.set(statement[1]!, [...(statements.get(statement[1]!) ?? []), Number(statement[2])]);
        }
        if (run >= PRINTED) continue;
        console.log(`--- run ${run + 1}`);
        for (const [at, what] of sorted) console.log(`${(at - t0).toFixed(2).padStart(7)}  ${what}`);
      }
    } finally {
      dbCalls.unsubscribe(onDb);
      onRedisCommand = undefined;
      diagnostics.unsubscribe('http.server.request.start', onRequest);
      diagnostics.unsubscribe('http.server.response.finish', onFinish);
    }
    console.log(`POST → end of stream: median ${median(totals).toFixed(2)} ms over ${totals.length} runs`);
    for (const [operation, times] of statements) console.log(`pg ${operation}: median ${median(times).toFixed(2)} ms, ${(times.length / totals.length).toFixed(1)} per run`);
  });
}

void main();
