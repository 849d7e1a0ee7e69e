import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { OP_NAMES, OPERATIONS, ROUTE_NAMES, type Workflow } from '../../services/contract';
import {
  AuthenticationError,
  Client,
  createWorkflow,
  getNode,
  getWorkflow,
  InsufficientCreditError,
  InvalidInputError,
  NotFoundError,
  PermissionError,
  run,
  RunFailedError,
  searchNodes,
  startRun,
  type RunEventWithSeq,
  upload,
} from '../../services/sdk/src';
import { uploadFile } from '../../services/sdk/src/node';
import { seedAccount } from '../support/fixtures';
import { failingNode, pauseChain, pauseNode } from '../support/test-nodes';
import { publishWorkflow, startTestService, type TestService } from '../support/service';

describe('SDK against the service', () => {
  let service: TestService;
  let client: Client;

  beforeAll(async () => {
    service = await startTestService({ nodes: [pauseNode, failingNode] });
    client = new Client({ apiKey: service.account.token, baseUrl: service.url });
  });

  afterAll(async () => {
    await service?.close();
  });

  it('has one ops entry per operation and one routes entry per route, each validating with the contract schema', async () => {
    expect(Object.keys(client.ops).sort()).toEqual([...OP_NAMES].sort());
    expect(Object.keys(client.routes).sort()).toEqual([...ROUTE_NAMES].sort());
    // The same bad input reads the same from the SDK (checked before sending) and from the service.
    for (const name of OP_NAMES) {
      const bad = { unexpected: true };
      const local = await (client.ops[name] as (input: unknown) => Promise<unknown>)(bad).catch((err: unknown) => err);
      expect(local).toBeInstanceOf(InvalidInputError);
      expect((local as InvalidInputError).status).toBe(0);
      const op = OPERATIONS[name];
      const path = op.http.path.replace(':id', 'x');
      const init: RequestInit = { method: op.http.method, headers: { authorization: `Bearer ${service.account.token}`, 'content-type': 'application/json' } };
      const url = op.http.method === 'GET' ? `${service.url}${path}?unexpected=true` : `${service.url}${path}`;
      if (op.http.method !== 'GET') init.body = JSON.stringify(op.http.pathParams.length ? { ...bad } : bad);
      const answer = await fetch(url, init);
      expect(answer.status).toBe(400);
      const body = (await answer.json()) as { error: string };
      expect((local as InvalidInputError).message).toContain(body.error.replace(/^.*?unknown field/, 'unknown field'));
    }
  });

  it('searches, gets nodes and published workflows by ref with a selector', async () => {
    const found = await searchNodes(client, { q: 'math-add' });
    expect(found.map((n) => n.id)).toContain('math-add');
    const spec = await getNode(client, 'math-add');
    expect(Object.keys(spec.inputs).sort()).toEqual(['a', 'b']);
    await expect(getNode(client, 'no-such-node')).rejects.toBeInstanceOf(NotFoundError);
    await publishWorkflow(service, 'sdk-flow', pauseChain(1, 1));
    const published = await getWorkflow(client, `${service.account.orgSlug}/sdk-flow@1`);
    expect(published.address).toBe(`${service.account.orgSlug}/sdk-flow`);
    expect(published.version).toBe('1.0.0');
    const outputs = await run(client, { workflowRef: `${service.account.orgSlug}/sdk-flow@latest` });
    expect(outputs.out).toMatchObject({ kind: 'int', value: 1 });
  });

  it('runs a workflow: run() resolves with outputs, startRun() yields every event with its seq', async () => {
    expect(await run(client, { workflow: pauseChain(2, 1) })).toEqual({ out: { kind: 'int', value: 2 } });
    expect(await client.ops['runs.create']({ workflow: pauseChain(1, 1) })).toEqual({ outputs: { out: { kind: 'int', value: 1 } } });

    const handle = startRun(client, { workflow: pauseChain(2, 1) });
    const seen: RunEventWithSeq[] = [];
    for await (const event of handle.events()) seen.push(event);
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(seen[0]).toMatchObject({ type: 'run.started', runId: await handle.runId });
    expect(seen.at(-1)).toMatchObject({ type: 'run.completed', outputs: { out: { kind: 'int', value: 2 } } });
    // A second consumer, and result(), see the same run.
    expect((await collect(handle.events())).length).toBe(seen.length);
    expect(await handle.result()).toEqual({ out: { kind: 'int', value: 2 } });

    // The event route of a finished run, followed by the routes registry, resolves with its record.
    const record = await client.routes['runs.events']({ id: await handle.runId });
    expect(record).toMatchObject({ id: await handle.runId, status: 'completed', outputs: { out: { kind: 'int', value: 2 } } });
  });

  it('runs a single node with ops["runs.node"] and a built draft with run()', async () => {
    expect(await client.ops['runs.node']({ node: 'math-add', inputs: { a: 1, b: 2 } })).toEqual({ outputs: { result: { kind: 'float', value: 3 } } });
    const wf = createWorkflow();
    const a = wf.addInput('a', 'FLOAT', { default: 2 });
    const add = wf.addNode('math-add', { a, b: 40 });
    wf.addOutput('answer', add.out.result);
    expect(wf.validate()).toEqual({ ok: true });
    expect(await wf.validate({ client })).toEqual({ ok: true });
    expect(await run(client, { workflow: wf })).toEqual({ answer: { kind: 'float', value: 42 } });
  });

  it('throws RunFailedError with the code, message and run id on run.failed and on a failed runs.node', async () => {
    const workflow: Workflow = { version: 2, nodes: [{ id: 'f', uses: 'test-fail', inputs: { n: 1 } }, { id: 'out', uses: 'output', inputs: { value: '${f.n}' } }] };
    const failed = await run(client, { workflow }).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(RunFailedError);
    const { runId, code, message } = failed as RunFailedError;
    expect(runId).toMatch(/^[0-9a-f-]{36}$/);
    expect(message).toContain('fails on purpose');
    const record = await client.routes['runs.get']({ id: runId });
    expect(record.error?.code).toBe(code);

    const single = await client.ops['runs.node']({ node: 'test-fail', inputs: { n: 1 } }).catch((err: unknown) => err);
    expect(single).toBeInstanceOf(RunFailedError);
    expect((single as RunFailedError).status).toBe(422);
    expect((single as RunFailedError).runId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('cancels a run with handle.cancel(): the record answers cancelled, result() throws RunFailedError code cancelled', async () => {
    const handle = startRun(client, { workflow: pauseChain(1, 60_000) });
    for await (const event of handle.events()) if (event.type === 'step.started') break;
    const record = await handle.cancel();
    expect(record).toMatchObject({ id: await handle.runId, status: 'cancelled', error: { code: 'cancelled' } });
    const failed = await handle.result().catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(RunFailedError);
    expect(failed).toMatchObject({ code: 'cancelled', runId: await handle.runId });
    expect((await handle.cancel()).status).toBe('cancelled');
  });

  it('sends maxDurationSeconds as the Max-Duration-Seconds header: the run records its deadline', async () => {
    const handle = startRun(client, { workflow: pauseChain(1, 1) }, { options: { maxDurationSeconds: 90 } });
    await handle.result();
    const record = await client.routes['runs.get']({ id: await handle.runId });
    expect(Date.parse(record.deadlineAt!) - Date.parse(record.createdAt)).toBe(90_000);
    const plain = startRun(client, { workflow: pauseChain(1, 1) });
    await plain.result();
    expect((await client.routes['runs.get']({ id: await plain.runId })).deadlineAt).toBeNull();
  });

  it('uploads bytes and files from disk, and runs with the uploaded artifact', async () => {
    const png = await sharp({ create: { width: 7, height: 3, channels: 3, background: '#0a0' } }).png().toBuffer();
    const fromBytes = await upload(client, new Uint8Array(png), { filename: 'dot.png', mimeType: 'text/plain' });
    expect(fromBytes).toMatchObject({ kind: 'image', mimeType: 'image/png' });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'sdk-upload-'));
    try {
      const file = path.join(dir, 'picture.png');
      await writeFile(file, png);
      const fromDisk = await uploadFile(client, file);
      expect(fromDisk).toMatchObject({ kind: 'image', metadata: { filename: 'picture.png' } });
      await expect(uploadFile(client, dir)).rejects.toThrow('is not a file');
      const workflow: Workflow = {
        version: 2,
        nodes: [
          { id: 'picture', uses: 'input', outputType: 'IMAGE' },
          { id: 'size', uses: 'image-metadata', inputs: { image: '${picture.value}' } },
          { id: 'width', uses: 'output', inputs: { value: '${size.width}' } },
        ],
      };
      const outputs = await run(client, { workflow, inputs: { picture: fromDisk } });
      expect(outputs.width).toMatchObject({ value: 7 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('translates every HTTP error into its typed error', async () => {
    const stranger = new Client({ apiKey: 'svc_not-a-real-token', baseUrl: service.url });
    const unauthorized = await stranger.ops['workflows.get']({ id: 'a/b' }).catch((err: unknown) => err);
    expect(unauthorized).toBeInstanceOf(AuthenticationError);
    expect((unauthorized as AuthenticationError).status).toBe(401);
    expect((unauthorized as AuthenticationError).message).toMatch(/token/);

    const reader = await seedAccount(service.prisma, { slug: 'sdk-reader', scopes: ['read'], balanceMicros: 1_000_000 });
    const readOnly = new Client({ apiKey: reader.token, baseUrl: service.url });
    const forbidden = await run(readOnly, { workflow: pauseChain(1, 1) }).catch((err: unknown) => err);
    expect(forbidden).toBeInstanceOf(PermissionError);
    expect((forbidden as PermissionError).code).toBe('insufficient_scope');

    const broke = await seedAccount(service.prisma, { slug: 'sdk-broke', scopes: ['read', 'run'], balanceMicros: 0 });
    const poor = new Client({ apiKey: broke.token, baseUrl: service.url });
    const credit = await run(poor, { workflow: pauseChain(1, 1), maxCostUsd: 1 }).catch((err: unknown) => err);
    expect(credit).toBeInstanceOf(InsufficientCreditError);
    expect((credit as InsufficientCreditError).status).toBe(402);
    expect((credit as InsufficientCreditError).balanceUsd).toBe(0);
    // The run never started: its id promise rejects with the same error.
    await expect(startRun(poor, { workflow: pauseChain(1, 1), maxCostUsd: 1 }).runId).rejects.toBeInstanceOf(InsufficientCreditError);
  });
});

async function collect<T>(events: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const event of events) all.push(event);
  return all;
}
