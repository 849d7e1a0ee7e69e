export { JOB_QUEUES, stepJobId, type JobCatalog, type JobName, type JobPayload } from './job-catalog';
export { QUEUE_NAMES, type QueueName } from './queue-names';
export { createRedisConnection } from './redis-connection';
export { RunEventBus } from './run-event-bus';
export { DEFAULT_LOG_TTL_SECONDS, type RunEventBusOptions, type RunEventStreamOptions } from './run-event-bus-options';
export { runEventKeys, type RunEventKeys } from './run-event-keys';
export { isTerminalEvent, type SequencedEvent } from './sequenced-event';
export { APPEND_RUN_EVENT_LUA } from './append-run-event-script';
