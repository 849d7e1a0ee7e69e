import { setTimeout as sleep } from 'node:timers/promises';
import { BatchSchema } from '../../services/contract';
import { defineNode } from '../../services/nodes';
import { verifyWebhook } from '../../services/sdk/src/node';
import { connector, ports } from '../../services/nodes/spec-builders';
import { AppError } from '../../services/platform/app-error';
import { eventually } from '../support/eventually';
import { expectValid, jsonCall } from '../support/json-api';
import { webhookReceiver } from '../support/recording-server';
import { bearer, startTestService, type TestService } from '../support/service';
import { sseMessages } from '../support/sse';

/**
 * Batches (docs/batches.md) through the whole service: rows in the body or an uploaded JSON Lines
 * or CSV file, every row checked before anything runs, rows run under the batch's spend cap,
 * progress (record, rows, SSE stream resumable with Last-Event-ID), the results file, cancel,
 * retry of the failed rows, the end's webhook.
 */

/** What one row costs: each run of `test-priced` is charged this. */
const PRICE = 1_000;

const pricedNode = defineNode({
  spec: {
    id: 'test-priced',
    kind: 'model',
    title: 'Priced',
    category: 'test',
    description: 'Costs 0.001 USD; waits `ms`; fails when `fail` is true; answers `n` times two',
    inputs: ports({ n: connector('INT'), ms: connector('INT', { defaultValue: 0 }), fail: connector('BOOLEAN', { defaultValue: false }) }),
    outputs: ports({ doubled: connector('INT') }),
  },
  estimate: () => PRICE,
  price: () => PRICE,
  async execute(inputs, ctx) {
    await sleep(inputs.ms as number, undefined, { signal: ctx.signal });
    if (inputs.fail === true) throw new AppError({ code: 'bad_request', message: `row with n=${inputs.n as number} fails on purpose` });
    return { doubled: (inputs.n as number) * 2 };
  },
});

/** A workflow of one priced step: inputs n (required), ms and fail (optional); output `doubled`. */
const doubler = {
  version: 2,
  nodes: [
    { id: 'n', uses: 'input', outputType: 'INT' },
    { id: 'ms', uses: 'input', outputType: 'INT', inputs: { default: 0 } },
    { id: 'fail', uses: 'input', outputType: 'BOOLEAN', inputs: { default: false } },
    { id: 'step', uses: 'test-priced', inputs: { n: '${n.value}', ms: '${ms.value}', fail: '${fail.value}' } },
    { id: 'doubled', uses: 'output', inputs: { value: '${step.doubled}' } },
  ],
};

let service: TestService;
/** A webhook receiver: `receiver.received` is what it was sent. */
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;

beforeAll(async () => {
  receiver = await webhookReceiver();
  service = await startTestService({ nodes: [pricedNode], env: { BATCH_FEED_INTERVAL_MS: '50', BATCH_STREAM_POLL_MS: '50', FETCH_ALLOW_PRIVATE: `127.0.0.1:${receiver.port}` } });
}, 60_000);
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

const call = (method: string, path: string, body?: unknown) => jsonCall(service.url, method, path, body, service.account.token);

async function finished(id: string) {
  return eventually(async () => {
    const { status, body } = await call('GET', `/v1/batches/${id}`);
    expect(status).toBe(200);
    expect(['completed', 'cancelled']).toContain(body.status);
    return body;
  }, { timeoutMs: 30_000 });
}

describe('batches.create with rows in the body', () => {
  it('runs every row once and settles each against the batch cap', async () => {
    const rows = Array.from({ length: 25 }, (_, i) => ({ n: i + 1 }));
    const created = await call('POST', '/v1/batches', { workflow: doubler, rows, concurrency: 5 });
    expect(created.status).toBe(201);
    expectValid(BatchSchema, created.body);
    expect(created.body.rows.total).toBe(25);
    expect(created.body.maxCostUsd).toBe(12.5); // 25 rows × the default row cap, 0.50
    const done = await finished(created.body.id);
    expectValid(BatchSchema, done);
    expect(done.status).toBe('completed');
    expect(done.rows).toEqual({ total: 25, pending: 0, running: 0, completed: 25, failed: 0, cancelled: 0, skipped: 0 });
    expect(done.spentUsd).toBeCloseTo(25 * PRICE / 1e6, 9);
    expect(done.heldUsd).toBe(0);
    expect(done.finishedAt).not.toBeNull();

    const page = await call('GET', `/v1/batches/${created.body.id}/rows?limit=10`);
    expect(page.status).toBe(200);
    expect(page.body.rows.map((r: { row: number }) => r.row)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(page.body.rows[2]).toMatchObject({ row: 3, status: 'completed', attempts: 1, costUsd: 0.001, outputs: { doubled: { kind: 'int', value: 6 } } });
    const run = await call('GET', `/v1/runs/${page.body.rows[2].runId}`);
    expect(run.body.status).toBe('completed');
    const next = await call('GET', `/v1/batches/${created.body.id}/rows?limit=10&cursor=${page.body.nextCursor}`);
    expect(next.body.rows[0].row).toBe(11);

    // The ledger: every row's run charged once, the batch's spend exactly their sum.
    const charged = await service.prisma.ledgerEntry.aggregate({ _sum: { amountMicros: true }, where: { run: { batchId: created.body.id } } });
    expect(Number(charged._sum.amountMicros)).toBe(-25 * PRICE);
  });

  it('never spends past the batch cap: rows left when it is spent fail unstarted', async () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ n: i }));
    // Room for 4 rows at a row cap of 0.001 each.
    const created = await call('POST', '/v1/batches', { workflow: doubler, rows, concurrency: 3, maxCostUsd: 0.004, rowMaxCostUsd: 0.001 });
    expect(created.status).toBe(201);
    const done = await finished(created.body.id);
    expect(done.rows.completed).toBe(4);
    expect(done.rows.failed).toBe(6);
    expect(done.spentUsd).toBeCloseTo(0.004, 9);
    expect(done.stopReason.code).toBe('spend_cap_exceeded');
    const failed = await call('GET', `/v1/batches/${created.body.id}/rows?status=failed`);
    expect(failed.body.rows).toHaveLength(6);
    expect(failed.body.rows[0].error.code).toBe('spend_cap_exceeded');
    expect(failed.body.rows[0].runId).toBeNull();

    // Retried with a larger cap: only the six failed rows run, and only they are paid for.
    const retried = await call('POST', `/v1/batches/${created.body.id}/retry`, { maxCostUsd: 0.02 });
    expect(retried.status).toBe(200);
    expect(retried.body.attempt).toBe(2);
    const again = await finished(created.body.id);
    expect(again.rows).toMatchObject({ completed: 10, failed: 0 });
    expect(again.spentUsd).toBeCloseTo(0.01, 9);
    const charged = await service.prisma.ledgerEntry.aggregate({ _sum: { amountMicros: true }, where: { run: { batchId: created.body.id } } });
    expect(Number(charged._sum.amountMicros)).toBe(-10 * PRICE);
  });

  it('starts no row after one that stopped at what the cap had left: the rest fail unstarted, not one run each', async () => {
    // Rows of a 0.002 cap under a 0.0045 batch cap: four fit (0.001 each), the fifth starts with
    // the 0.0005 left, below its worst case, and stops at it; no row starts after it.
    const rows = Array.from({ length: 10 }, (_, i) => ({ n: i + 1 }));
    const created = await call('POST', '/v1/batches', { workflow: doubler, rows, concurrency: 1, rowMaxCostUsd: 0.002, maxCostUsd: 0.0045 });
    expect(created.status).toBe(201);
    const done = await finished(created.body.id);
    expect(done.rows).toMatchObject({ completed: 4, failed: 6 });
    expect(done.spentUsd).toBeCloseTo(0.004, 9);
    expect(done.stopReason).toMatchObject({ code: 'spend_cap_exceeded', message: expect.stringContaining("no room left for a row's worst case") });
    const failed = (await call('GET', `/v1/batches/${created.body.id}/rows?status=failed`)).body.rows as { row: number; runId: string | null; error: { code: string } }[];
    expect(failed.map((r) => [r.row, r.runId !== null, r.error.code])).toEqual([
      [5, true, 'spend_cap_exceeded'],
      ...[6, 7, 8, 9, 10].map((row) => [row, false, 'spend_cap_exceeded']),
    ]);
    expect(await service.prisma.run.count({ where: { batchId: created.body.id } })).toBe(5);
  });

  it('refuses bad rows by number and field, storing nothing; skipBadRows runs the others and lists them', async () => {
    const rows = [{ n: 1 }, { n: 'two' }, { m: 3 }, { n: 4 }];
    const before = await service.prisma.batch.count();
    const refused = await call('POST', '/v1/batches', { workflow: doubler, rows });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('validation_failed');
    expect(refused.body.error).toMatch(/^3 of 4 rows are invalid|^2 of 4 rows are invalid/);
    expect(refused.body.error).toContain('row 2 (n)');
    expect(refused.body.error).toContain('row 3 (m)');
    expect(refused.body.rows).toEqual(expect.arrayContaining([expect.objectContaining({ row: 2, field: 'n' }), expect.objectContaining({ row: 3, field: 'm' })]));
    expect(await service.prisma.batch.count()).toBe(before);

    const skipping = await call('POST', '/v1/batches', { workflow: doubler, rows, skipBadRows: true });
    expect(skipping.status).toBe(201);
    expect(skipping.body.rows.total).toBe(2);
    expect(skipping.body.rows.skipped).toBe(2);
    expect(skipping.body.skippedRows.map((p: { row: number }) => p.row)).toEqual(expect.arrayContaining([2, 3]));
    const done = await finished(skipping.body.id);
    const page = await call('GET', `/v1/batches/${skipping.body.id}/rows`);
    // Rows keep their numbers in the caller's file.
    expect(page.body.rows.map((r: { row: number }) => r.row)).toEqual([1, 4]);
    expect(done.rows.completed).toBe(2);
  });

  it('answers 400 for a malformed request, 404 for an unknown workflowRef', async () => {
    expect((await call('POST', '/v1/batches', { workflow: doubler })).status).toBe(400);
    expect((await call('POST', '/v1/batches', { workflow: doubler, rows: [{ n: 1 }], rowsFile: 'http://x/y' })).status).toBe(400);
    expect((await call('POST', '/v1/batches', { workflow: doubler, rows: [{ n: 1 }], extra: 1 })).status).toBe(400);
    expect((await call('POST', '/v1/batches', { workflow: doubler, rows: [] })).status).toBe(400);
    const missing = await call('POST', '/v1/batches', { workflowRef: 'nobody/nothing@1.0.0', rows: [{ n: 1 }] });
    expect(missing.status).toBe(404);
    const notMine = await call('POST', '/v1/batches', { workflow: doubler, rowsFile: `${service.url}/blobs/uploads/00000000-0000-0000-0000-000000000000/x/rows.txt?expires=1&signature=x` });
    expect(notMine.status).toBe(400);
    expect(notMine.body.error).toContain('uploads');
    expect((await call('GET', '/v1/batches/not-a-batch')).status).toBe(404);
  });
});

describe('rows files', () => {
  async function upload(text: string, filename: string): Promise<string> {
    const res = await fetch(`${service.url}/v1/uploads?filename=${filename}`, { method: 'POST', headers: bearer(service.account.token), body: text });
    expect(res.status).toBe(201);
    return ((await res.json()) as { ref: string }).ref;
  }

  it('takes JSON Lines and CSV uploads, reading CSV cells by each input\'s type', async () => {
    const jsonl = await upload('{"n": 1}\n\n{"n": {"value": 2}}\n{"n": 3, "ms": 1}\n', 'rows.jsonl');
    const fromJsonl = await call('POST', '/v1/batches', { workflow: doubler, rowsFile: jsonl });
    expect(fromJsonl.status).toBe(201);
    expect(fromJsonl.body.rows.total).toBe(3);
    const csv = await upload('n,ms,fail\n5,0,false\n6,,\n"7",1,FALSE\n', 'rows.csv');
    const fromCsv = await call('POST', '/v1/batches', { workflow: doubler, rowsFile: csv, rowsFormat: 'csv' });
    expect(fromCsv.status).toBe(201);
    const done = await finished(fromCsv.body.id);
    expect(done.rows.completed).toBe(3);
    const rows = await call('GET', `/v1/batches/${fromCsv.body.id}/rows`);
    expect(rows.body.rows.map((r: { outputs: { doubled: { value: number } } }) => r.outputs.doubled.value)).toEqual([10, 12, 14]);
    await finished(fromJsonl.body.id);
  });

  it('refuses a file that is neither, and names the line that does not parse', async () => {
    const broken = await upload('{"n": 1}\n{"n": \n', 'rows.jsonl');
    const refused = await call('POST', '/v1/batches', { workflow: doubler, rowsFile: broken });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/row 2: line 2 is not JSON/);
    const ragged = await upload('n,ms\n1,2,3\n', 'rows.csv');
    const notCsv = await call('POST', '/v1/batches', { workflow: doubler, rowsFile: ragged });
    expect(notCsv.status).toBe(400);
    expect(notCsv.body.error).toContain('neither JSON Lines');
  });
});

describe('following a batch', () => {
  it('streams each row as it ends, snapshots, then batch.ended and [DONE]; Last-Event-ID resumes', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => ({ n: i, ms: 20 }));
    const created = await call('POST', '/v1/batches', { workflow: doubler, rows, concurrency: 2 });
    const res = await fetch(`${service.url}/v1/batches/${created.body.id}/events`, { headers: bearer(service.account.token) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const seen: { id: string | undefined; data: string }[] = [];
    for await (const message of sseMessages(res.body!)) seen.push({ id: message.id, data: message.data });
    expect(seen.at(-1)!.data).toBe('[DONE]');
    const events = seen.slice(0, -1).map((m) => ({ id: m.id, event: JSON.parse(m.data) }));
    const rowEvents = events.filter((e) => e.event.type === 'batch.row');
    expect(rowEvents.map((e) => e.event.row).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(rowEvents.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(events.at(-1)!.event.type).toBe('batch.ended');
    expect(events.at(-1)!.event.batch.rows.completed).toBe(6);

    const resumed = await fetch(`${service.url}/v1/batches/${created.body.id}/events`, { headers: { ...bearer(service.account.token), 'Last-Event-ID': '4' } });
    const again: string[] = [];
    for await (const message of sseMessages(resumed.body!)) again.push(message.data);
    const types = again.slice(0, -1).map((d) => JSON.parse(d) as { type: string; row?: number });
    expect(types.filter((e) => e.type === 'batch.row').map((e) => e.row)).toHaveLength(2);
    expect(types.at(-1)!.type).toBe('batch.ended');
  });

  it('serves the results file as JSON Lines and CSV through a signed link', async () => {
    const rows = [{ n: 1 }, { n: 2, fail: true }, { n: 3 }];
    const created = await call('POST', '/v1/batches', { workflow: doubler, rows });
    await finished(created.body.id);
    const link = await call('GET', `/v1/batches/${created.body.id}/results`);
    expect(link.status).toBe(200);
    expect(link.body).toMatchObject({ format: 'jsonl', rowsEnded: 3, complete: true });
    const jsonl = await fetch(link.body.url);
    expect(jsonl.status).toBe(200);
    const lines = (await jsonl.text()).trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((l) => [l.row, l.status])).toEqual([[1, 'completed'], [2, 'failed'], [3, 'completed']]);
    expect(lines[1].error.message).toContain('fails on purpose');
    expect(lines[0].outputs.doubled.value).toBe(2);

    const csvLink = await call('GET', `/v1/batches/${created.body.id}/results?format=csv`);
    const csv = await (await fetch(csvLink.body.url)).text();
    const [header, first] = csv.trim().split('\n');
    expect(header).toBe('row,status,run_id,cost_usd,error_code,error_message,doubled');
    expect(first).toMatch(/^1,completed,[0-9a-f-]{36},0\.001,,,2$/);

    const forged = await fetch(link.body.url.replace(/signature=[^&]+/, 'signature=forged'));
    expect(forged.status).toBe(403);
  });
});

describe("the batch's end webhook", () => {
  it('POSTs batch.ended once, signed with the organization\'s secret, and records it delivered', async () => {
    const created = await fetch(`${service.url}/v1/batches`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Webhook-Url': `${receiver.url}/batches` },
      body: JSON.stringify({ workflow: doubler, rows: [{ n: 1 }, { n: 2 }, { n: 3, fail: true }] }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const done = await finished(id);
    expect(done.webhook).toMatchObject({ url: `${receiver.url}/batches`, state: 'pending' });
    await service.runtime.batchWebhooks!.sweep();
    const mine = receiver.received.filter((r) => JSON.parse(r.body).data?.batchId === id);
    expect(mine).toHaveLength(1);
    const message = JSON.parse(mine[0]!.body);
    expect(message).toMatchObject({ type: 'batch.ended', data: { batchId: id, batch: { id, status: 'completed', rows: { completed: 2, failed: 1 } } } });
    expect(mine[0]!.headers['webhook-id']).toBe(`msg_batch_${id}_1`);
    const secret = (await call('GET', '/v1/webhooks/secret')).body.secret as string;
    // Signed with the organization's secret: the SDK's verifier accepts it.
    expect(() => verifyWebhook(secret, mine[0]!.headers, mine[0]!.body)).not.toThrow();
    expect((await call('GET', `/v1/batches/${id}`)).body.webhook).toMatchObject({ state: 'delivered', attempts: 1 });
    // Delivered: a later sweep sends nothing more.
    await service.runtime.batchWebhooks!.sweep();
    expect(receiver.received.filter((r) => JSON.parse(r.body).data?.batchId === id)).toHaveLength(1);
  });
});

describe('cancel', () => {
  it('cancels rows in flight, never starts the rest, and ends cancelled', async () => {
    const rows = Array.from({ length: 20 }, (_, i) => ({ n: i, ms: 2_000 }));
    const created = await call('POST', '/v1/batches', { workflow: doubler, rows, concurrency: 2 });
    await eventually(async () => {
      const { body } = await call('GET', `/v1/batches/${created.body.id}`);
      expect(body).toMatchObject({ rows: { running: 2 } });
      return true;
    }, { timeoutMs: 10_000 });
    const cancelled = await call('POST', `/v1/batches/${created.body.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(['cancelling', 'cancelled']).toContain(cancelled.body.status);
    const done = await finished(created.body.id);
    expect(done.status).toBe('cancelled');
    expect(done.rows.cancelled).toBe(20);
    expect(done.stopReason.code).toBe('cancelled');
    expect(done.heldUsd).toBe(0);
    const runs = await service.prisma.run.count({ where: { batchId: created.body.id } });
    expect(runs).toBe(2);
    // Cancelling again is harmless.
    expect((await call('POST', `/v1/batches/${created.body.id}/cancel`)).body.status).toBe('cancelled');
  });
});

describe('idempotency and listing', () => {
  it('answers the same batch for the same key and request; 422 for another request', async () => {
    const headers = { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Idempotency-Key': 'batch-key-1' };
    const body = JSON.stringify({ workflow: doubler, rows: [{ n: 1 }] });
    const first = await fetch(`${service.url}/v1/batches`, { method: 'POST', headers, body });
    const second = await fetch(`${service.url}/v1/batches`, { method: 'POST', headers, body });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    const [a, b] = (await Promise.all([first.json(), second.json()])) as { id: string }[];
    expect(b!.id).toBe(a!.id);
    const other = await fetch(`${service.url}/v1/batches`, { method: 'POST', headers, body: JSON.stringify({ workflow: doubler, rows: [{ n: 2 }] }) });
    expect(other.status).toBe(422);
    const list = await call('GET', '/v1/batches?limit=2');
    expect(list.status).toBe(200);
    expect(list.body.batches).toHaveLength(2);
    expect(list.body.nextCursor).not.toBeNull();
    await finished(a!.id);
  });
});
