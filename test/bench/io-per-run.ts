/**
 * What a 1-node run costs this process in system calls (`make io-per-run`): after a warm-up,
 * closed loops of `IO_CLIENTS` clients (default 1, 8 and 8 again) for 6 s each on the bench
 * service (ROLE=all in this process, fsync on), each printed with its runs per second, p50, CPU
 * per run, and write and read system calls per run from `/proc/self/io` (the API, the worker and
 * the client together; Linux only). Counts are what moves least with a busy machine
 * (docs/performance.md, How the figures are taken). Then the same loops against the design floor
 * (support/design-floor.ts, in this process too): what the design's least asks of the same
 * machine. Not a *.bench.ts: make bench does not run it.
 */
import fs from 'node:fs';
import { withBenchService, withPeer, type BenchContext } from './support/context';
import { DesignFloor } from './support/design-floor';
import { closedLoop, sequential } from './support/load';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from './support/service-client';

const CLIENTS = (process.env.IO_CLIENTS ?? '1,8,8').split(',').map(Number);
const SECONDS = 6;

/** This process' system calls so far: `syscr` (reads) and `syscw` (writes). */
function systemCalls(): { reads: number; writes: number } {
  const fields = new Map(fs.readFileSync('/proc/self/io', 'utf8').trim().split('\n').map((line) => line.split(': ') as [string, string]));
  return { reads: Number(fields.get('syscr')), writes: Number(fields.get('syscw')) };
}

/** The closed loops of {@link CLIENTS} over `once`, each printed with its system calls per run. */
async function loops(ctx: BenchContext, label: string, once: () => Promise<number>): Promise<void> {
  await sequential(ctx, `${label} warm-up`, 0, 300, once);
  for (const clients of CLIENTS) {
    // Every run between the two readings, the loop's own warm-up included.
    let runs = 0;
    const counted = () => {
      runs++;
      return once();
    };
    const before = systemCalls();
    const result = await closedLoop(ctx, `${label} ${clients} client(s)`, { clients, seconds: SECONDS }, counted);
    const after = systemCalls();
    const per = (n: number) => (n / runs).toFixed(1);
    console.log(`${label}, ${clients} client(s): ${result.perSecond.toFixed(0)} runs/s, p50 ${result.latency.percentile(50).toFixed(2)} ms, CPU ${(result.cpuMicrosPerCall / 1000).toFixed(2)} ms per run, system calls per run: ${per(after.writes - before.writes)} writes, ${per(after.reads - before.reads)} reads`);
  }
}

async function main(): Promise<void> {
  await withBenchService(async (ctx, service) => {
    const body = JSON.stringify(ONE_NODE);
    await loops(ctx, 'ours', () => runOnce(service, body, ONE_NODE_OUTPUTS));
    await withPeer(DesignFloor.forBench(ctx, 'design floor'), (floor) => loops(ctx, 'design floor', () => runOnce(floor, body, ONE_NODE_OUTPUTS)));
  });
}

void main();
