import type { PostAnswer } from '../../nodes';
import type { Logger } from '../../platform/logger';
import { RepeatingSweep } from './repeating-sweep';
import { signWebhook } from './webhook-dispatcher';

/** One due delivery of a record's webhook: what to send, where, and since when it is owed. */
export interface RecordMessage {
  recordId: string;
  orgId: string;
  url: string;
  /** The message id (`webhook-id`): the same for every attempt, so a receiver drops a retry it took. */
  messageId: string;
  body: string;
  /** When it became due: giving up counts from here. */
  since: Date;
  /** Deliveries tried, this one included. */
  attempts: number;
}

export interface RecordWebhooksOptions<T> {
  store: {
    claimDueWebhooks(limit: number, leaseMs: number): Promise<T[]>;
    webhookOutcome(id: string, outcome: { state: 'delivered' | 'failed' } | { state: 'pending'; nextAt: Date }): Promise<void>;
  };
  /** The message a claimed record owes. */
  message(record: T, now: Date): RecordMessage;
  /** The organization's signing secret (`WebhookRepository.secret`). */
  secret(orgId: string): Promise<string>;
  /** POSTs under the address rules, as run webhooks are. */
  post(url: string, body: string, headers: Record<string, string>): Promise<PostAnswer>;
  log: Logger;
  /** WEBHOOK_RETRY_DELAYS_MS and WEBHOOK_GIVE_UP_SECONDS, as for runs. */
  retryDelaysMs: readonly number[];
  giveUpMs: number;
  pollMs: number;
  /** What the record is, for the logs ("batch", "schedule"). */
  what: string;
  now?: () => Date;
}

/**
 * Delivers the webhook a record owes (a batch's end, a schedule's pause), signed with the
 * organization's secret like run webhooks (docs/webhooks.md), retried with the same delays until
 * delivered or given up on. Every worker runs one; a claim (`SKIP LOCKED`, a lease) keeps two
 * from sending the same delivery at once.
 */
export class RecordWebhooks<T> {
  private readonly repeating = new RepeatingSweep(() => this.sweep().catch((err: unknown) => this.options.log.warn({ err }, `${this.options.what} webhook sweep failed`)));
  private readonly now: () => Date;

  constructor(private readonly options: RecordWebhooksOptions<T>) {
    this.now = options.now ?? (() => new Date());
  }

  start(): void {
    this.repeating.start(this.options.pollMs);
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }

  async sweep(): Promise<number> {
    const due = await this.options.store.claimDueWebhooks(20, 60_000);
    await Promise.all(due.map((record) => this.deliver(record)));
    return due.length;
  }

  private async deliver(record: T): Promise<void> {
    const { options } = this;
    const now = this.now();
    const message = options.message(record, now);
    let failure: string;
    try {
      const headers = signWebhook(await options.secret(message.orgId), message.messageId, Math.floor(now.getTime() / 1000), message.body);
      const answer = await options.post(message.url, message.body, headers);
      if (answer.status >= 200 && answer.status <= 299) {
        await options.store.webhookOutcome(message.recordId, { state: 'delivered' });
        return;
      }
      failure = `answered ${answer.status}`;
    } catch (err) {
      failure = (err as Error).message;
    }
    const delay = options.retryDelaysMs[Math.min(message.attempts - 1, options.retryDelaysMs.length - 1)] ?? 60_000;
    const nextAt = new Date(now.getTime() + delay);
    if (nextAt.getTime() - message.since.getTime() > options.giveUpMs) {
      options.log.warn({ id: message.recordId, failure }, `gave up delivering a ${options.what} webhook`);
      await options.store.webhookOutcome(message.recordId, { state: 'failed' });
      return;
    }
    options.log.info({ id: message.recordId, failure, nextAt }, `a ${options.what} webhook delivery failed; retrying`);
    await options.store.webhookOutcome(message.recordId, { state: 'pending', nextAt });
  }
}
