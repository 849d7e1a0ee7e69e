import type { RunEvent } from '../../services/contract';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

/**
 * The service on a 3-node Redis Cluster (REDIS_CLUSTER=true, REDIS_URL naming one
 * node). BullMQ needs its queue prefix in a hash tag; every key of ours shares it, so the queue's
 * and the event bus' multi-key scripts never span slots.
 */

const workflow = {
  version: 2,
  nodes: [
    { id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } },
    { id: 'b', uses: 'math-add', inputs: { a: 10, b: 20 } },
    { id: 'c', uses: 'math-add', inputs: { a: '${a.result}', b: '${b.result}' } },
    { id: 'sum', uses: 'output', inputs: { value: '${c.result}' } },
  ],
};

describe('the service on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let service: TestService;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    service = await startTestService({ env: { REDIS_URL: cluster.url, REDIS_CLUSTER: 'true' } });
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await cluster?.close();
  }, 60_000);

  it('runs a workflow to its end, streams it whole, and resumes the stream from Last-Event-ID', async () => {
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow }),
    });
    expect(res.status).toBe(200);
    const messages = await readSse(res);
    const events = messages.filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
    expect(events.at(-1)).toMatchObject({ type: 'run.completed', outputs: { sum: { kind: 'float', value: 35 } } });
    expect(messages.map((m) => m.id).slice(0, -1)).toEqual(events.map((_, i) => String(i + 1)));
    const first = events[0]!;
    const runId = first.type === 'run.started' ? first.runId : '';

    const resumed = await fetch(`${service.url}/v1/runs/${runId}/events`, { headers: { ...bearer(service.account.token), 'Last-Event-ID': '2' } });
    expect(resumed.status).toBe(200);
    const rest = await readSse(resumed);
    expect(rest.map((m) => m.data)).toEqual([...messages.slice(2).map((m) => m.data)]);

    const record = (await (await fetch(`${service.url}/v1/runs/${runId}`, { headers: bearer(service.account.token) })).json()) as { status: string; outputs: unknown };
    expect(record).toMatchObject({ status: 'completed', outputs: { sum: { kind: 'float', value: 35 } } });
  }, 60_000);

  it("keeps every key of the service's prefix in the one slot of its hash tag", async () => {
    const prefix = service.config.redisPrefix;
    expect(prefix).toMatch(/^\{[^{}]+\}$/);
    const keysByNode = await Promise.all(cluster.ports.map(async (port) => (await cluster.cli(port, '--scan')).split('\n').filter(Boolean)));
    const all = keysByNode.flat();
    // Queue keys (BullMQ's) and ours (run logs, rate limits) are there, all under the tagged prefix.
    expect(all.some((key) => key.startsWith(`${prefix}:steps:`))).toBe(true);
    expect(all.filter((key) => !key.startsWith(`${prefix}:`))).toEqual([]);
    // One node holds them all: the slot of the tag.
    expect(keysByNode.filter((keys) => keys.length > 0)).toHaveLength(1);
    const slot = (await cluster.cli(cluster.ports[0]!, 'cluster', 'keyslot', prefix)).trim();
    for (const key of all.slice(0, 20)) expect((await cluster.cli(cluster.ports[0]!, 'cluster', 'keyslot', key)).trim()).toBe(slot);
  });
});
