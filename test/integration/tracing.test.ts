import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import type { RunEvent } from '../../services/contract';
import { startTracing, type Tracing } from '../../services/platform/tracing-sdk';
import { eventually } from '../support/eventually';
import { openAiStream, startLlmFake, type LlmFake } from '../support/llm-fake';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { exited, startWorkerProcess } from '../support/worker-process';

/**
 * A run is one trace from `POST /v1/runs` in the API, through the queue, to
 * every step and provider call in a worker process. The API runs in this process with an
 * in-memory exporter; the worker is a process of its own exporting OTLP/HTTP (JSON) to a small
 * receiver here, configured only by the standard OTEL_* variables.
 */

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean };
}

/** An OTLP/HTTP receiver that keeps the spans it is sent (JSON encoding). */
async function startReceiver(): Promise<{ url: string; spans: ExportedSpan[]; close(): Promise<void> }> {
  const spans: ExportedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: (Omit<ExportedSpan, 'attributes'> & { attributes?: OtlpAttribute[] })[] }[] }[] };
      for (const { scopeSpans } of body.resourceSpans) {
        for (const scope of scopeSpans) {
          for (const span of scope.spans) {
            const attributes = Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, value.stringValue ?? value.intValue ?? value.boolValue]));
            spans.push({ traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId || undefined, name: span.name, attributes });
          }
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('a run is one trace across the API and a worker process', () => {
  const memory = new InMemorySpanExporter();
  let tracing: Tracing | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let fake: LlmFake;
  let service: TestService;
  let worker: ChildProcess | undefined;

  beforeAll(async () => {
    tracing = startTracing({ exporter: 'none', serviceName: 'svc-api' }, { spanProcessors: [new SimpleSpanProcessor({ exporter: memory })] });
    receiver = await startReceiver();
    fake = await startLlmFake(openAiStream(['Hello'], { prompt: 10, completion: 2 }));
    service = await startTestService({ env: { ROLE: 'api', OPENAI_API_KEY: 'sk-test-openai-0123456789abcdef', OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: 'fake-model=1.25/5.00' } });
    worker = startWorkerProcess(service, {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_SERVICE_NAME: 'svc-worker',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  }, 60_000);

  afterAll(async () => {
    worker?.kill('SIGKILL');
    await service?.close();
    await fake?.close();
    await receiver?.close();
    await tracing?.shutdown();
  });

  it("parents every step, node and provider span in the worker under the API's call span, with the run and node ids", async () => {
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({
        workflow: {
          version: 2,
          nodes: [
            { id: 'chat', uses: 'openai-chat', inputs: { prompt: 'Say hello' } },
            { id: 'sum', uses: 'math-add', inputs: { a: 1, b: 2 } },
            { id: 'text', uses: 'output', inputs: { value: '${chat.text}' } },
            { id: 'total', uses: 'output', inputs: { value: '${sum.result}' } },
          ],
        },
      }),
    });
    expect(res.status).toBe(200);
    const events = (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
    expect(events.at(-1)?.type).toBe('run.completed');
    const started = events[0]!;
    const runId = started.type === 'run.started' ? started.runId : '';

    // The API's span of the call, named for the operation, carrying the run id.
    const call = memory.getFinishedSpans().find((s) => s.name === 'runs.create' && s.attributes['svc.run_id'] === runId);
    expect(call).toBeDefined();
    const traceId = call!.spanContext().traceId;
    const callSpanId = call!.spanContext().spanId;

    // The worker's spans arrive in batches; SIGTERM flushes the rest.
    worker!.kill('SIGTERM');
    await exited(worker!);
    const inRun = () => receiver.spans.filter((s) => s.attributes['svc.run_id'] === runId || s.name === 'provider.request');
    await eventually(() => inRun().some((s) => s.name === 'provider.request'), { timeoutMs: 10_000, what: "the worker's spans" });
    const spans = inRun();
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([traceId]));

    const stepOf = (nodeId: string) => spans.find((s) => s.name === 'step.execute' && s.attributes['svc.node_id'] === nodeId);
    const nodeOf = (nodeId: string) => spans.find((s) => s.name === 'node.execute' && s.attributes['svc.node_id'] === nodeId);
    // The first steps were enqueued by the API's call: their jobs carried its context.
    for (const nodeId of ['chat', 'sum']) expect(stepOf(nodeId)?.parentSpanId).toBe(callSpanId);
    expect(nodeOf('chat')).toMatchObject({ parentSpanId: stepOf('chat')!.spanId, attributes: { 'svc.node': 'openai-chat', 'svc.run_id': runId } });
    expect(nodeOf('sum')).toMatchObject({ parentSpanId: stepOf('sum')!.spanId, attributes: { 'svc.node': 'math-add' } });
    const provider = spans.find((s) => s.name === 'provider.request');
    expect(provider).toMatchObject({ parentSpanId: nodeOf('chat')!.spanId, attributes: { 'svc.provider': 'openai', 'http.response.status_code': 200 } });
    // Every span of the run descends from the call span: no orphan, no second trace.
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    for (const span of spans) {
      let cursor: ExportedSpan | undefined = span;
      while (cursor?.parentSpanId && cursor.parentSpanId !== callSpanId) cursor = byId.get(cursor.parentSpanId);
      expect({ span: span.name, node: span.attributes['svc.node_id'], reachesCall: cursor?.parentSpanId === callSpanId }).toMatchObject({ reachesCall: true });
    }
  }, 60_000);
});
