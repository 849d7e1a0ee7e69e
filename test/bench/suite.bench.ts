/**
 * The performance suite: each workload against our service and, in the same run on the
 * same Redis and Postgres, against its peer; one table at the end with both figures, the ratio
 * (how many times worse ours is; lower is better) and the goal. Postgres runs with fsync on and
 * Redis with its AOF unless BENCH_FSYNC=off. Percentiles come from HdrHistograms; warm-ups are not
 * recorded; throughput is measured open-loop. docs/performance.md says how to read it.
 *
 * Environment: BENCH_QUICK=1 (make bench-quick: shorter phases), BENCH_ONLY=B1,B4 (a subset),
 * BENCH_FSYNC=off, BENCH_JSON (where the rows are written; default .test-artifacts/bench.json).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withBenchStack } from '../support/bench-stack';
import { benchContext, type Workload } from './support/context';
import type { Row } from './support/report';
import { closingReport, ratioOf, table } from './support/report';
import { installedVersion } from './support/versions';
import { WORKLOADS } from './workloads';

const QUICK = process.env.BENCH_QUICK === '1';
const ONLY = new Set((process.env.BENCH_ONLY ?? '').split(',').map((s) => s.trim().toUpperCase()).filter(Boolean));
const JSON_FILE = process.env.BENCH_JSON ?? path.join(__dirname, '..', '..', '.test-artifacts', 'bench.json');

function versionOf(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8' }).trim().split('\n')[0]!;
  } catch {
    return `${command}: unknown`;
  }
}

function machine(): string[] {
  const cpus = os.cpus();
  return [
    `machine: ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? 'unknown model'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}`,
    `versions: Node ${process.version}; ${versionOf('redis-server', ['--version'])}; ${versionOf('postgres', ['--version'])}; bullmq ${installedVersion('bullmq')}; @dbos-inc/dbos-sdk ${installedVersion('@dbos-inc/dbos-sdk')}`,
  ];
}

async function main(): Promise<number> {
  const workloads: Workload[] = WORKLOADS.filter((w) => ONLY.size === 0 || ONLY.has(w.id));
  const facts = machine();
  for (const line of facts) console.log(line);
  const failures = new Map<string, string[]>();
  const rows: Row[] = [];
  const started = Date.now();
  await withBenchStack(async (stack) => {
    console.log(`stack: Postgres ${stack.fsync ? 'fsync ON, synchronous_commit on' : 'fsync OFF (BENCH_FSYNC=off)'}; Redis ${stack.fsync ? 'AOF everysec' : 'no persistence'}; ${QUICK ? 'quick' : 'full'} run; service: ROLE=all in this process, LOG_LEVEL=silent, fs blobs${process.env.BENCH_SERVICE_ENV ? `; BENCH_SERVICE_ENV ${process.env.BENCH_SERVICE_ENV}` : ''}`);
    const ctx = benchContext(stack, QUICK, failures);
    try {
      for (const workload of workloads) {
        console.log(`\n${workload.id}  ${workload.title}`);
        try {
          const produced = await workload.run(ctx);
          rows.push(...produced);
          for (const row of produced) console.log(`    → ${row.figure}: ours ${row.ours.toFixed(2)} ${row.unit}${row.peer ? `, ${row.peer.name} ${row.peer.value.toFixed(2)} ${row.unit} (${ratioOf(row).toFixed(2)}×)` : ''}`);
        } catch (err) {
          ctx.fail(`${workload.id} (aborted)`, err);
          console.log(`    aborted: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        }
      }
    } finally {
      await ctx.close();
    }
  });
  console.log(`\nsummary (${((Date.now() - started) / 1000).toFixed(0)} s; ratio = how many times worse ours is, lower is better)`);
  console.log(table(rows));
  fs.mkdirSync(path.dirname(JSON_FILE), { recursive: true });
  fs.writeFileSync(JSON_FILE, JSON.stringify({ at: new Date().toISOString(), quick: QUICK, machine: facts, rows }, null, 2));
  return closingReport(rows, failures, 'correctness: every run and every peer job completed with its expected result');
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
