import fs from 'node:fs';
import path from 'node:path';
import type { Workflow } from '../../services/contract';
import { Client, createBatch, getBatch, InvalidInputError } from '../../services/sdk/src/index';
import { ensureCliBuilt } from '../support/cli-build';
import { CliHome } from '../support/cli-process';
import { eventually } from '../support/eventually';
import { startTestService, type TestService } from '../support/service';
import { pauseNode } from '../support/test-nodes';

/**
 * Batches through the SDK (`createBatch`: progress as an async iterable, results, cancel, retry)
 * and the CLI (`svc batch … --rows`: progress, --json, --detach, --attach, Ctrl-C detaches).
 */

/** n → n + 1 after `ms`: one free step per row. */
const plusOne: Workflow = {
  version: 2,
  nodes: [
    { id: 'n', uses: 'input', outputType: 'INT' },
    { id: 'ms', uses: 'input', outputType: 'INT', inputs: { default: 0 } },
    { id: 'p', uses: 'test-pause', inputs: { n: '${n.value}', ms: '${ms.value}' } },
    { id: 'next', uses: 'output', inputs: { value: '${p.n}' } },
  ],
};

let service: TestService;
let client: Client;
let home: CliHome;

beforeAll(async () => {
  ensureCliBuilt();
  service = await startTestService({ nodes: [pauseNode], env: { BATCH_FEED_INTERVAL_MS: '50', BATCH_STREAM_POLL_MS: '50' } });
  client = new Client({ apiKey: service.account.token, baseUrl: service.url });
  home = new CliHome({ SERVICE_URL: service.url, SERVICE_TOKEN: service.account.token });
  fs.writeFileSync(path.join(home.dir, 'plus-one.json'), JSON.stringify(plusOne));
  fs.writeFileSync(path.join(home.dir, 'rows.jsonl'), Array.from({ length: 12 }, (_, i) => JSON.stringify({ n: i })).join('\n'));
  fs.writeFileSync(path.join(home.dir, 'rows.csv'), ['n,ms', ...Array.from({ length: 5 }, (_, i) => `${i * 10},0`)].join('\n'));
  fs.writeFileSync(path.join(home.dir, 'slow.json'), JSON.stringify(Array.from({ length: 30 }, (_, i) => ({ n: i, ms: 300 }))));
  fs.writeFileSync(path.join(home.dir, 'bad.json'), JSON.stringify([{ n: 1 }, { n: 'x' }]));
}, 120_000);
afterAll(async () => {
  await service?.close();
  home?.remove();
});

describe('SDK', () => {
  it('creates a batch, follows its progress to the end and reads its results', async () => {
    const batch = await createBatch(client, { workflow: plusOne, rows: Array.from({ length: 8 }, (_, i) => ({ n: i })), concurrency: 3 });
    expect(batch.record.rows.total).toBe(8);
    const rowsSeen: number[] = [];
    let ended = false;
    for await (const event of batch.progress()) {
      if (event.type === 'batch.row') rowsSeen.push(event.row);
      if (event.type === 'batch.ended') ended = true;
    }
    expect(ended).toBe(true);
    expect(rowsSeen.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(batch.record.status).toBe('completed');
    const results = [];
    for await (const row of batch.results()) results.push(row);
    expect(results.map((r) => [r.row, r.outputs?.next])).toEqual(Array.from({ length: 8 }, (_, i) => [i + 1, { kind: 'int', value: i + 1 }]));
    // The generated route call follows the stream to the end too, and answers the record.
    const viaRoute = await client.routes['batches.events']({ id: batch.id });
    expect(viaRoute.status).toBe('completed');
  });

  it('cancels, then retries the cancelled rows, paying only for what runs', async () => {
    const batch = await createBatch(client, { workflow: plusOne, rows: Array.from({ length: 10 }, (_, i) => ({ n: i, ms: 500 })), concurrency: 2 });
    await eventually(async () => ((await batch.refresh()).rows.running > 0 ? true : null));
    await batch.cancel();
    const cancelled = await batch.wait();
    expect(cancelled.status).toBe('cancelled');
    const retried = await batch.retry();
    expect(retried.attempt).toBe(2);
    const again = await (await getBatch(client, batch.id)).wait();
    expect(again.rows.completed).toBe(10);
  });

  it('validates input before sending, as the service would', async () => {
    await expect(createBatch(client, { workflow: plusOne, rows: [{ n: 1 }], concurrency: 0 })).rejects.toBeInstanceOf(InvalidInputError);
  });
});

describe('svc batch', () => {
  const svc = (args: string[]) => home.run(args, { timeoutMs: 60_000 });

  it('runs a JSON Lines file and prints the summary and the results link', async () => {
    const done = await svc(['batch', 'plus-one.json', '--rows', 'rows.jsonl', '--concurrency', '4']);
    expect(done.stderr).toMatch(/batch [0-9a-f-]{36}: 12 rows, cap \$6/);
    expect(done.stderr).toContain('12/12 rows');
    expect(done.stdout).toMatch(/Batch [0-9a-f-]{36} completed: 12 completed, 0 failed, 0 cancelled; spent \$0 of \$6\./);
    expect(done.stdout).toMatch(/Results \(JSON Lines\): http:\/\/127\.0\.0\.1:\d+\/v1\/batches\/[0-9a-f-]{36}\/results\/download\?format=jsonl&expires=\d+&signature=/);
    expect(done.code).toBe(0);
    const url = /Results \(JSON Lines\): (\S+)/.exec(done.stdout)![1]!;
    const lines = (await (await fetch(url)).text()).trim().split('\n');
    expect(lines).toHaveLength(12);
  });

  it('--json prints the final record; a CSV file is uploaded and read by type', async () => {
    const done = await svc(['batch', 'plus-one.json', '--rows', 'rows.csv', '--json']);
    expect(done.code).toBe(0);
    const record = JSON.parse(done.stdout) as { status: string; rows: { completed: number }; resultsUrl: string };
    expect(record.status).toBe('completed');
    expect(record.rows.completed).toBe(5);
    const rows = (await (await fetch(record.resultsUrl)).text()).trim().split('\n').map((line) => JSON.parse(line) as { outputs: { next: { value: number } } });
    expect(rows.map((r) => r.outputs.next.value)).toEqual([1, 11, 21, 31, 41]);
  });

  it('refuses bad rows with exit 2 naming the row; --skip-bad-rows runs the rest', async () => {
    const refused = await svc(['batch', 'plus-one.json', '--rows', 'bad.json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('row 2 (n)');
    const skipped = await svc(['batch', 'plus-one.json', '--rows', 'bad.json', '--skip-bad-rows', '--json']);
    expect(skipped.code).toBe(0);
    expect(JSON.parse(skipped.stdout).rows).toMatchObject({ completed: 1, skipped: 1 });
  });

  it('Ctrl-C stops following and says how to follow again; the batch goes on; --attach follows it', async () => {
    const child = home.spawn(['batch', 'plus-one.json', '--rows', 'slow.json', '--concurrency', '2']);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await eventually(() => (/rows/.test(stderr) && /batch [0-9a-f-]{36}/.test(stderr) ? true : null), { timeoutMs: 20_000 });
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(130);
    const id = /batch ([0-9a-f-]{36})/.exec(stderr)![1]!;
    expect(stderr).toContain(`Stopped following batch ${id}; it goes on. Follow it again: svc batch --attach ${id}`);
    const attached = await svc(['batch', '--attach', id, '--json']);
    expect(attached.code).toBe(0);
    expect(JSON.parse(attached.stdout).rows.completed).toBe(30);
  }, 60_000);

  it('--detach prints the id and returns at once', async () => {
    const started = await svc(['batch', 'plus-one.json', '--rows', 'rows.jsonl', '--detach']);
    expect(started.code).toBe(0);
    const id = started.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const done = await (await getBatch(client, id)).wait();
    expect(done.rows.completed).toBe(12);
  });
});
