/**
 * A local model step beside 16 cheap steps in one worker process (ROLE=all, WORKER_CONCURRENCY
 * 17): 16 lanes each run one-step workflows (math-add) back to back through the HTTP API while an
 * `image-upscale` step (ESRGAN-slim, 2×, 128×128) runs again and again in the same process.
 * Three phases of the same length: no model (the baseline), the model on its model thread (how
 * the node runs), and the same model work called on the event loop itself (what the thread
 * avoids). Prints the cheap runs' latency (p50/p99/max) and the process's event-loop delay
 * (perf_hooks.monitorEventLoopDelay, p50/p99/max) per phase; docs/performance.md, Local models.
 */
import fs from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import path from 'node:path';
import sharp from 'sharp';
import { BlobUrlSigner, FsBlobStore } from '../../services/blobs';
import { BlobArtifactStore, localModelNodes, ModelPool, systemLocalTools } from '../../services/nodes';
import { startBenchService, withBenchStack } from '../support/bench-stack';
import { nodeContext } from '../support/node-harness';
import { fixed, Latency } from './support/latency';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from './support/service-client';

const LANES = 16;
const PHASE_MS = Number(process.env.LOCAL_MODEL_BENCH_PHASE_MS ?? 20_000);
const SIDE = 128;

type Phase = 'no model' | 'model on its thread' | 'model on the event loop';

interface PhaseResult {
  phase: Phase;
  runs: Latency;
  /** perf_hooks.monitorEventLoopDelay, ms. */
  loop: { p50: number; p99: number; max: number };
  /** How late a 5 ms interval timer fired, ms. */
  timer: { p99: number; max: number };
  modelSteps: number;
}

async function main(): Promise<void> {
  await withBenchStack(async (stack) => {
    const service = await startBenchService(stack, { env: { WORKER_CONCURRENCY: String(LANES + 1) } });
    const pool = new ModelPool(1);
    const blobDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-local-model-bench-'));
    try {
      const base = 'http://bench.local';
      const artifacts = new BlobArtifactStore({
        store: new FsBlobStore(blobDir),
        signer: new BlobUrlSigner({ publicBaseUrl: base, secret: 'b'.repeat(40) }),
        publicBaseUrl: base,
        keyPrefix: 'runs/bench',
        urlTtlSeconds: 600,
      });
      const upscale = localModelNodes({ cpuSecondMicros: 20, pool }, await systemLocalTools()).find((n) => n.spec.id === 'image-upscale');
      if (!upscale) throw new Error('image-upscale is not installed: run make install');
      const png = await sharp({ create: { width: SIDE, height: SIDE, channels: 3, background: '#4070a0' } })
        .composite([{ input: Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${SIDE}" height="${SIDE}"><text x="8" y="70" font-size="40">Ab1</text></svg>`) }])
        .png()
        .toBuffer();
      const image = await artifacts.put(png, { mimeType: 'image/png' });
      const rgb = new Uint8Array(await sharp(png).removeAlpha().raw().toBuffer());
      // The worker thread's own code, loaded here: the same inference on this event loop.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { TASKS } = require(path.join(__dirname, '../../services/nodes/local-models/model-worker.cjs')) as {
        TASKS: { upscale(payload: { rgb: Uint8Array; width: number; height: number; scale: number }): Promise<unknown> };
      };

      const body = JSON.stringify(ONE_NODE);
      // Warm-up: the service's paths, the model thread's model and this thread's copy.
      await measure('no model', () => runOnce(service, body, ONE_NODE_OUTPUTS), undefined, 5000);
      await upscale.execute({ image }, nodeContext(undefined, artifacts));
      await TASKS.upscale({ rgb, width: SIDE, height: SIDE, scale: 2 });

      const results: PhaseResult[] = [];
      for (const phase of ['no model', 'model on its thread', 'model on the event loop'] as Phase[]) {
        const model =
          phase === 'no model'
            ? undefined
            : phase === 'model on its thread'
              ? () => upscale.execute({ image }, nodeContext(undefined, artifacts))
              : () => TASKS.upscale({ rgb, width: SIDE, height: SIDE, scale: 2 });
        results.push(await measure(phase, () => runOnce(service, body, ONE_NODE_OUTPUTS), model));
        const last = results.at(-1)!;
        console.log(
          `  ${phase.padEnd(24)} cheap runs ${last.runs.summary()}  event-loop delay p50 ${fixed(last.loop.p50)} p99 ${fixed(last.loop.p99)} max ${fixed(last.loop.max)} ms  timer lateness p99 ${fixed(last.timer.p99)} max ${fixed(last.timer.max)} ms  model steps ${last.modelSteps}`,
        );
      }
      console.log(`\n  ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, ${LANES} lanes, ${PHASE_MS / 1000} s a phase`);
      console.log('  | phase | cheap runs p50 / p99 / max (ms) | event-loop delay p50 / p99 / max (ms) | 5 ms timer lateness p99 / max (ms) | model steps |');
      console.log('  |---|---|---|---|---|');
      for (const r of results) {
        console.log(
          `  | ${r.phase} | ${fixed(r.runs.percentile(50))} / ${fixed(r.runs.percentile(99))} / ${fixed(r.runs.max)} (n=${r.runs.count}) | ${fixed(r.loop.p50)} / ${fixed(r.loop.p99)} / ${fixed(r.loop.max)} | ${fixed(r.timer.p99)} / ${fixed(r.timer.max)} | ${r.modelSteps} |`,
        );
      }
    } finally {
      await pool.close();
      await service.close();
      fs.rmSync(blobDir, { recursive: true, force: true });
    }
  });
}

/** 16 lanes of cheap runs for `ms`, with `model` run back to back beside them when given. */
async function measure(phase: Phase, cheap: () => Promise<number>, model?: () => Promise<unknown>, ms = PHASE_MS): Promise<PhaseResult> {
  const runs = new Latency();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  // A 5 ms timer's lateness too: a sample per tick, so one long stall shows as its full length.
  const late = new Latency();
  let expected = performance.now() + 5;
  const ticker = setInterval(() => {
    const now = performance.now();
    late.record(Math.max(0, now - expected));
    expected = now + 5;
  }, 5);
  const until = Date.now() + ms;
  let modelSteps = 0;
  loop.enable();
  const lanes = Array.from({ length: LANES }, async () => {
    while (Date.now() < until) runs.record(await cheap());
  });
  const modelLane = model
    ? (async () => {
        while (Date.now() < until) {
          await model();
          modelSteps++;
        }
      })()
    : Promise.resolve();
  await Promise.all([...lanes, modelLane]);
  loop.disable();
  clearInterval(ticker);
  return {
    phase,
    runs,
    loop: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
    timer: { p99: late.percentile(99), max: late.max },
    modelSteps,
  };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
