import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isErrorCode, isOpName, OP_NAMES, OPERATIONS, ROUTE_NAMES, ROUTES, validate, type Operation } from '../../services/contract';
import { issueSessionToken } from '../support/fixtures';
import { startTestService, type TestService } from '../support/service';
import { expectFigure, figure, FULL, percentile, scale, timingGoal } from './support/figures';
import { exampleInput, hostileRequests, seededRandom, type HostileRequest } from './support/hostile-requests';
import { inPool, latencyProbe, sendRaw, type RawAnswer } from './support/raw-http';

/**
 * S1: malformed requests for every operation and route of the contract, generated
 * from their input schemas (test/faults/support/hostile-requests.ts), sent 16 at a time against
 * a real service over HTTP while a probe asks /healthz throughout. Goals: no 5xx; 413 for every
 * body over the limit; every 400 names what is wrong; /healthz p99 under 100 ms.
 * test/integration/hostile-input.test.ts keeps the hand-written cases with their exact wording.
 */

/** A small body limit: oversize bodies stay cheap to send, and "huge" values are sized from it. */
const BODY_LIMIT = 256 * 1024;
const PER_ENDPOINT = scale(300, 10_000);
const CONCURRENCY = 16;
/** Requests per endpoint generated, sent and judged at a time. */
const BATCH = 200;
const SEED = 0x51;

const declarations: [string, Operation][] = [...OP_NAMES, ...ROUTE_NAMES].map((name) => [name, isOpName(name) ? OPERATIONS[name] : ROUTES[name]]);

interface Problem {
  request: HostileRequest;
  answer: RawAnswer;
  why: string;
}

function describe1(p: Problem): string {
  return `${p.request.endpoint} ${p.request.method} ${p.request.target.slice(0, 120)} [${p.request.label}] → ${p.answer.status} ${p.answer.error ?? p.answer.text.slice(0, 300)} (${p.why})`;
}

/** What is wrong with an answer to a hostile request, by category; none: a good answer. */
function judge(request: HostileRequest, answer: RawAnswer): { category: string; why: string } | null {
  if (answer.status === 0) return { category: 'no answer', why: answer.error ?? 'no status' };
  if (answer.status >= 500) return { category: '5xx', why: 'server error' };
  if (request.expect !== undefined && answer.status !== request.expect) {
    return { category: request.kind === 'oversize' ? 'oversize not 413' : 'wrong status', why: `expected ${request.expect}` };
  }
  if (answer.status < 400) return null;
  let body: { error?: unknown; code?: unknown };
  try {
    body = JSON.parse(answer.text) as typeof body;
  } catch {
    return { category: 'unexplained 4xx', why: 'the body is not JSON' };
  }
  if (typeof body.error !== 'string' || body.error.trim() === '' || !isErrorCode(body.code)) return { category: 'unexplained 4xx', why: 'no error message or no known code' };
  if (answer.status === 400 && request.names && !request.names.test(body.error)) return { category: 'unhelpful 400', why: `the message names none of ${request.names}` };
  return null;
}

describe('S1: malformed requests generated from the contract, for every endpoint', () => {
  let service: TestService;
  let session: string;

  beforeAll(async () => {
    service = await startTestService({ env: { BODY_LIMIT_BYTES: String(BODY_LIMIT), UPLOAD_MAX_BYTES: String(BODY_LIMIT) } });
    session = await issueSessionToken(service.prisma, service.account);
  });

  afterAll(async () => {
    await service?.close();
  });

  it('starts every endpoint from an example its schema accepts, so each mutation is the only thing wrong', () => {
    const invalid = declarations.flatMap(([name, op]) => {
      const checked = validate(op.input, exampleInput(op));
      return checked.ok ? [] : [`${name}: ${checked.message}`];
    });
    expect(invalid).toEqual([]);
    expect(declarations.length).toBeGreaterThanOrEqual(OP_NAMES.length + ROUTE_NAMES.length);
  });

  it(`answers ${PER_ENDPOINT} hostile requests per endpoint without a 5xx, 413 for oversize, every 400 naming the problem, /healthz p99 < 100 ms`, async () => {
    const rnd = seededRandom(SEED);
    const tokenFor = (op: Operation) => (op.kinds && !op.kinds.includes('personal') ? session : service.account.token);
    /** One batch: `perEndpoint` requests of every endpoint, mixed so every kind of refusal runs beside every other. */
    const batchOf = (perEndpoint: number): HostileRequest[] => {
      const requests = declarations.flatMap(([name, op]) => hostileRequests(name, op, perEndpoint, rnd, { tokenFor, bodyLimitBytes: BODY_LIMIT }));
      for (let i = requests.length - 1; i > 0; i -= 1) {
        const j = Math.floor(rnd() * (i + 1));
        [requests[i], requests[j]] = [requests[j]!, requests[i]!];
      }
      return requests;
    };

    // The same probe with nothing else going on: what this machine gives /healthz at rest.
    const resting = latencyProbe(`${service.url}/healthz`);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const baseline = await resting.stop();

    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    // The service shares this process: how long its event loop was held, beside /healthz's latency.
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const probe = latencyProbe(`${service.url}/healthz`);
    const started = Date.now();
    // Sent and judged batch by batch: the full run's 280,000 requests, huge bodies included, are never held at once.
    const problems = new Map<string, { count: number; examples: Problem[] }>();
    const statuses = new Map<number, number>();
    const slowest: { request: HostileRequest; ms: number }[] = [];
    let sent = 0;
    let oversize = 0;
    let resent = 0;
    let named = 0;
    for (let done = 0; done < PER_ENDPOINT; done += BATCH) {
      const requests = batchOf(Math.min(BATCH, PER_ENDPOINT - done));
      const answers = await inPool(requests, CONCURRENCY, (request) => sendRaw(service.url, request, agent));
      requests.forEach((request, i) => {
        const answer = answers[i]!;
        sent += 1;
        if (request.kind === 'oversize') oversize += 1;
        if (answer.retried) resent += 1;
        if (answer.status === 400 && request.names !== null) named += 1;
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        slowest.push({ request: { ...request, body: undefined }, ms: answer.ms });
        const verdict = judge(request, answer);
        if (!verdict) return;
        const seen = problems.get(verdict.category) ?? { count: 0, examples: [] };
        seen.count += 1;
        // A few kept for the failure message, without their bodies.
        if (seen.examples.length < 8) seen.examples.push({ request: { ...request, body: undefined }, answer, why: verdict.why });
        problems.set(verdict.category, seen);
      });
      slowest.sort((a, b) => b.ms - a.ms).splice(8);
    }
    const seconds = (Date.now() - started) / 1000;
    const health = await probe.stop();
    loopDelay.disable();
    agent.destroy();
    const count = (category: string) => problems.get(category)?.count ?? 0;

    figure('S1', 'requests per endpoint', PER_ENDPOINT);
    figure('S1', 'endpoints', declarations.length);
    figure('S1', 'requests per second', Math.round(sent / seconds), undefined, 'req/s');
    figure('S1', 'oversize bodies sent', oversize);
    figure('S1', '/healthz p99 at rest (baseline, same process)', Math.round(percentile(baseline.latencies, 99)), undefined, 'ms');
    figure('S1', 'event loop delay p99 under load', Math.round(loopDelay.percentile(99) / 1e6), undefined, 'ms');
    figure('S1', 'event loop delay max under load', Math.round(loopDelay.max / 1e6), undefined, 'ms');
    console.log(`S1 slowest answers:\n${slowest.map(({ request, ms }) => `${Math.round(ms)} ms ${request.endpoint} [${request.label}]`).join('\n')}`);
    figure('S1', 'requests resent after a kept-alive connection closed', resent);
    figure('S1', '400s checked for naming the problem', named);
    const report = [...problems.entries()].map(([category, seen]) => `${category}: ${seen.count}\n  ${seen.examples.map(describe1).join('\n  ')}`).join('\n');
    if (report) console.log(`S1 problems (${FULL ? 'full' : 'short'} run, seed ${SEED}):\n${report}\nstatuses: ${JSON.stringify(Object.fromEntries(statuses))}`);

    expect(oversize).toBeGreaterThan(0);
    expect(health.latencies.length).toBeGreaterThan(10);
    expect(health.failures).toEqual([]);
    expectFigure('S1', '5xx responses', count('5xx'), { max: 0 });
    expectFigure('S1', 'requests without an answer', count('no answer'), { max: 0 });
    expectFigure('S1', 'oversize bodies not answered 413', count('oversize not 413'), { max: 0 });
    expectFigure('S1', '400s not naming the problem', count('unhelpful 400'), { max: 0 });
    expectFigure('S1', '4xx without a message and code', count('unexplained 4xx'), { max: 0 });
    expectFigure('S1', 'other expected statuses missed (401, 415)', count('wrong status'), { max: 0 });
    // A timing: judged in the full run only (timingGoal), and there only on a machine whose
    // /healthz meets it at rest: on a shared machine already past 100 ms idle (seen: 318 ms at a
    // load average of 20 on 2 cores) the figure measures the neighbours, not the service.
    const p99 = Math.round(percentile(health.latencies, 99));
    const restingP99 = Math.round(percentile(baseline.latencies, 99));
    const goal = timingGoal({ max: 100 });
    if (goal && restingP99 <= 100) expectFigure('S1', '/healthz p99', p99, goal, 'ms');
    else if (!figure('S1', '/healthz p99', p99, goal, 'ms')) console.log(`S1: /healthz p99 ${p99} ms under load not judged: ${restingP99} ms at rest on this machine`);
  }, FULL ? 3_600_000 : 300_000);
});
