/** BullMQ queue names. One prefix per deployment keeps several deployments on one Redis apart. */
export const QUEUE_NAMES = {
  steps: 'steps',
} as const;

export type QueueName = (typeof QUEUE_NAMES)[keyof typeof QUEUE_NAMES];
