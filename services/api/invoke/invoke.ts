import { OPERATIONS, ROUTES, isOpName, validate, type Operation } from '../../contract';
import { AppError, isCallerError } from '../../platform/app-error';
import { inSpan, SpanKind, SPAN_ATTRIBUTES } from '../../platform/tracing';
import type { RateLimitResult } from '../../queue';
import type { AuthContext } from '../auth/auth-context';
import { admitCaller } from '../auth/admit-caller';
import type { CallContext, CallName, EventStream, Handlers } from '../handlers/handler-types';
import { takeStreamSlot, type CountedCall, type StreamSlots, type TokenLimit } from '../auth/call-limits';

/**
 * An input read only once the caller is admitted: HTTP reads the body after authentication,
 * scope and limits, so a refused caller learns nothing about its body and costs no parsing.
 */
export class DeferredInput {
  constructor(readonly read: () => Promise<unknown>) {}
}

export interface InvokerDeps {
  handlers: Handlers;
  /** The per-token request limit; absent: none (`RATE_LIMIT_TOKEN_PER_MINUTE=0`). */
  tokenLimit?: TokenLimit;
  /** Open run streams per organization; absent: unlimited (`MAX_OPEN_STREAMS_PER_ORG=0`). */
  streamSlots?: StreamSlots;
  /** Told each call's outcome: `ok` (a stream once it starts) or the error code (metrics). */
  observe?: (name: CallName, outcome: string) => void;
}

/** What `invoke` is told besides the call itself. */
export interface InvokeContext extends CallContext {
  /** Sees the per-token limit's window (HTTP: `RateLimit-*` headers). */
  onTokenLimit?: (state: RateLimitResult) => void;
  /** This call already counted against its token's limit (HTTP: with the per-IP count): not counted again. */
  tokenCounted?: CountedCall;
}

/** Calls one operation or route by name; the result is its JSON answer or, for streams, its events. */
export type Invoke = (name: CallName, input: unknown, ctx: InvokeContext) => Promise<unknown>;

/** The operation or route a name declares. */
export function declarationOf(name: CallName): Operation {
  return isOpName(name) ? OPERATIONS[name] : ROUTES[name];
}

/** Operations are named by name in messages, routes by method and path (`GET /v1/runs/:id`). */
export function describeCall(name: CallName): string {
  const op = declarationOf(name);
  return isOpName(name) ? name : `${op.http.method} ${op.http.path}`;
}

/**
 * The one call path under every surface (HTTP routes, the hosted MCP server, in-process
 * clients): checks the caller against the declaration (a token when required, its kind and
 * scope), counts the call against the token's limit, validates the input against the contract,
 * takes an organization stream slot where the call holds a stream, and calls the handler. Who the
 * caller is comes with `ctx`: each surface authenticates in its own way.
 */
export function createInvoker(deps: InvokerDeps): Invoke {
  const call = unobservedInvoker(deps);
  // One span per call (a run's trace starts here; for a stream, it ends once the stream starts).
  return (name, input, ctx) =>
    inSpan(name, { kind: SpanKind.SERVER, attributes: { [SPAN_ATTRIBUTES.operation]: name } }, async (span) => {
      try {
        const result = await call(name, input, ctx);
        deps.observe?.(name, 'ok');
        return result;
      } catch (err) {
        const outcome = isCallerError(err) ? err.code : 'internal';
        span.setAttribute(SPAN_ATTRIBUTES.outcome, outcome);
        deps.observe?.(name, outcome);
        throw err;
      }
    });
}

/** The call path itself, unobserved. */
function unobservedInvoker(deps: InvokerDeps): Invoke {
  return async (name, input, ctx) => {
    const op = declarationOf(name);
    const what = describeCall(name);
    const auth = ctx.auth;
    if (op.auth === 'required' && !auth) {
      throw new AppError({ code: 'unauthorized', message: `${what} needs an access token: send the header "Authorization: Bearer <token>"` });
    }
    if (auth) {
      await deps.tokenLimit?.count(auth, ctx.onTokenLimit, ctx.tokenCounted);
      admitCaller({ what, scope: op.scope, kinds: op.kinds, optional: op.auth === 'optional' }, auth);
    }
    const raw = input instanceof DeferredInput ? await input.read() : input;
    const checked = validate(op.input, raw);
    if (!checked.ok) throw new AppError({ code: 'validation_failed', message: checked.message, details: { issues: checked.issues } });
    const handler = deps.handlers[name] as (input: unknown, ctx: CallContext) => Promise<unknown>;
    if (!op.holdsStream || !deps.streamSlots) return handler(checked.value, ctx);
    // The slot is taken before the handler starts a run (a refused call creates none), and only
    // once the body is read and valid: a client trickling its body must not hold a slot meanwhile
    // (asking for it beside the token's count saved a round trip and let slow bodies take every
    // slot: S4 in docs/guarantees.md).
    const slot = await takeStreamSlot(deps.streamSlots, (auth as AuthContext).orgId);
    // Given back as soon as the caller goes away while the handler runs (runs.node waits for its
    // run); a stream, once returned, gives it back itself.
    const giveBack = () => slot.release();
    ctx.signal.addEventListener('abort', giveBack, { once: true });
    let result: unknown;
    try {
      result = await handler(checked.value, ctx);
    } catch (err) {
      slot.release();
      throw err;
    } finally {
      ctx.signal.removeEventListener('abort', giveBack);
    }
    if (op.response !== 'sse') {
      slot.release();
      return result;
    }
    // However the stream ends (its last event, the caller going away, a failure, the consumer's
    // `return()`), and at once if it has ended already.
    (result as EventStream).hold(slot);
    return result;
  };
}
