import type { Logger } from 'pino';
import type { OpInput, OpName, OpOutput, RouteInput, RouteName, RouteOutput, SequencedEvent, StreamingOpName } from '../../contract';
import type { AuthContext } from '../auth/auth-context';

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
  /** `body: 'bytes'` routes: the file sent, with its media type. */
  upload?: { bytes: Buffer; mediaType: string };
  /** The caller's network address, for limits on failed attempts; absent in-process. */
  clientAddress?: string;
}

/** The result of a streaming operation: its events, ending with a terminal one. */
export type EventStream = AsyncIterable<SequencedEvent>;

/** Every name `invoke` serves: the five operations and the routes beside them. */
export type CallName = OpName | RouteName;
export type CallInput<K extends CallName> = K extends OpName ? OpInput<K> : K extends RouteName ? RouteInput<K> : never;
type CallOutput<K extends CallName> = K extends OpName ? OpOutput<K> : K extends RouteName ? RouteOutput<K> : never;
type Streaming = StreamingOpName | 'runs.events';

export type Handler<K extends CallName> = (input: CallInput<K>, ctx: CallContext) => Promise<K extends Streaming ? EventStream : CallOutput<K>>;

/** Exhaustive: a missing operation or route is a compile error. */
export type Handlers = { [K in CallName]: Handler<K> };
