import { performance } from 'node:perf_hooks';
import type { Workload } from '../support/context';
import { Latency } from '../support/latency';
import { processCpuSeconds } from '../support/process-cpu';
import { ANSWER, awaitRuns, CHAT_RUN, memoryProbe, postRuns, startProviderService, stepDurations, USAGE, type MemorySample } from '../support/provider-service';
import { atMost, atLeast, type Row } from '../support/report';
import { startSlowProvider } from '../support/slow-provider';

/** The fake provider's answer time: every step waits this long on its call. */
const LATENCY_MS = 2000;
const KB = 1024;

/**
 * B11: `steps` one-step runs (an `openai-chat` call answered after 2 s) on ONE worker process,
 * separate from the API's, so its memory is its own. The runs are stored while the step queue
 * is held, then released at once: what is in flight is bounded by the worker, not by how fast
 * the API admits. The worker has done a few runs first (not counted), so the baseline memory is
 * a warm process's, not a fresh one's.
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
        env: { PROVIDER_STEP_CONCURRENCY: String(Math.max(2000, steps)) },
      });
      try {
        const worker = service.workers[0]!;
        const memory = memoryProbe(worker);
        const warmup = Math.min(20, steps);
        await postRuns(service, CHAT_RUN, warmup);
        await awaitRuns(service, warmup, 60_000);
        provider.reset();

        await service.hold();
        const since = new Date();
        const created = performance.now();
        await postRuns(service, CHAT_RUN, steps);
        ctx.say(`${steps} runs stored in ${((performance.now() - created) / 1000).toFixed(1)} s while the step queue was held`);
        // The baseline likewise: the least heap of a second's samples of the idle worker.
        let before = await memory();
        for (let i = 0; i < 10; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          const sample = await memory();
          if (sample.heapUsedBytes < before.heapUsedBytes) before = sample;
        }
        const cpuBefore = processCpuSeconds(worker.pid);
        const released = performance.now();
        await service.release();
        // Sampled every 100 ms while the calls are in flight. The heap read at one moment holds
        // whatever garbage the last collection left (up to the young generation's size, tens of
        // MB: more than the steps themselves at a few hundred in flight), so the figure is taken
        // from the sample with the least heap per in-flight step among those within 90% of the
        // peak: the one nearest after a collection.
        const samples: (MemorySample & { inFlight: number })[] = [];
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            const inFlight = provider.inFlight;
            if (inFlight > 0) samples.push({ ...(await memory()), inFlight });
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        })();
        const counts = await awaitRuns(service, warmup + steps, 600_000).finally(() => (sampling = false));
        await sampler;
        const most = Math.max(0, ...samples.map((m) => m.inFlight));
        const perStep = (m: MemorySample & { inFlight: number }) => (m.heapUsedBytes - before.heapUsedBytes) / m.inFlight;
        const peak = samples.filter((m) => m.inFlight >= 0.9 * most).reduce<(MemorySample & { inFlight: number }) | undefined>((a, m) => (a === undefined || perStep(m) < perStep(a) ? m : a), undefined) ?? { ...before, inFlight: 0 };
        const seconds = (performance.now() - released) / 1000;
        const cpuMs = ((processCpuSeconds(worker.pid) - cpuBefore) * 1000) / steps;
        const completed = (counts.completed ?? 0) - warmup;
        if (completed !== steps) {
          ctx.fail('B11', new Error(`${completed} of ${steps} runs completed (${JSON.stringify(counts)})`));
          for (const line of service.errorLines().slice(0, 5)) ctx.say(`logged: ${line}`);
        }

        const added = new Latency();
        for (const ms of await stepDurations(service, since)) added.record(Math.max(0, ms - LATENCY_MS));
        if (added.count !== steps) ctx.fail('B11', new Error(`${added.count} of ${steps} steps have a step.started and a step.completed in their run's log`));
        const rssPerStep = (peak.rssBytes - before.rssBytes) / Math.max(1, peak.inFlight) / KB;
        const heapPerStep = (peak.heapUsedBytes - before.heapUsedBytes) / Math.max(1, peak.inFlight) / KB;
        ctx.say(`drained in ${seconds.toFixed(1)} s; the fake held at most ${provider.peakInFlight} calls at once; ${provider.answered} answered`);
        ctx.say(`worker before: RSS ${(before.rssBytes / 2 ** 20).toFixed(1)} MiB, heap ${(before.heapUsedBytes / 2 ** 20).toFixed(1)} MiB; at ${peak.inFlight} in flight: RSS ${(peak.rssBytes / 2 ** 20).toFixed(1)} MiB, heap ${(peak.heapUsedBytes / 2 ** 20).toFixed(1)} MiB`);
        ctx.say(`time added to the fake's ${LATENCY_MS} ms, step.started → step.completed (Redis' clock, ms): ${added.summary()}`);
        ctx.say(`worker CPU: ${cpuMs.toFixed(2)} ms per step`);
        const rows: Row[] = [
          { id: 'B11', figure: `runs completed of ${steps}`, ours: completed, unit: 'runs', kind: 'rate', goal: atLeast(`all ${steps}`, completed, steps) },
          { id: 'B11', figure: 'peak provider calls in flight (seen by the fake)', ours: provider.peakInFlight, unit: 'calls', kind: 'rate' },
          { id: 'B11', figure: `worker RSS per in-flight step (at ${peak.inFlight})`, ours: rssPerStep, unit: 'KB', kind: 'size', goal: atMost('≤ 50 KB', rssPerStep, 50) },
          { id: 'B11', figure: `worker heap used per in-flight step (at ${peak.inFlight})`, ours: heapPerStep, unit: 'KB', kind: 'size', goal: atMost('≤ 50 KB', heapPerStep, 50) },
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
