import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { DBOS } from '@dbos-inc/dbos-sdk';
import type { BenchStack } from '../../support/bench-stack';
import { databaseUrl, onServer } from '../../support/database';
import { installedVersion } from './versions';

/** The peer's system database, a database of its own on the bench's Postgres server. */
const SYSTEM_DATABASE = 'svc_bench_dbos_sys';
const DBOS_VERSION = installedVersion('@dbos-inc/dbos-sdk');

/** The step both workflows checkpoint: DBOS writes its result to `operation_outputs` before the workflow goes on. */
async function add(a: number, b: number): Promise<number> {
  return a + b;
}

type Workflows = { oneStep: () => Promise<number>; chain: (n: number) => Promise<number> };

/**
 * Registered once per process: DBOS keeps its registry across shutdown and refuses registrations
 * while launched, so a second start() reuses these wrappers.
 */
let workflows: Workflows | undefined;

function registerWorkflows(): Workflows {
  if (workflows) return workflows;
  const addStep = DBOS.registerStep(add, { name: 'benchAdd' });
  const oneStep = DBOS.registerWorkflow(async () => addStep(1, 2), { name: 'benchOneStep' });
  const chain = DBOS.registerWorkflow(
    async (n: number) => {
      let value = await addStep(1, 1);
      for (let i = 1; i < n; i++) value = await addStep(value, 1);
      return value;
    },
    { name: 'benchChain' },
  );
  workflows = { oneStep, chain };
  return workflows;
}

/**
 * The peer "DBOS Transact": the library in this process with its system database on the same
 * Postgres server as ours; each workflow is started with a fresh id and awaited through its
 * handle. Durability is kept as DBOS ships it: the workflow's status row, each step's output and
 * the workflow's result are written (and, with fsync on, flushed) before getResult resolves.
 *
 * What the comparison does not pay for: log level `warn` (no per-workflow info lines); no
 * tracing and no OTLP export (`tracingEnabled`/`enableOTLP` false, their defaults outside DBOS
 * Cloud, stated so an environment cannot turn them on); no Conductor (launch gets no key); no
 * idle-in-transaction timeout set per connection (see start()). 5.x has no admin server
 * (`runAdminServer` is ignored), so there is nothing to turn off there. Its pool (10
 * connections) and LISTEN/NOTIFY stay at their defaults. Many oneStep/chain calls may run at once.
 */
export class DbosPeer {
  readonly version = `@dbos-inc/dbos-sdk ${DBOS_VERSION}`;

  private constructor(private readonly workflows: Workflows) {}

  static async start(options: { stack: BenchStack }): Promise<DbosPeer> {
    if (DBOS.isInitialized()) throw new Error('DBOS is already launched in this process: close the other DbosPeer first');
    const registered = registerWorkflows();
    // A fresh system database, so launch recovers nothing left PENDING by an earlier start in this run.
    await onServer(options.stack.postgres, `DROP DATABASE IF EXISTS ${SYSTEM_DATABASE} WITH (FORCE)`);
    DBOS.setConfig({
      name: 'svc-bench-dbos',
      // DBOS creates and migrates it on launch.
      systemDatabaseUrl: databaseUrl(options.stack.postgres, SYSTEM_DATABASE),
      logLevel: 'warn',
      tracingEnabled: false,
      enableOTLP: false,
      // Its default (60 s) is set by a query queued on each new pool connection, which pg 8.23
      // reports with a DeprecationWarning on stderr; the bench never leaves a transaction idle.
      systemDatabaseIdleTransactionTimeoutMs: 0,
    });
    await DBOS.launch();
    return new DbosPeer(registered);
  }

  /** One workflow of one step (1 + 2), started and awaited; resolves to its milliseconds. */
  async oneStep(): Promise<number> {
    const workflowID = `one_${randomUUID()}`;
    const started = performance.now();
    const handle = await DBOS.startWorkflow(this.workflows.oneStep, { workflowID })();
    const result = await handle.getResult();
    const elapsed = performance.now() - started;
    if (result !== 3) throw new Error(`dbos workflow ${workflowID}: result ${String(result)}, expected 3`);
    return elapsed;
  }

  /** One workflow of `n` sequential steps (1 + 1, then + 1 each), awaited; resolves to its milliseconds. */
  async chain(n: number): Promise<number> {
    if (!Number.isInteger(n) || n < 1) throw new Error(`chain length must be a positive integer, got ${n}`);
    const workflowID = `chain_${randomUUID()}`;
    const started = performance.now();
    const handle = await DBOS.startWorkflow(this.workflows.chain, { workflowID })(n);
    const result = await handle.getResult();
    const elapsed = performance.now() - started;
    if (result !== n + 1) throw new Error(`dbos chain ${workflowID}: result ${String(result)}, expected ${n + 1}`);
    return elapsed;
  }

  /** Shuts DBOS down (its pools and background loops); registrations stay for a later start(). */
  async close(): Promise<void> {
    await DBOS.shutdown();
  }
}
