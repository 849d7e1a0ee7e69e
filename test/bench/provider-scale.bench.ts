/**
 * Provider work at scale (B11–B13): steps that wait seconds on a hosted provider, run by worker
 * processes of their own against a local OpenAI-compatible fake that answers after 2 s. B11: how
 * many one worker holds in flight, what each costs it in memory and CPU, and what it adds to the
 * call; B12: two workers sharing one provider budget (PROVIDER_LIMITS); B13: a 429 storm, and that
 * no refused call is charged. The stack is the suite's (Postgres fsync on, Redis AOF);
 * docs/performance.md says how to read the figures.
 *
 * Environment: PROVIDER_BENCH_ONLY=B11,B13 (a subset), PROVIDER_BENCH_STEPS (steps per workload,
 * default 2000; 200 is a quick run), BENCH_SERVICE_ENV (settings of every service process, over
 * the bench's: "WORKER_CONCURRENCY=1000"), BENCH_FSYNC=off, BENCH_JSON (where the rows go;
 * default .test-artifacts/bench.json, whose rows of other workloads are kept).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withBenchStack } from '../support/bench-stack';
import { b11 } from './provider-scale/b11-in-flight';
import { b12 } from './provider-scale/b12-shared-limit';
import { b13 } from './provider-scale/b13-retry-storm';
import { benchContext, type Workload } from './support/context';
import { closingReport, table, type Row } from './support/report';

const ONLY = new Set((process.env.PROVIDER_BENCH_ONLY ?? '').split(',').map((s) => s.trim().toUpperCase()).filter(Boolean));
const STEPS = Math.max(1, Number(process.env.PROVIDER_BENCH_STEPS ?? 2000) || 2000);
const JSON_FILE = process.env.BENCH_JSON ?? path.join(__dirname, '..', '..', '.test-artifacts', 'bench.json');

/** Writes `rows` into the JSON file beside the rows of the other workloads a run of the suite left there. */
function writeRows(rows: Row[], machine: string): void {
  const ids = new Set(rows.map((r) => r.id));
  let kept: Row[] = [];
  try {
    kept = (JSON.parse(fs.readFileSync(JSON_FILE, 'utf8')) as { rows?: Row[] }).rows?.filter((r) => !ids.has(r.id)) ?? [];
  } catch {
    // No file yet, or not ours: start afresh.
  }
  fs.mkdirSync(path.dirname(JSON_FILE), { recursive: true });
  fs.writeFileSync(JSON_FILE, JSON.stringify({ at: new Date().toISOString(), machine: [machine], providerSteps: STEPS, rows: [...kept, ...rows] }, null, 2));
}

async function main(): Promise<number> {
  const workloads: Workload[] = [b11(STEPS), b12(STEPS), b13(STEPS)].filter((w) => ONLY.size === 0 || ONLY.has(w.id));
  const cpus = os.cpus();
  const machine = `machine: ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? 'unknown model'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  console.log(machine);
  const failures = new Map<string, string[]>();
  const rows: Row[] = [];
  const started = Date.now();
  await withBenchStack(async (stack) => {
    console.log(`stack: Postgres ${stack.fsync ? 'fsync ON' : 'fsync OFF'}; ${STEPS} steps per workload; API and workers in processes of their own${process.env.BENCH_SERVICE_ENV ? `; BENCH_SERVICE_ENV ${process.env.BENCH_SERVICE_ENV}` : ''}`);
    const ctx = benchContext(stack, false, failures);
    try {
      for (const workload of workloads) {
        console.log(`\n${workload.id}  ${workload.title}`);
        try {
          rows.push(...(await workload.run(ctx)));
        } catch (err) {
          ctx.fail(`${workload.id} (aborted)`, err);
          console.log(`    aborted: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        }
      }
    } finally {
      await ctx.close();
    }
  });
  console.log(`\nsummary (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  console.log(table(rows));
  writeRows(rows, machine);
  return closingReport(rows, failures, 'correctness: every run completed, every charge matched the answered calls');
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
