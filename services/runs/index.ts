export { InFlightSteps } from './in-flight-steps';
export type { RunAbortPublisher, RunEventAppender, StepEnqueuer, StepQueuePort } from './ports';
export { createRunContext, RunContexts, UnpreparableRunError, type RunContext } from './run-contexts';
export { RunLifecycle, type RunLifecycleDeps } from './run-lifecycle';
export { RunStarter, type RunRequest, type RunStarterDeps } from './run-starter';
export { StepExecutor, type RetryPolicy, type StepExecutorDeps, type StepObserver } from './step-executor';
export { costOfFailure, isTransient, RUN_ERROR_CODES, stepError } from './step-errors';
export { RunReaper, type ReaperReport, type RunReaperOptions, type StepRequeuer } from './run-reaper';
export { presentEvent, presentingMountEvents } from './mount-events';
