import type { PostAnswer } from '../../nodes';
import type { Logger } from '../../platform/logger';
import type { BatchFeedStore, BatchRecord } from '../ports';
import { RepeatingSweep } from '../sweeps/repeating-sweep';
import { signWebhook } from '../sweeps/webhook-dispatcher';
import { batchView } from './batch-view';

export interface BatchWebhooksOptions {
  batches: Pick<BatchFeedStore, 'claimDueWebhooks' | 'webhookOutcome'>;
  /** The organization's signing secret (`WebhookRepository.secret`). */
  secret(orgId: string): Promise<string>;
  /** POSTs under the address rules, as run webhooks are. */
  post(url: string, body: string, headers: Record<string, string>): Promise<PostAnswer>;
  log: Logger;
  /** WEBHOOK_RETRY_DELAYS_MS and WEBHOOK_GIVE_UP_SECONDS, as for runs. */
  retryDelaysMs: readonly number[];
  giveUpMs: number;
  pollMs: number;
  now?: () => Date;
}

/**
 * Delivers a batch's end (`batch.ended`, the batch record as `GET /v1/batches/:id` shows it) to
 * the batch's `Webhook-Url`, signed with the organization's secret like run webhooks
 * (docs/webhooks.md), retried with the same delays until delivered or given up on. Every worker
 * runs one; a claim (`SKIP LOCKED`, a lease) keeps two from sending the same delivery at once.
 */
export class BatchWebhooks {
  private readonly repeating = new RepeatingSweep(() => this.sweep().catch((err: unknown) => this.options.log.warn({ err }, 'batch webhook sweep failed')));
  private readonly now: () => Date;

  constructor(private readonly options: BatchWebhooksOptions) {
    this.now = options.now ?? (() => new Date());
  }

  start(): void {
    this.repeating.start(this.options.pollMs);
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }

  async sweep(): Promise<number> {
    const due = await this.options.batches.claimDueWebhooks(20, 60_000);
    await Promise.all(due.map((batch) => this.deliver(batch)));
    return due.length;
  }

  private async deliver(batch: BatchRecord): Promise<void> {
    const { options } = this;
    const now = this.now();
    const body = JSON.stringify({ type: 'batch.ended', timestamp: now.toISOString(), data: { batchId: batch.id, batch: batchView(batch) } });
    // The id names the batch's end in its attempt: a receiver drops a retry it already took.
    const id = `msg_batch_${batch.id}_${batch.attempt}`;
    let failure: string;
    try {
      const headers = signWebhook(await options.secret(batch.orgId), id, Math.floor(now.getTime() / 1000), body);
      const answer = await options.post(batch.webhookUrl!, body, headers);
      if (answer.status >= 200 && answer.status <= 299) {
        await options.batches.webhookOutcome(batch.id, { state: 'delivered' });
        return;
      }
      failure = `answered ${answer.status}`;
    } catch (err) {
      failure = (err as Error).message;
    }
    const finished = batch.finishedAt ?? now;
    const delay = options.retryDelaysMs[Math.min(batch.webhookAttempts - 1, options.retryDelaysMs.length - 1)] ?? 60_000;
    const nextAt = new Date(now.getTime() + delay);
    if (nextAt.getTime() - finished.getTime() > options.giveUpMs) {
      options.log.warn({ batchId: batch.id, failure }, 'gave up delivering a batch\'s end to its webhook');
      await options.batches.webhookOutcome(batch.id, { state: 'failed' });
      return;
    }
    options.log.info({ batchId: batch.id, failure, nextAt }, 'a batch webhook delivery failed; retrying');
    await options.batches.webhookOutcome(batch.id, { state: 'pending', nextAt });
  }
}
