import path from 'node:path';
import { Worker } from 'node:worker_threads';

/** The jobs model-worker.cjs knows, with what each takes and answers. */
export interface ModelTasks {
  detectSpeech: { payload: { file: string; threshold: number; minSpeechMs: number; minSilenceMs: number }; result: Array<{ start: number; end: number }> };
  readText: { payload: { file: string }; result: Array<{ text: string; confidence: number; box: number[][] }> };
  upscale: { payload: { rgb: Uint8Array; width: number; height: number; scale: number }; result: { rgb: Uint8Array; width: number; height: number } };
  classifyNsfw: { payload: { rgb: Uint8Array; width: number; height: number }; result: Record<string, number> };
}
export type ModelTask = keyof ModelTasks;

/** A finished job: its answer and the milliseconds its inference ran on its thread (model loading left out). */
export interface ModelJobResult<T> {
  result: T;
  ms: number;
}

/** Why a job did not answer. */
export class ModelJobError extends Error {
  constructor(
    readonly reason: 'timeout' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

interface Job {
  id: number;
  task: ModelTask;
  payload: unknown;
  timeoutMs: number;
  signal: AbortSignal;
  resolve(value: ModelJobResult<unknown>): void;
  reject(err: unknown): void;
}

interface Slot {
  worker: Worker;
  job: Job | undefined;
  timer?: NodeJS.Timeout;
  stopAbort?: () => void;
}

const WORKER_FILE = path.join(__dirname, 'model-worker.cjs');

/**
 * Worker threads that run local models off the event loop, so that a model step never stalls
 * the other steps of its process. At most `size` jobs run at once; the rest wait in order. A
 * job that is aborted or runs past its time bound has its thread terminated (inference cannot
 * be interrupted otherwise) and a fresh thread takes the slot, loading its models again.
 * Idle threads do not keep the process alive.
 */
export class ModelPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly size: number) {}

  run<T extends ModelTask>(task: T, payload: ModelTasks[T]['payload'], options: { signal: AbortSignal; timeoutMs: number }): Promise<ModelJobResult<ModelTasks[T]['result']>> {
    options.signal.throwIfAborted();
    if (this.closed) return Promise.reject(new ModelJobError('failed', 'the model pool is closed'));
    return new Promise((resolve, reject) => {
      const job: Job = { id: this.nextId++, task, payload, timeoutMs: options.timeoutMs, signal: options.signal, resolve: resolve as Job['resolve'], reject };
      const onAbort = () => {
        const queued = this.queue.indexOf(job);
        if (queued >= 0) {
          this.queue.splice(queued, 1);
          reject(options.signal.reason);
        }
      };
      options.signal.addEventListener('abort', onAbort, { once: true });
      const settle = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A) => {
        options.signal.removeEventListener('abort', onAbort);
        fn(...args);
      };
      job.resolve = settle(job.resolve);
      job.reject = settle(job.reject);
      this.queue.push(job);
      this.dispatch();
    });
  }

  /** Jobs running now (for tests and metrics). */
  get busy(): number {
    return this.slots.filter((slot) => slot.job).length;
  }

  /** Ends every thread; running and queued jobs fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new ModelJobError('failed', 'the model pool closed'));
    await Promise.all(this.slots.splice(0).map((slot) => this.stop(slot, new ModelJobError('failed', 'the model pool closed'))));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot && this.slots.length < this.size) slot = this.spawn();
      if (!slot) return;
      this.start(slot, this.queue.shift()!);
    }
  }

  private spawn(): Slot {
    const slot: Slot = { worker: new Worker(WORKER_FILE), job: undefined };
    slot.worker.on('message', (message: { id: number; ok: boolean; result?: unknown; error?: string; ms: number }) => {
      const job = slot.job;
      if (!job || job.id !== message.id) return;
      this.finish(slot);
      if (message.ok) job.resolve({ result: message.result, ms: message.ms });
      else job.reject(new ModelJobError('failed', message.error ?? 'the model failed'));
      this.dispatch();
    });
    slot.worker.on('error', (err) => this.replace(slot, new ModelJobError('failed', `the model thread failed: ${err.message}`)));
    slot.worker.on('exit', () => {
      if (this.slots.includes(slot)) this.replace(slot, new ModelJobError('failed', 'the model thread exited'));
    });
    slot.worker.unref();
    this.slots.push(slot);
    return slot;
  }

  private start(slot: Slot, job: Job): void {
    slot.job = job;
    slot.worker.ref();
    slot.timer = setTimeout(() => this.replace(slot, new ModelJobError('timeout', `took longer than ${durationText(job.timeoutMs)} and was stopped`)), job.timeoutMs);
    const onAbort = () => this.replace(slot, job.signal.reason);
    job.signal.addEventListener('abort', onAbort, { once: true });
    slot.stopAbort = () => job.signal.removeEventListener('abort', onAbort);
    slot.worker.postMessage({ id: job.id, task: job.task, payload: job.payload });
  }

  private finish(slot: Slot): void {
    clearTimeout(slot.timer);
    slot.stopAbort?.();
    slot.job = undefined;
    slot.worker.unref();
  }

  /** Terminates the slot's thread, failing its job with `reason`; the next job gets a fresh thread. */
  private replace(slot: Slot, reason: unknown): void {
    const index = this.slots.indexOf(slot);
    if (index < 0) return;
    this.slots.splice(index, 1);
    void this.stop(slot, reason);
    this.dispatch();
  }

  private async stop(slot: Slot, reason: unknown): Promise<void> {
    const job = slot.job;
    this.finish(slot);
    job?.reject(reason);
    await slot.worker.terminate();
  }
}

function durationText(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`;
}
