import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ChannelFanout, ChannelListener } from '../../queue';

/** A JSON-RPC request id, as MCP clients send it (`1` and `"1"` are different ids). */
export type McpRequestId = string | number;

/** The channel on which every API replica hears of cancelled hosted MCP calls. */
export function mcpCancelChannel(prefix: string): string {
  return `${prefix}:mcp-cancels`;
}

export interface McpCancellationsOptions {
  /** Command connection (PUBLISH). */
  redis: Redis;
  /** The process's shared subscriber fan-out: one SUBSCRIBE per process, none per request. */
  channels: ChannelFanout;
  prefix: string;
  log: Logger;
}

/**
 * Cancellation of hosted MCP tool calls across API replicas. The hosted server is stateless, so a
 * client's `notifications/cancelled` arrives as its own POST, often at another replica than the
 * one running the call: the receiving replica publishes `{ tokenId, requestId }`, and the replica
 * where a call of that caller with that JSON-RPC id runs cancels it.
 *
 * A call is keyed by the token that authenticated it, so one caller never cancels another's call.
 * Without sessions the key cannot tell apart two clients sharing one token that use the same id at
 * the same time; a cancellation then stops both (they are the same caller). Entries live only
 * while their POST is open. Pub/sub may drop a message while Redis is unreachable; the call then
 * ends as before the cancellation existed (with its run, or when the client disconnects).
 */
export class McpCancellations {
  private readonly running = new Map<string, Set<() => void>>();
  private readonly channel: string;
  private readonly listener: ChannelListener = {
    message: (payload) => this.onMessage(payload),
    // Nothing to catch up on: a cancellation lost while disconnected is not in any log.
    resubscribed: () => undefined,
  };

  constructor(private readonly options: McpCancellationsOptions) {
    this.channel = mcpCancelChannel(options.prefix);
  }

  /** Subscribes the process once; resolves when cancellations published from then on are heard. */
  async start(): Promise<void> {
    await this.options.channels.add(this.channel, this.listener);
  }

  /** Stops hearing cancellations (the fan-out and its connection stay the caller's). */
  async close(): Promise<void> {
    this.running.clear();
    await this.options.channels.remove(this.channel, this.listener);
  }

  /** Registers a running call; `cancel` runs when its caller cancels it. Returns the unregistration. */
  register(tokenId: string, requestId: McpRequestId, cancel: () => void): () => void {
    const key = keyOf(tokenId, requestId);
    let set = this.running.get(key);
    if (!set) {
      set = new Set();
      this.running.set(key, set);
    }
    set.add(cancel);
    return () => {
      const current = this.running.get(key);
      if (!current?.delete(cancel) || current.size > 0) return;
      this.running.delete(key);
    };
  }

  /** Tells every replica that this caller cancelled its call `requestId`. */
  async publish(tokenId: string, requestId: McpRequestId): Promise<void> {
    await this.options.redis.publish(this.channel, JSON.stringify({ tokenId, requestId }));
  }

  private onMessage(payload: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload);
    } catch {
      return;
    }
    const { tokenId, requestId } = (parsed ?? {}) as { tokenId?: unknown; requestId?: unknown };
    if (typeof tokenId !== 'string' || !isRequestId(requestId)) return;
    const set = this.running.get(keyOf(tokenId, requestId));
    if (!set) return;
    // A copy: a cancel may unregister (its POST closing) while we iterate.
    for (const cancel of [...set]) {
      try {
        cancel();
      } catch (err) {
        this.options.log.warn({ err }, 'cancelling an MCP call failed');
      }
    }
  }
}

/** Whether a value is a JSON-RPC request id. */
export function isRequestId(value: unknown): value is McpRequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

// JSON keeps `1` and `"1"` apart, and no token id can run into the request id.
function keyOf(tokenId: string, requestId: McpRequestId): string {
  return JSON.stringify([tokenId, requestId]);
}
