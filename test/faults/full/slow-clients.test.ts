import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { RunRepository } from '../../../services/store';
import { eventually } from '../../support/eventually';
import { seedAccount, type SeededAccount } from '../../support/fixtures';
import { freePorts } from '../../support/local-servers';
import { bearer, startTestService, type TestService } from '../../support/service';
import { readSse } from '../../support/sse';
import { expectFigure, figure, percentile, scale } from '../support/figures';
import { serviceProcess, type ServiceProcess } from '../support/service-process';
import { slowClients, stalledReader, type Attack, type StalledReader } from '../support/slow-attacks';

const execFileAsync = promisify(execFile);

/**
 * S4: slow clients against an API process (ROLE=api, its own OS process, so that the attackers
 * in this process do not share its event loop): slowloris, slow bodies, stream readers that never
 * read, and a flood of streams from one token. Another organization's steady probe must keep its
 * p99 latency within 2x of its baseline, and streams beyond MAX_OPEN_STREAMS_PER_ORG get 429.
 */

const STREAM_LIMIT = 10;
const HEADERS_TIMEOUT_MS = 3000;
const REQUEST_TIMEOUT_MS = 6000;
const BASELINE_MS = scale(5000, 15_000);
const ATTACK_MS = scale(10_000, 30_000);
const SLOWLORIS = scale(50, 200);
const SLOW_BODIES = scale(20, 100);
const FLOOD = STREAM_LIMIT * 3;
/** Many fast steps: a stream of many events, written to a client that does not read them. */
const chatty = {
  version: 2,
  nodes: [
    { id: 'n0', uses: 'math-add', inputs: { a: 0, b: 1 } },
    ...Array.from({ length: 59 }, (_, i) => ({ id: `n${i + 1}`, uses: 'math-add', inputs: { a: `\${n${i}.result}`, b: 1 } })),
    { id: 'sum', uses: 'output', inputs: { value: '${n59.result}' } },
  ],
};

/**
 * Times GET /v1/nodes, one request after another, until `ms` have passed, from a process of its
 * own: in this one the attackers' sockets and the in-process worker would delay the probe's own
 * event loop, and the figure would measure the client rather than the API.
 */
const PROBE_SCRIPT = `
const [url, token, ms] = process.argv.slice(1);
(async () => {
  const latencies = [];
  const until = Date.now() + Number(ms);
  while (Date.now() < until) {
    const started = performance.now();
    const res = await fetch(url + '/v1/nodes', { headers: { Authorization: 'Bearer ' + token } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error('the probe got ' + res.status);
    latencies.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  process.stdout.write(JSON.stringify(latencies));
})().catch((err) => { console.error(err); process.exit(1); });
`;

async function probe(url: string, token: string, ms: number): Promise<number[]> {
  const { stdout } = await execFileAsync(process.execPath, ['-e', PROBE_SCRIPT, url, token, String(ms)], { maxBuffer: 16 * 1024 * 1024, timeout: ms + 30_000 });
  return JSON.parse(stdout) as number[];
}

describe('S4: slow clients and a stream flood', () => {
  let service: TestService;
  let api: ServiceProcess;
  let attacker: SeededAccount;
  let logDir: string;
  const attacks: Attack[] = [];
  const readers: StalledReader[] = [];
  const flood: AbortController[] = [];

  beforeAll(async () => {
    // This in-process service runs the steps; the API under attack is a process of its own.
    service = await startTestService({ env: { MAX_OPEN_STREAMS_PER_ORG: String(STREAM_LIMIT) } });
    attacker = await seedAccount(service.prisma, { slug: 'attacker', scopes: ['read', 'run'], balanceMicros: 100_000_000 });
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-s4-'));
    const [port] = (await freePorts(1)) as [number];
    api = serviceProcess({
      name: 'api',
      role: 'api',
      port,
      logDir,
      env: { ...process.env, ...service.env, LOG_LEVEL: 'info', HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) } as Record<string, string>,
    });
    await api.start();
  }, 120_000);

  afterAll(async () => {
    for (const controller of flood) controller.abort();
    for (const reader of readers) reader.close();
    await Promise.all(attacks.map((a) => a.stop()));
    await api?.stop();
    await service?.close();
    if (logDir) fs.rmSync(logDir, { recursive: true, force: true });
  });

  it('keeps other clients within 2x of their baseline p99 and answers 429 beyond the stream limit', async () => {
    const url = api.url!;
    const victim = service.account.token;
    await probe(url, victim, 1000);
    const baseline = await probe(url, victim, BASELINE_MS);

    // Slowloris: headers trickled, a line a second; slow bodies: a byte a second of a promised 100 kB.
    attacks.push(slowClients(url, SLOWLORIS, 'GET /v1/nodes HTTP/1.1\r\nHost: svc.test\r\n', 'X-Slow: 1\r\n', 1000));
    const post = ['POST /v1/runs HTTP/1.1', 'Host: svc.test', `Authorization: Bearer ${attacker.token}`, 'Content-Type: application/json', 'Content-Length: 100000', '', '{'].join('\r\n');
    attacks.push(slowClients(url, SLOW_BODIES, post, ' ', 1000));
    // Readers that never read: streams full of events, then streams that stay open.
    const chattyReaders = await Promise.all(Array.from({ length: 4 }, () => stalledReader(url, attacker.token, 'POST', '/v1/runs', { workflow: chatty })));
    readers.push(...chattyReaders);
    // Each chatty run ends (its slot comes back) though its client reads nothing.
    await eventually(async () => (await service.prisma.run.count({ where: { orgId: attacker.orgId, status: 'completed' } })) === chattyReaders.length, { timeoutMs: 60_000, what: 'the chatty runs to complete' });
    // A run that stays running (its steps are never enqueued): its streams stay open.
    const runId = await new RunRepository(service.database).createRun({
      orgId: attacker.orgId, userId: attacker.userId, tokenId: attacker.tokenId, definition: { version: 2, nodes: [] }, inputs: {}, capMicros: 100_000, start: true, steps: [],
    });
    const holders = await Promise.all(Array.from({ length: 4 }, () => stalledReader(url, attacker.token, 'GET', `/v1/runs/${runId}/events`)));
    readers.push(...holders);
    expect(holders.map((h) => h.status)).toEqual([200, 200, 200, 200]);
    // The flood: three times the limit of streams from the attacker's one token.
    const answers = await Promise.all(Array.from({ length: FLOOD }, async () => {
      const controller = new AbortController();
      flood.push(controller);
      const res = await fetch(`${url}/v1/runs/${runId}/events`, { headers: bearer(attacker.token), signal: controller.signal });
      if (res.status !== 200) await res.arrayBuffer();
      return { status: res.status, retryAfter: res.headers.get('retry-after') };
    }));
    const accepted = answers.filter((a) => a.status === 200).length;
    const refused = answers.filter((a) => a.status === 429 && a.retryAfter !== null).length;

    const during = await probe(url, victim, ATTACK_MS);
    const [baseP99, attackP99] = [percentile(baseline, 99), percentile(during, 99)];
    const [slowloris, slowBodies] = attacks as [Attack, Attack];
    figure('S4', 'probe p99 baseline', Math.round(baseP99 * 10) / 10, undefined, 'ms');
    figure('S4', 'probe p99 under attack', Math.round(attackP99 * 10) / 10, undefined, 'ms');
    figure('S4', 'probe p50 baseline / under attack', `${percentile(baseline, 50).toFixed(1)} / ${percentile(during, 50).toFixed(1)}`, undefined, 'ms');
    figure('S4', 'slowloris connections cut by the server', slowloris.cut, { min: 1 });
    figure('S4', 'slow-body connections cut by the server', slowBodies.cut, { min: 1 });
    expectFigure('S4', 'streams accepted from one token (limit + stalled readers)', accepted + holders.length, { equals: STREAM_LIMIT });
    expectFigure('S4', '429 beyond the stream limit', refused, { equals: FLOOD - accepted });
    expectFigure('S4', 'probe p99 ÷ baseline p99', Math.round((attackP99 / baseP99) * 100) / 100, { max: 2 });
    // The server cut the slow clients at its timeouts rather than holding them.
    expect(slowloris.cut).toBeGreaterThan(0);
    expect(slowBodies.cut).toBeGreaterThan(0);

    // Once the attacker's clients go away, its slots come back.
    for (const controller of flood.splice(0)) controller.abort();
    for (const reader of readers.splice(0)) reader.close();
    await eventually(async () => {
      const res = await fetch(`${url}/v1/runs`, { method: 'POST', headers: bearer(attacker.token), body: JSON.stringify({ workflow: chatty }) });
      return res.status === 200 && (await readSse(res)).at(-1)?.data === '[DONE]';
    }, { timeoutMs: 30_000, what: 'a stream slot of the attacker to come back' });
  }, 180_000);
});
