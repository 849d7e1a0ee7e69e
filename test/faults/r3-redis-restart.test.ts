import { startTopologyPatiently } from './support/fault-load';
import { scale } from './support/figures';
import { runUnderRedisFault } from './support/redis-fault-run';
import type { Topology } from './support/topology';

/**
 * R3 (make test's share): Redis restarted gracefully (AOF flushed, reloaded) while runs are in
 * flight. Every run ends, every client's stream ends with its terminal event then [DONE]
 * (resumed where it was cut), workers consume again within 10 s, and the checker finds nothing.
 * The harsher Redis faults are in full/r3-redis-faults.test.ts.
 */

let topo: Topology;
beforeAll(async () => {
  topo = await startTopologyPatiently();
}, 400_000);
afterAll(async () => topo?.close(), 60_000);

it(`keeps ${scale(40, 200)} concurrent runs whole across a graceful Redis restart`, async () => {
  await runUnderRedisFault(topo, { label: 'graceful restart', inject: (t) => t.servers.restartRedis() }, scale(40, 200));
}, 240_000);
