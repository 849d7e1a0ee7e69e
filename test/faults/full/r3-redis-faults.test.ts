import { startTopologyPatiently } from '../support/fault-load';
import { scale } from '../support/figures';
import { runUnderRedisFault } from '../support/redis-fault-run';
import type { Topology } from '../support/topology';

/**
 * R3 (make test-faults): the harsher Redis faults, each while runs are in flight: SIGKILL (the
 * AOF keeps what it fsynced), a restart with no data at all (the queue and every run's event log
 * are gone: Postgres is the truth and the reaper re-enqueues from it), and every client
 * connection killed (normal and pub/sub) with Redis itself up. The graceful restart is in
 * ../r3-redis-restart.test.ts.
 */

let topo: Topology;
beforeAll(async () => {
  topo = await startTopologyPatiently();
}, 400_000);
afterAll(async () => topo?.close(), 60_000);

const count = scale(40, 200);

it(`keeps ${count} concurrent runs whole across kill -9 of Redis (AOF) and a restart`, async () => {
  await runUnderRedisFault(
    topo,
    {
      label: 'kill -9 with AOF',
      inject: async (t) => {
        await t.servers.killRedis();
        await t.servers.startRedis();
      },
    },
    count,
  );
}, 300_000);

it(`keeps ${count} concurrent runs whole across a Redis restarted empty`, async () => {
  await runUnderRedisFault(
    topo,
    {
      label: 'restart empty',
      inject: async (t) => {
        await t.servers.wipeRedis();
        await t.servers.startRedis();
      },
    },
    count,
  );
}, 300_000);

it(`keeps ${count} concurrent runs whole across CLIENT KILL of every connection`, async () => {
  await runUnderRedisFault(
    topo,
    {
      label: 'CLIENT KILL of every connection',
      inject: async (t) => {
        await t.killRedisClients();
      },
    },
    count,
  );
}, 300_000);
