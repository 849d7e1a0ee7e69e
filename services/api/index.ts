export { createApp, type AppDeps } from './app';
export type { AuthContext, TokenLookup, TokenRecord } from './auth/auth-context';
export { createHandlers, type HandlerDeps } from './handlers/create-handlers';
export type { EventStream, Handler, Handlers, OpContext, SequencedEvent } from './handlers/handler-types';
export type { ReadinessProbe } from './http/health-routes';
export { listen, type RunningServer } from './server';
