import type { ChildProcess } from 'node:child_process';
import { RunRepository } from '../../services/store';
import { eventually } from '../support/eventually';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { openAiStream, startLlmFake, type LlmFake } from '../support/llm-fake';
import { freePorts } from '../support/local-servers';
import { checkMetrics } from '../support/prometheus';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { exited, startWorkerProcess } from '../support/worker-process';

/**
 * What an ops team's dashboards and alerts read (docs/operations.md), scraped
 * from a running service after real work, with bounded labels, and linted by Prometheus' own
 * `promtool check metrics`.
 */

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text body (comments skipped). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels`. */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
}

async function scrape(url: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, samples: parseMetrics(text) };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

describe('the metrics of a service after real work', () => {
  let fake: LlmFake;
  let service: TestService;
  let broke: SeededAccount;
  /** Events the one streamed run's client received. */
  let eventsSeen = 0;

  beforeAll(async () => {
    fake = await startLlmFake(openAiStream(['Hello', ' world'], { prompt: 100, completion: 20 }));
    service = await startTestService({ env: { OPENAI_API_KEY: 'sk-test-openai-0123456789abcdef', OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: 'fake-model=1.25/5.00' } });
    broke = await seedAccount(service.prisma, { slug: 'broke', scopes: ['read', 'run'], balanceMicros: 0 });

    const workflow = {
      version: 2,
      nodes: [
        { id: 'chat', uses: 'openai-chat', inputs: { prompt: 'Say hello' } },
        { id: 'sum', uses: 'math-add', inputs: { a: 1, b: 2 } },
        { id: 'out', uses: 'output', inputs: { value: '${chat.text}' } },
      ],
    };
    const run = (token: string) => fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }) });
    const ran = await run(service.account.token);
    expect(ran.status).toBe(200);
    const messages = await readSse(ran);
    expect(messages.at(-2)?.data).toContain('run.completed');
    eventsSeen = messages.filter((m) => m.data !== '[DONE]').length;
    // A caller without credit: 402.
    const refused = await run(broke.token);
    expect(refused.status).toBe(402);
    await refused.arrayBuffer();
    // A run that never progresses (its steps are never enqueued), timed out by the reaper.
    await new RunRepository(service.database).createRun({
      orgId: service.account.orgId, userId: service.account.userId, tokenId: service.account.tokenId, definition: { version: 2, nodes: [] }, inputs: {}, capMicros: 100_000, start: true, steps: [],
    });
    const report = await service.runtime.reaper!.sweep(new Date(Date.now() + 30 * 86_400_000));
    expect(report.timedOut).toBeGreaterThanOrEqual(1);
  }, 60_000);

  afterAll(async () => {
    await service?.close();
    await fake?.close();
  });

  it('counts runs, calls, steps, cost, stream events and the reaper by their bounded labels', async () => {
    const { samples } = await scrape(service.url);
    expect(total(samples, 'svc_runs_started_total')).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'svc_runs_finished_total', { outcome: 'completed', reason: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'svc_runs_finished_total', { outcome: 'failed', reason: 'run_timeout' })).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'svc_operation_calls_total', { operation: 'runs.create', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'svc_operation_calls_total', { operation: 'runs.create', outcome: 'insufficient_credit' })).toBe(1);
    expect(total(samples, 'svc_http_requests_total', { route: '/v1/runs', status: '402' })).toBe(1);
    for (const node of ['openai-chat', 'math-add']) {
      expect(total(samples, 'svc_step_duration_seconds_count', { node, outcome: 'completed' })).toBeGreaterThanOrEqual(1);
    }
    // 100 × 1.25 + 20 × 5.00 micro-USD.
    expect(total(samples, 'svc_cost_settled_usd_total', { node: 'openai-chat' })).toBeCloseTo(0.000225, 9);
    expect(total(samples, 'svc_provider_request_duration_seconds_count', { provider: 'openai', outcome: '2xx' })).toBe(1);
    expect(total(samples, 'svc_sse_events_sent_total')).toBe(eventsSeen);
    expect(total(samples, 'svc_event_delivery_lag_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'svc_reaper_actions_total', { action: 'timed_out' })).toBeGreaterThanOrEqual(1);
  });

  it('shows the queue, the worker, the Postgres pool and the calls to Postgres and Redis', async () => {
    const { samples } = await scrape(service.url);
    for (const state of ['waiting', 'active', 'delayed', 'failed']) expect(samples.some((s) => s.name === 'svc_step_jobs' && s.labels.state === state)).toBe(true);
    expect(total(samples, 'svc_worker_concurrency')).toBe(service.config.workerConcurrency);
    expect(samples.some((s) => s.name === 'svc_worker_jobs_active')).toBe(true);
    expect(total(samples, 'svc_db_pool_max_connections')).toBe(service.config.database.poolSize);
    expect(total(samples, 'svc_db_pool_connections', { state: 'idle' }) + total(samples, 'svc_db_pool_connections', { state: 'busy' })).toBeGreaterThanOrEqual(1);
    expect(samples.some((s) => s.name === 'svc_db_pool_waiting')).toBe(true);
    expect(total(samples, 'svc_db_query_duration_seconds_count', { operation: 'select', outcome: 'ok' })).toBeGreaterThan(0);
    expect(total(samples, 'svc_db_query_duration_seconds_count', { operation: 'insert', outcome: 'ok' })).toBeGreaterThan(0);
    expect(total(samples, 'svc_redis_command_duration_seconds_count', { command: 'evalsha', outcome: 'ok' })).toBeGreaterThan(0);
    // Blocking and pub/sub commands wait by design: they are not timed.
    expect(samples.filter((s) => s.name.startsWith('svc_redis_command') && ['subscribe', 'bzpopmin', 'brpoplpush'].includes(s.labels.command ?? ''))).toEqual([]);
  });

  it('labels nothing with ids of runs, users, organizations or tokens, nor raw paths', async () => {
    const { samples } = await scrape(service.url);
    const offending = samples.flatMap((s) => Object.entries(s.labels).filter(([, v]) => UUID.test(v) || v.includes(service.account.token) || /^\/.*\/[0-9a-f-]{16,}/.test(v)).map(([k, v]) => `${s.name}{${k}="${v}"}`));
    expect(offending).toEqual([]);
    // Route labels are the patterns of the routes.
    const routes = new Set(samples.filter((s) => s.name === 'svc_http_requests_total').map((s) => s.labels.route));
    expect(routes).toContain('/v1/runs');
  });

  it("passes Prometheus' own lint (promtool check metrics) with nothing to report", async () => {
    const { text } = await scrape(service.url);
    // promtool exits non-zero with its findings when a name, a type, a unit or a help text breaks
    // the conventions: prom-client's defaults included (their _total gauges are left out).
    expect(checkMetrics(text)).toEqual({ status: 0, output: '' });
  });
});

describe('a worker process (ROLE=worker) on METRICS_PORT', () => {
  let service: TestService;
  let worker: ChildProcess | undefined;

  beforeAll(async () => {
    // The API alone in this process: the worker process below runs every step.
    service = await startTestService({ env: { ROLE: 'api' } });
  }, 60_000);

  afterAll(async () => {
    worker?.kill('SIGKILL');
    await service?.close();
  });

  it('serves /metrics, /healthz and /readyz, and answers /readyz 503 from the moment it is told to stop while it finishes its step', async () => {
    const [port] = (await freePorts(1)) as [number];
    const monitor = `http://127.0.0.1:${port}`;
    worker = startWorkerProcess(service, { METRICS_PORT: String(port), SVC_FAILPOINTS: 'step.afterReserve=sleep(3000)', SHUTDOWN_GRACE_MS: '20000' });
    await eventually(async () => (await fetch(`${monitor}/readyz`)).status === 200, { timeoutMs: 30_000, what: "the worker's /readyz to answer 200" });
    expect(await (await fetch(`${monitor}/healthz`)).json()).toEqual({ status: 'ok' });
    const { samples } = await scrape(monitor);
    expect(total(samples, 'svc_worker_concurrency', { role: 'worker' })).toBe(service.config.workerConcurrency);
    expect(samples.some((s) => s.name === 'svc_step_jobs' && s.labels.role === 'worker')).toBe(true);
    expect(checkMetrics((await scrape(monitor)).text)).toEqual({ status: 0, output: '' });
    expect((await fetch(`${monitor}/v1/nodes`)).status).toBe(404);

    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow: { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } }, { id: 'out', uses: 'output', inputs: { value: '${a.result}' } }] } }),
    });
    const events = readSse(res);
    await eventually(async () => total((await scrape(monitor)).samples, 'svc_worker_jobs_active') === 1, { timeoutMs: 10_000, what: 'the step to be running in the worker' });
    worker.kill('SIGTERM');
    await eventually(async () => (await fetch(`${monitor}/readyz`)).status === 503, { timeoutMs: 2000, intervalMs: 50, what: '/readyz to answer 503 once the worker is stopping' });
    expect(await (await fetch(`${monitor}/readyz`)).json()).toMatchObject({ status: 'draining' });
    // It finished the step it held before it exited; a new worker takes the run from there.
    await exited(worker);
    expect(worker.exitCode).toBe(0);
    const steps = await service.prisma.step.findMany({ where: { nodeId: 'a' }, select: { status: true } });
    expect(steps).toEqual([{ status: 'completed' }]);
    worker = startWorkerProcess(service, {});
    const messages = await events;
    expect(messages.at(-2)?.data).toContain('run.completed');
  }, 60_000);

  it('hands back a step still running at the end of SHUTDOWN_GRACE_MS, exits 0, and another worker takes the step over', async () => {
    worker?.kill('SIGKILL');
    // Steps sleep 8 s; the grace period is 1 s; a lost step's lock lapses after 2 s.
    const [port] = (await freePorts(1)) as [number];
    const env = { SVC_FAILPOINTS: 'step.afterReserve=sleep(8000)', SHUTDOWN_GRACE_MS: '1000', STEP_LOCK_MS: '2000', METRICS_PORT: String(port) };
    worker = startWorkerProcess(service, env);
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow: { version: 2, nodes: [{ id: 'slow', uses: 'math-add', inputs: { a: 1, b: 1 } }, { id: 'out', uses: 'output', inputs: { value: '${slow.result}' } }] } }),
    });
    const events = readSse(res);
    await eventually(async () => total((await scrape(`http://127.0.0.1:${port}`)).samples, 'svc_worker_jobs_active') === 1, { timeoutMs: 15_000, what: 'the step to be running in the worker' });
    const stopped = worker;
    stopped.kill('SIGTERM');
    // Within the grace period and a little more: not the hard stop (grace + 5 s, exit code 1).
    await exited(stopped);
    expect(stopped.exitCode).toBe(0);
    worker = startWorkerProcess(service, { STEP_LOCK_MS: '2000' });
    const messages = await events;
    expect(messages.at(-2)?.data).toContain('run.completed');
    const [step] = await service.prisma.step.findMany({ where: { nodeId: 'slow' }, select: { status: true, attempt: true } });
    expect(step).toEqual({ status: 'completed', attempt: 2 });
  }, 60_000);
});
