import { checkInvariants } from './support/checker';
import { expectFigure, figure, scale } from './support/figures';
import { FAKE_MODEL } from './support/provider-fake';
import { followRun, type ClientRecord } from './support/run-client';
import { startTopology, type Topology } from './support/topology';

/**
 * I1: duplicate idempotent requests racing each other. For each key, four identical
 * `POST /v1/runs` at once through the load balancer (so both APIs answer some), plus one whose
 * connection the client cuts a few milliseconds after sending and which it then sends again with
 * the same key (a lost answer, retried), plus, for every fifth key, one with another body once the
 * key's run exists. Each
 * key must start exactly one run, called at the provider once; every client of a key follows
 * that one run, with the same events under the same ids, to its terminal event and `[DONE]`; the
 * other body is a 422 naming the run; the checker's invariants hold.
 */

const SCENARIO = 'I1';
const KEYS = scale(30, 150);
const DUPLICATES = 4;

let topo: Topology;
beforeAll(async () => {
  topo = await startTopology();
  // A call streams 4 chunks 40 ms apart: the duplicates arrive while the run is being stored and while it runs.
  topo.provider.behave({ chunkDelayMs: 40, chunks: 4 });
}, 300_000);
afterAll(async () => topo?.close(), 60_000);

const workflowOf = (i: number, prompt = 'hello') => ({
  version: 2,
  nodes: [
    { id: 'chat', uses: 'openai-chat', inputs: { prompt: `tag:i1-${i} ${prompt}`, model: FAKE_MODEL, maxTokens: 40 } },
    { id: 'out', uses: 'output', inputs: { value: '${chat.text}' } },
  ],
});

/** A POST whose client gives up on it a few ms after sending: the run may or may not have been created. */
async function cutShort(i: number, key: string): Promise<void> {
  const controller = new AbortController();
  const sent = fetch(`${topo.url}/v1/runs`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${topo.account.token}`, 'Content-Type': 'application/json', 'Idempotency-Key': key },
    body: JSON.stringify({ workflow: workflowOf(i), maxCostUsd: 0.05 }),
    signal: controller.signal,
  });
  setTimeout(() => controller.abort(), 2 + (i % 7));
  await sent.then((res) => res.body?.cancel()).catch(() => undefined);
}

/** The stream as the client saw it: each message's id and event type, `[DONE]` last. */
const shape = (record: ClientRecord) => record.messages.map((m) => (m.data === '[DONE]' ? '[DONE]' : `${m.id}:${(JSON.parse(m.data) as { type: string }).type}`));

it(`${KEYS} keys, each sent ${DUPLICATES} times at once, once cut short and sent again, and every fifth once with another body: one run per key`, async () => {
  const perKey = await Promise.all(
    Array.from({ length: KEYS }, async (_, i) => {
      const key = `i1-key-${i}`;
      const follow = () => followRun(topo.url, topo.account.token, { workflow: workflowOf(i), maxCostUsd: 0.05 }, { deadlineMs: 120_000, idempotencyKey: key });
      const clients = Promise.all(Array.from({ length: DUPLICATES }, follow));
      const retried = cutShort(i, key).then(follow);
      // Another body, sent once the key's run exists: sent first, it would rightly win the key, and the
      // identical requests would be the ones answered 422.
      const mismatch =
        i % 5 === 0
          ? clients.then(() => fetch(`${topo.url}/v1/runs`, {
              method: 'POST',
              headers: { Authorization: `Bearer ${topo.account.token}`, 'Content-Type': 'application/json', 'Idempotency-Key': key },
              body: JSON.stringify({ workflow: workflowOf(i, 'something else'), maxCostUsd: 0.05 }),
            }).then(async (res) => ({ status: res.status, body: (await res.json().catch(() => ({}))) as { code?: string; runId?: string } })))
          : Promise.resolve(undefined);
      return { i, clients: [...(await clients), await retried], mismatch: await mismatch };
    }),
  );
  const allClients = perKey.flatMap((k) => k.clients);
  const check = await checkInvariants({ databaseUrl: topo.databaseUrl, apiUrl: topo.url, token: topo.account.token, provider: topo.provider, clients: allClients, settleMs: 20_000 });
  console.log(`${SCENARIO} checker:`, JSON.stringify(check.counts), check.violations.slice(0, 20));

  const { rows } = await topo.database.pool.query<{ key: string; runs: string }>(
    `SELECT k.key, count(DISTINCT r.id)::text AS runs FROM idempotency_keys k JOIN runs r ON r.id = k.run_id WHERE k.org_id = $1::uuid GROUP BY k.key`,
    [topo.account.orgId],
  );
  const { rows: stored } = await topo.database.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM runs WHERE org_id = $1::uuid`, [topo.account.orgId]);
  let keysWithOtherThanOneRun = KEYS - rows.length;
  let splitClients = 0;
  let unequalStreams = 0;
  let extraProviderCalls = 0;
  let badMismatches = 0;
  const examples: string[] = [];
  for (const { i, clients, mismatch } of perKey) {
    const ids = new Set(clients.map((c) => c.runId));
    if (ids.size !== 1 || clients.some((c) => c.runId === undefined || c.gaveUp)) {
      splitClients += 1;
      examples.push(`key ${i}: runs ${[...ids].join(', ')}; gave up: ${clients.map((c) => c.gaveUp).filter(Boolean).join('; ')}`);
    }
    const first = JSON.stringify(shape(clients[0]!));
    if (clients.some((c) => JSON.stringify(shape(c)) !== first) || !first.endsWith('"[DONE]"]')) {
      unequalStreams += 1;
      examples.push(`key ${i}: streams ${clients.map((c) => shape(c).join(' ')).join(' | ')}`);
    }
    extraProviderCalls += Math.max(0, topo.provider.callsFor(`i1-${i}`).length - 1);
    if (mismatch && !(mismatch.status === 422 && mismatch.body.code === 'idempotency_key_reused' && mismatch.body.runId === clients[0]!.runId)) {
      badMismatches += 1;
      examples.push(`key ${i}: the other body got ${mismatch.status} ${JSON.stringify(mismatch.body)}`);
    }
  }
  keysWithOtherThanOneRun += rows.filter((r) => r.runs !== '1').length;
  console.log(`${SCENARIO}:`, { keys: KEYS, runsStored: stored[0]!.n, splitClients, unequalStreams, extraProviderCalls, badMismatches, examples: examples.slice(0, 5) });

  figure(SCENARIO, `keys, each sent by ${DUPLICATES} clients at once and once cut short then sent again`, KEYS, undefined, 'keys');
  expectFigure(SCENARIO, 'runs stored', Number(stored[0]!.n), { equals: KEYS }, 'runs');
  expectFigure(SCENARIO, 'keys without exactly one run', keysWithOtherThanOneRun, { equals: 0 }, 'keys');
  expectFigure(SCENARIO, "keys whose clients did not all follow the one run to its end", splitClients, { equals: 0 }, 'keys');
  expectFigure(SCENARIO, 'keys whose clients saw different streams', unequalStreams, { equals: 0 }, 'keys');
  expectFigure(SCENARIO, 'provider calls beyond one per key', extraProviderCalls, { equals: 0 }, 'calls');
  expectFigure(SCENARIO, 'another body with a used key not answered 422 naming its run', badMismatches, { equals: 0 }, 'requests');
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
}, 300_000);
