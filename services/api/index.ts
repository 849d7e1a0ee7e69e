export { createApp, type AppDeps } from './app';
export type { AuthContext, TokenLookup, TokenRecord } from './auth/auth-context';
export { createHandlers, type HandlerDeps } from './handlers/create-handlers';
export type { CallContext, CallName, EventStream, Handler, Handlers } from './handlers/handler-types';
export type { ReadinessProbe } from './http/health-routes';
export { DEFAULT_HTTP_SETTINGS, listen, type RunningServer } from './server';
export { createInvoker, DeferredInput, type Invoke, type InvokeContext, type InvokerDeps } from './invoke/invoke';
export { TokenLimit, type MinuteLimit, type RateCounter, type StreamSlots } from './invoke/call-limits';
