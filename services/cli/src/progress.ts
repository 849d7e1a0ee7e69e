import { describeRunEvent, type RunEvent } from '../../sdk/src/index';
import { addUsd, duration, usd, usdBrief } from './format';

/** Shows a run's events as they come, on stderr (stdout is for results). */
export interface Progress {
  event(event: RunEvent): void;
  /** Stops redrawing; the display stays as last drawn. */
  stop(): void;
  readonly totalUsd: number;
}

/** The live display on a terminal, plain lines anywhere else (a pipe, a CI log). */
export function createProgress(stream: NodeJS.WriteStream, capUsd: number | undefined): Progress {
  return stream.isTTY ? new LiveProgress(stream, capUsd) : new PlainProgress(stream);
}

/** One line per event, greppable: `step.completed add $0.000010 12 ms`. */
class PlainProgress implements Progress {
  totalUsd = 0;
  constructor(private readonly out: NodeJS.WritableStream) {}

  event(event: RunEvent): void {
    this.out.write(`${this.#line(event)}\n`);
  }

  #line(event: RunEvent): string {
    if (event.type === 'step.completed') this.totalUsd = addUsd(this.totalUsd, event.usage.costUsd);
    // The run's total is what the plain lines add to the shared wording.
    return event.type === 'run.completed' ? `run.completed ${usd(this.totalUsd)}` : describeRunEvent(event);
  }

  stop(): void {}
}

interface StepLine {
  id: string;
  state: 'running' | 'done' | 'failed';
  startedAt: number;
  note: string;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const REDRAW_MS = 120;

/**
 * A block of lines redrawn in place (cursor up, clear to the end of the screen): one line per
 * node with its state, latest progress message, cost and time, then the running total against
 * the cap. A timer keeps the spinners and the running times moving between events.
 */
class LiveProgress implements Progress {
  totalUsd = 0;
  #steps: StepLine[] = [];
  #header = 'run';
  #footer = '';
  #drawn = 0;
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly out: NodeJS.WriteStream, private readonly capUsd: number | undefined) {}

  event(event: RunEvent): void {
    // Drawn from the first event on: a run refused before it starts (400, 402) leaves no display behind.
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => {
        this.#frame += 1;
        this.#draw();
      }, REDRAW_MS);
      this.#timer.unref();
    }
    switch (event.type) {
      case 'run.started':
        this.#header = `run ${event.runId}`;
        break;
      case 'step.started':
        this.#steps.push({ id: event.nodeId, state: 'running', startedAt: Date.now(), note: '' });
        break;
      case 'step.progress':
        this.#step(event.nodeId).note = event.message;
        break;
      case 'step.completed': {
        const step = this.#step(event.nodeId);
        this.totalUsd = addUsd(this.totalUsd, event.usage.costUsd);
        Object.assign(step, { state: 'done', note: `${usd(event.usage.costUsd)}  ${duration(event.usage.ms)}` });
        break;
      }
      case 'step.failed':
        Object.assign(this.#step(event.nodeId), { state: 'failed', note: `${event.error.code}: ${event.error.message}` });
        break;
      case 'run.completed':
        this.#footer = 'completed';
        break;
      case 'run.failed':
        this.#footer = `failed (${event.error.code})`;
        break;
    }
    this.#draw();
  }

  stop(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#draw();
  }

  #step(id: string): StepLine {
    let step = this.#steps.find((s) => s.id === id);
    if (!step) {
      step = { id, state: 'running', startedAt: Date.now(), note: '' };
      this.#steps.push(step);
    }
    return step;
  }

  #draw(): void {
    const width = Math.max(20, (this.out.columns || 80) - 1);
    const nameWidth = Math.min(30, Math.max(4, ...this.#steps.map((s) => s.id.length)));
    const lines = [this.#header];
    for (const step of this.#steps) {
      const mark = step.state === 'done' ? '\x1b[32m✓\x1b[0m' : step.state === 'failed' ? '\x1b[31m✗\x1b[0m' : `\x1b[36m${SPINNER[this.#frame % SPINNER.length]}\x1b[0m`;
      const running = step.state === 'running' ? `${duration(Date.now() - step.startedAt)}${step.note ? `  ${step.note}` : ''}` : step.note;
      lines.push(`  ${mark} ${fit(`${step.id.padEnd(nameWidth)}  ${running}`, width - 4)}`);
    }
    const cap = this.capUsd === undefined ? 'the default cap' : `a cap of ${usdBrief(this.capUsd)}`;
    lines.push(fit(`  total ${usd(this.totalUsd)} of ${cap}${this.#footer ? `  ${this.#footer}` : ''}`, width));
    const up = this.#drawn > 0 ? `\x1b[${this.#drawn}F` : '';
    this.out.write(`${up}\x1b[J${lines.join('\n')}\n`);
    this.#drawn = lines.length;
  }
}

/** Cuts a line to the terminal's width, so a wrapped line never breaks the cursor arithmetic. */
function fit(line: string, width: number): string {
  const flat = line.replace(/\s*\n\s*/g, ' ');
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
}
