import { defineNode } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';
import { BatchRepository } from '../../services/store';
import { eventually } from '../support/eventually';
import { jsonCall } from '../support/json-api';
import { startTestService, type TestService } from '../support/service';

/**
 * A batch's feed (`svc_feed_batch`) on a real Postgres, through an API-only service (no worker,
 * so no feeder takes a turn but the test's): a row whose run's lone first step is a local node is
 * stored with that step reserved, at the worst case computed for the row when the batch was
 * stored, as a run of POST /v1/runs is (docs/batches.md, How rows run).
 */

/** A local node (it runs inline) whose worst case, and price, is `n` micro-USD. */
const localPriced = defineNode({
  spec: {
    id: 'test-local-priced',
    kind: 'model',
    title: 'Local priced',
    category: 'test',
    description: 'Costs n micro-USD; answers n',
    inputs: ports({ n: connector('INT') }),
    outputs: ports({ n: connector('INT') }),
  },
  inline: true,
  estimate: (inputs) => inputs.n as number,
  price: (inputs) => inputs.n as number,
  async execute(inputs) {
    return { n: inputs.n as number };
  },
});

const workflow = {
  version: 2,
  nodes: [
    { id: 'n', uses: 'input', outputType: 'INT' },
    { id: 'step', uses: 'test-local-priced', inputs: { n: '${n.value}' } },
    { id: 'out', uses: 'output', inputs: { value: '${step.n}' } },
  ],
};

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ nodes: [localPriced], env: { ROLE: 'api' } });
}, 60_000);
afterAll(async () => {
  await service?.close();
});

describe('the feed of a batch whose first step is local', () => {
  it("stores each row's run with its first step reserved under a new token when its worst case fits the row's cap, and leaves the others to their worker", async () => {
    const created = await jsonCall(service.url, 'POST', '/v1/batches', { workflow, rows: [{ n: 10 }, { n: 20 }, { n: 5_000 }], rowMaxCostUsd: 0.001 }, service.account.token);
    expect(created.status).toBe(201);
    const batchId = created.body.id as string;
    const estimates = await service.prisma.batchRow.findMany({ where: { batchId }, orderBy: { row: 'asc' }, select: { firstEstimateMicros: true } });
    expect(estimates.map((r) => Number(r.firstEstimateMicros))).toEqual([10, 20, 5_000]);

    const out = await new BatchRepository(service.database).feed(batchId, 10);
    if ('busy' in out || 'found' in out) throw new Error(`the feed answered ${JSON.stringify(out)}`);
    expect(out.started.map((s) => s.row)).toEqual([1, 2, 3]);
    const [first, second, third] = out.started;
    expect(first!.token).toEqual(expect.any(String));
    expect(second!.token).toEqual(expect.any(String));
    expect(second!.token).not.toBe(first!.token);
    // 5,000 micro-USD does not fit the row's cap of 1,000: its worker reserves it (and refuses it).
    expect(third!.token).toBeNull();

    const stepOf = (runId: string) => service.prisma.step.findFirstOrThrow({ where: { runId, nodeId: 'step' } });
    const runOf = (runId: string) => service.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(await stepOf(first!.run_id)).toMatchObject({ status: 'running', attempt: 1, attemptToken: first!.token, reservedMicros: 10n });
    expect(await runOf(first!.run_id)).toMatchObject({ status: 'running', reservedMicros: 10n, capMicros: 1_000n });
    expect(await stepOf(third!.run_id)).toMatchObject({ status: 'pending', attempt: 0, attemptToken: null, reservedMicros: 0n });
    expect(await runOf(third!.run_id)).toMatchObject({ reservedMicros: 0n });
  });
});

describe("the feed's hold on the organization's balance", () => {
  const org = () => service.account.orgId;
  const orgRow = async () => {
    const { rows } = await service.database.pool.query<{ balance: string; held: string }>('SELECT balance_micros::text AS balance, held_micros::text AS held FROM organizations WHERE id = $1', [org()]);
    return { balance: Number(rows[0]!.balance), held: Number(rows[0]!.held) };
  };
  const batchOf = async (rows: number) => {
    const created = await jsonCall(service.url, 'POST', '/v1/batches', { workflow, rows: Array.from({ length: rows }, () => ({ n: 1 })), rowMaxCostUsd: 0.001 }, service.account.token);
    expect(created.status).toBe(201);
    return created.body.id as string;
  };
  const runsOf = async (batchId: string) => {
    const { rows } = await service.database.pool.query<{ n: string; authorized: string; steps: string }>(
      'SELECT count(*)::text AS n, COALESCE(sum(authorized_micros), 0)::text AS authorized, (SELECT count(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.batch_id = $1)::text AS steps FROM runs WHERE batch_id = $1',
      [batchId],
    );
    return { runs: Number(rows[0]!.n), authorized: Number(rows[0]!.authorized), steps: Number(rows[0]!.steps) };
  };

  it("holds each started row's whole cap on the organization's row", async () => {
    const batchId = await batchOf(5);
    const before = await orgRow();
    const out = await new BatchRepository(service.database).feed(batchId, 10);
    if ('busy' in out || 'found' in out) throw new Error(`the feed answered ${JSON.stringify(out)}`);
    expect(out.started.map((s) => s.row)).toEqual([1, 2, 3, 4, 5]);
    expect(await orgRow()).toEqual({ balance: before.balance, held: before.held + 5_000 });
    expect(await runsOf(batchId)).toEqual({ runs: 5, authorized: 5_000, steps: 5 });
  });

  it('stores the runs one by one, each holding what is left, when the balance fell while the turn stored them; nothing else of the turn is kept', async () => {
    const batchId = await batchOf(5);
    const before = await orgRow();
    // Another transaction takes all but 2,500 micro-USD of the available balance, and commits
    // only once the turn, which read the balance before, waits for the organization's row (the
    // hot path's statements, hot-sql.ts, begin with `SELECT f.out`).
    const other = await service.database.pool.connect();
    let committed = false;
    try {
      await other.query('BEGIN');
      await other.query('UPDATE organizations SET held_micros = held_micros + $2 WHERE id = $1', [org(), before.balance - before.held - 2_500]);
      const turn = new BatchRepository(service.database).feed(batchId, 10);
      await eventually(async () => {
        const { rows } = await service.database.pool.query<{ waiting: string; query: string }>("SELECT wait_event_type AS waiting, query FROM pg_stat_activity WHERE state = 'active'");
        return rows.some((r) => r.waiting === 'Lock' && r.query.startsWith('SELECT f.out'));
      }, { timeoutMs: 10_000, intervalMs: 20 });
      await other.query('COMMIT');
      committed = true;
      const out = await turn;
      if ('busy' in out || 'found' in out) throw new Error(`the feed answered ${JSON.stringify(out)}`);
      // 1,000 + 1,000 + the 500 left: two rows wait for room (a run of their own refused).
      expect(out.started.map((s) => s.row)).toEqual([1, 2, 3]);
      expect(out.pending).toBe(2);
      expect(await runsOf(batchId)).toEqual({ runs: 3, authorized: 2_500, steps: 3 });
      expect((await orgRow()).held).toBe(before.balance);
    } finally {
      if (committed) await other.query('UPDATE organizations SET held_micros = held_micros - $2 WHERE id = $1', [org(), before.balance - before.held - 2_500]).catch(() => undefined);
      else await other.query('ROLLBACK').catch(() => undefined);
      other.release();
    }
  });
});

describe('a batch whose first step is local, run by a worker', () => {
  let worker: TestService;
  beforeAll(async () => {
    worker = await startTestService({ nodes: [localPriced], env: { BATCH_FEED_INTERVAL_MS: '50' } });
  }, 60_000);
  afterAll(async () => {
    await worker?.close();
  });

  it('charges each row what its step cost, once; a row whose worst case passes its cap fails spend_cap_exceeded', async () => {
    const call = (method: string, path: string, body?: unknown) => jsonCall(worker.url, method, path, body, worker.account.token);
    const rows = [{ n: 10 }, { n: 20 }, { n: 5_000 }, { n: 30 }];
    const created = await call('POST', '/v1/batches', { workflow, rows, rowMaxCostUsd: 0.001, concurrency: 2 });
    expect(created.status).toBe(201);
    const done = await eventually(async () => {
      const { body } = await call('GET', `/v1/batches/${created.body.id}`);
      expect(body.status).toBe('completed');
      return body;
    }, { timeoutMs: 30_000 });
    expect(done.rows).toMatchObject({ completed: 3, failed: 1 });
    expect(done.spentUsd).toBeCloseTo(60 / 1e6, 9);
    const failed = (await call('GET', `/v1/batches/${created.body.id}/rows?status=failed`)).body.rows as { row: number; error: { code: string } }[];
    expect(failed.map((r) => [r.row, r.error.code])).toEqual([[3, 'spend_cap_exceeded']]);
    const charged = await worker.prisma.ledgerEntry.aggregate({ _sum: { amountMicros: true }, where: { run: { batchId: created.body.id } } });
    expect(Number(charged._sum.amountMicros)).toBe(-60);
    const held = await worker.prisma.run.aggregate({ _sum: { reservedMicros: true, heldMicros: true }, where: { batchId: created.body.id } });
    expect(Number(held._sum.reservedMicros)).toBe(0);
    expect(Number(held._sum.heldMicros)).toBe(0);
  });
});
