import { startBenchService, withBenchStack, type BenchService, type BenchServiceOptions, type BenchStack } from '../../support/bench-stack';
import type { Row } from './report';

/**
 * What a workload gets: the one stack of the run (Redis and Postgres shared by ours and the
 * peers), the service started on it (shared; a workload needing other settings starts its own),
 * the run's length, and where to record rows and correctness failures.
 */
export interface BenchContext {
  stack: BenchStack;
  /** `make bench-quick`: shorter phases, same workloads. */
  quick: boolean;
  /** `full` normally, `quick` under bench-quick. */
  scale<T>(full: T, quick: T): T;
  /** The service shared by the workloads (ROLE=all in this process, WORKER_CONCURRENCY 16). */
  service(): Promise<BenchService>;
  /** A service of its own with other settings; closed by the caller. */
  startService(options: BenchServiceOptions): Promise<BenchService>;
  /** Prints a line of progress under the workload's heading. */
  say(text: string): void;
  /** A wrong result (a run that did not complete with its output, a lost job): counted, printed, and the bench exits 1. */
  fail(phase: string, err: unknown): void;
}

/** Runs `work` with a peer started for it, and closes the peer afterwards, whatever happens. */
export async function withPeer<P extends { close(): Promise<void> }, R>(started: Promise<P>, work: (peer: P) => Promise<R>): Promise<R> {
  const peer = await started;
  try {
    return await work(peer);
  } finally {
    await peer.close();
  }
}

/** One workload of the table (B1 … B8). */
export interface Workload {
  id: string;
  title: string;
  run(ctx: BenchContext): Promise<Row[]>;
}

export function benchContext(stack: BenchStack, quick: boolean, failures: Map<string, string[]>): BenchContext & { close(): Promise<void> } {
  let shared: Promise<BenchService> | undefined;
  return {
    stack,
    quick,
    scale: (full, short) => (quick ? short : full),
    service: () => (shared ??= startBenchService(stack, { env: { WORKER_CONCURRENCY: '16' } })),
    startService: (options) => startBenchService(stack, options),
    say: (text) => console.log(`    ${text}`),
    fail(phase, err) {
      const list = failures.get(phase) ?? [];
      list.push(err instanceof Error ? err.message : String(err));
      failures.set(phase, list);
    },
    async close() {
      if (shared) await (await shared).close();
      shared = undefined;
    },
  };
}

/**
 * For the tools beside the suite (`make profile`, `make timeline`): a bench stack and its shared
 * service for `work`, then everything closed, and any wrong result printed.
 */
export async function withBenchService(work: (ctx: BenchContext, service: BenchService) => Promise<void>): Promise<void> {
  const failures = new Map<string, string[]>();
  await withBenchStack(async (stack) => {
    const ctx = benchContext(stack, false, failures);
    try {
      await work(ctx, await ctx.service());
    } finally {
      await ctx.close();
    }
  });
  if (failures.size) console.log('failures:', [...failures.entries()].map(([k, v]) => `${k}: ${v.length} (${v[0]})`).join('; '));
}
