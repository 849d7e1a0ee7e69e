import sharp from 'sharp';
import { BlobUrlSigner, S3BlobStore } from '../../services/blobs';
import type { RunEvent } from '../../services/contract';
import { LedgerRepository, RunRepository } from '../../services/store';
import { seedAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse, sseMessages, type SseMessage } from '../support/sse';
import { terminateConnections } from '../support/database';
import { eventually } from '../support/eventually';
import { stack } from '../support/stack';

/** The events of a stream and whether it ended with `[DONE]`. */
function eventsOf(messages: SseMessage[]): { events: RunEvent[]; ids: number[]; done: boolean } {
  const done = messages.at(-1)?.data === '[DONE]';
  const body = done ? messages.slice(0, -1) : messages;
  return { events: body.map((m) => JSON.parse(m.data) as RunEvent), ids: body.map((m) => Number(m.id)), done };
}

function post(service: TestService, path: string, body: unknown, token = service.account.token): Promise<Response> {
  return fetch(`${service.url}${path}`, { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
}

async function runToEnd(service: TestService, body: unknown) {
  const res = await post(service, '/v1/runs', body);
  expect(res.status).toBe(200);
  return eventsOf(await readSse(res));
}

const chain = (length: number) => ({
  version: 2,
  nodes: [
    { id: 'n0', uses: 'math-add', inputs: { a: 1, b: 1 } },
    ...Array.from({ length: length - 1 }, (_, i) => ({ id: `n${i + 1}`, uses: 'math-add', inputs: { a: `\${n${i}.result}`, b: 1 } })),
    { id: 'out', uses: 'output', inputs: { value: `\${n${length - 1}.result}` } },
  ],
});

describe('run execution over real Redis, Postgres and S3', () => {
  let service: TestService;
  let imageRef: string;

  beforeAll(async () => {
    service = await startTestService({ blobs: 's3' });
    // An input picture stored the way uploads are: in our blob store, handed out as our signed URL.
    const png = await sharp({ create: { width: 320, height: 200, channels: 3, background: '#3366cc' } }).png().toBuffer();
    const store = new S3BlobStore(service.config.s3!);
    await store.init();
    await store.put('uploads/input.png', png, { contentType: 'image/png', size: png.length });
    const signer = new BlobUrlSigner({ publicBaseUrl: service.config.publicBaseUrl, secret: service.config.blobSigningSecret });
    imageRef = signer.sign('uploads/input.png', new Date(Date.now() + 3600_000));
  });

  afterAll(async () => {
    await service?.close();
  });

  it('runs a DAG with parallel image branches and returns refs to our own blob URLs, equal in the stream and the record', async () => {
    const workflow = {
      version: 2,
      nodes: [
        { id: 'photo', uses: 'input', outputType: 'IMAGE' },
        { id: 'thumb', uses: 'image-resize', inputs: { image: '${photo.value}', width: 64, height: 64 } },
        { id: 'square', uses: 'image-crop', inputs: { image: '${photo.value}', width: 100, height: 100 } },
        { id: 'combined', uses: 'image-composite', inputs: { base: '${square.image}', overlay: '${thumb.image}', left: 10, top: 10 } },
        { id: 'meta', uses: 'image-metadata', inputs: { image: '${combined.image}' } },
        { id: 'picture', uses: 'output', inputs: { value: '${combined.image}' } },
        { id: 'width', uses: 'output', inputs: { value: '${meta.width}' } },
      ],
    };
    const { events, ids, done } = await runToEnd(service, { workflow, inputs: { photo: { ref: imageRef } } });
    expect(done).toBe(true);
    expect(ids).toEqual(events.map((_, i) => i + 1));
    expect(events[0]).toEqual({ type: 'run.started', runId: expect.any(String) });
    const runId = (events[0] as { runId: string }).runId;
    const completedSteps = events.filter((e) => e.type === 'step.completed').map((e) => (e as { nodeId: string }).nodeId);
    expect(completedSteps.sort()).toEqual(['combined', 'meta', 'square', 'thumb']);
    // Dependency order: the composite starts only after both branches completed.
    const at = (type: string, nodeId: string) => events.findIndex((e) => e.type === type && (e as { nodeId?: string }).nodeId === nodeId);
    expect(at('step.started', 'combined')).toBeGreaterThan(at('step.completed', 'thumb'));
    expect(at('step.started', 'combined')).toBeGreaterThan(at('step.completed', 'square'));
    const terminal = events.at(-1)!;
    expect(terminal.type).toBe('run.completed');
    const outputs = (terminal as { outputs: Record<string, { kind: string; ref?: string; value?: unknown; mimeType?: string; metadata?: Record<string, unknown> }> }).outputs;
    expect(outputs.width).toEqual({ kind: 'int', value: 100 });
    expect(outputs.picture).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { width: 100, height: 100 } });
    expect(outputs.picture!.ref!.startsWith(`${service.config.publicBaseUrl}/blobs/runs/${runId}/`)).toBe(true);
    const picture = await fetch(outputs.picture!.ref!);
    expect(picture.status).toBe(200);
    expect((await sharp(Buffer.from(await picture.arrayBuffer())).metadata()).width).toBe(100);

    const record = await fetch(`${service.url}/v1/runs/${runId}`, { headers: bearer(service.account.token) });
    expect(record.status).toBe(200);
    const run = (await record.json()) as { status: string; outputs: unknown; steps: { nodeId: string; status: string; costUsd: number }[] };
    expect(run.status).toBe('completed');
    expect(run.outputs).toEqual(outputs);
    expect(run.steps.map((s) => s.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    // Artifacts are recorded for the retention sweeper, expiring with their URLs.
    const artifacts = await service.prisma.artifact.findMany({ where: { runId } });
    expect(artifacts.length).toBe(3);
    expect(artifacts.every((a) => a.expiresAt !== null && a.expiresAt.getTime() > Date.now() + 29 * 86_400_000)).toBe(true);
  });

  it('charges every step to the ledger, and the run spends what its steps cost', async () => {
    const ledger = new LedgerRepository(service.prisma);
    const before = await ledger.balance(service.account.orgId);
    const { events } = await runToEnd(service, { workflow: chain(4) });
    const runId = (events[0] as { runId: string }).runId;
    expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { out: { kind: 'float', value: 5 } } });
    const usage = events.filter((e) => e.type === 'step.completed').map((e) => (e as { usage: { costUsd: number; ms: number } }).usage);
    expect(usage).toHaveLength(4);
    expect(usage.every((u) => u.costUsd === 0.000001 && u.ms >= 0)).toBe(true);
    const run = await new RunRepository(service.database).getRun(runId);
    expect(run).toMatchObject({ spentMicros: 4, reservedMicros: 0 });
    expect(await ledger.balance(service.account.orgId)).toBe(before - 4);
  });

  it('answers 402 with the balance before any stream when the organization has no credit', async () => {
    const broke = await seedAccount(service.prisma, { slug: 'broke', scopes: ['run'], balanceMicros: 0 });
    const res = await post(service, '/v1/runs', { workflow: chain(1) }, broke.token);
    expect(res.status).toBe(402);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual({ code: 'insufficient_credit', balanceUsd: 0, error: expect.stringContaining('add credit') });
    expect(await service.prisma.run.count({ where: { orgId: broke.orgId } })).toBe(0);
    // The stream the refused run would have had (subscribed while the run was being stored) was given back.
    await eventually(() => service.runtime.bus.stats().streams === 0, { what: 'the refused run to give its stream back' });
    expect(service.runtime.bus.stats()).toEqual({ streams: 0, channels: 0, listeners: 0 });
  });

  it('answers 400 and 404 before any stream, naming what to fix', async () => {
    const bad = await post(service, '/v1/runs', { workflow: { version: 2, nodes: [{ id: 'x', uses: 'math-add', inputs: { a: 'one', b: 1 } }] } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain('input "a"');
    const both = await post(service, '/v1/runs', { workflow: chain(1), workflowRef: 'acme/flow@1.0.0' });
    expect(both.status).toBe(400);
    const missingInput = await post(service, '/v1/runs', { workflow: { version: 2, nodes: [{ id: 'p', uses: 'input', outputType: 'TEXT' }, { id: 'o', uses: 'output', inputs: { value: '${p.value}' } }] } });
    expect(missingInput.status).toBe(400);
    expect(((await missingInput.json()) as { error: string }).error).toContain('input "p" (TEXT) is required');
    const badRef = await post(service, '/v1/runs', { workflowRef: 'not a ref' });
    expect(badRef.status).toBe(400);
    const unknown = await post(service, '/v1/runs', { workflowRef: 'acme/flow@1.2.3' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toContain('does not resolve to a published workflow version');
  });

  it('stops a run before the node that would exceed the cap: that node is never called', async () => {
    // Each math-add costs 1 micro-USD; a 3 micro-USD cap fits three of the five.
    const { events } = await runToEnd(service, { workflow: chain(5), maxCostUsd: 0.000003 });
    const runId = (events[0] as { runId: string }).runId;
    expect(events.filter((e) => e.type === 'step.completed').map((e) => (e as { nodeId: string }).nodeId)).toEqual(['n0', 'n1', 'n2']);
    expect(events.some((e) => e.type === 'step.started' && (e as { nodeId: string }).nodeId === 'n3')).toBe(false);
    expect(events.at(-2)).toMatchObject({ type: 'step.failed', nodeId: 'n3', error: { code: 'spend_cap_exceeded' } });
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'spend_cap_exceeded' } });
    const run = await new RunRepository(service.database).getRun(runId);
    expect(run).toMatchObject({ status: 'failed', spentMicros: 3, reservedMicros: 0, outputs: null });
    expect(run!.steps.find((s) => s.nodeId === 'n3')).toMatchObject({ status: 'failed', attempt: 0, error: { code: 'spend_cap_exceeded' } });
    expect(run!.steps.find((s) => s.nodeId === 'n4')).toMatchObject({ status: 'skipped', attempt: 0 });
  });

  it('never lets parallel steps together exceed the cap, across many concurrent runs', async () => {
    const wide = {
      version: 2,
      nodes: [
        ...Array.from({ length: 12 }, (_, i) => ({ id: `p${i}`, uses: 'math-add', inputs: { a: i, b: 1 } })),
        { id: 'out', uses: 'output', inputs: { value: '${p0.result}' } },
      ],
    };
    const results = await Promise.all(Array.from({ length: 20 }, () => runToEnd(service, { workflow: wide, maxCostUsd: 0.000005 })));
    const runs = new RunRepository(service.database);
    for (const { events, done } of results) {
      expect(done).toBe(true);
      expect(events.filter((e) => e.type === 'run.completed' || e.type === 'run.failed')).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'spend_cap_exceeded' } });
      const run = (await runs.getRun((events[0] as { runId: string }).runId))!;
      expect(run.spentMicros).toBeLessThanOrEqual(5);
      expect(run.reservedMicros).toBe(0);
      expect(run.steps.filter((s) => s.status === 'completed').length).toBeLessThanOrEqual(5);
      const charged = await service.prisma.ledgerEntry.aggregate({ where: { runId: run.id }, _sum: { amountMicros: true } });
      // 0 - x, not -x: a run charged nothing would give -0, which toBe tells apart from 0.
      expect(0 - Number(charged._sum.amountMicros ?? 0n)).toBe(run.spentMicros);
    }
  });

  it('lets a client that disconnects resume with Last-Event-ID and receive every event exactly once', async () => {
    const controller = new AbortController();
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow: chain(6) }),
      signal: controller.signal,
    });
    const first: SseMessage[] = [];
    try {
      for await (const message of sseMessages(res.body!)) {
        first.push(message);
        if (first.length === 2) {
          controller.abort();
          break;
        }
      }
    } catch (err) {
      expect((err as Error).name).toBe('AbortError');
    }
    expect(first).toHaveLength(2);
    const runId = (JSON.parse(first[0]!.data) as { runId: string }).runId;
    const resumed = await fetch(`${service.url}/v1/runs/${runId}/events`, { headers: { ...bearer(service.account.token), 'Last-Event-ID': first[1]!.id! } });
    expect(resumed.status).toBe(200);
    const rest = eventsOf(await readSse(resumed));
    expect(rest.done).toBe(true);
    const all = [...first.map((m) => Number(m.id)), ...rest.ids];
    expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    expect(rest.events.at(-1)!.type).toBe('run.completed');
    expect(rest.events.filter((e) => e.type === 'step.completed')).toHaveLength(6 - first.filter((m) => m.data.includes('step.completed')).length);
  });

  it('runs one node with runs.node: one JSON answer, recorded, charged and in the run history', async () => {
    const res = await post(service, '/v1/runs/node', { node: 'text-regex-replace', inputs: { text: 'a b', pattern: ' ', replacement: '-' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ outputs: { text: { kind: 'text', value: 'a-b' } } });
    const history = await fetch(`${service.url}/v1/runs?limit=1`, { headers: bearer(service.account.token) });
    const page = (await history.json()) as { runs: { id: string; status: string; costUsd: number }[] };
    expect(page.runs[0]).toMatchObject({ status: 'completed', costUsd: expect.any(Number) });
    expect(page.runs[0]!.costUsd).toBeGreaterThan(0);
    const record = await fetch(`${service.url}/v1/runs/${page.runs[0]!.id}`, { headers: bearer(service.account.token) });
    expect(await record.json()).toMatchObject({ status: 'completed', outputs: { text: { kind: 'text', value: 'a-b' } }, steps: [{ nodeId: 'node', status: 'completed' }] });

    const failing = await post(service, '/v1/runs/node', { node: 'math-divide', inputs: { a: 1, b: 0 } });
    // The node refused its input: a caller mistake, so 400, with the recorded run's id.
    expect(failing.status).toBe(400);
    const failure = (await failing.json()) as { code: string; runId: string; runError: { code: string } };
    expect(failure).toMatchObject({ code: 'validation_failed', runId: expect.any(String), runError: { code: 'validation_failed' } });
    expect((await new RunRepository(service.database).getRun(failure.runId))!.status).toBe('failed');
    const notModel = await post(service, '/v1/runs/node', { node: 'no-such-node', inputs: {} });
    expect(notModel.status).toBe(404);
  });

  it('runs a workflow with no steps (inputs wired to outputs) to completion at once', async () => {
    const workflow = { version: 2, nodes: [{ id: 'p', uses: 'input', outputType: 'TEXT' }, { id: 'o', uses: 'output', inputs: { value: '${p.value}' } }] };
    const { events, done } = await runToEnd(service, { workflow, inputs: { p: { value: 'hello' } } });
    expect(done).toBe(true);
    expect(events.map((e) => e.type)).toEqual(['run.started', 'run.completed']);
    expect(events[1]).toEqual({ type: 'run.completed', outputs: { o: { kind: 'text', value: 'hello' } } });
  });

  it('keeps serving when Postgres closes its idle connections (a restart or failover)', async () => {
    const { postgres } = stack();
    // The server closes them asynchronously; a query sent on one in that instant fails like any
    // query cut by a restart would. terminateConnections waits until the closings have reached
    // the pool (every terminated backend has told its client and exited).
    await terminateConnections(postgres, service.db.name);
    const { events, done } = await runToEnd(service, { workflow: chain(2) });
    expect(done).toBe(true);
    expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { out: { kind: 'float', value: 3 } } });
  });

  it('exposes run metrics', async () => {
    const text = await (await fetch(`${service.url}/metrics`)).text();
    expect(text).toMatch(/svc_runs_started_total\{role="test"\} [1-9]/);
    expect(text).toMatch(/svc_runs_finished_total\{outcome="failed",reason="spend_cap_exceeded",role="test"\} [1-9]/);
    expect(text).toMatch(/svc_step_duration_seconds_count\{role="test",node="math-add",outcome="completed"\} [1-9]/);
    expect(text).toMatch(/svc_cost_settled_usd_total\{node="math-add",role="test"\} /);
    expect(text).toMatch(/svc_step_jobs\{state="waiting",role="test"\} \d/);
    // Every stream of this file has ended: none is counted as open any more (a stream the client
    // dropped is counted down when the server sees the socket close, a moment later).
    const allStreamsClosed = async () => /svc_sse_streams_open\{role="test"\} 0\n/.test(await (await fetch(`${service.url}/metrics`)).text());
    await eventually(allStreamsClosed, { timeoutMs: 2000, intervalMs: 50, what: 'svc_sse_streams_open to come down to 0' });
  });
});
