import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { BenchContext } from './context';
import { cpuBetween, stackCpu, type StackCpu } from './process-cpu';
import { Latency } from './latency';

/** `count` sequential calls after `warmup` untimed ones; a call that throws is a failure of `phase`. */
export async function sequential(ctx: BenchContext, phase: string, warmup: number, count: number, once: () => Promise<number>): Promise<Latency> {
  for (let i = 0; i < warmup; i++) await once().catch((err: unknown) => ctx.fail(`${phase} (warm-up)`, err));
  const latency = new Latency();
  for (let i = 0; i < count; i++) {
    try {
      latency.record(await once());
    } catch (err) {
      ctx.fail(phase, err);
    }
  }
  return latency;
}

export interface OpenLoopResult {
  /** Calls started per second (the offered rate, as achieved by the timer). */
  offered: number;
  /** Calls completed per second of the measured window. */
  completed: number;
  /** From each call's scheduled start (so a stall counts for every call it delayed: no coordinated omission). */
  latency: Latency;
  failed: number;
  /** This process' stalls while the calls ran: the longest event loop delay, and garbage collection's longest and total pauses (ms). */
  stalls: { loopMaxMs: number; gcMaxMs: number; gcTotalMs: number };
}

/** Watches this process' event loop delay and GC pauses until `stop` (where a latency tail comes from). */
function watchStalls(): { stop(): OpenLoopResult['stalls'] } {
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let gcMaxMs = 0;
  let gcTotalMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcMaxMs = Math.max(gcMaxMs, entry.duration);
      gcTotalMs += entry.duration;
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      loop.disable();
      gc.disconnect();
      return { loopMaxMs: loop.max / 1e6, gcMaxMs, gcTotalMs };
    },
  };
}

/**
 * Open-loop load: calls started at `rate` per second for `seconds` (after a warm-up of a fifth
 * of that at the same rate, not recorded), whatever the earlier ones are doing; at most
 * `maxInFlight` at once (beyond it a call waits, and its wait counts in its latency).
 */
export async function openLoop(ctx: BenchContext, phase: string, options: { rate: number; seconds: number; maxInFlight?: number }, once: () => Promise<unknown>): Promise<OpenLoopResult> {
  const { rate, seconds } = options;
  const maxInFlight = options.maxInFlight ?? 2000;
  const warmup = Math.max(1, seconds / 5);
  const latency = new Latency();
  let inFlight = 0;
  let failed = 0;
  let measuredDone = 0;
  const pending: Promise<void>[] = [];
  const start = performance.now() + 20;
  const total = Math.round((warmup + seconds) * rate);
  const firstMeasured = Math.round(warmup * rate);
  let measuredEnd = 0;
  let stalls: ReturnType<typeof watchStalls> | undefined;
  for (let i = 0; i < total; i++) {
    if (i === firstMeasured) stalls = watchStalls();
    const scheduled = start + (i * 1000) / rate;
    const wait = scheduled - performance.now();
    if (wait > 1) await sleep(wait);
    while (inFlight >= maxInFlight) await sleep(1);
    const measured = i >= firstMeasured;
    inFlight++;
    pending.push(
      once().then(
        () => {
          const now = performance.now();
          if (measured) {
            latency.record(now - scheduled);
            measuredDone++;
            measuredEnd = Math.max(measuredEnd, now);
          }
        },
        (err: unknown) => {
          if (measured) failed++;
          ctx.fail(measured ? phase : `${phase} (warm-up)`, err);
        },
      ).finally(() => {
        inFlight--;
      }),
    );
  }
  const startedAll = performance.now();
  await Promise.all(pending);
  const measuredStart = start + (firstMeasured * 1000) / rate;
  const watched = stalls?.stop() ?? { loopMaxMs: 0, gcMaxMs: 0, gcTotalMs: 0 };
  return {
    stalls: watched,
    offered: (total - firstMeasured) / ((startedAll - measuredStart) / 1000),
    completed: measuredDone / ((Math.max(measuredEnd, startedAll) - measuredStart) / 1000),
    latency,
    failed,
  };
}

/** Counters of the stack's servers that move when they stall writers: Redis' delayed AOF fsyncs, forks and rewrites; Postgres' checkpoints. */
async function serverCounters(ctx: BenchContext): Promise<Record<string, number>> {
  const redis = new Redis(ctx.stack.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  const client = new pg.Client({ connectionString: ctx.stack.databaseUrl });
  try {
    await redis.connect();
    const info = await redis.info();
    const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    await client.connect();
    const { rows } = await client.query<{ checkpoints: string }>('SELECT checkpoints_timed + checkpoints_req AS checkpoints FROM pg_stat_bgwriter');
    return { aofDelayedFsyncs: field('aof_delayed_fsync'), aofRewrites: field('aof_rewrites'), rdbSaves: field('rdb_saves'), lastForkUs: field('latest_fork_usec'), checkpoints: Number(rows[0]?.checkpoints ?? 0) };
  } finally {
    redis.disconnect();
    await client.end().catch(() => undefined);
  }
}

/** CPU milliseconds per call of this process, Postgres and Redis between two readings, over `calls` calls (warm-up included). */
function cpuPerCall(before: StackCpu, after: StackCpu, calls: number): string {
  const used = cpuBetween(before, after);
  const ms = (seconds: number) => ((seconds * 1000) / Math.max(calls, 1)).toFixed(2);
  return `this process ${ms(used.self)} ms, Postgres ${ms(used.postgres)} ms, Redis ${ms(used.redis)} ms`;
}

/** What moved between two readings of `serverCounters`, in words ('' when nothing did). */
function serverStalls(before: Record<string, number>, after: Record<string, number>): string {
  const moved: string[] = [];
  const delta = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
  if (delta('aofDelayedFsyncs') > 0) moved.push(`Redis delayed ${delta('aofDelayedFsyncs')} AOF fsyncs`);
  if (delta('aofRewrites') > 0 || delta('rdbSaves') > 0) moved.push(`Redis forked (rewrite/save; last fork ${((after.lastForkUs ?? 0) / 1000).toFixed(1)} ms)`);
  if (delta('checkpoints') > 0) moved.push(`Postgres checkpointed ${delta('checkpoints')}×`);
  return moved.join(', ');
}

/**
 * The highest rate (of `rates`, ascending) at which the open loop keeps up, its completions
 * within 5% of the offered rate and its p99 within `p99Ms`; and every step tried, for the report.
 */
export async function sustainedRate(ctx: BenchContext, phase: string, options: { rates: readonly number[]; seconds: number; p99Ms: number }, once: () => Promise<unknown>): Promise<{ best: (OpenLoopResult & { rate: number }) | undefined; tried: (OpenLoopResult & { rate: number })[] }> {
  const tried: (OpenLoopResult & { rate: number })[] = [];
  let best: (OpenLoopResult & { rate: number }) | undefined;
  for (const rate of options.rates) {
    const before = await serverCounters(ctx);
    const cpuBefore = stackCpu(ctx.stack);
    const result = { rate, ...(await openLoop(ctx, `${phase} at ${rate}/s`, { rate, seconds: options.seconds }, once)) };
    const cpu = cpuPerCall(cpuBefore, stackCpu(ctx.stack), Math.round(rate * options.seconds * 1.2));
    const servers = serverStalls(before, await serverCounters(ctx));
    tried.push(result);
    const { loopMaxMs, gcMaxMs, gcTotalMs } = result.stalls;
    ctx.say(`${rate}/s offered: ${result.completed.toFixed(0)}/s completed, latency ${result.latency.summary()}${result.failed ? `, ${result.failed} failed` : ''}; this process: event loop delay max ${loopMaxMs.toFixed(0)} ms, GC max ${gcMaxMs.toFixed(0)} ms (${gcTotalMs.toFixed(0)} ms in all)${servers ? `; ${servers}` : ''}; CPU per call: ${cpu}`);
    const keptUp = result.failed === 0 && result.completed >= rate * 0.95 && result.latency.percentile(99) <= options.p99Ms;
    if (!keptUp) break;
    best = result;
  }
  return { best, tried };
}

/** `clients` loops of `once` for `seconds` after a warm-up of a fifth of that (at least 1 s); completions per second, latency, and this process' CPU per call. */
export async function closedLoop(ctx: BenchContext, phase: string, options: { clients: number; seconds: number }, once: () => Promise<unknown>): Promise<{ perSecond: number; latency: Latency; cpuMicrosPerCall: number }> {
  const loop = async (until: number, latency: Latency | undefined) => {
    while (performance.now() < until) {
      const started = performance.now();
      try {
        await once();
        latency?.record(performance.now() - started);
      } catch (err) {
        ctx.fail(latency ? phase : `${phase} (warm-up)`, err);
      }
    }
  };
  const warmUntil = performance.now() + Math.max(1, options.seconds / 5) * 1000;
  await Promise.all(Array.from({ length: options.clients }, () => loop(warmUntil, undefined)));
  const latency = new Latency();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: options.clients }, () => loop(started + options.seconds * 1000, latency)));
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { perSecond: latency.count / elapsed, latency, cpuMicrosPerCall: (used.user + used.system) / Math.max(latency.count, 1) };
}
