import { createHmac } from 'node:crypto';
import { TERMINAL_EVENT_TYPES, WEBHOOK_HEADERS, webhookSecretKeyBase64, webhookSignedContent, type RunEvent, type SequencedEvent } from '../../contract';
import type { PostAnswer } from '../../nodes';
import { AppError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import type { ClaimedWebhook, RunRecord, WebhookStore } from '../ports';
import { RepeatingSweep } from './repeating-sweep';
import { isFinished, terminalEventOf } from '../events/run-ending';

export interface WebhookDispatcherOptions {
  store: WebhookStore;
  /** The run event log, read without a subscription (a worker process has none): `RunEventBus.read`. */
  events: { read(runId: string, afterSeq: number): Promise<SequencedEvent[]> };
  runs: { getRun(runId: string): Promise<RunRecord | null> };
  /** POSTs under the address rules (`safePost` with FETCH_ALLOW_PRIVATE); refusals are `validation_failed`. */
  post(url: string, body: string, headers: Record<string, string>): Promise<PostAnswer>;
  log: Logger;
  /** WEBHOOK_RETRY_DELAYS_MS: the waits before each retry; the last repeats. */
  retryDelaysMs: readonly number[];
  /** WEBHOOK_GIVE_UP_SECONDS after the first attempt, a failing delivery is given up on. */
  giveUpMs: number;
  /** How soon a running run's webhook is looked at again for new events (WEBHOOK_POLL_MS). */
  pollMs: number;
  /** Rows claimed per sweep (default 20) and how long a claim holds (default 60 s). */
  batchSize?: number;
  leaseMs?: number;
  /** A finished run whose log lacks its terminal event this long after it finished gets it from its record (default 5 s). */
  finishedGraceMs?: number;
  /** Told each attempt's outcome (metrics). */
  observer?: { attempt(outcome: 'delivered' | 'retry' | 'failed'): void };
  now?: () => Date;
}

/** The body of a delivery (Standard Webhooks' `{ type, timestamp, data }`). */
export interface WebhookPayload {
  type: RunEvent['type'];
  timestamp: string;
  data: { runId: string; seq: number; event: RunEvent };
}

/** The headers that sign `body` as delivery `id` at `timestampSeconds` (Standard Webhooks, `v1` HMAC-SHA256). */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const key = Buffer.from(webhookSecretKeyBase64(secret), 'base64');
  const signature = createHmac('sha256', key).update(webhookSignedContent(id, timestampSeconds, body)).digest('base64');
  return { [WEBHOOK_HEADERS.id]: id, [WEBHOOK_HEADERS.timestamp]: String(timestampSeconds), [WEBHOOK_HEADERS.signature]: `v1,${signature}` };
}

/**
 * Delivers runs' events to their webhooks (docs/webhooks.md). Every worker runs one; they share
 * the work through Postgres (`claimDue`: due rows, `SKIP LOCKED`, a lease a dead holder's rows
 * come back from). For a claimed run it reads the events after its cursor from the run's log (the
 * terminal event from its record when the log lost it), and delivers those the webhook asked for,
 * in order, one at a time: a delivery that fails is retried after the next delay and holds back
 * the run's later events until it succeeds or is given up on; a 2xx is delivered. Every attempt is
 * recorded, and shows on the run's record. A run's row is done once its terminal event is
 * delivered, given up on, or not asked for.
 */
export class WebhookDispatcher {
  private readonly repeating = new RepeatingSweep(() => this.sweep().catch((err: unknown) => this.options.log.warn({ err }, 'webhook sweep failed')));
  private readonly now: () => Date;

  constructor(private readonly options: WebhookDispatcherOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** One pass over the due webhooks; answers how many runs it looked at. */
  async sweep(): Promise<number> {
    const claimed = await this.options.store.claimDue(this.options.batchSize ?? 20, this.options.leaseMs ?? 60_000);
    await Promise.all(
      claimed.map((hook) =>
        this.dispatch(hook).catch(async (err: unknown) => {
          // Our own trouble (Redis, Postgres): the row is looked at again after a poll.
          this.options.log.warn({ err, runId: hook.runId }, 'webhook dispatch failed; trying again shortly');
          await this.options.store.release(hook.runId, { cursorSeq: hook.cursorSeq, done: false, nextAt: new Date(this.now().getTime() + this.options.pollMs) }).catch(() => undefined);
        }),
      ),
    );
    return claimed.length;
  }

  private async dispatch(hook: ClaimedWebhook): Promise<void> {
    const { store, pollMs } = this.options;
    let cursor = hook.cursorSeq;
    const events = await this.eventsAfter(hook.runId, cursor);
    for (const { seq, event } of events) {
      const terminal = TERMINAL_EVENT_TYPES.includes(event.type);
      if (!hook.events.includes(event.type)) {
        cursor = seq;
        if (terminal) return store.release(hook.runId, { cursorSeq: cursor, done: true, nextAt: this.now() });
        continue;
      }
      const outcome = await this.deliver(hook, seq, event);
      if (outcome.retryAt) return store.release(hook.runId, { cursorSeq: cursor, done: false, nextAt: outcome.retryAt });
      cursor = seq;
      if (terminal) return store.release(hook.runId, { cursorSeq: cursor, done: true, nextAt: this.now() });
    }
    await store.release(hook.runId, { cursorSeq: cursor, done: false, nextAt: new Date(this.now().getTime() + pollMs) });
  }

  /**
   * The run's events after `cursor` that are in its log now (one read, waiting for none; up to its
   * terminal event); when there are none and the run has finished longer than the grace ago (its
   * log lost the terminal event: Redis restarted empty), the one its record implies, next in line.
   */
  private async eventsAfter(runId: string, cursor: number): Promise<SequencedEvent[]> {
    const logged = await this.options.events.read(runId, cursor);
    const end = logged.findIndex((e) => TERMINAL_EVENT_TYPES.includes(e.event.type));
    if (end >= 0) return logged.slice(0, end + 1);
    // New events to send: the record is read only when the log has nothing new (it may have lost the end).
    if (logged.length > 0) return logged;
    const run = await this.options.runs.getRun(runId);
    if (run && isFinished(run) && run.finishedAt && this.now().getTime() - run.finishedAt.getTime() >= (this.options.finishedGraceMs ?? 5000)) {
      const terminal = terminalEventOf(run);
      if (terminal) logged.push({ seq: cursor + 1, event: terminal });
    }
    return logged;
  }

  /** One attempt at event `seq` (unless it was delivered or given up on before): a retry time when it is to be tried again. */
  private async deliver(hook: ClaimedWebhook, seq: number, event: RunEvent): Promise<{ retryAt?: Date }> {
    const { store, observer } = this.options;
    const previous = await store.delivery(hook.runId, seq);
    if (previous && previous.status !== 'pending') return {};
    if (previous?.nextAttemptAt && previous.nextAttemptAt > this.now()) return { retryAt: previous.nextAttemptAt };
    const now = this.now();
    const body = JSON.stringify({ type: event.type, timestamp: now.toISOString(), data: { runId: hook.runId, seq, event } } satisfies WebhookPayload);
    // The id names the event, not the attempt: a receiver drops a retry it already took.
    const headers = signWebhook(hook.secret, `msg_${hook.runId}_${seq}`, Math.floor(now.getTime() / 1000), body);
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const answer = await this.options.post(hook.url, body, headers);
      statusCode = answer.status;
      if (answer.status >= 200 && answer.status <= 299) {
        await store.recordAttempt(hook.runId, seq, event.type, { status: 'delivered', statusCode, error: null, nextAttemptAt: null });
        observer?.attempt('delivered');
        return {};
      }
      error = `answered ${answer.status}${answer.body ? `: ${answer.body.slice(0, 200)}` : ''}`;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      error = err.message;
    }
    const attempts = (previous?.attempts ?? 0) + 1;
    const firstAt = previous?.firstAttemptAt ?? now;
    const delays = this.options.retryDelaysMs;
    const retryAt = new Date(now.getTime() + delays[Math.min(attempts - 1, delays.length - 1)]!);
    if (retryAt.getTime() - firstAt.getTime() > this.options.giveUpMs) {
      await store.recordAttempt(hook.runId, seq, event.type, { status: 'failed', statusCode, error, nextAttemptAt: null });
      observer?.attempt('failed');
      this.options.log.warn({ runId: hook.runId, seq, attempts, error }, 'webhook delivery given up on');
      return {};
    }
    await store.recordAttempt(hook.runId, seq, event.type, { status: 'pending', statusCode, error, nextAttemptAt: retryAt });
    observer?.attempt('retry');
    return { retryAt };
  }

  /** Sweeps every `intervalMs` (unref'd timer) until `stop`. */
  start(intervalMs: number): void {
    this.repeating.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }
}
