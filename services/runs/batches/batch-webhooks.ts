import type { BatchFeedStore, BatchRecord } from '../ports';
import { RecordWebhooks, type RecordWebhooksOptions } from '../sweeps/record-webhooks';
import { batchView } from './batch-view';

export type BatchWebhooksOptions = Omit<RecordWebhooksOptions<BatchRecord>, 'store' | 'message' | 'what'> & {
  batches: Pick<BatchFeedStore, 'claimDueWebhooks' | 'webhookOutcome'>;
};

/**
 * Delivers a batch's end (`batch.ended`, the batch record as `GET /v1/batches/:id` shows it) to
 * the batch's `Webhook-Url` (docs/batches.md), as every record webhook is delivered.
 */
export class BatchWebhooks extends RecordWebhooks<BatchRecord> {
  constructor({ batches, ...options }: BatchWebhooksOptions) {
    super({
      ...options,
      store: batches,
      what: 'batch',
      message: (batch, now) => ({
        recordId: batch.id,
        orgId: batch.orgId,
        url: batch.webhookUrl!,
        // The id names the batch's end in its attempt: a receiver drops a retry it already took.
        messageId: `msg_batch_${batch.id}_${batch.attempt}`,
        body: JSON.stringify({ type: 'batch.ended', timestamp: now.toISOString(), data: { batchId: batch.id, batch: batchView(batch) } }),
        since: batch.finishedAt ?? now,
        attempts: batch.webhookAttempts,
      }),
    });
  }
}
