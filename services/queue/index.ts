export { JOB_QUEUES, stepJobId, type JobCatalog, type JobName, type JobPayload } from './job-catalog';
export { QUEUE_NAMES, type QueueName } from './queue-names';
export { createRedisConnection } from './redis-connection';
