import { AppError } from '../../platform/app-error';
import type { Logger } from 'pino';
import type { CallOptionValues, InputOf, OpName, Operations, OutputCacheMode, OutputOf, RouteName, Routes } from '../../contract';
import type { BatchEventStream, RunEventStream } from '../../runs';
import type { AuthContext } from '../auth/auth-context';
import { requestFingerprint } from './request-fingerprint';
import type { UploadBody } from './upload-body';

/** What a handler knows about the call besides its validated input; every surface builds one. */
export interface CallContext {
  /** Null only for operations that work without a token. */
  auth: AuthContext | null;
  requestId: string;
  log: Logger;
  /** Aborted when the caller goes away. Runs do not stop on it; reads may. */
  signal: AbortSignal;
  /** Streams: the SSE `id:` of the last event the caller received (HTTP's `Last-Event-ID`). */
  lastEventId?: string;
  /** Call options the declaration takes (`http.options`), as the caller gave them (HTTP: request headers). */
  options?: CallOptionValues;
  /** `body: 'bytes'` routes: the file sent, unread, with its declared media type and length. */
  upload?: UploadBody;
  /** The caller's network address, for limits on failed attempts; absent in-process. */
  clientAddress?: string;
}

/** The result of a streaming operation: its events (a run's, or a batch's progress), ending with a terminal one, and what it holds while open. */
export type EventStream = RunEventStream | BatchEventStream;

/** Every name `invoke` serves: the five operations and the routes beside them. */
export type CallName = OpName | RouteName;
type DeclarationOf<K extends CallName> = K extends OpName ? Operations[K] : K extends RouteName ? Routes[K] : never;
export type CallInput<K extends CallName> = InputOf<DeclarationOf<K>>;

/** A handler answers its declaration's output, or, for `sse` declarations, the events of the stream. */
export type Handler<K extends CallName> = (
  input: CallInput<K>,
  ctx: CallContext,
) => Promise<DeclarationOf<K>['response'] extends 'sse' ? EventStream : OutputOf<DeclarationOf<K>>>;

/** Exhaustive: a missing operation or route is a compile error. */
export type Handlers = { [K in CallName]: Handler<K> };

/** The caller of an operation that needs a token; the surfaces authenticate before any such handler runs. */
export function authOf(ctx: CallContext): AuthContext {
  if (!ctx.auth) throw new Error('authOf: a handler that needs a token was called without one (the surface must authenticate first)');
  return ctx.auth;
}

/** Refuses a `Webhook-Url` call option the address rules refuse (`problemOf`: what is wrong, or null), as a 400 naming the header. */
export function assertWebhookUrl(url: string | undefined, problemOf: (url: string) => string | null): void {
  const problem = url === undefined ? null : problemOf(url);
  if (problem) throw new AppError({ code: 'validation_failed', message: `the Webhook-Url header ${problem}`, details: { issues: [{ path: 'Webhook-Url', message: problem }] } });
}

/**
 * The call options of work that runs in the background (a batch, a schedule's runs), from the
 * call's headers: checked (`Webhook-Url` by the address rules) and in the shape their launchers take.
 */
export function backgroundOptions(
  ctx: CallContext,
  name: CallName,
  input: unknown,
  webhookUrlProblem: (url: string) => string | null,
): { maxDurationSeconds?: number; outputCache?: OutputCacheMode; idempotency?: { key: string; requestHash: string }; webhookUrl?: string } {
  const { maxDurationSeconds, idempotencyKey, webhookUrl, outputCache } = ctx.options ?? {};
  assertWebhookUrl(webhookUrl, webhookUrlProblem);
  return {
    ...(maxDurationSeconds === undefined ? {} : { maxDurationSeconds }),
    ...(outputCache === undefined ? {} : { outputCache }),
    ...(idempotencyKey === undefined ? {} : { idempotency: { key: idempotencyKey, requestHash: requestFingerprint(name, input, ctx.options) } }),
    ...(webhookUrl === undefined ? {} : { webhookUrl }),
  };
}
