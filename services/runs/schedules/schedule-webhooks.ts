import type { ScheduleRecord, ScheduleWebhookStore } from '../ports';
import { RecordWebhooks, type RecordWebhooksOptions } from '../sweeps/record-webhooks';

export type ScheduleWebhooksOptions = Omit<RecordWebhooksOptions<ScheduleRecord>, 'store' | 'message' | 'what'> & { schedules: ScheduleWebhookStore };

/**
 * Delivers a schedule's pause by the service (`schedule.paused`: its id, name, workflow and the
 * reason) to the `Webhook-Url` it was created with (docs/schedules.md), as every record webhook is.
 */
export class ScheduleWebhooks extends RecordWebhooks<ScheduleRecord> {
  constructor({ schedules, ...options }: ScheduleWebhooksOptions) {
    super({
      ...options,
      store: schedules,
      what: 'schedule',
      message: (schedule, now) => {
        const reason = schedule.pauseReason;
        return {
          recordId: schedule.id,
          orgId: schedule.orgId,
          url: schedule.webhookUrl!,
          // One message per pause: a receiver drops a retry it already took.
          messageId: `msg_schedule_${schedule.id}_${schedule.pauseCount}`,
          body: JSON.stringify({
            type: 'schedule.paused',
            timestamp: now.toISOString(),
            data: { scheduleId: schedule.id, name: schedule.name, workflowRef: schedule.workflowRef, reason },
          }),
          since: reason ? new Date(reason.at) : now,
          attempts: schedule.webhookAttempts,
        };
      },
    });
  }
}
