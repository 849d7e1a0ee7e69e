import type { Redis } from 'ioredis';
import type { BlockedBy, ProviderLimit } from './provider-limit-types';
import { RedisScript } from './redis-script';

/** The scripts that grant share their keys, arguments and `grant()`: `scripts/includes/provider-limit.lua`. */
const PUMP = RedisScript.fromFile('provider-limit-pump');
const RELEASE = RedisScript.fromFile('provider-limit-release');
const RENEW = RedisScript.fromFile('provider-limit-renew');
const PAUSE = RedisScript.fromFile('provider-limit-pause');
const WAITING = RedisScript.fromFile('provider-limit-waiting');

/** A request's ticket as it enters the queue. */
export interface NewTicket {
  id: string;
  org: string;
  tokens: number;
  /** Takes a call slot (only under a concurrentCalls limit). */
  lease: boolean;
}

/** A turn's answer: `lost` (the process's tickets are unknown: queue them all again), or what was granted and what blocks now. */
export type PumpReply =
  | { lost: true }
  | {
      lost: false;
      /** Ms until the head could be granted; -1: nobody waits. */
      waitMs: number;
      blockedBy: BlockedBy;
      remaining: { requests: number | null; tokens: number | null; calls: number | null };
      /** This process's tickets granted (by this call or by others since its last). */
      granted: string[];
    };

/** One key's renewal: whether this process waits there, and the ticket ids whose call slots it holds. */
export interface RenewGroup {
  base: string;
  waiting: boolean;
  leases: readonly string[];
}

const numberOrNull = (value: string): number | null => (value === '' ? null : Number(value));
const blocked = (value: string): BlockedBy => (value === '' ? null : (value as NonNullable<BlockedBy>));

/**
 * The provider limiter's Redis side: its key names and one method per script. Every key is
 * `<prefix>:plim:<length of the limit key>:<limit key>:<suffix>`: the prefix first (a hash tag
 * under a Redis Cluster), the length so that no limit key's names can be another's (`a:q` and
 * `a` with suffix `q`).
 */
export class ProviderLimitStore {
  readonly root: string;
  /** The channel this process hears its grants on. */
  readonly channel: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    readonly process: string,
    private readonly leaseMs: number,
  ) {
    this.root = `${prefix}:plim`;
    this.channel = `${this.root}:c:${process}`;
  }

  base(key: string): string {
    return `${this.root}:${key.length}:${key}`;
  }

  pauseKey(key: string): string {
    return `${this.base(key)}:p`;
  }

  /**
   * One turn at `limit`'s key: withdraw, queue, grant, collect (provider-limit-pump.lua). `acked`:
   * the grants the last reply carried; the reply carries every grant not acknowledged yet, so one
   * lost with a reply comes again.
   */
  async pump(limit: Required<ProviderLimit>, registered: number, withdrawn: readonly string[], acked: readonly string[], fresh: readonly NewTicket[]): Promise<PumpReply> {
    const tickets = fresh.flatMap((t) => [t.id, t.org, t.tokens, t.lease ? 1 : 0]);
    const reply = (await this.run(PUMP, limit, [registered, withdrawn.length, ...withdrawn, acked.length, ...acked, ...tickets])) as (string | number)[];
    if (reply[0] === 1) return { lost: true };
    const [, waitMs, by, requests, tokens, calls, ...granted] = reply.map(String);
    return {
      lost: false,
      waitMs: Number(waitMs),
      blockedBy: blocked(by!),
      remaining: { requests: numberOrNull(requests!), tokens: numberOrNull(tokens!), calls: numberOrNull(calls!) },
      granted,
    };
  }

  /** Gives back a ticket's slot, `tokensBack` and (`requestBack`) its request, then grants (provider-limit-release.lua). */
  async release(limit: Required<ProviderLimit>, id: string, lease: boolean, tokensBack: number, requestBack: boolean): Promise<BlockedBy> {
    return blocked(String(await this.run(RELEASE, limit, [id, lease ? 1 : 0, Math.max(0, Math.floor(tokensBack)), requestBack ? 1 : 0])));
  }

  /** Renews alive marks and slots in one call; answers the base names where this process's tickets were lost. */
  async renew(groups: readonly RenewGroup[]): Promise<string[]> {
    const args = groups.flatMap((g) => [g.base, g.waiting ? 1 : 0, g.leases.length, ...g.leases]);
    return (await RENEW.run(this.redis, [this.root], [this.leaseMs, this.process, ...args])) as string[];
  }

  learntKey(key: string): string {
    return `${this.base(key)}:lr`;
  }

  /**
   * Stores a pause of `key` (the later one wins); with `learn` (a 429), also the pace the
   * provider takes (provider-limit-pause.lua). Answers the pause in force, until ms (0: none),
   * and whether a learnt pace is.
   */
  async pause(key: string, untilMs: number, learn?: { answeredPerMinute: number }): Promise<{ untilMs: number; learnt: boolean }> {
    return this.pauseRun(key, untilMs, learn);
  }

  /** The pause of `key` in force, until ms (0: none), and whether a pace learnt from 429s is in force. */
  async readPause(key: string): Promise<{ untilMs: number; learnt: boolean }> {
    return this.pauseRun(key, 0);
  }

  private async pauseRun(key: string, untilMs: number, learn?: { answeredPerMinute: number }): Promise<{ untilMs: number; learnt: boolean }> {
    const args = [Math.floor(untilMs), learn ? 1 : 0, Math.max(0, Math.floor(learn?.answeredPerMinute ?? 0))];
    const [until, learnt] = (await PAUSE.run(this.redis, [this.pauseKey(key), this.learntKey(key)], args)) as [number, number];
    return { untilMs: Number(until), learnt: learnt === 1 };
  }

  /** `org`'s tickets waiting at each key, and what blocks each key's head. */
  async waiting(org: string, keys: readonly string[]): Promise<{ key: string; waiting: number; blockedBy: BlockedBy }[]> {
    if (keys.length === 0) return [];
    const reply = (await WAITING.run(this.redis, [this.root], [org, ...keys.map((k) => this.base(k))])) as (string | number)[];
    return keys.map((key, i) => ({ key, waiting: Number(reply[2 * i]), blockedBy: blocked(String(reply[2 * i + 1])) }));
  }

  private run(script: RedisScript, limit: Required<ProviderLimit>, args: readonly (string | number)[]): Promise<unknown> {
    const base = this.base(limit.key);
    const keys = ['s', 'q', 't', 'l', 'o', 'w', 'p'].map((suffix) => `${base}:${suffix}`);
    const common = [base, `${this.root}:c:`, limit.requestsPerMinute, limit.tokensPerMinute, limit.concurrentCalls, this.leaseMs, this.process];
    return script.run(this.redis, keys, [...common, ...args]);
  }
}
