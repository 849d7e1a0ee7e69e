import type { Logger } from 'pino';
import type { OpInput, OpName, OpOutput, RunEvent, StreamingOpName } from '../../contract';
import type { AuthContext } from '../auth/auth-context';

/** What a handler knows about the call besides its validated input. */
export interface OpContext {
  /** Null only for operations that work without a token. */
  auth: AuthContext | null;
  requestId: string;
  log: Logger;
  /** Aborted when the client goes away. Runs do not stop on it; reads may. */
  signal: AbortSignal;
}

/** One event of a run stream with its per-run sequence number (sent as the SSE `id:`). */
export interface SequencedEvent {
  seq: number;
  event: RunEvent;
}

/** The result of a streaming operation: its events, ending with a terminal one. */
export type EventStream = AsyncIterable<SequencedEvent>;

export type Handler<K extends OpName> = K extends StreamingOpName
  ? (input: OpInput<K>, ctx: OpContext) => Promise<EventStream>
  : (input: OpInput<K>, ctx: OpContext) => Promise<OpOutput<K>>;

/** Exhaustive: a missing operation is a compile error. */
export type Handlers = { [K in OpName]: Handler<K> };
