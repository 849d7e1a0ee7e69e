export { createApp, type AppDeps } from './app';
export type { AuthContext, TokenLookup, TokenRecord } from './auth/auth-context';
export { createHandlers, type HandlerDeps } from './handlers/create-handlers';
export type { EventStream, Handler, Handlers, OpContext, SequencedEvent } from './handlers/handler-types';
export type { ReadinessProbe } from './http/health-routes';
export { DEFAULT_HTTP_SETTINGS, listen, type RunningServer } from './server';
export { type ResolvedWorkflow, type RunHandlerDeps, type WorkflowResolver } from './handlers/run-handlers';
