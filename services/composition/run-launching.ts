import { Failpoints } from '../platform/failpoints';
import { RunLauncher, RunStarter } from '../runs';
import type { ServiceResources } from './service-resources';

/** Starts runs for `runs.create`, `runs.node` and schedules' ticks, counting each in `svc_runs_started_total`. */
export function runLauncher(resources: ServiceResources): RunLauncher {
  const { runs, bus, log, metrics, config } = resources;
  // Counted in svc_runs_started_total as stored: a request attached to its key's run is not a run started.
  const starter = new RunStarter({
    runs,
    events: bus,
    queue: resources.queue,
    lifecycle: resources.lifecycle,
    contexts: resources.contexts,
    nodes: { find: resources.findNode, mayRunInline: resources.mayRunInline },
    log,
    failpoints: new Failpoints(config.failpoints),
    redisWaitMs: config.requestRedisWaitMs,
    onStored: () => metrics.runsStarted.inc(),
  });
  return new RunLauncher({
    specs: resources.catalog,
    findNode: resources.findNode,
    pinNodes: resources.pinNodes,
    resolver: resources.workflows,
    starter: { start: (request) => starter.start(request), startFailed: (request, error) => starter.startFailed(request, error) },
    events: bus,
    runs,
    recordCheckMs: config.streamRecordCheckMs,
  });
}
