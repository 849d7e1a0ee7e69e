import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ServiceProcess } from '../../faults/support/service-process';
import type { Workload } from '../support/context';
import { Latency } from '../support/latency';
import { processCpuSeconds } from '../support/process-cpu';
import { ANSWER, awaitRuns, CHAT_RUN, memoryProbe, postRuns, startProviderService, stepDurations, USAGE, type MemorySample, type ProviderService } from '../support/provider-service';
import { atMost, atLeast, type Row } from '../support/report';
import { startSlowProvider, type SlowProvider } from '../support/slow-provider';

/** The fake provider's answer time: every step waits this long on its call. */
const LATENCY_MS = 2000;
const KB = 1024;

/**
 * B11: `steps` one-step runs (an `openai-chat` call answered after 2 s) on ONE worker process,
 * separate from the API's, so its memory is its own. The runs are stored while the step queue
 * is held, then released at once: what is in flight is bounded by the worker, not by how fast
 * the API admits. The worker has done a few runs first (not counted), so the baseline memory is
 * a warm process's, not a fresh one's. Time added and CPU come from that phase; memory per
 * in-flight step from a second one, with every call held at the fake (`memoryAtPlateau`).
 */
export function b11(steps: number): Workload {
  return {
    id: 'B11',
    title: `provider steps in flight: ${steps} steps of ${LATENCY_MS / 1000} s each on one worker process`,
    async run(ctx) {
      const provider = await startSlowProvider({ latencyMs: LATENCY_MS, text: ANSWER, usage: USAGE, refuse: { kind: 'none' } });
      const service = await startProviderService(ctx, {
        name: 'b11',
        providerBaseUrl: provider.baseUrl,
        workers: 1,
        steps,
        env: { PROVIDER_STEP_CONCURRENCY: String(Math.max(2000, steps)), NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc --require ${COLLECT_ON_SIGNAL}`.trim() },
      });
      try {
        const worker = service.workers[0]!;
        const memory = memoryProbe(worker);
        const warmup = Math.min(20, steps);
        await postRuns(service, CHAT_RUN, warmup);
        await awaitRuns(service, warmup, 60_000);
        // Memory first, while the worker's RSS is still a warm process's, not the high-water mark of a drain.
        const plateau = await memoryAtPlateau(service, provider, memory, steps, warmup);
        ctx.say(
          `memory phase: every call held at the fake until all ${steps} were in flight (reached in ${plateau.reachedS.toFixed(1)} s); after a full collection, ` +
            `worker before: RSS ${mib(plateau.before.rssBytes)}, heap ${mib(plateau.before.heapUsedBytes)}; with ${plateau.inFlight} in flight: RSS ${mib(plateau.at.rssBytes)}, heap ${mib(plateau.at.heapUsedBytes)}`,
        );
        const done = warmup + steps;
        provider.reset();

        await service.hold();
        const since = new Date();
        const created = performance.now();
        await postRuns(service, CHAT_RUN, steps);
        ctx.say(`${steps} runs stored in ${((performance.now() - created) / 1000).toFixed(1)} s while the step queue was held`);
        const cpuBefore = processCpuSeconds(worker.pid);
        const released = performance.now();
        await service.release();
        const counts = await awaitRuns(service, done + steps, 600_000);
        const seconds = (performance.now() - released) / 1000;
        const cpuMs = ((processCpuSeconds(worker.pid) - cpuBefore) * 1000) / steps;
        const completed = (counts.completed ?? 0) - done;
        if (completed !== steps) {
          ctx.fail('B11', new Error(`${completed} of ${steps} runs completed (${JSON.stringify(counts)})`));
          for (const line of service.errorLines().slice(0, 5)) ctx.say(`logged: ${line}`);
        }

        const added = new Latency();
        for (const ms of await stepDurations(service, since)) added.record(Math.max(0, ms - LATENCY_MS));
        if (added.count !== steps) ctx.fail('B11', new Error(`${added.count} of ${steps} steps have a step.started and a step.completed in their run's log`));
        ctx.say(`drained in ${seconds.toFixed(1)} s; the fake held at most ${provider.peakInFlight} calls at once; ${provider.answered} answered`);
        ctx.say(`time added to the fake's ${LATENCY_MS} ms, step.started → step.completed (Redis' clock, ms): ${added.summary()}`);
        ctx.say(`worker CPU: ${cpuMs.toFixed(2)} ms per step`);
        const rssPerStep = (plateau.at.rssBytes - plateau.before.rssBytes) / plateau.inFlight / KB;
        const heapPerStep = (plateau.at.heapUsedBytes - plateau.before.heapUsedBytes) / plateau.inFlight / KB;
        const rows: Row[] = [
          { id: 'B11', figure: `runs completed of ${steps}`, ours: completed, unit: 'runs', kind: 'rate', goal: atLeast(`all ${steps}`, completed, steps) },
          { id: 'B11', figure: 'peak provider calls in flight (seen by the fake)', ours: provider.peakInFlight, unit: 'calls', kind: 'rate' },
          { id: 'B11', figure: `worker RSS per in-flight step (all ${plateau.inFlight} in flight)`, ours: rssPerStep, unit: 'KB', kind: 'size', goal: atMost('≤ 50 KB', rssPerStep, 50) },
          { id: 'B11', figure: `worker heap used per in-flight step (all ${plateau.inFlight} in flight)`, ours: heapPerStep, unit: 'KB', kind: 'size', goal: atMost('≤ 50 KB', heapPerStep, 50) },
          { id: 'B11', figure: `time added to a ${LATENCY_MS / 1000} s call, p50`, ours: added.percentile(50), unit: 'ms', kind: 'time', goal: atMost('≤ 20 ms', added.percentile(50), 20) },
          { id: 'B11', figure: `time added to a ${LATENCY_MS / 1000} s call, p99`, ours: added.percentile(99), unit: 'ms', kind: 'time', goal: atMost('≤ 250 ms', added.percentile(99), 250) },
          { id: 'B11', figure: 'worker CPU per step', ours: cpuMs, unit: 'ms', kind: 'time' },
        ];
        return rows;
      } finally {
        await service.close();
        await provider.close();
      }
    },
  };
}

/** Makes the worker run a full garbage collection on SIGUSR2 (a bench instrument). */
const COLLECT_ON_SIGNAL = path.join(__dirname, '../support/collect-on-signal.cjs');

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** The worker's memory after a full garbage collection: the least heap of a few samples after SIGUSR2, with its RSS. */
async function collected(worker: ServiceProcess, memory: () => Promise<MemorySample>): Promise<MemorySample> {
  if (!worker.pid) throw new Error(`${worker.name} is not running`);
  process.kill(worker.pid, 'SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  let least = await memory();
  for (let i = 0; i < 4; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const sample = await memory();
    if (sample.heapUsedBytes < least.heapUsedBytes) least = sample;
  }
  return least;
}

/**
 * B11's memory phase: another `steps` runs, their calls held at the fake until every one is in
 * flight, so the worker's growth is divided by all of them at once, with no run starting or
 * finishing meanwhile. Both readings, idle and at the plateau, follow a full garbage collection
 * (the worker runs one on SIGUSR2: `collect-on-signal.cjs`), so they are what the work keeps alive.
 */
async function memoryAtPlateau(
  service: ProviderService,
  provider: SlowProvider,
  memory: () => Promise<MemorySample>,
  steps: number,
  completedBefore: number,
): Promise<{ before: MemorySample; at: MemorySample; inFlight: number; reachedS: number }> {
  provider.reset();
  provider.hold();
  try {
    await service.hold();
    await postRuns(service, CHAT_RUN, steps);
    const before = await collected(service.workers[0]!, memory);
    const released = performance.now();
    await service.release();
    const deadline = Date.now() + 300_000;
    while (provider.inFlight < steps) {
      if (Date.now() > deadline) throw new Error(`only ${provider.inFlight} of ${steps} calls reached the fake in 300 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const reachedS = (performance.now() - released) / 1000;
    const at = await collected(service.workers[0]!, memory);
    return { before, at, inFlight: provider.inFlight, reachedS };
  } finally {
    provider.letGo();
    await awaitRuns(service, completedBefore + steps, 600_000);
  }
}
